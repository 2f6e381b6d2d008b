"""A table's shape over time, and what a DDL statement does to its rows (docs/tables.md, "DDL").

A `Shape` is a table's columns from one place of the commit order on: each column's name as the
server had it, the Delta column holding it, its MySQL type. The columns' names and types come from
the schema history (binlake.schema); what the history does not say — a column's DEFAULT, a renamed
column's old name, the primary key, TRUNCATE — is read from the statement here. `Reshape` turns a
row's values from one shape to the next: renamed columns keep their values, added ones get their
default, changed types convert where the result is certain and are unknown otherwise.
"""

from __future__ import annotations

import enum
import functools
import logging
import re
from dataclasses import asdict, dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from pymysql.charset import charset_by_name
from sqlglot import exp

from binlake.binlog.charsets import codec
from binlake.schema.ddl import Unfollowable, parse_statement
from binlake.schema.model import Column, Table
from binlake.tables.types import UNTYPED, Kind, kind_of, time_micros, time_text

log = logging.getLogger(__name__)


class _Unknown(enum.Enum):
    UNKNOWN = "unknown"  # an enum member: the same object after pickling (Reshapes go to Spark's tasks)


UNKNOWN = _Unknown.UNKNOWN  # a value that cannot be known
_TRUNCATE = re.compile(r"^\s*TRUNCATE\s+(?:TABLE\s+)?((?:`(?:[^`]|``)+`|[\w$]+)(?:\s*\.\s*(?:`(?:[^`]|``)+`|[\w$]+))?)",
                       re.I)
_RANGES = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "integer": 32, "bigint": 64}
_STRINGS = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext"}


@dataclass
class Col:
    name: str  # as the server names it
    column: str  # the Delta column holding it
    type: str  # MySQL's COLUMN_TYPE; "" when the schema history does not know the table
    charset: str | None = None

    def kind(self) -> Kind:
        return _kind(self.type, self.charset)

    def model(self) -> Column | None:
        return Column(self.name, self.type, self.charset) if self.type else None


@functools.cache
def _kind(type: str, charset: str | None) -> Kind:
    """A column type's Kind, made once: the fold asks it for every value it stages."""
    return kind_of(Column("", type, charset)) if type else UNTYPED


