"""The Great Expectations suites pass on the warehouse made from real servers' binlogs, and
each expectation fails on a broken variant of it: binlogs damaged in the archive (a dropped
XID or COMMIT, a file cut mid-transaction) or tables broken after assembly (a duplicated
transaction, a GTID hole, a wrong transaction_length, a row change without its transaction,
a segment set without its end, …). The data docs open in headless Chromium."""

from __future__ import annotations

import json
import logging
import re
import shutil
import struct
import zlib
from pathlib import Path

import pytest

from binlake.archive.run import archive
from binlake.archive.sources import DirSource
from binlake.archive.stores import open_store
from binlake.binlog import constants as c
from binlake.binlog.framing import BinlogReader
from tests.support.scanning import DATA, run_cli

FLAVORS = ("mysql", "mariadb")


def test_suites_name_their_sql_and_hold_none_inline():
    from binlake.spark import version_suites
    from binlake.spark.validate import EXPECTATIONS_DIR, SUITES, load_suite

    referenced = set()
    for name in SUITES + version_suites.SUITES:
        raw = json.loads((EXPECTATIONS_DIR / f"{name}.json").read_text())
        for e in raw["expectations"]:
            assert "unexpected_rows_query" not in e["kwargs"], f"{name}: inline SQL in {e['kwargs']}"
            if e["type"] == "expect_query_to_return_no_rows":
                referenced.add(e["meta"]["sql"])
        for e in load_suite(name).expectations:  # each file's query reaches GX
            if e.expectation_type == "expect_query_to_return_no_rows":
                assert "{batch}" in e.unexpected_rows_query and "--" not in e.unexpected_rows_query
    on_disk = {str(p.relative_to(EXPECTATIONS_DIR / "sql")) for p in (EXPECTATIONS_DIR / "sql").rglob("*.sql")}
    assert referenced == on_disk  # every file is used, every reference exists


