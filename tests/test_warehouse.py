"""The warehouse as Delta tables, on a local path and on the S3 endpoint (s3a://, moto's server on
loopback): a second engine (delta-rs) reads what Spark reads; one writer at a time; a run killed
with SIGKILL at any point of its write leaves each table as it was, and a reader polling meanwhile
never sees a range twice or missing; time travel and upkeep; a Parquet warehouse of the previous
release upgraded in place; a failed interval marked in its commits. The oracle is `binlake scan`
of the same files (tests.support.lake), or the rows as they were before."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import boto3
import pytest

from binlake.archive.run import archive
from binlake.archive.sources import DirSource
from binlake.archive.stores import open_store
from binlake.spark.writer import PREFIX, WriterLease, warehouse_store
from tests.support.lake import FIELDS, differences, digests, lake, rows, scanned, table
from tests.support.scanning import DATA, run_cli, scan

FLAVORS = ("mysql", "mariadb")
BUCKET = "lake"
DEADLINE = 600  # seconds for a job


@pytest.fixture(scope="module")
def bucket(s3_endpoint) -> str:
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    return BUCKET


def _places(where: str, tmp_path: Path, flavors=FLAVORS) -> tuple[str, str]:
    """A new store holding the flavors' committed binlogs and a new warehouse, local or on S3."""
    key = uuid.uuid4().hex[:8]
    store = f"file://{tmp_path}/store" if where == "local" else f"s3://{BUCKET}/{key}/archive"
    warehouse = str(tmp_path / "lake") if where == "local" else f"s3a://{BUCKET}/{key}/lake"
    for flavor in flavors:
        archive(DirSource(str(DATA / flavor)), open_store(store), flavor)
    return store, warehouse


def _day() -> tuple[str, str]:
    from tests.test_assemble import data_day

    return data_day()


def _reference(flavors=FLAVORS) -> dict[str, Counter]:
    """`binlake scan --rows` of the flavors' files: the tables' oracle."""
    out: dict[str, list[dict]] = {"transaction": [], "row_change": [], "anomaly": []}
    for flavor in flavors:
        for kind, recs in scan(sorted((DATA / flavor).glob("binlog.*")), rows=True, source=flavor).items():
            out[kind] += recs
    return scanned(out)


def _assemble(store: str, warehouse: str, start: str, end: str, *more: str) -> list[str]:
    return ["assemble", "--store", store, "--warehouse", warehouse, "--start", start, "--end", end,
            "--conf", "spark.ui.enabled=false", *more]


def _start(args: list[str], log: Path) -> subprocess.Popen:
    """`binlake …` as a user starts it, in a process group of its own (the JVM is its child)."""
    out = log.open("w")
    return subprocess.Popen([sys.executable, "-m", "binlake.cli", *args], stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True)


# -- a second engine ------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["local", "s3"])
def test_spark_and_delta_rs_read_the_tables_as_the_scan_gives_them(spark, bucket, tmp_path, where):
    from binlake.spark.job import assemble
    from binlake.spark.warehouse import Warehouse

    store, warehouse = _places(where, tmp_path)
    start, end = _day()
    summary = assemble(spark, store, warehouse, start, end)
    assert summary.status == "ok" and summary.transactions > 100
    by_spark = {name: digests(Warehouse(spark, warehouse).read(name).toArrow().to_pylist(), name) for name in FIELDS}
    by_delta_rs = lake(warehouse)
    assert differences(by_delta_rs, _reference()) == {}  # delta-rs: the scan's rows
    assert by_spark == by_delta_rs  # Spark's delta reader: the same
    # the version each table's commit made, as both engines see it
    for name in ("transactions", "row_changes"):
        assert table(warehouse, name).version() == summary.versions[name] == Warehouse(spark, warehouse).version(name)
    # Great Expectations reads the same tables, at the versions the run wrote; its reports in a local
    # directory (an s3a:// warehouse has none of its own)
    from binlake.spark.validate import validate

    report = validate(spark, warehouse, start, end, store=store, quality=str(tmp_path / "quality"),
                      versions=summary.versions)
    assert report.success, report.text()
    assert report.counts == {"transactions": summary.transactions, "row_changes": summary.row_changes,
                             "anomalies": 0} and report.versions == summary.versions
    assert (tmp_path / "quality" / "runs" / report.run / "results.json").is_file()


