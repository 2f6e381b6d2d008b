"""A TABLE_MAP against the table a schema history gives: does every column have the type code and
metadata the server logs for the column the history names?

The shape of a column is what a TABLE_MAP says of it: its type code (ENUM and SET as their real
types) and its metadata (string bytes, DECIMAL precision and scale, fractional digits, BLOB
length bytes, BIT width, ENUM/SET storage bytes). It follows from the column's type and charset
as MySQL's field classes write it (sql/field.h, `Field::do_save_field_metadata`).
"""

from __future__ import annotations

from pymysqlreplication.constants import FIELD_TYPE

from binlake.binlog import constants as c
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
# MariaDB's own types, logged as the BINARY(n) of their stored bytes; their values are the
# server's text (binlake.binlog.rows.typed_text)
MARIADB_BINARY_TYPES = {"uuid": 16, "inet6": 16, "inet4": 4}
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


def observed(col, type_code: int) -> Shape:
    """The shape a TABLE_MAP gives a column: the package's Column and the logged type code."""
    t = col.type
    if type_code in (c.VARCHAR_COMPRESSED, c.BLOB_COMPRESSED):  # read as the VARCHAR or BLOB it holds
        return (type_code, *observed(col, t)[1:])
    if type_code == c.VECTOR:
        return (c.VECTOR,)
    if t in (FIELD_TYPE.FLOAT, FIELD_TYPE.DOUBLE):
        return (t, col.size)
    if t == FIELD_TYPE.NEWDECIMAL:
        return (t, col.precision, col.decimals)
    if t in (FIELD_TYPE.DATETIME2, FIELD_TYPE.TIMESTAMP2, FIELD_TYPE.TIME2):
        return (t, col.fsp)
    if t == FIELD_TYPE.BIT:
        return (t, col.bits)
    if t in (FIELD_TYPE.ENUM, FIELD_TYPE.SET):
        return (t, col.size)
    if t in (FIELD_TYPE.BLOB, FIELD_TYPE.JSON, FIELD_TYPE.GEOMETRY):
        return (t, col.length_size)
    if t in (FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING, FIELD_TYPE.VAR_STRING):
        return (FIELD_TYPE.STRING if t == FIELD_TYPE.VAR_STRING else t, col.max_length)
    return (t,)


def unknown_table(schema: object, table: Table | None, table_map) -> bool:
    """Whether a TABLE_MAP's rows go without names though a schema history is read (`schema`,
    the state the history gave; None without one): the binlog names no column and the history
    does not know the table. A SCHEMA_UNKNOWN anomaly says so: positional names are never silent."""
    return schema is not None and table is None and not table_map.logged_names


def disagreement(table: Table, columns: list, type_codes: list[int], logged_names: list[str] | None,
                 flavor: str) -> str | None:
    """Why the TABLE_MAP's columns are not the table's, or None when they are."""
    if len(columns) != len(table.columns):
        return f"the history has {len(table.columns)} columns, the TABLE_MAP {len(columns)}"
    for i, (mine, col) in enumerate(zip(table.columns, columns, strict=True)):
        if logged_names is not None and logged_names[i].lower() != mine.name.lower():
            return f"column {i + 1} is `{logged_names[i]}` in the binlog, `{mine.name}` in the history"
        want = expected(mine, flavor)
        got = observed(col, type_codes[i])
        if want is None:
            return f"column {i + 1} `{mine.name}` {mine.type}: charset {mine.charset!r} unknown, not checkable"
        if want != got:
            return (f"column {i + 1} `{mine.name}` is {mine.type}"
                    f"{' ' + mine.charset if mine.charset and mine.base in STRING_TYPES else ''} in the history "
                    f"(logged as {_shape_text(want)}), {_shape_text(got)} in the binlog")
    return None


_TYPE_NAMES = {v: k for k, v in sorted(vars(FIELD_TYPE).items(), reverse=True) if k.isupper()} | {
    FIELD_TYPE.TINY: "TINY", FIELD_TYPE.ENUM: "ENUM", c.VECTOR: "VECTOR"}


def _shape_text(shape: Shape) -> str:
    return _TYPE_NAMES.get(shape[0], str(shape[0])) + (f" {list(shape[1:])}" if len(shape) > 1 else "")
