"""A table's columns as a schema history holds them, in one versioned JSON form (docs/schema.md).

A column's type is MySQL's own text for it, `information_schema.COLUMNS.COLUMN_TYPE` in lower case
("int unsigned", "varchar(20)", "enum('x','y')"): what a live server reports and what replayed
DDL is rendered to, so the two compare as text.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

FORMAT = 1  # the version of a history's JSON documents: readers refuse a newer one

_TYPE = re.compile(r"^\s*([a-z0-9_]+)\s*(?:\((.*)\))?\s*(.*)$", re.S)


def members_of(text: str) -> tuple[str, ...]:
    """ENUM/SET members of a parenthesised list: 'a','b''c' -> ('a', "b'c")."""
    out, i = [], 0
    while i < len(text):
        if text[i] != "'":
            i += 1
            continue
        j, buf = i + 1, []
        while j < len(text):
            if text[j] == "'" and text[j + 1:j + 2] == "'":
                buf.append("'")
                j += 2
            elif text[j] == "'":
                break
            elif text[j] == "\\" and j + 1 < len(text):
                buf.append(text[j + 1])
                j += 2
            else:
                buf.append(text[j])
                j += 1
        out.append("".join(buf))
        i = j + 1
    return tuple(out)


def charset_of(name: str | None) -> str | None:
    """A charset's name from a charset or collation name (utf8mb4_bin -> utf8mb4)."""
    if not name:
        return None
    name = name.lower()
    if name == "utf8" or name.startswith("utf8_"):
        return "utf8mb3"
    return name.split("_", 1)[0]


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # COLUMN_TYPE, lower case
    charset: str | None = None  # strings, ENUM and SET: their character set
    collation: str | None = None
    generated: str | None = None  # "VIRTUAL" or "STORED"
    invisible: bool = False

    @property
    def base(self) -> str:
        m = _TYPE.match(self.type.lower())
        return m[1] if m else self.type.lower()

    @property
    def params(self) -> tuple[int, ...]:
        """Length, precision and scale, or fsp: the numbers in the parentheses."""
        m = _TYPE.match(self.type.lower())
        if not m or not m[2] or self.base in ("enum", "set"):
            return ()
        return tuple(int(p) for p in re.findall(r"\d+", m[2]))

    @property
    def members(self) -> tuple[str, ...]:
        m = _TYPE.match(self.type)
        return members_of(m[2]) if m and m[2] and self.base in ("enum", "set") else ()

    @property
    def unsigned(self) -> bool:
        m = _TYPE.match(self.type.lower())
        return bool(m and "unsigned" in m[3].split())

    @property
    def zerofill(self) -> bool:
        m = _TYPE.match(self.type.lower())
        return bool(m and "zerofill" in m[3].split())


@dataclass(frozen=True)
class Table:
    schema: str
    name: str
    columns: tuple[Column, ...]
    charset: str | None = None  # the table's default: a column added later without one takes it

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["columns"] = [{k: v for k, v in c.items() if v not in (None, False)} for c in d["columns"]]
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Table:
        return cls(d["schema"], d["name"], tuple(Column(**c) for c in d["columns"]), d.get("charset"))


@dataclass
class Snapshot:
    """Every user table of a server at one point of its binlog, or of an imported dump."""

    tables: dict[tuple[str, str], Table]
    databases: dict[str, str | None] = field(default_factory=dict)  # database -> default charset
    point: dict[str, Any] = field(default_factory=dict)  # where in the binlog it holds (docs/schema.md)
    source: str | None = None
    taken_at: str | None = None
    origin: str = "information_schema"  # or "import"

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "kind": "snapshot", "origin": self.origin, "source": self.source,
                "taken_at": self.taken_at, "point": self.point, "databases": self.databases,
                "tables": [t.to_json() for _, t in sorted(self.tables.items())]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Snapshot:
        if d.get("format") != FORMAT or d.get("kind") != "snapshot":
            raise ValueError(f"not a binlake schema snapshot of format {FORMAT} "
                             f"(format {d.get('format')!r}, kind {d.get('kind')!r})")
        tables = {(t["schema"], t["name"]): Table.from_json(t) for t in d["tables"]}
        return cls(tables, dict(d.get("databases") or {}), dict(d.get("point") or {}), d.get("source"),
                   d.get("taken_at"), d.get("origin", "information_schema"))


def file_order(name: str) -> tuple[str, int] | None:
    """(basename, number) of a server's binlog file name; None for any other (an archive name
    of a later generation, `binlog.000001@g0002`)."""
    base, _, num = name.rpartition(".")
    return (base, int(num)) if num.isdigit() else None
