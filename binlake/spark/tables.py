"""`binlake tables`: a range of each source's changelog applied to its row versions (docs/tables.md).

Per source, on the driver: the source's state (`_binlake.json`, binlake.tables.state) says how far
it is applied; the range is applied forward, found unchanged, rebuilt from an earlier instant
(`decide`), or refused; a range is applied only where a validation passed (binlake.spark.verdicts).
Then what the range holds is read (binlake.spark.range_reads): its transactions in commit order,
their row changes (an XA transaction's at its XA COMMIT), the DDL statements and TRUNCATEs of its
files (read from the archive, with their default database); with the baselines that start in it,
the range is planned (binlake.tables.plan); the rows are folded by group with each changed table's
current versions (only those of the keys the range changes, where no statement changes every row),
by the driver where the range is short (`DRIVER_ROWS`), else in Spark's tasks
(binlake.spark.range_fold); one MERGE per table; `_binlake.json` last. `as_of` gives Spark users
the tables at an instant.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from binlake.archive.stores import open_store
from binlake.errors import BinlakeError
from binlake.spark import verdicts
from binlake.spark.pools import TABLE_THREADS, each
from binlake.spark.range_fold import Counts, RangeFold
from binlake.spark.range_reads import RangeReads
from binlake.spark.settings import SESSION, interpreted_settings, quality_dir, session_settings, short_apply_settings
from binlake.spark.validate import Report
from binlake.spark.version_suites import Applied, VersionChecks
from binlake.spark.versions import Versions, cast, q
from binlake.spark.warehouse import Commit, RunRange, Warehouse, iso, warehouse_uri
from binlake.spark.writer import WriterLease
from binlake.splits.plan import sources as archived_sources
from binlake.splits.times import compact_ts, parse_time
from binlake.tables import order as orders
from binlake.tables import state as states
from binlake.tables.baselines import Baseline, complete, placed
from binlake.tables.plan import Planner, RangePlan, check_names
from binlake.tables.state import Point, SourceState, TableState, warehouse_store

log = logging.getLogger(__name__)
# A range of at most this many row changes is folded by the driver (range_fold.RangeFold.in_driver): the rows, and
# the current versions of the keys they change, cross into the driver's Python once, instead of
# four stages of Spark's Python workers and a shuffle, whose fixed costs are most of a short
# range's fold (bench/RESULTS.md, bench/tables.py). Where it holds at most as many transactions
# too, they and its rows are read with delta-rs (short_range.ShortRange), not by Spark's jobs.
DRIVER_ROWS = 100_000


@dataclass
class Summary:
    source: str
    start: str
    end: str
    status: str = "applied"  # applied | unchanged | refused
    watermark: dict[str, Any] | None = None
    rebuilt_from: str | None = None
    tables: dict[str, dict[str, int]] = field(default_factory=dict)
    row_changes: int = 0
    unmatched: int = 0  # updates and deletes that found no version (a partial table's rows)
    seconds: float = 0.0
    reason: str | None = None
    unused_baselines: list[str] = field(default_factory=list)

    def line(self) -> str:
        return json.dumps({"record": "tables", **dataclasses.asdict(self)}, separators=(",", ":"))


class TablesJob:
    def __init__(self, spark: SparkSession, store: str, warehouse: str, span: tuple[str, str], *,
                 quality: str | None = None, unvalidated: bool = False) -> None:
        self.spark = spark
        for key, value in {**SESSION, **short_apply_settings(spark)}.items():
            spark.conf.set(key, value)
        self.store = store
        self.warehouse = warehouse_uri(warehouse)
        self.start, self.end = parse_time(span[0]), parse_time(span[1])
        if self.start >= self.end:
            raise BinlakeError(f"empty range: start {self.start} is not before end {self.end}")
        self.quality = None if unvalidated else quality_dir(self.warehouse, quality)
        self.wh = Warehouse(spark, self.warehouse)
        self.versions = Versions(spark, self.warehouse)
        self.run_id = uuid.uuid4().hex[:12]
        self.applied: dict[str, Applied] = {}  # what each source's apply wrote, for the row versions' suites
        self.reports: list[Report] = []  # the validation reports those suites joined
        self._commits_read: list[Commit] | None = None

    def sources(self) -> list[str]:
        """Every source of the archive, as `binlake assemble` takes them when none is named: a
        listing of the store, not a read of the whole `transactions` table."""
        return sorted(archived_sources(open_store(self.store)))

    def run(self, sources: list[str] | None = None) -> list[Summary]:
        """Each source's range applied (or found unchanged, or refused); their summaries, also
        written whole to the warehouse (`summary_key`) for a caller that cannot read the job's
        output: the Airflow task."""
        out = []
        with WriterLease(self.warehouse, self.run_id, f"tables {self.start}..{self.end}"):
            for source in sources or self.sources():
                out.append(self.apply(source))
            if self.quality is not None:  # the row versions' suites, in the reports of the range's validations
                held = [a.state.tables[t].held for a in self.applied.values() for t in a.tables]
                with session_settings(self.spark, interpreted_settings(self.spark, held)):
                    self.reports = VersionChecks(self.spark, self.applied, warehouse=self.warehouse,
                                                 store=self.store, quality=self.quality).after_apply(self._assembled())
            record = {"record": "tables", "run": self.run_id, "start": self.start, "end": self.end,
                      "sources": [dataclasses.asdict(s) for s in out], "reports": [r.brief() for r in self.reports]}
            warehouse_store(self.warehouse).put(summary_key(self.start, self.end),
                                                json.dumps(record, indent=1).encode())
        return out

    # -- one source ---------------------------------------------------------------------

    def apply(self, source: str) -> Summary:
        began = time.monotonic()
        s = Summary(source, self.start, self.end)
        version_now = self._commits()[0].version
        state = states.load(self.warehouse, source) or SourceState(source)
        txns = self._transactions(source)
        baselines = self._baselines(source, txns)
        assembled = self._assembled()
        decided = decide(state, self.start, self.end, self._rebuild_from(state, assembled, baselines))
        if isinstance(decided, str):
            return self._refused(s, began, decided)
        if decided is None:
            s.status, s.watermark = "unchanged", state.watermark
            s.seconds = round(time.monotonic() - began, 3)
            return s
        start, end, rebuild = decided
        if state.span is None and not any(start <= b.at < end for b in baselines) and \
                not txns.where(RunRange(start, end).condition()).limit(1).count():
            # Nothing applied yet and nothing to apply: the span is not begun with an empty range, so
            # that the first range with transactions (a backfill of the past) applies as the first.
            s.status, s.reason = "unchanged", "nothing applied yet, and the range has no transaction of the source"
            s.seconds = round(time.monotonic() - began, 3)
            return s
        if self.quality is not None:
            why = verdicts.refusal(self.quality, source, (start, end), assembled)
            if why:
                return self._refused(s, began, why)
        if rebuild:
            s.rebuilt_from = start
            held = [ts.held for ts in state.tables.values()]  # before the rollback: at least what is left
            with session_settings(self.spark, interpreted_settings(self.spark, held)):
                self._rollback(state, start)
        if state.span is None:
            state.span = {"start": start, "end": start}
        s.unused_baselines = [b.id for b in baselines if b.at < state.span["start"]]
        due = [b for b in baselines if start <= b.at < end and b.at >= state.span["start"]]
        # the watermark the range continues from: none for a first apply, nor after a rollback
        before = state.watermark if not rebuild and state.watermark and state.watermark["time"] == start else None
        held = [ts.held for ts in state.tables.values()] + [None for _ in due]  # a baseline: as big as its table
        with session_settings(self.spark, interpreted_settings(self.spark, held)):
            in_range_last = self._apply_range(state, s, txns, (start, end), baselines=due)
        # the suites read the tables the range opened or closed versions in: none of another's is in it
        self.applied[source] = Applied(state, start, end,
                                       sorted(n for n, t in s.tables.items() if t["opened"] or t["closed"]))
        state.span = {"start": state.span["start"], "end": end}
        state.assembled_version = version_now
        state.watermark = {"time": end, **self._last(txns, end, before, in_range_last)}
        states.save(self.warehouse, state)
        s.watermark = state.watermark
        s.seconds = round(time.monotonic() - began, 3)
        log.info("tables of %s applied %s..%s%s: %s", source, start, end,
                 f" (rebuilt from {s.rebuilt_from})" if s.rebuilt_from else "", s.tables)
        return s

    @staticmethod
    def _last(txns: DataFrame, end: str, before: dict[str, Any] | None, in_range: dict[str, Any] | None
              ) -> dict[str, Any]:
        """The last transaction (its order and id) of those committed before `end`: the later of
        the watermark the range continues from and the range's own last, so that an hourly apply
        reads the transactions it applies, not every one before them; the source's whole history
        only where no watermark holds at the range's start (a first apply, a rebuild)."""
        if before is None:
            last = (txns.where(F.col("commit_ts") < F.lit(end).cast("timestamp"))
                    .orderBy(F.col("order").desc()).select("order", "txn_id").limit(1).collect())
            return {"order": last[0]["order"], "txn_id": last[0]["txn_id"]} if last else {"order": None, "txn_id": None}
        marks = [m for m in (before, in_range) if m is not None and m["order"] is not None]
        last_mark = max(marks, key=lambda m: m["order"]) if marks else {"order": None, "txn_id": None}
        return {"order": last_mark["order"], "txn_id": last_mark["txn_id"]}

    def _refused(self, s: Summary, began: float, why: str) -> Summary:
        s.status, s.reason = "refused", why
        s.seconds = round(time.monotonic() - began, 3)
        return s

    # -- what is there ------------------------------------------------------------------

    def _transactions(self, source: str) -> DataFrame:
        """The source's transactions with their place in the commit order."""
        return (self.wh.read("transactions").where(F.col("source") == source)
                .withColumn("order", F.expr(orders.SQL)))

    def _commits(self) -> list[Commit]:
        """The `transactions` table's commits, newest first: read once a run, which holds the
        warehouse's writer lease (no assemble commits meanwhile)."""
        if self._commits_read is None:
            self._commits_read = self.wh.history("transactions")
        return self._commits_read

    def _assembled(self) -> list[tuple[int, str, str, list[str]]]:
        """The `transactions` table's binlake commits: (version, start, end, sources)."""
        return [(c.version, parse_time(c.note.start), parse_time(c.note.end), list(c.note.sources))
                for c in self._commits() if c.note is not None]

    def _touched_since(self, state: SourceState, assembled: list, start: str) -> bool:
        """Whether an assemble run after the last apply rewrote part of [start, span end)."""
        v = state.assembled_version if state.assembled_version is not None else -1
        end = state.span["end"] if state.span else start
        return any(version > v and a < end and start < b and state.source in src for version, a, b, src in assembled)

    def _rebuild_from(self, state: SourceState, assembled: list, baselines: list[Baseline]) -> str | None:
        """The earliest instant the applied span must be rebuilt from: an assemble run since the last
        apply over part of it, a baseline completed after the span passed its point."""
        span = state.span
        if span is None:
            return None
        v = state.assembled_version if state.assembled_version is not None else -1
        found = [max(a, span["start"]) for version, a, b, src in assembled
                 if version > v and a < span["end"] and span["start"] < b and state.source in src]
        loaded = {(t.baseline or {}).get("id") for t in state.tables.values()}
        found += [b.at for b in baselines if span["start"] <= b.at < span["end"] and b.id not in loaded
                  and any(name_complete(state, k) is False for k in b.tables)]
        return min(found) if found else None

    def _baselines(self, source: str, txns: DataFrame) -> list[Baseline]:
        """The source's complete baselines placed in its order, each with `at`: the commit time of
        the transaction at its first point (its session's start when the range has none)."""
        store = open_store(self.store)
        out = []
        for doc in complete(store, source):
            b = placed(store, source, doc)
            if b is None:
                continue
            row = (txns.where(F.col("order") <= b.start).orderBy(F.col("order").desc())
                   .select(iso("commit_ts").alias("at")).limit(1).collect())
            b.at = row[0]["at"] if row else parse_time(b.started_at)
            out.append(b)
        return out

    # -- rebuilding ---------------------------------------------------------------------

    def _rollback(self, state: SourceState, at: str) -> None:
        """Every table of the source as it was before instant `at`; the watermark lowered first."""
        if state.span is None:
            return
        state.watermark = {"time": at, "order": None, "txn_id": None}
        state.span = {"start": state.span["start"], "end": at} if at > state.span["start"] else None
        states.save(self.warehouse, state)
        note = json.dumps({"binlake": {"run": self.run_id, "rollback": at}})

        def back(ts: TableState) -> None:
            if self.versions.exists(ts):
                deleted = self.versions.rollback(ts, at)
                ts.version = self.versions.version(ts)
                ts.rows = None if ts.rows is None else max(ts.rows - deleted, 0)

        with self.versions.noted(note):  # a commit per table, several at once
            each(self.spark.sparkContext, list(state.tables.values()), back, threads=TABLE_THREADS, name="tables")
        for ts in state.tables.values():
            ts.shapes = [sh for sh in ts.shapes if sh.time < at]
            if ts.complete_from is not None and ts.complete_from.time >= at:
                ts.complete_from = None
            if ts.partial_from is not None and ts.partial_from.time >= at:
                ts.partial_from = None
            if ts.baseline is not None and not ts.shapes:
                ts.baseline = None
            if ts.baseline is not None and ts.complete_from is None:
                ts.baseline = None
        log.info("%s: rolled back to %s", state.source, at)

    # -- the range ----------------------------------------------------------------------

    def _apply_range(self, state: SourceState, s: Summary, txns: DataFrame, span: tuple[str, str], *,
                     baselines: list[Baseline]) -> dict[str, Any] | None:
        """The range applied; its last transaction (order, txn_id), if it has one."""
        start, end = span
        reads = RangeReads(self.spark, self.wh, self.store, source=state.source, txns=txns, span=span)
        r = reads.read(baselines, driver_rows=DRIVER_ROWS)
        rows = r.rows
        touched, keys, s.row_changes = rows.images
        first = min([o for o in [rows.first] + [b.start for b in baselines] if o] or [orders.order("x.000001", 0)])
        planner = Planner(state, Point(first, start), r.history)
        plan = planner.plan(r.statements, touched, keys, baselines, written=rows.written)
        check_names(state.tables[t] for t in plan.touched if t in state.tables)
        self._prepare(state, plan)
        fold = RangeFold(self.spark, self.versions, self.store, state=state, plan=plan)
        out, counts = fold.folded(rows.changes, rows.here)
        self._write(state, plan, out, s, counts=counts)
        r.release()
        return rows.last

    # -- the Delta tables ---------------------------------------------------------------

    def _prepare(self, state: SourceState, plan: RangePlan) -> None:
        """Each changed table made (or its columns renamed and added) before its rows are written."""

        def made(name: str) -> None:
            ts = state.tables[name]
            self.versions.alter(ts, self.versions.create(ts, plan.delta_ops.get(name, [])))

        each(self.spark.sparkContext, sorted(plan.touched | set(plan.delta_ops)), made, threads=TABLE_THREADS,
             name="tables")

    def _write(self, state: SourceState, plan: RangePlan, out: DataFrame, s: Summary, *,
               counts: dict[str, Counts]) -> None:
        """A commit per table the range changes (the versions it opens and closes, `out`, counted
        per table in `counts`), each named by the run; the tables' versions and counts into the
        summary."""

        def written(name: str) -> int | None:
            ts = state.tables[name]
            if name not in counts:
                return self.versions.version(ts) if self.versions.exists(ts) else None
            rows = self._typed(ts, out.where(F.col("table") == name))
            return self.versions.merge(ts, rows, closes=int(counts[name][2] or 0))

        names = sorted(plan.touched | set(counts))
        note = json.dumps({"binlake": {"run": self.run_id, "source": state.source, "start": self.start,
                                       "end": self.end}})
        with self.versions.noted(note):  # a commit per table, several at once
            versions = each(self.spark.sparkContext, names, written, threads=TABLE_THREADS, name="tables")
        for name, version in zip(names, versions, strict=True):
            ts = state.tables[name]
            opened, closed, _ = counts.get(name, (0, 0, 0))
            held = ts.held
            ts.version, ts.rows = version, None if held is None else held + int(opened or 0)
            s.tables[name] = {"opened": int(opened or 0), "closed": int(closed or 0), "version": ts.version or 0}

    def _typed(self, ts, rows: DataFrame) -> DataFrame:
        """The fold's rows of one table as its Delta columns: each staged text cast to its column's type."""
        fields = self.spark.read.format("delta").load(self.versions.path(ts)).schema.fields
        source = [f for f in fields if not f.name.startswith("_") or f.name not in _VERSION_NAMES]
        struct = ", ".join(f"{q(f.name)}: STRING" for f in source) or "`_`: STRING"
        staged = rows.withColumn("_staged", F.expr(f"from_json(`values`, 'STRUCT<{struct}>')"))
        cols = [F.expr(cast(f.dataType.simpleString().upper(), f"_staged.{q(f.name)}")).cast(f.dataType).alias(f.name)
                for f in source]
        cols += [F.col("valid_from").cast("timestamp").alias("_valid_from"),
                 F.col("valid_to").cast("timestamp").alias("_valid_to"),
                 F.col("from_txn").alias("_from_txn"), F.col("to_txn").alias("_to_txn"),
                 F.col("from_order").alias("_from_order"), F.col("to_order").alias("_to_order"),
                 F.col("op").alias("_op"), F.col("from_seq").alias("_from_seq"), F.col("unknown").alias("_unknown"),
                 F.col("raw").alias("_raw"), F.col("existing").alias("_existing")]
        return staged.select(*cols)


