"""Transaction boundaries as MySQL's WL#4162 defines them.

Every event gets a boundary type — IGNORE, SELF_CONTAINED, START, INSIDE, END — from
its event type and, for QUERY events, its text. Real binlogs carry no markers ("Not
Defined"), so, as WL#4162 note *1 says, the type is inferred "based on the same
assumptions the master does for marking": a GTID turns the following BEGIN or
pre-statement event into INSIDE and the following self-contained statement into END
(binlog.cc M1a/M1b); an INTVAR/RAND/USER_VAR with no open transaction START s one
that its statement ENDs (M2). The parser then walks the transition table below,
kept here as data; a transition marked Err is reported as
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

# WL#4162 transition table: TRANSITIONS[to][from] is True where the move is allowed.
TRANSITIONS: dict[Boundary, dict[Boundary, bool]] = {
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


# Query texts that move boundaries (MySQL's Query_log_event::starts_group/ends_group).
_BEGIN_RE = re.compile(r"\s*(BEGIN\b|XA\s+START\b)", re.I)
_END_RE = re.compile(r"\s*(COMMIT\b|ROLLBACK\b(?!\s+TO\b)|XA\s+PREPARE\b)", re.I)
_XA_COMPLETE_RE = re.compile(r"\s*XA\s+(COMMIT|ROLLBACK)\b", re.I)

IGNORED_EVENTS = frozenset({
    c.FORMAT_DESCRIPTION_EVENT, c.ROTATE_EVENT, c.PREVIOUS_GTIDS_LOG_EVENT, c.START_EVENT_V3,
    c.STOP_EVENT, c.HEARTBEAT_LOG_EVENT, c.HEARTBEAT_LOG_EVENT_V2, c.IGNORABLE_LOG_EVENT,
    c.TRANSACTION_PAYLOAD_EVENT, c.BINLOG_CHECKPOINT_EVENT, c.GTID_LIST_EVENT,
    c.START_ENCRYPTION_EVENT, c.SLAVE_EVENT, c.TRANSACTION_CONTEXT_EVENT, c.VIEW_CHANGE_EVENT,
})
INSIDE_EVENTS = c.ROWS_EVENTS | {c.TABLE_MAP_EVENT, c.ROWS_QUERY_LOG_EVENT, c.ANNOTATE_ROWS_EVENT}
PRE_STATEMENT_EVENTS = frozenset({c.INTVAR_EVENT, c.RAND_EVENT, c.USER_VAR_EVENT,
                                  c.APPEND_BLOCK_EVENT, c.BEGIN_LOAD_QUERY_EVENT,
                                  c.CREATE_FILE_EVENT})
STATEMENT_EVENTS = frozenset({c.EXECUTE_LOAD_QUERY_EVENT, c.EXEC_LOAD_EVENT, c.LOAD_EVENT,
                              c.NEW_LOAD_EVENT, c.DELETE_FILE_EVENT, c.INCIDENT_EVENT})
END_EVENTS = frozenset({c.XID_EVENT, c.XA_PREPARE_LOG_EVENT})


def query_role(text: str) -> str:
    """'begin', 'end', 'xa_complete' (XA COMMIT/ROLLBACK of a prepared one) or 'statement'."""
    if _BEGIN_RE.match(text):
        return "begin"
    if _XA_COMPLETE_RE.match(text):
        return "xa_complete"
    if _END_RE.match(text):
        return "end"
    return "statement"


class BoundaryParser:
    """WL#4162's parser: feed event classes, get each event's boundary type."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.state = Boundary.NOT_DEFINED
        self.opener = Opener.NONE

    def classify(self, type_code: int, *, query_role: str | None = None,
                 known: bool = True, stmt_end: bool = False) -> Boundary:
        """The boundary type of an event in the parser's current context."""
        in_trx = self.state in (Boundary.START, Boundary.INSIDE)
        if not known or type_code in IGNORED_EVENTS:
            return Boundary.IGNORE
        if type_code in c.GTID_EVENTS or type_code == c.MARIA_GTID_EVENT:
            return Boundary.START
        if type_code in (c.QUERY_EVENT, c.QUERY_COMPRESSED_EVENT):
            role = query_role or "statement"
            if role == "begin":
                after_gtid = self.opener in (Opener.GTID, Opener.MARIA_GTID)
                return Boundary.INSIDE if in_trx and after_gtid else Boundary.START
            if role == "end":
                return Boundary.END
            if role == "xa_complete":
                return Boundary.END if in_trx else Boundary.SELF_CONTAINED
            return self._statement(in_trx)
        if type_code in STATEMENT_EVENTS:
            return self._statement(in_trx)
        if type_code in PRE_STATEMENT_EVENTS:
            return Boundary.INSIDE if in_trx else Boundary.START
        if type_code in END_EVENTS:
            return Boundary.END
        if type_code == c.TABLE_MAP_EVENT and not in_trx:
            return Boundary.START  # opener ROWS
        if type_code in c.ROWS_EVENTS and stmt_end and self.opener is Opener.ROWS:
            return Boundary.END
        if type_code in INSIDE_EVENTS:
            return Boundary.INSIDE
        return Boundary.SELF_CONTAINED

    def _statement(self, in_trx: bool) -> Boundary:
        if not in_trx:
            return Boundary.SELF_CONTAINED
        inside = self.opener in (Opener.BEGIN, Opener.MARIA_GTID)
        return Boundary.INSIDE if inside else Boundary.END

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
