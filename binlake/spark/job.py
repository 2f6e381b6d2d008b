"""The assemble job: an archive's commit-time range into the three warehouse tables.

1. Plan on the driver from manifests only (binlake/splits/plan.py).
2. Survey the transactions bigger than a split, one task each, and cut them into pieces.
3. The facts pass: every split and piece in parallel (`mapInArrow`: one task per split,
   Arrow batches out; binlake/spark/passes.py) gives its transactions, anomalies and pieces
   (rows decoded for their counts only), staged as Parquet: a record per transaction, small.
   A range of one split's work is read by the driver instead, on a thread from the moment it
   is planned (binlake/spark/read_ahead.py): no Python worker to start, no staging.
4. Put big transactions together on the driver from their pieces' counts
   (binlake/assemble/pieces.py): where each piece's rows go (`seq`, segments).
5. Write each table: the rows of the range replace exactly the range's rows, in one Delta
   commit per table that names the run (binlake/spark/warehouse.py). Reruns and backfills are
   idempotent; N runs over adjacent ranges equal one over their union.
   The row changes are the rows pass, decoded as they are written (the pieces' placed by a
   broadcast of step 4's answer): never staged, so the biggest table is written once.

The whole run holds the warehouse's writer lease (binlake/spark/writer.py): one job writes it
at a time.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.broadcast import Broadcast
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from binlake.assemble.pieces import Fixes, PieceRecord
from binlake.assemble.walk import Options
from binlake.errors import BinlakeError
from binlake.schema.ddl import SchemaState
from binlake.spark import schema
from binlake.spark.passes import Held, facts_task, rows_task
from binlake.spark.pools import in_pool
from binlake.spark.read_ahead import ReadAhead
from binlake.spark.settings import (
    LOGS,
    SCHEDULER,
    SESSION,
    TABLES,
    console_to_stderr,
    delta,
    in_driver,
    is_local,
    local,
    quiet_spark_logs,
)
from binlake.spark.warehouse import Note, RunRange, Warehouse, warehouse_uri
from binlake.spark.writer import WriterLease
from binlake.splits.plan import DEFAULT_SPLIT_BYTES, Plan, Split, pieces_of, plan
from binlake.splits.tasks import check_repeat, put_together, run_survey
from binlake.splits.times import compact_ts

log = logging.getLogger(__name__)
# Parquet writer options per table (Delta hands them to its Parquet writer). Where a column's values
# are nearly all distinct (the images; the ids of production's one-row transactions) a dictionary
# for it is built and then dropped by the writer, at a cost bench/RESULTS.md measures. The facts
# staged for one run are read once and have none.
WRITE_OPTIONS = {"row_changes": {"parquet.enable.dictionary#before": "false",
                                 "parquet.enable.dictionary#after": "false"},
                 "transactions": {"parquet.enable.dictionary#txn_id": "false",
                                  "parquet.enable.dictionary#gtid": "false"},
                 "facts": {"parquet.enable.dictionary": "false"}}


@dataclass
class Summary:
    store: str
    warehouse: str
    start: str
    end: str
    sources: list[str]
    files: int = 0
    bytes: int = 0
    splits: int = 0
    big_transactions: int = 0
    pieces: int = 0
    transactions: int = 0
    row_changes: int = 0
    anomalies: int = 0
    repeats: int = 0  # transactions left out: an earlier generation archived them first (a failover)
    by_kind: dict[str, int] = field(default_factory=dict)
    by_outcome: dict[str, int] = field(default_factory=dict)
    anomalies_by_code: dict[str, int] = field(default_factory=dict)
    partitions: list[str] = field(default_factory=list)
    seconds: float = 0.0
    step_seconds: dict[str, float] = field(default_factory=dict)  # survey, schema, facts, tables, write
    write_seconds: dict[str, float] = field(default_factory=dict)  # the write step's, per table
    spark_master: str = ""
    application_id: str = ""
    schema_states: int = 0  # distinct schema states the splits started from (binlake.splits.schemas)
    in_driver: bool = False  # a range smaller than one split: its tasks ran in the driver (Job.in_driver)
    run: str = ""  # the run's id, which its commits name
    status: str = "ok"  # "failed": the range has error anomalies, its data is not whole (failed_because)
    failed_because: list[str] = field(default_factory=list)
    versions: dict[str, int] = field(default_factory=dict)  # the Delta version each table's commit made

    def anomaly_text(self) -> str:
        """The range's anomalies in one line, as a failed --fail-on-anomaly says them."""
        codes = ", ".join(f"{k} {v}" for k, v in sorted(self.anomalies_by_code.items()))
        return f"{self.anomalies} anomalies in {self.start}..{self.end} ({codes}); see {self.warehouse}/anomalies"


