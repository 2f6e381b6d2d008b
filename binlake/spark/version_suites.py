"""The Great Expectations suites over the source tables' row versions, run by `binlake tables` once
it applied a range, their results added to the report of the range's validation runs beside the
boundary suites (docs/quality.md, "Row versions").

For each source applied, over the part of the commit order the apply wrote (its applied range, a
rebuild's included), the tables it opened or closed versions in are read through Delta at the
versions it wrote (`_binlake.json`). Two suites of expectations/, each over a batch made here:

  versions   the row versions the range opened or closed (`_valid_from` or `_valid_to` in the
             range), with every other version of their keys; columns `source, schema, table,
             key` (the key's values as JSON; null for a table without a key, a multiset) and the
             version columns. Of a table partial again (`partial_from`: written by statement),
             only the versions opened before: a statement's changes are in none, so those
             opened after may meet versions it ended on the server (two current, overlapping)
  baselines  one row per table the apply wrote versions in that was loaded from a baseline: the rows
             its snapshot's record gives it (snapshot.json in the archive, the oracle, not the
             engine's copy in `_binlake.json`) and its `snapshot` versions

The SQL checks read these views besides their batch:

  bl_version_spans    per source, the applied range (commit times)
  bl_version_txns     the applied range's transactions with their commit order (`txn_order`,
                      binlake.tables.order)
  bl_version_changes  per table and transaction order: the row changes applied there (inserts,
                      updates, deletes; an XA transaction's at its XA COMMIT's order, as the
                      apply takes them)
  bl_complete_from    per table: the order it is complete from (null: partial, never complete);
                      a change at or before it may be in a baseline instead of a version; and
                      the order it is partial again from (`partial_from`: a DML logged as a
                      statement wrote it; null: never), from which its changes are left out
"""

from __future__ import annotations

import json
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import reduce
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from binlake.archive import keys
from binlake.archive.stores import open_store
from binlake.spark import verdicts
from binlake.spark.pools import TABLE_THREADS, each
from binlake.spark.validate import (
    Checkpoints,
    Report,
    Suite,
    SuiteResult,
    counted,
    judge,
    load_report,
    small_range_settings,
    write_report,
)
from binlake.spark.versions import Versions, q
from binlake.spark.warehouse import RunRange, Warehouse, iso
from binlake.tables.order import SQL as ORDER_SQL
from binlake.tables.order import prepare_of
from binlake.tables.state import SourceState, TableState

log = logging.getLogger(__name__)
SUITES = ("versions", "baselines")
VERSION_COLUMNS = ("_valid_from", "_valid_to", "_from_txn", "_to_txn", "_from_order", "_to_order", "_op",
                   "_from_seq")
# Where a built-in expectation's unexpected rows are.
WHERE = {"versions": ["source", "schema", "table", "key", "_from_order"], "baselines": ["source", "schema", "table"]}
# A table of at least this many bytes finds the other versions of the keys a range touched by a join
# with those keys: read twice (each read's planning, ~0.3 s on a small table), its rows not moved. A
# smaller one is read once, with a window over its keys, which shuffles every row (one that is
# versions.SMALL_ROWS small is read in the driver: VersionChecks._small_table).
JOINED_BYTES = 64 << 20
EMPTY = ("source string, schema string, table string, key string, _valid_from timestamp, _valid_to timestamp, "
         "_from_txn string, _to_txn string, _from_order string, _to_order string, _op string, _from_seq long")


@dataclass(frozen=True)
class Applied:
    """What one source's apply wrote: its state after it, the range it applied and the tables
    (`db/table`) it opened or closed versions in."""

    state: SourceState
    start: str
    end: str
    tables: list[str]


@dataclass(frozen=True)
class Judged:
    """The row versions' suites judged: their summaries, GX's results as JSON, the results' keys
    (for the data docs), the batches' row counts, and the GX project that holds them."""

    results: list[SuiteResult]
    raw: dict[str, dict]
    stored: list
    counts: dict[str, int]
    checkpoints: Checkpoints


