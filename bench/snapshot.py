"""Benchmark `binlake snapshot`: rows per second and peak memory on a big table and on a table of
wide JSON documents, beside `mysqldump --single-transaction` of the same table.

Starts a real MySQL 9.x server and fills two tables:
  (a) `big`: `--rows` rows (default 1,000,000) of ordinary columns (INT key, BIGINT, VARCHAR(40),
      DECIMAL(12,2), DATETIME(6), TINYINT, CHAR(8)): about 110 bytes of JSON a row;
  (b) `docs`: `--docs` rows (default 50,000) holding a JSON document of about 4 KiB each (arrays
      of integers, doubles and strings, and a few DECIMALs: the numbers binlake types through
      JSON_TABLE), the documents' DECIMALs never sharing a text with another number.
Then, each in its own process, the best of --repeat runs: `binlake snapshot --table` of each into a
file:// store, and `mysqldump --single-transaction` of it to /dev/null (the server's own tool:
SQL text, no conversion). Prints rows/s, MiB/s of the chunks' JSON lines, the chunks' compressed
size and the peak RSS of each process. Writes its section of bench/RESULTS.md.

    .venv/bin/python bench/snapshot.py [--rows N] [--docs N] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.results import publish  # noqa: E402
from bench.scan import timed  # noqa: E402
from tests.support import servers  # noqa: E402

BIG = ("CREATE TABLE bench.big (id INT PRIMARY KEY, n BIGINT, s VARCHAR(40), d DECIMAL(12,2), t DATETIME(6), "
       "k TINYINT, c CHAR(8))")
DOCS = "CREATE TABLE bench.docs (id INT PRIMARY KEY, doc JSON)"


def fill(server, rows: int, docs: int) -> None:
    conn = server.connect()
    cur = conn.cursor()
    cur.execute("CREATE DATABASE bench")
    cur.execute(BIG)
    cur.execute(DOCS)
    cur.execute("SET SESSION cte_max_recursion_depth = 100000000")
    for lo in range(0, rows, 100_000):
        cur.execute(f"INSERT INTO bench.big WITH RECURSIVE n(i) AS (SELECT {lo} UNION ALL SELECT i + 1 FROM n "
                    f"WHERE i < {min(lo + 100_000, rows) - 1}) SELECT i, i * 7919, CONCAT('name-', i, '-', "
                    "REPEAT('x', i % 20)), i / 100, TIMESTAMPADD(MICROSECOND, i, '2026-01-01'), i % 100, "
                    "LPAD(HEX(i * 2654435761 % 4294967296), 8, '0') FROM n")
        print(f"  big: {min(lo + 100_000, rows)} rows", file=sys.stderr)
    cur.execute("CREATE TABLE bench.j (j INT PRIMARY KEY)")
    cur.execute("INSERT INTO bench.j VALUES " + ", ".join(f"({j})" for j in range(40)))
    element = ("JSON_OBJECT('i', n.i * 31 + j.j, 'f', (n.i + j.j) / 7e0, 's', CONCAT('value ', j.j), "
               "'a', JSON_ARRAY(j.j, j.j + 0.5e0, 'x'))")
    for lo in range(0, docs, 5_000):
        cur.execute(f"INSERT INTO bench.docs WITH RECURSIVE n(i) AS (SELECT {lo} UNION ALL SELECT i + 1 FROM n "
                    f"WHERE i < {min(lo + 5_000, docs) - 1}) SELECT n.i, JSON_OBJECT('id', n.i, 'price', "
                    f"CAST(n.i / 100 + 0.001 AS DECIMAL(12,3)), 'items', JSON_ARRAYAGG({element})) "
                    "FROM n JOIN bench.j GROUP BY n.i")
        print(f"  docs: {min(lo + 5_000, docs)} rows", file=sys.stderr)
    conn.close()


def run(server, table: str, repeat: int, work: Path) -> dict:
    """The best of `repeat` snapshots of a table, and of mysqldump's dumps of it. The sizes are
    read after the runs, and streamed: a child's peak RSS counts what this process held when it
    started the child."""
    url = f"mysql://root@127.0.0.1:{server.port}"
    best: dict = {}
    for i in range(repeat):
        store = work / f"store-{table}-{i}"
        seconds, rss = timed([sys.executable, "-m", "binlake.cli", "snapshot", "--source", url, "--store",
                              f"file://{store}", "--source-name", "bench", "--table", f"bench.{table}"])
        if not best or seconds < best["seconds"]:
            best = {"seconds": seconds, "rss_mib": rss / 1024, "store": store}
    dump = min(timed([*servers.mysql_argv("mysqldump"), "--no-defaults", "-h", "127.0.0.1", "-P", str(server.port),
                      "-u", "root", "--single-transaction", "bench", table])
               for _ in range(repeat))
    best["dump_seconds"], best["dump_rss_mib"] = dump[0], dump[1] / 1024
    return best


def sizes(result: dict) -> None:
    """The rows, chunks, stored bytes and JSON lines' bytes of the snapshot a result kept."""
    import zstandard

    root = next((result["store"] / "bench").glob("snapshots/*"))
    table = json.loads((root / "snapshot.json").read_text())["tables"][0]
    result.update(rows=table["rows"], chunks=len(table["chunks"]), stored=sum(c["bytes"] for c in table["chunks"]),
                  text=0)
    for c in table["chunks"]:
        with open(root / c["file"], "rb") as f, zstandard.ZstdDecompressor().stream_reader(f) as lines:
            for block in iter(lambda: lines.read(1 << 20), b""):
                result["text"] += len(block)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--docs", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="binlake-bench-snapshot-"))
    server = servers.start("mysql", work / "mysql", max_binlog_size="256M", innodb_buffer_pool_size="512M")
    try:
        fill(server, args.rows, args.docs)
        results = {t: run(server, t, args.repeat, work) for t in ("big", "docs")}
        for r in results.values():
            sizes(r)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    lines = [f"MySQL {server.version}, one session each (nothing written meanwhile), the default chunks "
             "(100,000 rows or 64 MiB of JSON lines), a file:// store; the best of "
             f"{args.repeat} runs, each in its own process.", "",
             "| table | rows | JSON lines | stored (zstd) | chunks | binlake snapshot | rows/s | MiB/s of lines | "
             "peak RSS | mysqldump --single-transaction | its peak RSS |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for table, r in results.items():
        what = "big (ordinary columns)" if table == "big" else "docs (a ~4 KiB JSON document each)"
        lines.append(f"| {what} | {r['rows']:,} | {r['text'] / 2**20:.0f} MiB | {r['stored'] / 2**20:.1f} MiB | "
                     f"{r['chunks']} | {r['seconds']:.1f} s | {r['rows'] / r['seconds']:,.0f} | "
                     f"{r['text'] / 2**20 / r['seconds']:.1f} | {r['rss_mib']:.0f} MiB | {r['dump_seconds']:.1f} s "
                     f"(binlake's {r['seconds'] / r['dump_seconds']:.1f}×) | {r['dump_rss_mib']:.0f} MiB |")
    lines += ["", "Where the time goes (cProfile of the big table): about half in PyMySQL's reading of the rows "
              "(pure Python, a call per field), a quarter in turning the values into the row-values forms and "
              "the JSON lines; the server's side is mysqldump's. A document holding a DECIMAL costs the "
              "JSON_TABLE that finds its DECIMALs (on the server) and a parse whose numbers keep their text "
              "(here every document holds one: about 0.35 and 0.45 ms a document); one without is read by "
              "orjson."]
    publish("bench/snapshot.py", lines)


if __name__ == "__main__":
    main()
