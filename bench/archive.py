"""Benchmark `binlake archive` against `mysqlbinlog --read-from-remote-server --raw`.

Starts a real S3 endpoint (moto) and, for each of two corpora, a real MySQL 9.x server on
127.0.0.1 that writes it: 256 MiB of 200-row transactions (bench/scan.py's workload) and 256 MiB
of one-row transactions (the OLTP shape, where a cost per transaction shows). Then it copies
every rotated file with
  (a) `binlake archive --source mysql://… --store s3://…` (verified, with manifests; first corpus)
  (b) `binlake archive … --store file://…`, and again with the compiled loop off
  (c) `mysqlbinlog --read-from-remote-server --raw` to local disk
each in its own process (binlake's file:// copy also timed inside its process, from main()), the best of
--repeat runs, and prints MiB/s. Appends the table to bench/RESULTS.md.

    .venv/bin/python bench/archive.py [--size-mib N] [--small-mib N] [--repeat N]
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.results import publish  # noqa: E402
from bench.scan import generate  # noqa: E402
from tests.support import servers  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(argv: list[str], env=None, cwd=None) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, env=env, cwd=cwd)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(argv)}: {proc.stderr.decode()[-800:]}")
    return time.perf_counter() - t0


SMALL_SQL = """CREATE PROCEDURE bench.oltp(n INT)
BEGIN
  DECLARE i INT DEFAULT 0;
  WHILE i < n DO
    INSERT INTO bench.s (v, n) VALUES (REPEAT(CHAR(97 + i % 26), 20 + (i * 7919) % 100), i);
    SET i = i + 1;
  END WHILE;
