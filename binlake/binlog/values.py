"""Row values of the reference path: mysql-replication's Python values as binlake's JSON-typed
values (docs/row-values.md), with what the package lacks: MariaDB COMPRESSED columns and typed
texts (UUID, INET6, INET4), VECTOR floats, partial JSON applied (binlake.binlog.partial_json),
GEOMETRY as EWKT (binlake.binlog.geometry), zero dates, negative fractional TIMEs."""

from __future__ import annotations

import base64
import datetime as dt
import struct
import zlib
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from pymysqlreplication.constants import FIELD_TYPE

from binlake.binlog import partial_json
from binlake.binlog.geometry import geometry_text
from binlake.binlog.replication import JsonDiffs
from binlake.binlog.tablemap import UNNAMED
from binlake.errors import RowDecodeError

# MariaDB's own types, logged as the BINARY(n) of their stored bytes: n per type
MARIADB_BINARY_TYPES = {"uuid": 16, "inet6": 16, "inet4": 4}


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


class Converter:
    """The package's Python values -> binlake's JSON-typed values (docs/row-values.md)."""

    def __init__(self, columns, vectors: frozenset[int], charset_unknown: frozenset[int],
                 compressed: Mapping[int, str | None]) -> None:
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
        if i in self.vectors:  # presented to the package as BLOB (tablemap.decode_table_map)
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
            return partial_json.apply(before_value, [(d.op, _jsonable(d.path), _jsonable(d.value)) for d in v])
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
