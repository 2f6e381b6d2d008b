"""The warehouse: its Delta Lake tables, the rows a run replaces, their history and upkeep.

Like delta.tables.DeltaTable, one object holds a table's data, its history and its maintenance:
`Warehouse(spark, url)` for `transactions`, `row_changes` and `anomalies`, each a Delta table under
`{warehouse}/{name}`, partitioned by `commit_date` (DESIGN.md, "Tables").

A run replaces its range — the rows of its sources whose `commit_ts` is in `[start, end)`,
`RunRange.condition()` — in one commit per table: Delta's `replaceWhere` writes the new files and
commits them with the removal of every file that held rows of the range (the files that also hold
kept rows are rewritten with those rows, in the same commit). Where the table's log says no file can
hold a row of the range (`holds_none`: a new table, an hourly run's next hour) the run's files are
appended instead, one commit too: replaceWhere would have Delta rebuild the table's state with Spark
jobs to find files to remove where there are none. A reader sees the range as it was or as it is,
never both, never neither; a run that dies before its commit leaves only files no commit names
(VACUUM removes them). Each commit's `userMetadata` names its run (`Note`): range, sources,
status and counts, so `DESCRIBE HISTORY` lists what every run did. Validation reads the same
condition, at the version the run wrote.

Reading the directories' Parquet files directly would see files a commit removed: every reader
goes through Delta (`read`, Spark's `delta` format, delta-rs).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from binlake.errors import BinlakeError
from binlake.spark import schema
from binlake.spark.pools import each
from binlake.spark.settings import RETAIN_DAYS, TABLES, session_settings
from binlake.tables.delta_reads import storage

log = logging.getLogger(__name__)
# Min/max statistics only where readers filter (Delta's default is the first 32 columns: the row
# changes' JSON images too, a cost on every write for no query); range, file and transaction keys.
STATS = {"transactions": "commit_ts,source,binlog_file,start_pos,txn_id,gtid,kind",
         "row_changes": "commit_ts,source,binlog_file,txn_id,schema,table",
         "anomalies": "commit_ts,source,binlog_file,code,severity"}
# Delta's statistics of a timestamp are its milliseconds: a file's true bounds within one of them
STATS_SLACK = dt.timedelta(milliseconds=1)
FORMAT_NOTE = "binlake"  # the key of a binlake commit's userMetadata (others' commits lack it)


def warehouse_uri(url: str) -> str:
    """A warehouse location as Hadoop names it: a plain path becomes file:///abs/path."""
    return (url if "://" in url else "file://" + os.path.abspath(url)).rstrip("/")


def iso(column: str) -> Column:
    """A timestamp column as text in the records' own form (binlake.splits.times.parse_time's)."""
    return F.date_format(column, "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'")


def _instant(ts: str) -> dt.datetime:
    return dt.datetime.fromisoformat(ts).astimezone(dt.UTC)


