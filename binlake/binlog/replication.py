"""The adapter to mysql-replication: everything binlake reaches inside that package.

Written for mysql-replication 1.0.17 up to (not including) 1.1, the range pyproject.toml pins:
the constructor of BinLogPacketWrapper, its control-connection duck type and
json_binary.parse_opaque are the package's internals, not its API, and may change in any
release. binlake owns framing, so the package never sees a connection: each event comes as a
packet rebuilt from its bytes, and the package's classes only decode column values.
"""

from __future__ import annotations

import base64
import struct
from decimal import Decimal

from pymysql.protocol import MysqlPacket
from pymysqlreplication import json_binary, row_event
from pymysqlreplication.constants import FIELD_TYPE
from pymysqlreplication.packet import BinLogPacketWrapper
from pymysqlreplication.row_event import find_charset

from binlake.binlog.varlen import read_packed

_ALLOWED = frozenset({row_event.TableMapEvent, row_event.WriteRowsEvent, row_event.UpdateRowsEvent,
                      row_event.DeleteRowsEvent, row_event.PartialUpdateRowsEvent})


class _Control:
    """Stands in for the package's control connection: it is never used to query."""

    charset = "utf8mb4"

    def __init__(self, flavor: str) -> None:
        self.flavor = flavor

    def _get_dbms(self) -> str:
        return self.flavor


def decode_event(type_code: int, body: bytes, flavor: str, *, tables: dict, post_header_lens: bytes):
    """The package's event object for one event body (no header, no CRC32): a TableMapEvent or a
    rows event, or None when the package skips it."""
    header = struct.pack("<IBIIIH", 0, type_code, 0, 19 + len(body), 0, 0)
    # The package stops reading TABLE_MAP metadata 4 bytes before the end (a CRC32 it assumes
    # is there): give it 4 bytes of room it never decodes.
    packet = MysqlPacket(b"\x00" + header + body + b"\0\0\0\0", "utf8")
    return BinLogPacketWrapper(
        from_packet=packet, table_map=tables, ctl_connection=_Control(flavor),
        mysql_version=(0, 0, 0), use_checksum=False, allowed_events=_ALLOWED,
        only_tables=None, ignored_tables=None, only_schemas=None, ignored_schemas=None,
        freeze_schema=False, ignore_decode_errors=False, verify_checksum=False,
        optional_meta_data=True, enable_logging=False, use_column_name_cache=False,
        post_header_lengths=post_header_lens,
    ).event


def apply_unnamed_metadata(ev, unnamed_members) -> None:
    """What a TABLE_MAP without column names carries, applied to its columns. The package applies
    signedness and charsets only together with the names (binlog_row_metadata=FULL), yet MySQL's
    MINIMAL (its default) and MariaDB's MINIMAL log them too. ENUM and SET columns get
    `unnamed_members` for their members: MINIMAL does not log the names."""
    meta = ev.optional_metadata
    unsigned = meta.unsigned_column_list or []
    charsets = iter(meta.charset_collation_list or [])
    member_charsets = iter(meta.enum_and_set_collation_list or [])
    for i, col in enumerate(ev.columns):
        col.unsigned = bool(i < len(unsigned) and unsigned[i])
        collation = None
        if ev._is_character_column(col.type, dbms=ev.dbms):  # noqa: SLF001 - the package's rule, kept one
            collation = next(charsets, None)
        if col.type in (FIELD_TYPE.ENUM, FIELD_TYPE.SET):
            collation = next(member_charsets, None)
            if col.type == FIELD_TYPE.ENUM:
                col.enum_values = unnamed_members
            else:
                col.set_values = unnamed_members
        if collation is not None:
            col.character_set_name, col.collation_name, _ = find_charset(str(collation), dbms=ev.dbms)


