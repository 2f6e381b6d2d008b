"""The Spark job on a real local SparkSession, over archives made by `binlake archive` from
real servers' binlogs, in a file:// store and in S3 (moto's server on loopback): its tables
equal `binlake scan --rows` row for row, whatever the split size, the range cutting or the
number of cores."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import boto3
import pyarrow.parquet as pq
import pytest

from binlake.archive.run import archive
from binlake.archive.sources import DirSource, MySQLSource
from binlake.archive.stores import open_store
from binlake.assemble.walk import Options
from binlake.schema.capture import into_history
from tests.support.lake import differences, lake, rows, scanned, table
from tests.support.scanning import DATA, REPO, run_cli, scan

FLAVORS = ("mysql", "mariadb")
DAY = ("2026-11-22", "2026-11-23")


@pytest.fixture(scope="module")
def archives(tmp_path_factory, s3_endpoint):
    """The committed real-server binlogs of both flavors, archived into a file store and into S3."""
    root = tmp_path_factory.mktemp("archives")
    boto3.client("s3").create_bucket(Bucket="assemble")
    stores = {"file": f"file://{root}/store", "s3": "s3://assemble/archive"}
    for url in stores.values():
        for flavor in FLAVORS:
            archive(DirSource(str(DATA / flavor)), open_store(url), flavor)
    return stores


def data_day() -> tuple[str, str]:
    """The UTC day the committed binlogs were written on."""
    out = scan(sorted((DATA / "mysql").glob("binlog.*")))
    day = dt.date.fromisoformat(min(t["commit_ts"] for t in out["transaction"])[:10])
    return day.isoformat(), (day + dt.timedelta(days=1)).isoformat()


def reference(**opts) -> dict:
    out = {"transaction": [], "row_change": [], "anomaly": []}
    for flavor in FLAVORS:
        for kind, recs in scan(sorted((DATA / flavor).glob("binlog.*")), rows=True, source=flavor, **opts).items():
            out[kind] += recs
    return scanned(out)


def run_job(spark, store, warehouse, start, end, **kw):
    from binlake.spark.job import assemble

    opts = Options(**{k: kw.pop(k) for k in ("segment_rows", "segment_bytes") if k in kw})
    return assemble(spark, store, str(warehouse), start, end, opts=opts, **kw)


@pytest.mark.parametrize("where", ["file", "s3"])
def test_tables_equal_the_scan(spark, archives, tmp_path, where):
    start, end = data_day()
    summary = run_job(spark, archives[where], tmp_path / "lake", start, end, split_bytes=2_000)
    got = lake(tmp_path / "lake")
    assert differences(got, reference()) == {}
    assert summary.transactions == sum(got["transactions"].values()) > 100
    assert summary.row_changes == sum(got["row_changes"].values()) > 200
    assert summary.anomalies == 0
    assert summary.splits > 20 and summary.big_transactions > 0 and summary.pieces > summary.big_transactions
    assert summary.sources == sorted(FLAVORS)
    # Delta tables (their logs read by delta-rs) partitioned by the commit's UTC day, each made by
    # one commit that names the run, and a summary beside them
    for name in ("transactions", "row_changes"):
        found = table(tmp_path / "lake", name)
        assert found.metadata().partition_columns == ["commit_date"]
        assert {Path(u).parent.name for u in found.file_uris()} == {f"commit_date={start}"}
        assert found.version() == summary.versions[name] == 1  # 0: the table made, 1: the run's commit
        commit = found.history(1)[0]
        note = json.loads(commit["userMetadata"])["binlake"]
        # appended: the new table's log names no file that could hold the range's rows (its replacement: test_warehouse)
        assert commit["operation"] == "WRITE" and commit["operationParameters"]["mode"] == "Append"
        assert (note["run"], note["start"], note["status"]) == (summary.run, summary.start, "ok")
        assert note["counts"] == {"transactions": summary.transactions, "anomalies": 0}
    saved = json.loads(next((tmp_path / "lake" / "_summaries").glob("assemble_*.json")).read_text())
    assert saved["transactions"] == summary.transactions and saved["start"].startswith(start)
    # the steps and the tables the summary times (the figures themselves are bench/'s, not a test's)
    assert list(saved["step_seconds"]) == ["survey", "schema", "facts", "tables", "write"]
    assert sorted(saved["write_seconds"]) == ["anomalies", "row_changes", "transactions"]
    assert not list((tmp_path / "lake" / "_staging").glob("*"))
    # the images are written without a dictionary (nearly all distinct), the row changes' ids with
    # one (in the biggest file: Parquet drops a dictionary that saves nothing, as in a file of a few
    # rows); the transactions' ids, all distinct, without, their other texts with one
    encodings = {table: _encodings(tmp_path / "lake" / table) for table in ("row_changes", "transactions")}
    assert not any("DICTIONARY" in e for e in encodings["row_changes"]["after"])
    assert any("DICTIONARY" in e for e in encodings["row_changes"]["txn_id"]), encodings
    assert not any("DICTIONARY" in e for e in encodings["transactions"]["txn_id"] + encodings["transactions"]["gtid"])
    assert any("DICTIONARY" in e for e in encodings["transactions"]["binlog_file"]), encodings


def _encodings(table: Path) -> dict[str, tuple]:
    """The encodings of each column of the biggest Parquet file of a table."""
    biggest = max(table.glob("commit_date=*/*.parquet"), key=lambda p: p.stat().st_size)
    meta = pq.ParquetFile(biggest).metadata.row_group(0)
    return {meta.column(i).path_in_schema: meta.column(i).encodings for i in range(meta.num_columns)}


def test_a_range_smaller_than_a_split_is_read_in_the_driver_alike(spark, archives, tmp_path, monkeypatch):
    # The same day at the default split size is one split's work: the driver runs the tasks'
    # functions itself. Its tables are still the scan's (the oracle above); at 2 KB splits the
    # same range runs on the executors (test_tables_equal_the_scan). Batches of 5 rows, which Spark
    # takes a partition each where they are more than its local-relation bytes (as an hour's are):
    # many more batches than cores.
    import binlake.spark.passes
    from binlake.spark.settings import session_settings

    monkeypatch.setattr(binlake.spark.passes, "BATCH", 5)
    start, end = data_day()
    with session_settings(spark, {"spark.sql.execution.arrow.localRelationThreshold": "0"}):
        summary = run_job(spark, archives["s3"], tmp_path / "lake", start, end)
    assert summary.in_driver and summary.splits > 1
    assert differences(lake(tmp_path / "lake"), reference()) == {}
    # Handed to Spark a core's share each: at most a file a core per day, whatever the batches.
    days = [Path(uri).parent.name for uri in table(tmp_path / "lake", "row_changes").file_uris()]
    assert 0 < max(days.count(day) for day in days) <= spark.sparkContext.defaultParallelism
    small = run_job(spark, archives["s3"], tmp_path / "small", start, end, split_bytes=2_000)
    assert not small.in_driver
    assert json.loads(next((tmp_path / "lake" / "_summaries").glob("assemble_*.json")).read_text())["in_driver"]


def test_only_a_range_read_in_the_driver_gets_a_short_jvm(archives):
    # `binlake assemble` plans before it starts a local session: the committed day is smaller than
    # a split (read in the driver: C1 only); at 2 KB splits, or with a cluster master, the JVM
    # is left alone; the user's own --conf of the option wins.
    from binlake.cli import build_parser
    from binlake.spark import _session_conf
    from binlake.spark.settings import SHORT_JVM
    from binlake.splits.plan import plan

    start, end = data_day()
    base = ["assemble", "--store", archives["file"], "--warehouse", "w", "--start", start, "--end", end]
    def conf(*more: str) -> dict[str, str]:
        args = build_parser().parse_args([*base, *more])
        return _session_conf(args, plan(args.store, args.sources, args.start, args.end, args.split_bytes))

    assert conf("--master", "local[2]") == SHORT_JVM
    assert conf("--master", "local[2]", "--split-bytes", "2000") == {}
    assert conf("--master", "spark://127.0.0.1:7077") == {}
    mine = "spark.driver.extraJavaOptions=-Xss4m"
    assert conf("--master", "local[2]", "--conf", mine) == {"spark.driver.extraJavaOptions": "-Xss4m"}


def test_validating_a_range_the_driver_would_assemble_gets_a_short_jvm(archives, tmp_path):
    # `binlake validate` on its own plans the range from the archive (--store, else the one the
    # warehouse's summaries name) before it starts a local session: the committed day, which the
    # driver would assemble itself (settings.in_driver), gets C1 only; a cluster master, a range
    # that cannot be planned (the suites say why) keep the JVM as it is; the user's --conf wins.
    from binlake.cli import build_parser
    from binlake.spark import _validate_conf
    from binlake.spark.settings import SHORT_JVM

    start, end = data_day()
    summaries = tmp_path / "w" / "_summaries"
    summaries.mkdir(parents=True)
    (summaries / "assemble_1.json").write_text(json.dumps({"store": archives["file"]}))

    def conf(*more: str) -> dict[str, str]:
        return _validate_conf(build_parser().parse_args(["validate", "--warehouse", str(tmp_path / "w"), *more]))

    day = ["--start", start, "--end", end]
    assert conf(*day, "--master", "local[2]") == SHORT_JVM  # the store from the summaries
    assert conf(*day, "--master", "local[2]", "--store", archives["s3"]) == SHORT_JVM
    assert conf(*day, "--master", "spark://127.0.0.1:7077") == {}
    assert conf(*day, "--master", "local[2]", "--source", "nope") == {}  # no such source: not planned
    mine = "spark.driver.extraJavaOptions=-Xss4m"
    assert conf(*day, "--master", "local[2]", "--conf", mine) == {"spark.driver.extraJavaOptions": "-Xss4m"}


def test_applying_a_range_of_few_transactions_gets_a_short_jvm(archives, monkeypatch):
    # `binlake tables` plans the range at APPLY_SPLIT_BYTES before it starts a local session and
    # gives C1 only where the range's transactions come to no more than APPLY_SHORT_BYTES
    # (settings.for_apply): the committed day at exactly its planned bytes gets it, one byte fewer
    # does not; a cluster master is left alone; the user's --conf wins.
    from binlake.cli import build_parser
    from binlake.spark import _apply_conf, settings
    from binlake.spark.settings import APPLY_SPLIT_BYTES, SHORT_APPLY, SHORT_JVM
    from binlake.splits.plan import plan

    start, end = data_day()
    base = ["tables", "--store", archives["file"], "--warehouse", "w", "--start", start, "--end", end]

    def conf(*more: str) -> dict[str, str]:
        return _apply_conf(build_parser().parse_args([*base, *more]))

    planned = plan(archives["file"], None, start, end, APPLY_SPLIT_BYTES).bytes
    assert planned > 0
    monkeypatch.setattr(settings, "APPLY_SHORT_BYTES", planned)
    assert conf("--master", "local[2]") == {**SHORT_JVM, SHORT_APPLY: "true"}
    assert conf("--master", "spark://127.0.0.1:7077") == {}
    mine = "spark.driver.extraJavaOptions=-Xss4m"
    assert conf("--master", "local[2]", "--conf", mine) == {"spark.driver.extraJavaOptions": "-Xss4m",
                                                            SHORT_APPLY: "true"}
    monkeypatch.undo()
    monkeypatch.setattr(settings, "APPLY_SHORT_BYTES", planned - 1)
    assert conf("--master", "local[2]") == {}


def test_a_short_applys_session_plans_its_queries_once_in_a_partition_a_core(spark):
    # what for_apply's mark gives the apply's session (settings.short_apply_settings): nothing
    # unmarked; marked, no adaptive execution and a shuffle partition per core of the master, but
    # for a setting the session was started with (the tests' session sets its shuffle partitions)
    from binlake.spark.settings import SHORT_APPLY, session_settings, short_apply_settings

    assert short_apply_settings(spark) == {}
    cores = str(spark.sparkContext.defaultParallelism)
    given = spark.sparkContext.getConf()
    with session_settings(spark, {SHORT_APPLY: "true"}):
        got = short_apply_settings(spark)
    assert got["spark.sql.adaptive.enabled"] == "false"
    assert not given.contains("spark.sql.adaptive.enabled")
    partitions = "spark.sql.shuffle.partitions"
    assert got.get(partitions) == (None if given.contains(partitions) else cores)


def test_a_short_apply_over_small_tables_runs_its_queries_interpreted(spark):
    # settings.interpreted_settings: marked short, and every table at most INTERPRETED_ROWS
    # versions (none before a first commit): Spark's expressions interpreted; a table not counted
    # (None), a bigger one, or an unmarked session: as Spark compiles them
    from binlake.spark import settings as st

    assert st.interpreted_settings(spark, [0]) == {}
    with st.session_settings(spark, {st.SHORT_APPLY: "true"}):
        assert st.interpreted_settings(spark, [0, 12, st.INTERPRETED_ROWS]) == {st.FACTORY_MODE: "NO_CODEGEN"}
        assert st.interpreted_settings(spark, []) == {st.FACTORY_MODE: "NO_CODEGEN"}
        assert st.interpreted_settings(spark, [0, None]) == {}
        assert st.interpreted_settings(spark, [st.INTERPRETED_ROWS + 1]) == {}


def test_hourly_runs_equal_one_daily_run_and_reruns_change_nothing(spark, archives, tmp_path):
    start, end = data_day()
    store = archives["file"]
    run_job(spark, store, tmp_path / "daily", start, end)
    daily = lake(tmp_path / "daily")

    hours = [f"{start}T{h:02d}:00:00Z" for h in range(24)] + [end]
    intervals = list(zip(hours, hours[1:], strict=False))
    random.Random(7).shuffle(intervals)  # a backfill runs intervals in any order
    for lo, hi in intervals:
        run_job(spark, store, tmp_path / "hourly", lo, hi)
    assert lake(tmp_path / "hourly") == daily

    # ranges that cut through the data, so several runs write into one partition
    times = sorted({r["commit_ts"].isoformat() for r in rows(tmp_path / "daily", "transactions")})
    cuts = [start, *sorted({times[len(times) // 4], times[len(times) // 2], times[-1]}), end]
    for lo, hi in zip(cuts, cuts[1:], strict=False):
        run_job(spark, store, tmp_path / "cut", lo, hi)
    assert lake(tmp_path / "cut") == daily

    # a rerun of one of them replaces the files that hold its rows, and only those: the day's
    # other files are left as they are (their commit times read from the files themselves)
    before = _data_files(tmp_path / "cut")
    lo, hi = (dt.datetime.fromisoformat(t) for t in cuts[1:3])
    held = {f for f, (_, times_in) in before.items() if any(lo <= t < hi for t in times_in)}
    assert held and all(lo <= t < hi for f in held for t in before[f][1])  # a run's files hold its range only
    run_job(spark, store, tmp_path / "cut", cuts[1], cuts[2])
    after = _data_files(tmp_path / "cut")
    assert {f: v for f, v in after.items() if f in before} == {f: v for f, v in before.items() if f not in held}
    assert lake(tmp_path / "cut") == daily

    # rerunning the hour with the data, then the day, changes nothing
    hour = dt.datetime.fromisoformat(times[0]).replace(minute=0, second=0, microsecond=0)
    run_job(spark, store, tmp_path / "daily", hour.isoformat(), (hour + dt.timedelta(hours=1)).isoformat())
    run_job(spark, store, tmp_path / "daily", start, end)
    assert lake(tmp_path / "daily") == daily


def _data_files(warehouse: Path) -> dict[str, tuple[int, list]]:
    """Every data file of the tables' current versions (their Delta logs, read by delta-rs): its
    modification time and its rows' commit times."""
    out = {}
    for name in ("transactions", "row_changes", "anomalies"):
        found = table(warehouse, name)
        for uri in found.file_uris() if found is not None else []:
            f = Path(uri.removeprefix("file://"))
            out[str(f.relative_to(warehouse))] = (f.stat().st_mtime_ns, pq.read_table(f, columns=["commit_ts"])
                                                  .column(0).to_pylist())
    return out


