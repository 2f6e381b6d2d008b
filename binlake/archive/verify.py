"""Verify a binlog while it streams past, and build its manifest in the same pass.

Each event is checked as it arrives — CRC32, and that its header's end position follows
on from the previous event — while the bytes feed a sha256 and the transaction index is
built through the same boundary parser `binlake scan` uses (a transaction whose GTID event
gives its length is counted off to that length instead of walked). Nothing is read twice
and nothing but the current run of events is held.

Such transactions are checked by the compiled loop in `_eventruns.c`, many per call: whole
ones, GTID event included, when they lie in the run at hand; else the events after the GTID
event. Every other event, and any the loop does not vouch for, takes the reference path below
(`BINLAKE_PURE_PYTHON=1`: all of them), which also words the errors.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from binlake.archive import loop
from binlake.archive.index import IndexEntry, Indexer
from binlake.archive.manifest import Indexed
from binlake.binlog import constants as c
from binlake.binlog.framing import FormatDescription, Frame, crc_ok, parse_fde_body
from binlake.binlog.gtid import GtidSet, decode_gtid_list, decode_previous_gtids
from binlake.errors import BinlogError
from binlake.records import ts_from_seconds

_HEADER = struct.Struct("<IBIIIH")
_DECODE_ERRORS = (ValueError, struct.error, IndexError, UnicodeDecodeError)
# Bytes checked by each path in this process (tests and benchmarks read it).
checked = {"compiled": 0, "reference": 0}


@dataclass
class Verifier:
    """Feed it a file's bytes event by event (`magic()` first); read the manifest facts at the end."""

    name: str
    pos: int = 0
    size: int = 0
    fde: FormatDescription | None = None
    sha: Any = field(default_factory=hashlib.sha256)  # hashlib's hash object (its type is private)
    server_id: int | None = None
    first_event_ts: int | None = None
    last_event_ts: int | None = None
    previous_gtids: str | None = None
    index: list[IndexEntry] = field(default_factory=list)
    last_event_type: int | None = None
    _indexer: Indexer | None = None
    _loop: ModuleType | None = field(default_factory=loop)

    def magic(self, data: bytes) -> None:
        if data == c.ENCRYPTED_MAGIC:
            raise BinlogError(self.name, 0, "encrypted binlog: not supported (MySQL binlog_encryption)")
        if data != c.MAGIC:
            raise BinlogError(self.name, 0, f"not a binlog file: magic {data.hex(' ')}")
        self.sha.update(data)
        self.pos = self.size = 4

    def hash(self, run: bytes) -> None:
        """Feed the sha256 the file's bytes after the magic, in order: apart from `events`, so
        that the copy can hash one run while it checks the next."""
        self.sha.update(run)

    def events(self, run: bytes) -> None:
        """Whole events back to back, exactly as they sit in the file from the current position
        (checked and indexed; the caller hashes them with `hash`). A run that does not end at an
        event's end raises, naming where."""
        n, off = len(run), 0
        with memoryview(run) as view:
            while off < n:
                stop = off
                if self._loop is not None and self._indexer is not None:
                    stop = self._compiled(self._loop, self._indexer, run, off=off, n=n)
                if stop > off:
                    off = stop
                    continue
                size = _HEADER.unpack_from(run, off)[3] if n - off >= 19 else 0
                end = min(n, off + max(size, 19))
                self.event(run if end - off == n else bytes(view[off:end]))
                off = end

    def _compiled(self, loop: ModuleType, indexer: Indexer, run: bytes, *, off: int, n: int) -> int:
        """Where the compiled loop stops in run[off:n] (off: it vouches for nothing there): the
        rest of a transaction whose GTID event gave its length, or whole such transactions."""
        assert self.fde is not None  # an indexer is made with the file's FORMAT_DESCRIPTION
        vouched, checksum = indexer.vouched, self.fde.has_checksum
        found = None
        if vouched is not None:
            stop, pos, ts, type_code = loop.checked(run, off, n, self.pos, checksum, vouched.start + vouched.length)
        elif indexer.idle and self.fde.header_len == 19:
            stop, pos, ts, type_code, found = loop.txns(run, off, n, self.pos, checksum)
        else:
            return off
        if stop > off:
            checked["compiled"] += stop - off
            self.pos = self.size = pos
            self.last_event_ts, self.last_event_type = ts, type_code
            if found:
                self.index += indexer.counted(found)
            elif vouched is not None and pos == vouched.start + vouched.length:  # its last event walked too
                entry = indexer.reached(pos)
                assert entry is not None  # pos is where its length ends
                self.index.append(entry)
        return stop

    def event(self, data: bytes) -> None:
        """One whole event, exactly as it sits in the file at the current position (not hashed)."""
        pos = self.pos
        if len(data) < 19:
            raise BinlogError(self.name, pos, f"truncated event header: {len(data)} bytes")
        ts, type_code, server_id, size, log_pos, flags = _HEADER.unpack_from(data, 0)
        if size != len(data):
            raise BinlogError(self.name, pos, f"event_size {size} but {len(data)} bytes received")
        if self.fde is None:
            if type_code != c.FORMAT_DESCRIPTION_EVENT:
                raise BinlogError(self.name, pos, f"no FORMAT_DESCRIPTION event at offset 4 (type {type_code})")
            try:
                self.fde = parse_fde_body(memoryview(data)[19:])
            except _DECODE_ERRORS as e:
                raise BinlogError(self.name, pos, f"corrupt FORMAT_DESCRIPTION event: {e}") from None
            self.server_id = server_id
            # GTIDs with transaction_length vouch for where their transactions end: the events
            # inside are checked (CRC, positions) but not walked through the boundary parser
            self._indexer = Indexer(self.name.rsplit("/", 1)[-1], self.fde, trust_lengths=True)
        fde = self.fde
        body_end = size
        if fde.has_checksum:
            body_end -= 4
            if not crc_ok(data):
                raise BinlogError(self.name, pos, f"CRC32 mismatch in {c.event_name(type_code)} event")
        if log_pos and log_pos != pos + size and not flags & c.LOG_EVENT_ARTIFICIAL_F:
            raise BinlogError(self.name, pos, f"{c.event_name(type_code)} event ends at {pos + size} "
                                              f"but its header says {log_pos}: events missing or out of order")
        checked["reference"] += size
        self.pos = self.size = pos + size
        self.last_event_type = type_code
        if self.first_event_ts is None:
            self.first_event_ts = ts
        self.last_event_ts = ts
        frame = Frame(pos, type_code, ts, server_id, size, log_pos, flags, data, fde.header_len, body_end)
        assert self._indexer is not None  # made with the FORMAT_DESCRIPTION above
        self._index(self._indexer, frame)

    def _index(self, indexer: Indexer, frame: Frame) -> None:
        t = frame.type
        try:  # the GTID sets before the file: what the archive's gap check compares, so never guessed
            if t == c.PREVIOUS_GTIDS_LOG_EVENT:
                self.previous_gtids = str(decode_previous_gtids(frame.body))
            elif t == c.GTID_LIST_EVENT:
                self.previous_gtids = ",".join(decode_gtid_list(frame.body))
        except _DECODE_ERRORS as e:
            raise BinlogError(self.name, frame.pos, f"cannot decode {c.event_name(t)} event: {e}") from None
        self.index += indexer.feed(frame)

    def finish(self) -> None:
        """At the end of the file: a transaction still open is indexed as incomplete."""
        if self._indexer is not None:
            self.index += self._indexer.finish(self.size)

    @property
    def gtids(self) -> list[str]:
        return self._indexer.gtids if self._indexer else []

    def manifest(self, **extra) -> dict:
        fde = self.fde
        commit = [e.commit_ts for e in self.index]
        return {
            "file": self.name.rsplit("/", 1)[-1],
            "size": self.size,
            "sha256": self.sha.hexdigest(),
            "server_id": self.server_id,
            "server_version": fde.server_version if fde else None,
            "flavor": fde.flavor if fde else None,
            "checksum_alg": "CRC32" if fde and fde.has_checksum else "NONE",
            "format_description": fde.to_dict() if fde else None,
            "previous_gtids": self.previous_gtids,
            "gtids": _gtid_set(self.gtids),
            "first_event_ts": ts_from_seconds(self.first_event_ts) if self.first_event_ts else None,
            "last_event_ts": ts_from_seconds(self.last_event_ts) if self.last_event_ts else None,
            "min_commit_ts": min(commit) if commit else None,
            "max_commit_ts": max(commit) if commit else None,
            "transaction_count": len(self.index),
            "transactions": [Indexed(e.start, e.length, e.txn_id, e.commit_ts).stored() for e in self.index],
            "incomplete": [e.start for e in self.index if not e.complete],
            **extra,
        }


def _gtid_set(gtids: list[str]) -> str:
    """MySQL: a GTID set as MySQL prints it; MariaDB: the last `domain-server-seq` per domain and server."""
    mysql: dict[str, list[int]] = {}  # "uuid" or "uuid:tag" -> its numbers
    maria: dict[tuple[str, str], int] = {}
    for g in gtids:  # one pass of string splits: a file can hold a million transactions
        head, colon, num = g.rpartition(":")
        if colon:
            mysql.setdefault(head, []).append(int(num))
        else:
            d, s, num = g.split("-")
            maria[(d, s)] = max(maria.get((d, s), 0), int(num))
    intervals: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for head, nums in mysql.items():
        sid, _, tag = head.partition(":")
        nums.sort()
        ivs = intervals.setdefault((sid, tag), [])
        for n in nums:
            if ivs and ivs[-1][1] == n:
                ivs[-1] = (ivs[-1][0], n + 1)
            else:
                ivs.append((n, n + 1))
    text = str(GtidSet(intervals)) if intervals else ""
    return ",".join(filter(None, [text] + [f"{d}-{s}-{n}" for (d, s), n in sorted(maria.items())]))
