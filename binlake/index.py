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


def index_transactions(reader: BinlogReader, binlog_file: str, *, jump: bool = True,
                       verify: bool = True) -> Iterator[IndexEntry]:
    """Yield one entry per transaction; stops quietly at a truncated tail (entry incomplete)."""
    parser = BoundaryParser()
    open_start = None
    open_gtid: ev_codec.GtidInfo | None = None
    open_sid = 0
    pos = reader.first_event_pos
    end = reader.end
    frames = reader.frames(pos, verify=verify)
    while True:
        try:
            frame = next(frames)
        except StopIteration:
            break
        except BinlogError:
            break
        t = frame.type
        if jump and open_start is None and t in c.GTID_EVENTS:
            g = (ev_codec.decode_tagged_gtid(frame.body) if t == c.GTID_TAGGED_LOG_EVENT
                 else ev_codec.decode_mysql_gtid(t, frame.body))
            n = g.transaction_length
            if n and g.immediate_commit_ts and frame.pos + n <= end:
                txn_id = g.gtid or derived_txn_id(frame.server_id, binlog_file, frame.pos)
                yield IndexEntry(frame.pos, n, txn_id, g.gtid, ts_from_micros(g.immediate_commit_ts))
                frames = reader.frames(frame.pos + n, verify=verify)
                continue
        if t == c.TRANSACTION_PAYLOAD_EVENT and open_start is not None:
            # A payload holds the whole rest of its transaction, BEGIN to XID.
            yield _entry(binlog_file, open_start, frame.end - open_start, open_gtid, open_sid,
                         frame.timestamp, True)
            open_start = None
            parser.reset()
            continue
        e = describe(parser, frame, -1, reader.fde)
        b = e.boundary
        if b is Boundary.IGNORE:
            continue
        if not parser.feed(b, e.opener):
            if open_start is not None:
                yield _entry(binlog_file, open_start, frame.pos - open_start, open_gtid, open_sid,
                             frame.timestamp, False)
                open_start = None
            parser.reset()
            if not parser.feed(b, e.opener):
                continue
        if b is Boundary.START:
            open_start, open_gtid, open_sid = frame.pos, e.gtid, frame.server_id
        elif b is Boundary.SELF_CONTAINED:
            yield _entry(binlog_file, frame.pos, frame.size, None, frame.server_id,
                         frame.timestamp, True)
        elif b is Boundary.END and open_start is not None:
            yield _entry(binlog_file, open_start, frame.end - open_start, open_gtid, open_sid,
                         frame.timestamp, True)
            open_start = None
    if open_start is not None:
        yield _entry(binlog_file, open_start, end - open_start, open_gtid, open_sid, 0, False)


def _entry(binlog_file, start, length, g, server_id, end_ts, complete) -> IndexEntry:
    gtid = g.gtid if g else None
    ts = ts_from_micros(g.immediate_commit_ts) if g and g.immediate_commit_ts else ts_from_seconds(end_ts)
    return IndexEntry(start, length, gtid or derived_txn_id(server_id, binlog_file, start), gtid,
                      ts, complete)
