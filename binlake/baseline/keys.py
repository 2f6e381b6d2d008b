"""The key a table is read in order of, and the keyset predicates that page through it and
resume it after a kill.

A usable key is the PRIMARY KEY, else a UNIQUE key whose columns are all NOT NULL; whole columns
only (no prefix, no expression) of types a predicate can compare exactly: integers, DECIMAL, BIT,
YEAR, the temporal types, CHAR/VARCHAR/BINARY/VARBINARY, ENUM, SET and MariaDB's UUID/INET types.
A table without one is read whole, in one session (docs/snapshots.md).

Each key value is passed back to the server as a literal of the value the server sent, never of
a converted one: a number's text, a time's quoted text, a string's bytes as a hex literal in its
column's charset and collation (`_latin1 X'e9' COLLATE latin1_german2_ci`), so that `>` and `=`
compare as the server's ORDER BY orders. ENUM, SET and BIT order by their number: they are
selected a second time as `c + 0` and compared by it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pymysql.converters import escape_string

from binlake.baseline.values import INTEGERS, TEMPORALS, quote
from binlake.schema.capture import over_user_tables
from binlake.schema.check import MARIADB_BINARY_TYPES
from binlake.schema.model import Column, Table

_NUMBERS = INTEGERS | {"year", "decimal", "numeric"}
_BY_NUMBER = frozenset({"enum", "set", "bit"})
_QUOTED = TEMPORALS | frozenset(MARIADB_BINARY_TYPES)
_STRINGS = frozenset({"char", "varchar"})
_BYTES = frozenset({"binary", "varbinary"})
KEYABLE = _NUMBERS | _BY_NUMBER | _QUOTED | _STRINGS | _BYTES

_INDEXES = """
SELECT TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, COLUMN_NAME, SUB_PART, NON_UNIQUE, NULLABLE, INDEX_TYPE
FROM information_schema.STATISTICS WHERE TABLE_SCHEMA NOT IN %s {only}
ORDER BY TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX
"""


@dataclass(frozen=True)
class Index:
    name: str
    columns: tuple[str, ...]
    usable: bool  # unique, NOT NULL, whole columns, a B-tree


def read_indexes(cur, only: tuple[str, str] | None = None) -> dict[tuple[str, str], list[Index]]:
    """Every user table's unique indexes (or the one table's), as information_schema shows them
    (read as the session reads: bytes)."""
    over_user_tables(cur, _INDEXES, only)
    parts: dict[tuple[str, str, str], list[tuple]] = {}
    for schema, table, index, column, sub_part, non_unique, nullable, kind in cur.fetchall():
        if int(non_unique):
            continue
        parts.setdefault((schema.decode(), table.decode(), index.decode()), []).append(
            (None if column is None else column.decode(), sub_part, nullable.decode(), kind.decode()))
    out: dict[tuple[str, str], list[Index]] = {}
    for (schema, table, index), cols in parts.items():
        usable = all(c is not None and sub is None and nullable != "YES" and kind == "BTREE"
                     for c, sub, nullable, kind in cols)
        out.setdefault((schema, table), []).append(Index(index, tuple(c or "" for c, *_ in cols), usable))
    return out


@dataclass(frozen=True)
class Key:
    """The key of a table: its columns, in order, with what their literals are made of."""

    columns: tuple[Column, ...]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def exprs(self) -> tuple[str, ...]:
        """What is selected, after the row's columns, for the literals of the key's values: an
        ENUM, SET or BIT's number; the others' literals are made of their values' bytes."""
        return tuple(f"t.{quote(c.name)} + 0" for c in self.columns if c.base in _BY_NUMBER)

    def literals(self, values: list[bytes], numbers: list[bytes]) -> list[str]:
        """The SQL literals of a row's key: `values` the bytes of the key columns as selected for
        the row, `numbers` those of `exprs`."""
        out, by_number = [], iter(numbers)
        for col, raw in zip(self.columns, values, strict=True):
            base = col.base
            if base in _BY_NUMBER:
                out.append(_number(next(by_number)))
            elif base in _NUMBERS:
                out.append(_number(raw))
            elif base in _QUOTED:
                out.append(f"'{escape_string(raw.decode())}'")
            elif base in _BYTES or col.charset in (None, "binary"):
                out.append(f"X'{raw.hex()}'")
            else:
                out.append(f"_{col.charset} X'{raw.hex()}' COLLATE {col.collation}")
        return out

    @property
    def order(self) -> str:
        return ", ".join(f"t.{quote(n)}" for n in self.names)

    def after(self, literals: list[str]) -> str:
        """The rows after a key, in key order: `a > x OR (a = x AND (b > y))`."""
        cols = [f"t.{quote(n)}" for n in self.names]
        pred = f"{cols[-1]} > {literals[-1]}"
        for c, lit in zip(reversed(cols[:-1]), reversed(literals[:-1]), strict=True):
            pred = f"{c} > {lit} OR ({c} = {lit} AND ({pred}))"
        return pred

    def equals(self, literals: list[str]) -> str:
        return " AND ".join(f"t.{quote(n)} = {lit}" for n, lit in zip(self.names, literals, strict=True))


def _number(raw: bytes) -> str:
    text = raw.decode()
    float(text)  # a number's text, nothing else, goes into SQL unquoted
    return text


def choose(table: Table, indexes: list[Index]) -> Key | None:
    """The PRIMARY KEY, else the unique NOT NULL key of fewest columns (then by name), of
    comparable types; None when there is none."""
    by_name = {c.name: c for c in table.columns}
    found = [i for i in indexes if i.usable and all(by_name.get(n) and by_name[n].base in KEYABLE
                                                        for n in i.columns)]
    found.sort(key=lambda i: (i.name != "PRIMARY", len(i.columns), i.name))
    return Key(tuple(by_name[n] for n in found[0].columns)) if found else None