def _sql_text(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


@dataclass(frozen=True)
class RunRange:
    """The rows a run replaces: of `sources` (every source when None), committed in [start, end)."""

    start: str  # ISO 8601 instants (binlake.splits.times.parse_time's form)
    end: str
    sources: tuple[str, ...] | None = None

    @classmethod
    def instant(cls, at: str, sources: tuple[str, ...] | None = None) -> RunRange:
        """The rows committed at instant `at` (microseconds): an XA PREPARE's, which its XA COMMIT
        applies in a later range."""
        return cls(at, (_instant(at) + dt.timedelta(microseconds=1)).isoformat(), sources)

    def bounds(self) -> tuple[dt.datetime, dt.datetime]:
        return _instant(self.start), _instant(self.end)

    def dates(self) -> list[dt.date]:
        """The commit_date partitions the range touches."""
        first, last = _instant(self.start).date(), (_instant(self.end) - dt.timedelta(microseconds=1)).date()
        return [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]

    def condition(self) -> str:
        """The range as a Spark SQL predicate: replaceWhere's, and validation's selection. Its
        commit_date bounds let Delta prune to the touched days before it reads a statistic."""
        days = self.dates()
        parts = [f"commit_date >= DATE'{days[0].isoformat()}'", f"commit_date <= DATE'{days[-1].isoformat()}'",
                 f"commit_ts >= TIMESTAMP'{_instant(self.start).isoformat()}'",
                 f"commit_ts < TIMESTAMP'{_instant(self.end).isoformat()}'"]
        if self.sources is not None:
            parts.append(f"source IN ({', '.join(_sql_text(s) for s in self.sources)})" if self.sources else "FALSE")
        return " AND ".join(parts)


@dataclass
class Note:
    """What a run's commit says of it (its userMetadata, as JSON under FORMAT_NOTE)."""

    run: str
    start: str
    end: str
    sources: list[str]
    store: str
    status: str = "ok"  # "failed": the range's data is not whole (failed_because says why)
    failed_because: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def text(self) -> str:
        return json.dumps({FORMAT_NOTE: asdict(self)}, separators=(",", ":"), sort_keys=True)

    @classmethod
    def of(cls, user_metadata: str | None) -> Note | None:
        """A commit's note, or None for a commit binlake did not make (OPTIMIZE, a user's)."""
        try:
            body = json.loads(user_metadata or "")[FORMAT_NOTE]
        except (ValueError, KeyError, TypeError):
            return None
        return cls(**body)


@dataclass(frozen=True)
class Commit:
    """One entry of a table's history."""

    version: int
    timestamp: dt.datetime
    operation: str
    note: Note | None
    metrics: dict[str, str]

    def rows_written(self, run: str) -> int:
        """The rows `run` wrote in this commit (Delta's own count); none if the commit is another's
        (`replace` returns the table's last commit when the run had nothing to write)."""
        return int(self.metrics.get("numOutputRows", 0)) if self.note is not None and self.note.run == run else 0


class Warehouse:
    def __init__(self, spark: SparkSession, url: str) -> None:
        self.spark = spark
        self.url = warehouse_uri(url)

    def path(self, name: str) -> str:
        if name not in TABLES:
            raise BinlakeError(f"no table {name!r} in a binlake warehouse ({', '.join(TABLES)})")
        return f"{self.url}/{name}"

    def _delta(self, name: str):
        from delta.tables import DeltaTable

        return DeltaTable.forPath(self.spark, self.path(name))

    def exists(self, name: str) -> bool:
        from delta.tables import DeltaTable

        return DeltaTable.isDeltaTable(self.spark, self.path(name))

    def create(self, name: str) -> None:
        """The table, empty, if there is none: its schema, partitioning and properties."""
        self.spark.sql(
            f"CREATE TABLE IF NOT EXISTS delta.`{self.path(name)}` ({schema.STORED[name].toDDL()}) USING delta "
            f"PARTITIONED BY (commit_date) TBLPROPERTIES ('delta.dataSkippingStatsColumns' = '{STATS[name]}', "
            f"'delta.deletedFileRetentionDuration' = 'interval {RETAIN_DAYS} days', "
            f"'delta.logRetentionDuration' = 'interval {max(RETAIN_DAYS, 30)} days')")

    def create_missing(self) -> None:
        """The tables the warehouse lacks, made (a new warehouse's first run), at once: each table's
        first commit is the driver's work, most of it waiting on the file system or Delta's log."""
        def made(name: str) -> None:
            self.spark.sparkContext.setJobDescription("binlake: create the tables")
            if not self.exists(name):
                self.create(name)

        each(self.spark.sparkContext, TABLES, made, threads=len(TABLES), name="binlake-create")

    def _check(self, name: str) -> None:
        if not self.exists(name):
            raise BinlakeError(f"{self.path(name)}: no such Delta table (run binlake assemble first; a warehouse "
                               "of plain Parquet from an earlier release: binlake upgrade)")

    def version(self, name: str) -> int:
        """A table's newest version."""
        self._check(name)
        return self.history(name, 1)[0].version

    def read(self, name: str, version: int | None = None, timestamp: str | None = None) -> DataFrame:
        """A table through Delta: its current version, or as of a version or a time (time travel)."""
        self._check(name)
        reader = self.spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        elif timestamp is not None:
            reader = reader.option("timestampAsOf", timestamp)
        return reader.load(self.path(name))

    def replace(self, name: str, rows: DataFrame, rng: RunRange, *, note: Note,
                options: dict[str, str] | None = None) -> Commit:
        """The range's rows of a table replaced by `rows` (which must all be in the range: Delta
        refuses the commit otherwise) in one commit, which `note` names; that commit, or the table's
        last when nothing changed (no rows before or now: Delta makes no commit). Appended where no
        file can hold a row of the range (`holds_none`). The table exists (`create_missing`, before
        the run's jobs: not asked again here, a log read per table); the caller holds the writer
        lease (binlake.spark.writer): no commit comes between the log's read and this one."""
        self.spark.sparkContext.setJobDescription(f"binlake: write {name}")
        writer = rows.write.format("delta").options(**(options or {})).option("userMetadata", note.text())
        if self.holds_none(name, rng):
            writer.mode("append").save(self.path(name))
        else:
            (writer.mode("overwrite").option("partitionOverwriteMode", "static")
             .option("replaceWhere", rng.condition()).save(self.path(name)))
        commit = self.history(name, 1)[0]
        if commit.note is None or commit.note.run != note.run:
            log.info("%s: nothing in the range, before or now: unchanged at version %d", name, commit.version)
            return commit
        log.info("%s: version %d, %s", name, commit.version,
                 ", ".join(f"{k} {commit.metrics[k]}" for k in ("numOutputRows", "numRemovedFiles", "numFiles")
                           if k in commit.metrics))
        return commit

    def holds_none(self, name: str, rng: RunRange) -> bool:
        """Whether no file of the table can hold a row of the range, by its log alone (read by
        delta-rs: no Spark job): each file's `commit_date`, and its `commit_ts` and `source`
        statistics (bounds, as Delta's own file skipping reads them). A file without them, or a log
        delta-rs cannot read, may hold any row: False."""
        from deltalake import DeltaTable

        uri, options = storage(self.path(name))
        try:
            found = DeltaTable(uri, storage_options=options).get_add_actions(flatten=True)
        except Exception as e:  # noqa: BLE001 - delta-rs's errors (a feature it lacks, the store's): Delta's search
            log.info("%s: its log not read by delta-rs (%s): the range's files searched by Delta", name, e)
            return False
        columns = ("partition.commit_date", "min.commit_ts", "max.commit_ts", "min.source", "max.source")
        if found.num_rows == 0:
            return True
        if not set(columns) <= set(found.column_names):
            return False
        lo, hi = rng.bounds()
        days = set(rng.dates())
        for day, first, last, low, high in zip(*(found.column(c).to_pylist() for c in columns), strict=True):
            if day not in days:
                continue  # a file of another day (or of no commit_ts: no day)
            if first is None or last is None or low is None or high is None:
                return False
            if first - STATS_SLACK < hi and last + STATS_SLACK >= lo and (
                    rng.sources is None or any(low <= s <= high for s in rng.sources)):
                return False
        return True

    def history(self, name: str, limit: int | None = None) -> list[Commit]:
        """A table's commits, newest first (DESCRIBE HISTORY), from its log as delta-rs reads it:
        Delta's own history is a Spark job each time (0.5-2 s of a short run, once per table after
        its write); by Delta's where delta-rs cannot read the log."""
        from deltalake import DeltaTable

        uri, options = storage(self.path(name))
        try:
            found = DeltaTable(uri, storage_options=options).history(limit)
        except Exception as e:  # noqa: BLE001 - delta-rs's errors (a feature it lacks, the store's): Delta's history
            log.info("%s: its log not read by delta-rs (%s): its history read by Delta", name, e)
            return self._history_by_spark(name, limit)
        return [Commit(c["version"], dt.datetime.fromtimestamp(c["timestamp"] / 1000, dt.UTC), c["operation"],
                       Note.of(c.get("userMetadata")), dict(c.get("operationMetrics") or {})) for c in found]

    def _history_by_spark(self, name: str, limit: int | None) -> list[Commit]:
        table = self._delta(name)
        rows = (table.history(limit) if limit else table.history()).select(
            "version", "timestamp", "operation", "userMetadata", "operationMetrics").collect()
        return [Commit(r["version"], r["timestamp"].astimezone(dt.UTC), r["operation"],
                       Note.of(r["userMetadata"]), dict(r["operationMetrics"] or {})) for r in rows]

    def runs(self, name: str = "transactions") -> list[Commit]:
        """The commits binlake's runs made, newest first: what each run did."""
        return [c for c in self.history(name) if c.note is not None]

    def upkeep(self, retain_days: int = RETAIN_DAYS) -> dict[str, dict[str, int]]:
        """Each table's small files compacted (OPTIMIZE: the files hourly runs leave in a day, into
        few) and the files no version of the last `retain_days` days needs removed (VACUUM), so that
        time travel reaches that far back and no further (0: the current version only); per table,
        the files compacted, written and removed. The caller holds the writer lease
        (binlake.spark.writer): no run's files in progress can be taken for garbage."""
        out = {}
        with upkeep_settings(self.spark, retain_days):
            for name in TABLES:
                if self.exists(name):
                    out[name] = {**compact(self.spark, self.path(name), retain_days),
                                 "vacuumed": vacuum(self.spark, self.path(name), retain_days)}
        return out

    def upgrade(self) -> dict[str, int]:
        """A warehouse an earlier release wrote (plain Parquet, the same layout) made Delta in place:
        each table's files listed in a first commit, none rewritten (CONVERT TO DELTA); rows per table."""
        from delta.tables import DeltaTable

        out = {}
        for name in TABLES:
            if self.exists(name):
                log.info("%s: a Delta table already", name)
                continue
            files = self._parquet_files(name)
            if files is None:
                continue  # no such table: the next run makes it
            self.spark.sparkContext.setJobDescription(f"binlake: convert {name} to Delta")
            if files:
                DeltaTable.convertToDelta(self.spark, f"parquet.`{self.path(name)}`", "commit_date DATE")
            else:  # no rows yet, no file to list (a _SUCCESS marker at most): an empty Delta table written there
                (self.spark.createDataFrame([], schema.STORED[name]).write.format("delta")
                 .partitionBy("commit_date").mode("overwrite").save(self.path(name)))
            self.spark.sql(f"ALTER TABLE delta.`{self.path(name)}` SET TBLPROPERTIES ("
                           f"'delta.dataSkippingStatsColumns' = '{STATS[name]}')")
            out[name] = self.read(name).count()
            log.info("%s: converted to Delta, %d rows", name, out[name])
        return out

    def _parquet_files(self, name: str) -> int | None:
        """How many Parquet files a table's directory holds, or None when there is no directory."""
        jvm = self.spark._jvm  # noqa: SLF001 - Hadoop's FileSystem has no Python API
        assert jvm is not None
        p = jvm.org.apache.hadoop.fs.Path(self.path(name))
        fs = p.getFileSystem(self.spark.sparkContext._jsc.hadoopConfiguration())  # noqa: SLF001
        if not fs.exists(p):
            return None
        found, listing = 0, fs.listFiles(p, True)
        while listing.hasNext():
            found += listing.next().getPath().getName().endswith(".parquet")
        return found


def upkeep_settings(spark: SparkSession, retain_days: int) -> AbstractContextManager[None]:
    """The session settings of an upkeep (compact, vacuum), for `retain_days` of time travel.
    Delta refuses a retention under its tables' default (7 days) unless told it is meant.
    VACUUM lists the table's directories in as many tasks as Spark's partition discovery may
    use (10,000 by default): on a few cores that alone took 25-40 s a table of one directory;
    and it joins file names in Spark's 200 shuffle partitions, some 200 tasks a job for each
    of its two dozen jobs. VACUUM logs its START and END commits (what it removed: read
    back from the END's metrics), which Delta leaves off by default on some stores: the
    writer lease makes this the warehouse's one writer."""
    if retain_days < 0:
        raise BinlakeError(f"--retain-days {retain_days}: a number of days, 0 or more")
    tasks = str(4 * spark.sparkContext.defaultParallelism)
    return session_settings(spark, {"spark.databricks.delta.retentionDurationCheck.enabled": "false",
                                    "spark.sql.sources.parallelPartitionDiscovery.parallelism": tasks,
                                    "spark.sql.shuffle.partitions": tasks,
                                    "spark.databricks.delta.vacuum.logging.enabled": "true"})


def compact(spark: SparkSession, path: str, retain_days: int) -> dict[str, int]:
    """A Delta table's time travel set to `retain_days` (its log kept 30 days at least) and its
    small files compacted (OPTIMIZE, a commit of the same rows); the files compacted and written.
    Under upkeep_settings."""
    from delta.tables import DeltaTable

    spark.sparkContext.setJobDescription(f"binlake: upkeep of {path}")
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ("
              f"'delta.deletedFileRetentionDuration' = 'interval {retain_days} days', "
              f"'delta.logRetentionDuration' = 'interval {max(retain_days, 30)} days')")
    metrics = DeltaTable.forPath(spark, path).optimize().executeCompaction().select("metrics.*").collect()[0]
    done = {"compacted": int(metrics["numFilesRemoved"]), "written": int(metrics["numFilesAdded"])}
    log.info("%s: %d files compacted into %d", path, done["compacted"], done["written"])
    return done


def vacuum(spark: SparkSession, path: str, retain_days: int) -> int:
    """The files of a Delta table that no version of the last `retain_days` days names, removed
    (VACUUM); how many, as the `VACUUM END` commit it logs counts them (data files, not the .crc
    files Hadoop deletes beside them). Under upkeep_settings."""
    from delta.tables import DeltaTable

    spark.sparkContext.setJobDescription(f"binlake: upkeep of {path}")
    spark.sql(f"VACUUM delta.`{path}` RETAIN {retain_days * 24} HOURS")
    end = DeltaTable.forPath(spark, path).history(1).select("version", "operation", "operationMetrics").collect()[0]
    if end["operation"] != "VACUUM END":
        raise BinlakeError(f"{path}: VACUUM logged no end (newest commit: {end['operation']} {end['version']})")
    removed = int(end["operationMetrics"]["numDeletedFiles"])
    log.info("%s: %d files removed (%d days retained)", path, removed, retain_days)
    return removed