# -- one writer at a time ---------------------------------------------------------------------

@pytest.mark.parametrize("where", ["local", "s3"])
def test_a_job_beside_a_live_writer_fails_clearly_and_its_retry_succeeds(spark, spark_submit, bucket, tmp_path,
                                                                         where):
    from binlake.spark.job import assemble

    store, warehouse = _places(where, tmp_path)
    start, end = _day()
    # this process holds the warehouse's lease, as a running job does
    with WriterLease(warehouse, "held-by-the-test", "a test's hold"):
        refused = run_cli(*_assemble(store, warehouse, start, end, "--master", "local[1]"))
    assert refused.returncode == 1
    assert "another job is writing it (a test's hold" in refused.stderr.strip().splitlines()[-1], refused.stderr[-2000:]
    assert table(warehouse, "transactions") is None  # nothing written
    assert assemble(spark, store, warehouse, start, end).status == "ok"  # the retry, in the tests' session
    assert differences(lake(warehouse), _reference()) == {}
    assert warehouse_store(warehouse).keys(PREFIX) == []  # its lease released


@pytest.mark.parametrize("where", ["local", "s3"])
def test_two_runs_at_once_over_overlapping_ranges_give_every_row_once(spark, spark_submit, bucket, tmp_path, where):
    from binlake.spark.job import assemble

    store, warehouse = _places(where, tmp_path)
    start, end = _day()
    times = sorted(t["commit_ts"] for t in _reference_transactions())
    a_end, b_start = times[2 * len(times) // 3], times[len(times) // 3]  # [start, a_end) meets [b_start, end)
    ranges = {"a": (start, a_end), "b": (b_start, end)}
    procs = {k: _start(_assemble(store, warehouse, lo, hi, "--master", "local[1]", "--split-bytes", "3000"),
                       tmp_path / f"{k}.log") for k, (lo, hi) in ranges.items()}
    status = {k: p.wait(timeout=DEADLINE) for k, p in procs.items()}
    logs = {k: (tmp_path / f"{k}.log").read_text() for k in procs}
    for k, code in status.items():
        if code != 0:  # refused: the other held the warehouse (one writer at a time), said so
            assert "another job is writing it" in logs[k], logs[k][-3000:]
            # its retry, alone now, in the tests' session (a JVM less to start)
            assert assemble(spark, store, warehouse, *ranges[k]).status == "ok"
    assert differences(lake(warehouse), _reference()) == {}  # every row once: the scan's
    # each run that wrote made one commit per table, naming its range
    notes = [json.loads(c["userMetadata"])["binlake"] for c in table(warehouse, "transactions").history()
             if c.get("userMetadata")]
    assert sorted((n["start"], n["end"]) for n in notes) == sorted(
        (_iso(lo), _iso(hi)) for lo, hi in ranges.values())


@pytest.mark.parametrize("where", ["local", "s3"])
def test_a_range_no_file_can_hold_is_appended_and_one_that_may_is_replaced(spark, bucket, tmp_path, where):
    from binlake.spark.job import assemble
    from binlake.spark.warehouse import RunRange, Warehouse

    store, warehouse = _places(where, tmp_path)
    start, end = _day()
    # The day cut between two of its transactions (the scan's commit times) more than Delta's
    # statistics' millisecond apart: the first half's files cannot hold the second half's rows.
    times = sorted({_iso(t["commit_ts"]) for t in _reference_transactions()})
    gap = dt.timedelta(milliseconds=2)
    cut = next(b for a, b in zip(times[len(times) // 2:], times[len(times) // 2 + 1:], strict=False)
               if _instant(b) - _instant(a) > gap)
    runs = [assemble(spark, store, warehouse, *rng).run for rng in ((start, cut), (cut, end), (start, end))]
    # a new table and the next range: appended; the whole day again: its files replaced. One commit each.
    for name in ("transactions", "row_changes"):
        commits = [(json.loads(c["userMetadata"])["binlake"]["run"], c["operationParameters"]["mode"])
                   for c in reversed(table(warehouse, name).history()) if c.get("userMetadata")]
        assert commits == [(runs[0], "Append"), (runs[1], "Append"), (runs[2], "Overwrite")], name
    assert differences(lake(warehouse), _reference()) == {}  # every row once: the scan's
    # what the log says of other ranges: another source's rows on the same day, the next day's
    tables = Warehouse(spark, warehouse)
    day_after = (_instant(end) + dt.timedelta(days=1)).isoformat()
    assert not tables.holds_none("row_changes", RunRange(_iso(start), _iso(end), ("mysql",)))
    assert tables.holds_none("row_changes", RunRange(_iso(start), _iso(end), ("another-server",)))
    assert tables.holds_none("row_changes", RunRange(_iso(end), day_after))
    assert not tables.holds_none("row_changes", RunRange(cut, (_instant(cut) + gap).isoformat()))
    # the history binlake reads with delta-rs is Delta's own DESCRIBE HISTORY (whose times are the
    # log files' modification times, in whole seconds on a local disk, where delta-rs gives the commit's)
    for name in ("transactions", "row_changes"):
        described = spark.sql(f"DESCRIBE HISTORY delta.`{tables.path(name)}`").collect()
        read = tables.history(name)
        assert [(c.version, c.operation, c.metrics, c.note and c.note.run) for c in read] == \
            [(r["version"], r["operation"], dict(r["operationMetrics"] or {}),
              r["userMetadata"] and json.loads(r["userMetadata"])["binlake"]["run"]) for r in described]
        assert all(abs(c.timestamp - r["timestamp"].astimezone(dt.UTC)) <= dt.timedelta(seconds=1)
                   for c, r in zip(read, described, strict=True))


def _instant(t: str) -> dt.datetime:
    return dt.datetime.fromisoformat(_iso(t))


def _reference_transactions() -> list[dict]:
    out = []
    for flavor in FLAVORS:
        out += scan(sorted((DATA / flavor).glob("binlog.*")), source=flavor)["transaction"]
    return out


def _iso(t: str) -> str:
    from binlake.splits.times import parse_time

    return parse_time(t)


# -- SIGKILL at every point of a run's write --------------------------------------------------

class Reader(threading.Thread):
    """Reads the tables' current versions with delta-rs, over and over, until stopped: each read of
    a table must be one of the states it may be in (`allowed`: digests per table)."""

    def __init__(self, warehouse: str, allowed: dict[str, list[Counter]]) -> None:
        super().__init__(daemon=True)
        self.warehouse, self.allowed = warehouse, allowed
        self.stop = threading.Event()
        self.reads = 0
        self.wrong: list[str] = []
        self.versions: set[tuple[str, int]] = set()
        # A version's files are immutable: a state seen before (the same version and files) is not
        # read and hashed again, which would take the cores the job needs for the whole run.
        self.seen: dict[tuple[str, int, frozenset[str]], Counter] = {}

    def run(self) -> None:
        while not self.stop.is_set():
            for name in ("transactions", "row_changes"):
                found = table(self.warehouse, name)
                if found is None:
                    continue
                state = (name, found.version(), frozenset(found.file_uris()))
                if state not in self.seen:
                    self.seen[state] = digests((r for b in found.to_pyarrow_dataset().to_batches()
                                                for r in b.to_pylist()), name)
                got = self.seen[state]
                self.reads += 1
                self.versions.add((name, found.version()))
                if got not in self.allowed[name]:
                    self.wrong.append(f"{name} v{found.version()}: {sum(got.values())} rows, none of the states")
            self.stop.wait(0.2)  # polled: the job needs the cores


def _kill_when(proc: subprocess.Popen, happened, what: str) -> None:
    """SIGKILL the job's process group (Python and its JVM) as soon as `happened()`; it must not end first."""
    deadline = time.monotonic() + DEADLINE
    while not happened():
        assert proc.poll() is None, f"the job ended before {what}"
        assert time.monotonic() < deadline, f"no {what} in {DEADLINE} s"
        # polled: the job needs the cores. Its windows, idle, local[1]: the first data file 4.4 s
        # before the row_changes commit, which comes 1.3 s before the job's end
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)


@pytest.mark.parametrize("where", ["local", "s3"])
def test_a_run_killed_anywhere_leaves_each_table_as_it_was(spark, spark_submit, bucket, tmp_path, where):
    from binlake.spark.job import assemble

    # Before: the warehouse holds the day of the MySQL files only. The run that is killed has the
    # MariaDB files archived too: each table must read as before (MySQL's rows) or after (both).
    # The runs that are not killed run in the tests' session: a JVM less to start for each.
    store, warehouse = _places(where, tmp_path, flavors=("mysql",))
    start, end = _day()
    assert assemble(spark, store, warehouse, start, end).status == "ok"
    before, after = _reference(("mysql",)), _reference()
    assert differences(lake(warehouse), before) == {}
    archive(DirSource(str(DATA / "mariadb")), open_store(store), "mariadb")

    files = warehouse_store(warehouse)
    logs = {name: set(files.keys(f"{name}/_delta_log")) for name in FIELDS}
    def data_files() -> set[str]:
        return {k for k in files.keys("row_changes") if "/commit_date=" in k}

    data = data_files()
    reader = Reader(warehouse, {name: [before[name], after[name]] for name in FIELDS})
    reader.start()
    points = {
        # the job holds the lease and reads the archive: no data file yet
        "before the data files": lambda: bool(files.keys(PREFIX)),
        # a task has written a data file of row_changes, which no commit names yet (the small
        # tables, written at once beside it, may have committed: docs/warehouse.md)
        "while writing the data files": lambda: bool(data_files() - data),
        # row_changes committed: the other two tables' commits may be still to come
        "at the commit": lambda: bool(set(files.keys("row_changes/_delta_log")) - logs["row_changes"]),
    }
    try:
        for what, happened in points.items():
            job = _start(_assemble(store, warehouse, start, end, "--master", "local[1]", "--split-bytes", "3000"),
                         tmp_path / "killed.log")
            _kill_when(job, happened, what)
            now = lake(warehouse)
            for name in FIELDS:
                # each table as it was, or (a table whose commit came before the kill) as it is after
                assert now[name] in (before[name], after[name]), (what, name)
            if what == "before the data files":
                assert now == before, what
            if what != "at the commit":  # no row change of the run is in a version yet
                assert now["row_changes"] == before["row_changes"], what
            assert files.keys(PREFIX), what  # the killed job's lease is left behind
        assert assemble(spark, store, warehouse, start, end).status == "ok"  # the dead job's lease does not stop it
    finally:
        reader.stop.set()
        reader.join()
    assert differences(lake(warehouse), after) == {}  # each row once: the scan's
    assert files.keys(PREFIX) == [] and files.keys("_staging") == []
    assert reader.reads > 10 and not reader.wrong, reader.wrong[:5]
    assert len({v for name, v in reader.versions if name == "row_changes"}) >= 2  # it read before and after


# -- time travel and upkeep ------------------------------------------------------------------

def test_earlier_versions_are_read_until_upkeep_lets_them_go(spark, bucket, tmp_path):
    from binlake.spark.job import assemble
    from binlake.spark.warehouse import Warehouse

    store, warehouse = _places("local", tmp_path, flavors=("mysql",))
    start, end = _day()
    times = sorted(t["commit_ts"] for t in scan(sorted((DATA / "mysql").glob("binlog.*")), source="mysql")
                   ["transaction"])
    cuts = [start, times[len(times) // 4], times[len(times) // 2], times[3 * len(times) // 4], end]
    for lo, hi in zip(cuts, cuts[1:], strict=False):  # as hourly runs do: a day of several runs' small files
        assemble(spark, store, warehouse, lo, hi)
    first = Warehouse(spark, warehouse).version("transactions")
    archive(DirSource(str(DATA / "mariadb")), open_store(store), "mariadb")
    assemble(spark, store, warehouse, start, end)
    w = Warehouse(spark, warehouse)
    then = {name: digests(w.read(name, version=w.version(name) - 1).toArrow().to_pylist(), name)
            for name in ("transactions", "row_changes")}
    # VERSION AS OF the version before the last run: MySQL's rows only (the scan's), by both engines
    assert then == {k: v for k, v in _reference(("mysql",)).items() if k in then}
    assert {name: digests(rows(warehouse, name, version=w.version(name) - 1), name) for name in then} == then
    sql = spark.sql(f"SELECT count(*) FROM delta.`{w.path('transactions')}` VERSION AS OF {first}").first()[0]
    assert sql == sum(then["transactions"].values())

    files_before = len(table(warehouse, "transactions").file_uris())
    done = w.upkeep(retain_days=7)
    assert done["transactions"]["compacted"] >= 1 and done["transactions"]["vacuumed"] == 0
    assert len(table(warehouse, "transactions").file_uris()) <= files_before
    assert len({Path(u).parent for u in table(warehouse, "transactions").file_uris()}) == 1  # one day
    assert len(table(warehouse, "transactions").file_uris()) == 1  # the day's files compacted into one
    assert differences(lake(warehouse), _reference()) == {}  # the same rows
    assert digests(rows(warehouse, "transactions", version=first), "transactions") == \
        _reference(("mysql",))["transactions"]  # 7 days kept: the earlier versions read still

    def data_files() -> set[Path]:  # the table's Parquet files on disk (not its log, not Hadoop's .crc files)
        return set(Path(warehouse, "transactions").glob("commit_date=*/*.parquet"))

    kept = data_files()
    removed = w.upkeep(retain_days=0)  # no time travel kept: what no current version names goes
    # the count it gives is the data files that left the disk (the file system's own listing)
    assert removed["transactions"]["vacuumed"] == len(kept - data_files()) > 0
    assert differences(lake(warehouse), _reference()) == {}
    with pytest.raises(Exception, match="(?i)not found|no such file|does not exist"):
        list(rows(warehouse, "transactions", version=first))


# -- upgrading a warehouse of the previous release ---------------------------------------------

@pytest.mark.parametrize("where", ["local", "s3"])
def test_a_parquet_warehouse_is_upgraded_in_place_with_its_rows(spark, spark_submit, bucket, tmp_path, where):
    import pyarrow.dataset as ds
    import pyarrow.fs as pafs
    from pyspark.sql import functions as F

    from binlake.spark import schema
    from binlake.spark.job import assemble

    store, warehouse = _places(where, tmp_path)
    start, end = _day()
    # the previous release's layout: plain Parquet under {warehouse}/{table}/commit_date=…, written
    # by Spark as that release's job did, from the rows of `binlake scan` (the oracle)
    reference = _reference()
    out: dict[str, list[dict]] = {"transaction": [], "row_change": [], "anomaly": []}
    for flavor in FLAVORS:
        for kind, recs in scan(sorted((DATA / flavor).glob("binlog.*")), rows=True, source=flavor).items():
            out[kind] += [schema.arrow_record(kind, r, flavor)[kind] for r in recs]
    kinds = {"transactions": "transaction", "row_changes": "row_change", "anomalies": "anomaly"}
    for name, kind in kinds.items():
        recs = out[kind]
        df = spark.createDataFrame(recs, schema.TABLES[name])
        df.withColumn("commit_date", F.to_date("commit_ts")).write.partitionBy("commit_date").parquet(
            f"{warehouse}/{name}")

    def parquet_rows(name: str) -> Counter:
        """The old release's readers: the directory's Parquet files."""
        if warehouse.startswith("s3a://"):
            env = os.environ
            fs = pafs.S3FileSystem(endpoint_override=env["AWS_ENDPOINT_URL"], access_key=env["AWS_ACCESS_KEY_ID"],
                                   secret_key=env["AWS_SECRET_ACCESS_KEY"], region="us-east-1")
            path = warehouse.removeprefix("s3a://") + "/" + name
        else:
            fs, path = None, f"{warehouse}/{name}"
        return digests(ds.dataset(path, format="parquet", partitioning="hive", filesystem=fs).to_table()
                       .to_pylist(), name)

    old = {name: parquet_rows(name) for name in ("transactions", "row_changes")}
    assert old == {k: reference[k] for k in old}
    proc = run_cli("upgrade", "--warehouse", warehouse, "--master", "local[1]", "--conf", "spark.ui.enabled=false")
    assert proc.returncode == 0, proc.stderr[-3000:]
    converted = json.loads(proc.stdout.strip().splitlines()[-1])["converted"]
    assert converted == {"transactions": sum(reference["transactions"].values()),
                         "row_changes": sum(reference["row_changes"].values()), "anomalies": 0}
    assert {name: lake(warehouse)[name] for name in old} == old  # delta-rs: every row, as before
    assert run_cli("upgrade", "--warehouse", warehouse).returncode == 0  # again: nothing to do
    # the next run of the same range, on the upgraded tables, replaces its rows: each once
    assert assemble(spark, store, warehouse, start, end).status == "ok"
    assert differences(lake(warehouse), reference) == {}


# -- a failed interval -------------------------------------------------------------------------

def test_a_failed_interval_is_marked_in_its_commits_and_its_rerun_clears_it(spark, bucket, tmp_path):
    from binlake.spark.job import assemble
    from binlake.spark.warehouse import Warehouse

    store, warehouse = _places("local", tmp_path)
    start, end = _day()
    obj = Path(store.removeprefix("file://")) / "mysql" / "binlogs" / "binlog.000002"
    kept = obj.read_bytes()
    obj.unlink()  # an archived object deleted: its transactions are missing from the range
    failed = assemble(spark, store, warehouse, start, end)
    assert failed.status == "failed" and failed.failed_because == ["1 MISSING_OBJECT anomalies"]
    for name in FIELDS:  # every table's commit says so, where a reader of the tables sees it
        note = json.loads(table(warehouse, name).history(1)[0]["userMetadata"])["binlake"]
        assert (note["status"], note["failed_because"], note["run"]) == ("failed", failed.failed_because, failed.run)
    history = run_cli("history", "--warehouse", warehouse, "--failed", "--master", "local[1]")
    assert history.returncode == 0, history.stderr[-3000:]
    listed = [json.loads(line) for line in history.stdout.splitlines()]
    assert [(r["run"]["start"], r["run"]["end"], r["run"]["status"]) for r in listed] == \
        [(failed.start, failed.end, "failed")]
    obj.write_bytes(kept)
    ok = assemble(spark, store, warehouse, start, end)
    assert ok.status == "ok" and differences(lake(warehouse), _reference()) == {}
    assert Warehouse(spark, warehouse).runs()[0].note.status == "ok"  # the range's newest run


# -- the range a run reads -------------------------------------------------------------------

def test_a_range_of_one_instant_reads_the_rows_committed_then_across_midnight(spark):
    """RunRange.instant: where an XA COMMIT's rows are read (its prepare's instant, of any day)."""
    from pyspark.sql import functions as F

    from binlake.spark.warehouse import RunRange

    # instants written here (the oracle): the last microsecond of a day, and its neighbours
    at = ["2026-11-22T23:59:59.999998Z", "2026-11-22T23:59:59.999999Z", "2026-11-23T00:00:00.000000Z"]
    df = (spark.createDataFrame([(t, "a") for t in at] + [(at[1], "b")], "t string, source string")
          .withColumn("commit_ts", F.col("t").cast("timestamp")).withColumn("commit_date", F.to_date("commit_ts")))
    for i, t in enumerate(at):
        got = df.where(RunRange.instant(t, ("a",)).condition()).select("t", "source").collect()
        assert [tuple(r) for r in got] == [(at[i], "a")], t
    assert df.where(RunRange.instant(at[1]).condition()).count() == 2  # every source's
