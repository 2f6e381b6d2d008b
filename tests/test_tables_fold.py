"""The fold of a group's changes into row versions (binlake/tables/fold.py), on hand-made streams.

Each stream is what a table's row changes would be on a server; the expected versions are what
the server's table held between the changes (the comment by each says why). The real servers'
row versions are held to the servers' own SELECTs in tests/test_tables_servers.py.
"""

from __future__ import annotations

from binlake.schema.model import Column, Table
from binlake.tables.fold import BASELINE, Change, Fold, Snapshot, TableEvent, Version, complete_json
from binlake.tables.order import order
from binlake.tables.shapes import Effects, Shape, next_shape, statement_effects

T = "db/t"


def o(n: int) -> str:
    return order("binlog.000001", 1000 + n)


def ch(n: int, op: str, before=None, after=None, seq: int = 0) -> Change:
    return Change(o(n), seq, f"txn{n}", f"2026-01-01T00:00:{n:02d}.000000Z", op, before, after, T, 0)


def held(values: dict, n: int = 0) -> Version:
    return Version(dict(values), o(n), 0, f"txn{n}", f"2026-01-01T00:00:{n:02d}.000000Z", "insert", T, 0,
                   existing=True)


def nxt(at, old, table, untyped, effects, delta):
    return next_shape(old, table, at=at, effects=effects, delta=delta, untyped=untyped)


def rows(out: list[Version]) -> list[tuple]:
    return [(v.values, v.order, v.to[0] if v.to else None, v.op) for v in out]


def test_keyed_insert_update_delete():
    # INSERT id 1, UPDATE it, DELETE it: three states of the row, the last one ending at the delete
    out = Fold(["id"], []).run([
        ch(1, "insert", after={"id": 1, "a": "x"}),
        ch(2, "update", before={"id": 1, "a": "x"}, after={"id": 1, "a": "y"}),
        ch(3, "delete", before={"id": 1, "a": "y"})])
    assert rows(out) == [({"id": 1, "a": "x"}, o(1), o(2), "insert"), ({"id": 1, "a": "y"}, o(2), o(3), "update")]


def test_one_transaction_changes_a_row_twice_its_last_state_is_the_version():
    # one transaction inserts then updates id 1 (seq 0, 1): the row as the transaction left it
    out = Fold(["id"], []).run([
        ch(1, "insert", after={"id": 1, "a": "x"}, seq=0),
        ch(1, "update", before={"id": 1, "a": "x"}, after={"id": 1, "a": "y"}, seq=1)])
    assert rows(out) == [({"id": 1, "a": "y"}, o(1), None, "insert")]
    # inserted and deleted by one transaction: never a version
    gone = [ch(1, "insert", after={"id": 1}, seq=0), ch(1, "delete", before={"id": 1}, seq=1)]
    assert Fold(["id"], []).run(gone) == []


def test_existing_version_closed_and_minimal_image_completed():
    # binlog_row_image=MINIMAL: the before image holds the key, the after image the changed column
    existing = held({"id": 7, "a": "x", "b": 5})
    out = Fold(["id"], []).run([existing, ch(4, "update", before={"id": 7}, after={"b": 6})])
    assert rows(out) == [({"id": 7, "a": "x", "b": 5}, o(0), o(4), "insert"), ({"id": 7, "a": "x", "b": 6}, o(4), None,
                                                                            "update")]
    assert out[0].changed and out[0].existing


def test_value_never_seen_is_unknown_and_a_before_image_fills_it_in():
    # MINIMAL insert of (id, a): b took its default on the server, never logged: unknown
    out = Fold(["id"], []).run([ch(1, "insert", after={"id": 1, "a": "x"})])
    assert out[0].values == {"id": 1, "a": "x"}
    # a FULL before image later shows b: the version it closes knew it, and so does the next
    existing = held({"id": 1, "a": "x"})
    out = Fold(["id"], []).run([existing, ch(5, "update", before={"id": 1, "a": "x", "b": 3},
                                             after={"id": 1, "a": "z", "b": 3})])
    assert out[0].values == {"id": 1, "a": "x", "b": 3} and out[0].to[0] == o(5)
    assert out[1].values == {"id": 1, "a": "z", "b": 3}


def test_update_changing_the_key_moves_the_row():
    out = Fold(["id"], []).run([held({"id": 1, "a": "x"}),
                                ch(2, "update", before={"id": 1, "a": "x"}, after={"id": 9, "a": "x"})])
    assert rows(out) == [({"id": 1, "a": "x"}, o(0), o(2), "insert"), ({"id": 9, "a": "x"}, o(2), None, "update")]


