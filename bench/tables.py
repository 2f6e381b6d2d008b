"""What applying a range to the source tables costs (issue 39), and `binlake asof` of a big table.

For each table size (default 100 thousand, 1 million and 10 million rows) a real MySQL 9.x server
started for it writes, into one table (bench/shapes.py's `b.t`): the table's rows, in
transactions of 100,000 rows (the fill); then the same hour of OLTP changes, seeded: HOUR
transactions, each one to five statements by key over the rows the table holds, the keys uniform
over the whole table (two in three an UPDATE of one row, one in six a DELETE, one in six an
INSERT of a new row). Archived (`binlake archive` of the live server, its schema history first),
then, each command in its own process with `--master local[2]`:

  the fill's range    `binlake assemble`, `binlake tables`: the table's row versions (set-up)
  the hour's range    `binlake assemble`, then `binlake tables` (timed; Spark's event log on)

The table's rows reach the row versions through the changelog, as a table created and filled
after archiving began: the path the server-oracle tests hold (a baseline's apply is not held to a
server yet), and the cheaper one: a baseline's rows go through the same fold and MERGE once
`binlake snapshot` has read them, slower per row than the assemble job (bench/snapshot.py).

Targets (issue 39, one run): the hour applied to the 10-million-row table within 2x the time of
the 100-thousand-row one; the hour's apply no longer than its assemble (and its row changes per
second per core); `binlake asof` of the million-row table as of an instant within the hour, its
seconds and peak RSS (delta-rs, no JVM). Each apply's Spark jobs, and the time between them, are
read from its event log. The section is written again after each size, so that a run stopped
in the biggest keeps the others. Both ranges are applied with `--unvalidated` (the verdicts'
check reads a few small files; validation's cost is bench/interval.py's).

    .venv/bin/python bench/tables.py [--rows N]... [--hour N] [--asof-rows N]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.results import publish  # noqa: E402
from bench.scan import timed  # noqa: E402
from bench.shapes import TABLES  # noqa: E402
from tests.support import servers  # noqa: E402

CLI = [sys.executable, "-m", "binlake.cli"]
LOCAL = ["--master", "local[2]"]
ROWS = [100_000, 1_000_000, 10_000_000]
HOUR = 10_000  # transactions in the hour
FILL = 100_000  # rows per transaction of the fill
ASOF = 1_000_000  # the size asof reads
TARGET = 2.0  # the big table's apply at most this many times the small one's


def _fill(cur, rows: int) -> None:
    """The table's rows 1..rows, each transaction FILL of them."""
    cur.execute("SET SESSION cte_max_recursion_depth = 100000000")
    for lo in range(1, rows + 1, FILL):
        hi = min(lo + FILL, rows + 1) - 1
        cur.execute(f"INSERT INTO b.t (id, a, b, c, d, e, s) WITH RECURSIVE n(i) AS (SELECT {lo} UNION ALL "
                    f"SELECT i + 1 FROM n WHERE i < {hi}) SELECT i, i * 7, CONCAT('row ', i), i / 100, "
                    "TIMESTAMPADD(MICROSECOND, i, '2026-01-01'), i * 1.5, i % 256 FROM n")
        if hi % 1_000_000 == 0 or hi == rows:
            print(f"    filled {hi:,} rows", file=sys.stderr)


def _hour(cur, rows: int, transactions: int) -> tuple[str, int]:
    """The hour's changes, seeded alike for every table size (only the keys' range differs); the
    instant halfway through them, and the table's rows then (the server's COUNT(*))."""
    rnd = random.Random(39)
    statements: list[str] = []
    mid, count = "", 0
    for i in range(transactions):
        if i == transactions // 2:
            _send(cur, statements)
            mid = server_now(cur)
            cur.execute("SELECT COUNT(*) FROM b.t")
            count = cur.fetchone()[0]
        statements.append("BEGIN")
        for _ in range(rnd.randint(1, 5)):
            r, key = rnd.random(), rnd.randint(1, rows)
            if r < 2 / 3:
                statements.append(f"UPDATE b.t SET a = a + 1, b = 'upd {rnd.randint(0, 999)}' WHERE id = {key}")
            elif r < 5 / 6:
                statements.append(f"DELETE FROM b.t WHERE id = {key}")
            else:
                statements.append(f"INSERT INTO b.t (a, b, c, d, e, s) VALUES ({key}, 'new', 1.5, "
                                  f"'2026-11-27 10:00:00.{key % 10**6:06d}', 0.5, 7)")
        statements.append("COMMIT")
        if len(statements) >= 1000:  # sent at once: each transaction still its own
            _send(cur, statements)
    _send(cur, statements)
    return mid, count


