"""The Spark settings binlake runs with, wherever its session is made: binlake.spark.job's
session(), and spark-submit from the Airflow operator (plugins/binlake_airflow). No pyspark
import here, so the operator reads them without loading Spark."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import shutil
from collections.abc import Iterable, Iterator, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from binlake.errors import BinlakeError

# Every session: whoever made it, the tables come out alike.
SESSION = {
    "spark.sql.session.timeZone": "UTC",  # commit_date is the UTC day
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",  # UTC instants every reader knows, not INT96
    # A task writes its few commit_date partitions through concurrent writers instead of sorting
    # all its rows by date first (sorting wide row changes runs a small heap out).
    "spark.sql.maxConcurrentOutputFileWriters": "8",
}
# The tables are Delta Lake tables: Delta's SQL (time travel, DESCRIBE HISTORY, OPTIMIZE, VACUUM) and
# its catalog; static, so set when a session starts (and on spark-submit's command line).
DELTA = {"spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
         "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog"}
TABLES = ("transactions", "row_changes", "anomalies")  # the warehouse's (binlake.spark.warehouse)
# How long a table keeps removed files and its log (time travel's reach) unless upkeep is told another.
RETAIN_DAYS = 7
# Spark's own log at WARN (its INFO is hundreds of lines a job) and no console progress bars
# (drawn on stderr, which a task log shows as errors); binlake logs the job's progress as counts
# itself. Set at start (static): `--conf spark.log.level=INFO` for more.
LOGS = {"spark.log.level": "WARN", "spark.ui.showConsoleProgress": "false"}
# Loggers at ERROR, whose warnings say nothing to a user: Spark warns of each FAIR pool no allocation
# file configures, a line per pool and run (binlake's, binlake.spark.pools, are named per thread and
# want Spark's defaults), and that it shortened a plan's text (which only its debug output shows).
QUIET_LOGGERS = ("org.apache.spark.scheduler.FairSchedulableBuilder", "org.apache.spark.util.SparkStringUtils")
# Loggers off, whose errors are none: Delta logs at ERROR each filter of a scan it cannot pass to
# Parquet under column mapping, among them its own deletion vectors' row filter, which Spark still
# applies after the read; every read of a row versions' table with deletion vectors printed the line.
MUTED_LOGGERS = ("org.apache.spark.sql.delta.DeltaParquetFileFormat",)
# Jobs that threads of one session run at once share the cores (each thread names its pool:
# binlake.spark.job writes the three tables so) instead of queueing behind the first one's tasks.
SCHEDULER = {"spark.scheduler.mode": "FAIR"}
LOCAL_MEMORY = "3g"  # JVM heap of a local master unless spark.driver.memory says otherwise


def quiet_spark_logs(spark: Any) -> None:
    """QUIET_LOGGERS at ERROR and MUTED_LOGGERS off in the session's JVM (Spark has no setting for
    one logger's level)."""
    jvm = spark._jvm  # noqa: SLF001 - log4j's Configurator has no Python API
    log4j = jvm.org.apache.logging.log4j
    for names, level in ((QUIET_LOGGERS, log4j.Level.ERROR), (MUTED_LOGGERS, log4j.Level.OFF)):
        for name in names:
            log4j.core.config.Configurator.setLevel(name, level)


def console_to_stderr(spark: Any) -> None:
    """The JVM's standard output sent where its logs go: binlake's own is its JSON records, and
    Delta prints to the console (VACUUM's "Deleted N files and directories…")."""
    system = spark._jvm.java.lang.System  # noqa: SLF001 - the JVM's streams have no Python API
    system.setOut(system.err)


def quiet_gx_logs() -> None:
    """Great Expectations at WARNING, set before it is imported: its import alone logs some 200
    INFO lines (one per documented API), and then a line per metric default. A level the logger
    has already (`binlake validate -v`, an Airflow logging config) is kept."""
    gx = logging.getLogger("great_expectations")
    if gx.level == logging.NOTSET:
        gx.setLevel(logging.WARNING)


JAVA_OPTIONS = "spark.driver.extraJavaOptions"
# The most binlog bytes a range may have for the driver to read it itself: its two passes over
# 16 MiB take a fraction of what a first Python worker costs (bench/RESULTS.md, bench/interval.py).
DRIVER_BYTES = 16 << 20
# A short run's JVM: C1 compiles only. Where the driver reads the range itself the JVM's work is a
# few small writes and queries, and C2's warm-up on 2 cores is most of what it would pay (an
# interval's time: bench/RESULTS.md, bench/interval.py); big ranges keep the full JIT for its steady state.
# C1 alone gets a 48 MB code cache, which Delta and GX in one JVM (`assemble --validate`) fill: the
# JIT then stops, and HotSpot prints its warning on stdout, where binlake's records go.
SHORT_JVM = {JAVA_OPTIONS:
             "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m -XX:+DisplayVMOutputToStderr"}


def is_local(master: str | None) -> bool:
    return (master or "").startswith("local")


