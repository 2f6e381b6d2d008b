"""Row images through the compiled decoder (`_rowdecode.c`), where it applies.

The compiled decoder walks a rows event's images once and builds binlake's JSON-typed values
directly. It covers the column types of ordinary tables (integers, floats, strings and BLOBs
in any Python codec, DECIMAL, DATETIME2/TIMESTAMP2/TIME2/DATE, YEAR, ENUM, SET, BIT), MySQL's
binary JSON, GEOMETRY (its WKB as EWKT text) and MySQL 9's VECTOR. Tables with MariaDB
COMPRESSED or pre-5.6 temporal columns, partial JSON updates (PARTIAL_UPDATE_ROWS events) and
anything unexpected go to the reference path (rows.py, values.py), which the tests compare this one with.
`BINLAKE_PURE_PYTHON=1` turns the compiled path off.
"""

from __future__ import annotations

import codecs
import struct
from collections.abc import Callable, Mapping
from typing import Any

import orjson
from pymysql.charset import charset_by_name
from pymysqlreplication.constants import FIELD_TYPE

from binlake.binlog import constants as c
from binlake.binlog.builds import extension, pure_python
from binlake.binlog.varlen import read_packed

_rowdecode: Any = extension("binlake.binlog._rowdecode")  # None: the reference path does everything

OPS = {"insert": 0, "update": 1, "delete": 2}
# Rows events decoded by each path in this process (tests and benchmarks read it).
counts = {"compiled": 0, "reference": 0}
_V2 = {c.WRITE_ROWS_EVENT, c.UPDATE_ROWS_EVENT, c.DELETE_ROWS_EVENT}
def enabled() -> bool:
    return _rowdecode is not None and not pure_python()


def _int(signed: str, unsigned: str):
    return lambda k, col, guessed: (getattr(k, unsigned if col.unsigned else signed), 0, 0, None)


def _temporal(kind: str):
    return lambda k, col, guessed: (getattr(k, kind), col.fsp or 0, 0, None) if 0 <= (col.fsp or 0) <= 6 else None


def _text(k, col, guessed: bool) -> tuple | None:
    t = col.type
    size = col.length_size if t == FIELD_TYPE.BLOB else (2 if col.max_length > 255 else 1)
    pad = col.max_length if t == FIELD_TYPE.STRING and col.max_length <= 255 else 0
    return _string(k, size, col.character_set_name, guessed, pad=pad) if 1 <= size <= 4 else None


def _members(kind: str, names: str):
    def entry(k, col, guessed):
        members = getattr(col, names)  # a list, or tablemap.UNNAMED: the index or bitmask
        return (getattr(k, kind), col.size, 0, members if isinstance(members, list) else None) \
            if 1 <= col.size <= 8 else None
    return entry


def _blob(kind: str):
    """A value after its length (1 to 4 bytes, the column's metadata) read as one kind."""
    return lambda k, col, guessed: (getattr(k, kind), col.length_size, 0, None) if 1 <= col.length_size <= 4 \
        else None