@dataclass
class Shape:
    """The columns from `order` (at `time`) on; None: no such table from there."""

    order: str
    time: str
    columns: list[Col] | None

    def to_json(self) -> dict[str, Any]:
        return {"from": {"order": self.order, "time": self.time},
                "columns": None if self.columns is None else [
                    {k: v for k, v in asdict(c).items() if v is not None} for c in self.columns]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Shape:
        cols = d["columns"]
        return cls(d["from"]["order"], d["from"]["time"], None if cols is None else [Col(**c) for c in cols])

    def by_name(self) -> dict[str, Col]:
        return {c.name: c for c in self.columns or []}


@dataclass
class Effects:
    """What one statement says of one table beyond its columns."""

    renamed: dict[str, str] = field(default_factory=dict)  # column: old name -> new name
    defaults: dict[str, Any] = field(default_factory=dict)  # added column (lower case) -> value or UNKNOWN
    key: list[str] | None = None
    key_set: bool = False  # the statement declares the key (None: it has none)
    truncate: bool = False
    moved_from: tuple[str, str] | None = None  # RENAME TABLE / ALTER … RENAME: the table's old name


def _ident(text: str) -> str:
    return text[1:-1].replace("``", "`") if text.startswith("`") else text


def _table(db: str, t: exp.Table) -> tuple[str, str]:
    return (t.db or db, t.name)


def statement_effects(db: str, sql: str) -> dict[tuple[str, str], Effects]:
    """A DDL statement's effects per table it names (a statement sqlglot cannot read says nothing:
    the schema history's columns still change, every added column's value is then unknown)."""
    m = _TRUNCATE.match(sql)
    if m:
        parts = [_ident(p.strip()) for p in re.findall(r"`(?:[^`]|``)+`|[\w$]+", m[1])]
        return {(parts[0], parts[1]) if len(parts) == 2 else (db, parts[0]): Effects(truncate=True)}
    try:
        st = parse_statement(sql)
    except Unfollowable:
        return {}
    if isinstance(st, exp.Create) and (st.args.get("kind") or "").upper() == "TABLE":
        target = st.this.this if isinstance(st.this, exp.Schema) else st.this
        out = Effects(key_set=True)
        if isinstance(st.this, exp.Schema):
            out.key = _create_key(st.this)
        return {_table(db, target): out}
    if isinstance(st, exp.Alter) and (st.args.get("kind") or "").upper() == "TABLE":
        return _alter(db, st)
    if isinstance(st, exp.Command) and st.this.upper() == "RENAME":
        text = st.expression.name if isinstance(st.expression, exp.Literal) else str(st.expression)
        moves: dict[tuple[str, str], Effects] = {}
        body = re.sub(r"^\s*TABLES?\s+", "", text, flags=re.I)
        for pair in body.split(","):
            names = re.findall(r"`(?:[^`]|``)+`|[\w$]+", pair)
            if len(names) < 3:
                continue
            at = [i for i, n in enumerate(names) if n.upper() == "TO"]
            if not at:
                continue
            old, new = [_ident(n) for n in names[:at[0]]], [_ident(n) for n in names[at[0] + 1:]]
            old_key = (old[0], old[1]) if len(old) == 2 else (db, old[0])
            new_key = (new[0], new[1]) if len(new) == 2 else (db, new[0])
            moves[new_key] = Effects(moved_from=old_key)
        return moves
    return {}


def _create_key(schema: exp.Schema) -> list[str] | None:
    for e in schema.expressions:
        if isinstance(e, exp.ColumnDef) and any(isinstance(c.args.get("kind"), exp.PrimaryKeyColumnConstraint)
                                                for c in e.constraints):
            return [e.name]
        pk = e if isinstance(e, exp.PrimaryKey) else e.find(exp.PrimaryKey) if isinstance(e, exp.Constraint) else None
        if pk is not None:
            return [_key_part(p) for p in pk.expressions]
    return None


def _key_part(p: exp.Expression) -> str:
    return p.this.name if isinstance(p, exp.Ordered) else p.name


def _alter(db: str, st: exp.Alter) -> dict[tuple[str, str], Effects]:
    key = _table(db, st.this)
    out = Effects()
    target = key
    for action in st.args.get("actions") or []:
        if isinstance(action, exp.RenameColumn):
            out.renamed[action.this.name] = action.args["to"].name
        elif isinstance(action, exp.ModifyColumn):
            old = action.args.get("rename_from")
            if old is not None and old.name != action.this.name:
                out.renamed[old.name] = action.this.name
        elif isinstance(action, exp.ColumnDef):
            out.defaults[action.name.lower()] = _default(action)
            if any(isinstance(c.args.get("kind"), exp.PrimaryKeyColumnConstraint) for c in action.constraints):
                out.key, out.key_set = [action.name], True
        elif isinstance(action, exp.DropPrimaryKey):
            out.key, out.key_set = None, True
        elif isinstance(action, exp.AddConstraint):
            pk = action.find(exp.PrimaryKey)
            if pk is not None:
                out.key, out.key_set = [_key_part(p) for p in pk.expressions], True
        elif isinstance(action, exp.AlterRename):
            target = _table(db, action.this)
    if target != key:
        out.moved_from = key
    return {target: out}


def _default(d: exp.ColumnDef) -> Any:
    """An added column's value in rows that were there: its literal DEFAULT; NULL, or for a NOT NULL
    column its implicit default (_implicit), without one; UNKNOWN for an expression or a generated
    column (the server computes those)."""
    not_null = False
    for c in d.constraints:
        kind = c.args.get("kind")
        if isinstance(kind, exp.ComputedColumnConstraint | exp.AutoIncrementColumnConstraint):
            return UNKNOWN
        if isinstance(kind, exp.NotNullColumnConstraint) and not kind.args.get("allow_null"):
            not_null = True
        if isinstance(kind, exp.PrimaryKeyColumnConstraint):
            not_null = True
        if isinstance(kind, exp.DefaultColumnConstraint):
            return _literal(kind.this)
    return ("implicit",) if not_null else None


def _literal(e: exp.Expression) -> Any:
    if isinstance(e, exp.Null):
        return None
    if isinstance(e, exp.Boolean):
        return 1 if e.this else 0
    if isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal) and not e.this.is_string:
        return ("number", "-" + str(e.this.this))
    if isinstance(e, exp.Literal):
        return ("string", e.this) if e.is_string else ("number", str(e.this))
    if isinstance(e, exp.BitString):
        return ("number", str(int(str(e.this), 2)))
    if isinstance(e, exp.HexString):
        return ("hex", str(e.this))
    return UNKNOWN