def _send(cur, statements: list[str]) -> None:
    if not statements:
        return
    cur.execute(";".join(statements))
    while cur.nextset():
        pass
    statements.clear()


def server_now(cur) -> str:
    cur.execute("SELECT DATE_FORMAT(UTC_TIMESTAMP(6), '%Y-%m-%dT%H:%i:%s.%fZ')")
    return cur.fetchone()[0]


@dataclass
class Source:
    """A bench's own server, connected, and the store `binlake archive` copies its binlog into."""

    server: servers.Server
    conn: object
    store: str

    def archive(self) -> None:
        subprocess.run([*CLI, "archive", "--source", f"mysql://root@127.0.0.1:{self.server.port}", "--store",
                        self.store, "--source-name", "src"], check=True, capture_output=True)


@contextlib.contextmanager
def archived_source(root: Path, **settings: str) -> Iterator[Source]:
    """A fast-writing server with database b, its binlog archived to root/store when the body
    has written (after a rotation, so that every write is in a closed file); stopped after."""
    from pymysql.constants import CLIENT

    server = servers.start("mysql", root / "server", sync_binlog="0", innodb_flush_log_at_trx_commit="0",
                           max_binlog_size="256M", **settings)
    try:
        source = Source(server, server.connect(client_flag=CLIENT.MULTI_STATEMENTS), f"file://{root / 'store'}")
        source.conn.cursor().execute("CREATE DATABASE b")
        yield source
        source.conn.cursor().execute("FLUSH BINARY LOGS")
        source.conn.close()
        source.archive()
    finally:
        server.stop()


def _write(root: Path, rows: int, hour: int) -> dict:
    """A server's fill and hour, archived: the store and the instants between them."""
    with archived_source(root, innodb_buffer_pool_size="512M") as source:
        cur = source.conn.cursor()
        cur.execute(TABLES[0])
        source.archive()  # the schema history, before the rows
        _fill(cur, rows)
        start = server_now(cur)  # every commit of the hour is after it
        mid, count = _hour(cur, rows, hour)
    return {"store": source.store, "start": start, "version": source.server.version, "mid": mid,
            "mid_count": count}


def command(argv: list[str], record: str) -> tuple[float, dict]:
    """A command in its own process: its seconds and its summary line."""
    t = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True)
    seconds = time.monotonic() - t
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{proc.stderr[-3000:]}")
    line = next(line for line in proc.stdout.splitlines() if line.startswith(f'{{"record":"{record}"'))
    return seconds, json.loads(line)


def _events(log_dir: Path) -> dict:
    """An application's time from its event log: its seconds, and its top-level SQL executions
    (those no other holds) grouped by the binlake step that started each, with their count."""
    import zstandard

    (path,) = log_dir.glob("*/events_*")  # Spark 4's event log: a directory, its events in zstd
    with zstandard.ZstdDecompressor().stream_reader(path.open("rb")) as f:
        events = [json.loads(line) for line in f.read().decode().splitlines()]
    app = [e["Timestamp"] / 1000 for e in events if e["Event"] in ("SparkListenerApplicationStart",
                                                                    "SparkListenerApplicationEnd")]
    runs: dict[int, list] = {}
    for e in events:
        if e["Event"].endswith("SQLExecutionStart"):
            runs[e["executionId"]] = [e["time"] / 1000, None, e["description"]]
        elif e["Event"].endswith("SQLExecutionEnd"):
            runs[e["executionId"]][1] = e["time"] / 1000
    top: list[list] = []
    for run in sorted(r for r in runs.values() if r[1] is not None):
        if not top or run[1] > top[-1][1]:  # Delta's own executions run inside the step's
            top.append(run)
    steps: dict[str, list] = {}
    for a, b, text in top:
        step = steps.setdefault(_step(text), [0.0, 0])
        step[0] += b - max(a, 0.0)
        step[1] += 1
    return {"app": app[-1] - app[0], "first": top[0][0] - app[0] if top else 0.0, "steps": steps,
            "inside": sum(s[0] for s in steps.values())}


