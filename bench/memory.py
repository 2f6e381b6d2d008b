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
      smallest heap Spark accepts and the JVM's other pools capped (then once more over the same
      range: a rerun, which also reads the rows it replaces); beside them, Spark's own peak
      executor metrics (what its UI shows as Peak JVM Memory), read from the run's event log.
Writes its section of bench/RESULTS.md.

    .venv/bin/python bench/memory.py [--rows N] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.assemble import Watch, fastest  # noqa: E402
from bench.results import publish  # noqa: E402
from bench.scan import server_settings, timed  # noqa: E402
from tests.support import servers  # noqa: E402

PAD = 1000  # bytes of text per row
# The JVM options of the small-heap run (docs/warehouse.md gives them to users: a test holds the two alike).
LEAN_JVM = ("-XX:+UseSerialGC -Xms64m -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=20 -XX:ReservedCodeCacheSize=48m "
            "-XX:MaxMetaspaceSize=200m -Xss512k -XX:TieredStopAtLevel=1 -XX:MaxDirectMemorySize=64m")
# Spark's executor metrics kept: the JVM's heap and off-heap memory in use (what Spark's UI shows as
# Peak JVM Memory), and the RSS of the executor's process tree (JVM, Python workers) as Spark counts it.
SPARK_PEAKS = ("JVMHeapMemory", "JVMOffHeapMemory", "ProcessTreeJVMRSSMemory", "ProcessTreePythonRSSMemory")


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


def _event_log(events: Path) -> list[str]:
    """Spark settings that write an event log with the executors' peak metrics (process trees
    included, polled every 0.2 s rather than at heartbeats only)."""
    events.mkdir(parents=True, exist_ok=True)
    conf = {"spark.eventLog.enabled": "true", "spark.eventLog.dir": events.as_uri(),
            "spark.eventLog.compress": "false", "spark.eventLog.rolling.enabled": "false",  # one JSON file
            "spark.eventLog.logStageExecutorMetrics": "true", "spark.executor.processTreeMetrics.enabled": "true",
            "spark.executor.metrics.pollingInterval": "200ms"}
    return [a for k, v in conf.items() for a in ("--conf", f"{k}={v}")]


def spark_peaks(events: Path) -> dict[str, int]:
    """The peaks of SPARK_PEAKS over a run's event log (bytes): per stage and per task, as Spark
    logs them."""
    peaks = dict.fromkeys(SPARK_PEAKS, 0)
    for log in events.iterdir():
        with log.open() as f:
            for line in f:
                event = json.loads(line)
                for metrics in (event.get("Executor Metrics"), event.get("Task Executor Metrics")):
                    for k in SPARK_PEAKS:
                        peaks[k] = max(peaks[k], (metrics or {}).get(k, 0))
    return peaks


