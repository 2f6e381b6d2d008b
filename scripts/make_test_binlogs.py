"""Make tests/data/<flavor>/: real binlogs with their ground truth and the server's own decoding.

For each flavor: start a fresh server in a temporary directory, reset its binary logs, run the
seeded workload (tests/support/workload.py), FLUSH BINARY LOGS so every file holding a
transaction is closed, stop the server, then write

    tests/data/<flavor>/<binlog files>   byte copies of the closed binlog files
    tests/data/<flavor>/ground_truth.json what the workload did, transaction by transaction
    tests/data/<flavor>/mysqlbinlog.txt   `mysqlbinlog -vv --base64-output=DECODE-ROWS` of them

and tests/data/README.md saying how they were made.

    .venv/bin/python scripts/make_test_binlogs.py [--seed N] [--flavor mysql|mariadb ...]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support import servers  # noqa: E402
from tests.support.workload import run_workload  # noqa: E402

DATA = REPO / "tests" / "data"
FLAVORS = ("mysql", "mariadb")


def make(flavor: str, seed: int) -> dict:
    out = DATA / flavor
    with tempfile.TemporaryDirectory(prefix=f"binlake-{flavor}-") as tmp:
        server = servers.start(flavor, Path(tmp))
        try:
            conn = server.connect()
            with conn.cursor() as cur:
                cur.execute("RESET BINARY LOGS AND GTIDS" if flavor == "mysql" else "RESET MASTER")
            truth = run_workload(server, seed=seed)
            with conn.cursor() as cur:
                cur.execute("FLUSH BINARY LOGS")
                cur.execute("SHOW BINARY LOGS")
                names = [row[0] for row in cur.fetchall()][:-1]  # the last is the new, empty one
            conn.close()
        finally:
            server.stop()
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        for name in names:
            shutil.copyfile(Path(server.binlog_dir) / name, out / name)
        (out / "ground_truth.json").write_text(
            json.dumps(truth, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        decoded = subprocess.run(
            [*server.mysqlbinlog, "-vv", "--base64-output=DECODE-ROWS", *names],
            cwd=out, check=True, capture_output=True)
        (out / "mysqlbinlog.txt").write_bytes(decoded.stdout)
    return {"flavor": flavor, "version": truth["version"], "files": names,
            "transactions": len(truth["transactions"])}


README = """\
# Test data: real binlogs with their ground truth

Made by `scripts/make_test_binlogs.py` (run from the repository root):

    .venv/bin/python scripts/make_test_binlogs.py --seed {seed}

For each flavor it starts a fresh server from `tests/support/servers.py` (binlog_format=ROW,
binlog_row_metadata=FULL, CRC32 checksums, max_binlog_size=1M; MySQL with gtid_mode=ON and
binlog_rows_query_log_events=ON, MariaDB with binlog_annotate_row_events=ON), resets its binary
logs, runs the seeded workload of `tests/support/workload.py` (`run_workload(server,
seed={seed}, big_rows=0)`), flushes the binary logs and stops the server. Then, per flavor:

- `<flavor>/binlog.0000NN`: byte copies of every closed binlog file the workload wrote;
- `<flavor>/ground_truth.json`: what the workload did, one entry per transaction in binlog order
  (fields described in DEVELOPERS.md, "Test data and workload");
- `<flavor>/mysqlbinlog.txt`: the server's own `mysqlbinlog -vv --base64-output=DECODE-ROWS` of
  those files.

Servers:

{servers}

`tests/test_workload.py` checks the ground truth against `mysqlbinlog.txt` (GTIDs, positions,
row counts per transaction, end events, compression) without binlake's parser. What each
transaction covers, and what the servers really log, is in DEVELOPERS.md ("Test data and
workload"). Regenerating gives different timestamps, server UUIDs and thread ids; everything
else follows from the seed.
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--flavor", action="append", choices=FLAVORS)
    args = ap.parse_args(argv)
    made = [make(f, args.seed) for f in (args.flavor or FLAVORS)]
    for m in made:
        print(f"{m['flavor']} {m['version']}: {m['transactions']} transactions in "
              f"{', '.join(m['files'])}")
    lines = []
    for f in FLAVORS:
        gt = DATA / f / "ground_truth.json"
        if gt.exists():
            truth = json.loads(gt.read_text(encoding="utf-8"))
            files = sorted(p.name for p in (DATA / f).glob("binlog.*"))
            lines.append(f"- {f}: {truth['version']} (server_id {truth['server_id']}), "
                         f"{len(truth['transactions'])} transactions in {len(files)} files")
    (DATA / "README.md").write_text(README.format(seed=args.seed, servers="\n".join(lines)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
