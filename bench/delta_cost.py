"""What Delta Lake costs the Spark job: its steady state on production's mix writing Delta, beside
the same job before the change writing plain Parquet, measured in one run.

A real MySQL 9.x server writes bench/shapes.py's mix (default 64 MiB), archived to a file store
under COPIES source names. The steady state is the cost of the further bytes: a run over one
source and a run over all COPIES, the difference divided by the bytes between them, so that the
fixed costs (the JVM's start, its JIT, the session, Delta's first commit) fall out. Alternately,
each `--repeat` times, on 2 cores (`binlake assemble --master local[2]`, a new warehouse each):
  (a) the job before the change: the tree of commit BEFORE (`git archive`, the compiled modules of
      this checkout copied in, run with it first on PYTHONPATH), writing plain Parquet;
  (b) the job as it is, writing the Delta tables (one commit per table);
and Spark alone rewriting the row changes (b) wrote, with no binlake code in its tasks, into a
Delta table and into plain Parquet, each in its own process and timed the second time (the JIT
warm). Target (issue 38): (b)'s steady state at least 0.9x (a)'s.

`--fixed`: what one commit costs whatever its size, in a process per setting: COMMITS runs' writes
of 1,000 rows into one day of a Delta table (replaceWhere, then the commit read from the history,
as binlake.spark.warehouse does), with Delta's default state partitions and with binlake's local
settings (binlake.spark.settings.local); the Spark tasks each commit ran and its seconds.

    .venv/bin/python bench/delta_cost.py [--size-mib N] [--copies N] [--repeat N] [--before REV] [--workdir DIR]
    .venv/bin/python bench/delta_cost.py --fixed
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.results import publish  # noqa: E402
from bench.shapes import corpus  # noqa: E402

BEFORE = "e8af7ef7"  # the last commit whose job wrote plain Parquet (the branch's base)
TARGET = 0.9


def _tree_before(rev: str, into: Path) -> Path:
    """The repository at `rev`, with this checkout's compiled modules (their C sources unchanged)."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "binlake", "spark_jobs"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    for so in (REPO / "binlake").rglob("*.so"):
        shutil.copy(so, into / so.relative_to(REPO))
    return into


def _job(store: str, lake: Path, pythonpath: str | None, sources: list[str]) -> tuple[float, dict]:
    env = {**os.environ}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    argv = [sys.executable, "-m", "binlake.cli", "assemble", "--store", store, "--warehouse", str(lake),
            "--master", "local[2]", "--conf", "spark.ui.enabled=false", "--start", "2000-01-01", "--end", "2100-01-01",
            *(a for name in sources for a in ("--source", name))]
    began = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=lake.parent, capture_output=True, text=True)
    seconds = time.perf_counter() - began
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{proc.stderr[-3000:]}")
    return seconds, json.loads(proc.stdout.strip().splitlines()[-1])


def rewrite(lake: Path, out: Path, fmt: str) -> None:
    """Spark alone: the row changes the job wrote (read through Delta) written again as the job
    writes them, into a Delta table (its table's properties) or into plain Parquet, twice; prints
    the second write's seconds (the first warms the JIT)."""
    from binlake.spark.job import WRITE_OPTIONS, session
    from binlake.spark.warehouse import Warehouse

    spark = session("local[2]", app="binlake-bench-delta-floor", conf={"spark.ui.enabled": "false"})
    rows = spark.read.format("delta").load(str(lake / "row_changes"))
    for attempt in range(2):
        target = Warehouse(spark, str(out / f"{fmt}-{attempt}"))
        if fmt == "delta":
            target.create("row_changes")
        t0 = time.perf_counter()
        (rows.write.format(fmt).options(**WRITE_OPTIONS["row_changes"]).partitionBy("commit_date")
         .mode("overwrite" if fmt == "parquet" else "append").save(target.path("row_changes")))
        took = time.perf_counter() - t0
    print(json.dumps({"seconds": took}))
    spark.stop()


