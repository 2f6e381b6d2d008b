"""What one run of the bundled samples costs: the shape of every DAG run of `binlake demo` and of
the Airflow tests (two sources, 23 small tables, the hour they were written in).

The samples (binlake/samples/: one MySQL 9.7 and one MariaDB 10.11 server's binlogs, written by
tests/data's seeded workload) are archived as the demo's archive DAG names them, then, each command
in its own process with `--master local[2]`, as the transactions DAG runs them:

  `binlake assemble --validate`   the hour into the warehouse, its boundary suites run
  `binlake tables`                the hour applied to the row versions, their suites run (timed)

The apply runs RUNS times on copies of the same assembled warehouse, alternately as binlake runs it
(a short apply over small tables: Spark's expressions interpreted, settings.interpreted_settings)
and with them compiled (`--conf spark.sql.codegen.factoryMode=FALLBACK`, Spark's default), so that
both see the machine alike.

    .venv/bin/python bench/samples.py [--runs N]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.results import publish  # noqa: E402
from bench.tables import CLI, LOCAL, _cli  # noqa: E402

SAMPLES = {"sample-mysql-9.7": "mysql-9.7", "sample-mariadb-10.11": "mariadb-10.11"}  # as the demo names them
START, END = "2026-11-22T11:00:00Z", "2026-11-22T12:00:00Z"  # the hour they were written in
COMPILED = ["--conf", "spark.sql.codegen.factoryMode=FALLBACK"]
RUNS = 3


def _archive(store: str) -> None:
    for name, directory in SAMPLES.items():
        subprocess.run([*CLI, "archive", "--source", f"dir://{REPO / 'binlake' / 'samples' / directory}",
                        "--store", store, "--source-name", name], check=True, capture_output=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=RUNS, help=f"applies of each kind (default {RUNS})")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="binlake-bench-samples-") as tmp:
        root = Path(tmp)
        store = f"file://{root / 'store'}"
        _archive(store)
        assembled = root / "assembled"
        common = ["--store", store, "--start", START, "--end", END, *LOCAL]
        t = time.monotonic()
        subprocess.run([*CLI, "assemble", *common, "--warehouse", str(assembled), "--validate"], check=True,
                       capture_output=True)
        assemble = time.monotonic() - t
        seconds: dict[str, list[float]] = {"interpreted": [], "compiled": []}
        for i in range(args.runs):
            for kind, extra in (("interpreted", []), ("compiled", COMPILED)):
                lake = root / f"lake-{kind}-{i}"
                shutil.copytree(assembled, lake)
                s, _ = _cli([*CLI, "tables", *common, "--warehouse", str(lake), *extra], "tables")
                seconds[kind].append(s)
                print(f"  {kind}: {s:.1f} s", file=sys.stderr)
                shutil.rmtree(lake)
    lines = [f"Both samples (binlake/samples/), {START[:10]} {START[11:16]}-{END[11:16]} UTC, each command in its "
             "own process with `--master local[2]`, the warehouse on local disk.", "",
             f"`binlake assemble --validate` of the hour: **{assemble:.1f} s**.", "",
             f"`binlake tables` of the hour (both sources, their suites run), {args.runs} times each, alternately:",
             "",
             "| expressions | runs | best | median | worst |", "|---|---|---:|---:|---:|"]
    for kind, values in seconds.items():
        lines.append(f"| {kind} | {', '.join(f'{v:.1f}' for v in values)} s | {min(values):.1f} s | "
                     f"**{statistics.median(values):.1f} s** | {max(values):.1f} s |")
    publish("bench/samples.py (a DAG run of the samples)", lines)


if __name__ == "__main__":
    main()