class Job:
    """One run of the job over a planned range (binlake.splits.plan: its store, range, sources
    and split size), into a warehouse."""

    def __init__(self, spark: SparkSession, planned: Plan, *, warehouse: str, opts: Options | None = None,
                 ahead: ReadAhead | None = None) -> None:
        self.spark = spark
        self.sc = spark.sparkContext
        for key, value in SESSION.items():
            spark.conf.set(key, value)
        self.plan = planned
        self.store = planned.store
        self.warehouse = warehouse_uri(warehouse)
        self.tables = Warehouse(spark, self.warehouse)
        self.opts = opts or Options()
        self.sources = planned.sources
        self.range = RunRange(planned.start, planned.end, tuple(self.sources))
        self.run_id = uuid.uuid4().hex[:12]
        self.staging = f"{self.warehouse}/_staging/{self.run_id}"
        # the schema states splits start from (binlake.splits.schemas), when a source has a history
        self.states: Broadcast[list[SchemaState]] | Held | None = None
        # One task's work: the driver runs its splits itself, sparing the seconds a first Python
        # worker costs a short interval; read ahead where the caller started it before the session
        # (binlake.spark.read_ahead, with these `opts`), else from now on.
        self.in_driver = in_driver(planned, planned.split_bytes)
        self.ahead = (ahead or ReadAhead(planned, self.opts)) if self.in_driver else None
        self.summary = Summary(self.store, self.warehouse, planned.start, planned.end, self.sources,
                               spark_master=self.sc.master or "", application_id=self.sc.applicationId,
                               in_driver=self.in_driver, run=self.run_id)

    # -- the steps ---------------------------------------------------------------------

    def run(self) -> Summary:
        began = time.monotonic()
        p = self.plan
        s = self.summary
        s.files, s.bytes, s.splits = len(p.files), p.bytes, len(p.splits)
        with (WriterLease(self.warehouse, self.run_id, f"assemble {s.start}..{s.end}"),
              ThreadPoolExecutor(len(TABLES), thread_name_prefix="binlake-write") as pool):
            self._delete(f"{self.warehouse}/_staging")  # a dead job's: no other job writes here now
            # A new warehouse's tables made while the facts job runs: a table's first commit is
            # seconds of the driver's, which the job's tasks leave idle.
            made = pool.submit(in_pool, self.sc, "create", self.tables.create_missing)
            try:
                splits, bigs = self._timed("survey", self._cut_big)
                self._timed("schema", self._schema_states, splits)
                staged = self._timed("facts", self._facts, splits)
                tables = self._timed("tables", self._tables, staged, bigs, splits)
                made.result()
                self._timed("write", self._write, tables, pool)
            finally:
                self._delete(self.staging)
        s.seconds = round(time.monotonic() - began, 3)
        self._write_summary()
        log.info("assembled %s..%s: %d transactions, %d row changes, %d anomalies in %.1f s%s", s.start, s.end,
                 s.transactions, s.row_changes, s.anomalies, s.seconds,
                 f"; FAILED: {', '.join(s.failed_because)}" if s.failed_because else "")
        return s

    def _timed(self, step: str, fn, *args):
        began = time.monotonic()
        try:
            return fn(*args)
        finally:
            self.summary.step_seconds[step] = round(time.monotonic() - began, 3)

    def _cut_big(self) -> tuple[list[Split], list[list[Split]]]:
        """Survey the big transactions (one task each) and cut them into pieces."""
        splits = list(self.plan.splits)
        bigs: list[list[Split]] = []
        if self.plan.bigs:
            self.sc.setJobDescription(f"binlake: survey {len(self.plan.bigs)} big transactions")
            surveyed = self.sc.parallelize(self.plan.bigs, len(self.plan.bigs)).map(run_survey).collect()
            for big, found in zip(self.plan.bigs, surveyed, strict=True):
                parts = pieces_of(big, found)
                splits += parts
                if found:
                    bigs.append(parts)
        self.summary.big_transactions = len(bigs)
        self.summary.pieces = sum(len(b) for b in bigs)
        log.info("%d splits, %d big transactions in %d pieces", len(splits), len(bigs), self.summary.pieces)
        return splits, bigs

    def _schema_states(self, splits: list[Split]) -> None:
        """The schema state each split starts from, for the sources with a schema history: the
        DDL statements of their files read by a task per file (by the driver, for a range it
        reads), the states put together here."""
        from binlake.splits import schemas as schema_plan

        if self.ahead is not None:
            states = self.ahead.passes().states
        else:
            states = schema_plan.states_for(self.plan, splits, self._read_ddl)
        if states is None:
            return
        self.summary.schema_states = len(states)
        self.states = Held(states) if self.ahead is not None else self.sc.broadcast(states)

    def _read_ddl(self, files: list[tuple[str, str]]) -> dict:
        """The DDL statements of archived files, a Spark task per file (binlake.splits.schemas)."""
        from binlake.splits.schemas import archived_ddl

        store = self.store
        self.sc.setJobDescription(f"binlake: the DDL of {len(files)} files for the schema history")
        return dict(self.sc.parallelize(files, max(1, min(len(files), 4 * self.sc.defaultParallelism)))
                    .map(lambda f: (f, archived_ddl(store, *f))).collect())

    def _map_splits(self, splits: list[Split], task, struct) -> DataFrame:
        """`task` over the splits, a Spark task per split (mapInArrow), biggest first."""
        tasks = sorted(splits, key=lambda s: -s.bytes)
        rdd = self.sc.parallelize([(t.to_json(),) for t in tasks], len(tasks))
        return self.spark.createDataFrame(rdd, "split string").mapInArrow(task, struct)

    def _driver_frame(self, table: pa.Table, struct) -> DataFrame:
        """A pass the driver read, handed to Spark. Past Spark's local-relation bytes
        (spark.sql.execution.arrow.localRelationThreshold) each Arrow batch would be a partition: a
        core's share each instead, as many tasks (and files a day) as cores, not one per batch (an
        hour's 205,903 row changes: 28)."""
        return self.spark.createDataFrame(table, schema=struct).coalesce(self.sc.defaultParallelism)

    def _facts(self, splits: list[Split]) -> DataFrame:
        """The facts pass: every split's transactions, anomalies and pieces, staged as Parquet
        (small: a record per transaction) for the tables and the big transactions' finish; run
        in the driver, they are in its memory already."""
        path = f"{self.staging}/facts"
        if not splits:
            return self.spark.createDataFrame([], schema.STAGED)
        if self.ahead is not None:
            return self._driver_frame(self.ahead.passes().facts, schema.STAGED)
        self.sc.setJobDescription(f"binlake: transactions of {len(splits)} splits of {self.plan.bytes} bytes")
        facts = self._map_splits(splits, facts_task(self.opts, self.states), schema.STAGED)
        facts.write.options(**WRITE_OPTIONS["facts"]).mode("overwrite").parquet(path)
        return self.spark.read.schema(schema.STAGED).parquet(path)

    def _rows(self, splits: list[Split], fixes: Fixes) -> DataFrame:
        """The rows pass: every split's row changes, decoded again as the tables are written
        rather than staged (a second decode costs less than writing and reading them twice)."""
        if not splits:
            return self.spark.createDataFrame([], schema.ROW_CHANGES)
        if self.ahead is not None:  # no big transaction: no piece to place
            return self._driver_frame(self.ahead.passes().rows, schema.ROW_CHANGES)
        placed = self.sc.broadcast(fixes) if fixes else None
        return self._map_splits(splits, rows_task(self.opts, placed, self.states), schema.ROW_CHANGES)

    def _tables(self, staged: DataFrame, bigs: list[list[Split]], splits: list[Split]) -> dict[str, DataFrame]:
        """The three tables of the range, big transactions put together."""
        txns = staged.where("kind = 'transaction'").select("transaction.*")
        anomalies = staged.where("kind = 'anomaly'").select("anomaly.*")
        extra_txns, extra_anomalies, fixes = [], list(self.plan.anomalies), {}
        if bigs:
            self.sc.setJobDescription("binlake: put big transactions together")
            pieces = defaultdict(list)
            for r in staged.where("kind = 'piece'").select("piece.*").collect():
                pieces[r["txn_id"]].append(PieceRecord(**r.asDict(recursive=True)))
            for parts in bigs:
                survey = parts[0].survey
                assert survey is not None
                done = put_together(parts, pieces[survey.txn_id], self.opts)
                extra_txns.append(done.transaction)
                if done.anomaly:
                    extra_anomalies.append(done.anomaly)
                fixes.update(done.fixes)
        if extra_txns:
            txns = txns.unionByName(self._frame(extra_txns, "transaction", schema.TRANSACTIONS))
        if extra_anomalies:
            anomalies = anomalies.unionByName(self._frame(extra_anomalies, "anomaly", schema.ANOMALIES))
        if self.states is not None:
            anomalies = _mismatch_once_per_file(anomalies)
        rows = self._rows(splits, fixes)
        if self.plan.repeats:  # first archived copies only: a failover's new server repeats what it replicated
            again = F.broadcast(self.spark.createDataFrame([r.key for r in self.plan.repeats],
                                                           "source string, binlog_file string, txn_id string"))
            keys = ["source", "binlog_file", "txn_id"]
            txns, rows = txns.join(again, keys, "left_anti"), rows.join(again, keys, "left_anti")
            self.sc.setJobDescription(f"binlake: compare {len(self.plan.repeats)} repeats with their first copies")
            tasks = self.sc.parallelize(self.plan.repeats, min(len(self.plan.repeats), self.sc.defaultParallelism))
            differ = [a for a in tasks.map(check_repeat).collect() if a]
            if differ:
                anomalies = anomalies.unionByName(self._frame(differ, "anomaly", schema.ANOMALIES))
        self.summary.repeats = len(self.plan.repeats)
        lo, hi = self.range.bounds()
        return {name: df.where((F.col("commit_ts") >= F.lit(lo)) & (F.col("commit_ts") < F.lit(hi)))
                for name, df in (("transactions", txns), ("row_changes", rows), ("anomalies", anomalies))}

    def _frame(self, records: Sequence[Mapping[str, Any]], kind: str, struct) -> DataFrame:
        rows = [schema.arrow_record(kind, r, r["source"])[kind] for r in records]
        return self.spark.createDataFrame(rows, struct)

    def _write(self, tables: dict[str, DataFrame], pool: ThreadPoolExecutor) -> None:
        """Each table's range replaced in one Delta commit (binlake.spark.warehouse), each commit
        naming the run. The small tables' figures come first: they decide the run's status, which
        every commit says (a range with error anomalies is not whole: `failed`)."""
        s = self.summary
        dated = {name: df.withColumn("commit_date", F.to_date("commit_ts")) for name, df in tables.items()}
        # One Spark job per small table for all its figures (a job each cost a run eight).
        txns = (dated["transactions"].groupBy("kind", "outcome", "commit_date")
                .agg(F.count(F.lit(1)).alias("count"), F.sum("row_count").alias("rows")).collect())
        anomalies = dated["anomalies"].groupBy("code", "severity", "commit_date").count().collect()
        s.by_kind, s.by_outcome = _counts(txns, "kind"), _counts(txns, "outcome")
        s.anomalies_by_code = _counts(anomalies, "code")
        s.transactions, s.anomalies = sum(s.by_kind.values()), sum(s.anomalies_by_code.values())
        s.partitions = sorted({r["commit_date"].isoformat() for r in txns + anomalies})
        errors = _counts([r for r in anomalies if r["severity"] == "error"], "code")
        if errors:
            s.status = "failed"
            s.failed_because = [f"{n} {code} anomalies" for code, n in sorted(errors.items())]
        if not any(r["rows"] for r in txns):  # no transaction with rows: the rows pass would decode for nothing
            dated["row_changes"] = self.spark.createDataFrame([], schema.STORED["row_changes"])
        note = Note(run=self.run_id, start=s.start, end=s.end, sources=list(self.sources), store=self.store,
                    status=s.status, failed_because=s.failed_because,
                    counts={"transactions": s.transactions, "anomalies": s.anomalies})
        # The three commits at once, a thread each in this session: the small tables' Delta work (the
        # log, the files the range replaces, the commit) is the driver's, and overlaps the row
        # changes' write, whose tasks take the cores. Each table's commit stays whole on its own.
        writes = {name: pool.submit(in_pool, self.sc, name, self._replace, name, df, note)
                  for name, df in dated.items()}
        for name, write in writes.items():
            s.versions[name], s.write_seconds[name], rows = write.result()
            if name == "row_changes":  # every row of the range is the run's: its commit counted them
                s.row_changes = rows

    def _replace(self, name: str, df: DataFrame, note: Note) -> tuple[int, float, int]:
        """One table's range replaced: its version, seconds and rows written."""
        began = time.monotonic()
        commit = self.tables.replace(name, df, self.range, note=note, options=WRITE_OPTIONS.get(name))
        return commit.version, round(time.monotonic() - began, 3), commit.rows_written(self.run_id)

    # -- Hadoop file system: works for file:// and s3a:// alike --------------------------

    def _fs(self, path: str, escaped: bool = False):
        """A path's Hadoop file system and Path; `escaped`: a URI as Spark names a file
        (`_metadata.file_path`), its special characters escaped."""
        jvm = self.spark._jvm  # noqa: SLF001 - Hadoop's FileSystem has no Python API
        assert jvm is not None  # a classic (not Connect) session, as session() makes
        p = jvm.org.apache.hadoop.fs.Path(jvm.java.net.URI(path) if escaped else path)
        return p.getFileSystem(self.sc._jsc.hadoopConfiguration()), p  # noqa: SLF001

    def _delete(self, path: str) -> None:
        fs, p = self._fs(path)
        if fs.exists(p):
            fs.delete(p, True)

    def _write_summary(self) -> None:
        s = self.summary
        path = f"{self.warehouse}/_summaries/assemble_{compact_ts(s.start)}_{compact_ts(s.end)}.json"
        fs, p = self._fs(path)
        out = fs.create(p, True)
        out.write(bytearray(json.dumps(asdict(self.summary), indent=1).encode()))
        out.close()
        log.info("summary: %s", path)