def _step(description: str) -> str:
    """A SQL execution's description as the step that ran it: `collect at …/binlake/spark/range_fold.py:80`
    is `RangeFold.in_spark` (its function, found in the file), Delta's MERGE and history by name."""
    import ast
    import re

    m = re.fullmatch(r"(\w+) at (/\S+\.py):(\d+)", description)
    if m is None:
        for known, name in (("DeltaMergeBuilder", "Delta: the MERGE"), ("getHistory", "Delta: the history"),
                            ("localCheckpoint", "range_fold.RangeFold.in_spark (localCheckpoint)"),
                            ("Filtering files", "Delta: files"),
                            ("save at NativeMethodAccessorImpl", "Delta: an append (none closed)"),
                            ("collectAsArrowToPython", "range_reads.RangeReads.read (toArrow: the row changes)"),
                            ("count at NativeMethod", "tables.TablesJob.apply (count: any transaction in the range)")):
            if known in description:
                return name
        return description
    action, file, line = m.group(1), Path(m.group(2)), int(m.group(3))
    tree = ast.parse(file.read_text())
    found = ""
    for cls in [n for n in tree.body if isinstance(n, ast.ClassDef)] + [tree]:
        for f in cls.body:
            if isinstance(f, ast.FunctionDef) and f.lineno <= line <= (f.end_lineno or 0):
                found = f"{cls.name}.{f.name}" if isinstance(cls, ast.ClassDef) else f.name
    return f"{file.stem}.{found or line} ({action})"