def implicit_default(col: Column) -> Any:
    """The value MySQL gives a NOT NULL column without a DEFAULT in rows that were there."""
    base = col.base
    if base in _RANGES or base in ("bit", "year", "bool", "boolean"):
        return 0
    if base in ("decimal", "numeric"):
        return as_value(("number", "0"), col)
    if base in ("float", "double", "real"):
        return 0.0
    if base in _STRINGS or base in ("binary", "varbinary") or base.endswith("blob"):
        return as_value(("string", ""), col)
    if base == "enum":
        return col.members[0] if col.members else UNKNOWN
    if base == "set":
        return []
    if base == "date":
        return "0000-00-00"
    if base == "datetime":
        fsp = col.params[0] if col.params else 0
        return "0000-00-00 00:00:00" + ("." + "0" * fsp if fsp else "")
    if base == "time":
        return time_text(0, col.params[0] if col.params else 0)
    return UNKNOWN


def as_value(literal: Any, col: Column) -> Any:
    """A DEFAULT literal as the column's row value; UNKNOWN where it is not certain."""
    if literal is None or literal is UNKNOWN:
        return literal
    if literal == ("implicit",):
        return implicit_default(col)
    if isinstance(literal, int):
        literal = ("number", str(literal))
    what, text = literal
    base = col.base
    if what == "hex":
        text, what = bytes.fromhex(text if len(text) % 2 == 0 else "0" + text).decode("latin-1"), "bytes"
    try:
        if base in _RANGES or base in ("year", "bit", "bool", "boolean"):
            return int(Decimal(text)) if Decimal(text) == int(Decimal(text)) else UNKNOWN
        if base in ("decimal", "numeric"):
            scale = (list(col.params) + [0, 0])[1] if col.params else 0
            return f"{Decimal(text):.{scale}f}"
        if base in ("float", "double", "real"):
            return float(text) if base != "float" else _float32(float(text))
    except (InvalidOperation, ValueError):
        return UNKNOWN
    if base in _STRINGS or base == "enum":
        return text if what != "bytes" else UNKNOWN
    if base in ("date", "datetime", "timestamp", "time"):
        kind = kind_of(col)
        staged, raw = kind.stage(text)
        return text if staged is not None and base != "time" else UNKNOWN
    return UNKNOWN


def _float32(x: float) -> float:
    import struct

    return struct.unpack("<f", struct.pack("<f", x))[0]


