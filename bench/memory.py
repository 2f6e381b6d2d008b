"""Memory for one big transaction: `binlake scan --rows` and the Spark job on a single ≥ 1 GiB
transaction written by a real server.

Starts a real MySQL 9.x server, writes one transaction of `--rows` rows of about 1 KiB each
(default 1,050,000: a little over 1 GiB of row events) with one INSERT … SELECT, archives the
file to a file:// store, then runs, each in its own process:
  (a) `binlake scan --rows` to /dev/null: seconds and peak RSS;
  (b) `mysqlbinlog -vv --base64-output=DECODE-ROWS` to /dev/null, the reference;
  (c) `binlake assemble --master local[2]` over the range holding the transaction (it is cut into
      pieces of `--split-bytes`), peak RSS of the Python workers (the executor side that
      decodes) and of the JVM, with Spark's default heap, with `spark.driver.memory=512m`, and with the
      smallest heap Spark accepts and the JVM's other pools capped.
Writes its section of bench/RESULTS.md.

    .venv/bin/python bench/memory.py [--rows N] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.assemble import Watch  # noqa: E402
from bench.results import publish  # noqa: E402
from bench.scan import server_settings  # noqa: E402
from tests.support import servers  # noqa: E402

PAD = 1000  # bytes of text per row


def generate(server, rows: int) -> Path:
    """The big transaction in a file of its own; returns that (rotated) file."""
    conn = server.connect()
    cur = conn.cursor()
    cur.execute("CREATE DATABASE IF NOT EXISTS bench")
    cur.execute(f"CREATE TABLE bench.wide (id INT PRIMARY KEY, pad VARCHAR({PAD}), n BIGINT)")
    cur.execute("FLUSH BINARY LOGS")
    conn.begin()
    cur.execute("SET SESSION cte_max_recursion_depth = 100000000")
    cur.execute(f"""INSERT INTO bench.wide WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL
                   SELECT i + 1 FROM s WHERE i < {rows})
                   SELECT i, RPAD(CONCAT('v', i), {PAD}, 'x'), i * 7 FROM s""")
    conn.commit()
    cur.execute("FLUSH BINARY LOGS")
    cur.execute("SHOW BINARY LOGS")
    name = max(cur.fetchall(), key=lambda r: r[1])[0]  # the server rotates after a transaction past max size
    conn.close()
    return server.binlog_dir / name


def _mib(hwm_kib: int, anon_kib: int) -> str:
    return f"{hwm_kib / 1024:.0f} MiB ({anon_kib / 1024:.0f} MiB)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_050_000)
    ap.add_argument("--split-bytes", type=int, default=64 << 20)
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="binlake-bench-memory-"))
    from binlake.archive.run import archive
    from binlake.archive.sources import DirSource
    from binlake.archive.stores import open_store
    from binlake.binlog.framing import BinlogReader
    from binlake.index import index_transactions

    copied = work / "binlogs"
    store = f"file://{work}/store"
    if not copied.exists():
        server = servers.start("mysql", work / "mysql", **server_settings(False))
        try:
            print(f"MySQL {server.version}: one transaction of {args.rows:,} rows …", file=sys.stderr)
            f = generate(server, args.rows)
        finally:
            server.stop()
        copied.mkdir()
        os.replace(f, copied / f.name)
        archive(DirSource(str(copied)), open_store(store), "bench")
    f = next(copied.glob("binlog.*"))
    with BinlogReader.open(f) as r:
        version = r.fde.server_version
        big = max(index_transactions(r, f.name), key=lambda e: e.length)
    size_mib = big.length / (1 << 20)
    py = sys.executable
    cli = [py, "-m", "binlake.cli"]
    lines = [f"One transaction of {args.rows:,} rows, {size_mib:,.0f} MiB ({f.name}, written by MySQL {version}); "
             f"{os.cpu_count()} cores.", "",
             "| what | seconds | peak RSS Python (anonymous) | peak RSS JVM (anonymous) |", "|---|---:|---:|---:|"]

    print("  binlake scan --rows …", file=sys.stderr)
    w = Watch([*cli, "scan", "--rows", str(f)], keep_output=False)
    scan_s, _ = w.run()
    lines.append(f"| binlake scan --rows | {scan_s:.1f} | {_mib(w.driver_kib, w.anon_kib['driver'])} | – |")
    print("  mysqlbinlog -vv …", file=sys.stderr)
    t0 = time.perf_counter()
    subprocess.run([*servers._mysql_argv("mysqlbinlog"), "-vv", "--base64-output=DECODE-ROWS", str(f)],
                   stdout=subprocess.DEVNULL, check=True)
    lines.append(f"| mysqlbinlog -vv --base64-output=DECODE-ROWS | {time.perf_counter() - t0:.1f} | – | – |")

    t = dt.datetime.fromisoformat(big.commit_ts)
    rng = ["--start", t.isoformat(), "--end", (t + dt.timedelta(microseconds=1)).isoformat()]
    # the smallest heap Spark accepts (it refuses under 450 MiB: INVALID_DRIVER_MEMORY, executors alike), with
    # the JVM's other pools capped: what is left is Spark's floor
    lean = ["--conf", "spark.driver.memory=480m", "--conf", "spark.ui.enabled=false", "--conf",
            "spark.driver.extraJavaOptions=-XX:+UseSerialGC -Xms64m -XX:ReservedCodeCacheSize=48m "
            "-XX:MaxMetaspaceSize=200m -Xss512k -XX:TieredStopAtLevel=1 -XX:MaxDirectMemorySize=64m"]
    heaps = (("Spark's default heap", []), ("spark.driver.memory=512m", ["--conf", "spark.driver.memory=512m"]),
             ("the smallest heap Spark takes (480m), Serial GC, JVM pools capped", lean))
    for label, conf in heaps:
        print(f"  binlake assemble --master local[2], {label} …", file=sys.stderr)
        lake = work / f"lake-{len(conf)}"  # one per configuration
        w = Watch([*cli, "assemble", "--store", store, "--warehouse", str(lake), "--master", "local[2]", *rng,
                   "--split-bytes", str(args.split_bytes), *conf])
        seconds, out = w.run()
        summary = json.loads(out.strip().splitlines()[-1])
        lines.append(f"| binlake assemble --master local[2], {label} ({summary['pieces']} pieces, "
                     f"{summary['row_changes']:,} row changes) | {seconds:.1f} | "
                     f"{_mib(w.worker_kib, w.anon_kib['worker'])} (a worker) | {_mib(w.jvm_kib, w.anon_kib['jvm'])} |")
    lines += ["", "Peak RSS (VmHWM) counts the pages of the binlog file that binlake maps (mmap) while they are "
              "mapped in; its readers give them back every 64 MiB they walk (madvise DONTNEED: they stay in the "
              "kernel's page cache). In brackets, the peak of the process's own memory (RssAnon, sampled every "
              "0.1 s)."]
    publish("bench/memory.py", lines)


if __name__ == "__main__":
    main()