def read_pre_ga_rows(ev, nullable: tuple[bool, ...], filler: bool) -> None:
    """Have the package read a pre-GA rows event (MySQL 5.1.5-5.1.17, types 20-22), which it reads
    as v1: a row there is the record's null bytes (a filler bit first in a table of fixed-size
    columns, then a bit per nullable column) and every present column's value, NULL or not
    (log_event_old.cc, unpack_row_old). The package is handed a v1 null bitmap of no NULLs for
    each row, then the record's NULLs are applied."""
    null_bytes = (filler + sum(nullable) + 7) // 8
    bit: dict[int, int] = {}  # column -> its bit in the null bytes
    for i, can in enumerate(nullable):
        if can:
            bit[i] = filler + len(bit)
    package_read = ev._read_column_data  # noqa: SLF001 - the package's per-row reader

    def read(cols_bitmap, row_image_type=None):
        record = ev.packet.read(null_bytes)
        wrapper = ev.packet
        real = wrapper.read

        def bitmap(size):  # the package's first read of a row: its null bitmap
            wrapper.read = real
            return bytes(int(size))

        wrapper.read = bitmap
        try:
            values = package_read(cols_bitmap, row_image_type)
        finally:
            wrapper.read = real
        for i, col in enumerate(ev.table_map[ev.table_id].columns):
            at = bit.get(i)
            if at is not None and record[at // 8] & (1 << (at % 8)) and col.name in values:
                values[col.name] = None
        return values

    ev._read_column_data = read  # noqa: SLF001


_package_parse_opaque = json_binary.parse_opaque


_DATES = frozenset({FIELD_TYPE.DATE, FIELD_TYPE.NEWDATE})
_DATETIMES = frozenset({FIELD_TYPE.DATETIME, FIELD_TYPE.DATETIME2, FIELD_TYPE.TIMESTAMP, FIELD_TYPE.TIMESTAMP2})


def _parse_opaque(data: bytes):
    """A JSON opaque value as the server's JSON text writes it (`CAST(doc AS CHAR)`): TIME
    `[-]HH:MM:SS.ffffff`, DATE `YYYY-MM-DD`, DATETIME and TIMESTAMP `YYYY-MM-DD HH:MM:SS.ffffff`
    (the package builds datetime objects, which cannot hold a negative time or one past 23:59:59,
    and loses which of DATE and DATETIME a value was), a DECIMAL its digits with all its scale's
    decimals, never an exponent (`0.000000`, where the package's Decimal prints `0E-6`), any other
    type `base64:type<n>:<its bytes>` (the package decodes those bytes as text, dropping what is not)."""
    if len(data) < 2 or data[0] in (FIELD_TYPE.NEWDECIMAL, FIELD_TYPE.DECIMAL):
        v = _package_parse_opaque(data)
        return f"{v:f}" if isinstance(v, Decimal) else v
    length, n = json_binary.decode_variable_length(data[1:])
    raw = data[1 + n:1 + n + length]
    if data[0] not in _DATES | _DATETIMES | {FIELD_TYPE.TIME, FIELD_TYPE.TIME2}:
        return f"base64:type{data[0]}:{base64.b64encode(raw).decode('ascii')}"
    v = int.from_bytes(raw[:8].ljust(8, b"\0"), "little", signed=True)  # MySQL's packed temporal
    sign = "-" if v < 0 else ""
    whole, frac = abs(v) >> 24, abs(v) % (1 << 24)
    m, sec = (whole >> 6) % 64, whole % 64
    if data[0] in (FIELD_TYPE.TIME, FIELD_TYPE.TIME2):
        return f"{sign}{(whole >> 12) % (1 << 10):02d}:{m:02d}:{sec:02d}.{frac:06d}"
    ymd, ym = whole >> 17, whole >> 22
    date = f"{ym // 13:04d}-{ym % 13:02d}-{ymd % 32:02d}"
    return date if data[0] in _DATES else f"{date} {(whole >> 12) % 32:02d}:{m:02d}:{sec:02d}.{frac:06d}"


json_binary.parse_opaque = _parse_opaque  # parse_json looks it up in its module


class JsonDiffs(list):
    """The diffs of a partial JSON update (PARTIAL_UPDATE_ROWS), in the order they apply; empty
    when the document did not change."""


_package_read_binary_json = BinLogPacketWrapper.read_binary_json


def _read_binary_json(self, size: int, is_partial: bool):
    """A JSON value; a partial one as all its diffs (JsonDiffs): the package reads only the first
    of the diffs a statement logs (`JSON_SET(doc, '$.a', 1, '$.b', 2)` logs two). Each diff is
    MySQL's Json_diff: an operation byte, the path's length and text, and unless it removes, the
    value's length and binary JSON."""
    if not is_partial:
        return _package_read_binary_json(self, size, is_partial)
    data = self.read(self.read_uint_by_size(size))
    diffs, pos = JsonDiffs(), 0
    while pos < len(data):
        op = json_binary.JsonDiffOperation.by_index(data[pos])
        n, pos = read_packed(data, pos + 1)
        path, pos = data[pos:pos + n], pos + n
        if op == json_binary.JsonDiffOperation.Remove:
            diffs.append(json_binary.JsonDiff(op, path))
            continue
        n, pos = read_packed(data, pos)
        value, pos = data[pos:pos + n], pos + n
        diffs.append(json_binary.JsonDiff(op, path, json_binary.parse_json(value[0], value[1:])))
    return diffs


BinLogPacketWrapper.read_binary_json = _read_binary_json  # the rows event reads JSON through it