def test_one_core_and_spark_submit_agree_with_two_cores(spark, archives, tmp_path):
    start, end = data_day()
    run_job(spark, archives["file"], tmp_path / "two", start, end, split_bytes=3_000)
    import pyspark

    submit = Path(sys.executable).parent / "spark-submit"
    env = {**os.environ, "SPARK_HOME": os.path.dirname(pyspark.__file__), "PYSPARK_PYTHON": sys.executable}
    from binlake.spark.jars import classpath

    proc = subprocess.run([str(submit), "--master", "local[1]", "--conf", "spark.ui.enabled=false",
                           "--driver-class-path", ":".join(classpath()),
                           str(REPO / "spark_jobs" / "assemble_transactions.py"),
                           "--store", archives["file"],
                           "--warehouse", str(tmp_path / "one"), "--start", start, "--end", end,
                           "--split-bytes", "3000"], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(next(x for x in proc.stdout.splitlines() if x.startswith('{"record":"assemble"')))
    assert summary["spark_master"] == "local[1]" and summary["transactions"] > 100
    assert lake(tmp_path / "one") == lake(tmp_path / "two")


def test_a_corrupt_file_gives_anomalies_and_the_healthy_files(archives, spark_submit, tmp_path):
    """Through the command line: the job does not fail unless asked to."""
    start, end = data_day()
    store = tmp_path / "store"
    shutil.copytree(Path(archives["file"][len("file://"):]), store)
    obj = store / "mysql" / "binlogs" / "binlog.000001"
    data = bytearray(obj.read_bytes())
    data[20_000] ^= 0xFF  # inside a transaction's rows
    obj.write_bytes(bytes(data))

    args = ["assemble", "--store", f"file://{store}", "--warehouse", str(tmp_path / "lake"), "--start", start,
            "--end", end, "--master", "local[2]", "--conf", "spark.ui.enabled=false"]
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = lake(tmp_path / "lake")
    out = {"transaction": [], "row_change": [], "anomaly": []}
    for flavor in FLAVORS:
        files = sorted((store / flavor / "binlogs").glob("binlog.*"))
        for kind, recs in scan(files, rows=True, source=flavor).items():
            out[kind] += recs
    assert differences(got, scanned(out)) == {}
    anomalies = list(rows(tmp_path / "lake", "anomalies"))
    assert [(a["binlog_file"], a["code"]) for a in anomalies] == [("binlog.000001", "CHECKSUM_MISMATCH")]
    assert anomalies[0]["start_pos"] <= 20_000 < anomalies[0]["end_pos"]
    assert f"binlog.000001:{anomalies[0]['start_pos']}: CRC32 mismatch" in anomalies[0]["detail"]
    healthy = {t["binlog_file"] for t in rows(tmp_path / "lake", "transactions") if t["source"] == "mysql"}
    assert healthy >= {"binlog.000002", "binlog.000005"}

    failed = run_cli(*args, "--fail-on-anomaly")
    assert failed.returncode == 1
    assert "1 anomalies" in failed.stderr and "CHECKSUM_MISMATCH 1" in failed.stderr
    assert lake(tmp_path / "lake") == got  # written all the same, the anomaly with them


# -- a live server: a 200,000-row transaction, and an XA transaction across files ------------

BIG = 200_000


@pytest.fixture(scope="module")
def live_archive(mysql_factory, s3_endpoint):
    server = mysql_factory()  # the module's own: its binary logs are reset
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("RESET BINARY LOGS AND GTIDS")
        cur.execute("DROP DATABASE IF EXISTS asm")
        cur.execute("CREATE DATABASE asm")
        cur.execute("CREATE TABLE asm.big (id INT PRIMARY KEY, v VARCHAR(40), n DOUBLE)")
        cur.execute("XA START 'cross-file'")
        cur.execute("INSERT INTO asm.big VALUES (0, 'prepared', 0)")
        cur.execute("XA END 'cross-file'")
        cur.execute("XA PREPARE 'cross-file'")
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("XA COMMIT 'cross-file'")
        cur.execute("SET SESSION cte_max_recursion_depth = 1000000")
        cur.execute("BEGIN")
        cur.execute(f"""INSERT INTO asm.big WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s
                        WHERE i < {BIG}) SELECT i, CONCAT('row-', i), i * 1.5 FROM s""")
        cur.execute("COMMIT")
        cur.execute("BEGIN")  # several statements: cuts at statement boundaries, ROWS_QUERY carried over
        cur.execute("UPDATE asm.big SET n = n + 1 WHERE id <= 30000")
        cur.execute("DELETE FROM asm.big WHERE id > 170000")
        cur.execute("INSERT INTO asm.big VALUES (-1, 'last', -1)")
        cur.execute("COMMIT")
        cur.execute("FLUSH BINARY LOGS")
    boto3.client("s3").create_bucket(Bucket="live")
    store = "s3://live/archive"
    # with its schema history, as `binlake archive` takes it of a live source
    archive(MySQLSource(f"mysql://root@127.0.0.1:{server.port}"), open_store(store), "db1", capture=into_history)
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        names = [r[0] for r in cur.fetchall()][:-1]
        cur.execute("SELECT UTC_DATE(), UTC_DATE() + INTERVAL 1 DAY")
        day = [d.isoformat() for d in cur.fetchone()]
    return store, [server.binlog_dir / n for n in names], day


def test_big_transactions_cut_into_pieces_number_rows_as_one_reader(spark, live_archive, tmp_path):
    store, files, (start, end) = live_archive
    seg = {"segment_rows": 30_000}
    small = run_job(spark, store, tmp_path / "small", start, end, split_bytes=512 << 10, **seg)
    huge = run_job(spark, store, tmp_path / "huge", start, end, split_bytes=1 << 40, **seg)
    assert small.big_transactions == 2 and small.pieces > 8
    assert huge.big_transactions == 0
    got = lake(tmp_path / "small")
    assert got == lake(tmp_path / "huge")
    want = scan(files, rows=True, source="db1", **seg)
    assert differences(got, scanned(want)) == {}

    txns = {t["txn_id"]: t for t in rows(tmp_path / "small", "transactions")}
    big = max(txns.values(), key=lambda t: t["row_count"])
    assert big["rows_inserted"] == BIG and big["segment_count"] == 7  # 200,000 rows by 30,000
    seqs = sorted((r["seq"], r["segment_id"], r["end_segment"]) for r in rows(tmp_path / "small", "row_changes")
                  if r["txn_id"] == big["txn_id"])
    assert [s for s, _, _ in seqs] == list(range(BIG))
    assert {s for _, s, _ in seqs} == set(range(1, 8))
    assert all(end == (segment == 7) for _, segment, end in seqs)
    mixed = next(t for t in txns.values() if t["rows_deleted"])
    assert (mixed["rows_updated"], mixed["rows_deleted"], mixed["rows_inserted"]) == (30_001, 30_000, 1)  # ids 0..30000

    # the XA prepare and its commit are in different files, linked by the XA xid
    prepare = next(t for t in txns.values() if t["kind"] == "xa_prepare")
    commit = next(t for t in txns.values() if t["kind"] == "xa_commit")
    assert prepare["xa_xid"] == commit["xa_xid"] == "X'63726f73732d66696c65',X'',1"
    assert prepare["binlog_file"] != commit["binlog_file"]


def test_a_quiet_range_of_a_source_with_a_history_assembles_to_empty_tables(spark, live_archive, tmp_path):
    # The live archive was made by `binlake archive` of a live server: the store holds its schema
    # history. A range before the server's first write (it was reset, then written today: its own
    # UTC_DATE) and one in the future hold none of its transactions: the tables of each range are
    # empty, nothing else is touched, and the job says so in its summary.
    from binlake.schema.history import snapshots

    store, files, (start, end) = live_archive
    assert snapshots(open_store(store), "db1")  # a history, as every live source has
    today = dt.date.fromisoformat(start)
    ranges = [(today - dt.timedelta(days=2), today - dt.timedelta(days=1)),
              (today + dt.timedelta(days=2), today + dt.timedelta(days=3))]
    for lo, hi in ranges:
        summary = run_job(spark, store, tmp_path / "lake", f"{lo.isoformat()}T00:00:00Z", f"{hi.isoformat()}T00:00:00Z")
        assert (summary.files, summary.transactions, summary.row_changes, summary.anomalies) == (0, 0, 0, 0)
        assert summary.schema_states == 0
    assert sum(lake(tmp_path / "lake")["transactions"].values()) == 0
    # the day the server wrote, beside them, is whole: its tables are the scan's of the server's files
    run_job(spark, store, tmp_path / "lake", start, end)
    assert differences(lake(tmp_path / "lake"), scanned(scan(files, rows=True, source="db1"))) == {}


def test_a_standalone_cluster_agrees_with_local(spark, archives, tmp_path):
    """`--master spark://…`: executors in their own JVMs on a real standalone cluster."""
    from tests.conftest import require
    from tests.support import spark_cluster

    start, end = data_day()
    try:
        cluster = spark_cluster.start(tmp_path)
    except RuntimeError as e:
        require(False, f"a Spark standalone cluster ({e})")
    try:
        proc = run_cli("assemble", "--store", archives["file"], "--warehouse", str(tmp_path / "cluster"),
                       "--start", start, "--end", end, "--split-bytes", "3000", "--master", cluster.url,
                       "--conf", f"spark.pyspark.python={sys.executable}", "--conf", "spark.ui.enabled=false",
                       "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1")
    finally:
        cluster.stop()
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["spark_master"] == cluster.url and summary["application_id"].startswith("app-")
    run_job(spark, archives["file"], tmp_path / "local", start, end, split_bytes=3_000)
    assert lake(tmp_path / "cluster") == lake(tmp_path / "local")


def test_a_session_spark_refuses_is_one_clear_line(spark_submit, archives, tmp_path):
    # Spark wants a heap of at least 450 MiB: the user is told so, without a Java trace
    proc = run_cli("assemble", "--store", archives["file"], "--warehouse", str(tmp_path / "lake"),
                   "--start", "2026-01-01", "--end", "2026-01-02", "--master", "local[1]",
                   "--conf", "spark.driver.memory=300m")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].startswith("binlake: cannot start Spark (master local[1]): "
                                                           "[INVALID_DRIVER_MEMORY]"), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr  # Spark logs its Java trace itself; Python adds none


def test_a_clusters_executors_run_their_workers_python(monkeypatch):
    # The driver's interpreter is given to executors only where they run beside it (a local
    # master): a spark:// worker runs its own Python (the compose stack's Spark image has none at
    # the Airflow image's path), and spark-submit's master (None here) is the submitter's to set.
    import sys

    from binlake.spark.job import executor_python

    for master, want in (("spark://spark-master:7077", None), (None, None), ("local[2]", sys.executable)):
        monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
        executor_python(master)
        assert os.environ.get("PYSPARK_PYTHON") == want, master
