"""MySQL's binary JSON written from Python values, for the decoders' tests: documents of every
kind without a server (sql-common/json_binary.cc's layout).

A document is a type byte and its value. Objects and arrays come small (2-byte counts and
offsets) or large (4-byte), each member an entry (objects: a key entry first) whose small
scalars are inlined; objects' keys are sorted as MySQL sorts them (length, then bytes). Values:
dict, list, None/True/False, int (int16/32/64 by range), `Unsigned` (uint16/32/64), float
(double), str or bytes (a string: bytes may be any, valid UTF-8 or not), `Opaque` (a value of
another MySQL type: its type number and bytes; see `decimal`, `packed_time`, `packed_datetime`).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from decimal import Decimal

SMALL_OBJECT, LARGE_OBJECT, SMALL_ARRAY, LARGE_ARRAY, LITERAL = 0, 1, 2, 3, 4
INT16, UINT16, INT32, UINT32, INT64, UINT64, DOUBLE, STRING, OPAQUE = 5, 6, 7, 8, 9, 10, 11, 12, 15
_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


class Unsigned(int):
    """An integer MySQL keeps unsigned (uint16/32/64)."""


@dataclass(frozen=True)
class Opaque:
    mysql_type: int
    data: bytes


class TooBig(Exception):
    """A small container's offsets would pass 64 KiB."""


def document(value, large: bool = False) -> bytes:
    """The binary document of value; `large`: its top container in the large form even when
    small would do."""
    t, data = _value(value, large)
    return bytes([t]) + data


def varlen(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not out[-1] & 0x80:
            return bytes(out)


def decimal(text: str, precision: int, scale: int) -> Opaque:
    """A DECIMAL(precision, scale) as MySQL keeps it in a document: precision, scale and the
    binary decimal (decimal2bin)."""
    d = Decimal(text)
    negative = d.is_signed()
    digits = f"{abs(d):.{scale}f}"
    whole, _, frac = digits.partition(".")
    intg = precision - scale
    whole = whole.lstrip("0").rjust(intg, "0")
    assert len(whole) == intg, (text, precision, scale)
    out = bytearray()
    lead = intg % 9
    if lead:
        out += int(whole[:lead]).to_bytes(_DIG2BYTES[lead], "big")
    for i in range(lead, intg, 9):
        out += int(whole[i:i + 9]).to_bytes(4, "big")
    for i in range(0, scale - scale % 9, 9):
        out += int(frac[i:i + 9]).to_bytes(4, "big")
    if scale % 9:
        out += int(frac[scale - scale % 9:]).to_bytes(_DIG2BYTES[scale % 9], "big")
    if negative:
        out = bytearray(b ^ 0xFF for b in out)
    out[0] ^= 0x80
    return Opaque(246, bytes([precision, scale]) + bytes(out))


def packed_time(negative: bool, h: int, m: int, s: int, us: int) -> int:
    v = ((h << 12 | m << 6 | s) << 24) | us
    return -v if negative else v


def packed_datetime(y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0, us: int = 0) -> int:
    ymd = ((y * 13 + mo) << 5) | d
    return (((ymd << 17) | (h << 12 | mi << 6 | s)) << 24) | us


def temporal(mysql_type: int, packed: int) -> Opaque:
    return Opaque(mysql_type, packed.to_bytes(8, "little", signed=True))


def _inline(t: int, large: bool) -> bool:
    return t in (LITERAL, INT16, UINT16) or (large and t in (INT32, UINT32))


def _value(v, large: bool = False) -> tuple[int, bytes]:
    if isinstance(v, dict | list):
        if not large:
            try:
                return _container(v, False)
            except TooBig:
                pass
        return _container(v, True)
    if v is None or isinstance(v, bool):
        return LITERAL, bytes([0 if v is None else 1 if v else 2])
    if isinstance(v, Unsigned):
        for t, n in ((UINT16, 2), (UINT32, 4), (UINT64, 8)):
            if v < 1 << (8 * n):
                return t, int(v).to_bytes(n, "little")
    if isinstance(v, int):
        for t, n in ((INT16, 2), (INT32, 4), (INT64, 8)):
            if -(1 << (8 * n - 1)) <= v < 1 << (8 * n - 1):
                return t, v.to_bytes(n, "little", signed=True)
    if isinstance(v, float):
        return DOUBLE, struct.pack("<d", v)
    if isinstance(v, str | bytes):
        b = v.encode("utf-8") if isinstance(v, str) else v
        return STRING, varlen(len(b)) + b
    if isinstance(v, Opaque):
        return OPAQUE, bytes([v.mysql_type]) + varlen(len(v.data)) + v.data
    raise TypeError(f"no binary JSON for {v!r}")


def _container(v, large: bool) -> tuple[int, bytes]:
    os = 4 if large else 2
    obj = isinstance(v, dict)
    items = sorted((((k.encode("utf-8") if isinstance(k, str) else k), x) for k, x in v.items()),
                   key=lambda kv: (len(kv[0]), kv[0])) if obj else [(b"", x) for x in v]
    n = len(items)
    pos = 2 * os + n * ((os + 2) if obj else 0) + n * (1 + os)
    keys, entries, values = bytearray(), bytearray(), bytearray()
    key_entries = bytearray()
    for k, _ in items if obj else ():
        key_entries += (pos + len(keys)).to_bytes(os, "little") + len(k).to_bytes(2, "little")
        keys += k
    pos += len(keys)
    for _, x in items:
        t, data = _value(x)
        if _inline(t, large):
            entries += bytes([t]) + data.ljust(os, b"\0")
            continue
        if pos >= 1 << (8 * os):
            raise TooBig
        entries += bytes([t]) + pos.to_bytes(os, "little")
        values += data
        pos += len(data)
    if pos >= 1 << (8 * os):
        raise TooBig
    head = n.to_bytes(os, "little") + pos.to_bytes(os, "little")
    t = (LARGE_OBJECT if large else SMALL_OBJECT) if obj else (LARGE_ARRAY if large else SMALL_ARRAY)
    return t, head + bytes(key_entries) + bytes(entries) + bytes(keys) + bytes(values)
