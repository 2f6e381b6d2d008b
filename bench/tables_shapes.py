"""What applying a range costs on the shapes production writes (issue 39), each beside its assemble.

bench/tables.py measures the apply on a friendly table: seven scalar columns, one to five
statements by key in each transaction. Production writes worse, and this measures it: one-row
autocommit transactions, a few rows per statement, JSON documents of up to 4 KiB, rows of every
column type (BLOB, TEXT, JSON, GEOMETRY, BIT, SET, DECIMAL(65,30), …), and production's mix
(bench/shapes.py's `Writer`, seeded). A real MySQL 9.x server started for it creates
bench/shapes.py's tables, then writes MIB MiB of binlog of each shape in turn, the server's clock
read between them, so that each shape is a range of its own; archived (`binlake archive` of the
live server, its schema history first). Then, each command in its own process with
`--master local[2]`: the tables' creation assembled and applied (set-up), then each shape's range
in turn, `binlake assemble` and `binlake tables --unvalidated` (timed; the apply's Spark event log
read as bench/tables.py reads it). Each shape's range is applied onto the tables the shapes before
it left, as an hourly run applies onto the day's.

Target (issue 39): a range's apply no longer than its assemble; each shape's ratio and row
changes per second per core, the worst beside the best.

    .venv/bin/python bench/tables_shapes.py [--mib N] [--shape S]...
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.results import publish  # noqa: E402
from bench.shapes import TABLES, Writer  # noqa: E402
from bench.tables import (  # noqa: E402
    CLI,
    LOCAL,
    applied_cells,
    archived_source,
    assembled_and_applied,
    command,
    server_now,
    steps_table,
)

SHAPES = ["one-row", "small", "json", "all-types", "mix"]
MIB = 5  # the hour of issue 38's target: 5 to 10 MiB of binlog


def _write(root: Path, shapes: list[str], mib: int) -> dict:
    """The server's tables and each shape's MiB, archived: the store and the instants between the shapes."""
    with archived_source(root) as source:
        w = Writer(source.conn)
        source.archive()  # the schema history, before the tables
        for sql in TABLES:
            w.cur.execute(sql)
        instants, sizes = [server_now(w.cur)], []
        for shape in shapes:
            print(f"  writing {mib} MiB of {shape} …", file=sys.stderr)
            before = w.size()
            w.write(shape, mib)
            sizes.append(w.size() - before)
            instants.append(server_now(w.cur))  # every commit of the shape is before it
    return {"store": source.store, "instants": instants, "bytes": sizes, "version": source.server.version}


def _report(w: dict, measured: dict[str, dict], mib: int) -> list[str]:
    ratios = {s: m["tables"][0] / m["assemble"][0] for s, m in measured.items()}
    worst, best = max(ratios, key=ratios.__getitem__), min(ratios, key=ratios.__getitem__)
    lines = [
        f"MySQL {w['version']}, {os.cpu_count()} cores, each command in its own process with `--master local[2]`, "
        f"the warehouse on local disk. One server and lake: bench/shapes.py's tables, then {mib} MiB of binlog of "
        "each shape in turn (bench/shapes.py's seeded `Writer`), each shape a range of its own, applied in order "
        "onto the tables the shapes before it left. `binlake tables` with `--unvalidated`.",
        "",
        "| shape | binlog | transactions | row changes | assemble | **tables** | tables / assemble | "
        "row changes/s per core | versions opened, closed |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (shape, m), size in zip(measured.items(), w["bytes"], strict=True):
        lines.append(f"| {shape} | {size / 2**20:.1f} MiB | {m['assemble'][1]['transactions']:,} | "
                     f"{m['tables'][1]['row_changes']:,} | {applied_cells(m)} |")
    lines += [
        "",
        f"Target: the apply no longer than the assemble of the same range: "
        f"{'met' if ratios[worst] <= 1 else 'not met'}; worst {worst} ({ratios[worst]:.2f}×), "
        f"best {best} ({ratios[best]:.2f}×).",
        "",
        "Where each shape's `binlake tables` spends its time (its Spark event log, as bench/tables.py reads it):",
        "",
        *steps_table(measured),
    ]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mib", type=int, default=MIB, help=f"MiB of binlog per shape (default {MIB})")
    ap.add_argument("--shape", action="append", choices=SHAPES, help=f"a shape (repeatable; default {SHAPES})")
    args = ap.parse_args()
    shapes = args.shape or SHAPES
    root = Path(tempfile.mkdtemp(prefix="binlake-bench-tables-shapes-"))
    try:
        w = _write(root, shapes, args.mib)
        common = ["--store", w["store"], "--warehouse", str(root / "lake"), *LOCAL]
        first = ["--start", "2000-01-01", "--end", w["instants"][0]]
        command([*CLI, "assemble", *common, *first], "assemble")
        command([*CLI, "tables", *common, *first, "--unvalidated"], "tables")
        measured = {}
        for i, shape in enumerate(shapes):
            rng = ["--start", w["instants"][i], "--end", w["instants"][i + 1]]
            measured[shape] = assembled_and_applied(common, rng, root / f"events-{i}")
            print(f"  {shape}: assemble {measured[shape]['assemble'][0]:.1f} s, "
                  f"tables {measured[shape]['tables'][0]:.1f} s", file=sys.stderr)
        publish("bench/tables_shapes.py", _report(w, measured, args.mib))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
