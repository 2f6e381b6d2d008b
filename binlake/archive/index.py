"""The transaction index of a file without decoding rows: where each transaction lies.

MySQL 8.0.2+ GTID events carry `transaction_length`, so the walk jumps from GTID to
GTID (the seeds' blog post); other files are walked header by header through the
boundary parser, decoding only what boundaries need. This is what an archive
manifest records and what a split planner cuts at.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType

from binlake.archive import loop
from binlake.binlog import constants as c
from binlake.binlog import events as ev_codec
from binlake.binlog.framing import BinlogReader, Frame
from binlake.boundaries.describe import describe
from binlake.boundaries.parser import Boundary, BoundaryParser, Kind, event_kind
from binlake.errors import BinlogError
from binlake.records import derived_txn_id, ts_from_micros, ts_from_seconds


@dataclass(slots=True)
class IndexEntry:
    start: int
    length: int
    txn_id: str
    gtid: str | None
    commit_ts: str
    complete: bool = True


def vouched_entry(frame, binlog_file: str) -> IndexEntry | None:
    """The entry of the transaction a MySQL 8.0.2+ GTID event starts, from its transaction_length
    and immediate commit timestamp alone; None when the event does not carry them."""
    t = frame.type
    if t not in c.GTID_EVENTS:
        return None
    try:
        g = (ev_codec.decode_tagged_gtid(frame.body) if t == c.GTID_TAGGED_LOG_EVENT
             else ev_codec.decode_mysql_gtid(t, frame.body))
    except (ValueError, struct.error, IndexError, UnicodeDecodeError):
        return None  # not vouched for: the boundary walk decodes it again and records why it cannot
    if not (g.transaction_length and g.immediate_commit_ts):
        return None
    txn_id = g.gtid or derived_txn_id(frame.server_id, binlog_file, frame.pos)
    return IndexEntry(frame.pos, g.transaction_length, txn_id, g.gtid, ts_from_micros(g.immediate_commit_ts))


class Indexer:
    """The boundary walk, one event at a time: `feed` returns the entries a frame completes.

    Shared by the random-access index below and the archive's streaming copy. An invalid
    transition closes the open transaction as incomplete and the walk goes on. With
    `trust_lengths`, a transaction whose GTID gives its length is not walked: its events
    are only counted off to that length (a caller that sees every event, as the archive's
    copy does, skips decoding them). A statement is typed once the next frame comes: an XID
    right after it ends its group (binlake.boundaries.parser, MySQL 5.0 autocommit).
    """

    def __init__(self, binlog_file: str, fde, trust_lengths: bool = False) -> None:
        self.file = binlog_file
        self.fde = fde
        self.trust_lengths = trust_lengths
        self.parser = BoundaryParser()
        self.open: tuple | None = None  # (start, GtidInfo | None, server_id)
        self.vouched: IndexEntry | None = None  # the transaction being counted off to its length
        self.held: Frame | None = None  # a statement's frame, waiting for the type of the next
        self.gtids: list[str] = []
        self.last_ts = 0  # of the open transaction's last typed event: an unfinished one's commit time

    @property
    def idle(self) -> bool:
        """No transaction open and no statement waiting: the next frame starts afresh."""
        return self.open is None and self.held is None

    def feed(self, frame) -> list[IndexEntry]:
        """The entries of the transactions the frame completes (a statement held before it
        included), in order: mostly none."""
        out: list[IndexEntry] = []
        if self.held is not None:
            self._walk(self.held, frame.type, out)
            self.held = None
        if self.vouched is not None:
            v = self.reached(frame.end)
            if v is not None:
                out.append(v)
            return out
        if self.trust_lengths and self.open is None:
            v = vouched_entry(frame, self.file)
            if v is not None:
                self.vouched = v
                if v.gtid:
                    self.gtids.append(v.gtid)
                return out
        if event_kind(frame.type) in (Kind.QUERY, Kind.STATEMENT):
            self.held = frame
        else:
            self._walk(frame, None, out)
        return out

    def _walk(self, frame, next_type: int | None, out: list[IndexEntry]) -> None:
        """Type one frame through the parser; the entry it completes goes to `out`."""
        if frame.type == c.TRANSACTION_PAYLOAD_EVENT and self.open is not None:
            # A payload holds the whole rest of its transaction, BEGIN to XID.
            self.parser.reset()
            out.append(self._close(frame.end, frame.timestamp, True))
            return
        e = describe(self.parser, frame, -1, self.fde, next_type=next_type)
        b = e.boundary
        if b is Boundary.IGNORE:
            return
        self.last_ts = frame.timestamp
        if not self.parser.feed(b, e.opener):
            if self.open is not None:
                out.append(self._close(frame.pos, frame.timestamp, False))
            self.parser.reset()
            if not self.parser.feed(b, e.opener):
                return
        if event_kind(frame.type) is Kind.INCIDENT:
            return  # events lost at the source: no transaction (binlake.assemble reports it)
        if b is Boundary.START:
            self.open = (frame.pos, e.gtid, frame.server_id)
            if e.gtid and e.gtid.gtid:
                self.gtids.append(e.gtid.gtid)
        elif b is Boundary.SELF_CONTAINED:
            self.open = (frame.pos, None, frame.server_id)
            out.append(self._close(frame.end, frame.timestamp, True))
        elif b is Boundary.END and self.open is not None:
            out.append(self._close(frame.end, frame.timestamp, True))

    def counted(self, found: list[tuple[int, int, str | None, str, int]]) -> list[IndexEntry]:
        """The entries of whole transactions the archive's compiled loop counted off by their GTID
        events, given as (start, length, gtid, commit_ts, server_id): what `vouched_entry` and
        `reached` make of the same events."""
        out = [IndexEntry(start, length, gtid or derived_txn_id(server_id, self.file, start), gtid, commit_ts)
               for start, length, gtid, commit_ts, server_id in found]
        self.gtids += [e.gtid for e in out if e.gtid]
        return out

    def reached(self, end: int) -> IndexEntry | None:
        """The vouched transaction, once an event ending at `end` reaches its length (None before)."""
        v = self.vouched
        assert v is not None  # called while a vouched transaction is counted off
        length = end - v.start
        if length < v.length:
            return None
        self.vouched = None
        if length > v.length:  # an event runs past the length its GTID gave: not a whole transaction
            v.length, v.complete = length, False
        return v

    def finish(self, end: int, next_type: int | None = None) -> list[IndexEntry]:
        """Where the file ends: the entry of a statement still held (`next_type`: the type of an
        event cut short after it), then the transaction still open, as incomplete."""
        out: list[IndexEntry] = []
        if self.held is not None:
            self._walk(self.held, next_type, out)
            self.held = None
        v, self.vouched = self.vouched, None
        if v is not None:
            v.length, v.complete = end - v.start, False
            out.append(v)
        elif self.open is not None:
            out.append(self._close(end, self.last_ts, False))
        return out

    def _close(self, end: int, end_ts: int, complete: bool) -> IndexEntry:
        assert self.open is not None
        start, g, server_id = self.open
        self.open = None
        gtid = g.gtid if g else None
        ts = ts_from_micros(g.immediate_commit_ts) if g and g.immediate_commit_ts else ts_from_seconds(end_ts)
        return IndexEntry(start, end - start, gtid or derived_txn_id(server_id, self.file, start), gtid, ts,
                          complete)


def index_transactions(reader: BinlogReader, binlog_file: str, *, jump: bool = True,
                       verify: bool = True) -> Iterator[IndexEntry]:
    """Yield one entry per transaction; stops quietly at a truncated tail (entry incomplete).
    With `jump`, runs of transactions whose GTID events give their lengths are counted off by the
    archive's compiled loop (every event's position checked; its CRC32 not, as a jump leaves it),
    the rest walked here."""
    indexer = Indexer(binlog_file, reader.fde)
    end = reader.end
    fde = reader.fde
    compiled = loop() if jump and fde.header_len == 19 and fde.type_map is None else None
    pos = reader.first_event_pos
    frames: Iterator[Frame] | None = None
    cut = None  # the type of an event cut short at the tail
    while True:
        if compiled is not None and indexer.idle:
            counted, pos = _counted_off(compiled, reader, pos)
            if counted:
                yield from indexer.counted(counted)
                frames = None
        if frames is None:
            frames = reader.frames(pos, verify=verify)
        try:
            frame = next(frames)
        except StopIteration:
            break
        except BinlogError as exc:
            cut = reader.type_at(exc.offset)
            break
        pos = frame.end
        if jump and indexer.idle:
            v = vouched_entry(frame, binlog_file)
            if v is not None and frame.pos + v.length <= end:
                yield v
                pos = frame.pos + v.length
                frames = None
                continue
        yield from indexer.feed(frame)
    yield from indexer.finish(end, cut)


def _counted_off(compiled: ModuleType, reader: BinlogReader, pos: int) -> tuple[list, int]:
    """The whole transactions from `pos` on that the compiled loop counts off by their GTID
    events' lengths and the events' positions (start, length, gtid, commit_ts, server_id), and
    the offset after them."""
    off, stop = pos - reader.base, reader.end - reader.base
    if off < 0 or stop > len(reader.data):
        return [], pos
    # CRC32s unchecked, as a jump leaves the events it passes
    _off, after, _ts, _type, found = compiled.txns(reader.data, off, stop, pos, reader.fde.has_checksum, False)
    if after > pos:
        reader.passed(pos, after)
    return found, after
