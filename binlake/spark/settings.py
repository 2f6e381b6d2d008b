"""The Spark settings binlake runs with, wherever its session is made: binlake.spark.job's
session(), and spark-submit from the Airflow operator (plugins/binlake_airflow). No pyspark
import here, so the operator reads them without loading Spark."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from binlake.errors import BinlakeError

# Every session: whoever made it, the tables come out alike.
SESSION = {
    "spark.sql.session.timeZone": "UTC",  # commit_date is the UTC day
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",  # UTC instants every reader knows, not INT96
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    # A task writes its few commit_date partitions through concurrent writers instead of sorting
    # all its rows by date first (sorting wide row changes runs a small heap out).
    "spark.sql.maxConcurrentOutputFileWriters": "8",
}
# Spark's own log at WARN (its INFO is hundreds of lines a job) and no console progress bars
# (drawn on stderr, which a task log shows as errors); binlake logs the job's progress as counts
# itself. Set at start (static): `--conf spark.log.level=INFO` for more.
LOGS = {"spark.log.level": "WARN", "spark.ui.showConsoleProgress": "false"}
LOCAL_MEMORY = "3g"  # JVM heap of a local master unless spark.driver.memory says otherwise


def quiet_gx_logs() -> None:
    """Great Expectations at WARNING, set before it is imported: its import alone logs some 200
    INFO lines (one per documented API), and then a line per metric default. A level the logger
    has already (`binlake validate -v`, an Airflow logging config) is kept."""
    gx = logging.getLogger("great_expectations")
    if gx.level == logging.NOTSET:
        gx.setLevel(logging.WARNING)
DRIVER_BYTES = 8 << 20  # the most binlog bytes a range may have for the driver to read it itself
# A short run's JVM: C1 compiles only. Where the driver reads the range itself the JVM's work is a
# few small writes and queries, and C2's warm-up on 2 cores is most of what it would pay (an
# interval's time: bench/RESULTS.md, bench/interval.py); big ranges keep the full JIT for its steady state.
SHORT_JVM = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}


def is_local(master: str | None) -> bool:
    return (master or "").startswith("local")


def local_warehouse(url: str) -> bool:
    """Whether a warehouse is on the driver's file system (a path or file://): validation writes
    its data docs there, and only there for now."""
    return "://" not in url or url.startswith("file://")


def warehouse_dir(url: str) -> Path:
    """The directory of a local warehouse; an error for any other."""
    if not local_warehouse(url):
        raise BinlakeError(f"{url}: validation writes its data docs beside a local warehouse only "
                           "(file:// or a path) for now")
    return Path(os.path.abspath(url.removeprefix("file://")))


def in_driver(plan, split_bytes: int) -> bool:
    """Whether the driver reads a planned range (binlake.splits.Plan) itself: no bigger than one
    split and DRIVER_BYTES, without a big transaction; one task's work (binlake.spark.job)."""
    return not plan.bigs and plan.bytes <= min(split_bytes, DRIVER_BYTES)


def for_range(conf: dict[str, str], plan, split_bytes: int) -> dict[str, str]:
    """A local master's settings for a planned range: SHORT_JVM under `conf` (which wins) where
    the driver reads the range itself."""
    return {**SHORT_JVM, **conf} if in_driver(plan, split_bytes) else conf


def local(conf: dict | None = None) -> dict[str, str]:
    """A local master's settings under `conf` (which wins): the driver listens on loopback only,
    its JVM, which holds the executors too, gets more than Spark's 1g heap, and its Python workers
    (the driver's interpreter) import pyspark as installed, not from Spark's zips
    (binlake.spark.daemon)."""
    return {"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1",
            "spark.driver.memory": LOCAL_MEMORY, "spark.python.daemon.module": "binlake.spark.daemon",
            **(conf or {})}
