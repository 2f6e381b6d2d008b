"""Benchmark `binlake archive` against `mysqlbinlog --read-from-remote-server --raw`.

Starts a real MySQL 9.x server and a real S3 endpoint (moto) on 127.0.0.1, writes a corpus
(default 256 MiB of rotated files), then copies every rotated file with
  (a) `binlake archive --source mysql://… --store s3://…` (verified, with manifests)
  (b) `binlake archive … --store file://…`, and again with the compiled loop off
  (c) `mysqlbinlog --read-from-remote-server --raw` to local disk
each in its own process (binlake's file:// copy also timed inside its process), the best of
--repeat runs, and prints MiB/s. Appends the table to bench/RESULTS.md.

    .venv/bin/python bench/archive.py [--size-mib N] [--repeat N]
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each; the best is reported")
    args = ap.parse_args()
    import boto3
    from moto.server import ThreadedMotoServer

    work = Path(tempfile.mkdtemp(prefix="binlake-bench-archive-"))
    server = servers.start("mysql", work / "mysql", max_binlog_size="64M")
    port = free_port()
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    moto.start()
    try:
        print(f"MySQL {server.version}: generating {args.size_mib} MiB …", file=sys.stderr)
        files = generate(server, args.size_mib, 1000)
        total = sum(f.stat().st_size for f in files) / (1 << 20)
        env = {**os.environ, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "bench",
               "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1"}
        boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], aws_access_key_id="bench",
                     aws_secret_access_key="bench", region_name="us-east-1").create_bucket(Bucket="bench")
        src = f"mysql://root@127.0.0.1:{server.port}"
        py = sys.executable

        runs = itertools.count()

        def archive(store: str, env=None, inside: bool = False) -> float:
            """The best of `--repeat` runs, each into an empty store; `inside`: the copy timed in
            the process, its interpreter's start and imports left out."""
            best = float("inf")
            for _ in range(args.repeat):
                url = f"{store}/run{next(runs)}"  # each run copies everything
                if inside:
                    code = ("import sys, time\nfrom binlake.cli import main\nt = time.perf_counter()\n"
                            "code = main(sys.argv[1:])\nprint(time.perf_counter() - t, file=sys.stderr)\n"
                            "sys.exit(code)")
                    proc = subprocess.run([py, "-c", code, "archive", "--source", src, "--store", url],
                                          capture_output=True, env=env, text=True, check=True)
                    best = min(best, float(proc.stderr.strip().splitlines()[-1]))
                else:
                    best = min(best, timed([py, "-m", "binlake.cli", "archive", "--source", src, "--store", url],
                                           env))
            return best

        local = f"file://{work / 'store'}"
        rows = [
            ("binlake archive → S3 (moto, loopback)", archive("s3://bench/a", env)),
            ("binlake archive → file://", archive(local)),
            ("binlake archive → file://: the copy, timed in the process (interpreter start and imports left out)",
             archive(local, inside=True)),
            ("binlake archive → file://, pure-Python reference (BINLAKE_PURE_PYTHON=1)",
             archive(local, {**os.environ, "BINLAKE_PURE_PYTHON": "1"})),
        ]
        out = work / "raw"
        raw = float("inf")
        for _ in range(args.repeat):
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            raw = min(raw, sum(timed([*server.mysqlbinlog, "--read-from-remote-server", "--raw", "--host=127.0.0.1",
                                      f"--port={server.port}", "--user=root", f"--result-file={out}/", f.name])
                               for f in files))
        rows.append(("mysqlbinlog --read-from-remote-server --raw → disk (one process per file)", raw))
    finally:
        moto.stop()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)  # the corpus and its copies: GiBs
    lines = [f"Corpus: {len(files)} rotated files, {total:.1f} MiB, MySQL {server.version}; "
             f"{os.cpu_count()} cores; the best of {args.repeat} runs each.", "",
             "| what | seconds | MiB/s |", "|---|---:|---:|"]
    lines += [f"| {n} | {s:.2f} | {total / s:.1f} |" for n, s in rows]
    publish("bench/archive.py", lines)


if __name__ == "__main__":
    main()
