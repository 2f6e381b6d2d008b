"""The cost of one small interval, as binlake_transactions pays it, and what of it is fixed.

Three corpora, each archived to a file store of its own: the bundled samples (151 transactions,
two servers), and 1,000 and 10,000 one-row transactions (autocommit INSERTs) that a real MySQL
server started for the run writes (into bench/shapes.py's table). On each, on 2 cores:
`binlake assemble` and `binlake validate` each in its own process (as two tasks run them), and
`binlake assemble --validate` (both steps in one process and one Spark session). The two
one-row corpora tell the fixed cost of a run from its cost per byte. Then, in one process over
the 1,000 transactions: the session, the job and each run of the suites with the Spark jobs it
starts (the first run pays GX's imports and its project). The per-byte cost of big corpora is
bench/assemble.py's. Targets: an interval of up to a thousand transactions assembled and validated
in under 20 s on 2 cores (issue 24); and one hour as a user's server writes it, 186 transactions of
1,107 rows (205,903 row changes, about 5 MiB of binlog), `binlake assemble --validate` in at most
20 s (issue 38; the DAG's path, writing the Delta tables).

    .venv/bin/python bench/interval.py
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.results import publish

TARGET = 20.0
CLI = [sys.executable, "-m", "binlake.cli"]
ONE_ROW = (1_000, 10_000)
LOCAL = ["--master", "local[2]"]


def _archive(root: Path, dirs: list[Path], name=lambda d: f"sample-{d.name}") -> tuple[str, str, str]:
    """Each directory of binlog files archived as a source of one file store; the store and the
    whole hours around its commits."""
    from binlake.archive.run import archive
    from binlake.archive.sources import DirSource
    from binlake.archive.stores import open_store
    from binlake.local.demo import commit_range

    store = f"file://{root / 'archive'}"
    for d in dirs:
        archive(DirSource(str(d)), open_store(store), name(d))
    start, end = commit_range(root / "archive")
    return store, start, end


def _samples(root: Path) -> tuple[str, str, str]:
    from binlake.local.demo import sample_files

    return _archive(root, sorted({Path(f).parent for f in sample_files()}))


def _one_row(root: Path) -> dict[int, tuple[str, str, str]]:
    """The one-row corpora: a server writes its tables' DDL, then each corpus's INSERTs into
    files of their own; corpus n is archived from copies of the files that hold its n."""
    from pymysql.constants import CLIENT

    from bench.shapes import TABLES
    from tests.support import servers

    with contextlib.ExitStack() as running:  # the server stops once the files are written
        server = servers.start("mysql", root / "server", sync_binlog="0", innodb_flush_log_at_trx_commit="0")
        running.callback(server.stop)
        conn = server.connect(client_flag=CLIENT.MULTI_STATEMENTS)
        cur = conn.cursor()

        def rotate() -> str:  # a new file; its name
            cur.execute("FLUSH BINARY LOGS")
            cur.execute("SHOW BINARY LOGS")
            return cur.fetchall()[-1][0]

        cur.execute("CREATE DATABASE b")
        cur.execute(TABLES[0])
        files = {0: rotate()}  # the file each count's rows end before
        done = 0
        for n in ONE_ROW:
            while done < n:
                batch = range(done, min(n, done + 200))  # statements sent at once: each its own transaction
                cur.execute(";".join(f"INSERT INTO b.t (a,b,c,d,e,s) VALUES ({i}, 'row {i}', {i / 100}, "
                                     f"'2026-01-01 00:00:00.{i % 10**6:06d}', {i * 1.5}, {i % 256})" for i in batch))
                while cur.nextset():
                    pass
                done = batch.stop
            files[n] = rotate()
        conn.close()
        names = sorted(p.name for p in server.binlog_dir.glob(f"{server.binlog_basename}.[0-9]*"))
    out = {}
    for n in ONE_ROW:
        d = root / f"one-row-{n}" / "mysql"
        d.mkdir(parents=True)
        for name in names[:names.index(files[n])]:
            shutil.copy(server.binlog_dir / name, d / name)
        out[n] = _archive(root / f"one-row-{n}", [d], name=lambda _d, n=n: f"one-row-{n}")
    return out


HOUR = (186, 1_107)  # transactions, rows each (the last has one more: 205,903 row changes)


def _hour(root: Path) -> tuple[str, str, str]:
    """One hour as issue 38 measured it: 186 multi-row INSERT transactions, archived."""
    from bench.shapes import TABLES
    from tests.support import servers

    with contextlib.ExitStack() as running:
        server = servers.start("mysql", root / "server", sync_binlog="0", innodb_flush_log_at_trx_commit="0")
        running.callback(server.stop)
        conn = server.connect()
        cur = conn.cursor()
        cur.execute("CREATE DATABASE b")
        cur.execute(TABLES[0])
        cur.execute("SET SESSION cte_max_recursion_depth = 100000")
        cur.execute("FLUSH BINARY LOGS")
        first = 0
        for t in range(HOUR[0]):
            n = HOUR[1] + (t == HOUR[0] - 1)
            cur.execute("BEGIN")
            cur.execute(f"INSERT INTO b.t (a,b,c,d,e,s) WITH RECURSIVE r(i) AS (SELECT {first} UNION ALL "
                        f"SELECT i + 1 FROM r WHERE i < {first + n - 1}) SELECT i, CONCAT('row ', i), i / 100, "
                        "'2026-01-01 00:00:00', i * 1.5, i % 256 FROM r")
            cur.execute("COMMIT")
            first += n
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("SHOW BINARY LOGS")
        names = [r[0] for r in cur.fetchall()][1:-1]  # after the DDL's file, before the active one
        conn.close()
        d = root / "mysql"
        d.mkdir(parents=True)
        for name in names:
            shutil.copy(server.binlog_dir / name, d / name)
    return _archive(root, [d], name=lambda _d: "hour")


def _timed(argv: list[str]) -> tuple[float, str]:
    t = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, check=True)
    return time.monotonic() - t, proc.stdout


def _summary(out: str) -> dict:
    return json.loads(next(line for line in out.splitlines() if line.startswith('{"record":"assemble"')))


def _measure(store: str, start: str, end: str, root: Path) -> dict:
    """Both steps as two processes, then as one, each into a new warehouse."""
    rng = ["--start", start, "--end", end]
    two = str(root / "warehouse-two")
    assemble_s, out = _timed([*CLI, "assemble", "--store", store, "--warehouse", two, *rng, *LOCAL])
    validate_s, _ = _timed([*CLI, "validate", "--warehouse", two, *rng, "--store", store, *LOCAL])
    one = [*CLI, "assemble", "--store", store, "--warehouse", str(root / "warehouse-one"), *rng, *LOCAL, "--validate"]
    one_s, out = _timed(one)
    # The same run again: its tables exist (the DAG's steady state; the rerun replaces the range's files).
    again_s, _ = _timed(one)
    return {"job": _summary(out), "assemble": assemble_s, "validate": validate_s, "one": one_s, "again": again_s}


def _in_process(store: str, start: str, end: str, root: Path) -> dict:
    """One session: its start, the job and the suites' runs, with the Spark jobs each starts."""
    from binlake.spark.job import assemble, session
    from binlake.spark.validate import validate

    t = time.monotonic()
    spark = session("local[2]", app="binlake-bench-interval")
    out: dict = {"session": time.monotonic() - t, "runs": []}
    sc = spark.sparkContext
    tracker = sc.statusTracker()
    warehouse = str(root / "warehouse-in-process")
    ungrouped: set[int] = set()

    def started(group: str) -> int:
        """The Spark jobs a step started: its own thread's (its job group) and its pools' (a
        thread Python starts has no group: local properties do not reach it)."""
        nonlocal ungrouped
        before, ungrouped = ungrouped, set(tracker.getJobIdsForGroup(None))
        return len(tracker.getJobIdsForGroup(group)) + len(ungrouped - before)

    sc.setJobGroup("assemble", "bench/interval.py")
    t = time.monotonic()
    assemble(spark, store, warehouse, start, end)
    out["assemble"] = (time.monotonic() - t, started("assemble"))
    for i in range(3):
        group = f"validate-{i}"
        sc.setJobGroup(group, "bench/interval.py")
        t = time.monotonic()
        report = validate(spark, warehouse, start, end, store=store)
        out["runs"].append((time.monotonic() - t, started(group), report.success))
    spark.stop()
    return out