END"""


def generate_small(server, size_mib: int) -> list[Path]:
    """Rotated files of one-row transactions (autocommit INSERTs of 20–119 bytes, each its own
    transaction of about 0.5 KiB): the OLTP shape, where the cost per transaction shows."""
    conn = server.connect()
    cur = conn.cursor()
    cur.execute("CREATE DATABASE IF NOT EXISTS bench")
    cur.execute("CREATE TABLE bench.s (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(128), n BIGINT)")
    cur.execute(SMALL_SQL)
    written = 0
    while written < size_mib << 20:
        cur.execute("CALL bench.oltp(20000)")
        cur.execute("SHOW BINARY LOGS")
        written = sum(r[1] for r in cur.fetchall())
        print(f"  generated {written >> 20} MiB", file=sys.stderr)
    cur.execute("FLUSH BINARY LOGS")
    cur.execute("SHOW BINARY LOGS")
    names = [r[0] for r in cur.fetchall()][:-1]  # the active file is not part of the corpus
    conn.close()
    return [server.binlog_dir / n for n in names]


def measure(server, files: list[Path], work: Path, *, repeat: int, s3_env: dict | None) -> list[tuple[str, float]]:
    """(what, best seconds) of each way of copying every file of `files` off `server`."""
    src = f"mysql://root@127.0.0.1:{server.port}"
    py = sys.executable
    runs = itertools.count()

    def archive(store: str, env=None, inside: bool = False) -> float:
        """The best of `repeat` runs, each into an empty store; `inside`: timed in the process from
        `main()`, the interpreter's start left out (the archive's imports are made in main)."""
        best = float("inf")
        for _ in range(repeat):
            url = f"{store}/run{next(runs)}"  # each run copies everything
            if inside:
                code = ("import sys, time\nfrom binlake.cli import main\nt = time.perf_counter()\n"
                        "code = main(sys.argv[1:])\nprint(time.perf_counter() - t, file=sys.stderr)\n"
                        "sys.exit(code)")
                proc = subprocess.run([py, "-c", code, "archive", "--source", src, "--store", url],
                                      capture_output=True, env=env, text=True, check=True)
                best = min(best, float(proc.stderr.strip().splitlines()[-1]))
            else:
                best = min(best, timed([py, "-m", "binlake.cli", "archive", "--source", src, "--store", url], env))
            shutil.rmtree(work / "store", ignore_errors=True)
        return best

    local = f"file://{work / 'store'}"
    rows = [("binlake archive → S3 (moto, loopback)", archive("s3://bench/a", s3_env))] if s3_env else []
    rows += [
        ("binlake archive → file://", archive(local)),
        ("binlake archive → file://: timed in the process from `main()` (the interpreter's start left out)",
         archive(local, inside=True)),
        ("binlake archive → file://, pure-Python reference (BINLAKE_PURE_PYTHON=1)",
         archive(local, {**os.environ, "BINLAKE_PURE_PYTHON": "1"})),
    ]
    out = work / "raw"
    raw = float("inf")
    for _ in range(repeat):
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        raw = min(raw, sum(timed([*server.mysqlbinlog, "--read-from-remote-server", "--raw", "--host=127.0.0.1",
                                  f"--port={server.port}", "--user=root", f"--result-file={out}/", f.name])
                           for f in files))
    shutil.rmtree(out, ignore_errors=True)
    rows.append(("mysqlbinlog --read-from-remote-server --raw → disk (one process per file)", raw))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mib", type=int, default=256, help="the corpus of 200-row transactions")
    ap.add_argument("--small-mib", type=int, default=256, help="the corpus of one-row transactions")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each; the best is reported")
    args = ap.parse_args()
    import boto3
    from moto.server import ThreadedMotoServer

    work = Path(tempfile.mkdtemp(prefix="binlake-bench-archive-"))
    port = free_port()
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    moto.start()
    s3_env = {**os.environ, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "bench",
              "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1"}
    boto3.client("s3", endpoint_url=s3_env["AWS_ENDPOINT_URL"], aws_access_key_id="bench",
                 aws_secret_access_key="bench", region_name="us-east-1").create_bucket(Bucket="bench")
    lines = []
    corpora = [("200-row transactions (bench/scan.py's workload)", args.size_mib, s3_env),
               ("one-row transactions (autocommit INSERTs)", args.small_mib, None)]
    try:
        for i, (label, size, env) in enumerate(corpora):
            # the small corpus is written without an fsync per commit, or its making would take minutes
            server = servers.start("mysql", work / f"mysql{i}", max_binlog_size="64M",
                                   **({"sync_binlog": "0", "innodb_flush_log_at_trx_commit": "2"} if i else {}))
            try:
                print(f"MySQL {server.version}: generating {size} MiB of {label} …", file=sys.stderr)
                files = generate(server, size, 1000) if i == 0 else generate_small(server, size)
                total = sum(f.stat().st_size for f in files) / (1 << 20)
                txns = _transactions(files)
                rows = measure(server, files, work, repeat=args.repeat, s3_env=env)
            finally:
                server.stop()
                shutil.rmtree(work / f"mysql{i}", ignore_errors=True)  # the corpus: GiBs with its copies
            lines += [f"Corpus of {label}: {len(files)} rotated files, {total:.1f} MiB, {txns:,} transactions "
                      f"({total * (1 << 20) / txns / 1024:.1f} KiB each), MySQL {server.version}; "
                      f"{os.cpu_count()} cores; the best of {args.repeat} runs each.", "",
                      "| what | seconds | MiB/s | × mysqlbinlog |", "|---|---:|---:|---:|"]
            raw = rows[-1][1]
            lines += [f"| {n} | {sec:.2f} | {total / sec:.1f} | {raw / sec:.2f} |" for n, sec in rows]
            lines.append("")
    finally:
        moto.stop()
        shutil.rmtree(work, ignore_errors=True)
    publish("bench/archive.py", lines[:-1])


def _transactions(files: list[Path]) -> int:
    from binlake.archive.index import index_transactions
    from binlake.binlog.framing import BinlogReader

    count = 0
    for f in files:
        with BinlogReader.open(f) as r:
            count += sum(1 for _ in index_transactions(r, f.name))
    return count


if __name__ == "__main__":
    main()
