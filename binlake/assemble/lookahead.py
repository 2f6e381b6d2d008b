"""A transaction's commit facts, learnt before its rows are read: the seeds' replicator "rewinds".

When a transaction starts, a light pass walks its events (headers and small bodies only: GTID,
QUERY text, XID, XA_PREPARE) to its end to learn its commit timestamp, xid and outcome, so that
the main pass (binlake.assemble.walk) streams its rows out already stamped and never holds the
transaction whole.
"""

from __future__ import annotations

from binlake.assemble.stream import events, next_type, payload_pos
from binlake.assemble.transactions import Facts
from binlake.binlog.framing import BinlogReader
from binlake.boundaries.describe import Event, Memo, describe
from binlake.boundaries.parser import Boundary, BoundaryParser
from binlake.errors import BinlogError


def lookahead(reader: BinlogReader, start: Event, memo: Memo) -> Facts:
    """Walk the transaction that `start` opens without decoding rows, to its end. `memo`: the
    walk's, which its main pass reads the events this pass decoded from."""
    fde = reader.fde
    p = BoundaryParser()
    p.feed(Boundary.START, start.opener)
    facts = Facts(last_ts=start.frame.timestamp)
    key = (start.frame.pos, start.inner)
    outer = start.frame.pos
    if start.inner >= 0:  # a START inside a payload: begin at the payload itself
        outer = payload_pos(reader, start.frame)
    seen_start = False
    try:
        for frame, inner in events(reader, outer, None):
            if not seen_start:
                seen_start = (frame.pos, inner) == key
                continue
            if not frame.crc_ok:
                facts.broken = True
            e = describe(p, frame, inner, fde, next_type=next_type(reader, frame, inner), memo=memo)
            if e.error:
                facts.broken = True
            if e.boundary is Boundary.IGNORE:
                continue
            facts.last_ts = frame.timestamp
            if not p.feed(e.boundary, e.opener):
                facts.end_pos = frame.pos if inner < 0 else payload_pos(reader, frame)
                return facts
            if e.boundary is Boundary.END:
                facts.complete = True
                facts.end = e
                facts.end_pos = frame.end if inner < 0 else frame.pos
                return facts
    except BinlogError as exc:
        facts.end_pos = exc.offset
        return facts
    facts.end_pos = reader.end
    return facts
