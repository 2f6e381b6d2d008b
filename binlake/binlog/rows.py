"""Rows events: their row images decoded, by the compiled decoder where it applies
(binlake.binlog.fastrows), else with mysql-replication's column decoders and binlake's values
(binlake.binlog.values). binlake owns framing, so the package gets each event as a packet rebuilt
from the bytes (binlake.binlog.replication is the adapter). What it lacks is added here: MariaDB
compressed rows (zlib), 4-byte table ids (MySQL 5.1), pre-GA row event ids.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from pymysqlreplication.constants import FIELD_TYPE

from binlake.binlog import constants as c
from binlake.binlog import fastrows
from binlake.binlog.events import uncompress_maria
from binlake.binlog.replication import decode_event, read_pre_ga_rows
from binlake.binlog.tablemap import TableMap, normalise_table_id
from binlake.binlog.values import Converter
from binlake.binlog.varlen import read_packed
from binlake.errors import RowDecodeError

ROWS_EVENT_TYPES: dict[int, str] = {
    c.PRE_GA_WRITE_ROWS_EVENT: "insert", c.PRE_GA_UPDATE_ROWS_EVENT: "update",
    c.PRE_GA_DELETE_ROWS_EVENT: "delete",
    c.WRITE_ROWS_EVENT_V1: "insert", c.UPDATE_ROWS_EVENT_V1: "update", c.DELETE_ROWS_EVENT_V1: "delete",
    c.WRITE_ROWS_EVENT: "insert", c.UPDATE_ROWS_EVENT: "update", c.DELETE_ROWS_EVENT: "delete",
    c.PARTIAL_UPDATE_ROWS_EVENT: "update",
    c.WRITE_ROWS_COMPRESSED_EVENT_V1: "insert", c.UPDATE_ROWS_COMPRESSED_EVENT_V1: "update",
    c.DELETE_ROWS_COMPRESSED_EVENT_V1: "delete",
    c.WRITE_ROWS_COMPRESSED_EVENT: "insert", c.UPDATE_ROWS_COMPRESSED_EVENT: "update",
    c.DELETE_ROWS_COMPRESSED_EVENT: "delete",
}
# The event type the package knows for each: v1 layout or v2 layout.
_AS_TYPE = {
    c.PRE_GA_WRITE_ROWS_EVENT: c.WRITE_ROWS_EVENT_V1, c.PRE_GA_UPDATE_ROWS_EVENT: c.UPDATE_ROWS_EVENT_V1,
    c.PRE_GA_DELETE_ROWS_EVENT: c.DELETE_ROWS_EVENT_V1,
    c.WRITE_ROWS_COMPRESSED_EVENT_V1: c.WRITE_ROWS_EVENT_V1,
    c.UPDATE_ROWS_COMPRESSED_EVENT_V1: c.UPDATE_ROWS_EVENT_V1,
    c.DELETE_ROWS_COMPRESSED_EVENT_V1: c.DELETE_ROWS_EVENT_V1,
    c.WRITE_ROWS_COMPRESSED_EVENT: c.WRITE_ROWS_EVENT, c.UPDATE_ROWS_COMPRESSED_EVENT: c.UPDATE_ROWS_EVENT,
    c.DELETE_ROWS_COMPRESSED_EVENT: c.DELETE_ROWS_EVENT,
}
_V2 = {c.WRITE_ROWS_EVENT, c.UPDATE_ROWS_EVENT, c.DELETE_ROWS_EVENT, c.PARTIAL_UPDATE_ROWS_EVENT}


@dataclass
class RowsEvent:
    table_id: int
    flags: int
    op: str
    rows: list[tuple[dict | None, dict | None]]


def rows_table_id(event_type: int, body, post_header_len: int) -> int:
    b = bytes(body[:6])
    return int.from_bytes(b[:4] if post_header_len == 6 else b, "little")


def _rows_body(event_type: int, body: bytes, post_header_len: int, ncols_hint: int) -> tuple[int, bytes]:
    """The event type and body the package can read: MariaDB compressed rows uncompressed."""
    b = normalise_table_id(body, post_header_len)
    phl = 8 if post_header_len == 6 else post_header_len
    as_type = _AS_TYPE.get(event_type, event_type)
    if event_type in c.MARIADB_COMPRESSED_EVENTS:
        pos = phl
        if as_type in _V2:
            pos = 8 + struct.unpack_from("<H", b, 8)[0]
        ncols, pos = read_packed(b, pos)
        nbitmaps = 2 if ROWS_EVENT_TYPES[event_type] == "update" else 1
        pos += nbitmaps * ((ncols + 7) // 8)
        b = b[:pos] + uncompress_maria(b[pos:])
    return as_type, b


def _record_filler(table_map: TableMap) -> bool:
    """Whether a pre-GA row's null bytes start with the record's filler bit: a table of fixed-size
    columns only (MySQL 5.1's HA_OPTION_PACK_RECORD is set for any variable-length one)."""
    return not any(t in _VARIABLE_TYPES for t in table_map.column_types)


_VARIABLE_TYPES = frozenset({FIELD_TYPE.VARCHAR, FIELD_TYPE.VAR_STRING, FIELD_TYPE.BLOB, FIELD_TYPE.TINY_BLOB,
                             FIELD_TYPE.MEDIUM_BLOB, FIELD_TYPE.LONG_BLOB, FIELD_TYPE.GEOMETRY, FIELD_TYPE.JSON})


def render_rows(event_type: int, body, post_header_len: int, table_map: TableMap, *, op: str,
                parts: tuple[bytes, bytes, bytes], seq: int) -> tuple[int, int, bytes] | None:
    """(flags, rows, JSON lines) of a rows event of operation op (ROWS_EVENT_TYPES), numbered from
    seq, by the compiled path (fastrows.render; the table map has json_keys); None when it does not
    take the event: decode_rows then decodes it, and words the error if there is one."""
    if table_map.fast is None or table_map.json_keys is None or event_type in c.PRE_GA_ROWS_EVENTS:
        return None
    try:
        as_type, b = _rows_body(event_type, bytes(body), post_header_len, len(table_map.column_names))
        return fastrows.render(as_type, b, op, table_map.fast, keys=table_map.json_keys, parts=parts, seq=seq)
    except Exception:  # noqa: BLE001 - decode_rows reads the event again and says what is wrong
        return None


def render_columns(event_type: int, body, post_header_len: int, table_map: TableMap, *, op: str):
    """(flags, rows, before, after) of a rows event as JSON texts in Arrow buffers
    (fastrows.columns), or None when the compiled path does not take it (as render_rows)."""
    if table_map.fast is None or table_map.json_keys is None or event_type in c.PRE_GA_ROWS_EVENTS:
        return None
    try:
        as_type, b = _rows_body(event_type, bytes(body), post_header_len, len(table_map.column_names))
        return fastrows.columns(as_type, b, op, table_map.fast, keys=table_map.json_keys)
    except Exception:  # noqa: BLE001 - decode_rows reads the event again and says what is wrong
        return None


def decode_rows(event_type: int, body, post_header_len: int, table_map: TableMap,  # noqa: PLR0917 - as TABLE_MAP's
                flavor: str) -> RowsEvent:
    op = ROWS_EVENT_TYPES.get(event_type)
    if op is None:
        raise RowDecodeError(f"event type {event_type} is not a rows event")
    try:
        as_type, b = _rows_body(event_type, bytes(body), post_header_len, len(table_map.column_names))
        if table_map.fast is not None and fastrows.enabled() and event_type not in c.PRE_GA_ROWS_EVENTS:
            done = fastrows.decode(as_type, b, op, table_map.fast)
            if done is not None:
                return RowsEvent(table_map.table_id, done[0], op, done[1])
        fastrows.counts["reference"] += 1
        phl = bytearray(40)
        phl[as_type - 1] = 10 if as_type in _V2 else 8
        tables = {table_map.table_id: table_map.table_obj}
        ev = decode_event(as_type, b, flavor, tables=tables, post_header_lens=bytes(phl))
        if ev is None:
            raise RowDecodeError("rows event for a table the package did not map")
        if event_type in c.PRE_GA_ROWS_EVENTS:
            read_pre_ga_rows(ev, table_map.nullable, _record_filler(table_map))
        raw = ev.rows
        if ev.packet.read_bytes > ev.event_size:
            raise RowDecodeError(f"a row image runs {ev.packet.read_bytes - ev.event_size} bytes past the event's end")
    except RowDecodeError:
        raise
    except Exception as e:  # noqa: BLE001 - the package raises whatever its reads hit: say what
        raise RowDecodeError(f"{type(e).__name__}: {e}") from None
    columns = table_map.table_obj.columns
    conv = Converter(columns, table_map.vectors, table_map.charset_unknown, table_map.compressed)
    out: list[tuple[dict | None, dict | None]] = []
    for r in raw:
        if op == "update":
            before = conv.row(r["before_values"], r["before_none_sources"], ev.columns_present_bitmap)
            after = conv.row(r["after_values"], r["after_none_sources"], ev.columns_present_bitmap2,
                             before=before)
            out.append((before, after))
        else:
            values = conv.row(r["values"], r["none_sources"], ev.columns_present_bitmap)
            out.append((None, values) if op == "insert" else (values, None))
    return RowsEvent(table_map.table_id, ev.flags, op, out)
