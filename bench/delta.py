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

    .venv/bin/python bench/delta.py [--size-mib N] [--copies N] [--repeat N] [--before REV] [--workdir DIR]
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rewrite", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--size-mib", type=int, default=64)
    ap.add_argument("--copies", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--before", default=BEFORE, help=f"the commit of the Parquet job (default {BEFORE})")
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args()
    if args.rewrite:
        return rewrite(Path(args.rewrite[0]), Path(args.rewrite[1]), args.rewrite[2])
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
        f"the warehouse on local disk; the best of {args.repeat} runs of each, run alternately; the machine's "
        f"load average when it ended {os.getloadavg()[0]:.1f}.",
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
    publish("bench/delta.py", lines)


if __name__ == "__main__":
    main()
