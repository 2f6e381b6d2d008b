"""TABLE_MAP and rows events: row images decoded with mysql-replication's column decoders.

binlake owns framing, so the package gets each event as a packet rebuilt from the bytes
(no server, no connection; binlake.binlog.replication is the adapter); its classes decode the
column values. What it lacks is
added here: MariaDB compressed rows (zlib), 4-byte table ids (MySQL 5.1), pre-GA row
event ids, VECTOR columns, MariaDB COMPRESSED columns, GEOMETRY as EWKT, partial JSON applied to the before image,
and the JSON-typed value mapping of docs/row-values.md.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pymysqlreplication.constants import FIELD_TYPE
from pymysqlreplication.json_binary import JsonDiffOperation

from binlake.binlog import charsets, fastrows
from binlake.binlog import constants as c
from binlake.binlog.events import uncompress_maria
from binlake.binlog.replication import JsonDiffs, apply_unnamed_metadata, decode_event, read_pre_ga_rows
from binlake.binlog.varlen import read_packed
from binlake.errors import RowDecodeError
from binlake.schema.check import MARIADB_BINARY_TYPES, disagreement
from binlake.schema.model import Table

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


class _Unnamed:
    """The members of an ENUM or SET whose names the TABLE_MAP does not carry: member i is i, so the
    package reads an ENUM's index and a SET's bits (its set_values are iterated: 64 at most)."""

    def __getitem__(self, i: int) -> int:
        return i

    def __iter__(self):
        return iter(range(64))

    def __bool__(self) -> bool:
        return True


UNNAMED = _Unnamed()


@dataclass
class TableMap:
    table_id: int
    schema: str
    table: str
    column_names: list[str]
    column_types: list[int]
    table_obj: Any = field(repr=False, default=None)  # the package's Table
    vectors: frozenset[int] = frozenset()
    charset_unknown: frozenset[int] = frozenset()  # string columns without charset metadata
    fast: tuple | None = field(repr=False, default=None)  # the compiled decoder's plan (fastrows)
    json_keys: tuple | None = field(repr=False, default=None)  # its columns' JSON keys (fastrows.render)
    mismatch: str | None = None  # how it disagrees with the schema history's table (positional names)
    logged_names: bool = False  # the binlog names its columns (binlog_row_metadata=FULL)
    nullable: tuple[bool, ...] = ()  # per column, as the TABLE_MAP's null bitmap says
    compressed: dict[int, str | None] = field(default_factory=dict)  # MariaDB COMPRESSED columns: their codec


@dataclass
class RowsEvent:
    table_id: int
    flags: int
    op: str
    rows: list[tuple[dict | None, dict | None]]


def _normalise_table_id(body: bytes, post_header_len: int) -> bytes:
    """MySQL 5.1.x wrote 4-byte table ids (post-header 6): widen to today's 6 bytes."""
    if post_header_len == 6:
        return body[:4] + b"\0\0" + body[4:]
    return body


def rows_table_id(event_type: int, body, post_header_len: int) -> int:
    b = bytes(body[:6])
    return int.from_bytes(b[:4] if post_header_len == 6 else b, "little")


_TABLE_MAPS: dict[tuple[bytes, int, str, Table | None], TableMap] = {}


def decode_table_map(body, post_header_len: int, flavor: str, table: Table | None = None) -> TableMap:
    """The TABLE_MAP's table, checked against and named by `table` (the schema history's) when
    given. Each transaction maps its tables again with the same bytes: decoded once, then the same
    (read-only) TableMap is handed out."""
    key = (bytes(body), post_header_len, flavor, table)
    tm = _TABLE_MAPS.get(key)
    if tm is None:
        if len(_TABLE_MAPS) >= 1024:
            _TABLE_MAPS.clear()
        tm = _TABLE_MAPS[key] = _decode_table_map(key[0], post_header_len, flavor, table)
    return tm


def table_map_name(body, post_header_len: int) -> tuple[str, str]:
    """A TABLE_MAP's database and table names, without decoding its columns."""
    b = _normalise_table_id(bytes(body), post_header_len)
    slen = b[8]
    tlen = b[9 + slen + 1]
    return (b[9:9 + slen].decode("utf-8", "replace"), b[9 + slen + 2:9 + slen + 2 + tlen].decode("utf-8", "replace"))


