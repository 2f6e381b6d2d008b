"""Benchmark `binlake scan` against the server's own `mysqlbinlog` on the same files.

Generates a corpus (default 256 MiB) on a real MySQL 9.x server started for the run,
plus one transaction of 200,000 rows, then measures, each in a fresh process:

  (a) boundary-only scan (transaction index, jumping by transaction_length)
  (b) full scan with rows: `binlake scan --rows` to /dev/null
  (c) `mysqlbinlog` plain, and `mysqlbinlog -vv --base64-output=DECODE-ROWS`
  (d) peak RSS of `binlake scan --rows` on the file holding the 200k-row transaction

Prints a table and writes its section of bench/RESULTS.md. Run: `make bench` or
`.venv/bin/python bench/scan.py [--size-mib N] [--workdir DIR] [--files BINLOG...]`.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.results import publish  # noqa: E402
from tests.support import servers  # noqa: E402

ROW_SQL = ("CREATE TABLE bench.t (id BIGINT PRIMARY KEY AUTO_INCREMENT, a INT, b VARCHAR(64), "
           "c DECIMAL(12,2), d DATETIME(6), e DOUBLE, f TEXT) ENGINE=InnoDB")


def server_settings(rows_query: bool) -> dict:
    """The bench server: 64 MiB files; Rows_query events off as MySQL ships (on, every row
    change carries its statement's text, DESIGN.md: with this workload's 200-row INSERTs that
    is ~40 KB per row, and the JSON output grows ~80x)."""
    return {"max_binlog_size": "64M", "binlog_rows_query_log_events": "ON" if rows_query else "OFF"}


def generate(server, size_mib: int, big_rows: int) -> list[Path]:
    rnd = random.Random(42)
    conn = server.connect()
    cur = conn.cursor()
    cur.execute("CREATE DATABASE IF NOT EXISTS bench")
    cur.execute(ROW_SQL)
    cur.execute("CREATE TABLE bench.big (id INT PRIMARY KEY, v VARCHAR(32), n BIGINT)")
    target = size_mib << 20
    written = 0
    batch = 0
    while written < target:
        values = []
        for _ in range(200):
            values.append((rnd.randint(-10**9, 10**9), "".join(rnd.choices("abcdefghij", k=24)),
                           f"{rnd.randint(0, 10**9)}.{rnd.randint(0, 99):02d}",
                           f"2026-01-{rnd.randint(1, 28):02d} 12:00:00.{rnd.randint(0, 999999):06d}",
                           rnd.random() * 1e6, "x" * rnd.randint(0, 200)))
        conn.begin()
        cur.executemany("INSERT INTO bench.t (a,b,c,d,e,f) VALUES (%s,%s,%s,%s,%s,%s)", values)
        if batch % 3 == 0:
            cur.execute("UPDATE bench.t SET a = a + 1 WHERE id > CAST(LAST_INSERT_ID() AS SIGNED) - 50")
        if batch % 5 == 0:
            cur.execute("DELETE FROM bench.t WHERE id BETWEEN LAST_INSERT_ID() AND LAST_INSERT_ID() + 10")
        conn.commit()
        batch += 1
        if batch % 200 == 0:
            cur.execute("SHOW BINARY LOGS")
            written = sum(r[1] for r in cur.fetchall())
            print(f"  generated {written >> 20} MiB", file=sys.stderr)
    conn.begin()
    cur.execute("SET SESSION cte_max_recursion_depth = 10000000")
    cur.execute(f"""INSERT INTO bench.big WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL
                   SELECT i + 1 FROM s WHERE i < {big_rows}) SELECT i, CONCAT('v', i), i * 7 FROM s""")
    conn.commit()
    cur.execute("FLUSH BINARY LOGS")
    cur.execute("SHOW BINARY LOGS")
    names = [r[0] for r in cur.fetchall()][:-1]  # the active file is not part of the corpus
    conn.close()
    return [server.binlog_dir / n for n in names]


def timed(argv: list[str], stdout=subprocess.DEVNULL, env: dict | None = None) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of a command run in its own process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(argv)}: {proc.stderr.read().decode()[-500:]}")
    return elapsed, usage.ru_maxrss


# The boundary-only pass (the transaction index, jumping by transaction_length), timed inside its
# process: it prints its own seconds, without the interpreter's start.
WALK = ("import sys, time\nfrom binlake.binlog.framing import BinlogReader\n"
        "from binlake.archive.index import index_transactions\nt = time.perf_counter()\n"
        "for p in sys.argv[1:]:\n"
        "    r = BinlogReader.open(p); sum(1 for _ in index_transactions(r, p))\n"
        "print(time.perf_counter() - t)")


def walk_argv(files: list[Path]) -> list[str]:
    return [sys.executable, "-c", WALK, *map(str, files)]


def count_events(files: list[Path]) -> tuple[int, int]:
    """Events, and of them Rows_query events."""
    from binlake.binlog import constants as c
    from binlake.binlog.framing import BinlogReader

    n = queries = 0
    for f in files:
        with BinlogReader.open(f) as r:
            for fr in r.frames(verify=False):
                n += 1
                queries += fr.type == c.ROWS_QUERY_LOG_EVENT
    return n, queries


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--big-rows", type=int, default=200_000)
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--files", type=Path, nargs="+",
                    help="measure these binlog files (a corpus made before) instead of generating one")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each command; the best counts (default 3)")
    ap.add_argument("--rows-query", action="store_true",
                    help="generate with binlog_rows_query_log_events=ON (each row change carries its statement)")
    args = ap.parse_args()
    if args.files:
        files = sorted(args.files)
    else:
        work = args.workdir or Path(tempfile.mkdtemp(prefix="binlake-bench-"))
        server = servers.start("mysql", work, **server_settings(args.rows_query))
        try:
            print(f"MySQL {server.version}: generating {args.size_mib} MiB …", file=sys.stderr)
            files = generate(server, args.size_mib, args.big_rows)
        finally:
            server.stop()
    mysqlbinlog = servers.mysql_argv("mysqlbinlog")
    from binlake.binlog.fastrows import enabled
    from binlake.binlog.framing import BinlogReader

    with BinlogReader.open(files[0]) as r:
        version = r.fde.server_version
    total = sum(f.stat().st_size for f in files)
    events, queries = count_events(files)
    mib = total / (1 << 20)
    big_file = max(files, key=lambda f: f.stat().st_mtime)  # written last: it holds the big transaction
    strs = [str(f) for f in files]
    rows = []
    py = sys.executable

    def row(name: str, argv: list[str], env: dict | None = None, repeat: int = args.repeat) -> float:
        # the best of a few runs: a shared machine's noise only ever adds time
        print(f"  {name} …", file=sys.stderr)
        t = min(timed(argv, env=env)[0] for _ in range(repeat))
        rows.append((name, t, mib / t, events / t))
        return t

    walk = walk_argv(files)
    print("  binlake boundary-only …", file=sys.stderr)
    t = min(float(subprocess.run(walk, capture_output=True, text=True, check=True).stdout) for _ in range(args.repeat))
    rows.append(("binlake boundary-only (index, jumps): the walk, timed in the process", t, mib / t, events / t))
    start = row("binlake boundary-only: the whole process (interpreter start and imports included)", walk)
    scan = row("binlake scan (transactions; rows decoded for the counts)", [py, "-m", "binlake.cli", "scan", *strs])
    rows_fast = row("binlake scan --rows", [py, "-m", "binlake.cli", "scan", "--rows", *strs])
    row("binlake scan --rows, pure-Python reference (BINLAKE_PURE_PYTHON=1)",
        [py, "-m", "binlake.cli", "scan", "--rows", *strs], env={**os.environ, "BINLAKE_PURE_PYTHON": "1"}, repeat=1)
    row("mysqlbinlog", [*mysqlbinlog, *strs])
    vv = row("mysqlbinlog -vv --base64-output=DECODE-ROWS", [*mysqlbinlog, "-vv", "--base64-output=DECODE-ROWS", *strs])
    _, rss = timed([py, "-m", "binlake.cli", "scan", "--rows", str(big_file)])
    out_bytes = _output_bytes([py, "-m", "binlake.cli", "scan", "--rows", str(big_file)])
    vv_bytes = _output_bytes([*mysqlbinlog, "-vv", "--base64-output=DECODE-ROWS", str(big_file)])
    big_mib = big_file.stat().st_size / (1 << 20)

    lines = [
        f"Corpus: {len(files)} files, {mib:.1f} MiB, {events} events ({queries} of them Rows_query), "
        f"written by MySQL {version}; "
        f"{os.cpu_count()} cores; single process each, the best of {args.repeat} runs (the pure-Python "
        f"reference: one); the compiled row decoder {'on' if enabled() else 'NOT BUILT'}.",
        "",
        "| what | seconds | MiB/s | events/s |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {n} | {s:.2f} | {m:.1f} | {e:,.0f} |" for n, s, m, e in rows]
    lines += [
        "",
        f"Against `mysqlbinlog -vv` on the same files (ratio of speeds): `scan` {vv / scan:.2f}, "
        f"`scan --rows` {vv / rows_fast:.2f}. Every binlake process spends {start - t:.2f} s starting Python and "
        "importing before it reads a byte; the boundary-only walk is timed without it as well.",
        "",
        f"On {big_file.name} ({big_mib:.0f} MiB, holding the {args.big_rows:,}-row transaction): peak RSS of "
        f"`binlake scan --rows` {rss / 1024:.0f} MiB; it prints {out_bytes / 2**20:,.0f} MiB of JSON lines "
        f"where `mysqlbinlog -vv` prints {vv_bytes / 2**20:,.0f} MiB"
        + (" (each row change carries its event's Rows_query, DESIGN.md)." if queries else "."),
    ]
    publish("bench/scan.py" + (" --rows-query (Rows_query events on)" if queries else ""), lines)


def _output_bytes(argv: list[str]) -> int:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    n = 0
    while chunk := proc.stdout.read(1 << 20):
        n += len(chunk)
    proc.wait()
    return n


if __name__ == "__main__":
    main()