def convert(v: Any, old: Column | None, new: Column) -> Any:
    """A value of column `old` after `ALTER … MODIFY` to `new`, where the result is certain
    (docs/tables.md): the same value, widened, or written as text; UNKNOWN otherwise."""
    if v is None:
        return None
    if old is None:  # untyped before: the row image's value, taken as it is if the new type holds it
        return v if kind_of(new).stage(v)[0] is not None or kind_of(new) is UNTYPED else UNKNOWN
    a, b = old.base, new.base
    if (a, old.params, old.unsigned, old.members) == (b, new.params, new.unsigned, new.members) and \
            _charset_holds(v, new) and a not in _STRINGS:
        return v
    if a in _RANGES and b in _RANGES:
        return v if _fits_int(v, new) else UNKNOWN
    if (a in _RANGES or a in ("decimal", "numeric")) and b in ("decimal", "numeric"):
        return _as_decimal(str(v), new)
    if (a in _RANGES or a in ("decimal", "numeric")) and b in _STRINGS:
        return _as_string(str(v), new)
    if a in _STRINGS | {"enum"} and b in _STRINGS:
        return _as_string(v, new) if isinstance(v, str) else UNKNOWN
    if a in _STRINGS | {"enum"} and b == "enum":
        return v if isinstance(v, str) and v in new.members else UNKNOWN
    if a == "set" and b == "set":
        return v if isinstance(v, list) and all(m in new.members for m in v) else UNKNOWN
    if a == "date" and b == "datetime":
        fsp = new.params[0] if new.params else 0
        return f"{v} 00:00:00" + ("." + "0" * fsp if fsp else "") if isinstance(v, str) else UNKNOWN
    if (a, b) in (("datetime", "datetime"), ("timestamp", "timestamp"), ("time", "time")):
        old_fsp, new_fsp = (old.params or (0,))[0], (new.params or (0,))[0]
        if new_fsp < old_fsp or not isinstance(v, str):
            return UNKNOWN
        if a == "time":
            us = time_micros(v)
            return time_text(us, new_fsp) if us is not None else UNKNOWN
        return (v + ("." if not old_fsp and new_fsp else "") + "0" * (new_fsp - old_fsp)) if "0000" not in v[:4] else \
            UNKNOWN
    if a == b == "json":
        return v
    return UNKNOWN


def _fits_int(v: Any, col: Column) -> bool:
    if not isinstance(v, int):
        return False
    bits = _RANGES[col.base]
    lo, hi = (0, (1 << bits) - 1) if col.unsigned else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    return lo <= v <= hi


def _as_decimal(text: str, col: Column) -> Any:
    p, s = (list(col.params) + [10, 0])[:2] if col.params else (10, 0)
    try:
        d = Decimal(text)
    except InvalidOperation:
        return UNKNOWN
    if d != d.quantize(Decimal(1).scaleb(-s)) or len(str(abs(int(d)))) > p - s:
        return UNKNOWN  # the server would round or refuse
    return f"{d:.{s}f}"


def _as_string(text: str, col: Column) -> Any:
    n = col.params[0] if col.params else None
    if col.base == "char":
        text = text.rstrip(" ")  # a CHAR is read without its trailing spaces
    if n is not None and col.base in ("char", "varchar") and len(text) > n:
        return UNKNOWN
    return text if _charset_holds(text, col) else UNKNOWN


def _charset_holds(v: Any, col: Column) -> bool:
    if not isinstance(v, str) or not col.charset or col.charset == "binary":
        return True
    try:
        encoding = charset_by_name(col.charset).encoding
    except AttributeError:  # a charset pymysql does not know (ucs2, utf16, utf32): Python's codecs
        encoding = col.charset
    try:
        v.encode(codec(encoding) or "")
    except (UnicodeEncodeError, LookupError):
        return False
    return not (col.charset == "utf8mb3" and any(ord(ch) > 0xFFFF for ch in v))


