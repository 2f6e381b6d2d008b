"""What one source's range holds, read for `binlake tables` (binlake.spark.tables) before it is
planned: its row changes to apply (an XA transaction's at its XA COMMIT) and what their row images
say of each table; the table statements (DDL, TRUNCATE) of its files, each at its transaction; the
tables its transactions wrote by statement; the schema state at its start; its first committed
transaction and its last.

A short range's transactions and row changes are read with delta-rs into the driver's Arrow
(binlake.spark.short_range), a longer range's by Spark. Reads that do not wait for each other run
side by side, each thread's Spark jobs in a scheduler pool of its own (binlake.spark.pools): much of
each is the driver's (Delta's log, planning, the archive's files), which one at a time leaves the
cores idle for.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from binlake.schema.ddl import SchemaState
from binlake.spark.pools import each, in_pool
from binlake.spark.short_range import ShortRange, holding
from binlake.spark.warehouse import RunRange, Warehouse, iso
from binlake.tables import delta_reads, images
from binlake.tables import order as orders
from binlake.tables.baselines import Baseline
from binlake.tables.plan import Statement, Written, table_statement

if TYPE_CHECKING:
    from binlake.splits.plan import Plan

_PARTIAL = from_arrow_schema(images.PARTIAL)
FEW = 50  # statements placed by a filter of their positions (RangeReads.placed)


@dataclass
class Rows:
    """What the range's rows say, read by Spark (`RangeReads.spark_rows`) or by delta-rs (`short_rows`)."""

    changes: Callable[[], DataFrame]  # the row changes to apply, with their transaction's place
    here: pa.Table | None  # the same rows, where the driver holds them (at most `driver_rows`)
    images: tuple[dict[tuple[str, str], list[str]], dict[tuple[str, str], list[str]], int]  # touched, keys, rows
    written: list[Written]  # the tables written by statement: the first after each statement or baseline point
    first: str | None  # the order of the range's first committed transaction
    last: dict[str, Any] | None  # the range's last transaction: its order and txn_id
    cached: list[DataFrame] = field(default_factory=list)  # what `RangeRead.release` unpersists


@dataclass
class RangeRead:
    """What `RangeReads.read` found; `release` when the range is applied."""

    rows: Rows
    statements: list[Statement]  # the range's table statements, in order
    history: SchemaState | None  # the schema at the range's start; None for a source without a history

    def release(self) -> None:
        for df in self.rows.cached:
            df.unpersist()


