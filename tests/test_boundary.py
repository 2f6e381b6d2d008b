"""The WL#4162 boundary parser: its transition table and how event sequences are typed."""

from __future__ import annotations

import pytest

from binlake.binlog import constants as c
from binlake.boundaries.parser import TRANSITIONS, Boundary, BoundaryParser, Opener, query_role

B = Boundary

# WL#4162's table, row by row ("to"), columns Not Defined, Self, Start, Inside, End ("from").
WL4162 = {
    B.SELF_CONTAINED: "Ok Ok Err Err Ok",
    B.START: "Ok Ok Err Err Ok",
    B.INSIDE: "Err Err Ok Ok Err",
    B.END: "Err Err Ok Ok Err",
}
FROM = [B.NOT_DEFINED, B.SELF_CONTAINED, B.START, B.INSIDE, B.END]


def test_transition_table_is_wl4162():
    for to, row in WL4162.items():
        assert [TRANSITIONS[to][f] for f in FROM] == [x == "Ok" for x in row.split()]


@pytest.mark.parametrize("text,role", [
    ("BEGIN", "begin"), ("XA START X'78',X'',1", "begin"), ("COMMIT", "end"),
    ("ROLLBACK", "end"), ("ROLLBACK TO SAVEPOINT s1", "statement"), ("XA END X'78'", "statement"),
    ("XA COMMIT X'78',X'',1", "xa_complete"), ("XA ROLLBACK 'x'", "xa_complete"),
    ("xa prepare 'x'", "end"), ("CREATE TABLE t (a int)", "statement"), ("SAVEPOINT a", "statement"),
])
def test_query_roles(text, role):
    assert query_role(text) == role


def walk(events):
    """Feed (type, role) pairs; return the boundary of each and the errors."""
    p = BoundaryParser()
    out, errors = [], []
    for t, role in events:
        opener = {c.GTID_LOG_EVENT: Opener.GTID, c.INTVAR_EVENT: Opener.PRE_STATEMENT,
                  c.TABLE_MAP_EVENT: Opener.ROWS}.get(t)
        if role == "begin":
            opener = Opener.BEGIN
        b = p.classify(t, query_role=role)
        if not p.feed(b, opener):
            errors.append(p.error_text(b))
            p.reset()
            p.feed(b, opener)
        out.append(b)
    return out, errors


Q = c.QUERY_EVENT


def test_dml_with_gtid():
    seq = [(c.GTID_LOG_EVENT, None), (Q, "begin"), (c.TABLE_MAP_EVENT, None),
           (c.WRITE_ROWS_EVENT, None), (c.XID_EVENT, None)]
    assert walk(seq) == ([B.START, B.INSIDE, B.INSIDE, B.INSIDE, B.END], [])


def test_ddl_with_gtid_and_pre_statement_events():
    seq = [(c.GTID_LOG_EVENT, None), (c.INTVAR_EVENT, None), (Q, "statement")]
    assert walk(seq) == ([B.START, B.INSIDE, B.END], [])
    seq = [(c.INTVAR_EVENT, None), (c.RAND_EVENT, None), (Q, "statement")]
    assert walk(seq) == ([B.START, B.INSIDE, B.END], [])


def test_ddl_without_gtid_is_self_contained():
    assert walk([(Q, "statement"), (Q, "statement")]) == ([B.SELF_CONTAINED] * 2, [])


def test_mysql_5_0_autocommit_statement_ends_at_its_xid():
    # [INTVAR] statement XID, no BEGIN: the XID right after the statement ends its group
    p = BoundaryParser()
    assert p.classify(c.INTVAR_EVENT) is B.START and p.feed(B.START, Opener.PRE_STATEMENT)
    assert p.classify(Q, query_role="statement", xid_next=True) is B.INSIDE and p.feed(B.INSIDE)
    assert p.classify(c.XID_EVENT) is B.END and p.feed(B.END)
    assert p.classify(Q, query_role="statement", xid_next=True) is B.START and p.feed(B.START, Opener.AUTOCOMMIT)
    assert p.classify(c.XID_EVENT) is B.END and p.feed(B.END)
    # a LOAD DATA's last event, likewise; inside BEGIN the XID changes nothing
    assert p.classify(c.EXECUTE_LOAD_QUERY_EVENT, xid_next=True) is B.START
    p.feed(B.START, Opener.BEGIN)
    assert p.classify(Q, query_role="statement", xid_next=True) is B.INSIDE


def test_statement_inside_begin_is_inside():
    seq = [(Q, "begin"), (c.INTVAR_EVENT, None), (Q, "statement"), (Q, "end")]
    assert walk(seq) == ([B.START, B.INSIDE, B.INSIDE, B.END], [])


def test_dropped_commit_is_an_error_naming_both_states():
    seq = [(Q, "begin"), (Q, "statement"), (Q, "begin"), (Q, "end")]
    bounds, errors = walk(seq)
    assert errors == ["Unable to change boundary parser from Inside Transaction to Start Transaction"]


def test_orphan_inside_event():
    _, errors = walk([(c.WRITE_ROWS_EVENT, None)])
    assert errors == ["Unable to change boundary parser from Not Defined to Inside Transaction"]


def test_an_unreadable_query_has_no_boundary_and_follows_nothing():
    p = BoundaryParser()
    assert p.classify(Q, query_role=None) is B.NOT_DEFINED
    for state in FROM:
        p.state = state
        assert not p.feed(B.NOT_DEFINED)


def test_rows_without_begin_end_at_statement_end():
    p = BoundaryParser()
    assert p.classify(c.TABLE_MAP_EVENT) is B.START
    p.feed(B.START, Opener.ROWS)
    assert p.classify(c.WRITE_ROWS_EVENT_V1, stmt_end=False) is B.INSIDE
    assert p.classify(c.WRITE_ROWS_EVENT_V1, stmt_end=True) is B.END


def test_ignored_events_keep_state():
    p = BoundaryParser()
    p.feed(B.START, Opener.BEGIN)
    for t in (c.FORMAT_DESCRIPTION_EVENT, c.ROTATE_EVENT, c.TRANSACTION_PAYLOAD_EVENT):
        assert p.classify(t) is B.IGNORE
        assert p.feed(B.IGNORE)
    assert p.state is B.START


def test_every_known_event_type_has_a_kind():
    # one table says what each event type is (MySQL's one switch); constants.EVENT_NAMES lists
    # every type of MySQL 3.23-9.x and MariaDB 10.x-11.x binlake knows
    from binlake.boundaries.parser import EVENT_KINDS, Kind, event_kind

    assert set(EVENT_KINDS) == set(c.EVENT_NAMES)
    assert event_kind(250) is Kind.IGNORED  # an unknown type moves nothing (binlake.assemble words it)
    assert {t for t, k in EVENT_KINDS.items() if k is Kind.ROWS} == c.ROWS_EVENTS
