"""A source table's row versions as a Delta table (docs/tables.md): made, reshaped, read and written.

Each is `{warehouse}/tables/{source}/{db}/{table}`: the source's columns, typed (binlake.tables.types),
then the version columns. Column mapping (`delta.columnMapping.mode = name`) lets a column be renamed
without rewriting a file, and lets MySQL's names hold any character; deletion vectors let a MERGE
close a version by marking its row deleted instead of rewriting its file. An apply writes one
MERGE per table: the versions it closes (matched by their identity among the current ones) and the
versions it opens.
"""

from __future__ import annotations

import logging
import re
from contextlib import AbstractContextManager
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructField

from binlake.spark.settings import session_settings
from binlake.spark.warehouse import compact, upkeep_settings, vacuum
from binlake.tables import state as states
from binlake.tables.state import TableState

log = logging.getLogger(__name__)
# The version columns, after the source's own, with their Spark SQL types (docs/tables.md, "Columns").
VERSION = [("_valid_from", "TIMESTAMP"), ("_valid_to", "TIMESTAMP"), ("_from_txn", "STRING"), ("_to_txn", "STRING"),
           ("_from_order", "STRING"), ("_to_order", "STRING"), ("_op", "STRING"), ("_from_seq", "BIGINT"),
           ("_unknown", "ARRAY<STRING>"), ("_raw", "MAP<STRING,STRING>")]
STATS = ["_valid_from", "_valid_to", "_from_order", "_to_order"]  # with the key: what readers and MERGE prune by
USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"  # a commit's note, when its writer gives none
PROPERTIES = {"delta.columnMapping.mode": "name", "delta.enableDeletionVectors": "true",
              "delta.minReaderVersion": "3", "delta.minWriterVersion": "7"}


def q(name: str) -> str:
    """A column's name quoted for Spark SQL."""
    return "`" + name.replace("`", "``") + "`"


