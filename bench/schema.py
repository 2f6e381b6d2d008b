"""Benchmark `binlake scan --rows` with a schema history against the same scan of FULL metadata.

Production's shape: one-row transactions (INSERT, UPDATE, DELETE) on tables with JSON, ENUM, SET,
unsigned and latin1 columns, and a few ALTERs on the way. The same seeded workload is written
to two real MySQL 9.x servers started for the run, one with binlog_row_metadata=FULL and one with
MINIMAL (MySQL's default); a snapshot of the MINIMAL server's tables is captured at its range's
start. Each scan runs in a fresh process, the best of a few runs:

  (a) FULL metadata, no history (the binlog names its columns)
  (b) MINIMAL metadata, no history (positional names)
  (c) MINIMAL metadata with the history (`--schema`: replayed DDL, every TABLE_MAP checked)

Prints a table and writes its section of bench/RESULTS.md. Run:
`.venv/bin/python bench/schema.py [--transactions N]`.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.results import publish  # noqa: E402
from bench.scan import timed  # noqa: E402
from tests.support import servers  # noqa: E402

TABLES = [
    "CREATE TABLE shop.orders (id BIGINT UNSIGNED PRIMARY KEY, state ENUM('new','paid','sent'), "
    "flags SET('gift','rush','fragile'), total DECIMAL(12,2), note VARCHAR(64) CHARACTER SET latin1, "
    "doc JSON, at DATETIME(6))",
    "CREATE TABLE shop.users (id INT UNSIGNED PRIMARY KEY, email VARCHAR(128), profile JSON, points INT, legacy INT)",
    "CREATE TABLE shop.kv (k VARCHAR(32) PRIMARY KEY, v TEXT, n BIGINT UNSIGNED)",
]
ALTERS = ["ALTER TABLE shop.orders ADD COLUMN channel VARCHAR(16) AFTER state",
          "ALTER TABLE shop.users RENAME COLUMN legacy TO old_points, ADD COLUMN tier ENUM('a','b') FIRST",
          "ALTER TABLE shop.kv MODIFY n BIGINT UNSIGNED NOT NULL DEFAULT 0"]


def workload(server, transactions: int, out: Path | None) -> list[Path]:
    """The seeded one-row transactions, an ALTER every third of the way; the range's files. With
    out: a snapshot of the tables at the range's start, captured by `binlake schema capture`."""
    import subprocess

    rnd = random.Random(7)
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE DATABASE shop")
        for sql in TABLES:
            cur.execute(sql)
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("SHOW BINARY LOGS")
        first = cur.fetchall()[-1][0]
        if out is not None:
            subprocess.run([sys.executable, "-m", "binlake.cli", "schema", "capture", "--source",
                            f"mysql://root@127.0.0.1:{server.port}", "--out", str(out)], check=True)
        for i in range(transactions):
            if i and i % (transactions // 3) == 0 and ALTERS:
                cur.execute(ALTERS[i // (transactions // 3) - 1])
            table = i % 3
            if table == 0:
                cur.execute("INSERT INTO shop.orders (id, state, flags, total, note, doc, at) VALUES "
                            "(%s, %s, %s, %s, %s, %s, NOW(6))",
                            (i, rnd.choice(["new", "paid", "sent"]), "gift,rush" if i % 2 else "",
                             f"{rnd.randint(0, 99999)}.{rnd.randint(0, 99):02d}", "café",
                             json.dumps({"items": [rnd.randint(1, 9) for _ in range(3)], "ship": {"zip": "10115"}})))
            elif table == 1:
                cur.execute("INSERT INTO shop.users (id, email, profile, points) VALUES (%s, %s, %s, %s) "
                            "ON DUPLICATE KEY UPDATE points = points + 1",
                            (i % 5000, f"u{i}@example.org", json.dumps({"age": rnd.randint(18, 90)}),
                             rnd.randint(0, 1000)))
            else:
                cur.execute("REPLACE INTO shop.kv (k, v, n) VALUES (%s, %s, %s)",
                            (f"k{i % 2000}", "x" * rnd.randint(0, 80), rnd.randint(0, 2**64 - 1)))
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("SHOW BINARY LOGS")
        names = [r[0] for r in cur.fetchall()]
    return [server.binlog_dir / n for n in names[names.index(first):-1]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--transactions", type=int, default=30_000)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each scan; the best counts (default 3)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="binlake-bench-schema-"))
    snapshot = work / "snapshot.json"
    corpora = {}
    for metadata in ("FULL", "MINIMAL"):
        server = servers.start("mysql", work / metadata, binlog_row_metadata=metadata)
        try:
            print(f"MySQL {server.version} ({metadata}): {args.transactions:,} one-row transactions …",
                  file=sys.stderr)
            corpora[metadata] = workload(server, args.transactions, snapshot if metadata == "MINIMAL" else None)
        finally:
            server.stop()
    py = sys.executable
    rows = []

    def row(name: str, files: list[Path], *extra: str) -> float:
        print(f"  {name} …", file=sys.stderr)
        t = min(timed([py, "-m", "binlake.cli", "scan", "--rows", *extra, *map(str, files)])[0]
                for _ in range(args.repeat))
        mib = sum(f.stat().st_size for f in files) / (1 << 20)
        rows.append((name, t, mib, mib / t, args.transactions / t))
        return t

    full = row("FULL metadata, no history", corpora["FULL"])
    bare = row("MINIMAL metadata, no history (positional names)", corpora["MINIMAL"])
    named = row("MINIMAL metadata, with the history (--schema)", corpora["MINIMAL"], "--schema", str(snapshot))
    lines = [
        f"{args.transactions:,} one-row transactions on three tables (JSON, ENUM, SET, unsigned, latin1 "
        f"columns) and {len(ALTERS)} ALTERs, written to two MySQL servers that differ only in "
        f"binlog_row_metadata; `binlake scan --rows` to /dev/null, the best of {args.repeat} runs.",
        "",
        "| what | seconds | MiB | MiB/s | transactions/s |",
        "|---|---:|---:|---:|---:|",
        *[f"| {n} | {s:.2f} | {m:.1f} | {r:.1f} | {t:,.0f} |" for n, s, m, r, t in rows],
        "",
        f"With the history the scan takes {named / bare:.2f}× the time of the same files without it, "
        f"{named / full:.2f}× that of FULL metadata (whose TABLE_MAPs are larger: they carry the names).",
    ]
    publish("bench/schema.py", lines)


if __name__ == "__main__":
    main()
