"""What a run writes into a day that earlier runs filled: the write step as the day grows.

A real MySQL server started for the run writes 64 MiB of bench/shapes.py's mix; `binlake archive`
copies it into a file store under 12 source names. Commit times are the binlog's own and cannot be
moved, so the sources stand for a day's hours: one local[2] session runs the job over the day for
each source in turn, into one warehouse. Run k finds the rows of k-1 sources in the day's
partitions, as an hourly run finds the day's earlier hours. Its commit adds its own files and
removes none: the day's other files are left as they are.

Then the other way a range meets a day (docs/warehouse.md): over the filled day, a run of the last
source over a range that ends halfway through its commit times. The files its earlier run wrote
hold rows of that range and rows after it, which are kept: Delta's replaceWhere rewrites those
files with their kept rows in the run's commit, and only those.

    .venv/bin/python bench/hourly.py
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.results import publish
from bench.shapes import corpus

MIB = 64
HOURS = 12  # the sources standing for a day's hours


def _day(store, source: str) -> tuple[str, str, str]:
    """The UTC days the source's commits span, as a range, and the middle of its commit times."""
    from binlake.archive import summaries

    ms = [m for m in summaries.load(store, source) if m.get("min_commit_ts")]
    first = min(dt.datetime.fromisoformat(m["min_commit_ts"]) for m in ms)
    last = max(dt.datetime.fromisoformat(m["max_commit_ts"]) for m in ms)
    return (f"{first.date()}T00:00:00+00:00", f"{last.date() + dt.timedelta(days=1)}T00:00:00+00:00",
            (first + (last - first) / 2).isoformat())


def main() -> None:
    from binlake.archive.run import archive
    from binlake.archive.sources import DirSource
    from binlake.archive.stores import open_store
    from binlake.spark.job import assemble, session

    work = Path(tempfile.mkdtemp(prefix="binlake-bench-hourly-"))
    version, files = corpus(work, MIB, "mix")
    binlogs = files[0].parent
    url = f"file://{work}/store"
    store = open_store(url)
    names = [f"h{k:02d}" for k in range(1, HOURS + 1)]
    for name in names:
        archive(DirSource(str(binlogs)), store, name)
    start, end, middle = _day(store, names[0])
    spark = session("local[2]", app="binlake-bench-hourly")
    warm = work / "warm"
    assemble(spark, url, str(warm), start, end, sources=[names[0]])  # the JIT's first compiles paid here
    shutil.rmtree(warm)

    def run(sources: list[str], until: str = end):
        began = time.perf_counter()
        s = assemble(spark, url, str(work / "lake"), start, until, sources=sources)
        return time.perf_counter() - began, s

    rows, there = [], 0
    for name in names:
        seconds, s = run([name])
        rows.append((name, there, s.step_seconds["write"], seconds))
        there += s.row_changes
        print(json.dumps(rows[-1]), file=sys.stderr)
    seconds, s = run([names[-1]], middle)
    rewritten = (there, s.step_seconds["write"], seconds)
    print(json.dumps(rewritten), file=sys.stderr)
    spark.stop()
    mib = sum(f.stat().st_size for f in binlogs.iterdir()) / (1 << 20)
    first, last = rows[0], rows[-1]
    lines = [
        f"MySQL {version}; {mib:.1f} MiB of bench/shapes.py's mix archived under {HOURS} source names, which stand "
        "for a day's hours; one local[2] session (its first run, to warm the JIT, not counted); the warehouse on "
        "local disk. Each run assembles one source over the day into one warehouse, in turn:",
        "",
        "| run | row changes in the day before it | write step | the run |",
        "|---|---:|---:|---:|",
        *(f"| {name} | {n:,} | {w:.2f} s | {t:.2f} s |" for name, n, w, t in rows),
        f"| {names[-1]} again, until halfway through its commit times (its files hold kept rows too: those files "
        f"rewritten) | {rewritten[0]:,} | {rewritten[1]:.2f} s | {rewritten[2]:.2f} s |",
        "",
        f"The last run into the filled day wrote in {last[2]:.2f} s where the first, into an empty day, wrote in "
        f"{first[2]:.2f} s: each run's commit adds its own files and leaves the day's other files as they are. "
        f"Where the files a run replaces hold rows it keeps, Delta rewrites those files with the kept rows in "
        f"the same commit: {rewritten[1]:.2f} s.",
    ]
    publish("bench/hourly.py", lines)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
