"""Benchmark the Spark job (`binlake assemble`) beside `binlake scan --rows` on the same files.

Starts a real MySQL 9.x server, writes a corpus (default 256 MiB of rotated files) ending
with one transaction of 1,000,000 rows, archives it to a file:// store, then runs, each in
its own process over the whole corpus:
  (a) `binlake scan --rows` (single process, the reference)
  (b) `binlake assemble --master local[1]`
  (c) `binlake assemble --master local[2]`
  (d) Spark alone: a local[2] session that reads the row changes (c) wrote and writes them
      again as the job does, no binlake code in its tasks: Spark's own cost of the biggest table
  (e) `binlake assemble --master local[2]` over the range holding only the 1,000,000-row
      transaction, with splits small enough that it is cut into pieces
  (f) the steady state: the same corpus archived under 8 source names, so that (a)–(d) over
      8× the bytes pay the fixed costs (the JVM's start, its JIT, the session) once; the
      difference is each one's throughput at scale, beside `mysqlbinlog -vv`'s on the corpus
While a job runs, the peak RSS (VmHWM) and the CPU seconds of every process it starts are
sampled: the Python workers that decode (Spark's executor side in local mode) and the JVM, whose
threads are told apart (JIT compilers, task threads, the rest). Writes its section of
bench/RESULTS.md.

With `--shape mix` the corpus is bench/shapes.py's realistic mix instead (production's
shapes, no big transaction), in a section of its own: the job's steady state there beside
Spark alone rewriting the same rows. `--shape mix-shipped` writes the mix on a server at the
settings MySQL ships with (bench/shapes.py's SHIPPED: no GTIDs, minimal row metadata), its own
section too.

    .venv/bin/python bench/assemble.py [--size-mib N] [--big-rows N] [--workdir DIR] [--repeat N]
                                       [--shape mix|mix-shipped]
"""

from __future__ import annotations

import argparse
import contextlib
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

from bench import shapes  # noqa: E402
from bench.results import publish  # noqa: E402
from bench.scan import generate, server_settings, timed  # noqa: E402
from bench.shapes import SHIPPED  # noqa: E402
from tests.support import servers  # noqa: E402
from tests.support.processes import tree  # noqa: E402


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


TICK = os.sysconf("SC_CLK_TCK")
# The steady state: the corpus archived under this many source names. Spark alone rewrites 4 copies in
# about 1.5 s beyond its fixed 11: at 4 its figure moved by a factor of two from run to run.
COPIES = 8
MIX = "60 % one-row, 20 % small, 10 % JSON, 5 % 100-row, 5 % all-types transactions"
TITLES = {"mix": "bench/assemble.py --shape mix (production's mix)",
          "mix-shipped": "bench/assemble.py --shape mix-shipped (production's mix, MySQL as shipped)"}