def commits(setting: str, count: int) -> None:
    """`count` one-day replaceWhere commits of 1,000 rows, each read back from the history as
    binlake.spark.warehouse's replace does, in a session with `setting` ("delta": Delta's
    defaults; "binlake": binlake's local settings); prints each commit's Spark tasks and seconds."""
    from pyspark.sql import functions as F

    from binlake.spark.job import session

    conf = {"spark.ui.enabled": "false"}
    if setting == "delta":
        conf["spark.databricks.delta.snapshotPartitions"] = "50"  # Delta's default
    spark = session("local[2]", app="binlake-bench-delta-fixed", conf=conf)
    tracker = spark.sparkContext.statusTracker()

    def tasks() -> int:
        jobs = (tracker.getJobInfo(j) for j in tracker.getJobIdsForGroup(None))
        stages = (tracker.getStageInfo(s) for job in jobs if job for s in job.stageIds)
        return sum(stage.numTasks for stage in stages if stage is not None)

    path = tempfile.mkdtemp(prefix="binlake-bench-fixed-") + "/table"
    rows = spark.range(1000).withColumn("commit_date", F.lit("2026-11-27").cast("date"))
    out = []
    for i in range(count):
        before, t0 = tasks(), time.perf_counter()
        (rows.write.format("delta").mode("overwrite").option("replaceWhere", "commit_date = DATE'2026-11-27'")
         .option("userMetadata", f"bench-{i}").save(path))
        spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()  # (this file's name hides delta.tables)
        out.append({"tasks": tasks() - before, "seconds": time.perf_counter() - t0})
    print(json.dumps(out))
    spark.stop()


