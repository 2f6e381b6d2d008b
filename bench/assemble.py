"""Benchmark the Spark job (`binlake assemble`) beside `binlake scan --rows` on the same files.

Starts a real MySQL 9.x server, writes a corpus (default 256 MiB of rotated files) ending
with one transaction of 1,000,000 rows, archives it to a file:// store, then runs, each in
its own process over the whole corpus:
  (a) `binlake scan --rows` (single process, the reference)
  (b) `binlake assemble --master local[1]`
  (c) `binlake assemble --master local[2]`
  (d) `binlake assemble --master local[2]` over the range holding only the 1,000,000-row
      transaction, with splits small enough that it is cut into pieces
While a job runs, the peak RSS (VmHWM) of every process it starts is sampled: the Python
workers that decode (Spark's executor side in local mode) and the JVM. Writes its section of
bench/RESULTS.md.

    .venv/bin/python bench/assemble.py [--size-mib N] [--big-rows N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.results import publish  # noqa: E402
from bench.scan import generate, server_settings  # noqa: E402
from tests.support import servers  # noqa: E402


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def _hwm(pid: int) -> tuple[str, int, int]:
    """Command line, peak RSS (VmHWM, which counts the pages of a mapped file read through) and
    the anonymous RSS now (RssAnon: the process's own memory), in KiB."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "", 0, 0
    hwm = re.search(r"VmHWM:\s+(\d+) kB", status)
    anon = re.search(r"RssAnon:\s+(\d+) kB", status)
    return cmd, int(hwm.group(1)) if hwm else 0, int(anon.group(1)) if anon else 0


class Watch:
    """Runs a command; samples the peak RSS of its Python workers and of its JVM."""

    def __init__(self, argv: list[str], keep_output: bool = True) -> None:
        self.argv = argv
        self.keep = keep_output
        self.worker_kib = 0
        self.jvm_kib = 0
        self.driver_kib = 0
        self.anon_kib = {"driver": 0, "worker": 0, "jvm": 0}  # peaks of RssAnon, sampled

    def run(self) -> tuple[float, str]:
        # Output to a file, never into this process; a scan's (gigabytes) to /dev/null as in bench/scan.py.
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            t0 = time.perf_counter()
            proc = subprocess.Popen(self.argv, stdout=out if self.keep else subprocess.DEVNULL, stderr=err, text=True)
            done = threading.Event()
            t = threading.Thread(target=self._sample, args=(proc.pid, done), daemon=True)
            t.start()
            proc.wait()
            elapsed = time.perf_counter() - t0
            done.set()
            t.join()
            if proc.returncode != 0:
                err.seek(0)
                raise SystemExit(f"failed: {' '.join(self.argv)}\n{err.read()[-2000:]}")
            out.seek(0, os.SEEK_END)
            out.seek(max(0, out.tell() - 65536))
            return elapsed, out.read()

    def _sample(self, root: int, done: threading.Event) -> None:
        while not done.is_set():
            for pid in _descendants(root):
                cmd, kib, anon = _hwm(pid)
                if "pyspark.daemon" in cmd or "pyspark/daemon" in cmd or "pyspark.worker" in cmd:
                    self.worker_kib = max(self.worker_kib, kib)
                    who = "worker"
                elif "java" in cmd.split(" ", 1)[0]:
                    self.jvm_kib = max(self.jvm_kib, kib)
                    who = "jvm"
                elif pid == root:
                    self.driver_kib = max(self.driver_kib, kib)
                    who = "driver"
                else:
                    continue
                self.anon_kib[who] = max(self.anon_kib[who], anon)
            time.sleep(0.1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--big-rows", type=int, default=1_000_000)
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--rows-query", action="store_true",
                    help="generate with binlog_rows_query_log_events=ON (each row change carries its statement)")
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="binlake-bench-assemble-"))
    from binlake.archive.run import archive
    from binlake.archive.sources import DirSource
    from binlake.archive.stores import open_store
    from binlake.binlog.framing import BinlogReader
    from binlake.index import index_transactions

    copied = work / "binlogs"
    store = f"file://{work}/store"
    facts = work / "corpus.json"
    if facts.exists():  # --workdir of an earlier run: its corpus and archive again
        version = json.loads(facts.read_text())["version"]
    else:
        server = servers.start("mysql", work / "mysql", **server_settings(args.rows_query))
        try:
            print(f"MySQL {server.version}: generating {args.size_mib} MiB …", file=sys.stderr)
            generated = generate(server, args.size_mib, args.big_rows)
        finally:
            server.stop()
        version = server.version
        copied.mkdir()
        for f in generated:  # the corpus alone: rotated files, not the active one
            (copied / f.name).write_bytes(f.read_bytes())
        archive(DirSource(str(copied)), open_store(store), "bench")
        facts.write_text(json.dumps({"version": version}))
    files = sorted(copied.glob("binlog.*"))
    mib = sum(f.stat().st_size for f in files) / (1 << 20)
    with BinlogReader.open(files[-1]) as r:
        big = max(index_transactions(r, files[-1].name), key=lambda e: e.length)
    big_ts = big.commit_ts
    py = sys.executable
    cli = [py, "-m", "binlake.cli"]
    everything = ["--start", "2000-01-01", "--end", "2100-01-01"]
    rows = []
    steps: dict[str, tuple[float, dict]] = {}

    w = Watch([*cli, "scan", "--rows", *map(str, files)], keep_output=False)
    seconds, _ = w.run()
    scan_s = seconds
    rows.append(("binlake scan --rows (1 process)", seconds, mib / seconds, w.driver_kib, None, None))
    for master in ("local[1]", "local[2]"):
        shutil.rmtree(work / f"lake-{master[6]}", ignore_errors=True)
        w = Watch([*cli, "assemble", "--store", store, "--warehouse", str(work / f"lake-{master[6]}"),
                   "--master", master, *everything])
        seconds, out = w.run()
        summary = json.loads(out.strip().splitlines()[-1])
        steps[master] = (seconds, summary["step_seconds"])
        rows.append((f"binlake assemble --master {master} ({summary['splits']} splits)", seconds,
                     mib / seconds, w.driver_kib, w.worker_kib, w.jvm_kib))
    import datetime as dt

    t = dt.datetime.fromisoformat(big_ts)
    shutil.rmtree(work / "lake-big", ignore_errors=True)
    w = Watch([*cli, "assemble", "--store", store, "--warehouse", str(work / "lake-big"), "--master", "local[2]",
               "--start", t.isoformat(), "--end", (t + dt.timedelta(microseconds=1)).isoformat(),
               "--split-bytes", str(8 << 20)])
    seconds, out = w.run()
    big_summary = json.loads(out.strip().splitlines()[-1])

    lines = [
        f"Corpus: {len(files)} files, {mib:.1f} MiB written by MySQL {version}, the last transaction "
        f"{args.big_rows:,} rows ({big.length / (1 << 20):.0f} MiB); {os.cpu_count()} cores; "
        "the warehouse on local disk.",
        "",
        "| what | seconds | MiB/s | peak RSS driver | peak RSS Python worker | peak RSS JVM |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, s, m, d, wk, j in rows:
        fmt = [f"{v / 1024:.0f} MiB" if v else "–" for v in (d, wk, j)]
        lines.append(f"| {name} | {s:.1f} | {m:.1f} | {' | '.join(fmt)} |")
    ratio = rows[2][1] and scan_s / rows[2][1]
    lines += [
        "",
        f"local[2] against the single-process scan: {ratio:.2f}×. Where the job's time goes (the summary's "
        "`step_seconds`; the rest is the JVM's start, the session and planning from the manifests):",
        "",
        "| master | survey big transactions | facts pass → staged Parquet | tables | rows pass, write Parquet "
        "| the rest |",
        "|---|---:|---:|---:|---:|---:|",
        *(f"| {m} | " + " | ".join(f"{st[k]:.1f}" for k in ("survey", "facts", "tables", "write"))
          + f" | {total - sum(st.values()):.1f} |" for m, (total, st) in steps.items()),
        "",
        f"The {args.big_rows:,}-row transaction alone, cut into {big_summary['pieces']} pieces of 8 MiB "
        f"(local[2]): {seconds:.1f} s, peak RSS of a Python worker {w.worker_kib / 1024:.0f} MiB, "
        f"of the JVM {w.jvm_kib / 1024:.0f} MiB.",
    ]
    publish("bench/assemble.py", lines)


if __name__ == "__main__":
    main()