def _cpu(stat: str) -> float:
    """CPU seconds (user + system) from a /proc stat line."""
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def _jvm_threads(pid: int) -> dict[tuple[int, str], tuple[str, float]]:
    """CPU seconds of each of a JVM's threads, by what it does: the JIT compilers, Spark's task
    threads, the rest (start, class loading, the scheduler, Py4J, GC)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        who = "jit" if "CompilerThre" in name else "tasks" if name.startswith("Executor task") else "other"
        out[(pid, task.name)] = (who, _cpu(stat))
    return out


class Watch:
    """Runs a command; samples the peak RSS and the CPU of its Python workers and of its JVM."""

    def __init__(self, argv: list[str], keep_output: bool = True) -> None:
        self.argv = argv
        self.keep = keep_output
        self.worker_kib = 0
        self.jvm_kib = 0
        self.driver_kib = 0
        self.anon_kib = {"driver": 0, "worker": 0, "jvm": 0}  # peaks of RssAnon, sampled
        self._cpu: dict = {}  # pid or (pid, thread) -> (who, CPU seconds at the last sample)

    def cpu(self) -> dict[str, float]:
        """CPU seconds by who spent them: driver, worker (Spark's Python workers), and the JVM's
        threads as jit, tasks and other (sampled every 0.1 s: a last tenth of a second is lost)."""
        out = {k: 0.0 for k in ("driver", "worker", "jit", "tasks", "other")}
        for who, seconds in self._cpu.values():
            out[who] += seconds
        return out

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
            for pid in tree(root):
                cmd, kib, anon = _hwm(pid)
                if "pyspark.daemon" in cmd or "pyspark/daemon" in cmd or "pyspark.worker" in cmd:
                    self.worker_kib = max(self.worker_kib, kib)
                    who = "worker"
                elif "java" in cmd.split(" ", 1)[0]:
                    self.jvm_kib = max(self.jvm_kib, kib)
                    who = "jvm"
                    self._cpu.update(_jvm_threads(pid))
                elif pid == root:
                    self.driver_kib = max(self.driver_kib, kib)
                    who = "driver"
                else:
                    continue
                self.anon_kib[who] = max(self.anon_kib[who], anon)
                if who != "jvm":
                    with contextlib.suppress(OSError):  # gone since _hwm read it
                        self._cpu[pid] = (who, _cpu(Path(f"/proc/{pid}/stat").read_text()))
            time.sleep(0.1)


def fastest(repeat: int, argv: list[str], before=lambda: None, keep: bool = True) -> tuple[float, str, Watch]:
    """The fastest of `repeat` runs of a command (a shared machine's noise only ever adds time),
    with its output and its samples; `before` runs ahead of each (to empty its output folder)."""
    runs = []
    for _ in range(repeat):
        before()
        w = Watch(argv, keep_output=keep)
        runs.append((*w.run(), w))
    return min(runs, key=lambda r: r[0])


def rewrite(lake: Path, out: Path) -> None:
    """Spark's floor: the row changes a job wrote, read and written again as the job writes them
    (its writer options, partitioned by commit_date), in a local[2] session. No binlake code runs
    in the tasks: what this costs, the job pays for its biggest table whatever binlake's decoding
    costs. Prints the seconds from the session's start to the write's end."""
    from binlake.spark.job import WRITE_OPTIONS, session

    spark = session("local[2]", app="binlake-bench-floor")
    t0 = time.perf_counter()
    (spark.read.format("delta").load(str(lake / "row_changes")).write.options(**WRITE_OPTIONS["row_changes"])
     .partitionBy("commit_date").mode("overwrite").parquet(str(out)))
    print(json.dumps({"write_seconds": time.perf_counter() - t0}))
    spark.stop()


def _floor_text(scan_s: float, cpus: dict, floor_what: str, floor_write: float) -> str:
    """What the target asks of the job in seconds and CPU, beside what Spark spends with no binlake code."""
    budget = scan_s / 1.8
    _, floor = cpus[floor_what]
    _, job = cpus["binlake assemble --master local[2]"]
    jvm = job["jit"] + job["tasks"] + job["other"]
    return (f"For local[2] to run at 1.8× the scan it would have to finish in {budget:.1f} s: at most "
            f"{2 * budget:.1f} CPU-seconds on the two cores. The job spent {sum(job.values()):.1f}, "
            f"{jvm:.1f} of them in the JVM and {job['worker']:.1f} in binlake's decoding (two passes). "
            f"Spark alone, rewriting the same row changes with no binlake code in its tasks, spent "
            f"{sum(floor.values()):.1f} CPU-seconds, {floor['tasks']:.1f} of them in its task threads and "
            f"{floor['jit']:.1f} compiling; its write took {floor_write:.1f} s after the session had started.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rewrite", nargs=2, type=Path, metavar=("LAKE", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--big-rows", type=int, default=1_000_000)
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--repeat", type=int, default=2, help="runs of each command; the fastest counts (default 2)")
    ap.add_argument("--rows-query", action="store_true",
                    help="generate with binlog_rows_query_log_events=ON (each row change carries its statement)")
    ap.add_argument("--shape", choices=("200-row", "mix", "mix-shipped"), default="200-row",
                    help="the corpus: 200-row transactions ending with the big one (default), or bench/shapes.py's "
                         "realistic mix of production's shapes (no big transaction), written by a server at "
                         "binlake's test settings or (mix-shipped) at those MySQL ships with")
    args = ap.parse_args()
    if args.rewrite:
        return rewrite(*args.rewrite)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="binlake-bench-assemble-"))
    from binlake.archive.index import index_transactions
    from binlake.archive.run import archive
    from binlake.archive.sources import DirSource
    from binlake.archive.stores import open_store
    from binlake.binlog.framing import BinlogReader

    copied = work / "binlogs"
    store = f"file://{work}/store"
    facts = work / "corpus.json"
    if facts.exists():  # --workdir of an earlier run: its corpus and archive again
        version = json.loads(facts.read_text())["version"]
    else:
        shipped = SHIPPED if args.shape == "mix-shipped" else {}
        server = servers.start("mysql", work / "mysql", **server_settings(args.rows_query), **shipped)
        try:
            print(f"MySQL {server.version}: generating {args.size_mib} MiB of {args.shape} …", file=sys.stderr)
            generated = (generate(server, args.size_mib, args.big_rows) if args.shape == "200-row"
                         else shapes.generate(server, args.size_mib, 0, ["mix"])["mix"])
        finally:
            server.stop()
        version = server.version
        copied.mkdir()
        for f in generated:  # the corpus alone: rotated files, not the active one
            (copied / f.name).write_bytes(f.read_bytes())
        archive(DirSource(str(copied)), open_store(store), "bench")
        facts.write_text(json.dumps({"version": version}))
    for i in range(2, COPIES + 1):  # the steady state's copies of "bench" (archiving again copies nothing)
        archive(DirSource(str(copied)), open_store(store), f"bench-{i}")
    files = sorted(copied.glob("binlog.*"))
    mib = sum(f.stat().st_size for f in files) / (1 << 20)
    with BinlogReader.open(files[-1]) as r:
        big = max(index_transactions(r, files[-1].name), key=lambda e: e.length)
    py = sys.executable
    cli = [py, "-m", "binlake.cli"]
    everything = ["--start", "2000-01-01", "--end", "2100-01-01"]

    def best(argv: list[str], before=lambda: None, keep: bool = True) -> tuple[float, str, Watch]:
        return fastest(args.repeat, argv, before, keep)

    def assemble(master: str, lake: str, *more: str) -> tuple[float, dict, Watch]:
        seconds, out, w = best([*cli, "assemble", "--store", store, "--warehouse", str(work / lake), "--master",
                                master, *more], lambda: shutil.rmtree(work / lake, ignore_errors=True))
        return seconds, json.loads(out.strip().splitlines()[-1]), w

    def floor(lake: str) -> tuple[float, float, Watch]:
        seconds, out, w = best([py, __file__, "--rewrite", str(work / lake), str(work / "floor")],
                               lambda: shutil.rmtree(work / "floor", ignore_errors=True))
        shutil.rmtree(work / "floor", ignore_errors=True)
        return seconds, json.loads(out.strip().splitlines()[-1])["write_seconds"], w

    rows = []
    steps: dict[str, tuple[float, dict]] = {}
    cpus: dict[str, tuple[float, dict[str, float]]] = {}  # what -> (seconds, CPU seconds by who)
    scale: dict[str, tuple[float, float]] = {}  # what -> (seconds over the corpus, over COPIES of it)
    cpu_scale: dict[str, tuple[dict, dict]] = {}

    scan_s, _, w = best([*cli, "scan", "--rows", *map(str, files)], keep=False)
    rows.append(("binlake scan --rows (1 process)", scan_s, mib / scan_s, w.driver_kib, None, None))
    cpus["binlake scan --rows"] = (scan_s, w.cpu())
    for master in ("local[1]", "local[2]"):
        seconds, summary, w = assemble(master, f"lake-{master[6]}", "--source", "bench", *everything)
        steps[master] = (seconds, _steps(summary))
        rows.append((f"binlake assemble --master {master} ({summary['splits']} splits)", seconds,
                     mib / seconds, w.driver_kib, w.worker_kib, w.jvm_kib))
        cpus[f"binlake assemble --master {master}"] = (seconds, w.cpu())
    floor_s, floor_write, w = floor("lake-2")
    floor_what = "Spark alone: local[2] reads the row changes the job wrote and writes them again"
    rows.append((f"{floor_what} (no binlake code in its tasks)", floor_s, mib / floor_s, w.driver_kib, None,
                 w.jvm_kib))
    cpus[floor_what] = (floor_s, w.cpu())

    # The steady state: every command again over COPIES times the corpus.
    vv = min(timed([*servers.mysql_argv("mysqlbinlog"), "-vv", "--base64-output=DECODE-ROWS", *map(str, files)])[0]
             for _ in range(3))
    seconds, _, w = best([*cli, "scan", "--rows", *map(str, files * COPIES)], keep=False)
    scale["binlake scan --rows (1 process)"] = (scan_s, seconds)
    cpu_scale["binlake scan --rows (1 process)"] = (cpus["binlake scan --rows"][1], w.cpu())
    steady_steps: dict[str, tuple[dict, dict]] = {}  # master -> step_seconds over the corpus, over COPIES of it
    for master in ("local[1]", "local[2]"):
        seconds, summary, w = assemble(master, f"lake-{master[6]}x", *everything)
        steady_steps[master] = (steps[master][1], _steps(summary))
        scale[f"binlake assemble --master {master}"] = (steps[master][0], seconds)
        cpu_scale[f"binlake assemble --master {master}"] = (cpus[f"binlake assemble --master {master}"][1], w.cpu())
    seconds, _, w = floor("lake-2x")
    scale["Spark alone, rewriting the row changes (local[2])"] = (floor_s, seconds)
    cpu_scale["Spark alone, rewriting the row changes (local[2])"] = (cpus[floor_what][1], w.cpu())
    for lake in ("lake-1x", "lake-2x"):
        shutil.rmtree(work / lake, ignore_errors=True)

    import datetime as dt

    corpus = (f"the last transaction {args.big_rows:,} rows ({big.length / (1 << 20):.0f} MiB)"
              if args.shape == "200-row" else f"bench/shapes.py's mix ({MIX})")
    if args.shape == "mix-shipped":
        corpus += ", the server at " + ", ".join(f"{k}={v}" for k, v in SHIPPED.items())
    lines = [
        f"Corpus: {len(files)} files, {mib:.1f} MiB written by MySQL {version}, {corpus}; {os.cpu_count()} cores; "
        f"the warehouse on local disk; the best of {args.repeat} runs of each command.",
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
          + f" | {total - sum(st[k] for k in STEPS):.1f} |" for m, (total, st) in steps.items()),
        "",
        "Where the CPU goes (seconds of CPU, each process's threads sampled every 0.1 s from /proc; Spark's "
        "Python workers run binlake's decoding, the JVM's task threads turn their Arrow batches into rows "
        "and write Parquet, its JIT compilers compile Spark's code and the code Spark generates):",
        "",
        *_cpu_table(cpus.items()),
        "",
        _floor_text(scan_s, cpus, floor_what, floor_write),
        "",
        *_steady_text(mib, vv, scale, cpu_scale=cpu_scale, steps=steady_steps),
    ]
    if args.shape in TITLES:
        return publish(TITLES[args.shape], lines)
    t = dt.datetime.fromisoformat(big.commit_ts)
    big_s, big_summary, w = assemble("local[2]", "lake-big", "--source", "bench", "--start", t.isoformat(),
                                     "--end", (t + dt.timedelta(microseconds=1)).isoformat(),
                                     "--split-bytes", str(8 << 20))
    lines += [
        "",
        f"The {args.big_rows:,}-row transaction alone, cut into {big_summary['pieces']} pieces of 8 MiB "
        f"(local[2]): {big_s:.1f} s, peak RSS of a Python worker {w.worker_kib / 1024:.0f} MiB, "
        f"of the JVM {w.jvm_kib / 1024:.0f} MiB.",
    ]
    publish("bench/assemble.py", lines)


_WHO = ("driver", "worker", "jit", "tasks", "other")
STEPS = ("survey", "schema", "facts", "tables", "write")  # the summary's step_seconds
WRITES = ("transactions", "row_changes", "anomalies")  # its write_seconds: the write step's per table


def _steps(summary: dict) -> dict[str, float]:
    """A job's seconds per step and, within the write step, per table (`write:<table>`)."""
    return {**summary["step_seconds"], **{f"write:{k}": v for k, v in summary["write_seconds"].items()}}


def _cpu_table(items, digits: int = 1) -> list[str]:
    return ["| what | seconds | binlake's process (driver) | Spark's Python workers | JVM: JIT compilers "
            "| JVM: task threads | JVM: the rest | all |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
            *(f"| {what} | {secs:.{digits}f} | " + " | ".join(f"{c[k]:.{digits}f}" for k in _WHO)
              + f" | {sum(c.values()):.{digits}f} |" for what, (secs, c) in items)]


def _steady_text(mib: float, vv: float, scale: dict, *, cpu_scale: dict, steps: dict) -> list[str]:
    """The steady state: each command's throughput on the bytes beyond the first corpus (what a
    backlog of days costs once the fixed costs are paid), its fixed seconds, and where the CPU and
    the job's steps of one more corpus go."""
    more = (COPIES - 1) * mib
    speed = {what: more / (many - one) for what, (one, many) in scale.items()}
    fixed = {what: one - mib / speed[what] for what, (one, _) in scale.items()}
    scan = speed["binlake scan --rows (1 process)"]
    job = speed["binlake assemble --master local[2]"]
    one_slot = speed["binlake assemble --master local[1]"]
    alone = speed["Spark alone, rewriting the row changes (local[2])"]
    # (sampling every 0.1 s can make a process that does no more work seem to do a little less)
    per = {what: {k: max(0.0, (b[k] - a[k]) / (COPIES - 1)) for k in _WHO} for what, (a, b) in cpu_scale.items()}
    keys = ("facts", "tables", *(f"write:{t}" for t in WRITES))
    per_step = {m: {k: max(0.0, b[k] - a[k]) / (COPIES - 1) for k in (*STEPS, *keys)} for m, (a, b) in steps.items()}
    rows_write = per_step["local[2]"]["write:row_changes"]
    return [
        f"The steady state: the same corpus archived under {COPIES} source names ({COPIES * mib:,.0f} MiB), so "
        "that each command pays its fixed costs (the JVM's start, its JIT compiling, the session; Python's "
        "start) once over more bytes. The throughput on the bytes beyond the first corpus is what a backlog "
        f"of days runs at; `mysqlbinlog -vv` on the corpus: {vv:.1f} s, {mib / vv:.1f} MiB/s.",
        "",
        f"| what | seconds, the corpus | seconds, {COPIES}× | MiB/s in steady state | fixed seconds "
        "| × scan --rows | × mysqlbinlog -vv |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *(f"| {what} | {one:.1f} | {many:.1f} | {speed[what]:.1f} | {max(fixed[what], 0):.1f} "
          f"| {speed[what] / scan:.2f} | {speed[what] * vv / mib:.2f} |" for what, (one, many) in scale.items()),
        "",
        f"CPU seconds of each further {mib:.0f} MiB (the {COPIES}× run's less the first's, over {COPIES - 1}):",
        "",
        *_cpu_table(((what, ((many - one) / (COPIES - 1), per[what])) for what, (one, many) in scale.items()), 2),
        "",
        f"Seconds of each further {mib:.0f} MiB by step of the job (the summary's `step_seconds`, the write's "
        f"per table its `write_seconds`; the {COPIES}× run's less the first's, over {COPIES - 1}), beside Spark "
        "alone rewriting the same row changes:",
        "",
        "| master | facts pass → staged Parquet | tables | write: transactions | write: row changes (the rows "
        "pass) | write: anomalies | write: the counts | all | Spark alone's rewrite |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(f"| {m} | " + " | ".join(f"{v:.2f}" for v in (*(d[k] for k in keys), d["write"] - sum(
            d[f"write:{t}"] for t in WRITES), sum(d[k] for k in STEPS))) + f" | {mib / alone:.2f} |"
          for m, d in per_step.items()),
        "",
        f"Spark alone rewrites the row changes in {mib / alone:.2f} s per {mib:.0f} MiB; the job's write of the "
        f"same row changes, its rows pass decoding them as they are written, takes {rows_write:.2f}: "
        f"{mib / alone / rows_write:.2f}×. That is the most the job could reach were its facts pass, its "
        "transactions and everything else free.",
        "",
        f"In steady state local[2] runs at {job:.1f} MiB/s: {job / scan:.2f}× the scan and "
        f"{job * vv / mib:.2f}× `mysqlbinlog -vv`, {job / one_slot:.2f}× local[1] ({one_slot:.1f} MiB/s). "
        f"Spark's own rewrite of the same row changes, no binlake code in its tasks, runs at {alone:.1f} MiB/s "
        f"on the two cores, {alone / scan:.2f}× the scan: a job that writes them through Spark's writer stays "
        "below that whatever binlake's decoding costs.",
    ]


if __name__ == "__main__":
    main()
