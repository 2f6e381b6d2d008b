"""What a snapshot asks the server for each column, and each value in the form docs/row-values.md
gives a row image's (a FULL image: every column named).

The session reads with `character_set_results = NULL` and no client-side conversion, so every
value arrives as the bytes the server sends: a string in its column's charset, decoded here with
the codec the row-image decoders use (binlake.binlog.charsets); bytes, GEOMETRY and VECTOR as
stored (GEOMETRY through the decoders' EWKT, binlake.binlog.rows); numbers and times as the
server's own text. Two types need the server asked otherwise:

- FLOAT: `c * 1e0`, the stored float32 as the double it is exactly, which a row image gives
  (the column's own text is its shortest float32 spelling, another double);
- MySQL's JSON: its text is exact except for numbers: a DECIMAL inside a document prints as
  `1.50` or `15`, as a DOUBLE (`15.0`) or an INTEGER (`15`) may. Beside the document the server
  is asked for the text of every DECIMAL in it (JSON_TABLE over `$**.*` and `$**[*]`, typed by
  JSON_TYPE); a number whose text is only ever a DECIMAL's, or never one, is thereby exact. A
  document holding the same text once as a DECIMAL and once as another number is typed path by
  path (JSON_TYPE at each such path, by the row's key, in the same transaction: `Pending`); in a
  table without a key it cannot be, and its value is flagged.

A value that cannot be made exact is never written as something else: it becomes
`{"$unexact": {"reason": …, "text" or "bytes": …}}` (the server's text, or its bytes as
`base64:`), and the chunk lists it (docs/snapshots.md).
"""

from __future__ import annotations

import codecs
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import orjson

from binlake.binlog import charsets
from binlake.binlog.geometry import geometry_text
from binlake.binlog.values import base64_text, vector_values
from binlake.schema.check import MARIADB_BINARY_TYPES
from binlake.schema.model import Column, Table

INTEGERS = frozenset({"tinyint", "smallint", "mediumint", "int", "integer", "bigint"})
TEMPORALS = frozenset({"date", "datetime", "timestamp", "time"})
TEXTS = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext"})
BINARIES = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"})
SPATIAL = frozenset({"geometry", "point", "linestring", "polygon", "multipoint", "multilinestring",
                     "multipolygon", "geometrycollection", "geomcollection"})


def quote(name: str) -> str:
    """An identifier as SQL quotes it."""
    return "`" + name.replace("`", "``") + "`"


def unexact(reason: str, **what: str) -> dict:
    """The value of a column that cannot be made exact: the reason and what the server sent."""
    return {"$unexact": {"reason": reason, **what}}


