"""The statement rule (binlake.assemble.statement_dml): which tables a DML logged as a statement
writes, over every statement the real servers logged in tests/data (the bundled samples are copies
of them: tests.support.truth.samples_truth), and the transactions' `tables` the scan gives them.

The oracle is the statement text as the server logged it, shown by its own `mysqlbinlog`
(tests/data/<flavor>/mysqlbinlog.txt): each QUERY event's text, the database its `use` names, and
whether it is inside a transaction's group (after BEGIN, XA START or the `START TRANSACTION`
MariaDB shows for a GTID that opens a group), read here without binlake code. The tables each DML
statement writes are written out below by reading it.
"""

from __future__ import annotations

import re

import pytest

from binlake.assemble.statement_dml import ANY, written_tables
from tests.support.scanning import DATA, scan

# Every DML the workloads logged as a statement, as mysqlbinlog shows it (in `bl`): what it writes.
WRITES = {
    "INSERT INTO stmt_t (s) VALUES ('auto')": ["bl.stmt_t"],
    "INSERT INTO stmt_t (id, r) VALUES (1000, RAND())": ["bl.stmt_t"],
    "INSERT INTO stmt_t (s) VALUES ('a'),('b')": ["bl.stmt_t"],
    "UPDATE stmt_t SET r = LAST_INSERT_ID() WHERE id = 1000": ["bl.stmt_t"],
    "INSERT INTO stmt_t (id, s) VALUES (1001, @u)": ["bl.stmt_t"],
    "DELETE FROM stmt_t WHERE id = 1001": ["bl.stmt_t"],
    "INSERT INTO mylog (msg) VALUES ('statement')": ["bl.mylog"],
    "INSERT INTO mylog (msg) VALUES ('kept: MyISAM cannot roll back')": ["bl.mylog"],
    "INSERT INTO stmt_t (id, s) VALUES (2000, 'rolled back')": ["bl.stmt_t"],
    f"INSERT INTO stmt_t (id, s) VALUES (3000, LEFT('{'x' * 1024}', 60))": ["bl.stmt_t"],  # MariaDB's compressed
}
_HEADER = re.compile(r"^#\d{6} [ \d:]+ server id \d+ +end_log_pos \d+ CRC32 0x[0-9a-f]+ \t(\w+)(.*)$")
_STATEMENT_DML = re.compile(r"\s*(INSERT|REPLACE|UPDATE|DELETE|LOAD)\b", re.I)


def _queries(flavor: str) -> list[dict]:
    """Every QUERY event mysqlbinlog shows: its text, default database, transaction (its GTID) and
    whether it is inside the transaction's group."""
    text = (DATA / flavor / "mysqlbinlog.txt").read_text(encoding="utf-8", errors="replace")
    events: list[tuple[re.Match, list[str]]] = []  # each event's header and the lines after it
    for line in text.splitlines():
        if m := _HEADER.match(line):
            events.append((m, []))
        elif events and not line.startswith("# at "):
            events[-1][1].append(line)
    out, db, gtid, grouped = [], None, None, False
    for m, lines in events:
        kind, body = m[1], "\n".join(lines)
        if kind in ("GTID", "Gtid", "Anonymous_GTID"):
            # MariaDB's: its number, a group opened (START TRANSACTION, XA START) unless a statement
            # stands alone (`ddl`); MySQL's: its GTID_NEXT, a BEGIN after it opening the group
            g = re.match(r"\s*(\d+-\d+-\d+)", m[2]) or re.search(r"GTID_NEXT= '([^']+)'", body)
            gtid, grouped = (g[1] if g else None), bool(re.search(r"^(START TRANSACTION|XA START)", body, re.M))
            continue
        if kind in ("Xid", "XA_PREPARE"):
            grouped = False
            continue
        if kind not in ("Query", "Query_compressed"):
            continue
        pieces = [p.strip() for p in body.split("/*!*/;") if p.strip()]
        for p in pieces:
            if p.startswith("use `"):
                db = p[5:p.index("`", 5)]
        sql = pieces[-1]
        if re.match(r"(BEGIN|XA START)\b", sql):
            grouped = True
            continue
        if re.match(r"(COMMIT|ROLLBACK|XA PREPARE|XA COMMIT|XA ROLLBACK)\b", sql):
            grouped = False
            continue
        out.append({"sql": sql, "db": db, "gtid": gtid, "grouped": grouped})
    return out


