"""A range's row changes folded into row versions for `binlake tables` (binlake.spark.tables): the
stages of binlake.tables.stream (`route`, `held`, `fold`) over the range's rows and the current
versions of the tables they change, run by the driver where the range is short and what it reads of
the tables is bounded by it (`RangeFold.in_driver`), else in Spark's tasks (`RangeFold.in_spark`).
Either way the versions out are a DataFrame for the MERGE (binlake.spark.versions), with their
counts per table.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import BinaryType, StructField, StructType

from binlake.archive.stores import open_store
from binlake.spark.settings import session_settings
from binlake.spark.versions import Versions, literal, q
from binlake.tables import delta_reads
from binlake.tables.baselines import lines
from binlake.tables.key_ranges import changed_ranges
from binlake.tables.plan import RangePlan
from binlake.tables.state import SourceState, TableState
from binlake.tables.stream import (
    OUT,
    SORT,
    STREAM,
    Lineage,
    Routes,
    fold,
    held,
    held_keys,
    integer_key,
    route,
    snapshot_rows,
)

# The most bytes of Arrow createDataFrame makes a local relation of (plans carry its rows)
LOCAL_RELATION = "spark.sql.execution.arrow.localRelationThreshold"
# The most rows of each Arrow batch, and so of each partition, createDataFrame makes of a table
ARROW_BATCH = "spark.sql.execution.arrow.maxRecordsPerBatch"
# Of a table's versions the fold wrote: opened, closed, existing (those it closes or completes)
Counts = tuple[int, int, int]
COUNTED = pa.schema([("table", pa.string()), ("opened", pa.int64()), ("closed", pa.int64()),
                     ("existing", pa.int64())])
# The Arrow schemas of the fold's stages as Spark's (mapInArrow takes Spark's types)
_STREAM, _OUT = from_arrow_schema(STREAM), from_arrow_schema(OUT)
# The fold's partitions at most (a range's work, not the table's), one a core below that: more tasks
# than cores only add each task's cost, and the MERGE writes a file per partition.
PARTITIONS = 8

log = logging.getLogger(__name__)


class RangeFold:
    def __init__(self, spark: SparkSession, versions: Versions, store: str, *, state: SourceState,
                 plan: RangePlan) -> None:
        self.spark, self.versions, self.store = spark, versions, store
        self.state, self.plan = state, plan

    def folded(self, changes: Callable[[], DataFrame], here: pa.Table | None) -> tuple[DataFrame, dict[str, Counts]]:
        """The range's versions and their counts per table: folded by the driver where it holds the
        range's rows (`here`) and may fold them, else by Spark's tasks (`changes`: the same rows,
        as Spark has them)."""
        out = self.in_driver(here) if here is not None and self.foldable_here() else None
        if out is not None:
            return out
        versions = self.in_spark(changes())
        return versions, spark_counts(versions)

    def in_spark(self, changes: DataFrame) -> DataFrame:
        """The range folded in Spark's tasks: its row changes routed to their groups, with the
        current versions of each changed table (those of the changed keys, where its rows are keyed)
        and the baselines' rows it loads, repartitioned by group, sorted and folded."""
        state, plan = self.state, self.plan
        routes = plan.routes
        routed = changes.mapInArrow(functools.partial(route, routes), _STREAM).cache()  # read three times
        singles = [r["lineage"] for r in routed.where("key_changed").select("lineage").distinct().collect()]
        for lid in singles:
            routes.lineages[lid].single = True
        parts = [routed]
        for table, (lid, whole) in sorted(plan.candidates.items()):
            ts = state.tables[table]
            if not _by_key(whole, routes.lineages[lid]):
                current = self.versions.current(ts)
            else:
                # Matched by the fold's own key text, so as the server matches keys (collations
                # included), which held_keys makes from the key's columns alone.
                changes_of = routed.where(F.col("lineage") == lid)
                grps = [r["grp"] for r in changes_of.select("grp").distinct().collect()]
                current = self._changed_current(ts, routes, lid, grps=grps, changed=changes_of)
                changed = changes_of.select(F.col("grp").alias("_grp")).distinct()
                keyed = StructType([*current.schema.fields, StructField("_grp", BinaryType())])
                current = (current.mapInArrow(functools.partial(held_keys, routes, lid, table), keyed)
                           .join(F.broadcast(changed), "_grp", "left_semi").drop("_grp"))
            parts.append(current.mapInArrow(functools.partial(held, routes, lid, table), _STREAM))
        for load in plan.loads:
            key = routes.lineages[load.lineage].key
            store = self.store
            specs = self.spark.createDataFrame([(json.dumps(c),) for c in load.chunks], "chunk string")

            def chunk_task(it, load=load, key=key, store=store):
                s = open_store(store)
                for b in it:
                    for text in b.column("chunk").to_pylist():
                        chunk = tuple(json.loads(text))
                        yield from snapshot_rows(load, key, chunk, lines(s, chunk[0]))

            parts.append(specs.mapInArrow(chunk_task, _STREAM))
        stream = parts[0]
        for p in parts[1:]:
            stream = stream.unionByName(p)
        single = [lid for lid, ln in routes.lineages.items() if ln.single]
        if single:
            stream = stream.withColumn("grp", F.when(F.col("lineage").isin(single), F.lit(b"")).otherwise(F.col("grp")))
        tasks = min(PARTITIONS, self.spark.sparkContext.defaultParallelism)
        folded = (stream.repartition(tasks, "lineage", "grp").sortWithinPartitions(*SORT, "order", "seq")
                  .mapInArrow(functools.partial(fold, routes), _OUT))
        out = folded.localCheckpoint()
        routed.unpersist()
        return out

    def _changed_current(self, ts: TableState, routes: Routes, lid: int, *, grps: list[bytes], changed: DataFrame
                         ) -> DataFrame:
        """The current versions of a table matched by key that may be those of the keys the range
        changes (`grps`; `changed`: the same as a column `grp`), the fold's first cut: the key's
        intervals prune files (not rows: random keys span nearly every file), then an integer key's
        versions are cut to the changed keys' by value, in the JVM."""
        current = self.versions.current(ts, self._key_predicate(ts, grps))
        integers = integer_key(routes, lid, ts.name)
        return changed_integer_keys(current, changed, integers) if integers else current

    def foldable_here(self) -> bool:
        """Whether the driver can fold the range (its rows held, `in_driver`): no baseline to load,
        and each table's current versions that go on to the fold bounded by the range, not by the
        table: a small table's, or those of the keys the range changes where the key is an integer
        (cut to them by value as they are read). A whole table, or a big one keyed otherwise, is
        Spark's to fold."""
        state, plan = self.state, self.plan
        if plan.loads:
            return False
        for table, (lid, whole) in plan.candidates.items():
            if not self.versions.small(state.tables[table]) and (whole or integer_key(plan.routes, lid, table) is None):
                return False
        return True

    def in_driver(self, rows: pa.Table) -> tuple[DataFrame, dict[str, Counts]] | None:
        """`in_spark` in the driver, over the range's row changes it holds: the same stages
        (binlake.tables.stream) in the same order, the changed tables' current versions read with
        delta-rs instead of Spark's jobs (binlake.tables.delta_reads: no Delta log, plan nor job of
        the JVM's, a batch at a time), the groups sorted by Arrow instead of a shuffle;
        the versions out as a DataFrame for the MERGE, and their counts per table. None where an
        update changes a big table's key: its rows are then one group, with every current version
        (Spark's to fold)."""
        state, plan = self.state, self.plan
        routes = plan.routes
        routed = pa.Table.from_batches(list(route(routes, rows.to_batches())), STREAM)
        for lid in set(routed.filter(routed["key_changed"])["lineage"].to_pylist()):
            routes.lineages[lid].single = True
        if any(routes.lineages[lid].single and not self.versions.small(state.tables[table])
               for table, (lid, _) in plan.candidates.items()):
            return None

        def current_of(candidate: tuple[str, tuple[int, bool]]) -> pa.Table:
            table, (lid, whole) = candidate
            ts = state.tables[table]
            if not _by_key(whole, routes.lineages[lid]):
                versions = delta_reads.current(self.versions.warehouse, ts)
            else:  # only the versions of the keys the range changes, as `in_spark` keeps them
                grps = pa.array(sorted(set(routed.filter(pc.equal(routed["lineage"], lid))["grp"].to_pylist())),
                                pa.binary())
                versions = delta_reads.changed_current(self.versions.warehouse, ts, routes=routes, lineage=lid,
                                                       grps=grps)
            return pa.Table.from_batches(list(held(routes, lid, table, versions)), STREAM)

        # read with delta-rs, a batch at a time: no Spark job, plan nor Delta log of the JVM's
        current = [current_of(c) for c in sorted(plan.candidates.items())]
        stream = pa.concat_tables([routed, *current])
        single = [lid for lid, ln in routes.lineages.items() if ln.single]
        if single:
            grp = pc.if_else(pc.is_in(stream["lineage"], pa.array(single, pa.int32())), pa.scalar(b"", pa.binary()),
                             stream["grp"])
            stream = stream.set_column(stream.schema.get_field_index("grp"), "grp", grp)
        # Spark's order: ascending, nulls first, strings and bytes by their bytes
        stream = stream.sort_by([(c, "ascending", "at_start") for c in [*SORT, "order", "seq"]])
        # a batch even where none is out: Spark makes no DataFrame of a table without one
        batches = list(fold(routes, stream.to_batches())) or [pa.RecordBatch.from_pylist([], OUT)]
        out = pa.Table.from_batches(batches, OUT)
        log.info("folded in the driver: %d row changes, %d current versions, %d versions out", rows.num_rows,
                 stream.num_rows - routed.num_rows, out.num_rows)
        # Handed over as partitions, not as a local relation: its rows would be planned into every
        # query over them, the optimizer evaluating the MERGE source's JSON and casts in the driver
        # at each of the MERGE's passes, and each task carrying them all. A partition a core up to
        # PARTITIONS, as `in_spark`'s (not one an Arrow batch): the MERGE's passes run a task a
        # partition, and write a file each.
        per = -(-out.num_rows // min(PARTITIONS, self.spark.sparkContext.defaultParallelism)) or 1
        with session_settings(self.spark, {LOCAL_RELATION: "0", ARROW_BATCH: str(per)}):
            return self.spark.createDataFrame(out.combine_chunks(), schema=_OUT), counts(out)

    @staticmethod
    def _key_predicate(ts: TableState, grps: list[bytes]) -> str | None:
        """A predicate on the first key column that keeps the current versions of the keys the range
        changes (and prunes the files that hold none of them); None where it cannot be said."""
        ranges = changed_ranges(ts.shape(), ts.key, grps)
        if ranges is None:
            return None
        spark_type = ranges.column.kind().spark
        return ranges.sql(q, lambda v: literal(v, spark_type))


def counts(out: pa.Table) -> dict[str, Counts]:
    """The fold's versions counted per table: those it opens, those it closes, and those that were
    there before the range (the MERGE's `closes`)."""
    existing = pc.fill_null(out["existing"], False)
    opened = pc.fill_null(pc.invert(out["existing"]), False)
    flags = pa.table({"table": out["table"], "opened": opened.cast(pa.int64()),
                      "closed": pc.is_valid(out["to_order"]).cast(pa.int64()), "existing": existing.cast(pa.int64())})
    summed = flags.group_by("table").aggregate([(c, "sum") for c in ("opened", "closed", "existing")])
    return {r["table"]: (r["opened_sum"], r["closed_sum"], r["existing_sum"]) for r in summed.to_pylist()}


def _batch_counts(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """`counts` of each batch, as rows of COUNTED (for Spark to sum)."""
    for b in batches:
        counted = counts(pa.Table.from_batches([b]))
        yield pa.RecordBatch.from_pylist([dict(zip(COUNTED.names, (t, *c), strict=True)) for t, c in counted.items()],
                                         schema=COUNTED)


def _by_key(whole: bool, lineage: Lineage) -> bool:
    """Whether only the current versions of the keys a range changes go on to the fold: not where a
    statement changes every row, nor where the rows are one group (no key, or an update changes it)."""
    return not whole and not lineage.single and bool(lineage.key)


def changed_integer_keys(current: DataFrame, changes: DataFrame, columns: list[str]) -> DataFrame:
    """The current versions whose integer key one of the changes holds, matched by value in the
    JVM, and those held_keys can key only in Python (a value in `_raw`, one unknown): a superset
    of what the join on the key's text keeps, so that only these cross into Python. A change's key
    text is its values' JSON (key_text), which parses back to the same numbers."""
    parsed = F.from_json(F.col("grp").cast("string"), "ARRAY<DECIMAL(20,0)>")
    keys = (changes.select(parsed.alias("_k")).distinct()
            .select(*[F.col("_k")[i].alias(f"_binlake_k{i}") for i in range(len(columns))])
            .withColumn("_binlake_hit", F.lit(True)))
    on = [current[q(c)].eqNullSafe(keys[f"_binlake_k{i}"]) for i, c in enumerate(columns)]
    odd = (F.coalesce(F.size("_raw"), F.lit(0)) > 0) | (F.coalesce(F.size("_unknown"), F.lit(0)) > 0)
    return (current.join(F.broadcast(keys), on, "left").where(F.col("_binlake_hit").isNotNull() | odd)
            .select(*[current[q(c)] for c in current.columns]))


def spark_counts(out: DataFrame) -> dict[str, Counts]:
    """`counts` of Spark's versions: of each of its batches, summed."""
    summed = (out.select("table", "existing", "to_order").mapInArrow(_batch_counts, from_arrow_schema(COUNTED))
              .groupBy("table").agg(*[F.sum(c).alias(c) for c in COUNTED.names[1:]]).collect())
    return {r["table"]: (r["opened"], r["closed"], r["existing"]) for r in summed}