def _text(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def literal(v: Any, spark_type: str) -> str:
    """A key's value (a Python int, Decimal or str) as a Spark SQL literal of its column's type."""
    if isinstance(v, str):
        return f"CAST({_text(v)} AS {spark_type})" if spark_type != "STRING" else _text(v)
    return str(v)


def cast(spark_type: str, expr: str) -> str:
    """The Spark SQL that turns a staged text (binlake.tables.types.Kind.stage) into its type."""
    if spark_type == "STRING":
        return expr
    if spark_type == "BINARY":
        return f"unbase64({expr})"
    if spark_type.startswith("ARRAY<"):
        return f"from_json({expr}, {_text(spark_type.lower())})"
    return f"CAST({expr} AS {spark_type})"


class Versions:
    """The row-versions tables of one warehouse."""

    def __init__(self, spark: SparkSession, warehouse: str) -> None:
        self.spark = spark
        self.warehouse = warehouse

    def path(self, ts: TableState) -> str:
        return f"{self.warehouse}/{ts.path}"

    def exists(self, ts: TableState) -> bool:
        from delta.tables import DeltaTable

        return DeltaTable.isDeltaTable(self.spark, self.path(ts))

    def size(self, ts: TableState) -> int:
        """The bytes of the table's files (its newest version's): a Spark job over its log after
        each commit (DESCRIBE DETAIL), which a rule asks only of a table that is not `small`."""
        from delta.tables import DeltaTable

        return int(DeltaTable.forPath(self.spark, self.path(ts)).detail().select("sizeInBytes").collect()[0][0])

    def small(self, ts: TableState) -> bool:
        """Whether the table holds at most SMALL_ROWS versions, by binlake's own count."""
        held = ts.held
        return held is not None and held <= SMALL_ROWS

    def version(self, ts: TableState) -> int:
        from delta.tables import DeltaTable

        return DeltaTable.forPath(self.spark, self.path(ts)).history(1).collect()[0]["version"]

    def create(self, ts: TableState, adds: list[tuple]) -> list[tuple]:
        """The table with its first columns (the ops that add them), if there is none; the ops left."""
        if self.exists(ts):
            return adds
        lead = next((i for i, op in enumerate(adds) if op[0] != "add"), len(adds))
        first, rest = adds[:lead], adds[lead:]  # the ops after the first rename stay in their order
        cols = [f"{q(n)} {t} COMMENT {_text(c)}" for _, n, t, c in first] + [f"{q(n)} {t}" for n, t in VERSION]
        made = {op[1] for op in first}
        stats = ",".join(q(c) for c in [k for k in ts.key or [] if k in made] + STATS)  # alter adds the key's later
        props = {**PROPERTIES, "delta.dataSkippingStatsColumns": stats}
        self.spark.sql(f"CREATE TABLE IF NOT EXISTS delta.`{self.path(ts)}` ({', '.join(cols)}) USING delta "
                       f"TBLPROPERTIES ({', '.join(f'{_text(k)} = {_text(v)}' for k, v in props.items())})")
        log.info("%s: created, %d columns", ts.name, len(first))
        return rest

    def alter(self, ts: TableState, ops: list[tuple]) -> None:
        """Renames and added columns, in order (each a metadata commit: no data file is rewritten)."""
        table = f"delta.`{self.path(ts)}`"
        have = set(self._names(ts))
        for op in ops:  # an op a failed run committed already (its state unsaved) is not done twice
            if op[0] == "rename" and (op[1] not in have and op[2] in have) or op[0] == "add" and op[1] in have:
                continue
            have = (have - {op[1]}) | {op[2]} if op[0] == "rename" else have | {op[1]}
            if op[0] == "rename":
                self.spark.sql(f"ALTER TABLE {table} RENAME COLUMN {q(op[1])} TO {q(op[2])}")
            else:
                _, name, spark_type, comment = op
                last = self._last_source_column(ts)
                where = f" AFTER {q(last)}" if last else " FIRST"
                self.spark.sql(f"ALTER TABLE {table} ADD COLUMNS ({q(name)} {spark_type} COMMENT {_text(comment)}"
                               f"{where})")
        if ops:
            self.keep_stats(ts)
            log.info("%s: %d column changes", ts.name, len(ops))

    def _names(self, ts: TableState) -> list[str]:
        return [f.name for f in self.spark.read.format("delta").load(self.path(ts)).schema.fields]

    def _last_source_column(self, ts: TableState) -> str | None:
        names = self._names(ts)
        source = names[:names.index("_valid_from")] if "_valid_from" in names else names
        return source[-1] if source else None

    def keep_stats(self, ts: TableState) -> None:
        """The data skipping statistics kept for the key (which may change) and the version columns."""
        have = set(self._names(ts))
        stats = ",".join(q(c) for c in [k for k in ts.key or [] if k in have] + STATS)
        self.spark.sql(f"ALTER TABLE delta.`{self.path(ts)}` SET TBLPROPERTIES "
                       f"('delta.dataSkippingStatsColumns' = {_text(stats)})")

    def current(self, ts: TableState, where: str | None = None) -> DataFrame:
        """The current versions (with `where`, a predicate on the key that prunes files), every
        column, `_valid_from` as the records' text."""
        df = self.spark.read.format("delta").load(self.path(ts)).where("_to_order IS NULL")
        if where:
            df = df.where(where)
        return df.withColumn("_valid_from", F.date_format("_valid_from", "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'"))

    def noted(self, note: str) -> AbstractContextManager[None]:
        """The block's commits (merges, appends, rollbacks) named by `note`, their userMetadata: a
        session setting, so set once around all the writes of a source, which threads make at once."""
        return session_settings(self.spark, {USER_METADATA: note})

    def merge(self, ts: TableState, rows: DataFrame, *, closes: int = 1) -> int:
        """One commit (inside `noted`): the versions closed (matched among the current ones by their
        identity: `_from_order`, `_from_seq` and the key) updated, the new ones inserted; its version.
        `closes`: how many rows of `rows` are `_existing` (versions it closes or completes). 0:
        nothing can match, so the commit is the MERGE's inserts alone, written as an append that
        neither reads nor joins the table (a first load, an insert-only table)."""
        from delta.tables import DeltaTable

        table = DeltaTable.forPath(self.spark, self.path(ts))
        if not closes:
            rows.drop("_existing").write.format("delta").mode("append").save(self.path(ts))
        else:
            fields = table.toDF().schema.fields  # the table's snapshot, loaded once for the MERGE
            names = [f.name for f in fields]
            on = ["t._to_order IS NULL", "s._existing", "t._from_order = s._from_order", "t._from_seq = s._from_seq"]
            on += [f"t.{q(k)} <=> s.{q(k)}" for k in ts.key or [] if k in names]
            if not self.small(ts) and closes * LISTED_BYTES_PER_KEY <= self.size(ts):
                on += closed_keys(rows, next((f for f in fields if f.name in (ts.key or [])[:1]), None))
            values: dict[str, str | Any] = {q(n): f"s.{q(n)}" for n in names}
            (table.alias("t").merge(rows.alias("s"), " AND ".join(on))
             .whenMatchedUpdate(set=values).whenNotMatchedInsert(condition="NOT s._existing", values=values)
             .execute())
        return table.history(1).collect()[0]["version"]

    def rollback(self, ts: TableState, at: str) -> int:
        """The table as it was before instant `at` (one commit, inside `noted`): versions opened from
        it deleted, versions closed from it open again; how many it deleted."""
        from delta.tables import DeltaTable

        table = DeltaTable.forPath(self.spark, self.path(ts))
        when = F.lit(at).cast("timestamp")
        metrics = (table.alias("t").merge(self.spark.range(0).alias("s"), "false")
                   .whenNotMatchedBySourceDelete(condition=F.col("t._valid_from") >= when)
                   .whenNotMatchedBySourceUpdate(condition=F.col("t._valid_to") >= when,
                                                 set={"_valid_to": "NULL", "_to_txn": "NULL", "_to_order": "NULL"})
                   .execute())
        return int(metrics.collect()[0]["num_deleted_rows"])

    def upkeep(self, retain_days: int) -> dict[str, dict[str, Any]]:
        """Every source's row-version tables compacted and their files no version of the last
        `retain_days` days names removed, as the changelog's tables are (binlake.spark.warehouse:
        compact, vacuum); per table (`source/db/table`), the files compacted, written and removed.
        A table is kept out where a commit after the version its source's state names changed its
        data: an apply that did not finish made it, and the next apply's rules decide on it. The
        state then names the compacted versions (the same rows), saved before VACUUM may remove the
        files of the versions before them: `binlake asof` reads the versions the state names. The
        caller holds the writer lease."""
        out: dict[str, dict[str, Any]] = {}
        with upkeep_settings(self.spark, retain_days):
            for state in states.load_all(self.warehouse):
                kept = []
                for ts in state.tables.values():
                    if ts.version is None or not self.exists(ts):
                        continue
                    name = f"{state.source}/{ts.name}"
                    later = self._written_since(ts, ts.version)
                    if later:
                        out[name] = {"kept_out": f"written after the version its state names ({ts.version}): "
                                                 f"{', '.join(later)}"}
                        log.warning("%s: kept out of the upkeep: %s", self.path(ts), out[name]["kept_out"])
                        continue
                    out[name] = compact(self.spark, self.path(ts), retain_days)
                    ts.version = self.version(ts)
                    kept.append((name, ts))
                if kept:
                    states.save(self.warehouse, state)
                for name, ts in kept:
                    out[name]["vacuumed"] = vacuum(self.spark, self.path(ts), retain_days)
        return out

    def _written_since(self, ts: TableState, version: int) -> list[str]:
        """The table's commits after `version` (the state's) that are not an upkeep's (its own, a
        user's OPTIMIZE): `version operation`, oldest first."""
        from delta.tables import DeltaTable

        later = (DeltaTable.forPath(self.spark, self.path(ts)).history().where(F.col("version") > version)
                 .select("version", "operation").orderBy("version").collect())
        return [f"{r['version']} {r['operation']}" for r in later if r["operation"] not in UPKEEP_OPERATIONS]


# The commits of an upkeep (binlake.spark.warehouse.compact, vacuum), which change no table's rows
UPKEEP_OPERATIONS = {"SET TBLPROPERTIES", "OPTIMIZE", "VACUUM START", "VACUUM END"}
# A table that holds at most this many versions (TableState.held) is small to the rules that weigh
# its bytes, which then do not read them: `size` costs 0.5-0.8 s after each commit, a third of the
# samples' version suites (23 tables). Small by both rules' measures: listing a MERGE's keys costs
# on 100,000 rows (LISTED_BYTES_PER_KEY), and the suites' window over 100,000 versions shuffles
# what the join would read twice (version_suites.JOINED_BYTES).
SMALL_ROWS = 100_000
# The most key values `closed_keys` lists in a MERGE's condition (the plan holds them all).
CLOSED_KEYS = 100_000
# A MERGE lists them where its table holds at least this much per version it closes: the list's
# planning grows with the keys, in each of the MERGE's passes; the join it spares, with the table
# (bench/RESULTS.md, bench/tables.py's section: it pays on ten million rows, costs on 100,000).
LISTED_BYTES_PER_KEY = 4096
_LISTED = ("TINYINT", "SMALLINT", "INT", "BIGINT", "STRING")
_WHOLE = re.compile(r"DECIMAL\(\d+,0\)")  # BIGINT UNSIGNED's type (binlake.tables.types), and any whole DECIMAL


def closed_keys(rows: DataFrame, field: StructField | None) -> list[str]:
    """`t.<key> IN (…)`: the first key column's values of the versions `rows` close, which the
    MERGE's condition implies (`t.key <=> s.key` of an `_existing` row). Spark pushes a condition on
    the target alone of the outer join a MERGE writes with under that join, so only those versions
    are shuffled and sorted, not every row of the files the MERGE touches (random keys touch every
    file). Nothing where there is no key, it is not an integer, a whole DECIMAL or a string, or has
    too many values."""
    if field is None:
        return []
    spark_type = field.dataType.simpleString().upper()
    whole = bool(_WHOLE.fullmatch(spark_type))
    if spark_type not in _LISTED and not whole:
        return []
    values = [r[0] for r in rows.where("_existing").select(q(field.name)).distinct().limit(CLOSED_KEYS + 1)
              .collect()]
    if not values or len(values) > CLOSED_KEYS:
        return []
    listed = [int(v) if whole else v for v in values if v is not None]
    terms = [f"t.{q(field.name)} IN ({', '.join(literal(v, spark_type) for v in listed)})"] if listed else []
    if len(listed) < len(values):
        terms.append(f"t.{q(field.name)} IS NULL")
    return [f"({' OR '.join(terms)})"]