def _decode_table_map(body: bytes, post_header_len: int, flavor: str, table: Table | None) -> TableMap:
    b = _normalise_table_id(body, post_header_len)
    try:
        # VECTOR (MySQL 9) is unknown to the package: present it as a BLOB (same
        # metadata and value layout) and turn the bytes into floats afterwards.
        pos = 8
        slen = b[pos]
        pos += 1 + slen + 1
        tlen = b[pos]
        pos += 1 + tlen + 1
        ncols, pos = read_packed(b, pos)
        types = list(b[pos:pos + ncols])
        vectors = frozenset(i for i, t in enumerate(types) if t == c.VECTOR)
        squeezed = frozenset(i for i, t in enumerate(types) if t in _COMPRESSED_AS)
        if vectors or squeezed:
            b = b[:pos] + bytes(_COMPRESSED_AS.get(t, FIELD_TYPE.BLOB if t == c.VECTOR else t) for t in types) \
                + b[pos + ncols:]
        if len(b) == pos + ncols:  # MySQL 5.1 before 5.1.16: no column metadata
            needing = [t for t in types if t in _NEEDS_METADATA]
            if needing:
                raise RowDecodeError(
                    f"TABLE_MAP of {b[9:9 + slen].decode(errors='replace')}."
                    f"{b[9 + slen + 2:9 + slen + 2 + tlen].decode(errors='replace')} has no column "
                    "metadata (MySQL 5.1 before 5.1.16): its values need the table definition")
            b += b"\0" + bytes((ncols + 7) // 8)
        b = _known_metadata_only(b, pos + ncols, ncols)
        tables: dict = {}
        ev = decode_event(c.TABLE_MAP_EVENT, b, flavor, tables, b"")
        named = bool(ev.optional_metadata.column_name_list)
        if not named:
            apply_unnamed_metadata(ev, UNNAMED)
        t = ev.get_table()
    except RowDecodeError:
        raise
    except Exception as e:  # noqa: BLE001 - the package raises whatever its reads hit: say what
        raise RowDecodeError(f"TABLE_MAP: {type(e).__name__}: {e}") from None
    mismatch = None
    if table is not None:
        mismatch = disagreement(table, t.columns, types, [col.name for col in t.columns] if named else None, flavor)
        if mismatch is None and not named:
            _name_by_history(t.columns, table)
        if mismatch is None:
            for col, mine in zip(t.columns, table.columns, strict=True):
                if mine.base in MARIADB_BINARY_TYPES:
                    col.typed_text = mine.base  # its value is the server's text (typed_text)
    names = [col.name or f"col_{i + 1}" for i, col in enumerate(t.columns)]
    guessed = set()
    compressed: dict[int, str | None] = {}
    for i, col in enumerate(t.columns):
        col.name = names[i]
        col.character_set_name = charsets.codec(col.character_set_name)
        if i in squeezed:  # the package reads the compressed bytes; _Converter uncompresses and decodes them
            compressed[i] = None if col.character_set_name in (None, "binary") else col.character_set_name
            if col.character_set_name is None:  # no charset logged: UTF-8 when it decodes, as other strings
                guessed.add(i)
            col.character_set_name = "binary"
        if col.character_set_name is None and col.type in _STRING_TYPES:
            # No charset in the metadata: take the bytes, and decide per value (UTF-8 or base64).
            col.character_set_name = "binary"
            guessed.add(i)
    nullable = tuple(bool(ev.null_bitmask[i // 8] & (1 << (i % 8))) for i in range(len(t.columns)))
    tm = TableMap(ev.table_id, ev.schema, ev.table, names, types, t, vectors, frozenset(guessed), mismatch=mismatch,
                  logged_names=named, nullable=nullable, compressed=compressed)
    tm.fast = fastrows.plan(tm)
    tm.json_keys = fastrows.json_keys(tm.fast) if tm.fast is not None else None
    return tm


def _name_by_history(columns, table: Table) -> None:
    """What the history knows and the TABLE_MAP does not log: names, signedness and charsets
    (NO_LOG), ENUM and SET members. Only once the two are seen to agree (schema.check)."""
    for col, mine in zip(columns, table.columns, strict=True):
        col.name = mine.name
        col.unsigned = col.unsigned or mine.unsigned
        if col.character_set_name is None and mine.charset:
            col.character_set_name = mine.charset if mine.charset == "binary" else charsets.of_charset(mine.charset)
        if col.enum_values is UNNAMED:
            col.enum_values = ["", *mine.members]
        if col.set_values is UNNAMED:
            col.set_values = list(mine.members)


_NEEDS_METADATA = frozenset({
    FIELD_TYPE.FLOAT, FIELD_TYPE.DOUBLE, FIELD_TYPE.VARCHAR, FIELD_TYPE.VAR_STRING, FIELD_TYPE.STRING,
    FIELD_TYPE.BLOB, FIELD_TYPE.GEOMETRY, FIELD_TYPE.JSON, FIELD_TYPE.NEWDECIMAL, FIELD_TYPE.BIT,
    FIELD_TYPE.TIMESTAMP2, FIELD_TYPE.DATETIME2, FIELD_TYPE.TIME2, FIELD_TYPE.ENUM, FIELD_TYPE.SET})
# MariaDB's compressed column types as the package reads their bytes: same metadata, same layout
_COMPRESSED_AS = {c.BLOB_COMPRESSED: FIELD_TYPE.BLOB, c.VARCHAR_COMPRESSED: FIELD_TYPE.VARCHAR}
_STRING_TYPES = frozenset({FIELD_TYPE.VARCHAR, FIELD_TYPE.VAR_STRING, FIELD_TYPE.STRING, FIELD_TYPE.BLOB})
_KNOWN_METADATA = frozenset(range(1, 13))  # what the package's MetadataFieldType knows


def _known_metadata_only(b: bytes, pos: int, ncols: int) -> bytes:
    """Drop optional-metadata fields of newer servers (e.g. MySQL 9's VECTOR dimensions)."""
    mlen, pos = read_packed(b, pos)
    pos += mlen + (ncols + 7) // 8
    head, fields = b[:pos], b[pos:]
    kept = bytearray()
    i = 0
    while i < len(fields):
        ftype = fields[i]
        flen, j = read_packed(fields, i + 1)
        if ftype in _KNOWN_METADATA:
            kept += fields[i:j + flen]
        i = j + flen
    return head + bytes(kept)


def _rows_body(event_type: int, body: bytes, post_header_len: int, ncols_hint: int) -> tuple[int, bytes]:
    """The event type and body the package can read: MariaDB compressed rows uncompressed."""
    b = _normalise_table_id(body, post_header_len)
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


def typed_text(kind: str, b: bytes) -> str:
    """A MariaDB UUID, INET6 or INET4 value (its stored bytes, the trailing zeros the binlog
    leaves out put back) as the server shows it."""
    b = b.ljust(MARIADB_BINARY_TYPES[kind], b"\0")
    if kind == "uuid":
        h = b.hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    if kind == "inet4":
        return ".".join(map(str, b))
    words = struct.unpack(">8H", b)
    at, longest, i = 0, 0, 0  # the first longest run of zero words, as the server's INET6 text takes it
    while i < 8:
        j = i
        while j < 8 and words[j] == 0:
            j += 1
        if j - i > longest:
            at, longest = i, j - i
        i = max(j, i + 1)
    if at == 0 and (longest == 6 or (longest == 5 and words[5] == 0xFFFF)):  # IPv4-compatible or -mapped
        return ("::" if longest == 6 else "::ffff:") + ".".join(map(str, b[12:]))
    if not longest:  # a single zero word is shortened too (unlike RFC 5952): the server's text
        return ":".join(f"{w:x}" for w in words)
    head = ":".join(f"{w:x}" for w in words[:at])
    tail = ":".join(f"{w:x}" for w in words[at + longest:])
    return f"{head}::{tail}"


def uncompress_column(stored: bytes) -> bytes:
    """A MariaDB COMPRESSED column's value as stored: empty, or a header byte and then the bytes
    as they are (header bit 0x80 clear) or zlib's (set: the header's low 3 bits say how many
    big-endian bytes of original length follow, bit 0x08 a raw deflate stream without zlib's
    wrapper), as MariaDB's field_comp.cc writes them."""
    if not stored:
        return b""
    head = stored[0]
    if not head & 0x80:
        return stored[1:]
    n = head & 0x07
    size = int.from_bytes(stored[1:1 + n], "big")
    try:
        out = zlib.decompress(stored[1 + n:], -zlib.MAX_WBITS if head & 0x08 else zlib.MAX_WBITS)
    except zlib.error as e:
        raise RowDecodeError(f"a COMPRESSED column's value does not uncompress: {e}") from None
    if len(out) != size:
        raise RowDecodeError(f"a COMPRESSED column's value uncompresses to {len(out)} bytes, its header says {size}")
    return out


def _record_filler(table_map: TableMap) -> bool:
    """Whether a pre-GA row's null bytes start with the record's filler bit: a table of fixed-size
    columns only (MySQL 5.1's HA_OPTION_PACK_RECORD is set for any variable-length one)."""
    return not any(t in _VARIABLE_TYPES for t in table_map.column_types)


_VARIABLE_TYPES = frozenset({FIELD_TYPE.VARCHAR, FIELD_TYPE.VAR_STRING, FIELD_TYPE.BLOB, FIELD_TYPE.TINY_BLOB,
                             FIELD_TYPE.MEDIUM_BLOB, FIELD_TYPE.LONG_BLOB, FIELD_TYPE.GEOMETRY, FIELD_TYPE.JSON})


def render_rows(event_type: int, body, post_header_len: int, table_map: TableMap, op: str,
                parts: tuple[bytes, bytes, bytes], seq: int) -> tuple[int, int, bytes] | None:
    """(flags, rows, JSON lines) of a rows event of operation op (ROWS_EVENT_TYPES), numbered from
    seq, by the compiled path (fastrows.render; the table map has json_keys); None when it does not
    take the event: decode_rows then decodes it, and words the error if there is one."""
    if table_map.fast is None or table_map.json_keys is None or event_type in c.PRE_GA_ROWS_EVENTS:
        return None
    try:
        as_type, b = _rows_body(event_type, bytes(body), post_header_len, len(table_map.column_names))
        return fastrows.render(as_type, b, op, table_map.fast, table_map.json_keys, parts, seq)
    except Exception:  # noqa: BLE001 - decode_rows reads the event again and says what is wrong
        return None


def render_columns(event_type: int, body, post_header_len: int, table_map: TableMap, op: str):
    """(flags, rows, before, after) of a rows event as JSON texts in Arrow buffers
    (fastrows.columns), or None when the compiled path does not take it (as render_rows)."""
    if table_map.fast is None or table_map.json_keys is None or event_type in c.PRE_GA_ROWS_EVENTS:
        return None
    try:
        as_type, b = _rows_body(event_type, bytes(body), post_header_len, len(table_map.column_names))
        return fastrows.columns(as_type, b, op, table_map.fast, table_map.json_keys)
    except Exception:  # noqa: BLE001 - decode_rows reads the event again and says what is wrong
        return None


def decode_rows(event_type: int, body, post_header_len: int, table_map: TableMap,
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
        ev = decode_event(as_type, b, flavor, {table_map.table_id: table_map.table_obj}, bytes(phl))
        if ev is None:
            raise RowDecodeError("rows event for a table the package did not map")
        if event_type in c.PRE_GA_ROWS_EVENTS:
            read_pre_ga_rows(ev, table_map.nullable, _record_filler(table_map))
        raw = ev.rows
        if ev.packet.read_bytes > ev.event_size:
            raise RowDecodeError(f"a row image runs {ev.packet.read_bytes - ev.event_size} bytes past the event's end")
    except RowDecodeError:
        raise
    except Exception as e:  # noqa: BLE001 - as decode_table_map's
        raise RowDecodeError(f"{type(e).__name__}: {e}") from None
    columns = table_map.table_obj.columns
    conv = _Converter(columns, table_map.vectors, table_map.charset_unknown, table_map.compressed)
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


class _Converter:
    """The package's Python values -> binlake's JSON-typed values (docs/row-values.md)."""

    def __init__(self, columns, vectors: frozenset[int], charset_unknown: frozenset[int],
                 compressed: dict[int, str | None]) -> None:
        self.columns = columns
        self.vectors = vectors
        self.charset_unknown = charset_unknown
        self.compressed = compressed

    def row(self, values: dict, none_sources: dict, present: bytes, before: dict | None = None) -> dict:
        out: dict[str, Any] = {}
        for i, col in enumerate(self.columns):
            if not present[i // 8] & (1 << (i % 8)):
                continue  # not in the image (binlog_row_image MINIMAL / NOBLOB)
            name = col.name
            v = values.get(name)
            if v is None:
                src = none_sources.get(name)
                if src == "empty set":
                    out[name] = 0 if col.set_values is UNNAMED else []
                elif src in ("out of datetime range", "out of datetime2 range"):
                    out[name] = _zero_datetime(col)
                elif src == "out of date range":
                    out[name] = "0000-00-00"
                else:
                    out[name] = None
                continue
            out[name] = self.value(i, col, v, before.get(name) if before else None)
        return out

    def value(self, i: int, col, v, before_value=None):
        t = col.type
        if i in self.vectors:  # presented to the package as BLOB (decode_table_map)
            return vector_values(v)
        if i in self.compressed:
            raw = uncompress_column(v.encode("latin-1") if isinstance(v, str) else bytes(v))
            codec = self.compressed[i]
            if codec:
                return raw.decode(codec)
            if i in self.charset_unknown:
                try:
                    return raw.decode("utf-8")
                except UnicodeDecodeError:
                    pass
            return base64_text(raw)
        if isinstance(v, JsonDiffs):
            return _apply_json_diff(before_value, v)
        convert = CONVERSIONS.get(t)
        if convert is not None:
            return convert(col, v)
        kind = getattr(col, "typed_text", None)
        if kind is not None:
            return typed_text(kind, v.encode("latin-1") if isinstance(v, str) else bytes(v))
        if isinstance(v, str) and col.character_set_name == "binary" and i not in self.charset_unknown:
            v = v.encode("latin-1")  # the package hands back an empty binary value as ''
        if isinstance(v, bytes | bytearray):
            if i in self.charset_unknown:
                try:
                    return bytes(v).decode("utf-8")
                except UnicodeDecodeError:
                    pass
            elif t == FIELD_TYPE.STRING and len(v) < col.max_length <= 255:
                v = bytes(v).ljust(col.max_length, b"\0")  # BINARY(n): the server logs it without its trailing zeros
            return base64_text(bytes(v))
        if isinstance(v, float | int | str):
            return v
        return _jsonable(v)


def vector_values(v: bytes) -> list[float]:
    """A VECTOR's stored bytes (little-endian float32s) as its list of numbers."""
    n = len(v) // 4
    return list(struct.unpack(f"<{n}f", v[:4 * n]))


def _datetime(col, v) -> str:
    return _fmt_datetime(v, getattr(col, "fsp", 0) or 0)


_EPOCH = dt.datetime(1970, 1, 1)


def _timestamp(col, v) -> str:
    # the package reads the stored 0 as the epoch; 0 is the zero TIMESTAMP (the smallest real one is 1 s)
    if isinstance(v, dt.datetime) and v.replace(microsecond=0) == _EPOCH:
        return _zero_datetime(col)
    return _datetime(col, v)


def _zero_datetime(col) -> str:
    """The zero DATETIME or TIMESTAMP as the server shows it, with its fraction digits."""
    return _fmt_datetime(dt.datetime(1, 1, 1), getattr(col, "fsp", 0) or 0).replace("0001-01-01", "0000-00-00")


def _date(col, v) -> str:
    return v.isoformat() if isinstance(v, dt.date) else str(v)


def _time(col, v) -> str:
    return _fmt_time(v, getattr(col, "fsp", 0) or 0)


def _time2(col, v) -> str:
    if isinstance(v, dt.timedelta) and v < dt.timedelta(0) and v.microseconds:
        # The package complements the whole seconds of a negative TIME2 but not its
        # fraction, which MySQL stores borrowed: -1.000001 s reads as -1.999999 s.
        whole = (-v).days * 86400 + (-v).seconds
        v = -dt.timedelta(seconds=whole, microseconds=1_000_000 - (-v).microseconds)
    return _time(col, v)


def _set(col, v) -> list | int:
    if col.set_values is UNNAMED:  # its bits: the bitmask
        return sum(1 << i for i in v)
    order = list(col.set_values or [])
    return sorted(v, key=lambda s: order.index(s) if s in order else len(order))


# Column type -> how the package's value becomes binlake's (docs/row-values.md). The other types
# (AS_IS) keep the package's value: numbers as they are, text decoded with the column's charset,
# bytes as "base64:…" (_Converter.value's end). VECTOR columns are read as BLOBs and turned into
# floats by their index. tests/test_column_types.py holds every type to one of these.
CONVERSIONS: dict[int, Callable] = {
    FIELD_TYPE.DATETIME2: _datetime, FIELD_TYPE.DATETIME: _datetime,
    FIELD_TYPE.TIMESTAMP2: _timestamp, FIELD_TYPE.TIMESTAMP: _timestamp,
    FIELD_TYPE.YEAR: lambda col, v: 0 if v == 1900 else v,  # the package adds 1900 to the stored 0 (YEAR 0000)
    FIELD_TYPE.DATE: _date, FIELD_TYPE.NEWDATE: _date,
    FIELD_TYPE.TIME2: _time2, FIELD_TYPE.TIME: _time,
    FIELD_TYPE.NEWDECIMAL: lambda col, v: _fmt_decimal(v, col.decimals),
    FIELD_TYPE.BIT: lambda col, v: int(v, 2) if isinstance(v, str) else int(v),
    FIELD_TYPE.SET: _set,
    FIELD_TYPE.GEOMETRY: lambda col, v: geometry_text(bytes(v)) if len(v) > 4 else base64_text(bytes(v)),
    FIELD_TYPE.JSON: lambda col, v: _jsonable(v),
}
AS_IS = frozenset({
    FIELD_TYPE.TINY, FIELD_TYPE.SHORT, FIELD_TYPE.INT24, FIELD_TYPE.LONG, FIELD_TYPE.LONGLONG,
    FIELD_TYPE.FLOAT, FIELD_TYPE.DOUBLE, FIELD_TYPE.DECIMAL, FIELD_TYPE.ENUM,
    FIELD_TYPE.VARCHAR, FIELD_TYPE.VAR_STRING, FIELD_TYPE.STRING, FIELD_TYPE.BLOB, FIELD_TYPE.TINY_BLOB,
    FIELD_TYPE.MEDIUM_BLOB, FIELD_TYPE.LONG_BLOB, FIELD_TYPE.NULL,
})


def base64_text(b: bytes) -> str:
    """Bytes as docs/row-values.md writes them: `base64:` and the standard base64."""
    return "base64:" + base64.b64encode(b).decode("ascii")


def _fmt_datetime(v, fsp: int) -> str:
    if isinstance(v, str):
        return v
    # the year with its four digits: strftime's %Y does not pad years before 1000
    s = f"{v.year:04d}-{v.month:02d}-{v.day:02d} {v.hour:02d}:{v.minute:02d}:{v.second:02d}"
    return f"{s}.{v.microsecond:06d}"[:20 + fsp] if fsp else s


def _fmt_time(v, fsp: int) -> str:
    if isinstance(v, dt.timedelta):
        us = v.days * 86_400_000_000 + v.seconds * 1_000_000 + v.microseconds
        sign = "-" if us < 0 else ""
        us = abs(us)
        s, frac = divmod(us, 1_000_000)
        h, rest = divmod(s, 3600)
        m, sec = divmod(rest, 60)
        text = f"{sign}{h:02d}:{m:02d}:{sec:02d}"
        return f"{text}.{frac:06d}"[:len(text) + 1 + fsp] if fsp else text
    return str(v)


def _fmt_decimal(v, decimals: int) -> str:
    if isinstance(v, Decimal):
        return f"{v:.{decimals}f}"
    return str(v)


def _jsonable(v):
    if isinstance(v, dict):
        return {_jsonable(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, bytes | bytearray):
        try:
            return bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            return base64_text(bytes(v))
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, dt.datetime | dt.date | dt.time):
        return v.isoformat()
    if isinstance(v, dt.timedelta):
        return _fmt_time(v, 6)
    if isinstance(v, set | frozenset):
        return sorted(_jsonable(x) for x in v)
    return v


# -- partial JSON ------------------------------------------------------------------------

def _parse_path(path: str) -> list:
    """'$.a[2]."b c"' -> ['a', 2, 'b c']."""
    out: list = []
    i = 1
    while i < len(path):
        ch = path[i]
        if ch == ".":
            i += 1
            if i < len(path) and path[i] == '"':
                j = path.index('"', i + 1)
                out.append(path[i + 1:j])
                i = j + 1
            else:
                j = i
                while j < len(path) and path[j] not in ".[":
                    j += 1
                out.append(path[i:j])
                i = j
        elif ch == "[":
            j = path.index("]", i)
            out.append(int(path[i + 1:j]))
            i = j + 1
        else:
            raise ValueError(f"unsupported JSON path {path!r}")
    return out


def _apply_json_diff(doc, diffs: list):
    """Apply MySQL's binary JSON diffs to the before image; without it, keep the diffs."""
    if doc is None:
        return {"$partial": [{"op": d.op.name, "path": _jsonable(d.path),
                              "value": _jsonable(d.value)} for d in diffs]}
    import copy

    doc = copy.deepcopy(doc)
    for d in diffs:
        path = _parse_path(_jsonable(d.path))
        value = _jsonable(d.value)
        if not path:
            doc = value
            continue
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        last = path[-1]
        if d.op == JsonDiffOperation.Remove:
            del parent[last]
        elif d.op == JsonDiffOperation.Insert and isinstance(parent, list):
            parent.insert(last, value)
        else:
            parent[last] = value
    return doc


# -- GEOMETRY ----------------------------------------------------------------------------

_WKB_NAMES = {1: "POINT", 2: "LINESTRING", 3: "POLYGON", 4: "MULTIPOINT", 5: "MULTILINESTRING",
              6: "MULTIPOLYGON", 7: "GEOMETRYCOLLECTION"}


def _num(x: float) -> str:
    """A coordinate: an integral one without its `.0`, any other as the shortest text that reads
    back as the same double (negative zero keeps its sign)."""
    if x != x or x in (float("inf"), float("-inf")):
        return repr(x)
    if x == int(x) and abs(x) < 1e15:
        return "-0" if x == 0 and math.copysign(1.0, x) < 0 else str(int(x))
    return repr(x)


def geometry_text(stored: bytes) -> str:
    """A GEOMETRY value (a 4-byte SRID, then WKB) as EWKT, as PostGIS writes it: `SRID=4326;`
    before the WKT unless the SRID is 0; the coordinates in the order the server stores them."""
    (srid,) = struct.unpack_from("<I", stored, 0)
    text = wkb_to_wkt(stored[4:])
    return f"SRID={srid};{text}" if srid else text


def wkb_to_wkt(wkb: bytes) -> str:
    text, _ = _wkb(wkb, 0)
    return text


def _wkb(b: bytes, pos: int) -> tuple[str, int]:
    order = "<" if b[pos] == 1 else ">"
    (kind,) = struct.unpack_from(order + "I", b, pos + 1)
    pos += 5
    name = _WKB_NAMES.get(kind)
    if name is None:
        raise ValueError(f"unknown WKB geometry type {kind}")

    def points(n: int, p: int) -> tuple[str, int]:
        pts = []
        for _ in range(n):
            x, y = struct.unpack_from(order + "dd", b, p)
            pts.append(f"{_num(x)} {_num(y)}")
            p += 16
        return ",".join(pts), p

    def count(p: int) -> tuple[int, int]:
        return struct.unpack_from(order + "I", b, p)[0], p + 4

    if kind == 1:
        s, pos = points(1, pos)
        return f"POINT({s})", pos
    if kind == 2:
        n, pos = count(pos)
        s, pos = points(n, pos)
        return (f"LINESTRING({s})" if n else "LINESTRING EMPTY"), pos
    if kind == 3:
        rings, pos = count(pos)
        if not rings:
            return "POLYGON EMPTY", pos
        parts = []
        for _ in range(rings):
            n, pos = count(pos)
            s, pos = points(n, pos)
            parts.append(f"({s})")
        return f"POLYGON({','.join(parts)})", pos
    n, pos = count(pos)
    if not n:
        return f"{name} EMPTY", pos  # standard WKT: a reader takes no `GEOMETRYCOLLECTION()`
    parts = []
    for _ in range(n):
        sub, pos = _wkb(b, pos)
        if kind in (4, 5, 6):
            sub = sub[sub.index("("):]  # MULTIPOINT((1 2),(3 4)) etc.
        parts.append(sub)
    return f"{name}({','.join(parts)})", pos