def _mismatch_once_per_file(anomalies: DataFrame) -> DataFrame:
    """SCHEMA_MISMATCH and SCHEMA_UNKNOWN once per table and file, the first, as a scan says them:
    each split's walk says its own. The detail after its `file:offset: ` is the table's."""
    from pyspark.sql import Window

    said = F.regexp_replace("detail", r"^.*?:[0-9]+: ", "")
    first = Window.partitionBy("source", "binlog_file", said).orderBy("start_pos")
    n = F.when(F.col("code").isin("SCHEMA_MISMATCH", "SCHEMA_UNKNOWN"), F.row_number().over(first)).otherwise(F.lit(1))
    return anomalies.withColumn("_n", n).where("_n = 1").drop("_n")


def _counts(groups: list, column: str) -> dict[str, int]:
    """The counts of a column's values, from the counts of finer groups (Rows with `count`)."""
    out: dict[str, int] = defaultdict(int)
    for r in groups:
        out[r[column]] += r["count"]
    return dict(out)


def executor_python(master: str | None) -> None:
    """The Python a local master's executors run: this one, which has binlake. PySpark's
    executors run the interpreter the driver names; for a cluster none is named (unless the
    deployment sets spark.pyspark.python), so they run `python3` as their worker's PATH finds it:
    never this interpreter's path, which need not exist there (the Airflow image's is not in the
    Spark image). tests/test_airflow_operator.py holds both to it on a standalone worker."""
    import sys

    if is_local(master):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def session(master: str | None = "local[*]", app: str = "binlake-assemble", conf: dict | None = None) -> SparkSession:
    """A SparkSession as the job wants it: UTC, Arrow on, Delta Lake and S3A (settings.delta),
    local masters bound to loopback.
    `master=None` leaves the master to spark-submit."""
    executor_python(master)
    if is_local(master):  # bound to loopback (settings.local): no warning that the host's name is loopback
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    b = SparkSession.builder.appName(app).config("spark.sql.execution.arrow.pyspark.enabled", "true")
    if master:
        b = b.master(master)
    static = {**SESSION, **LOGS, **SCHEDULER, **delta()}
    for k, v in {**static, **(local(conf) if is_local(master) else conf or {})}.items():
        b = b.config(k, v)
    where = master or "given by spark-submit"
    try:
        spark = b.getOrCreate()
    except Exception as e:  # noqa: BLE001 - Spark refused the session (a small heap, a bad master): its words
        raise BinlakeError(f"cannot start Spark (master {where}): {_java_reason(e)}") from None
    _check_delta(spark)
    quiet_spark_logs(spark)
    console_to_stderr(spark)
    return spark