def _mib(hwm_kib: int, anon_kib: int) -> str:
    return f"{hwm_kib / 1024:.0f} MiB ({anon_kib / 1024:.0f} MiB)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_050_000)
    ap.add_argument("--split-bytes", type=int, default=64 << 20)
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="binlake-bench-memory-"))
    from binlake.archive.index import index_transactions
    from binlake.archive.run import archive
    from binlake.archive.sources import DirSource
    from binlake.archive.stores import open_store
    from binlake.binlog.framing import BinlogReader

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
             "| what | seconds | peak RSS Python (anonymous) | peak RSS JVM (anonymous) "
             "| Spark's peaks: JVM heap + off-heap used | Spark's peaks: RSS of JVM, of Python workers |",
             "|---|---:|---:|---:|---:|---:|"]

    print("  binlake scan --rows …", file=sys.stderr)
    scan_s, _, w = fastest(3, [*cli, "scan", "--rows", str(f)], keep=False)  # the best of 3, as bench/scan.py
    lines.append(f"| binlake scan --rows (the best of 3) | {scan_s:.1f} | {_mib(w.driver_kib, w.anon_kib['driver'])} "
                 "| – | – | – |")
    print("  mysqlbinlog -vv …", file=sys.stderr)
    vv = min(timed([*servers.mysql_argv("mysqlbinlog"), "-vv", "--base64-output=DECODE-ROWS", str(f)])[0]
             for _ in range(3))
    lines.append(f"| mysqlbinlog -vv --base64-output=DECODE-ROWS (the best of 3) | {vv:.1f} | – | – | – | – |")

    t = dt.datetime.fromisoformat(big.commit_ts)
    rng = ["--start", t.isoformat(), "--end", (t + dt.timedelta(microseconds=1)).isoformat()]
    # the smallest heap Spark accepts (it refuses under 450 MiB: INVALID_DRIVER_MEMORY, executors alike),
    # grown only as far as its live objects need (the collector's free ratios: a heap is otherwise grown to
    # keep 40-70 % free, pages the process keeps), the JVM's other pools capped: what is left is Spark's floor
    lean = ["--conf", "spark.driver.memory=480m", "--conf", "spark.ui.enabled=false", "--conf",
            f"spark.driver.extraJavaOptions={LEAN_JVM}"]
    heaps = (("Spark's default heap", []), ("spark.driver.memory=512m", ["--conf", "spark.driver.memory=512m"]),
             ("the smallest heap Spark takes (480m), grown only as needed (free ratios 10-20 %), Serial GC, "
              "JVM pools capped", lean))
    runs = [(label, conf, True) for label, conf in heaps]
    runs.append((f"{heaps[-1][0]}, the same range again (a rerun: it reads the rows it replaces)", lean, False))
    for label, conf, first in runs:
        print(f"  binlake assemble --master local[2], {label} …", file=sys.stderr)
        lake = work / f"lake-{len(conf)}"  # one per configuration
        events = work / f"events-{len(conf)}"
        shutil.rmtree(events, ignore_errors=True)
        if first:  # a first write of the range
            shutil.rmtree(lake, ignore_errors=True)
        w = Watch([*cli, "assemble", "--store", store, "--warehouse", str(lake), "--master", "local[2]", *rng,
                   "--split-bytes", str(args.split_bytes), *conf, *_event_log(events)])
        seconds, out = w.run()
        summary = json.loads(out.strip().splitlines()[-1])
        peak = {k: v / (1 << 20) for k, v in spark_peaks(events).items()}
        lines.append(f"| binlake assemble --master local[2], {label} ({summary['pieces']} pieces, "
                     f"{summary['row_changes']:,} row changes) | {seconds:.1f} | "
                     f"{_mib(w.worker_kib, w.anon_kib['worker'])} (a worker) | {_mib(w.jvm_kib, w.anon_kib['jvm'])} "
                     f"| {peak['JVMHeapMemory']:.0f} + {peak['JVMOffHeapMemory']:.0f} MiB "
                     f"| {peak['ProcessTreeJVMRSSMemory']:.0f} MiB, {peak['ProcessTreePythonRSSMemory']:.0f} MiB |")
    lines += ["", f"`binlake scan --rows` against `mysqlbinlog -vv` on this file (ratio of speeds): {vv / scan_s:.2f}.",
              "", "Peak RSS (VmHWM) counts the pages of the binlog file that binlake maps (mmap) while they are "
              "mapped in; its readers give them back every 64 MiB they walk (madvise DONTNEED: they stay in the "
              "kernel's page cache). In brackets, the peak of the process's own memory (RssAnon, sampled every "
              "0.1 s). Spark's peaks are its executor metrics from the run's event log (polled every 0.2 s): the "
              "heap in use (live objects and garbage not yet collected) and the JVM's other pools in use, as its "
              "UI's Peak JVM Memory shows them, and the RSS it counts of the JVM and of all its Python workers "
              "together."]
    publish("bench/memory.py", lines)


if __name__ == "__main__":
    main()