class VersionChecks:
    """The two suites over what an apply wrote (`applied`, by source): their batches and views, and
    their results in the reports of a range's validation runs."""

    def __init__(self, spark: SparkSession, applied: dict[str, Applied], *, warehouse: str, store: str,
                 quality: Path) -> None:
        self.spark = spark
        self.applied = applied
        self.warehouse = warehouse
        self.store = store
        self.quality = quality
        self.tables = Versions(spark, warehouse)
        self._done: dict[tuple[str, str], tuple[DataFrame, int | None]] | None = None

    def _tables(self, source: str) -> list[TableState]:
        a = self.applied[source]
        return [a.state.tables[t] for t in a.tables if a.state.tables[t].version is not None]

    def _per_table(self) -> dict[tuple[str, str], tuple[DataFrame, int | None]]:
        """Per table the apply wrote (by source and path): its rows of the versions batch and, for
        one loaded from a baseline, how many `snapshot` versions it holds. Each table's queries on a
        thread (binlake.spark.pools) and its rows checkpointed: planning a Delta read (its files
        kept by their statistics, its deletion vectors) is mostly the driver's, which one query
        over every table does one table after another. A small table (versions.SMALL_ROWS) is read
        in the driver instead, with delta-rs: some seven Spark jobs a table spared."""
        if self._done is None:
            items = [(source, ts) for source in self.applied for ts in self._tables(source)]
            small = [(source, ts) for source, ts in items if self.tables.small(ts)]
            big = [item for item in items if item not in small]
            done = each(self.spark.sparkContext, big, lambda item: self._table(*item), threads=TABLE_THREADS,
                        name="versions")
            self._done = {(source, ts.path): d for (source, ts), d in zip(big, done, strict=True)}
            for source, ts in small:
                self._done[(source, ts.path)] = self._small_table(source, ts)
        return self._done

    def _small_table(self, source: str, ts: TableState) -> tuple[DataFrame, int | None]:
        """`_table`'s rows of a small table (versions.SMALL_ROWS), read in the driver with delta-rs
        at the version the apply wrote: its versions the range opened or closed and every other
        version of their keys."""
        import orjson
        import pyarrow as pa
        import pyarrow.compute as pc

        from binlake.tables.delta_reads import query, storage

        a = self.applied[source]
        uri, options = storage(self.warehouse)
        columns = _key_columns(ts)
        names = [c for _, c in columns] + list(VERSION_COLUMNS)
        selected = ", ".join('"' + n.replace('"', '""') + '"' for n in names)
        read = query(f"{uri}/{ts.path}", options, ts.version, f"SELECT {selected} FROM t")
        # DataFusion's string views as plain strings: pyarrow's filters take no views
        rows = pa.table({n: read[n].cast(pa.string()) if pa.types.is_string_view(read[n].type) else read[n]
                         for n in read.column_names})
        if ts.partial_from is not None:
            rows = rows.filter(pc.less(rows["_from_order"], ts.partial_from.order))
        start, end = (pa.scalar(t, pa.timestamp("us", "UTC")) for t in RunRange(a.start, a.end).bounds())

        def within(column: str):
            values = rows[column].cast(pa.timestamp("us", "UTC"))
            return pc.fill_null(pc.and_(pc.greater_equal(values, start), pc.less(values, end)), False)

        touched = pc.or_(within("_valid_from"), within("_valid_to")).to_pylist()
        keys: list[str | None]
        if columns:
            keyed = zip(*(rows[c].to_pylist() for _, c in columns), strict=True)
            keys = [orjson.dumps(dict(zip((n for n, _ in columns), k, strict=True)), default=str).decode()
                    for k in keyed]
            wanted = {k for k, t in zip(keys, touched, strict=True) if t}
            keep = [k in wanted for k in keys]
        else:
            keys, keep = [None] * rows.num_rows, touched
        mask = pa.array(keep, pa.bool_())
        kept = rows.filter(mask)
        n = kept.num_rows
        out = pa.table({"source": pa.array([source] * n, pa.string()), "schema": pa.array([ts.schema] * n, pa.string()),
                        "table": pa.array([ts.table] * n, pa.string()),
                        "key": pa.array([k for k, m in zip(keys, keep, strict=True) if m], pa.string()),
                        **{c: kept[c].cast(pa.timestamp("us", "UTC") if c.startswith("_valid") else
                                           pa.int64() if c == "_from_seq" else pa.string()) for c in VERSION_COLUMNS}})
        snapshots = (pc.sum(pc.equal(rows["_op"], "snapshot")).as_py() or 0) if ts.baseline else None
        return self.spark.createDataFrame(out, EMPTY), snapshots

    def _table(self, source: str, ts: TableState) -> tuple[DataFrame, int | None]:
        """One table's versions the applied range opened or closed, with every other version of
        their keys (of a keyless table: those alone); its `snapshot` versions counted."""
        a = self.applied[source]
        read = self.spark.read.format("delta").option("versionAsOf", ts.version).load(self.tables.path(ts))
        start, end = F.lit(a.start).cast("timestamp"), F.lit(a.end).cast("timestamp")
        touched = (((F.col("_valid_from") >= start) & (F.col("_valid_from") < end))
                   | ((F.col("_valid_to") >= start) & (F.col("_valid_to") < end)))
        if ts.partial_from is not None:  # written by statement: the versions opened since are partial's
            read = read.where(F.col("_from_order") < ts.partial_from.order)
        columns = _key_columns(ts)
        key = (F.to_json(F.struct(*[F.col(q(c)).alias(n) for n, c in columns])) if columns
               else F.lit(None).cast("string"))
        df = read.where(touched)
        if columns and self.tables.size(ts) < JOINED_BYTES:
            # every version of those keys: a window over the keys
            df = (read.withColumn("_touched", touched)
                  .withColumn("_key_touched", F.max(F.col("_touched").cast("int")).over(Window.partitionBy(key)))
                  .where("_key_touched = 1"))
        elif columns:  # the table joined with those keys by their own columns; the range's versions
            # read first, from the files their times keep
            keys = df.select(*[F.col(q(c)).alias(f"_k{i}") for i, (_, c) in enumerate(columns)]).distinct()
            on = [read[q(c)].eqNullSafe(keys[f"_k{i}"]) for i, (_, c) in enumerate(columns)]
            df = read.join(F.broadcast(keys), on, "left_semi")
        rows = df.select(F.lit(source).alias("source"), F.lit(ts.schema).alias("schema"),
                         F.lit(ts.table).alias("table"), key.alias("key"), *VERSION_COLUMNS).localCheckpoint()
        return rows, read.where(F.col("_op") == "snapshot").count() if ts.baseline else None

    def versions(self) -> DataFrame:
        """The applied ranges' versions and the other versions of their keys."""
        frames = [rows for rows, _ in self._per_table().values()]
        return reduce(DataFrame.unionByName, frames) if frames else self.spark.createDataFrame([], EMPTY)

    def baselines(self) -> DataFrame:
        """Per table loaded from a baseline: its rows in the snapshot's record and its versions."""
        rows = []
        store = open_store(self.store)
        per_table = self._per_table()
        for source in self.applied:
            for ts in self._tables(source):
                if not ts.baseline:
                    continue
                key = keys.baseline_record_key(source, ts.baseline["id"])
                record = json.loads(store.get(key)) if store.exists(key) else {}
                held = next((int(t["rows"]) for t in record.get("tables", [])
                             if (t["schema"], t["table"]) == (ts.schema, ts.table)), None)
                rows.append((source, ts.schema, ts.table, ts.baseline["id"], held, per_table[(source, ts.path)][1]))
        return self.spark.createDataFrame(rows, "source string, schema string, table string, baseline string, "
                                                "snapshot_rows long, snapshot_versions long")

    def views(self) -> list[DataFrame]:
        """bl_version_spans, bl_version_txns, bl_version_changes and bl_complete_from (the module's
        doc). The two read from the warehouse's tables are cached and filled here, with the session's
        own settings (each source's range of `row_changes` is read): the suites' queries, which may run with
        a small batch's (one shuffle partition, no AQE), then read them from memory. Returns the
        two, for the caller to uncache."""
        spark = self.spark
        spans = [(s, a.start, a.end) for s, a in self.applied.items()]
        spark.createDataFrame(spans, "source string, start string, end string") \
            .selectExpr("source", "cast(start AS timestamp) AS start", "cast(end AS timestamp) AS end") \
            .createOrReplaceTempView("bl_version_spans")
        wh = Warehouse(spark, self.warehouse)
        txns = (wh.read("transactions").where(F.col("source").isin(list(self.applied)))
                .withColumn("txn_order", F.expr(ORDER_SQL)))
        # each source's range as the warehouse's rows are partitioned (RunRange): the days it spans
        # read, not the source's whole history
        ranges = " OR ".join(f"({RunRange(a.start, a.end, (s,)).condition()})" for s, a in self.applied.items())
        in_range = txns.where(ranges).cache()
        in_range.createOrReplaceTempView("bl_version_txns")
        own = (in_range.where((F.col("outcome") == "committed") & F.col("kind").isin("dml", "ddl"))
               .select("source", "binlog_file", "txn_id", F.col("txn_order").alias("applied_order")))
        prepares = self._prepares(txns, in_range)
        # an XA transaction's rows at its XA COMMIT's order, read where its prepare logged them
        at = " OR ".join(f"({RunRange.instant(at, (s,)).condition()})" for s, *_, at in prepares)
        if prepares:
            own = own.unionByName(spark.createDataFrame(
                [p[:4] for p in prepares], "source string, binlog_file string, txn_id string, applied_order string"))
        changes = (wh.read("row_changes").where(f"{ranges} OR {at}" if at else ranges)
                   .join(own, ["source", "binlog_file", "txn_id"])
                   .groupBy("source", "schema", "table", F.col("applied_order").alias("txn_order"))
                   .agg(*[F.sum((F.col("op") == op).cast("long")).alias(f"{op}s")
                          for op in ("insert", "update", "delete")])
                   .cache())
        changes.createOrReplaceTempView("bl_version_changes")
        complete = [(source, ts.schema, ts.table, ts.complete_from.order if ts.complete_from else None,
                     ts.partial_from.order if ts.partial_from else None)
                    for source, a in self.applied.items() for ts in a.state.tables.values()]
        spark.createDataFrame(complete, "source string, schema string, table string, complete_from string, "
                                        "partial_from string") \
            .createOrReplaceTempView("bl_complete_from")
        for df in (in_range, changes):
            df.count()
        return [in_range, changes]

    @staticmethod
    def _prepares(txns: DataFrame, in_range: DataFrame) -> list[tuple[str, str, str, str, str]]:
        """Per XA COMMIT of the ranges: (source, file, txn_id) of its prepare (order.prepare_of, as
        binlake.spark.tables takes them), the commit's order and the prepare's commit time."""
        commits = (in_range.where((F.col("kind") == "xa_commit") & (F.col("outcome") == "committed"))
                   .select("source", "xa_xid", F.col("txn_order").alias("applied_order")).collect())
        if not commits:
            return []
        xids = sorted({c["xa_xid"] for c in commits})
        found = (txns.where((F.col("kind") == "xa_prepare") & F.col("xa_xid").isin(xids))
                 .select("source", "xa_xid", "binlog_file", "txn_id", "txn_order",
                         iso("commit_ts").alias("commit_ts")).collect())
        out = []
        for c in commits:
            p = prepare_of(c["applied_order"], [(p["txn_order"], p) for p in found
                                                if (p["source"], p["xa_xid"]) == (c["source"], c["xa_xid"])])
            if p is not None:
                out.append((p["source"], p["binlog_file"], p["txn_id"], c["applied_order"], p["commit_ts"]))
        return out

    def after_apply(self, assembled: list[tuple[int, str, str, list[str]]]) -> list[Report]:
        """After `binlake tables`: the suites, in the reports of the validation runs that let it apply
        (binlake.spark.verdicts: the newest passing one over each part of each source's range)."""
        runs = sorted({v.run for source, a in self.applied.items()
                       for v in verdicts.deciding(self.quality, source, (a.start, a.end), assembled)})
        return self.add_to_reports(runs)

    def add_to_reports(self, runs: list[str]) -> list[Report]:
        """The suites added to the reports of validation runs `runs`: each report's results.json,
        summary.txt and the data docs then hold the boundary suites and these (a run's earlier row
        versions' results replaced). The reports as they are now."""
        if not self.applied or not runs:
            return []
        judged = self.judge(runs[0])
        out = []
        for run in runs:
            report = load_report(self.warehouse, run, str(self.quality))
            previous = json.loads((self.quality / "runs" / run / "results.json").read_text())["gx"]
            report.suites = [s for s in report.suites if s.suite not in SUITES] + judged.results
            report.counts = {**{k: v for k, v in report.counts.items() if k not in SUITES}, **judged.counts}
            write_report(judged.checkpoints.context, self.quality, judged.stored, report,
                         raw={**previous, **judged.raw})
            out.append(report)
            log.info("row versions' suites %s in the report of run %s", "passed" if report.success else "FAILED",
                     run)
        return out

    def judge(self, run_name: str) -> Judged:
        """The two suites, their results stored in the GX project under run `run_name`. GX's
        project and checkpoints are made on a thread while Spark reads and counts the batches (as
        binlake.spark.validate's Validation.run does)."""
        suites = [Suite(name, name, WHERE[name]) for name in SUITES]
        with ThreadPoolExecutor(1, thread_name_prefix="binlake-gx") as pool:
            project = pool.submit(Checkpoints.of, self.quality, suites)
            cached = {"versions": self.versions().cache(), "baselines": self.baselines().cache()}
            counts, batches = counted(cached)
            log.info("row versions of %s: %s", ", ".join(self.applied), counts)
            read = self.views()
            checkpoints = project.result()
        with small_range_settings(self.spark, counts):
            results, raw, stored = judge(checkpoints, self.spark, batches, run_name=run_name)
        for df in [*cached.values(), *read]:
            df.unpersist()
        return Judged(results, raw, stored, counts, checkpoints)


def _key_columns(ts: TableState) -> list[tuple[str, str]]:
    """The key's (name, Delta column) pairs, from the table's latest shape with columns."""
    shapes = [s for s in ts.shapes if s.columns]
    if not ts.key or not shapes:
        return []
    delta = {c.name: c.column for c in shapes[-1].columns or []}
    return [(name, delta[name]) for name in ts.key] if all(name in delta for name in ts.key) else []
