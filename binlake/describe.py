"""What boundaries need of one event: its few decoded fields and its boundary type.

Kept apart from binlake.assemble so that the archive's transaction index (binlake.index) can
type events without importing the row decoder and mysql-replication it never uses.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from binlake.binlog import constants as c
from binlake.binlog import events as ev_codec
from binlake.binlog.framing import Frame
from binlake.boundary import Boundary, BoundaryParser, Kind, Opener, event_kind, query_role


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


def describe(parser: BoundaryParser, frame: Frame, inner: int, fde, next_type: int | None = None) -> Event:
    """Decode what boundaries need of an event and type it in the parser's context. `next_type`:
    the type of the event right after it, where known (an XID after a statement ends its group)."""
    e = Event(frame, inner)
    t = frame.type
    stmt_end = False
    try:
        match event_kind(t):
            case Kind.GTID:
                e.gtid = (ev_codec.decode_tagged_gtid(frame.body) if t == c.GTID_TAGGED_LOG_EVENT
                          else ev_codec.decode_mysql_gtid(t, frame.body))
                e.opener = Opener.GTID
            case Kind.MARIA_GTID:
                e.gtid = ev_codec.decode_maria_gtid(frame.body, frame.server_id)
                alone = e.gtid.flags & (c.FL_STANDALONE | c.FL_COMPLETED_XA)
                e.opener = Opener.GTID if alone else Opener.MARIA_GTID
            case Kind.QUERY:
                phl = fde.post_header_len(t) or fde.post_header_len(c.QUERY_EVENT)
                ev_codec.check_query(frame.body, phl)
                e.query = ev_codec.decode_query(frame.body, phl, t == c.QUERY_COMPRESSED_EVENT)
                e.role = query_role(e.query.text)
                if e.role == "begin":
                    e.opener = Opener.BEGIN
                elif e.role == "statement" and next_type == c.XID_EVENT:
                    e.opener = Opener.AUTOCOMMIT
            case Kind.STATEMENT if next_type == c.XID_EVENT:
                e.opener = Opener.AUTOCOMMIT
            case Kind.END if t == c.XID_EVENT:
                e.xid = ev_codec.decode_xid(frame.body)
            case Kind.END:
                e.xa = ev_codec.decode_xa_prepare(frame.body)
            case Kind.INCIDENT:
                e.incident = ev_codec.decode_incident(frame.body, fde.post_header_len(t) or 2)
            case Kind.PRE_STATEMENT:
                e.opener = Opener.PRE_STATEMENT
            case Kind.TABLE_MAP:
                e.opener = Opener.ROWS
            case Kind.ROWS if parser.opener is Opener.ROWS:
                stmt_end = stmt_ends(frame, fde)
    except (ValueError, struct.error, IndexError, UnicodeDecodeError) as exc:
        e.error = f"cannot decode {c.event_name(t)} event: {exc}"
    e.boundary = parser.classify(t, query_role=e.role, stmt_end=stmt_end, xid_next=e.opener is Opener.AUTOCOMMIT)
    return e


def stmt_ends(frame: Frame, fde) -> bool:
    """Whether a rows event is its statement's last (STMT_END_F, in the flags after the table id:
    6 bytes, 4 where the post-header is 6)."""
    at = 4 if fde.post_header_len(frame.type) == 6 else 6
    return bool(struct.unpack_from("<H", frame.body, at)[0] & c.STMT_END_F)