@dataclass
class Reshape:
    """A row's values from one shape to the next (picklable: it goes to Spark's tasks).

    `steps`: per column of the new shape, (its name, the old name it takes its value from or None
    for an added column, the old and new columns' types, the added column's value), `moved`:
    whether the values change Delta column (a new Spark type), so that every row needs a version."""

    steps: list[tuple[str, str | None, Column | None, Column | None, Any]]
    moved: bool = False

    def __call__(self, values: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """The new values, and whether the row's content changed (a new version is due)."""
        out: dict[str, Any] = {}
        changed = self.moved
        for name, source, old, new, added in self.steps:
            if source is None:
                value = added
                changed = True
            elif source not in values:
                continue
            elif new is None:
                value = values[source]
            else:
                value = convert(values[source], old, new)
                changed = changed or value is UNKNOWN or value != values[source] or \
                    type(value) is not type(values[source])
            if value is not UNKNOWN:
                out[name] = value
        kept = {source for _, source, *_ in self.steps if source is not None}
        return out, changed or any(k not in kept for k in values)


def next_shape(old: Shape | None, table: Table | None, *, at: tuple[str, str], effects: Effects,
               delta: dict[str, str], untyped: list[str] | None = None
               ) -> tuple[Shape, Reshape, list[tuple[str, str]], list[tuple[str, str, str]]]:
    """The shape from `at` (order, time) on, after a statement (or after the schema history learnt
    a table), the Reshape of the rows, and what it does to the Delta table: columns renamed (old,
    new) and added (name, Spark type, comment). `table`: the history's definition (None: untyped,
    `untyped` the image's column names); `delta`: the Delta table's columns now, name -> Spark
    type (updated here)."""
    before = old.by_name() if old and old.columns else {}
    lower = {k.lower(): k for k in before}
    back = {n.lower(): lower.get(o.lower(), o) for o, n in effects.renamed.items()}
    where = {name: c.column for name, c in before.items()}  # each old column's Delta column, as renamed here
    renames: list[tuple[str, str]] = []
    adds: list[tuple[str, str, str]] = []

    def rename(column: str, to: str) -> None:
        renames.append((column, to))
        delta[to] = delta.pop(column)
        for k, v in where.items():
            if v == column:
                where[k] = to

    def free(name: str) -> None:  # a Delta column under that name keeps its rows' values elsewhere
        if name in delta:
            rename(name, tombstone(name, delta))

    cols: list[Col] = []
    steps: list[tuple[str, str | None, Column | None, Column | None, Any]] = []
    moved = False
    consumed: set[str] = set()
    wanted = [(c.name, c.type, c.charset) for c in table.columns] if table else [(n, "", None) for n in untyped or []]
    for name, type_, charset in wanted:
        source = back.get(name.lower()) or lower.get(name.lower())
        prev = before.get(source) if source else None
        col = Col(name, name, type_, charset)
        spark = col.kind().spark
        if prev is not None and delta.get(where[prev.name]) == spark:
            if where[prev.name] != name:
                free(name)
                rename(where[prev.name], name)
        elif prev is None and delta.get(name) == spark and name not in where.values():
            pass  # a Delta column of a table dropped (or a column renamed away) before: its type, taken again
        else:
            if prev is not None:
                moved = True
                free(where[prev.name])
            free(name)
            adds.append((name, spark, type_ or "untyped"))
            delta[name] = spark
        if prev is not None:
            consumed.add(prev.name)
        steps.append((name, prev.name if prev is not None else None, prev.model() if prev else None,
                      col.model(), None if prev is not None else _added(effects, name, col)))
        cols.append(col)
    for gone in before:
        if gone not in consumed and where[gone] in delta and not _is_tombstone(where[gone]):
            free(where[gone])
    return Shape(at[0], at[1], cols), Reshape(steps, moved), renames, adds


def _is_tombstone(column: str) -> bool:
    name, sep, n = column.rpartition("~")
    return bool(sep and name and n.isdigit())


def _added(effects: Effects, name: str, col: Col) -> Any:
    literal = effects.defaults.get(name.lower(), UNKNOWN)
    model = col.model()
    if model is None:
        return UNKNOWN
    return as_value(literal, model)


def tombstone(name: str, delta: dict[str, str]) -> str:
    """The name a Delta column takes when its source column is gone: `{name}~{n}`."""
    n = 1
    while f"{name}~{n}" in delta:
        n += 1
    return f"{name}~{n}"