def _check_delta(spark: SparkSession) -> None:
    """Delta's classes on the driver's classpath, or a clear error: spark-submit puts there only the
    jars of its own command line (settings made later reach the executors only)."""
    jvm = spark._jvm  # noqa: SLF001 - a class lookup has no Python API
    assert jvm is not None
    try:
        jvm.java.lang.Class.forName("io.delta.tables.DeltaTable", False, jvm.Thread.currentThread()
                                    .getContextClassLoader())
    except Exception:  # noqa: BLE001 - Py4J's ClassNotFoundException
        raise BinlakeError("Delta Lake's jars are not on the Spark driver's classpath: give spark-submit "
                           '--driver-class-path "$(python -m binlake.spark.jars classpath)", or --jars "$(python -m '
                           'binlake.spark.jars jars)", or --packages "$(python -m binlake.spark.jars packages)" '
                           "(docs/warehouse.md)") from None


def _java_reason(e: Exception) -> str:
    java = getattr(e, "java_exception", None)  # a Py4JJavaError's
    if java is not None:
        try:
            return " ".join(java.getMessage().split())
        except Exception:  # noqa: BLE001 - the JVM is gone: say what Python saw
            pass
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def assemble(spark: SparkSession, store: str, warehouse: str, start: str, end: str,  # noqa: PLR0917 - a range
             *, sources: list[str] | None = None, split_bytes: int = DEFAULT_SPLIT_BYTES,
             opts: Options | None = None, fail_on_anomaly: bool = False) -> Summary:
    """Plan the range and run the job over it; with `fail_on_anomaly`, raise after writing when the
    range has error anomalies."""
    summary = Job(spark, plan(store, sources, start, end, split_bytes), warehouse=warehouse, opts=opts).run()
    if fail_on_anomaly and summary.anomalies:
        raise BinlakeError(summary.anomaly_text())
    return summary
