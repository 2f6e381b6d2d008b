"""The transaction index of a file without decoding rows: where each transaction lies.

MySQL 8.0.2+ GTID events carry `transaction_length`, so the walk jumps from GTID to
GTID (the seeds' blog post); other files are walked header by header through the
boundary parser, decoding only what boundaries need. This is what an archive
manifest records and what a split planner cuts at.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from binlake.assemble import describe
from binlake.binlog import constants as c
from binlake.binlog import events as ev_codec
from binlake.binlog.framing import BinlogReader
from binlake.boundary import Boundary, BoundaryParser
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


class Indexer:
    """The boundary walk, one event at a time: `feed` returns the entry a frame completes.

    Shared by the random-access index below and the archive's streaming copy. An invalid
    transition closes the open transaction as incomplete and the walk goes on.
    """

    def __init__(self, binlog_file: str, fde) -> None:
        self.file = binlog_file
        self.fde = fde
        self.parser = BoundaryParser()
        self.open: tuple | None = None  # (start, GtidInfo | None, server_id)
        self.gtids: list[str] = []
        self.last_ts = 0  # of the open transaction's last typed event: an unfinished one's commit time

    def feed(self, frame) -> IndexEntry | None:
        if frame.type == c.TRANSACTION_PAYLOAD_EVENT and self.open is not None:
            # A payload holds the whole rest of its transaction, BEGIN to XID.
            self.parser.reset()
            return self._close(frame.end, frame.timestamp, True)
        e = describe(self.parser, frame, -1, self.fde)
        b = e.boundary
        if b is Boundary.IGNORE:
            return None
        self.last_ts = frame.timestamp
        out = None
        if not self.parser.feed(b, e.opener):
            if self.open is not None:
                out = self._close(frame.pos, frame.timestamp, False)
            self.parser.reset()
            if not self.parser.feed(b, e.opener):
                return out
        if b is Boundary.START:
            self.open = (frame.pos, e.gtid, frame.server_id)
            if e.gtid and e.gtid.gtid:
                self.gtids.append(e.gtid.gtid)
        elif b is Boundary.SELF_CONTAINED:
            self.open = (frame.pos, None, frame.server_id)
            return self._close(frame.end, frame.timestamp, True)
        elif b is Boundary.END and self.open is not None:
            return self._close(frame.end, frame.timestamp, True)
        return out

    def finish(self, end: int) -> IndexEntry | None:
        """The transaction still open where the file ends, as incomplete."""
        return self._close(end, self.last_ts, False) if self.open is not None else None

    def _close(self, end: int, end_ts: int, complete: bool) -> IndexEntry:
        start, g, server_id = self.open
        self.open = None
        gtid = g.gtid if g else None
        ts = ts_from_micros(g.immediate_commit_ts) if g and g.immediate_commit_ts else ts_from_seconds(end_ts)
        return IndexEntry(start, end - start, gtid or derived_txn_id(server_id, self.file, start), gtid, ts,
                          complete)


def index_transactions(reader: BinlogReader, binlog_file: str, *, jump: bool = True,
                       verify: bool = True) -> Iterator[IndexEntry]:
    """Yield one entry per transaction; stops quietly at a truncated tail (entry incomplete)."""
    indexer = Indexer(binlog_file, reader.fde)
    end = reader.end
    frames = reader.frames(reader.first_event_pos, verify=verify)
    while True:
        try:
            frame = next(frames)
        except (StopIteration, BinlogError):
            break
        t = frame.type
        if jump and indexer.open is None and t in c.GTID_EVENTS:
            g = (ev_codec.decode_tagged_gtid(frame.body) if t == c.GTID_TAGGED_LOG_EVENT
                 else ev_codec.decode_mysql_gtid(t, frame.body))
            n = g.transaction_length
            if n and g.immediate_commit_ts and frame.pos + n <= end:
                txn_id = g.gtid or derived_txn_id(frame.server_id, binlog_file, frame.pos)
                yield IndexEntry(frame.pos, n, txn_id, g.gtid, ts_from_micros(g.immediate_commit_ts))
                frames = reader.frames(frame.pos + n, verify=verify)
                continue
        entry = indexer.feed(frame)
        if entry is not None:
            yield entry
    last = indexer.finish(end)
    if last is not None:
        yield last
