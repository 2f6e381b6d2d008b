"""GEOMETRY values as MySQL and MariaDB store them, written from Python values, for the decoders'
tests: a 4-byte SRID (little-endian), then the WKB (little-endian, as both servers write it).

A geometry is (kind, value): ("POINT", (x, y)), ("LINESTRING", [points]), ("POLYGON", [rings,
each a list of points]), ("MULTIPOINT", [points]), ("MULTILINESTRING", [lines]), ("MULTIPOLYGON",
[polygons]) or ("GEOMETRYCOLLECTION", [geometries]). An empty list is the EMPTY geometry.
"""

from __future__ import annotations

import struct

KINDS = {"POINT": 1, "LINESTRING": 2, "POLYGON": 3, "MULTIPOINT": 4, "MULTILINESTRING": 5, "MULTIPOLYGON": 6,
         "GEOMETRYCOLLECTION": 7}
MEMBER = {"MULTIPOINT": "POINT", "MULTILINESTRING": "LINESTRING", "MULTIPOLYGON": "POLYGON"}


def wkb(kind: str, value) -> bytes:
    head = struct.pack("<BI", 1, KINDS[kind])
    if kind == "POINT":
        return head + struct.pack("<dd", *value)
    if kind == "LINESTRING":
        return head + _points(value)
    if kind == "POLYGON":
        return head + struct.pack("<I", len(value)) + b"".join(_points(ring) for ring in value)
    if kind == "GEOMETRYCOLLECTION":
        return head + struct.pack("<I", len(value)) + b"".join(wkb(*member) for member in value)
    return head + struct.pack("<I", len(value)) + b"".join(wkb(MEMBER[kind], member) for member in value)


def stored(srid: int, kind: str, value) -> bytes:
    """A GEOMETRY column's value: its SRID, then its WKB."""
    return struct.pack("<I", srid) + wkb(kind, value)


def _points(points) -> bytes:
    return struct.pack("<I", len(points)) + b"".join(struct.pack("<dd", x, y) for x, y in points)
