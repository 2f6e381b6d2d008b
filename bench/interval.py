"""The fixed cost of one small interval, as binlake_transactions pays it: `binlake assemble` and
`binlake validate` of the bundled samples (151 transactions, two servers) each in its own
process, as the DAG's two tasks run; then where validate's time goes in one process: the
session, each run of the suites (the first pays GX's imports and its project), and the
Spark jobs GX starts. The per-byte cost is bench/assemble.py's. Target (issue 24): an interval
of up to a thousand transactions assembled and validated in under 20 s on 2 cores.

    .venv/bin/python bench/interval.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.results import publish

TARGET = 20.0
CLI = [sys.executable, "-m", "binlake.cli"]


def _archive(root: Path) -> tuple[str, str, str]:
    from binlake.archive.run import archive
    from binlake.archive.sources import DirSource
    from binlake.archive.stores import open_store
    from binlake.demo import commit_range, sample_files

    store = f"file://{root / 'archive'}"
    for d in sorted({str(Path(f).parent) for f in sample_files()}):
        archive(DirSource(d), open_store(store), f"sample-{Path(d).name}")
    start, end = commit_range(root / "archive")
    return store, start, end


def _timed(argv: list[str]) -> tuple[float, str]:
    t = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, check=True)
    return time.monotonic() - t, proc.stdout


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="binlake-interval-"))
    store, start, end = _archive(root)
    warehouse = str(root / "warehouse")
    rng = ["--start", start, "--end", end]
    assemble_s, out = _timed([*CLI, "assemble", "--store", store, "--warehouse", warehouse, *rng,
                              "--master", "local[2]"])
    job = json.loads(out.strip().splitlines()[-1])
    validate_s, _ = _timed([*CLI, "validate", "--warehouse", warehouse, *rng, "--store", store])

    from binlake.spark.job import session
    from binlake.spark.validate import validate

    t = time.monotonic()
    spark = session("local[2]", app="binlake-bench-interval")
    session_s = time.monotonic() - t
    runs = []
    tracker = spark.sparkContext.statusTracker()
    for i in range(3):
        group = f"validate-{i}"
        spark.sparkContext.setJobGroup(group, "bench/interval.py")
        t = time.monotonic()
        report = validate(spark, warehouse, start, end, store)
        runs.append((time.monotonic() - t, len(tracker.getJobIdsForGroup(group)), report.success))
    spark.stop()

    total = assemble_s + validate_s
    lines = [
        f"The samples: {job['transactions']} transactions, {job['row_changes']} row changes, {job['files']} files "
        f"({job['bytes'] / 1024:.0f} KiB) of two servers; `--master local[2]`, 2 cores.",
        "",
        "| step, each in its own process (as the DAG's tasks) | seconds |",
        "|---|---:|",
        f"| binlake assemble | {assemble_s:.1f} |",
        f"| … of which the job after the session started (its `seconds`) | {job['seconds']:.1f} |",
        f"| binlake validate | {validate_s:.1f} |",
        f"| **both** | **{total:.1f}** |",
        "",
        f"Target: under {TARGET:.0f} s for both: missed by {total - TARGET:.1f} s ({total / TARGET:.1f}× the "
        "target)." if total > TARGET else f"Target: under {TARGET:.0f} s for both: met.",
        "",
        f"validate in one process: the SparkSession {session_s:.1f} s, then the suites' runs over the same range:",
        "",
        "| run | seconds | Spark jobs | passed |",
        "|---|---:|---:|---|",
        *[f"| {i + 1}{' (GX imported, its project opened)' if i == 0 else ''} | {s:.1f} | {n} | {ok} |"
          for i, (s, n, ok) in enumerate(runs)],
        "",
        "A run of the four suites on 151 transactions starts the Spark jobs above (GX computes its "
        "metrics one by one, and each custom query expectation is its own job); a long-lived process "
        "(one session for assemble and validate) would save the second JVM and GX's first-run cost, not "
        "the jobs.",
    ]
    publish("bench/interval.py", lines)


if __name__ == "__main__":
    main()