def _hour_text(m: dict) -> str:
    one, steps = m["one"], m["job"]["step_seconds"]
    verdict = f"met ({one:.1f} s)" if one <= TARGET else f"missed: {one:.1f} s, {one - TARGET:.1f} s over"
    verdict += f" (into a new warehouse; {m['again']:.1f} s again into the same one, its tables made)"
    return (f"Target (issue 38): one hour of {m['job']['transactions']} transactions and "
            f"{m['job']['row_changes']:,} row changes ({m['job']['bytes'] / (1 << 20):.1f} MiB), "
            f"`binlake assemble --validate` in at most {TARGET:.0f} s: {verdict}. The job's steps: "
            + ", ".join(f"{k} {v:.1f} s" for k, v in steps.items()) + f" (its summary says {m['job']['seconds']:.1f} s "
            "in all; the rest of the process is the JVM's start, the session, planning and the suites).")


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="binlake-interval-"))
    print("writing the one-row corpora …", file=sys.stderr)
    one_row = _one_row(root)
    corpora = {"samples": _samples(root / "samples"), **{f"{n:,} one-row": one_row[n] for n in ONE_ROW},
               f"an hour: {HOUR[0]} transactions of {HOUR[1]:,} rows": _hour(root / "hour")}
    measured = {}
    for name, (store, start, end) in corpora.items():
        print(f"measuring {name} …", file=sys.stderr)
        measured[name] = _measure(store, start, end, root / name.replace(" ", "-").replace(",", ""))
    small, big = (measured[f"{n:,} one-row"] for n in ONE_ROW)
    print("in one process …", file=sys.stderr)
    inside = _in_process(*corpora[f"{ONE_ROW[0]:,} one-row"], root / "in-process")
    shutil.rmtree(root, ignore_errors=True)

    per_mib = (big["one"] - small["one"]) / ((big["job"]["bytes"] - small["job"]["bytes"]) / (1 << 20))
    per_k = (big["one"] - small["one"]) / ((big["job"]["transactions"] - small["job"]["transactions"]) / 1000)
    fixed = small["one"] - per_mib * small["job"]["bytes"] / (1 << 20)
    best = small["one"]
    lines = [
        "On 2 cores, `--master local[2]`; each command in its own process, into a new warehouse but the last "
        "column's, which runs `assemble --validate` again into the warehouse the one before made. The one-row "
        "corpora: autocommit INSERTs written by one MySQL server (bench/shapes.py's table); the samples: two "
        "servers' bundled binlogs.",
        "",
        "| corpus | transactions | row changes | KiB | assemble | validate | both, two processes | "
        "`assemble --validate`, one process | the same again (tables made) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        *[f"| {name} | {m['job']['transactions']:,} | {m['job']['row_changes']:,} | {m['job']['bytes'] / 1024:,.0f} | "
          f"{m['assemble']:.1f} | {m['validate']:.1f} | {m['assemble'] + m['validate']:.1f} | **{m['one']:.1f}** | "
          f"{m['again']:.1f} |" for name, m in measured.items()],
        "",
        f"Target: an interval of up to a thousand transactions in under {TARGET:.0f} s: "
        + (f"met ({best:.1f} s in one process)." if best < TARGET else
           f"missed by {best - TARGET:.1f} s in one process ({best:.1f} s, {best / TARGET:.1f}× the target)."),
        "",
        _hour_text(measured[f"an hour: {HOUR[0]} transactions of {HOUR[1]:,} rows"]),
        "",
        f"Fixed cost and cost per byte, from the one-process runs over the two one-row corpora: each further "
        f"MiB of binlog costs {per_mib:.1f} s ({per_k:.2f} s per further 1,000 one-row transactions); a run's "
        f"fixed cost is {fixed:.1f} s of the {small['one']:.1f} s of the first corpus.",
        "",
        f"In one process over the {ONE_ROW[0]:,} one-row transactions: the SparkSession {inside['session']:.1f} s, "
        f"the job {inside['assemble'][0]:.1f} s ({inside['assemble'][1]} Spark jobs), then the suites' runs "
        "over the same range:",
        "",
        "| run | seconds | Spark jobs | passed |",
        "|---|---:|---:|---|",
        *[f"| {i + 1}{' (GX imported, its project opened)' if i == 0 else ''} | {s:.1f} | {n} | {ok} |"
          for i, (s, n, ok) in enumerate(inside["runs"])],
    ]
    publish("bench/interval.py", lines)


if __name__ == "__main__":
    main()