def test_multiset_rows_alike_close_the_oldest():
    # a table without a key holding the row (1, 'a') twice: DELETE … LIMIT 1 removes one of them
    first, second = held({"a": 1, "b": "a"}, 0), held({"a": 1, "b": "a"}, 1)
    out = Fold(None, []).run([first, second, ch(3, "delete", before={"a": 1, "b": "a"})])
    assert [v.order for v in out if v.to] == [o(0)]
    # and an update of one of them leaves the other as it was
    out = Fold(None, []).run([held({"a": 1, "b": "a"}, 0), held({"a": 1, "b": "a"}, 1),
                              ch(3, "update", before={"a": 1, "b": "a"}, after={"a": 2, "b": "a"})])
    assert rows(out) == [({"a": 1, "b": "a"}, o(0), o(3), "insert"), ({"a": 2, "b": "a"}, o(3), None, "update")]


def test_baseline_rows_hold_the_changes_before_their_chunks_point():
    # chunk 1 read at point 5, chunk 2 at point 8 (a snapshot resumed): a change at 6 to a row of
    # chunk 2 is in that chunk already; a change at 6 to a row of chunk 1 is not
    start = TableEvent(o(5), BASELINE, "", "2026-01-01T00:00:05.000000Z", "baseline")
    out = Fold(["id"], [start]).run([
        held({"id": 1, "a": "old"}),  # a partial version from before the baseline
        Snapshot(o(5), -1, "2026-01-01T00:00:05.000000Z", {"id": 1, "a": "p"}, T, 0),
        Snapshot(o(8), -2, "2026-01-01T00:00:08.000000Z", {"id": 2, "a": "q"}, T, 0),
        ch(6, "update", before={"id": 1, "a": "p"}, after={"id": 1, "a": "p6"}),
        ch(6, "update", before={"id": 2, "a": "q0"}, after={"id": 2, "a": "q"}, seq=1),
        ch(9, "delete", before={"id": 2, "a": "q"})])
    by = {(v.values["id"], v.values["a"]): (v.order, v.to[0] if v.to else None, v.op) for v in out}
    assert by == {(1, "old"): (o(0), o(5), "insert"), (1, "p"): (o(5), o(6), "snapshot"),
                  (1, "p6"): (o(6), None, "update"), (2, "q"): (o(8), o(9), "snapshot")}


def test_partial_json_applied_to_the_previous_document():
    doc = {"a": 1, "list": [1, 2]}
    partial = {"$partial": [{"op": "Replace", "path": "$.a", "value": 2},
                            {"op": "Insert", "path": "$.list[1]", "value": 9},
                            {"op": "Insert", "path": "$.bb", "value": True},
                            {"op": "Remove", "path": "$.list[0]", "value": None}]}
    # MySQL keeps an object's keys by length, then bytes: "a", "bb", "list"
    assert list(complete_json(doc, partial).items()) == [("a", 2), ("bb", True), ("list", [9, 2])]
    out = Fold(["id"], []).run([ch(1, "update", before={"id": 1}, after={"doc": partial})])
    assert "doc" not in out[0].values  # the document before it was never seen


