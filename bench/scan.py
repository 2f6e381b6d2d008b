"""Benchmark `binlake scan` against the server's own `mysqlbinlog` on the same files.

Generates a corpus (default 256 MiB) on a real MySQL 9.x server started for the run,
plus one transaction of 200,000 rows, then measures, each in a fresh process:

  (a) boundary-only scan (transaction index, jumping by transaction_length)
  (b) full scan with rows: `binlake scan --rows` to /dev/null
  (c) `mysqlbinlog` plain, and `mysqlbinlog -vv --base64-output=DECODE-ROWS`
  (d) peak RSS of `binlake scan --rows` on the file holding the 200k-row transaction

Prints a table and writes it to bench/RESULTS.md. Run: `make bench` or
`.venv/bin/python bench/scan.py [--size-mib N] [--workdir DIR]`.
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

from tests.support import servers  # noqa: E402

ROW_SQL = ("CREATE TABLE bench.t (id BIGINT PRIMARY KEY AUTO_INCREMENT, a INT, b VARCHAR(64), "
           "c DECIMAL(12,2), d DATETIME(6), e DOUBLE, f TEXT) ENGINE=InnoDB")


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


def timed(argv: list[str], stdout=subprocess.DEVNULL) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of a command run in its own process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(argv)}: {proc.stderr.read().decode()[-500:]}")
    return elapsed, usage.ru_maxrss


def count_events(files: list[Path]) -> int:
    from binlake.binlog.framing import BinlogReader

    n = 0
    for f in files:
        with BinlogReader.open(f) as r:
            n += sum(1 for _ in r.frames(verify=False))
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--big-rows", type=int, default=200_000)
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="binlake-bench-"))
    py = sys.executable
    server = servers.start("mysql", work, max_binlog_size="64M")
    try:
        print(f"MySQL {server.version}: generating {args.size_mib} MiB …", file=sys.stderr)
        files = generate(server, args.size_mib, args.big_rows)
        mysqlbinlog = server.mysqlbinlog
    finally:
        server.stop()
    total = sum(f.stat().st_size for f in files)
    events = count_events(files)
    mib = total / (1 << 20)
    big_file = files[-1]  # written last: the file holding the big transaction
    strs = [str(f) for f in files]
    rows = []

    def row(name: str, seconds: float, rss: int | None = None) -> None:
        rows.append((name, seconds, mib / seconds, events / seconds, rss))

    t, _ = timed([py, "-c", "import sys; from binlake.binlog.framing import BinlogReader\n"
                  "from binlake.index import index_transactions\n"
                  "for p in sys.argv[1:]:\n"
                  "    r = BinlogReader.open(p); sum(1 for _ in index_transactions(r, p))", *strs])
    row("binlake boundary-only (index, jumps)", t)
    t, _ = timed([py, "-m", "binlake.cli", "scan", *strs])
    row("binlake scan (transactions)", t)
    t, _ = timed([py, "-m", "binlake.cli", "scan", "--rows", *strs])
    row("binlake scan --rows", t)
    t, _ = timed([*mysqlbinlog, *strs])
    row("mysqlbinlog", t)
    t, _ = timed([*mysqlbinlog, "-vv", "--base64-output=DECODE-ROWS", *strs])
    row("mysqlbinlog -vv --base64-output=DECODE-ROWS", t)
    _, rss = timed([py, "-m", "binlake.cli", "scan", "--rows", str(big_file)])
    big_mib = big_file.stat().st_size / (1 << 20)

    lines = [
        f"Corpus: {len(files)} files, {mib:.1f} MiB, {events} events, written by MySQL "
        f"{server.version}; {os.cpu_count()} cores; single process each.",
        "",
        "| what | seconds | MiB/s | events/s |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {n} | {s:.2f} | {m:.1f} | {e:,.0f} |" for n, s, m, e, _ in rows]
    lines += ["", f"Peak RSS of `binlake scan --rows` on {big_file.name} ({big_mib:.0f} MiB, holding "
              f"the {args.big_rows:,}-row transaction): {rss / 1024:.0f} MiB"]
    text = "\n".join(lines)
    print(text)
    out = REPO / "bench" / "RESULTS.md"
    out.write_text(f"# Benchmark results\n\nMade by `make bench` ({time.strftime('%Y-%m-%d')}).\n\n"
                   f"## bench/scan.py\n\n{text}\n")


if __name__ == "__main__":
    main()