# Column type (as mysql-replication's Table gives it) -> its compiled plan entry
# (kind, a, b, extra), or None when this column's metadata is beyond the compiled decoder.
# A type missing here takes its table to the reference path: see REFERENCE_ONLY.
PLANS: dict[int, Callable] = {
    FIELD_TYPE.TINY: _int("K_INT8", "K_UINT8"), FIELD_TYPE.SHORT: _int("K_INT16", "K_UINT16"),
    FIELD_TYPE.INT24: _int("K_INT24", "K_UINT24"), FIELD_TYPE.LONG: _int("K_INT32", "K_UINT32"),
    FIELD_TYPE.LONGLONG: _int("K_INT64", "K_UINT64"),
    FIELD_TYPE.FLOAT: lambda k, col, guessed: (k.K_FLOAT, 0, 0, None),
    FIELD_TYPE.DOUBLE: lambda k, col, guessed: (k.K_DOUBLE, 0, 0, None),
    FIELD_TYPE.YEAR: lambda k, col, guessed: (k.K_YEAR, 0, 0, None),
    FIELD_TYPE.VARCHAR: _text, FIELD_TYPE.STRING: _text, FIELD_TYPE.BLOB: _text,
    FIELD_TYPE.NEWDECIMAL: lambda k, col, guessed: (k.K_DECIMAL, col.precision, col.decimals, None),
    FIELD_TYPE.DATETIME2: _temporal("K_DATETIME2"), FIELD_TYPE.TIMESTAMP2: _temporal("K_TIMESTAMP2"),
    FIELD_TYPE.TIME2: _temporal("K_TIME2"),
    FIELD_TYPE.DATE: lambda k, col, guessed: (k.K_DATE, 0, 0, None),
    FIELD_TYPE.ENUM: _members("K_ENUM", "enum_values"), FIELD_TYPE.SET: _members("K_SET", "set_values"),
    FIELD_TYPE.BIT: lambda k, col, guessed: (k.K_BIT, col.bytes, col.bits, None),
    FIELD_TYPE.JSON: _blob("K_JSON"), FIELD_TYPE.GEOMETRY: _blob("K_GEOMETRY"),
    c.VECTOR: _blob("K_VECTOR"),  # the table's vectors: the package's Table says BLOB
}
# The types the compiled decoder leaves to the reference path (values.py), and why.
REFERENCE_ONLY: dict[int, str] = {
    c.BLOB_COMPRESSED: "MariaDB COMPRESSED columns: each value zlib's", c.VARCHAR_COMPRESSED: "as BLOB_COMPRESSED",
    FIELD_TYPE.DATETIME: "pre-5.6 temporal encoding", FIELD_TYPE.TIMESTAMP: "pre-5.6 temporal encoding",
    FIELD_TYPE.TIME: "pre-5.6 temporal encoding", FIELD_TYPE.NEWDATE: "never in a TABLE_MAP (DATE is)",
    FIELD_TYPE.DECIMAL: "pre-5.0 DECIMAL, never in a row-based binlog",
    FIELD_TYPE.NULL: "never in a TABLE_MAP",
    FIELD_TYPE.VAR_STRING: "logged as VARCHAR or STRING",
    FIELD_TYPE.TINY_BLOB: "logged as BLOB", FIELD_TYPE.MEDIUM_BLOB: "logged as BLOB",
    FIELD_TYPE.LONG_BLOB: "logged as BLOB",
}


def plan(columns: list, *, vectors: frozenset[int], charset_unknown: frozenset[int],
         compressed: Mapping[int, str | None]) -> tuple | None:
    """Per column (name, kind, a, b, extra) for the compiled decoder, from a TABLE_MAP's columns (the
    package's) and what binlake.binlog.tablemap learnt of them; None when a column needs the
    reference path. Made once per TABLE_MAP."""
    if _rowdecode is None or compressed:
        return None
    out = []
    for i, col in enumerate(columns):
        if getattr(col, "typed_text", None):  # a MariaDB UUID / INET: the reference path's text
            return None
        # a VECTOR is presented to the package as a BLOB (tablemap.decode_table_map): its index says
        make = PLANS[c.VECTOR] if i in vectors else PLANS.get(col.type)
        entry = make(_rowdecode, col, i in charset_unknown) if make else None
        if entry is None:
            return None
        out.append((col.name, *entry))
    return tuple(out)


def _string(k, size: int, charset: str | None, unknown: bool, *, pad: int = 0) -> tuple:
    if unknown:
        return (k.K_STR_GUESS, size, 0, None)
    cs = charset_by_name(charset) if charset else None
    encoding = cs.encoding if cs else charset
    if encoding == "utf8":
        return (k.K_STR_UTF8, size, 0, None)
    try:
        codecs.lookup(encoding or "")
    except LookupError:  # 'binary', or a charset Python has no codec for: the bytes, as base64
        return (k.K_STR_BINARY, size, pad, None)
    return (k.K_STR_CODEC, size, 0, encoding)


def json_keys(table_plan: tuple) -> tuple[bytes, ...] | None:
    """Per column its JSON key (`"name":`) for render(); None when two columns share a name
    (a dict would merge them: the records path keeps that behaviour)."""
    names = [col[0] for col in table_plan]
    if len(set(names)) != len(names):
        return None
    return tuple(orjson.dumps(name) + b":" for name in names)