def _lake(root: Path, rows: int, hour: int) -> dict:
    """One table size: written, archived, the fill applied, then the hour assembled and applied."""
    print(f"  {rows:,} rows …", file=sys.stderr)
    w = _write(root, rows, hour)
    lake = str(root / "lake")
    start = w["start"]
    end = (dt.datetime.fromisoformat(start) + dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    fill, hour_rng = ["--start", "2000-01-01", "--end", start], ["--start", start, "--end", end]
    common = ["--store", w["store"], "--warehouse", lake, *LOCAL]
    out = {**w, "end": end}
    out["fill_assemble"] = command([*CLI, "assemble", *common, *fill], "assemble")
    out["fill_tables"] = command([*CLI, "tables", *common, *fill, "--unvalidated"], "tables")
    print(f"    fill: assemble {out['fill_assemble'][0]:.1f} s, tables {out['fill_tables'][0]:.1f} s", file=sys.stderr)
    out.update(assembled_and_applied(common, hour_rng, root / "events"))
    print(f"    hour: assemble {out['assemble'][0]:.1f} s, tables {out['tables'][0]:.1f} s", file=sys.stderr)
    out["lake"] = lake
    return out


def assembled_and_applied(common: list[str], rng: list[str], events: Path) -> dict:
    """A range's `binlake assemble`, then its `binlake tables --unvalidated` with Spark's event
    log on (into `events`, made new), each in its own process: their seconds and summaries, and
    where the apply's time went (_events)."""
    out = {"assemble": command([*CLI, "assemble", *common, *rng], "assemble")}
    events.mkdir()
    out["tables"] = command([*CLI, "tables", *common, *rng, "--unvalidated", "--conf", "spark.eventLog.enabled=true",
                          "--conf", f"spark.eventLog.dir=file://{events}"], "tables")
    out["events"] = _events(events)
    return out


def _asof(m: dict, root: Path) -> dict:
    """`binlake asof` of the table as of the middle of the hour's commits, as jsonl (the default,
    each value in its row-values form) and as parquet, each into a file: rows, seconds, peak RSS."""
    import pyarrow.parquet as pq

    at, runs = m["mid"], {}
    for fmt in ("jsonl", "parquet"):
        out = root / f"asof.{fmt}"
        argv = [*CLI, "asof", "--warehouse", m["lake"], "--source", "src", "--at", at, "--table", "b.t",
                "--format", fmt, "--out", str(out)]
        seconds, rss = timed(argv)
        rows = pq.read_metadata(out).num_rows if fmt == "parquet" else sum(1 for _ in out.open("rb"))
        runs[fmt] = {"rows": rows, "seconds": seconds, "rss_mib": rss / 1024}
    return {"at": at, "runs": runs, "server": m["mid_count"]}


def _report(measured: dict[int, dict], asof: dict, hour: int) -> list[str]:
    sizes = sorted(measured)
    small, big = measured[sizes[0]], measured[sizes[-1]]
    changes = big["tables"][1]["row_changes"]
    ratio = big["tables"][0] / small["tables"][0]
    slowest = max(m["tables"][0] / m["assemble"][0] for m in measured.values())
    lines = [
        f"MySQL {big['version']}, {os.cpu_count()} cores, each command in its own process with `--master local[2]`, "
        "the warehouse on local disk. Each table size "
        f"its own server and lake: the table filled by the changelog (transactions of {FILL:,} rows), then "
        f"the same hour: {hour:,} seeded transactions of one to five statements by key, the keys uniform over "
        f"the table (2/3 UPDATE, 1/6 DELETE, 1/6 INSERT), {changes:,} row changes on the biggest table "
        "(a DELETE or UPDATE of a key deleted before changes nothing). `binlake tables` with `--unvalidated`.",
        "",
        "| table rows | fill: assemble | fill: tables | hour: row changes | hour: assemble | **hour: tables** | "
        "tables / assemble | row changes/s per core | versions opened, closed |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n, m in measured.items():
        lines.append(f"| {n:,} | {m['fill_assemble'][0]:.1f} s | {m['fill_tables'][0]:.1f} s | "
                     f"{m['tables'][1]['row_changes']:,} | {applied_cells(m)} |")
    lines += [
        "",
        f"Target: the hour applied to {sizes[-1]:,} rows within {TARGET:.0f}× its time on {sizes[0]:,}: "
        f"**{ratio:.2f}×**, {'met' if ratio <= TARGET else 'not met'}. Target: the apply no longer than the "
        f"assemble of the same range: {'met' if slowest <= 1 else 'not met'} (at worst {slowest:.2f}×).",
        "",
        f"`binlake asof --table b.t` of the {asof['size']:,}-row table as of the middle of the hour "
        f"({asof['at']}), delta-rs, no JVM; the server's `COUNT(*)` then: {asof['server']:,} rows:",
        "",
        "| format | rows | seconds | peak RSS |",
        "|---|---:|---:|---:|",
        *(f"| {fmt} | {r['rows']:,} | **{r['seconds']:.1f} s** | {r['rss_mib']:.0f} MiB |"
          for fmt, r in asof["runs"].items()),
        "",
        "Where each hour's `binlake tables` spends its time (its Spark event log: the top-level SQL "
        "executions, by the step that started each; the line numbers' functions are those of this checkout):",
        "",
        *steps_table({f"{n:,} rows": measured[n] for n in sizes}),
    ]
    return lines


def applied_cells(m: dict) -> str:
    """A range's cells (assembled_and_applied): assemble, tables, their ratio, the apply's row
    changes per second per core, the versions it opened and closed."""
    s, t = m["tables"]
    opened = sum(v["opened"] for v in t["tables"].values())
    closed = sum(v["closed"] for v in t["tables"].values())
    return (f"{m['assemble'][0]:.1f} s | **{s:.1f} s** | {s / m['assemble'][0]:.2f}× | "
            f"{t['row_changes'] / s / 2:,.0f} | {opened:,}, {closed:,}")


def steps_table(columns: dict[str, dict]) -> list[str]:
    """A table of where each apply (a column each: its `tables` timing and `events`) spent its
    time, the steps slowest first."""
    measured = list(columns.values())
    steps = sorted({k for m in measured for k in m["events"]["steps"]},
                   key=lambda k: -max(m["events"]["steps"].get(k, [0])[0] for m in measured))

    def cell(m: dict, k: str) -> str:
        v = m["events"]["steps"].get(k)
        return "" if v is None else f"{v[0]:.1f}" + (f" ({v[1]})" if v[1] > 1 else "")

    def row(label: str, value) -> str:
        return f"| {label} | " + " | ".join(value(m) for m in measured) + " |"

    return [
        "| step | " + " | ".join(columns) + " |",
        "|---|" + "---:|" * len(columns),
        *(row(k, lambda m, k=k: cell(m, k)) for k in steps),
        row("(between them: the driver's Python and Delta's commits)",
            lambda m: f"{m['events']['app'] - m['events']['first'] - m['events']['inside']:.1f}"),
        row("(before the first: the session)", lambda m: f"{m['events']['first']:.1f}"),
        row("(the process outside the application: Python, the JVM's start and stop)",
            lambda m: f"{m['tables'][0] - m['events']['app']:.1f}"),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, action="append", help=f"a table size (repeatable; default {ROWS})")
    ap.add_argument("--hour", type=int, default=HOUR, help=f"transactions in the hour (default {HOUR:,})")
    ap.add_argument("--asof-rows", type=int, default=ASOF, help=f"the size asof reads (default {ASOF:,})")
    args = ap.parse_args()
    sizes = sorted(args.rows or ROWS)
    if args.asof_rows not in sizes:
        ap.error(f"--asof-rows {args.asof_rows}: not one of the sizes {sizes}")
    root = Path(tempfile.mkdtemp(prefix="binlake-bench-tables-"))
    measured: dict[int, dict] = {}
    asof: dict = {}
    try:
        for n in sizes:
            measured[n] = _lake(root / str(n), n, args.hour)
            if n == args.asof_rows:
                asof = {**_asof(measured[n], root), "size": n}
            shutil.rmtree(root / str(n))
            if len(measured) > 1 and asof:
                publish("bench/tables.py", _report(measured, asof, args.hour))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
