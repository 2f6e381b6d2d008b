"""Class data sharing for a local driver's JVM: the classes a binlake session loads (Spark's,
Delta's, Hadoop's) mapped from an archive made once, instead of found, read, verified and parsed
from the 280-odd jars of its class path at every start.

The archive is HotSpot's dynamic CDS archive (JEP 350): `python -m binlake.spark.classes` (make
install runs it) starts a session as binlake's local sessions start, runs the kinds of work they
run (Delta's writes, reads, MERGE and history; Python's Arrow UDFs; joins, JSON, aggregates), and
the JVM writes the classes it loaded at its exit, into the cache
(`${BINLAKE_CACHE:-~/.cache/binlake}/classes/`), one archive per Java, Spark and class path. A
local session (binlake.spark.settings.local: the CLI's and the Airflow operator's) names it where
it is there (settings.class_sharing). The JVM checks it against itself and its class path and,
where they differ (a jar replaced, another Java), starts without it, as before: the archive makes
a start faster, never different. The JVM's own log goes to stderr with it: stdout carries
binlake's records.

    python -m binlake.spark.classes          # the archive for this Java and Spark, made once; its path
    python -m binlake.spark.classes --path   # where it is (or would be)
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

from binlake.errors import BinlakeError
from binlake.spark.settings import class_archive, class_archive_inputs, jar_entries, jar_entry, java

log = logging.getLogger(__name__)


def build() -> Path:
    """The archive for this Java and Spark, made if it is not there (a minute or two); its path."""
    archive = class_archive()
    if archive is None:
        raise BinlakeError("no archive of Spark's classes without Java and the fetched jars (make install)")
    if archive.is_file():
        return archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    tmp = archive.with_name(f"{archive.stem}.{os.getpid()}.tmp")
    with tempfile.TemporaryDirectory(prefix="binlake-classes-") as work:
        _train(tmp, Path(work))
    if not tmp.is_file() or tmp.stat().st_size == 0:
        raise BinlakeError(f"the JVM wrote no class archive to {tmp} (its log is on stderr)")
    archive.with_suffix(".json").write_text(json.dumps(class_archive_inputs()))
    os.replace(tmp, archive)  # whole or not at all: a session maps only a finished archive
    _prune(archive.parent)
    log.info("Spark's classes archived in %s (%d MiB, %.0f s)", archive, archive.stat().st_size >> 20,
             time.monotonic() - began)
    return archive


def _prune(directory: Path) -> None:
    """The archives of installs that are gone (a Java, a Spark or a jar no longer there, or
    replaced: the JVM would refuse them): another install's (another virtualenv's) stays while
    it is there."""
    for archive in directory.glob("spark-*.jsa"):
        try:
            inputs = json.loads(archive.with_suffix(".json").read_text())
        except (OSError, ValueError):
            inputs = None
        if not isinstance(inputs, list) or not still_there(inputs):
            archive.unlink(missing_ok=True)
            archive.with_suffix(".json").unlink(missing_ok=True)
            log.info("%s removed: made for an install that is gone", archive)


def still_there(inputs: list[str]) -> bool:
    """Whether the Java and the jars an archive was made from (settings.class_archive_inputs) are
    there as they were; inputs without jars are an older binlake's, made again under a new name."""
    jars, made = jar_entries(inputs), set(inputs)
    try:
        return bool(jars) and str(os.stat(inputs[0]).st_mtime_ns) == inputs[1] and \
            all(jar_entry(p) in made for p in jars)
    except OSError:  # the Java or a jar gone
        return False


def _train(into: Path, work: Path) -> None:
    """A local session that loads what binlake's sessions load, its JVM writing them to `into` at exit."""
    from pyspark import SparkContext
    from pyspark.sql import functions as F

    from binlake.spark.job import session
    from binlake.spark.versions import PROPERTIES

    jvm = f"-XX:ArchiveClassesAtExit={into} -Xlog:disable -Xlog:all=error:stderr"
    # Spark's log off: Delta logs an ERROR for a filter it leaves to Spark, which is none of the user's
    spark = session("local[2]", app="binlake-classes", conf={"spark.driver.extraJavaOptions": jvm,
                                                             "spark.log.level": "OFF", "spark.ui.enabled": "false"})
    table = str(work / "t")
    rows = spark.range(2000).select(F.col("id").alias("k"), (F.col("id") % 7).alias("v"),
                                    F.to_json(F.struct("id")).alias("j"), F.current_timestamp().alias("ts"),
                                    F.to_date(F.current_timestamp()).alias("d"))
    rows.write.format("delta").partitionBy("d").save(table)
    props = ", ".join(f"'{k}' = '{v}'" for k, v in PROPERTIES.items())
    spark.sql(f"ALTER TABLE delta.`{table}` SET TBLPROPERTIES ({props})")
    rows.where("k < 100").write.format("delta").mode("overwrite").option("replaceWhere", "k < 100").save(table)
    read = spark.read.format("delta").load(table)
    changes = (read.mapInArrow(lambda batches: batches, read.schema)
               .withColumn("p", F.from_json("j", "STRUCT<id: BIGINT>")).groupBy("v")
               .agg(F.max_by("k", "ts").alias("k"), F.collect_set("j").alias("js")))
    keys = changes.join(F.broadcast(read.select("k", "d")), "k", "left").localCheckpoint()
    from delta.tables import DeltaTable

    (DeltaTable.forPath(spark, table).alias("t").merge(keys.alias("s"), "t.k = s.k")
     .whenMatchedUpdate(set={"v": "s.v"}).whenNotMatchedInsert(values={"k": "s.k", "v": "s.v"}).execute())
    DeltaTable.forPath(spark, table).history(1).collect()
    spark.read.format("delta").option("versionAsOf", 0).load(table).toPandas()
    spark.stop()
    gateway = SparkContext._gateway  # noqa: SLF001 - the JVM writes the archive as it exits: wait for it
    if gateway is not None and gateway.proc is not None:
        gateway.proc.stdin.close()  # the gateway exits at its stdin's end (pyspark's own rule)
        gateway.proc.wait(timeout=600)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m binlake.spark.classes", description=__doc__.split("\n\n")[0])
    p.add_argument("--path", action="store_true", help="print where the archive is (or would be) and exit")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr)
    if java() is None:  # make install on a machine without Java (make test-fast needs none): nothing to map
        log.warning("no Java: no archive of Spark's classes (a local session starts without it)")
        return 0
    try:
        archive = class_archive() if args.path else build()
    except BinlakeError as e:
        sys.exit(f"binlake: {e}")  # on stderr, exit status 1
    print(archive)
    return 0


if __name__ == "__main__":
    sys.exit(main())