class RangeReads:
    def __init__(self, spark: SparkSession, wh: Warehouse, store: str, *, source: str, txns: DataFrame,
                 span: tuple[str, str]) -> None:
        self.spark, self.wh, self.store, self.source = spark, wh, store, source
        self.txns = txns  # the source's transactions, with their place in the commit order
        self.start, self.end = span

    def read(self, baselines: list[Baseline], *, driver_rows: int) -> RangeRead:
        """The range's reads, the baselines that start in it given (their points mark where a table
        written by statement may be whole again): a range of at most `driver_rows` transactions and
        row changes read with delta-rs into the driver (binlake.spark.short_range), a longer one by
        Spark."""
        from binlake.splits.plan import plan

        start, end = self.start, self.end
        sc = self.spark.sparkContext
        # The range's files read for their statements, and the schema history, while the range's
        # transactions and row changes are read.
        with ThreadPoolExecutor(2, thread_name_prefix="binlake-files") as pool:
            planned = pool.submit(plan, self.store, [self.source], start, end)  # the range's files, planned once
            found = pool.submit(lambda: self.statements(planned.result()))
            schemas = pool.submit(in_pool, sc, "schemas", lambda: self.history(planned.result()))
            short = ShortRange.read(self.wh.url, self.source, (start, end), driver_rows)
            rows = self.short_rows(short, found, baselines) if short is not None else \
                self.spark_rows(found, baselines, driver_rows)
            (earlier, statements, _), history = found.result(), schemas.result()
        if history is not None:  # moved to the start of the range's first file: on to the range's start
            for st in earlier:
                history.apply(st.db, st.sql, st.collation)
        return RangeRead(rows, statements, history)

    def short_rows(self, short: ShortRange, found: Future, baselines: list[Baseline]) -> Rows:
        """`spark_rows` of a short range, from its Arrow; Spark gets its row changes only where the
        driver's fold hands them over (binlake.spark.range_fold)."""
        here = short.changes()
        _, statements, by_statement = found.result()
        written = short.written(statements=statements, baselines=baselines, by_statement=by_statement)
        first, last = short.ends()
        return Rows(lambda: self.spark.createDataFrame(here), here,
                    images.merged(p for b in images.partial(here.to_batches()) for p in b.to_pylist()), written,
                    first, last)

    def spark_rows(self, found: Future, baselines: list[Baseline], driver_rows: int) -> Rows:
        """What the range's rows say, read by Spark: after Spark's planning of the range's
        transactions and row changes, the small queries over those at once."""
        sc = self.spark.sparkContext
        # read four times (the changes, the XA commits, the first order, the tables written by statement)
        in_range = self.txns.where(RunRange(self.start, self.end).condition()).cache()
        changes = self.changes(in_range)
        here: list[pa.Table] = []

        def images_of() -> tuple[dict, dict, int]:
            rows = changes.limit(driver_rows + 1).toArrow()
            if rows.num_rows <= driver_rows:
                here.append(rows)
                return images.merged(p for b in images.partial(rows.to_batches()) for p in b.to_pylist())
            changes.cache()
            return self.images(changes)

        def written_of() -> list[Written]:
            _, statements, by_statement = found.result()
            return self.written(in_range, statements=statements, baselines=baselines, by_statement=by_statement)

        def ends() -> Any:
            return in_range.agg(F.min(F.when(F.col("outcome") == "committed", F.col("order"))).alias("o"),
                                F.max_by(F.struct("order", "txn_id"), F.col("order")).alias("last")).collect()[0]

        queries = [images_of, written_of, ends]
        seen, written, last = each(sc, queries, lambda f: f(), threads=len(queries), name="prep")
        return Rows(lambda: changes, here[0] if here else None, seen, written, last["o"],
                    last["last"].asDict() if last["last"] is not None else None, [changes, in_range])

    def changes(self, in_range: DataFrame) -> DataFrame:
        """The range's row changes to apply, with their transaction's place: committed dml, and the
        rows of each XA transaction committed in the range (its prepare's, at its XA COMMIT)."""
        rc = self.wh.read("row_changes").where(F.col("source") == self.source)
        dml = (in_range.where((F.col("kind") == "dml") & (F.col("outcome") == "committed"))
               .select("txn_id", "binlog_file", "order", iso("commit_ts").alias("at")))
        rows = (rc.where(RunRange(self.start, self.end).condition())
                .join(dml, ["txn_id", "binlog_file"])
                .select("schema", "table", "op", "before", "after", "seq", "order", F.col("txn_id").alias("txn"),
                        "at"))
        commits = (in_range.where((F.col("kind") == "xa_commit") & (F.col("outcome") == "committed"))
                   .select("xa_xid", "order", "txn_id", iso("commit_ts").alias("at")).collect())
        if not commits:
            return rows
        prepared = (F.col("kind") == "xa_prepare") & F.col("xa_xid").isin([c["xa_xid"] for c in commits])
        prepares = (self.txns.where(prepared)
                    .select("xa_xid", "order", "txn_id", "binlog_file", iso("commit_ts").alias("at")).collect())
        chosen = []
        for c in commits:
            p = orders.prepare_of(c["order"], [(p["order"], p) for p in prepares if p["xa_xid"] == c["xa_xid"]])
            if p is not None:
                chosen.append((p["txn_id"], p["binlog_file"], p["at"], c["order"], c["txn_id"], c["at"]))
        if not chosen:
            return rows
        xa = self.spark.createDataFrame(chosen, "p_txn string, p_file string, p_at string, order string, "
                                                "txn string, at string")
        # read where the prepares logged them
        xa_rows = (rc.where(" OR ".join(f"({RunRange.instant(r[2]).condition()})" for r in chosen))
                   .join(F.broadcast(xa), (rc["txn_id"] == xa["p_txn"]) & (rc["binlog_file"] == xa["p_file"]))
                   .select("schema", "table", "op", "before", "after", "seq", "order", "txn", "at"))
        return rows.unionByName(xa_rows)

    def written(self, in_range: DataFrame, *, statements: list[Statement], baselines: list[Baseline],
                by_statement: list[tuple[str, int, str]]) -> list[Written]:
        """The tables the range's transactions wrote by statement: named in a transaction's `tables`
        with no row change of their own there, or named by a DML statement of the transaction
        (`by_statement`: its file, position and table; MIXED logs one transaction's statements
        either way, so a table can have both), applied or not (a rolled-back one's too: a
        non-transactional table keeps what a statement wrote). Of each table, the first after each
        table statement or baseline point: what may make it complete again
        (binlake.tables.plan.Planner._written)."""
        own = (self.wh.read("row_changes").where(RunRange(self.start, self.end, (self.source,)).condition())
               .select("txn_id", "binlog_file", F.concat_ws(".", "schema", "table").alias("name")).distinct())
        marks = sorted({st.order for st in statements} | {bt.complete for b in baselines for bt in b.tables.values()})
        before = F.size(F.filter(F.array(*[F.lit(m) for m in marks]), lambda m: m < F.col("order"))) if marks \
            else F.lit(0)
        txns = in_range.where(F.col("outcome") != "incomplete")
        cols: list[Column | str] = ["txn_id", "binlog_file", "order", iso("commit_ts").alias("at")]
        rows = (txns.where(F.size("tables") > 0).select(*cols, F.explode("tables").alias("name"))
                .join(own, ["txn_id", "binlog_file", "name"], "left_anti"))
        if by_statement:
            rows = rows.unionByName(self.placed(txns, by_statement).select(*cols, "name"))
        firsts = (rows.groupBy("name", before.alias("after"))
                  .agg(F.min_by(F.struct("order", "at"), F.col("order")).alias("first"))
                  .select("name", "first.order", "first.at").collect())
        return [Written(r["order"], r["at"], r["name"]) for r in firsts]

    def placed(self, txns: DataFrame, statements: list[tuple[str, int, str]]) -> DataFrame:
        """Each statement (its file, position, a name) with the transaction of `txns` holding it: the
        last to start at or before it in its file, if it ends after it (a file's transactions do
        not overlap: the one whose bytes hold the position). Up to FEW statements (a range's table
        statements), a filter of the transactions by their positions; more, a window over the
        file's positions, not a range join: a source logging STATEMENT has as many statements as
        transactions."""
        if len(statements) <= FEW:
            held = [((F.col("binlog_file") == file) & (F.col("start_pos") <= pos) & (F.col("end_pos") > pos), name)
                    for file, pos, name in statements]
            names = F.filter(F.array(*[F.when(cond, F.lit(name)) for cond, name in held]), lambda n: n.isNotNull())
            return (txns.where(functools.reduce(lambda a, b: a | b, [cond for cond, _ in held]))
                    .withColumn("name", F.explode(names)))
        named = self.spark.createDataFrame(statements, "binlog_file string, pos long, name string")
        spans: dict[str, tuple[int, int]] = {}
        for file, pos, _ in statements:
            lo, hi = spans.get(file, (pos, pos))
            spans[file] = (min(lo, pos), max(hi, pos))
        # only the transactions that may hold one: a DDL statement's file is read for one transaction
        near = functools.reduce(lambda a, b: a | b, [
            (F.col("binlog_file") == file) & (F.col("start_pos") <= hi) & (F.col("end_pos") > lo)
            for file, (lo, hi) in sorted(spans.items())])
        starts = (txns.where(near)
                  .select("binlog_file", F.col("start_pos").alias("pos"), F.lit(None).cast("string").alias("name")))
        # a transaction sorts before a statement at its own start (a lone Query event, no BEGIN)
        upto = (Window.partitionBy("binlog_file").orderBy("pos", F.col("name").isNotNull())
                .rowsBetween(Window.unboundedPreceding, Window.currentRow))
        start = F.last(F.when(F.col("name").isNull(), F.col("pos")), ignorenulls=True).over(upto)
        at = starts.unionByName(named).withColumn("start_pos", start).where(F.col("name").isNotNull())
        return txns.join(at, ["binlog_file", "start_pos"]).where(F.col("pos") < F.col("end_pos"))

    def images(self, changes: DataFrame) -> tuple[dict[tuple[str, str], list[str]],
                                                  dict[tuple[str, str], list[str]], int]:
        """What the range's row images say of each table (binlake.tables.images), in Spark's tasks."""
        partials = (changes.select("schema", "table", "op", "before", "after")
                    .mapInArrow(images.partial, _PARTIAL).collect())
        return images.merged(r.asDict(recursive=True) for r in partials)

    def statements(self, planned: Plan) -> tuple[list[Statement], list[Statement], list[tuple[str, int, str]]]:
        """The table statements (DDL, TRUNCATE) of the range's files up to its end, each at its
        transaction, in order: those before its start (its first file may begin earlier) and those
        in it; and the tables each DML statement there names as written (its file, position, "db.table"),
        read in the same pass over the files."""
        from binlake.assemble.statement_dml import DML_RE, written_tables
        from binlake.splits.schemas import archived_ddl

        def wanted(sql: str) -> bool:
            return bool(DML_RE.match(sql)) or table_statement(sql)

        found, dml = [], []
        for f in planned.files:
            for pos, db, sql, collation in archived_ddl(self.store, self.source, f.file, wanted=wanted) or []:
                names = written_tables(db, sql, grouped=False)  # the assembler's rule: [] for a table statement
                if names:
                    dml += [(f.file, pos, name) for name in names]
                else:
                    found.append((f.file, pos, db, sql, collation))
        if not found:
            return [], [], dml
        located = dict(holding(self.holders([(file, pos) for file, pos, *_ in found]),
                               [(file, pos, i) for i, (file, pos, *_) in enumerate(found)]))
        out = []
        for i, (_, _, db, sql, collation) in enumerate(found):
            t = located.get(i)
            if t is not None and t["at"] < self.end:
                out.append(Statement(orders.order(t["binlog_file"], t["end_pos"]), t["at"], t["txn_id"], db, sql,
                                     collation))
        out.sort(key=lambda st: st.order)
        return [st for st in out if st.time < self.start], [st for st in out if self.start <= st.time], dml

    def holders(self, statements: list[tuple[str, int]]) -> list[dict[str, Any]]:
        """The source's committed transactions (of any date) that may hold the statements (their
        file and position), read with delta-rs: of each file, those over the statements' positions
        (a DDL statement's file is read for one transaction)."""
        spans: dict[str, tuple[int, int]] = {}
        for file, pos in statements:
            lo, hi = spans.get(file, (pos, pos))
            spans[file] = (min(lo, pos), max(hi, pos))
        near = " OR ".join(f"(binlog_file = {delta_reads.text(file)} AND start_pos <= {hi} AND end_pos > {lo})"
                           for file, (lo, hi) in sorted(spans.items()))
        txns = delta_reads.read(self.wh.url, "transactions", "SELECT binlog_file, start_pos, end_pos, txn_id, "
                                f"commit_ts FROM t WHERE source = {delta_reads.text(self.source)} AND "
                                f"outcome = 'committed' AND ({near})")
        return txns.append_column("at", delta_reads.iso(txns["commit_ts"])).drop_columns(["commit_ts"]).to_pylist()

    def history(self, planned: Plan) -> SchemaState | None:
        """The schema state at the start of the range's first file, from the source's schema history
        (as the assemble job names the row changes); None for a source without one."""
        from binlake.schema.replay import moved
        from binlake.splits.schemas import archived_ddl, histories

        snapshots = histories(planned)
        if self.source not in snapshots or not planned.files:
            return None
        first = planned.files[0].file
        return moved(snapshots[self.source], first, lambda name: archived_ddl(self.store, self.source, name))
