"""GEOMETRY values as text: a stored value (its SRID, then WKB) as EWKT, as PostGIS writes it."""

from __future__ import annotations

import math
import struct

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
