"""Transaction boundaries as MySQL's WL#4162 defines them.

Every event gets a boundary type — IGNORE, SELF_CONTAINED, START, INSIDE, END — from
its event type and, for QUERY events, its text. Real binlogs carry no markers ("Not
Defined"), so, as WL#4162 note *1 says, the type is inferred "based on the same
assumptions the master does for marking": a GTID turns the following BEGIN or
pre-statement event into INSIDE and the following self-contained statement into END
(binlog.cc M1a/M1b); an INTVAR/RAND/USER_VAR with no open transaction START s one
that its statement ENDs (M2). MySQL 5.0, which WL#4162 never met, wrote BEGIN only for
explicit transactions: an autocommit statement on a transactional table is logged
`[INTVAR…] statement XID`, so a statement outside BEGIN that an XID follows right
away STARTs (or is INSIDE) a transaction the XID ENDs. The parser then walks the
transition table below, kept here as data; a transition marked Err is reported as
"Unable to change boundary parser from X to Y" and the parser resets.
"""

from __future__ import annotations

import enum
import re

from binlake.binlog import constants as c


class Boundary(enum.IntEnum):
    NOT_DEFINED = 0
    IGNORE = 1
    SELF_CONTAINED = 2
    START = 3
    INSIDE = 4
    END = 5

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    Boundary.NOT_DEFINED: "Not Defined",
    Boundary.IGNORE: "Ignore Boundary",
    Boundary.SELF_CONTAINED: "Self Contained",
    Boundary.START: "Start Transaction",
    Boundary.INSIDE: "Inside Transaction",
    Boundary.END: "End Transaction",
}

_N, _S, _ST, _I, _E = (Boundary.NOT_DEFINED, Boundary.SELF_CONTAINED, Boundary.START,
                       Boundary.INSIDE, Boundary.END)

# WL#4162 transition table: TRANSITIONS[to][from] is True where the move is allowed. Not Defined
# is binlake's row: an event whose boundary cannot be known (a QUERY that cannot be read) follows nothing.
TRANSITIONS: dict[Boundary, dict[Boundary, bool]] = {
    _N:  {_N: False, _S: False, _ST: False, _I: False, _E: False},
    _S:  {_N: True,  _S: True,  _ST: False, _I: False, _E: True},
    _ST: {_N: True,  _S: True,  _ST: False, _I: False, _E: True},
    _I:  {_N: False, _S: False, _ST: True,  _I: True,  _E: False},
    _E:  {_N: False, _S: False, _ST: True,  _I: True,  _E: False},
}


class Opener(enum.Enum):
    """What opened the current transaction; decides how the next statement is typed."""

    NONE = "none"
    GTID = "gtid"            # a GTID: the next statement (or BEGIN) is part of it
    PRE_STATEMENT = "pre"    # INTVAR/RAND/USER_VAR/LOAD blocks: the next statement ends it
    BEGIN = "begin"          # BEGIN / XA START
    MARIA_GTID = "maria"     # a MariaDB GTID without FL_STANDALONE: it is the BEGIN
    ROWS = "rows"            # a TABLE_MAP with no BEGIN (MySQL 5.1 NDB / pre-GA rows):
                             # the statement's last rows event (STMT_END_F) ends it
    AUTOCOMMIT = "autocommit"  # a statement with no BEGIN that its XID follows (MySQL 5.0)

    # Members are singletons compared by identity: hashed as such, in C (Enum's own hash is a
    # Python call, and every event's classification looks one up).
    __hash__ = object.__hash__


# Query texts that move boundaries (MySQL's Query_log_event::starts_group/ends_group).
_BEGIN_RE = re.compile(r"\s*(BEGIN\b|XA\s+START\b)", re.I)
_END_RE = re.compile(r"\s*(COMMIT\b|ROLLBACK\b(?!\s+TO\b)|XA\s+PREPARE\b)", re.I)
_XA_COMPLETE_RE = re.compile(r"\s*XA\s+(COMMIT|ROLLBACK)\b", re.I)