def test_great_expectations_is_quiet_in_the_jobs_log():
    # The Spark job logs at INFO (spark_jobs/assemble_transactions.py's config), and loading the
    # suites imports GX, which logged ~200 INFO lines while imported (a task log's bulk). In a
    # fresh interpreter with that config: no GX line below WARNING, binlake's INFO lines still there.
    import subprocess
    import sys

    code = ("import logging, sys\n"
            "logging.basicConfig(level=logging.INFO, format='%(levelname)s %(name)s: %(message)s', stream=sys.stderr)\n"
            "from binlake.spark.validate import load_suite\n"
            "load_suite('transactions')\n"
            "logging.getLogger('binlake.spark.job').info('assembled')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stderr.splitlines()
    assert "INFO binlake.spark.job: assembled" in lines
    assert [ln for ln in lines if ln.split(" ", 2)[1:2] and ln.split(" ", 2)[1].startswith("great_expectations")
            and ln.split(" ", 1)[0] in ("DEBUG", "INFO")] == []


def test_a_missing_sql_file_is_named(tmp_path, monkeypatch):
    from binlake.errors import BinlakeError
    from binlake.spark import validate

    shutil.copytree(validate.EXPECTATIONS_DIR, tmp_path / "expectations")
    (tmp_path / "expectations" / "sql" / "continuity" / "gtids_once.sql").unlink()
    monkeypatch.setattr(validate, "EXPECTATIONS_DIR", tmp_path / "expectations")
    with pytest.raises(BinlakeError, match=r"expectations/sql/continuity/gtids_once\.sql: cannot read the suite "
                                           r"continuity: No such file or directory"):
        validate.load_suite("continuity")


def expectation_ids(report) -> dict[str, set[str]]:
    """Failed expectations per suite, named by their description (or type and column)."""
    return {s.suite: {f["description"] for f in s.failed} for s in report.suites}


@pytest.fixture(scope="module")
def base(spark, tmp_path_factory):
    """The committed binlogs of both flavors archived (file store) and assembled."""
    from binlake.spark.job import assemble

    root = tmp_path_factory.mktemp("quality")
    store = f"file://{root}/store"
    for flavor in FLAVORS:
        archive(DirSource(str(DATA / flavor)), open_store(store), flavor)
    start, end = "2000-01-01", "2100-01-01"
    assemble(spark, store, str(root / "lake"), start, end, split_bytes=1 << 40)
    return root, store, (start, end)


def validate(spark, warehouse, store, rng, **config):
    from binlake.spark.validate import Config, validate

    return validate(spark, str(warehouse), *rng, store=store, config=Config(**config))


def test_the_real_outputs_pass(spark, base):
    root, store, rng = base
    report = validate(spark, root / "lake", store, rng)
    assert report.success, report.text()
    assert [s.suite for s in report.suites] == ["transactions", "row_changes", "anomalies", "continuity"]
    assert all(s.success and s.evaluated == s.passed > 0 for s in report.suites)
    assert report.counts["transactions"] > 100 and report.counts["row_changes"] > 200
    saved = json.loads(Path(report.results).read_text())
    assert saved["report"]["success"] is True and set(saved["gx"]) == {s.suite for s in report.suites}
    assert Path(report.docs).is_file()
    # GX's scaffold of the config variables file (its instance id alone) is gone: the suites ran at once
    assert not (root / "lake/quality/gx/uncommitted/config_variables.yml").exists()
    # each query read its batch in a view of its own, dropped after: not GX's one `tmp_view` for all
    assert [t.name for t in spark.catalog.listTables() if "tmp_view" in t.name or "binlake_batch" in t.name] == []


def test_a_projects_own_config_variables_are_kept(spark, base, caplog):
    """A config variables file holding the user's variables stays; the suites then run one after
    another (GX parses that file again at each variable lookup, through one parser for all threads)."""
    root, store, rng = base
    lake = _copy_lake(root, "variables")
    variables = lake / "quality/gx/uncommitted/config_variables.yml"
    variables.parent.mkdir(parents=True)
    text = "# the docs site's bucket\ndocs_bucket: my-bucket\ninstance_id: 8a0c1e2d\n"
    variables.write_text(text)
    with caplog.at_level(logging.INFO, logger="binlake.spark.validate"):
        report = validate(spark, lake, store, rng)
    assert report.success, report.text()
    assert variables.read_text() == text
    assert f"the suites one after another: {variables} holds the project's variables" in caplog.messages


# -- breaking the tables after assembly ----------------------------------------------------

def _copy_lake(root: Path, name: str) -> Path:
    dst = root / name
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(root / "lake", dst, ignore=shutil.ignore_patterns("quality"))
    return dst


def _rewrite(spark, lake: Path, table: str, change) -> None:
    """Apply `change(DataFrame) -> DataFrame` to a table and write it back whole: a new version of
    the Delta table, which validation reads (the newest)."""
    from binlake.spark import schema

    struct = schema.STORED[table]
    df = spark.read.format("delta").load(str(lake / table))
    change(df).select(*struct.fieldNames()).write.format("delta").mode("overwrite").save(str(lake / table))


def _pick(spark, lake: Path, sql: str):
    for table in ("transactions", "row_changes"):
        spark.read.format("delta").load(str(lake / table)).createOrReplaceTempView(f"t_{table}")
    return spark.sql(sql).first()


def _break_tables(spark, root: Path, variant: str) -> Path:
    from pyspark.sql import functions as F

    lake = _copy_lake(root, f"lake_{variant}")
    big = _pick(spark, lake, "SELECT txn_id, gtid FROM t_transactions WHERE row_count > 1 AND gtid LIKE '%:%' "
                             "ORDER BY start_pos DESC LIMIT 1")
    one = F.col("txn_id") == big["txn_id"]
    if variant == "duplicated_transaction":
        _rewrite(spark, lake, "transactions", lambda df: df.unionByName(df.where(one)))
    elif variant == "gtid_hole":  # a whole transaction gone, rows and all
        _rewrite(spark, lake, "transactions", lambda df: df.where(~one))
        _rewrite(spark, lake, "row_changes", lambda df: df.where(~one))
    elif variant == "wrong_transaction_length":
        _rewrite(spark, lake, "transactions", lambda df: df.withColumn(
            "transaction_length", F.when(one, F.col("transaction_length") + 1).otherwise(F.col("transaction_length"))))
    elif variant == "row_change_without_transaction":
        _rewrite(spark, lake, "transactions", lambda df: df.where(~one))
    elif variant == "segment_without_end":
        _rewrite(spark, lake, "row_changes", lambda df: df.withColumn(
            "end_segment", F.when(one, F.lit(False)).otherwise(F.col("end_segment"))))
    elif variant == "rows_lost_and_mangled":  # rows of one transaction: one lost, the others' fields broken
        _rewrite(spark, lake, "row_changes", lambda df: df.where(~(one & (F.col("seq") == 0))).withColumn(
            "op", F.when(one & (F.col("seq") == 1), F.lit("upsert")).otherwise(F.col("op"))).withColumn(
            "commit_ts", F.when(one, F.col("commit_ts") + F.expr("INTERVAL 1 SECOND")).otherwise(F.col("commit_ts")))
            .withColumn("before", F.when(one & (F.col("op") == "insert"), F.lit("{}")).otherwise(F.col("before"))))
    elif variant == "garbage_fields":  # each field of one transaction out of its domain
        _rewrite(spark, lake, "transactions", lambda df: _set(df, one, {
            "kind": F.lit("merge"), "outcome": F.lit("maybe"), "end_event": F.lit("GTID"),
            "end_pos": F.col("start_pos"),
            "synthetic_boundary": F.lit(True), "first_event_ts": F.col("commit_ts") + F.expr("INTERVAL 1 HOUR"),
            "event_count": F.lit(0), "segment_count": F.lit(0), "rows_inserted": F.col("rows_inserted") + 1}))
    elif variant == "null_ids":
        _rewrite(spark, lake, "transactions", lambda df: _set(df, one, {"commit_ts": F.lit(None),
                                                                         "txn_id": F.lit(None)}))
    elif variant == "xa_never_ended":
        _rewrite(spark, lake, "transactions", lambda df: df.where(~F.col("kind").isin("xa_commit", "xa_rollback")))
    else:
        raise AssertionError(variant)
    return lake


def _set(df, where, values: dict):
    """The rows matching `where` with columns replaced (each computed from the row as it was)."""
    from pyspark.sql import functions as F

    return df.select(*[F.when(where, values[c]).otherwise(F.col(c)).alias(c) if c in values else F.col(c)
                       for c in df.columns])


TABLE_VARIANTS = {
    "duplicated_transaction": {
        "transactions": {"each transaction is in the table once"},
        "continuity": {"each archived file's transaction count", "no GTID appears twice"}},
    "gtid_hole": {"continuity": {"each archived file's transaction count"}},
    "wrong_transaction_length": {"transactions": {"`transaction_length`"}},
    "row_change_without_transaction": {
        "row_changes": {"every row change's `txn_id`"},
        "continuity": {"each archived file's transaction count"}},
    "segment_without_end": {"row_changes": {"segments run 1..k"}},
    "rows_lost_and_mangled": {"row_changes": {"op: expect_column_values_to_be_in_set", "`seq` runs 0..n-1",
                                              "each row change carries", "`before` is present"}},
    "garbage_fields": {"transactions": {"kind: expect_column_values_to_be_in_set",
                                        "outcome: expect_column_values_to_be_in_set",
                                        "end_event: expect_column_values_to_be_in_set",
                                        "end_pos > start_pos", "`synthetic_boundary`", "commit_ts >= first_event_ts",
                                        "event_count: expect_column_values_to_be_between",
                                        "segment_count: expect_column_values_to_be_between",
                                        "`row_count = ", "`transaction_length`"}},
    "null_ids": {"transactions": {"txn_id: expect_column_values_to_not_be_null",
                                  "commit_ts: expect_column_values_to_not_be_null"}},
    "xa_never_ended": {"continuity": {"an XA transaction prepared", "each archived file's transaction count"}},
}


def _matches(failed: dict[str, set[str]], wanted: dict[str, set[str]]) -> list[str]:
    """Wanted failures (prefixes of descriptions) that did not happen."""
    return [f"{suite}: {w}" for suite, ws in wanted.items() for w in ws
            if not any(d.startswith(w) for d in failed.get(suite, set()))]


@pytest.mark.parametrize("variant", sorted(TABLE_VARIANTS))
def test_broken_tables_fail(spark, base, variant):
    root, store, rng = base
    lake = _break_tables(spark, root, variant)
    report = validate(spark, lake, store, rng, xa_max_age=__import__("datetime").timedelta(0))
    assert not report.success
    failed = expectation_ids(report)
    assert _matches(failed, TABLE_VARIANTS[variant]) == [], report.text()
    assert "✗" in report.text()


# -- breaking the binlogs in the archive -----------------------------------------------------

def _reassemble(spark, root: Path, name: str, damage) -> tuple[Path, str]:
    from binlake.spark.job import assemble

    store = _damaged_store(root, name, damage)
    assemble(spark, store, str(root / f"lake_{name}"), "2000-01-01", "2100-01-01", split_bytes=1 << 40)
    return root / f"lake_{name}", store


def _damaged_store(root: Path, name: str, damage) -> str:
    """A copy of the archive with the MySQL binlogs damaged."""
    store_dir = root / f"store_{name}"
    if store_dir.exists():
        shutil.rmtree(store_dir)
    shutil.copytree(root / "store", store_dir)
    damage(store_dir / "mysql" / "binlogs")
    return f"file://{store_dir}"


def _neutralise(path: Path, type_code: int, nth: int = 0) -> int:
    """Turn the nth event of a type into an ignorable one of the same size (CRC fixed): the
    transaction loses it without any offset moving."""
    data = bytearray(path.read_bytes())
    with BinlogReader.open(path) as r:
        frames = [f for f in r.frames() if f.type == type_code]
        target = frames[nth]
        pos, size, crc = target.pos, target.size, r.fde.has_checksum
    data[pos + 4] = c.IGNORABLE_LOG_EVENT
    struct.pack_into("<H", data, pos + 17, struct.unpack_from("<H", data, pos + 17)[0] | c.LOG_EVENT_IGNORABLE_F)
    if crc:
        struct.pack_into("<I", data, pos + size - 4, zlib.crc32(data[pos:pos + size - 4]))
    path.write_bytes(bytes(data))
    return pos


def _commit_query(path: Path) -> int:
    with BinlogReader.open(path) as r:
        for i, f in enumerate(f for f in r.frames() if f.type == c.QUERY_EVENT):
            if bytes(f.body).rstrip(b"\0").endswith(b"COMMIT"):
                return i
    raise AssertionError("no QUERY 'COMMIT' in the test data")


BINLOG_VARIANTS = {
    "dropped_xid": lambda d: _neutralise(d / "binlog.000001", c.XID_EVENT, 3),
    "dropped_commit": lambda d: _neutralise(d / "binlog.000001", c.QUERY_EVENT, _commit_query(d / "binlog.000001")),
    "truncated_mid_transaction": lambda d: (d / "binlog.000002").write_bytes((d / "binlog.000002").read_bytes()[:6000]),
}


@pytest.mark.parametrize("variant", sorted(BINLOG_VARIANTS))
def test_broken_binlogs_fail(spark, base, variant):
    root, store, rng = base
    lake, damaged = _reassemble(spark, root, variant, BINLOG_VARIANTS[variant])
    report = validate(spark, lake, damaged, rng)
    assert not report.success
    failed = expectation_ids(report)
    wanted = {"transactions": {"outcome: expect_column_values_to_not_be_in_set"},
              "anomalies": {"severity: expect_column_values_to_be_in_set"}}
    if variant == "truncated_mid_transaction":
        wanted["continuity"] = {"each archived file's transaction count"}
    assert _matches(failed, wanted) == [], report.text()
    # the summary names the broken transaction's file and offset
    text = report.text()
    assert "binlog.00000" in text and '"start_pos"' in text


def test_warn_only_and_allowed_severities(spark, base):
    root, store, rng = base
    lake, damaged = _reassemble(spark, root, "dropped_xid_2", BINLOG_VARIANTS["dropped_xid"])
    report = validate(spark, lake, damaged, rng, warn_only={"transactions", "anomalies"})
    assert report.success and not all(s.success for s in report.suites)
    assert "failed (warn only)" in report.text()
    report = validate(spark, lake, damaged, rng, warn_only={"transactions"}, allowed_severities=["error"])
    assert report.success and next(s for s in report.suites if s.suite == "anomalies").success


def test_cli_fails_with_a_readable_report(base):
    root, store, rng = base
    lake, damaged = _reassemble(spark_session(), root, "dropped_xid_cli", BINLOG_VARIANTS["dropped_xid"])
    args = ["--start", rng[0], "--end", rng[1], "--master", "local[1]", "--conf", "spark.ui.enabled=false"]
    proc = run_cli("validate", "--warehouse", str(lake), "--store", damaged, *args)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "FAILED" in proc.stdout and "outcome: expect_column_values_to_not_be_in_set" in proc.stdout
    assert "data docs:" in proc.stdout
    ok = run_cli("validate", "--warehouse", str(root / "lake"), *args)  # the store from the summaries
    assert ok.returncode == 0, ok.stdout[-2000:] + ok.stderr[-2000:]
    assert "PASSED" in ok.stdout
    # quiet: no Spark INFO, no progress bars (GX's or Spark's) on stderr, where a task log shows
    # every line as an error; every line left is a warning or worse
    for done in (proc, ok):
        noise = [line for line in done.stderr.splitlines()
                 if " INFO " in line or "Calculating Metrics" in line or "[Stage " in line]
        assert noise == [], noise[:5]


def test_assemble_then_validate_in_one_process(base):
    """`assemble --validate`: the job's summary, then the suites' report over the same range, from
    one process; its exit status is the suites'. The damage (a dropped XID) is what fails them."""
    root, store, rng = base
    damaged = _damaged_store(root, "dropped_xid_one", BINLOG_VARIANTS["dropped_xid"])
    args = ["--start", rng[0], "--end", rng[1], "--master", "local[1]", "--conf", "spark.ui.enabled=false",
            "--split-bytes", str(1 << 40), "--validate"]
    for archive_url, lake, status in ((store, root / "lake_one_ok", 0), (damaged, root / "lake_one_bad", 1)):
        proc = run_cli("assemble", "--store", archive_url, "--warehouse", str(lake), *args)
        assert proc.returncode == status, proc.stdout[-2000:] + proc.stderr[-2000:]
        summary, report = proc.stdout.split("\n", 1)
        counts = json.loads(summary)
        assert counts["record"] == "assemble"
        assert f"(transactions {counts['transactions']}, row_changes {counts['row_changes']}, " in report
        if status:
            assert "FAILED" in report and "outcome: expect_column_values_to_not_be_in_set" in report
            assert counts["by_outcome"]["incomplete"] == 1  # the transaction whose XID was dropped
        else:
            assert "PASSED" in report and "incomplete" not in counts["by_outcome"]
        assert Path(lake / "quality" / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html").is_file()
        # no warning of what binlake set on purpose (its FAIR pools, a thread each; a loopback driver)
        # nor of Spark's internals (a plan's text shortened)
        assert [ln for ln in proc.stderr.splitlines() if any(w in ln for w in (
            "FairSchedulableBuilder", "resolves to a loopback address", "SparkStringUtils"))] == []
    # --validate-as (the Airflow assemble task's): the failing report under the name given, the
    # exit status left to its reader (the validate task), which loads what was printed
    from binlake.errors import BinlakeError
    from binlake.spark.validate import load_report

    lake = root / "lake_one_named"
    args[-1] = "--validate-as"
    proc = run_cli("assemble", "--store", damaged, "--warehouse", str(lake), *args, "run-1.a")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    report = load_report(str(lake), "run-1.a")
    assert not report.success and report.run == "run-1.a" and proc.stdout.split("\n", 1)[1].strip() == report.text()
    assert sorted(p.name for p in (lake / "quality" / "runs").iterdir()) == ["run-1.a"]
    with pytest.raises(BinlakeError, match="runs/run-2/results.json: no such report: the validation run run-2 did not"):
        load_report(str(lake), "run-2")


def test_validation_refuses_what_it_cannot_write_before_the_job(tmp_path):
    """A warehouse on an object store without a local directory for the reports, or a report name
    that is not a plain file name: refused before any Spark work, the warehouse left untouched."""
    args = ["--store", f"file://{tmp_path}/none", "--start", "2026-01-01", "--end", "2026-01-02"]
    proc = run_cli("assemble", *args, "--warehouse", "s3a://lake/w", "--validate")
    assert proc.returncode == 1 and "s3a://lake/w: validation keeps its reports in a local directory: name one " \
        "with --quality DIR" in proc.stderr, proc.stderr[-2000:]
    proc = run_cli("assemble", *args, "--warehouse", str(tmp_path / "w"), "--validate-as", "../up")
    assert proc.returncode == 1 and "'../up': a validation run's name is letters, digits" in proc.stderr
    assert not (tmp_path / "w").exists()


def spark_session():
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


def test_data_docs_in_chromium(spark, base, chromium, tmp_path, caplog):
    """The data docs of a passing and of a failing run, opened in headless Chromium with no
    network: every page loads its CSS and JavaScript from the site itself, each run pointing the
    pages it wrote, found where GX writes them."""
    root, store, rng = base
    caplog.set_level(logging.WARNING, logger="binlake.spark.validate")
    passing = validate(spark, root / "lake", store, rng)
    lake, damaged = _reassemble(spark, root, "dropped_xid_docs", BINLOG_VARIANTS["dropped_xid"])
    failing = validate(spark, lake, damaged, rng)
    for report, status in ((passing, "Succeeded"), (failing, "Failed")):
        site = Path(report.docs).parent
        with chromium.page() as page:
            remote: list[str] = []
            page.route(re.compile(r"^https?://"),
                       lambda route, asked=remote: (asked.append(route.request.url), route.abort()))
            page.goto(Path(report.docs).as_uri(), wait_until="load")
            assert "Great Expectations" in page.title()
            assert "Validation Results" in page.inner_text("body")
            # bootstrap-table draws the list, 10 to a page: one row per validation page on disk
            n = len(list((site / "validations").glob("*/*/*/*.html")))  # GX's layout: suite/run/time/batch
            assert n >= 4 and f"Showing 1 to {min(n, 10)} of {n} rows" in page.inner_text("body")
            # styled: bootstrap's CSS makes the navbar a flex box
            assert page.evaluate("getComputedStyle(document.querySelector('nav.navbar')).display") == "flex"
            for suite in ("transactions", "row_changes", "anomalies", "continuity"):
                html = next((site / "validations" / suite).glob(f"{report.run}_{suite}/*/*.html"))
                page.goto(html.as_uri())
                text = page.inner_text("body")
                assert f"Expectation Suite: {suite}" in text
                result = next(s for s in report.suites if s.suite == suite)
                assert re.search(rf"Status:\s+{'Succeeded' if result.success else 'Failed'}", text)  # an icon between
                assert f"Evaluated Expectations\n\t\n{result.evaluated}" in text
            page.screenshot(path=str(tmp_path / f"{status}.png"), full_page=True)
            assert remote == []  # nothing asked of the network by any page
        assert report.success is (status == "Succeeded")
    assert "not where GX 1.x writes them" not in caplog.text


def test_a_recorded_purge_gap_is_not_a_chain_break(spark, tmp_path):
    """Files purged before they were archived: the archive records the gap (GTID_GAP), so the
    continuity suite does not count it twice; the anomaly itself still fails the anomalies
    suite unless its severity is allowed. Without the record, the server's chain breaks there,
    and the report names the missing file and its GTIDs."""
    from binlake.spark.job import assemble

    src = tmp_path / "binlogs"
    src.mkdir()
    for f in sorted((DATA / "mysql").glob("binlog.*")):
        if f.name != "binlog.000002":  # purged on the server before the archiver saw it
            shutil.copy(f, src / f.name)
    store = f"file://{tmp_path}/store"
    result = archive(DirSource(str(src)), open_store(store), "mysql")
    assert [g["code"] for g in result.gaps] == ["GTID_GAP"]
    rng = ("2000-01-01", "2100-01-01")
    assemble(spark, store, str(tmp_path / "lake"), *rng)

    report = validate(spark, tmp_path / "lake", store, rng)
    failed = expectation_ids(report)
    assert failed["continuity"] == set() and failed["anomalies"], report.text()
    assert validate(spark, tmp_path / "lake", store, rng, allowed_severities=["error"]).success

    manifest = tmp_path / "store" / "mysql" / "manifests" / "binlog.000003.json"
    m = json.loads(manifest.read_text())
    del m["gap"]  # the same hole, not recorded
    manifest.write_text(json.dumps(m))
    report = validate(spark, tmp_path / "lake", store, rng, allowed_severities=["error"])
    assert _matches(expectation_ids(report), {"continuity": {"the server's GTID chain holds"}}) == [], report.text()
    # what binlog.000002 held: binlog.000003's PREVIOUS_GTIDS less binlog.000001's and its own
    lost = json.loads((tmp_path / "store" / "mysql" / "manifests" / "binlog.000001.json").read_text())
    assert "file binlog.000002 is not archived" in report.text() and lost["gtids"].split(":")[0] in report.text()
