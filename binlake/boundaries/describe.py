"""What boundaries need of one event: its few decoded fields and its boundary type.

Kept apart from the assembler (binlake.assemble) so that the archive's transaction index
(binlake.archive.index) can type events without importing the row decoder and mysql-replication
it never uses.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from binlake.binlog import constants as c
from binlake.binlog import events as ev_codec
from binlake.binlog.framing import Frame
from binlake.boundaries.parser import Boundary, BoundaryParser, Kind, Opener, event_kind, query_role


@dataclass(slots=True)
class Event:
    """A frame with its boundary type and the little that was decoded of its body."""

    frame: Frame
    inner: int  # index inside a TRANSACTION_PAYLOAD, -1 for a real event of the file
    boundary: Boundary = Boundary.IGNORE
    opener: Opener | None = None
    gtid: ev_codec.GtidInfo | None = None
    query: ev_codec.Query | None = None
    role: str | None = None
    xid: int | None = None
    xa: ev_codec.XaPrepare | None = None
    incident: ev_codec.Incident | None = None
    error: str | None = None


def describe(parser: BoundaryParser, frame: Frame, inner: int, fde, *, next_type: int | None = None,
             memo: Memo | None = None) -> Event:
    """Decode what boundaries need of an event and type it in the parser's context. `next_type`:
    the type of the event right after it, where known (an XID after a statement ends its group);
    `memo`: the walk's, where it decoded the event before."""
    e = Event(frame, inner)
    t = frame.type
    kind = event_kind(t)
    stmt_end = False
    try:
        if kind in _DECODED:
            d = memo.get(frame, inner, next_type) if memo is not None else None
            if d is None:
                d = _decode(frame, kind, fde, next_type)
                if memo is not None:
                    memo.put(frame, inner, next_type, d)
            e.gtid, e.query, e.role, e.xid, e.xa, e.incident, e.opener = d
        elif kind is Kind.STATEMENT and next_type == c.XID_EVENT:
            e.opener = Opener.AUTOCOMMIT
        elif kind is Kind.PRE_STATEMENT:
            e.opener = Opener.PRE_STATEMENT
        elif kind is Kind.TABLE_MAP:
            e.opener = Opener.ROWS
        elif kind is Kind.ROWS and parser.opener is Opener.ROWS:
            stmt_end = stmt_ends(frame, fde)
    except (ValueError, struct.error, IndexError, UnicodeDecodeError) as exc:
        e.error = f"cannot decode {c.event_name(t)} event: {exc}"
    e.boundary = parser.classify(t, query_role=e.role, stmt_end=stmt_end, xid_next=e.opener is Opener.AUTOCOMMIT)
    return e


def opening(frame: Frame, fde) -> Event:
    """The GTID event that opens an ordinary transaction (BinlogReader.skim), as describe types it
    there; raises where its body cannot be read (the walk then takes it event by event)."""
    gtid, _query, _role, _xid, _xa, _incident, opener = _decode(frame, event_kind(frame.type), fde, None)
    return Event(frame, -1, Boundary.START, opener, gtid=gtid)


_DECODED = frozenset({Kind.GTID, Kind.MARIA_GTID, Kind.QUERY, Kind.END, Kind.INCIDENT})
Decoded = tuple[ev_codec.GtidInfo | None, ev_codec.Query | None, str | None, int | None,
                ev_codec.XaPrepare | None, ev_codec.Incident | None, Opener | None]


class Memo:
    """The events a walk decoded last, by place: a transaction's look-ahead decodes its GTID, QUERY
    and XID events, and the main pass right after it takes them from here instead of decoding them
    again. Owned by one walk over one reader, whose bytes do not change under it. (Events inside a
    TRANSACTION_PAYLOAD are decoded again: each pass inflates the payload anew.)"""

    __slots__ = ("decoded", "most")

    def __init__(self, most: int = 256) -> None:
        self.decoded: dict[tuple[int, int | None], Decoded] = {}
        self.most = most

    def get(self, frame: Frame, inner: int, next_type: int | None) -> Decoded | None:
        return self.decoded.get((frame.pos, next_type)) if inner < 0 else None

    def put(self, frame: Frame, inner: int, next_type: int | None, d: Decoded) -> None:
        if inner < 0:
            if len(self.decoded) >= self.most:
                self.decoded.clear()
            self.decoded[frame.pos, next_type] = d


def _decode(frame: Frame, kind: Kind, fde, next_type: int | None) -> Decoded:
    """The body of a GTID, QUERY, XID, XA_PREPARE or INCIDENT event, as the Event fields it sets."""
    t = frame.type
    gtid = query = xa = incident = None
    role = xid = opener = None
    match kind:
        case Kind.GTID:
            gtid = (ev_codec.decode_tagged_gtid(frame.body) if t == c.GTID_TAGGED_LOG_EVENT
                    else ev_codec.decode_mysql_gtid(t, frame.body))
            opener = Opener.GTID
        case Kind.MARIA_GTID:
            gtid = ev_codec.decode_maria_gtid(frame.body, frame.server_id)
            alone = gtid.flags & (c.FL_STANDALONE | c.FL_COMPLETED_XA)
            opener = Opener.GTID if alone else Opener.MARIA_GTID
        case Kind.QUERY:
            phl = fde.post_header_len(t) or fde.post_header_len(c.QUERY_EVENT)
            ev_codec.check_query(frame.body, phl)
            query = ev_codec.decode_query(frame.body, phl, t == c.QUERY_COMPRESSED_EVENT)
            role = query_role(query.text)
            if role == "begin":
                opener = Opener.BEGIN
            elif role == "statement" and next_type == c.XID_EVENT:
                opener = Opener.AUTOCOMMIT
        case Kind.END if t == c.XID_EVENT:
            xid = ev_codec.decode_xid(frame.body)
        case Kind.END:
            xa = ev_codec.decode_xa_prepare(frame.body)
        case Kind.INCIDENT:
            incident = ev_codec.decode_incident(frame.body, fde.post_header_len(t) or 2)
    return gtid, query, role, xid, xa, incident, opener


def stmt_ends(frame: Frame, fde) -> bool:
    """Whether a rows event is its statement's last (STMT_END_F, in the flags after the table id:
    6 bytes, 4 where the post-header is 6)."""
    at = 4 if fde.post_header_len(frame.type) == 6 else 6
    return bool(struct.unpack_from("<H", frame.body, at)[0] & c.STMT_END_F)