_VERSION_NAMES = {"_valid_from", "_valid_to", "_from_txn", "_to_txn", "_from_order", "_to_order", "_op", "_from_seq",
                  "_unknown", "_raw"}


def summary_key(start: str, end: str) -> str:
    """Where a run over [start, end) leaves its summaries, under the warehouse."""
    return f"_summaries/tables_{compact_ts(parse_time(start))}_{compact_ts(parse_time(end))}.json"


def decide(state: SourceState, start: str, end: str, stale: str | None) -> tuple[str, str, bool] | str | None:
    """What applying [start, end) means for a source's state (docs/tables.md, "Reruns, backfills"):
    (from, to, rebuild) to apply; None when nothing changes (a rerun); a refusal's words. `stale`:
    the earliest instant an assemble run or a late baseline changed under the applied span."""
    span = state.span
    if span is None:
        return start, end, False
    if start > span["end"]:
        return (f"{span['end']}..{start} is not applied yet: apply it first (binlake tables --start {span['end']} "
                f"--end {start}, or from there to {end})")
    rebuild = stale
    if start < span["start"]:
        rebuild = min(rebuild or start, start)
    if rebuild is None and end <= span["end"]:
        return None
    if rebuild is not None:
        return rebuild, max(end, span["end"]), True
    return span["end"], end, False