class Kind(enum.Enum):
    """What an event type is to the boundary parser: MySQL's one switch, as data (EVENT_KINDS)."""

    IGNORED = "ignored"              # never moves the parser (headers, heartbeats, containers)
    GTID = "gtid"                    # starts a transaction (MySQL GTID, ANONYMOUS_GTID, GTID_TAGGED)
    MARIA_GTID = "maria_gtid"        # starts one; without FL_STANDALONE it is also the BEGIN
    QUERY = "query"                  # typed by its text: BEGIN, COMMIT, XA …, or a statement
    STATEMENT = "statement"          # a statement that is not a QUERY (LOAD DATA)
    INCIDENT = "incident"            # events lost at the source: self-contained, and never a transaction
    PRE_STATEMENT = "pre_statement"  # INTVAR, RAND, USER_VAR, LOAD DATA blocks: before their statement
    END = "end"                      # XID, XA_PREPARE
    TABLE_MAP = "table_map"          # inside; with no transaction open, starts one (rows without BEGIN)
    ROWS = "rows"                    # inside; the statement's last one ends a transaction a TABLE_MAP began
    INSIDE = "inside"                # ROWS_QUERY, ANNOTATE_ROWS
    OPAQUE = "opaque"                # a known type with no place in a transaction: self-contained

    __hash__ = object.__hash__  # as Opener's


_K = Kind
# Every event type binlake knows (constants.EVENT_NAMES), and what it is; an unknown type is IGNORED.
EVENT_KINDS: dict[int, Kind] = {
    c.UNKNOWN_EVENT: _K.OPAQUE,
    c.START_EVENT_V3: _K.IGNORED, c.STOP_EVENT: _K.IGNORED, c.ROTATE_EVENT: _K.IGNORED,
    c.FORMAT_DESCRIPTION_EVENT: _K.IGNORED, c.SLAVE_EVENT: _K.IGNORED, c.HEARTBEAT_LOG_EVENT: _K.IGNORED,
    c.HEARTBEAT_LOG_EVENT_V2: _K.IGNORED, c.IGNORABLE_LOG_EVENT: _K.IGNORED,
    c.PREVIOUS_GTIDS_LOG_EVENT: _K.IGNORED, c.TRANSACTION_CONTEXT_EVENT: _K.IGNORED,
    c.VIEW_CHANGE_EVENT: _K.IGNORED, c.TRANSACTION_PAYLOAD_EVENT: _K.IGNORED,  # its inner events are typed
    c.BINLOG_CHECKPOINT_EVENT: _K.IGNORED, c.GTID_LIST_EVENT: _K.IGNORED, c.START_ENCRYPTION_EVENT: _K.IGNORED,
    c.GTID_LOG_EVENT: _K.GTID, c.ANONYMOUS_GTID_LOG_EVENT: _K.GTID, c.GTID_TAGGED_LOG_EVENT: _K.GTID,
    c.MARIA_GTID_EVENT: _K.MARIA_GTID,
    c.QUERY_EVENT: _K.QUERY, c.QUERY_COMPRESSED_EVENT: _K.QUERY,
    **{t: _K.STATEMENT for t in c.LOAD_DATA_EVENTS}, c.INCIDENT_EVENT: _K.INCIDENT,
    c.INTVAR_EVENT: _K.PRE_STATEMENT, c.RAND_EVENT: _K.PRE_STATEMENT, c.USER_VAR_EVENT: _K.PRE_STATEMENT,
    c.CREATE_FILE_EVENT: _K.PRE_STATEMENT, c.APPEND_BLOCK_EVENT: _K.PRE_STATEMENT,
    c.BEGIN_LOAD_QUERY_EVENT: _K.PRE_STATEMENT,
    c.XID_EVENT: _K.END, c.XA_PREPARE_LOG_EVENT: _K.END,
    c.TABLE_MAP_EVENT: _K.TABLE_MAP,
    **{t: _K.ROWS for t in c.ROWS_EVENTS},
    c.ROWS_QUERY_LOG_EVENT: _K.INSIDE, c.ANNOTATE_ROWS_EVENT: _K.INSIDE,
}


# One byte per event type: 1 for those an ordinary transaction holds between its BEGIN and its XID
# (table maps, rows, their statements), the types the compiled walk skims (BinlogReader.skim).
ORDINARY_INSIDE = bytes(EVENT_KINDS.get(t) in (Kind.TABLE_MAP, Kind.ROWS, Kind.INSIDE) for t in range(256))


def event_kind(type_code: int) -> Kind:
    return EVENT_KINDS.get(type_code, Kind.IGNORED)


