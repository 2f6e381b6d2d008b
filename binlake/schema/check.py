"""What a schema history's table tells the codec of its columns (binlake.binlog.tablemap), which
checks it against each TABLE_MAP: does every column have the type code and metadata the server
logs for the column the history names?

The shape of a column is what a TABLE_MAP says of it: its type code (ENUM and SET as their real
types) and its metadata (string bytes, DECIMAL precision and scale, fractional digits, BLOB
length bytes, BIT width, ENUM/SET storage bytes). It follows from the column's type and charset
as MySQL's field classes write it (sql/field.h, `Field::do_save_field_metadata`).
"""

from __future__ import annotations

from pymysqlreplication.constants import FIELD_TYPE

from binlake.binlog import constants as c
from binlake.binlog.tablemap import KnownColumn, TableMap
from binlake.binlog.values import MARIADB_BINARY_TYPES  # logged as BINARY(n), their values the server's text
from binlake.schema.model import Column, Table

# Bytes per character of each character set (SHOW CHARACTER SET's Maxlen).
MAXLEN = {
    "big5": 2, "dec8": 1, "cp850": 1, "hp8": 1, "koi8r": 1, "latin1": 1, "latin2": 1, "swe7": 1, "ascii": 1,
    "ujis": 3, "sjis": 2, "hebrew": 1, "tis620": 1, "euckr": 2, "koi8u": 1, "gb2312": 2, "greek": 1,
    "cp1250": 1, "gbk": 2, "latin5": 1, "armscii8": 1, "utf8mb3": 3, "utf8": 3, "ucs2": 2, "cp866": 1,
    "keybcs2": 1, "macce": 1, "macroman": 1, "cp852": 1, "latin7": 1, "utf8mb4": 4, "cp1251": 1,
    "utf16": 4, "utf16le": 4, "cp1256": 1, "cp1257": 1, "utf32": 4, "binary": 1, "geostd8": 1, "cp932": 2,
    "eucjpms": 3, "gb18030": 4,
}
_INTS = {"tinyint": FIELD_TYPE.TINY, "smallint": FIELD_TYPE.SHORT, "mediumint": FIELD_TYPE.INT24,
         "int": FIELD_TYPE.LONG, "integer": FIELD_TYPE.LONG, "bigint": FIELD_TYPE.LONGLONG}
_BLOBS = {"tinyblob": 1, "tinytext": 1, "blob": 2, "text": 2, "mediumblob": 3, "mediumtext": 3,
          "longblob": 4, "longtext": 4, "json": 4}
_TEMPORAL = {"datetime": FIELD_TYPE.DATETIME2, "timestamp": FIELD_TYPE.TIMESTAMP2, "time": FIELD_TYPE.TIME2}
_SPATIAL = frozenset({"geometry", "point", "linestring", "polygon", "multipoint", "multilinestring",
                      "multipolygon", "geometrycollection", "geomcollection"})
BINARY_TYPES = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"})
STRING_TYPES = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext"}) | BINARY_TYPES

Shape = tuple  # (type code, metadata...)


# MariaDB's COMPRESSED columns: logged with their own type codes, a VARCHAR's length one byte more
# (the compression header's)
_COMPRESSED = {FIELD_TYPE.VARCHAR: (c.VARCHAR_COMPRESSED, 1), FIELD_TYPE.BLOB: (c.BLOB_COMPRESSED, 0)}


def expected(col: Column, flavor: str) -> Shape | None:
    """The shape the server logs for col; None when it cannot be known (an unknown charset)."""
    shape = _expected(col, flavor)
    if shape is None or flavor != "mariadb" or not col.type.endswith(" compressed*/"):
        return shape
    code, header = _COMPRESSED.get(shape[0], (None, 0))
    return None if code is None else (code, shape[1] + header)


def _expected(col: Column, flavor: str) -> Shape | None:
    base, p = col.base, col.params
    if base in _INTS:
        return (_INTS[base],)
    if base in ("float", "double", "real"):
        double = base != "float" or (len(p) == 1 and p[0] > 24)
        return (FIELD_TYPE.DOUBLE, 8) if double else (FIELD_TYPE.FLOAT, 4)
    if base in ("decimal", "numeric"):
        return (FIELD_TYPE.NEWDECIMAL, p[0] if p else 10, p[1] if len(p) > 1 else 0)
    if base in _TEMPORAL:
        return (_TEMPORAL[base], p[0] if p else 0)
    if base == "date":
        return (FIELD_TYPE.DATE,)
    if base == "year":
        return (FIELD_TYPE.YEAR,)
    if base == "bit":
        return (FIELD_TYPE.BIT, p[0] if p else 1)
    if base == "enum":
        return (FIELD_TYPE.ENUM, 1 if len(col.members) < 256 else 2)
    if base == "set":
        n = (len(col.members) + 7) // 8
        return (FIELD_TYPE.SET, 8 if n > 4 else n)
    if base == "json" and flavor == "mysql":
        return (FIELD_TYPE.JSON, 4)
    if base in _BLOBS:
        return (FIELD_TYPE.BLOB, _BLOBS[base])
    if base in _SPATIAL:
        return (FIELD_TYPE.GEOMETRY, 4)
    if base == "vector":
        return (c.VECTOR,)
    if base in MARIADB_BINARY_TYPES and flavor == "mariadb":
        return (FIELD_TYPE.STRING, MARIADB_BINARY_TYPES[base])
    if base in ("char", "binary", "varchar", "varbinary"):
        maxlen = 1 if base in BINARY_TYPES else MAXLEN.get((col.charset or "").lower())
        if maxlen is None:
            return None
        kind = FIELD_TYPE.VARCHAR if base.startswith("var") else FIELD_TYPE.STRING
        return (kind, (p[0] if p else 1) * maxlen)
    return None


def known_columns(table: Table, flavor: str) -> tuple[KnownColumn, ...]:
    """A table's columns as the codec is given them (binlake.binlog.tablemap): each one's name,
    declaration and the shape the server logs for it, checked there against the TABLE_MAP."""
    return tuple(KnownColumn(col.name, col.type, expected(col, flavor), charset=col.charset,
                             string=col.base in STRING_TYPES, unsigned=col.unsigned, members=col.members,
                             text=col.base if col.base in MARIADB_BINARY_TYPES else None)
                 for col in table.columns)


def unknown_table(schema: object, known: tuple[KnownColumn, ...] | None, table_map: TableMap) -> bool:
    """Whether a TABLE_MAP's rows go without names though a schema history is read (`schema`,
    the state the history gave; None without one): the binlog names no column and the history
    does not know the table (`known`: its columns, None). A SCHEMA_UNKNOWN anomaly says so:
    positional names are never silent."""
    return schema is not None and known is None and not table_map.logged_names