@pytest.mark.parametrize("flavor", ["mysql", "mariadb"])
def test_each_logged_statement_writes_the_tables_its_text_names(flavor):
    queries = _queries(flavor)
    dml = [q for q in queries if q["grouped"] and _STATEMENT_DML.match(q["sql"])]
    assert {q["sql"] for q in dml} <= set(WRITES) and len(dml) >= 7, [q["sql"] for q in dml]
    for q in queries:  # DML: the tables its text names; anything else (DDL, XA END, TRUNCATE ...): none
        expected = WRITES.get(q["sql"], []) if q["grouped"] or _STATEMENT_DML.match(q["sql"]) else []
        assert written_tables(q["db"], q["sql"], grouped=q["grouped"]) == expected, q


@pytest.mark.parametrize("skim", [True, False])
@pytest.mark.parametrize("flavor", ["mysql", "mariadb"])
def test_a_transactions_tables_name_what_its_statements_wrote(flavor, skim):
    """The scan (with the lane, and by the reference walk) gives each transaction holding a
    statement-logged DML the tables the statement's text names, and adds none elsewhere: every
    other transaction's `tables` are its row changes' (mysqlbinlog's `###` rows, by GTID)."""
    by_gtid: dict[str, set[str]] = {}
    for q in _queries(flavor):
        if q["grouped"] and q["sql"] in WRITES:
            by_gtid.setdefault(q["gtid"], set()).update(WRITES[q["sql"]])
    assert by_gtid
    out = scan(sorted((DATA / flavor).glob("binlog.[0-9]*")), rows=True, skim=skim)
    rows: dict[str, set[str]] = {}
    for r in out["row_change"]:
        rows.setdefault(r["txn_id"], set()).add(f"{r['schema']}.{r['table']}")
    seen = set()
    for t in out["transaction"]:
        written = set(t["tables"]) - rows.get(t["txn_id"], set())
        assert written == by_gtid.get(t["gtid"], set()), t
        assert ANY not in t["tables"]
        seen.add(t["gtid"])
    assert set(by_gtid) <= seen


def test_a_statement_whose_tables_cannot_be_read_makes_every_table_held_then_partial():
    """The planner's rule (binlake.tables.plan.Planner._written), over a state made here: ANY marks
    every table with columns at that order (not one dropped before it, not one made after it), a
    named write its table only, and a CREATE after a write makes the table complete again."""
    from binlake.tables.plan import Planner, Statement, Written
    from binlake.tables.shapes import Col, Shape
    from binlake.tables.state import Point, SourceState

    state = SourceState("src")
    cols = [Col("id", "id", "int")]
    for name, shapes in {"a": [Shape("o1", "t1", cols)], "b": [Shape("o1", "t1", cols)],
                         "gone": [Shape("o1", "t1", cols), Shape("o2", "t2", None)],
                         "later": [Shape("o6", "t6", cols)]}.items():
        ts = state.table("db", name)
        ts.shapes, ts.complete_from = shapes, Point("o1", "t1", "create")
    Planner(state, Point("o3", "t3"), None).plan([], {}, {}, [], written=[Written("o4", "t4", ANY)])
    assert {k: t.partial_from for k, t in state.tables.items()} == \
        {"db/a": Point("o4", "t4", "statement"), "db/b": Point("o4", "t4", "statement"), "db/gone": None,
         "db/later": None}

    state = SourceState("src")
    for name in ("a", "b"):
        ts = state.table("db", name)
        ts.shapes, ts.complete_from = [Shape("o1", "t1", cols)], Point("o1", "t1", "create")
    drop_create = [Statement("o5", "t5", "x:5", "db", "DROP TABLE a"),
                   Statement("o6", "t6", "x:6", "db", "CREATE TABLE a (id INT PRIMARY KEY)")]
    Planner(state, Point("o3", "t3"), None).plan(drop_create, {}, {}, [],
                                                 written=[Written("o4", "t4", "db.a"), Written("o7", "t7", "db.b")])
    assert (state.tables["db/a"].partial_from, state.tables["db/a"].complete_from.order) == (None, "o6")
    assert state.tables["db/b"].partial_from == Point("o7", "t7", "statement")