def _images(as_type: int, body: bytes, op: str, ncols: int) -> tuple[int, int, bytes, bytes] | None:
    """(flags, where the images start, present, present2) of a rows event body, or None when the
    compiled path does not take the event."""
    if as_type in _V2:
        flags, extra = struct.unpack_from("<HH", body, 6)
        pos = 8 + extra
    elif as_type in (c.WRITE_ROWS_EVENT_V1, c.UPDATE_ROWS_EVENT_V1, c.DELETE_ROWS_EVENT_V1):
        (flags,) = struct.unpack_from("<H", body, 6)
        pos = 8
    else:  # partial JSON updates and anything else
        return None
    n_cols, pos = read_packed(body, pos)
    if n_cols != ncols:
        return None
    n = (ncols + 7) // 8
    present = body[pos:pos + n]
    pos += n
    present2 = b""
    if op == "update":
        present2 = body[pos:pos + n]
        pos += n
    return flags, pos, present, present2


def decode(as_type: int, body: bytes, op: str, table_plan: tuple) -> tuple[int, list] | None:
    """(flags, [(before, after), ...]) of a rows event body (table id widened, uncompressed),
    or None when the compiled decoder declines it."""
    images = _images(as_type, body, op, len(table_plan))
    if images is None:
        return None
    flags, pos, present, present2 = images
    try:
        rows = _rowdecode.decode(body, pos, table_plan, present, present2, OPS[op])
    except _rowdecode.Fallback:
        return None
    counts["compiled"] += 1
    return flags, rows


def render(as_type: int, body: bytes, op: str, table_plan: tuple, *, keys: tuple, parts: tuple[bytes, bytes, bytes],
           seq: int) -> tuple[int, int, bytes] | None:
    """(flags, rows, JSON lines) of a rows event body, or None when the compiled path declines it.
    parts: each line's head (up to `"seq":`), middle (up to `"before":`) and tail (with its newline)."""
    images = _images(as_type, body, op, len(table_plan))
    if images is None:
        return None
    flags, pos, present, present2 = images
    head, mid, tail = parts
    try:
        rows, lines = _rowdecode.render(body, pos, table_plan, keys, present, present2, OPS[op], head, seq, mid, tail)
    except _rowdecode.Fallback:
        return None
    counts["compiled"] += 1
    return flags, rows, lines


def columns(as_type: int, body: bytes, op: str, table_plan: tuple, *, keys: tuple
            ) -> tuple[int, int, tuple[bytes, bytes] | None, tuple[bytes, bytes] | None] | None:
    """(flags, rows, before, after) of a rows event body, each side the images' JSON texts as an
    Arrow string column's (offsets, data), None for the side the operation has none of; or None
    when the compiled path declines the event."""
    images = _images(as_type, body, op, len(table_plan))
    if images is None:
        return None
    flags, pos, present, present2 = images
    try:
        rows, before, after = _rowdecode.columns(body, pos, table_plan, keys, present, present2, OPS[op])
    except _rowdecode.Fallback:
        return None
    counts["compiled"] += 1
    return flags, rows, before, after


def lane_built() -> bool:
    """Whether the lane (binlake.assemble.lane) is compiled."""
    return _rowdecode is not None and hasattr(_rowdecode, "lane")


def compiled(table_plan: tuple, keys: tuple) -> Any:
    """A table's plan and JSON keys loaded once, for every rows event of it in the lane."""
    return _rowdecode.compile(table_plan, keys)


def lane(data, base: int, pos: int, stop: int, *, fixed: tuple, maps: dict, learn: Callable, table_maps: dict,
         most: int, runs: list | None = None, records: list | None = None) -> tuple[bytes, int, int, int, int]:
    """A run of ordinary transactions as JSON lines (binlake.assemble.lane): (lines, the offset after them,
    transactions, events, row changes); with `runs`, the row changes appended to it as columns
    (binlake.assemble.lane.RowRun's fields), not lines; with `records`, the transactions' records appended
    to it as columns (binlake.assemble.lane.RecordRun's fields), not lines."""
    return _rowdecode.lane(data, base, pos, stop, fixed, maps, learn, table_maps, most, runs, records)


def lane_layouts(members: bytes) -> tuple[bytes, bytes, tuple[str, ...], tuple[str, ...]]:
    """What the lane writes (binlake.assemble.lane.check_layouts): a record line, a row change line
    (members: a table's `"schema":…,"table":…,`), its record columns' and its block columns' names."""
    return _rowdecode.lane_layouts(members)


def swap_heads(lines: bytes, old: int, new: bytes) -> bytes:
    """JSON lines with each line's first `old` bytes (its head) replaced by new."""
    if _rowdecode is not None:
        return _rowdecode.swap_heads(lines, old, new)
    return b"".join(new + line[old:] + b"\n" for line in lines.split(b"\n")[:-1])