def local_warehouse(url: str) -> bool:
    """Whether a warehouse is on the driver's file system (a path or file://)."""
    return "://" not in url or url.startswith("file://")


def quality_dir(warehouse: str, quality: str | None = None) -> Path:
    """Where validation keeps its GX project, data docs and reports: `quality` (a local or shared
    directory), else `{warehouse}/quality` for a local warehouse. GX's file context and its data
    docs are local files, so an s3a:// warehouse needs `quality` named."""
    if quality:
        return Path(os.path.abspath(quality.removeprefix("file://")))
    if not local_warehouse(warehouse):
        raise BinlakeError(f"{warehouse}: validation keeps its reports in a local directory: name one with "
                           "--quality DIR (the Airflow Variable's `quality`)")
    return Path(os.path.abspath(warehouse.removeprefix("file://"))) / "quality"


def delta(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The settings of a session that reads and writes the tables: Delta's SQL, the jars
    (binlake.spark.jars, fetched by make install) on the driver's and the executors' class paths
    (the same paths on every machine: the compose images have them; `spark.jars` would copy the
    AWS SDK's 600 MB to every executor of every application) and, where the AWS environment names an endpoint
    (MinIO, moto, Ceph: `AWS_ENDPOINT_URL`), S3A pointed at it, path-style. S3A takes the keys from
    the same environment (`AWS_ACCESS_KEY_ID`, …, its default credential chain): never written
    into a setting, so never printed with one."""
    from binlake.spark import jars

    env = os.environ if env is None else env
    paths = ":".join(jars.classpath())
    out = {**DELTA, "spark.driver.extraClassPath": paths, "spark.executor.extraClassPath": paths}
    endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    if endpoint:
        out.update({"spark.hadoop.fs.s3a.endpoint": endpoint, "spark.hadoop.fs.s3a.path.style.access": "true",
                    "spark.hadoop.fs.s3a.endpoint.region": env.get("AWS_DEFAULT_REGION")
                    or env.get("AWS_REGION") or "us-east-1"})
    return out


def in_driver(plan, split_bytes: int) -> bool:
    """Whether the driver reads a planned range (binlake.splits.Plan) itself: no bigger than one
    split and DRIVER_BYTES, without a big transaction; one task's work (binlake.spark.job)."""
    return not plan.bigs and plan.bytes <= min(split_bytes, DRIVER_BYTES)


# HotSpot's log to stderr only wherever the class archive is named: a mismatch is a warning, and
# its default output, stdout, carries binlake's records.
JVM_LOG = "-Xlog:disable -Xlog:all=warning:stderr"


def java() -> Path | None:
    """The java spark-submit starts (spark-class: $JAVA_HOME/bin/java, else the PATH's), resolved."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and os.path.exists(found) else None


def class_archive_inputs() -> list[str] | None:
    """What the archive of a local session's classes is checked against by the JVM: the Java (and
    its file's time), Spark's version, and every jar of the driver's class path (Spark's own and
    the fetched ones) with its size and time, which the JVM compares too: a reinstalled pyspark
    at the same path gets an archive of its own. None without Java or the fetched jars."""
    from binlake.spark import jars

    exe = java()
    if exe is None:
        return None
    try:
        extra = jars.classpath()
        spark = jars.pyspark_jars()
    except BinlakeError:
        return None
    return [str(exe), str(exe.stat().st_mtime_ns), metadata.version("pyspark"),
            *(jar_entry(p) for p in [*sorted(spark.glob("*.jar")), *map(Path, extra)])]


_JAR = re.compile(r"(/.+\.jar) (\d+) (\d+)")


def jar_entry(path: Path) -> str:
    """A class path jar as class_archive_inputs names it: its path, size and time."""
    st = path.stat()
    return f"{path} {st.st_size} {st.st_mtime_ns}"


def jar_entries(inputs: list[str]) -> list[Path]:
    """The class path jars of class_archive_inputs (none in an older binlake's)."""
    return [Path(m[1]) for m in map(_JAR.fullmatch, inputs) if m]


def class_archive() -> Path | None:
    """Where the archive of a local session's classes is kept (binlake.spark.classes makes it),
    named by its inputs, so that a changed install gets its own."""
    from binlake.spark import jars

    inputs = class_archive_inputs()
    if inputs is None:
        return None
    return jars.cache() / "classes" / f"spark-{hashlib.sha256(chr(10).join(inputs).encode()).hexdigest()[:16]}.jsa"


def class_sharing() -> str:
    """The driver's java options that map the class archive, or "" where there is none."""
    archive = class_archive()
    if archive is None or not archive.is_file():
        return ""
    return f"-XX:SharedArchiveFile={archive} {JVM_LOG}"


def with_java_options(options: str, conf: Mapping[str, str]) -> dict[str, str]:
    """`conf` with `options` before its own driver's java options: both kept, and where they set
    the same flag, the JVM takes the last, `conf`'s."""
    joined = " ".join(o for o in (options, conf.get(JAVA_OPTIONS, "")) if o)
    return {**conf, JAVA_OPTIONS: joined} if joined else dict(conf)


def for_range(conf: dict[str, str], plan, split_bytes: int) -> dict[str, str]:
    """A local master's settings for a planned range: SHORT_JVM under `conf` (which wins) where
    the driver reads the range itself. Before local(), which adds its own java options."""
    return {**SHORT_JVM, **conf} if in_driver(plan, split_bytes) else conf


# The grain a range is planned at for `binlake tables` (for_apply): its transactions' own bytes
# give or take a split per file, where an assemble's splits would count whole files.
APPLY_SPLIT_BYTES = 1 << 20
# An apply gets SHORT_JVM where its range has at most APPLY_SHORT_BYTES of binlog. Measured
# (bench/tables.py, bench/RESULTS.md): C1 alone applied an hour of 10 MiB (30,000 row changes by
# key) 4-5 s sooner to a table of 100 thousand rows and 8-9 s sooner to ten million, whose current
# versions the fold and the MERGE scan; a range of 49 MiB (a million inserts) 10 s later.
APPLY_SHORT_BYTES = 16 << 20


# for_apply's mark on a short apply's session (a setting of binlake's own, which Spark passes on to
# the session's conf): the job then gives its queries short_apply_settings.
SHORT_APPLY = "spark.binlake.apply.short"


def for_apply(conf: dict[str, str], plan) -> dict[str, str]:
    """A local master's settings for applying a range planned at APPLY_SPLIT_BYTES: SHORT_JVM and
    SHORT_APPLY under `conf` (which wins) where it is small. The apply's JVM work is then a few
    dozen small queries, Delta commits and scans, which C2's warm-up on 2 cores costs more than it
    gives back."""
    return {**SHORT_JVM, SHORT_APPLY: "true", **conf} if plan.bytes <= APPLY_SHORT_BYTES else conf


def short_apply_settings(spark: Any) -> dict[str, str]:
    """The session settings of an apply for_apply marked short: its shuffles in a partition a core,
    planned once. At a range's few thousand rows a query's cost is its planning; adaptive
    execution plans each stage again, Delta's scans prepared (their files, deletion vectors) each
    time (bench/RESULTS.md, bench/tables.py: 2-5 s of an hour's apply). None where unmarked, and
    none that the session was started with."""
    return _short_apply(spark, {"spark.sql.adaptive.enabled": "false",
                                "spark.sql.shuffle.partitions": str(spark.sparkContext.defaultParallelism)})


def _short_apply(spark: Any, wanted: Mapping[str, str]) -> dict[str, str]:
    """`wanted` where for_apply marked the session short, less what it was started with."""
    if spark.conf.get(SHORT_APPLY, "false") != "true":
        return {}
    given = spark.sparkContext.getConf()
    return {key: value for key, value in wanted.items() if not given.contains(key)}


# Where a short apply's tables hold at most this many versions each, its queries run interpreted
# (interpreted_settings). Measured (bench/RESULTS.md): the samples' 23 small tables applied in 41 s
# against 49 compiled (bench/samples.py); an hour applied to a table of 100 thousand rows the same
# either way; to ten million, 114 s against 36.
INTERPRETED_ROWS = 100_000
FACTORY_MODE = "spark.sql.codegen.factoryMode"


def interpreted_settings(spark: Any, held: Iterable[int | None]) -> dict[str, str]:
    """The settings of a short apply's queries over tables that each hold at most INTERPRETED_ROWS
    versions (`held`, None: not known): Spark's expressions interpreted instead of compiled. Each
    table's columns are new code to Spark (its projections, its writes' statistics), and compiling
    it costs a small table more than running it; a big one runs it on every row. None where the
    apply is not marked short, and none that the session was started with."""
    if any(n is None or n > INTERPRETED_ROWS for n in held):
        return {}
    return _short_apply(spark, {FACTORY_MODE: "NO_CODEGEN"})


def local(conf: dict | None = None) -> dict[str, str]:
    """A local master's settings under `conf` (which wins): the driver listens on loopback only,
    its JVM, which holds the executors too, gets more than Spark's 1g heap, and its Python workers
    (the driver's interpreter) import pyspark as installed, not from Spark's zips
    (binlake.spark.daemon). Delta rebuilds a table's state from its log in 50 partitions unless
    told otherwise: on one machine, for logs of a commit per run, that is some 150 tasks of
    nothing at every write and read (bench/RESULTS.md, "Delta's fixed costs"). Its JVM maps Spark's
    classes from binlake's archive where `make install` made one (binlake.spark.classes)."""
    return with_java_options(class_sharing(), {
        "spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1",
        "spark.driver.memory": LOCAL_MEMORY, "spark.python.daemon.module": "binlake.spark.daemon",
        "spark.databricks.delta.snapshotPartitions": "2", **(conf or {})})


@contextlib.contextmanager
def session_settings(spark: Any, settings: Mapping[str, str]) -> Iterator[None]:
    """A SparkSession's `settings` for the block, then each as it was (unset if it was not set)."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in before.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)