def query_role(text: str) -> str:
    """'begin', 'end', 'xa_complete' (XA COMMIT/ROLLBACK of a prepared one) or 'statement'."""
    if _BEGIN_RE.match(text):
        return "begin"
    if _XA_COMPLETE_RE.match(text):
        return "xa_complete"
    if _END_RE.match(text):
        return "end"
    return "statement"


# classify() is a function of the event's few facts and the parser's state and opener, all of
# them from small sets: each combination met is worked out once (a scan types every event twice).
_CLASSIFIED: dict[tuple[int, Boundary, Opener, str | None, bool, bool], Boundary] = {}


class BoundaryParser:
    """WL#4162's parser: feed event classes, get each event's boundary type."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.state = Boundary.NOT_DEFINED
        self.opener = Opener.NONE

    def classify(self, type_code: int, *, query_role: str | None = None, stmt_end: bool = False,
                 xid_next: bool = False) -> Boundary:
        """The boundary type of an event in the parser's current context (`query_role` of a QUERY:
        binlake.boundaries.parser.query_role of its text, None when it cannot be read; `xid_next`: the
        next event is an XID)."""
        key = (type_code, self.state, self.opener, query_role, stmt_end, xid_next)
        b = _CLASSIFIED.get(key)
        if b is None:
            b = _CLASSIFIED[key] = self._classify(type_code, query_role, stmt_end, xid_next)
        return b

    def _classify(self, type_code: int, query_role: str | None, stmt_end: bool, xid_next: bool) -> Boundary:
        in_trx = self.state in (Boundary.START, Boundary.INSIDE)
        match event_kind(type_code):
            case Kind.IGNORED:
                return Boundary.IGNORE
            case Kind.GTID | Kind.MARIA_GTID:
                return Boundary.START
            case Kind.QUERY:
                if query_role is None:  # its text cannot be read: nor can its boundary
                    return Boundary.NOT_DEFINED
                if query_role == "begin":
                    after_gtid = self.opener in (Opener.GTID, Opener.MARIA_GTID)
                    return Boundary.INSIDE if in_trx and after_gtid else Boundary.START
                if query_role == "end":
                    return Boundary.END
                if query_role == "xa_complete":
                    return Boundary.END if in_trx else Boundary.SELF_CONTAINED
                return self._statement(in_trx, xid_next)
            case Kind.STATEMENT:
                return self._statement(in_trx, xid_next)
            case Kind.PRE_STATEMENT:
                return Boundary.INSIDE if in_trx else Boundary.START
            case Kind.END:
                return Boundary.END
            case Kind.TABLE_MAP:
                return Boundary.INSIDE if in_trx else Boundary.START  # opener ROWS
            case Kind.ROWS:
                return Boundary.END if stmt_end and self.opener is Opener.ROWS else Boundary.INSIDE
            case Kind.INSIDE:
                return Boundary.INSIDE
        return Boundary.SELF_CONTAINED  # Kind.OPAQUE; Kind.INCIDENT, as WL#4162 types Incident_log_event

    def _statement(self, in_trx: bool, xid_next: bool) -> Boundary:
        if in_trx and self.opener in (Opener.BEGIN, Opener.MARIA_GTID):
            return Boundary.INSIDE
        if xid_next:  # MySQL 5.0 autocommit: its XID ends the transaction
            return Boundary.INSIDE if in_trx else Boundary.START
        return Boundary.END if in_trx else Boundary.SELF_CONTAINED

    def feed(self, boundary: Boundary, opener: Opener | None = None) -> bool:
        """Move to `boundary`; False (state unchanged) when WL#4162 forbids the move."""
        if boundary is Boundary.IGNORE:
            return True
        if not TRANSITIONS[boundary][self.state]:
            return False
        self.state = boundary
        if boundary is Boundary.START:
            self.opener = opener or Opener.GTID
        elif boundary is Boundary.INSIDE and opener is Opener.BEGIN:
            self.opener = Opener.BEGIN  # BEGIN after a GTID
        elif boundary in (Boundary.END, Boundary.SELF_CONTAINED):
            self.opener = Opener.NONE
        return True

    def error_text(self, boundary: Boundary) -> str:
        return f"Unable to change boundary parser from {self.state.label} to {boundary.label}"
