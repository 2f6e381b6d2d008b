"""The row versions' Great Expectations suites (docs/quality.md, "Row versions") on a real MySQL
server's applied ranges: they pass on the real output, in the same report as the boundary suites;
each expectation fails on a broken variant of that output (Delta operations on the tables, undone
after each), naming the rows; `binlake tables` exits 1 when they fail over what it applied.

One server of this module's own: tables that existed before archiving began reach the lake through
a baseline (tests.support.snapshots' workload), then a recorded workload — a primary-key update, a
table without a key with equal rows, a transaction that changes a row several times and one that
inserts and deletes it, partial row images (MINIMAL), ADD COLUMN, XA committed and rolled back,
TRUNCATE, DROP and CREATE again — counts its own inserts, updates and deletes (the cursor's row
counts: the oracle of the reconciliation). The range is validated once and applied in two pieces.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from binlake.splits.times import parse_time
from tests.support import snapshots
from tests.support.scanning import ndjson
from tests.test_tables_servers import RANGE, _apply, _archive

BASE = ("acct", "bag", "events", "pairs")  # the baseline's tables (tests.support.snapshots' workload)


def _expectations() -> dict[str, str]:
    """Each expectation of the two suites by a short name: its SQL file's stem, else its column;
    the description the report names it by (expectations/*.json)."""
    from binlake.spark.validate import EXPECTATIONS_DIR, _describe, load_suite

    out = {}
    for suite in ("versions", "baselines"):
        for e in load_suite(suite).expectations:
            cfg = e.configuration
            name = Path(e.meta["sql"]).stem if e.meta and "sql" in e.meta else \
                f"{suite}.{cfg.kwargs.get('column', 'pair')}"
            out[name] = cfg.description or _describe(cfg)
    assert (EXPECTATIONS_DIR / "versions.json").exists()
    return out


class Workload:
    """Statements run on one connection, each one's affected rows counted per table and op (what
    the binary log holds as row changes: the server's own count)."""

    def __init__(self, cur) -> None:
        self.cur = cur
        self.counts: Counter = Counter()

    def run(self, sql: str, op: str | None = None, table: str | None = None) -> None:
        self.cur.execute(sql)
        if op:
            self.counts[(table, op)] += self.cur.rowcount


def _now(cur) -> str:
    cur.execute("SELECT DATE_FORMAT(UTC_TIMESTAMP(6), '%Y-%m-%dT%H:%i:%s.%fZ')")
    return cur.fetchone()[0]


def _workload(server) -> tuple[Counter, Counter, str]:
    """The recorded workload after the baseline: its counts (range 1 and 2 together), the XA
    transaction rolled back left out; and the instant between the two pieces."""
    with server.connect() as conn, conn.cursor() as cur:
        w = Workload(cur)
        run = w.run
        run("CREATE DATABASE shop")
        run("CREATE TABLE shop.acct (id INT PRIMARY KEY, note VARCHAR(20))")
        run("CREATE TABLE shop.bag (x INT, y VARCHAR(10))")  # no key: a multiset
        run("CREATE TABLE shop.part (id INT PRIMARY KEY, a INT, b VARCHAR(10))")
        run("INSERT INTO shop.acct VALUES (1, 'one'), (2, 'two'), (3, 'three'), (4, 'four'), (5, 'five'), "
            "(6, 'six')", "insert", "shop.acct")
        run("UPDATE shop.acct SET note = 'three again' WHERE id = 3", "update", "shop.acct")
        run("INSERT INTO shop.bag VALUES (1, 'a'), (1, 'a'), (1, 'a'), (2, 'b')", "insert", "shop.bag")
        run("UPDATE base.acct SET balance = balance + 1 WHERE id < 5", "update", "base.acct")
        run("DELETE FROM base.pairs WHERE a < 3", "delete", "base.pairs")
        run("INSERT INTO base.bag VALUES (7, 'late')", "insert", "base.bag")
        cut = _now(cur)  # range 1 ends here
        run("UPDATE shop.acct SET id = 10 WHERE id = 1", "update", "shop.acct")  # the key changes
        run("DELETE FROM shop.bag WHERE x = 1 LIMIT 1", "delete", "shop.bag")  # one of three equal rows
        run("UPDATE shop.bag SET y = 'c' WHERE x = 1 LIMIT 1", "update", "shop.bag")
        run("BEGIN")
        run("INSERT INTO shop.acct VALUES (20, 'twenty')", "insert", "shop.acct")  # changed three times
        run("UPDATE shop.acct SET note = 'twenty once' WHERE id = 20", "update", "shop.acct")
        run("UPDATE shop.acct SET note = 'twenty twice' WHERE id = 20", "update", "shop.acct")
        run("INSERT INTO shop.acct VALUES (30, 'gone')", "insert", "shop.acct")  # inserted and deleted
        run("DELETE FROM shop.acct WHERE id = 30", "delete", "shop.acct")
        run("DELETE FROM shop.acct WHERE id = 2", "delete", "shop.acct")
        run("COMMIT")
        run("INSERT INTO shop.part VALUES (1, 1, 'x'), (2, 2, 'y')", "insert", "shop.part")
        run("SET SESSION binlog_row_image = 'MINIMAL'")
        run("UPDATE shop.part SET a = 5 WHERE id = 1", "update", "shop.part")  # before: the key; after: a
        run("INSERT INTO shop.part (id, a) VALUES (3, 3)", "insert", "shop.part")
        run("SET SESSION binlog_row_image = 'FULL'")
        run("ALTER TABLE shop.acct ADD COLUMN extra INT NOT NULL DEFAULT 7")  # a `ddl` version per row
        run("XA START 'x1'")
        run("UPDATE shop.acct SET note = 'xa' WHERE id = 3", "update", "shop.acct")
        run("XA END 'x1'")
        run("XA PREPARE 'x1'")
        run("XA COMMIT 'x1'")  # applied here
        rolled = Workload(cur)  # rolled back: never applied, not counted
        rolled.run("XA START 'x2'")
        rolled.run("DELETE FROM shop.acct WHERE id = 4", "delete", "shop.acct")
        rolled.run("XA END 'x2'")
        rolled.run("XA PREPARE 'x2'")
        rolled.run("XA ROLLBACK 'x2'")
        run("TRUNCATE TABLE shop.bag")
        run("INSERT INTO shop.bag VALUES (5, 'e')", "insert", "shop.bag")
        run("DROP TABLE shop.part")
        run("CREATE TABLE shop.part (id INT PRIMARY KEY, a INT, b VARCHAR(10))")
        run("INSERT INTO shop.part VALUES (1, 9, 'again')", "insert", "shop.part")
        run("UPDATE base.acct SET note = 'later' WHERE id = 5", "update", "base.acct")
        run("FLUSH BINARY LOGS")  # every transaction in a closed file
    return w.counts, cut


@pytest.fixture(scope="module")
def lake(mysql_factory, spark, tmp_path_factory):
    """The workload archived, assembled, validated once, applied in two pieces; the warehouse
    after the first piece kept aside."""
    from binlake.spark.job import assemble
    from binlake.spark.validate import validate

    server = mysql_factory()
    root = tmp_path_factory.mktemp("version-suites")
    store = f"file://{root}/store"
    snapshots.create_workload(server, "base", rows=40, bag=12)
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("SHOW BINARY LOGS")
        cur.execute(f"PURGE BINARY LOGS TO '{cur.fetchall()[-1][0]}'")  # the base tables' history: gone
    _archive(server, store)
    taken = snapshots.take(server, store, "src")
    with server.connect() as conn, conn.cursor() as cur:  # nothing writes: the baseline's rows now
        counts = {}
        for t in BASE:
            cur.execute(f"SELECT COUNT(*) FROM base.{t}")
            counts[t] = cur.fetchone()[0]
    changes, cut = _workload(server)
    _archive(server, store)
    warehouse = root / "lake"
    assert assemble(spark, store, str(warehouse), *RANGE).status == "ok"
    report = validate(spark, str(warehouse), *RANGE, store=store)
    assert report.success, report.text()
    first = _apply(spark, store, warehouse, RANGE[0], cut)
    assert first.status == "applied", first.reason
    half = root / "half"
    shutil.copytree(warehouse, half)
    second = _apply(spark, store, warehouse, cut, RANGE[1])
    assert second.status == "applied", second.reason
    return {"store": store, "warehouse": warehouse, "half": half, "cut": cut, "run": report.run,
            "baseline": taken.id, "baseline_rows": counts, "changes": changes}


def _report(warehouse: Path, run: str) -> dict:
    return json.loads((warehouse / "quality" / "runs" / run / "results.json").read_text())


def _checks(spark, lake: dict, warehouse: Path | None = None):
    """The suites over the whole range as the lake's tables are now (their newest Delta versions)."""
    from binlake.spark.version_suites import Applied, VersionChecks
    from binlake.tables import state as states
    from tests.support.lake import table

    warehouse = warehouse or lake["warehouse"]
    state = states.load(str(warehouse), "src")
    for ts in state.tables.values():
        if ts.version is not None:
            ts.version = table(warehouse, ts.path).version()
    applied = {"src": Applied(state, parse_time(RANGE[0]), parse_time(RANGE[1]), sorted(state.tables))}
    return VersionChecks(spark, applied, warehouse=f"file://{warehouse}", store=lake["store"],
                         quality=warehouse / "quality")


def _failed(results) -> dict[str, list]:
    """The failed expectations of the suites' results: description -> unexpected rows."""
    return {f["description"]: f["unexpected"] for r in results for f in r.failed}


def test_the_suites_pass_in_the_ranges_report_beside_the_boundary_suites(lake, spark):
    report = _report(lake["warehouse"], lake["run"])["report"]
    suites = {s["suite"]: s for s in report["suites"]}
    # the boundary suites the validation ran, and the row versions' the second apply added
    assert set(suites) == {"transactions", "row_changes", "anomalies", "continuity", "versions", "baselines"}
    assert report["success"] and all(s["success"] for s in suites.values()), report
    assert suites["versions"]["evaluated"] == len(json.loads(
        (Path(__file__).parents[1] / "expectations" / "versions.json").read_text())["expectations"])
    summary = (lake["warehouse"] / "quality" / "runs" / lake["run"] / "summary.txt").read_text()
    assert "versions" in summary and "baselines" in summary and "PASSED" in summary.splitlines()[0]
    # the data docs site holds the versions suite's validation results
    assert list((lake["warehouse"] / "quality" / "gx" / "uncommitted" / "validations" / "versions").rglob("*.json"))


def _delta(warehouse: Path, table: str) -> str:
    return f"delta.`{warehouse}/tables/src/{table}`"


def test_each_versions_expectation_fails_on_a_broken_variant_naming_its_rows_then_passes_restored(lake, spark):
    from tests.support.lake import table

    names = _expectations()
    wh = lake["warehouse"]
    acct, bag, part = (_delta(wh, f"shop/{t}") for t in ("acct", "bag", "part"))
    before = {t: table(wh, f"tables/src/shop/{t}").version() for t in ("acct", "bag", "part")}
    try:
        # each on rows of its own (the key named in the rows each expectation returns):
        # id 3: its first version reopened (closed by the update of 'three again')
        spark.sql(f"UPDATE {acct} SET _valid_to = NULL, _to_txn = NULL, _to_order = NULL "
                  f"WHERE id = 3 AND note = 'three'")
        # id 5: its first version ends after its ddl version began (ADD COLUMN): they overlap
        spark.sql(f"UPDATE {acct} SET _to_order = '9999' WHERE id = 5 AND _op = 'insert'")
        # id 6: its first version ends a second before the ddl version that follows it begins: a gap
        spark.sql(f"UPDATE {acct} SET _valid_to = _valid_to - INTERVAL 1 SECOND WHERE id = 6 AND _op = 'insert'")
        # id 10 (the key the update moved 1 to): its first version closed without its transaction
        spark.sql(f"UPDATE {acct} SET _to_txn = NULL WHERE id = 10 AND _op = 'update'")
        # the row inserted after the TRUNCATE: a version removed
        spark.sql(f"DELETE FROM {bag} WHERE x = 5")
        # shop.part's rows (the second table of that name): the version columns out of their domains
        spark.sql(f"UPDATE {part} SET _op = 'upsert' WHERE id = 1 AND a = 9")
        spark.sql(f"UPDATE {part} SET _from_txn = NULL WHERE id = 2")
        spark.sql(f"UPDATE {part} SET _valid_from = NULL WHERE id = 3")
        spark.sql(f"UPDATE {part} SET _from_order = NULL WHERE id = 1 AND a = 5")
        results = _checks(spark, lake).judge(lake["run"] + "_broken").results
    finally:
        for t, v in before.items():
            spark.sql(f"RESTORE TABLE {_delta(wh, 'shop/' + t)} TO VERSION AS OF {v}")
    failed = _failed(results)

    def keys(name: str) -> set:
        return {(r.get("table"), r.get("key")) for r in failed[names[name]]}

    assert ("acct", '{"id":3}') in keys("one_current_per_key")
    assert ("acct", '{"id":5}') in keys("intervals_disjoint")
    assert ("acct", '{"id":6}') in keys("intervals_contiguous")
    assert ("acct", '{"id":10}') in keys("closed_whole")
    # bag's insert of (5, 'e'): one insert, no version opened
    assert any(r["table"] == "bag" and r["inserts"] == 1 and r["opened"] == 0
               for r in failed[names["reconcile_row_changes"]])
    for column in ("_op", "_valid_from", "_from_order"):  # each only by its own breakage
        assert names[f"versions.{column}"] in failed, column
    assert ("part", '{"id":2}') in keys("opened_by_a_transaction")
    # restored: the suites pass again, over the whole range
    checks = _checks(spark, lake)
    judged = checks.judge(lake["run"] + "_restored")
    results, counts = judged.results, judged.counts
    assert all(r.success for r in results), _failed(results)
    # what the reconciliation compared: the workload's own inserts, updates and deletes per table
    # (the XA transaction rolled back left out, the one committed counted)
    got = Counter()
    for r in spark.table("bl_version_changes").collect():
        for op in ("insert", "update", "delete"):
            if r[f"{op}s"]:
                got[(f"{r['schema']}.{r['table']}", op)] += r[f"{op}s"]
    assert got == +lake["changes"]
    # the baseline's rows: the server's COUNT(*) when it was taken, in its record and as versions
    rows = {r["table"]: r for r in checks.baselines().collect()}
    assert set(rows) == set(BASE) and counts["baselines"] == len(BASE)
    for t in BASE:
        assert rows[t]["snapshot_rows"] == rows[t]["snapshot_versions"] == lake["baseline_rows"][t], t


def test_each_baselines_expectation_fails_when_the_baseline_is_not_what_the_tables_hold(lake, spark, tmp_path):
    from binlake.archive import keys
    from tests.support.lake import table

    names = _expectations()
    wh = lake["warehouse"]
    acct = _delta(wh, "base/acct")
    v = table(wh, "tables/src/base/acct").version()
    record = Path(lake["store"].removeprefix("file://")) / keys.baseline_record_key("src", lake["baseline"])
    kept = record.read_bytes()
    try:
        # a baseline row deleted: acct's row 39, which nothing changed after
        spark.sql(f"DELETE FROM {acct} WHERE id = 39 AND _op = 'snapshot'")
        # bag missing from the baseline's record in the archive
        doc = json.loads(kept)
        doc["tables"] = [t for t in doc["tables"] if t["table"] != "bag"]
        record.write_text(json.dumps(doc))
        results = _checks(spark, lake).judge(lake["run"] + "_baseline_broken").results
    finally:
        spark.sql(f"RESTORE TABLE {acct} TO VERSION AS OF {v}")
        record.write_bytes(kept)
    failed = _failed(results)
    assert "acct" in {r["table"] for r in failed[names["baselines.pair"]]}  # 39 rows held, 40 in the record
    assert [r["table"] for r in failed[names["baselines.snapshot_rows"]]] == ["bag"]


def test_binlake_tables_exits_1_when_the_suites_fail_over_what_it_applied(lake, spark, capsys):
    from binlake import spark as jobs
    from binlake.cli import build_parser

    half = lake["half"]
    # before the second piece: id 3's first version reopened; the XA transaction of the second
    # piece updates id 3, so its apply reads both as current and leaves one of them current
    spark.sql(f"UPDATE {_delta(half, 'shop/acct')} SET _valid_to = NULL, _to_txn = NULL, _to_order = NULL "
              f"WHERE id = 3 AND note = 'three'")
    # `binlake tables` as its command line parses it, in this process's Spark session (a JVM of
    # its own costs a minute)
    args = build_parser().parse_args(["tables", "--store", lake["store"], "--warehouse", str(half),
                                      "--start", lake["cut"], "--end", RANGE[1], "--source", "src"])
    assert jobs.run_tables(args, spark=spark) == 1
    out = capsys.readouterr()
    (line,) = ndjson(out.out)
    assert line["status"] == "applied"  # applied, then judged
    names = _expectations()
    assert "the row versions' suites failed" in out.err and names["one_current_per_key"] in out.err
    assert '\\"id\\":3' in out.err, out.err  # the key, in the rows shown
    # the range's report says so too, beside its boundary suites
    report = _report(half, lake["run"])["report"]
    assert not report["success"]
    assert {s["suite"]: s["success"] for s in report["suites"]} == {
        "transactions": True, "row_changes": True, "anomalies": True, "continuity": True, "versions": False,
        "baselines": True}


def test_a_big_tables_versions_are_found_by_a_join_as_a_small_ones_by_a_window(lake, spark, monkeypatch):
    from binlake.spark import version_suites, versions

    # the driver's batch (delta-rs: small tables) is the one the expectations above judge, broken
    # and restored; then Spark's, with a window over the keys and with a join with them
    read = sorted(map(tuple, _checks(spark, lake).versions().collect()))
    monkeypatch.setattr(versions, "SMALL_ROWS", -1)  # its size read, not taken small by its count
    windowed = sorted(map(tuple, _checks(spark, lake).versions().collect()))
    monkeypatch.setattr(version_suites, "JOINED_BYTES", 0)  # every table "big": joined with its keys
    joined = sorted(map(tuple, _checks(spark, lake).versions().collect()))
    # shop.acct's versions by key, from the workload (_workload): 1 inserted, then moved to 10 (one
    # version); 3 inserted, updated, given a `ddl` version by the ADD COLUMN, updated by XA (four);
    # 10 from the move, then the ADD COLUMN's (two)
    expected = {'{"id":1}': 1, '{"id":3}': 4, '{"id":10}': 2}
    for batch in (read, windowed, joined):
        assert Counter(r[3] for r in batch if r[1:3] == ("shop", "acct") and r[3] in expected) == expected
    assert joined == windowed == read
