"""GTIDs: MySQL `uuid:gno` / `uuid:tag:gno` and MariaDB `domain-server-seq`, and GTID sets."""

from __future__ import annotations

import functools
import struct
import uuid
from dataclasses import dataclass

from binlake.binlog import varlen


def format_uuid(raw: bytes | memoryview) -> str:
    return _uuid_text(raw if isinstance(raw, bytes) else bytes(raw))


@functools.lru_cache(maxsize=256)  # a file's GTIDs come from a few servers: format each uuid once
def _uuid_text(raw: bytes) -> str:
    return str(uuid.UUID(bytes=raw))


def mysql_gtid(sid: str, gno: int, tag: str | None = None) -> str:
    return f"{sid}:{tag}:{gno}" if tag else f"{sid}:{gno}"


def maria_gtid(domain: int, server_id: int, seq: int) -> str:
    return f"{domain}-{server_id}-{seq}"


@dataclass
class GtidSet:
    """A MySQL GTID set: {(uuid, tag): [(start, end_exclusive), ...]} (tag "" = untagged)."""

    intervals: dict[tuple[str, str], list[tuple[int, int]]]

    def __str__(self) -> str:
        """As MySQL prints it: `uuid:1-68:tag:1-3,uuid2:…`."""
        by_sid: dict[str, list[str]] = {}
        for (sid, tag), ivs in sorted(self.intervals.items()):
            rng = ":".join(f"{a}" if b == a + 1 else f"{a}-{b - 1}" for a, b in ivs)
            by_sid.setdefault(sid, []).append(f"{tag}:{rng}" if tag else rng)
        return ",".join(f"{sid}:{':'.join(parts)}" for sid, parts in by_sid.items())


def decode_previous_gtids(body: bytes | memoryview) -> GtidSet:
    """PREVIOUS_GTIDS body. MySQL 8.3+ marks a tagged encoding in the count's top byte."""
    b = bytes(body)
    tagged = b[7] == 1  # MySQL 8.3+: format byte first and last, the count in the 6 between
    n = int.from_bytes(b[1:7], "little") if tagged else struct.unpack_from("<Q", b, 0)[0]
    pos = 8
    out: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for _ in range(n):
        sid = format_uuid(b[pos:pos + 16])
        pos += 16
        tag = ""
        if tagged:
            tlen, pos = varlen.read_unsigned(b, pos)
            tag = b[pos:pos + tlen].decode("ascii")
            pos += tlen
        (k,) = struct.unpack_from("<Q", b, pos)
        pos += 8
        ivs = []
        for _ in range(k):
            a, e = struct.unpack_from("<qq", b, pos)
            pos += 16
            ivs.append((a, e))
        out.setdefault((sid, tag), []).extend(ivs)
    return GtidSet(out)


def decode_gtid_list(body: bytes | memoryview) -> list[str]:
    """MariaDB GTID_LIST body: the last GTID of each (domain, server) before this file."""
    b = bytes(body)
    (n,) = struct.unpack_from("<I", b, 0)
    n &= 0x0FFFFFFF  # the top 4 bits are flags
    out = []
    for i in range(n):
        domain, server, seq = struct.unpack_from("<IIQ", b, 4 + 16 * i)
        out.append(maria_gtid(domain, server, seq))
    return out


def parse_gtid_set(text: str) -> GtidSet:
    """Read a set as MySQL prints it: `uuid:1-5:7:tag:1-3,uuid2:4`."""
    out: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        fields = part.split(":")
        sid, tag = fields[0].lower(), ""
        for f in fields[1:]:
            if f and not f[0].isdigit():
                tag = f
                continue
            a, _, b = f.partition("-")
            out.setdefault((sid, tag), []).append((int(a), int(b or a) + 1))
    return GtidSet({k: _normalise(v) for k, v in out.items()})


def _normalise(ivs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for a, b in sorted(ivs):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged


def union(x: GtidSet, y: GtidSet) -> GtidSet:
    keys = set(x.intervals) | set(y.intervals)
    return GtidSet({k: _normalise(x.intervals.get(k, []) + y.intervals.get(k, [])) for k in keys})


def subtract(x: GtidSet, y: GtidSet) -> GtidSet:
    """The GTIDs of x that y lacks."""
    out: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for k, ivs in x.intervals.items():
        rest = list(ivs)
        for ya, yb in y.intervals.get(k, []):
            nxt = []
            for a, b in rest:
                if yb <= a or ya >= b:
                    nxt.append((a, b))
                    continue
                if a < ya:
                    nxt.append((a, ya))
                if yb < b:
                    nxt.append((yb, b))
            rest = nxt
        if rest:
            out[k] = rest
    return GtidSet(out)


def maria_range(domain: int | str, server_id: int | str, first: int, last: int) -> str:
    """MariaDB sequence numbers first..last of a domain, as binlake records a purge gap: `d-s-a..b`."""
    return f"{domain}-{server_id}-{first}..{last}"