def is_unexact(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and "$unexact" in value


class _Number(str):
    """A number's text in the server's JSON text, as the server wrote it."""


@dataclass
class Pending:
    """A MySQL JSON document whose numbers' types its text and its DECIMALs cannot tell apart:
    `paths` are to be typed by JSON_TYPE (MySQL's path syntax), then `value(types)` is exact."""

    column: str
    text: str
    doc: Any
    paths: list[str]
    known: Callable[[str], Any]  # the value of a number not at one of `paths`, from its text

    def value(self, types: dict[str, str]) -> Any:
        return _typed(self.doc, lambda path, text: _TYPED[types[path]](text) if path in types else self.known(text))

    def flagged(self) -> dict:
        return unexact("a DECIMAL and another number of the same text in one document, in a table without a key "
                       "to type them by", text=self.text)


_TYPED: dict[str, Callable[[str], Any]] = {"DECIMAL": str, "INTEGER": int, "UNSIGNED INTEGER": int, "DOUBLE": float}


def _number(text: str) -> int | float:
    """A number of a document that is no DECIMAL: MySQL writes a DOUBLE with a `.` or an exponent
    (`15.0`, `1e20`), an integer without."""
    return float(text) if "." in text or "e" in text or "E" in text else int(text)


def _typed(doc: Any, number: Callable[[str, str], Any], path: str = "$") -> Any:
    """A document read with _Number leaves, each number `number(path, text)`."""
    if isinstance(doc, dict):
        return {k: _typed(v, number, f"{path}.{json.dumps(k, ensure_ascii=False)}") for k, v in doc.items()}
    if isinstance(doc, list):
        return [_typed(v, number, f"{path}[{i}]") for i, v in enumerate(doc)]
    if isinstance(doc, _Number):
        return number(path, str(doc))
    return doc


def json_value(column: str, text: str, decimals: list[str] | None) -> Any:
    """A MySQL JSON document from its text and the texts of the DECIMALs it holds: the value, or
    Pending when some number's type needs asking."""
    if not decimals:  # a number with a `.` or an exponent is a DOUBLE, any other an integer: JSON's own reading
        return orjson.loads(text)
    found = Counter(decimals)
    seen: Counter[str] = Counter()

    def known(t: str) -> Any:
        return t if found[t] else _number(t)

    def number(t: str) -> Any:
        seen[t] += t in found
        return known(t)

    doc = json.loads(text, parse_int=number, parse_float=number)
    if all(seen[t] == n for t, n in found.items()):  # each text of a DECIMAL is only ever a DECIMAL's
        return doc
    doc = json.loads(text, parse_int=_Number, parse_float=_Number)
    numbers: list[tuple[str, str]] = []  # (path, text) of every number, in MySQL's path syntax
    _typed(doc, lambda path, t: numbers.append((path, t)))
    ambiguous = [path for path, t in numbers if 0 < found[t] < seen[t]]
    return Pending(column, text, doc, ambiguous, known)


def _text(codec: str | None) -> Callable[[bytes], Any]:
    if codec is None:  # the binary charset
        return base64_text
    try:
        codecs.lookup(codec)
    except LookupError:
        return lambda b: unexact(f"no codec reads {codec}", bytes=base64_text(b))

    def decode(b: bytes) -> Any:
        try:
            return b.decode(codec)
        except UnicodeDecodeError as e:
            return unexact(f"not {codec} text at byte {e.start}", bytes=base64_text(b))

    return decode


def _members(codec: str | None) -> Callable[[bytes], Any]:
    text = _text(codec)

    def members(b: bytes) -> Any:
        v = text(b)
        return v if is_unexact(v) else (v.split(",") if v else [])

    return members


def _decimal(col: Column) -> Callable[[bytes], str]:
    if not col.zerofill:
        return bytes.decode
    scale = col.params[1] if len(col.params) > 1 else 0
    return lambda b: f"{Decimal(b.decode()):.{scale}f}"  # the server pads ZEROFILL's text; a row image does not


def _geometry(b: bytes) -> Any:
    if len(b) <= 4:
        return base64_text(b)
    try:
        return geometry_text(b)
    except (ValueError, IndexError) as e:  # struct.error is a ValueError
        return unexact(f"not a geometry the server writes: {e}", bytes=base64_text(b))


@dataclass(frozen=True)
class ColumnRead:
    """One column: the SQL expressions selected for it (over the table aliased `t`) and how their
    values become its value. MySQL's JSON has two: the document and its DECIMALs."""

    name: str
    exprs: tuple[str, ...]
    convert: Callable[..., Any] = field(compare=False)


_DECIMALS_IN = ("(SELECT JSON_ARRAYAGG(CAST(d.x AS CHAR)) FROM ("
                "SELECT a.x FROM JSON_TABLE(JSON_ARRAY(t.{c}), '$**[*]' COLUMNS (x JSON PATH '$')) a UNION ALL "
                "SELECT b.x FROM JSON_TABLE(t.{c}, '$**.*' COLUMNS (x JSON PATH '$')) b) d "
                "WHERE JSON_TYPE(d.x) = 'DECIMAL')")


def column_read(col: Column, flavor: str) -> ColumnRead:
    c, base = quote(col.name), col.base
    one = (f"t.{c}",)
    if base in INTEGERS or base == "year":
        return ColumnRead(col.name, one, int)
    if base == "float":
        return ColumnRead(col.name, (f"t.{c} * 1e0",), float)
    if base in ("double", "real"):
        return ColumnRead(col.name, one, float)
    if base in ("decimal", "numeric"):
        return ColumnRead(col.name, one, _decimal(col))
    if base == "bit":
        return ColumnRead(col.name, one, lambda b: int.from_bytes(b, "big"))
    if base in TEMPORALS or base in MARIADB_BINARY_TYPES:
        return ColumnRead(col.name, one, bytes.decode)
    if base in TEXTS or base == "enum":
        return ColumnRead(col.name, one, _text(charsets.of_charset(col.charset or "binary")))
    if base == "set":
        return ColumnRead(col.name, one, _members(charsets.of_charset(col.charset or "binary")))
    if base in BINARIES:
        return ColumnRead(col.name, one, base64_text)
    if base in SPATIAL:
        return ColumnRead(col.name, one, _geometry)
    if base == "vector":
        return ColumnRead(col.name, one, vector_values)
    if base == "json" and flavor == "mysql":
        return ColumnRead(col.name, (*one, _DECIMALS_IN.format(c=c)),
                          lambda doc, decimals: json_value(col.name, doc.decode(),
                                                           json.loads(decimals) if decimals else None))
    if base == "json":  # MariaDB's JSON is LONGTEXT: the text as written
        return ColumnRead(col.name, one, _text("utf8"))
    return ColumnRead(col.name, one, lambda b: unexact(f"a column type binlake does not know ({col.type})",
                                                       bytes=base64_text(b)))


class RowRead:
    """A table's row as the session selects it (`select`, over `db.table AS t`) and as a chunk
    holds it: `row(raw)` -> ({column: value}, the Pending documents among them, the columns flagged)."""

    def __init__(self, table: Table, flavor: str) -> None:
        columns = [column_read(col, flavor) for col in table.columns]
        self.select = ", ".join(e for col in columns for e in col.exprs)
        self.offsets: dict[str, int] = {}  # where each column's first expression is in a selected row
        self.plan: list[tuple[str, int, Callable[..., Any], int]] = []  # name, offset, convert, expressions
        at = 0
        for col in columns:
            self.offsets[col.name] = at
            self.plan.append((col.name, at, col.convert, len(col.exprs)))
            at += len(col.exprs)
        self.width = at

    def row(self, raw: tuple) -> tuple[dict[str, Any], list[Pending], list[str]]:
        out: dict[str, Any] = {}
        pending: list[Pending] = []
        flagged: list[str] = []
        for name, at, convert, n in self.plan:
            v = raw[at]
            if v is not None:
                v = convert(v) if n == 1 else convert(*raw[at:at + n])
                if type(v) is dict and "$unexact" in v:
                    flagged.append(name)
                elif type(v) is Pending:
                    pending.append(v)
            out[name] = v
        return out, pending, flagged