def fixed(count: int) -> None:
    """Delta's fixed cost per commit, with its defaults and with binlake's local settings."""
    got = {}
    for setting in ("delta", "binlake"):
        out = subprocess.run([sys.executable, __file__, "--commits", setting, str(count)], check=True,
                             capture_output=True, text=True).stdout
        got[setting] = json.loads(out.strip().splitlines()[-1])[1:]  # the first commit creates the table
    lines = [
        f"{count} commits of 1,000 rows into one day of a Delta table on local disk (`replaceWhere`, then the "
        f"commit read from the history, as `Warehouse.replace` does), `local[2]`, {os.cpu_count()} cores, a "
        "process per setting; the first commit (the table's creation) left out.",
        "",
        "| setting | Spark tasks per commit | seconds per commit (median) | every commit (s) |",
        "|---|---:|---:|---|",
        *(f"| {name} | {sorted(c['tasks'] for c in got[k])[len(got[k]) // 2]} | "
          f"{sorted(c['seconds'] for c in got[k])[len(got[k]) // 2]:.2f} | "
          f"{', '.join(format(c['seconds'], '.2f') for c in got[k])} |"
          for k, name in (("delta", "Delta's defaults (state in 50 partitions)"),
                          ("binlake", "binlake's local settings (`spark.databricks.delta.snapshotPartitions` 2)"))),
        "",
        "Delta rebuilds a table's state from its log in `spark.databricks.delta.snapshotPartitions` (50)",
        "partitions at every write and read: on one machine, for logs of a commit per run, some 150 tasks",
        "of nothing per commit. binlake's local sessions (and the Airflow operator's local spark-submit) use",
        "2. Every run commits three tables and validation reads them. The task counts do not depend on the",
        "machine's load; the seconds do.",
    ]
    publish("bench/delta_cost.py --fixed (Delta's fixed costs per commit)", lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rewrite", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--commits", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--fixed", action="store_true", help="Delta's fixed cost per commit only")
    ap.add_argument("--size-mib", type=int, default=64)
    ap.add_argument("--copies", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--before", default=BEFORE, help=f"the commit of the Parquet job (default {BEFORE})")
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args()
    if args.rewrite:
        return rewrite(Path(args.rewrite[0]), Path(args.rewrite[1]), args.rewrite[2])
    if args.commits:
        return commits(args.commits[0], int(args.commits[1]))
    if args.fixed:
        return fixed(12)
    from binlake.archive.run import archive
    from binlake.archive.sources import DirSource
    from binlake.archive.stores import open_store

    work = args.workdir or Path(tempfile.mkdtemp(prefix="binlake-bench-delta-"))
    work.mkdir(parents=True, exist_ok=True)
    store = f"file://{work}/store"
    if not (work / "binlogs").exists():
        version, files = corpus(work, args.size_mib, "mix")
        (work / "version").write_text(version)
    version = (work / "version").read_text()
    files = sorted((work / "binlogs").glob("binlog.*"))
    for i in range(1, args.copies + 1):  # archiving again copies nothing
        archive(DirSource(str(work / "binlogs")), open_store(store), f"mix-{i}")
    before = _tree_before(args.before, work / "before") if not (work / "before").exists() else work / "before"
    one = sum(f.stat().st_size for f in files) / (1 << 20)
    sources = {"one": ["mix-1"], "all": [f"mix-{i}" for i in range(1, args.copies + 1)]}
    runs: dict[tuple[str, str], list[tuple[float, dict]]] = {}
    for _ in range(args.repeat):  # alternately, so that the machine's load falls on both alike
        for what, path in (("parquet", str(before)), ("delta", None)):
            for size, names in sources.items():
                lake = work / f"lake-{what}-{size}"
                shutil.rmtree(lake, ignore_errors=True)
                runs.setdefault((what, size), []).append(_job(store, lake, path, names))
                print(f"  {what} {size}: {runs[what, size][-1][0]:.1f} s", file=sys.stderr)
    best = {k: min(r, key=lambda x: x[0]) for k, r in runs.items()}
    more = one * (args.copies - 1)
    steady = {what: more / (best[what, "all"][0] - best[what, "one"][0]) for what in ("parquet", "delta")}
    alone = {}
    for fmt in ("delta", "parquet"):
        floor = work / "floor"
        shutil.rmtree(floor, ignore_errors=True)
        out = subprocess.run([sys.executable, __file__, "--rewrite", str(work / "lake-delta-all"), str(floor), fmt],
                             check=True, capture_output=True, text=True).stdout
        alone[fmt] = json.loads(out.strip().splitlines()[-1])["seconds"]
    ratio = steady["delta"] / steady["parquet"]
    summary = best["delta", "all"][1]
    rows = summary["row_changes"]
    lines = [
        f"Corpus: bench/shapes.py's mix, {one:.1f} MiB written by MySQL {version}, archived under {args.copies} "
        f"source names ({one * args.copies:.0f} MiB, {summary['transactions']:,} transactions, {rows:,} row "
        f"changes); `binlake assemble --master local[2]` over one source and over all, {os.cpu_count()} cores, "
        f"the warehouse on local disk; the best of {args.repeat} runs of each, run alternately.",
        "",
        "| what | one source (s) | all (s) | steady state MiB/s | write step, all (s) | every run, all (s) |",
        "|---|---:|---:|---:|---:|---|",
        *(f"| {name} | {best[what, 'one'][0]:.1f} | {best[what, 'all'][0]:.1f} | {steady[what]:.1f} | "
          f"{best[what, 'all'][1]['step_seconds']['write']:.1f} | "
          f"{', '.join(f'{x:.1f}' for x, _ in runs[what, 'all'])} |"
          for what, name in (("parquet", f"the job before the change ({args.before}), plain Parquet"),
                             ("delta", "the job writing Delta (one commit per table)"))),
        "",
        f"Delta against Parquet in steady state: **{ratio:.2f}×** (target ≥ {TARGET}×: "
        f"{'met' if ratio >= TARGET else 'missed'}). Spark alone, rewriting the {rows:,} row changes with no "
        f"binlake code in its tasks (the JIT warm): {alone['delta']:.1f} s into Delta, {alone['parquet']:.1f} s "
        f"into plain Parquet ({alone['parquet'] / alone['delta']:.2f}×).",
    ]
    publish("bench/delta_cost.py", lines)


if __name__ == "__main__":
    main()
