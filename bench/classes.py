"""What class data sharing saves a run (binlake/spark/classes.py): `binlake assemble --validate`
on a local master, the same command with the archive of Spark's classes and without it (the
archive moved aside for those runs, so that the session's settings are otherwise the same),
alternately, each into a new warehouse. Two corpora of bench/interval.py: the bundled samples
(151 transactions), and its hour (186 transactions, 205,903 row changes; issue 38's target).

    .venv/bin/python bench/classes.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.interval import CLI, LOCAL, _hour, _samples, _timed
from bench.results import publish


@contextlib.contextmanager
def _without(archive: Path):
    aside = archive.with_name(archive.name + ".aside")
    archive.rename(aside)
    try:
        yield
    finally:
        aside.rename(archive)


def main() -> None:
    from binlake.spark import classes

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    archive = classes.build()
    times: dict[tuple[str, bool], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="binlake-bench-classes-") as tmp:
        root = Path(tmp)
        corpora = {"samples (151 transactions)": _samples(root / "samples"),
                   "the hour (186 transactions, 205,903 row changes)": _hour(root / "hour")}
        n = 0
        for r in range(args.rounds):
            for name, (store, start, end) in corpora.items():
                for shared in (True, False) if r % 2 == 0 else (False, True):
                    n += 1
                    cmd = [*CLI, "assemble", "--store", store, "--warehouse", str(root / f"w{n}"), "--start", start,
                           "--end", end, *LOCAL, "--validate"]
                    with contextlib.nullcontext() if shared else _without(archive):
                        seconds, _ = _timed(cmd)
                    times.setdefault((name, shared), []).append(seconds)
                    print(f"{name}, {'with' if shared else 'without'} the archive: {seconds:.1f} s", flush=True)
    lines = [f"`binlake assemble --validate --master local[2]`, 2 cores, each run into a new warehouse; "
             f"{args.rounds} rounds, the two kinds of run alternately. The archive: {archive.stat().st_size >> 20} "
             "MiB (`make install` made it).", "",
             "| corpus | without the archive (s, median) | with it (s, median) | saved | every run without, with (s) |",
             "|---|---:|---:|---:|---|"]
    for name in corpora:
        off, on = times[(name, False)], times[(name, True)]
        a, b = statistics.median(off), statistics.median(on)
        lines.append(f"| {name} | {a:.1f} | {b:.1f} | {a - b:.1f} s ({(a - b) / a:.0%}) | "
                     f"{', '.join(f'{t:.1f}' for t in off)}; {', '.join(f'{t:.1f}' for t in on)} |")
    publish("bench/classes.py (class data sharing)", lines)


if __name__ == "__main__":
    main()