def test_ddl_add_column_with_default_drop_and_rename():
    t1 = Table("db", "t", (Column("id", "int"), Column("a", "varchar(10)", "utf8mb4")))
    delta: dict[str, str] = {}
    s1, _, _, adds = nxt((o(0), "t0"), None, t1, None, Effects(), delta)
    assert [c.column for c in s1.columns] == ["id", "a"] and adds == [("id", "INT", "int"), ("a", "STRING",
                                                                                               "varchar(10)")]
    # ALTER TABLE t ADD COLUMN n INT NOT NULL DEFAULT 5, RENAME COLUMN a TO b
    sql = "ALTER TABLE t ADD COLUMN n INT NOT NULL DEFAULT 5, RENAME COLUMN a TO b"
    effects = statement_effects("db", sql)[("db", "t")]
    t2 = Table("db", "t", (Column("id", "int"), Column("b", "varchar(10)", "utf8mb4"), Column("n", "int")))
    s2, reshape, renames, adds = nxt((o(3), "t3"), s1, t2, None, effects, delta)
    assert renames == [("a", "b")] and adds == [("n", "INT", "int")]
    assert reshape({"id": 1, "a": "x"}) == ({"id": 1, "b": "x", "n": 5}, True)  # the server's rows got n = 5
    # DROP COLUMN n: its Delta column keeps the earlier versions' values as n~1
    t3 = Table("db", "t", (Column("id", "int"), Column("b", "varchar(10)", "utf8mb4")))
    s3, reshape, renames, adds = nxt((o(4), "t4"), s2, t3, None, Effects(), delta)
    assert renames == [("n", "n~1")] and adds == []
    assert reshape({"id": 1, "b": "x", "n": 5}) == ({"id": 1, "b": "x"}, True)
    # a pure rename changes no row: RENAME COLUMN b TO c
    t4 = Table("db", "t", (Column("id", "int"), Column("c", "varchar(10)", "utf8mb4")))
    s4, reshape, renames, _ = nxt((o(5), "t5"), s3, t4, None, statement_effects(
        "db", "ALTER TABLE t RENAME COLUMN b TO c")[("db", "t")], delta)
    assert reshape({"id": 1, "b": "x"}) == ({"id": 1, "c": "x"}, False) and renames == [("b", "c")]
    assert isinstance(s4, Shape) and delta == {"id": "INT", "c": "STRING", "n~1": "INT"}


def test_ddl_modify_converts_where_certain():
    # MODIFY a BIGINT (widened), then MODIFY a VARCHAR(3): '12345' does not fit: unknown
    t1 = Table("db", "t", (Column("id", "int"), Column("a", "int")))
    delta: dict[str, str] = {}
    s1, *_ = nxt((o(0), "t0"), None, t1, None, Effects(), delta)
    s2, reshape, renames, adds = nxt((o(1), "t1"), s1, Table("db", "t", (Column("id", "int"),
                                                                              Column("a", "bigint"))), None,
                                            Effects(), delta)
    assert reshape({"id": 1, "a": 12345}) == ({"id": 1, "a": 12345}, True)  # a new Delta column (BIGINT)
    assert renames == [("a", "a~1")] and adds == [("a", "BIGINT", "bigint")]
    _, reshape, *_ = nxt((o(2), "t2"), s2, Table("db", "t", (Column("id", "int"),
                                                                  Column("a", "varchar(3)", "utf8mb4"))), None,
                                Effects(), delta)
    assert reshape({"id": 1, "a": 12345}) == ({"id": 1}, True)
    assert reshape({"id": 2, "a": 123}) == ({"id": 2, "a": "123"}, True)


def test_ddl_reshape_in_the_fold_gives_ddl_versions():
    t1 = Table("db", "t", (Column("id", "int"),))
    delta: dict[str, str] = {}
    s1, *_ = nxt((o(0), "t0"), None, t1, None, Effects(), delta)
    _, reshape, *_ = nxt((o(2), "t2"), s1, Table("db", "t", (Column("id", "int"), Column("x", "int"))), None,
                                statement_effects("db", "ALTER TABLE t ADD x INT")[("db", "t")], delta)
    add = TableEvent(o(2), 0, "txn2", "t2", "reshape", T, 1, reshape)
    out = Fold(["id"], [add]).run([held({"id": 1}), ch(3, "update", before={"id": 1, "x": None},
                                                       after={"id": 1, "x": 4})])
    assert rows(out) == [({"id": 1}, o(0), o(2), "insert"), ({"id": 1, "x": None}, o(2), o(3), "ddl"),
                         ({"id": 1, "x": 4}, o(3), None, "update")]
    assert [v.shape for v in out] == [0, 1, 0]  # the change's own shape is the driver's to say


def test_truncate_and_keys_from_statements(caplog):
    assert statement_effects("db", "TRUNCATE TABLE `x y`") == {("db", "x y"): Effects(truncate=True)}
    assert statement_effects("db", "CREATE TABLE s.t (a INT, b INT, PRIMARY KEY (b, a))")[("s", "t")].key == ["b", "a"]
    assert statement_effects("db", "CREATE TABLE t (a INT)")[("db", "t")].key is None
    with caplog.at_level("WARNING"):
        moved = statement_effects("db", "RENAME TABLE a TO b, s.c TO s.d")
    assert moved[("db", "b")].moved_from == ("db", "a") and moved[("s", "d")].moved_from == ("s", "c")
    assert [r.getMessage() for r in caplog.records if r.name.startswith("sqlglot")] == []  # read as binlake reads it