def name_complete(state: SourceState, name: tuple[str, str]) -> bool:
    """Whether a table is complete already (from its CREATE or an earlier baseline), and not
    partial again since (written by statement: a baseline makes it complete again)."""
    ts = state.tables.get("/".join(name))
    return ts is not None and ts.complete_from is not None and ts.partial_from is None


def as_of(spark: SparkSession, warehouse: str, source: str, at: str, *, partial: bool = False
          ) -> dict[str, DataFrame]:
    """The source's tables at `at` (a time or a GTID), each its rows then with the source's columns
    as named then (typed: docs/tables.md's mapping), registered as temporary view `{db}__{table}`;
    by "db.table". Read at the Delta versions `_binlake.json` names, as `binlake asof` reads them."""
    from binlake.tables.asof import instant

    state = states.load(warehouse_uri(warehouse), source)
    if state is None:
        raise BinlakeError(f"source {source}: no row versions in {warehouse} (binlake tables)")
    point = instant(warehouse, state, at)
    out = {}
    for ts in state.tables.values():
        shape = point.shape(ts)
        if shape is None or shape.columns is None or ts.version is None or not (partial or point.complete(ts)):
            continue
        df = (spark.read.format("delta").option("versionAsOf", ts.version).load(f"{warehouse_uri(warehouse)}/{ts.path}")
              .where(point.sql()).select(*[F.col(q(c.column)).alias(c.name) for c in shape.columns]))
        df.createOrReplaceTempView(f"{ts.schema}__{ts.table}")
        out[f"{ts.schema}.{ts.table}"] = df
    return out
