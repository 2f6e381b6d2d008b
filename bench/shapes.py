"""Benchmark `binlake scan --rows` on the shapes production writes, each beside `mysqlbinlog -vv`.

A real MySQL 9.x server started for the run writes one corpus per shape, seeded, into files of
their own (FLUSH BINARY LOGS between shapes):

  one-row      autocommit INSERT / UPDATE / DELETE of one row of ordinary types
  small        BEGIN; two to five statements of one to three rows; COMMIT
  100-row      100-row INSERTs with some UPDATEs and DELETEs
  json         one-row transactions on a table with a JSON document of 200 B to 4 KiB
  all-types    one-row transactions on a table of every column type (tests.support.workload)
  big          one transaction of a million rows
  mix          the realistic mix: 60 % one-row, 20 % small, 10 % json, 5 % 100-row, 5 % all-types

Those are written with GTIDs and binlog_row_metadata=FULL. A second server, with the settings
MySQL ships (gtid_mode=OFF: every transaction an ANONYMOUS_GTID whose id binlake derives;
binlog_row_metadata=MINIMAL: no column names in the table maps), writes one-row and the mix again.

Each command runs in a fresh process, the best of a few runs, on the same files the same day:
`binlake scan --rows` and `mysqlbinlog -vv --base64-output=DECODE-ROWS` to /dev/null, and the
ratio of their speeds; the boundary-only walk of the mix. The table is sorted worst shape first.

Prints it and writes its section of bench/RESULTS.md. Run: `make bench` or
`.venv/bin/python bench/shapes.py [--mib N] [--big-rows N]`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.results import publish  # noqa: E402
from bench.scan import timed, walk_argv  # noqa: E402
from tests.support import servers  # noqa: E402
from tests.support.workload import ALLTYPES_COLUMNS, AllTypes  # noqa: E402

TABLES = [
    "CREATE TABLE b.t (id BIGINT PRIMARY KEY AUTO_INCREMENT, a INT, b VARCHAR(64), c DECIMAL(12,2), "
    "d DATETIME(6), e DOUBLE, s TINYINT UNSIGNED)",
    "CREATE TABLE b.j (id BIGINT PRIMARY KEY AUTO_INCREMENT, kind VARCHAR(16), doc JSON, at DATETIME(6))",
    "CREATE TABLE b.alltypes (" + ", ".join(f"`{c}` {t}" for c, t in ALLTYPES_COLUMNS) + ")",
]
SHAPES = ["one-row", "small", "100-row", "json", "all-types", "big", "mix"]
SHIPPED_SHAPES = ["one-row", "mix"]  # again on a server as MySQL ships
SHIPPED = {"gtid_mode": "OFF", "enforce_gtid_consistency": "OFF", "binlog_row_metadata": "MINIMAL"}
BATCH = 200  # statements sent at once (multi-statement): each still its own transaction


class Writer:
    """Seeded statements of every shape; run in batches of autocommit statements or transactions."""

    def __init__(self, conn) -> None:
        self.conn = conn
        self.cur = conn.cursor()
        self.rnd = random.Random(23)
        self.types = AllTypes(random.Random(24), "mysql")
        self.alltypes_id = 0
        self.pending: list[str] = []

    def _t_row(self) -> str:
        r = self.rnd
        return (f"({r.randint(-10**9, 10**9)}, '{''.join(r.choices('abcdefghij', k=r.randint(4, 40)))}', "
                f"{r.randint(0, 10**9)}.{r.randint(0, 99):02d}, '2026-01-{r.randint(1, 28):02d} "
                f"12:{r.randint(0, 59):02d}:00.{r.randint(0, 999999):06d}', {r.random() * 1e6}, {r.randint(0, 255)})")

    def _one(self) -> list[str]:
        r = self.rnd.random()
        if r < 0.6:
            return [f"INSERT INTO b.t (a,b,c,d,e,s) VALUES {self._t_row()}"]
        if r < 0.9:
            return [f"UPDATE b.t SET a = a + 1, b = 'upd{self.rnd.randint(0, 99)}' "
                    f"WHERE id = {self.rnd.randint(1, 1000)}"]
        return [f"DELETE FROM b.t WHERE id = {self.rnd.randint(1, 10**6)}"]

    def _doc(self) -> str:
        r = self.rnd
        size = r.randint(200, 4096)
        doc: dict = {"user": r.randint(1, 10**6), "tags": [], "ok": r.random() < 0.5, "score": r.random()}
        while len(json.dumps(doc)) < size:
            doc["tags"].append({"k": "".join(r.choices("abcdefgh", k=8)), "v": r.randint(0, 1000),
                                "n": None if r.random() < 0.1 else r.random()})
        return json.dumps(doc).replace("\\", "\\\\").replace("'", "\\'")

    def _json(self) -> list[str]:
        if self.rnd.random() < 0.7:
            return [f"INSERT INTO b.j (kind, doc, at) VALUES ('k{self.rnd.randint(0, 9)}', '{self._doc()}', NOW(6))"]
        return [f"UPDATE b.j SET doc = '{self._doc()}' WHERE id = {self.rnd.randint(1, 1000)}"]

    def _alltypes(self) -> list[str]:
        self.alltypes_id += 1
        sql, args = self.types.insert_sql([self.types.random(self.alltypes_id)])
        return [self.cur.mogrify(sql.replace("INTO alltypes", "INTO b.alltypes"), args)]

    def _small(self) -> list[str]:
        body = []
        for _ in range(self.rnd.randint(2, 5)):
            rows = ",".join(self._t_row() for _ in range(self.rnd.randint(1, 3)))
            body.append(f"INSERT INTO b.t (a,b,c,d,e,s) VALUES {rows}")
        return ["BEGIN", *body, "COMMIT"]

    def _hundred(self) -> list[str]:
        rows = ",".join(self._t_row() for _ in range(100))
        out = ["BEGIN", f"INSERT INTO b.t (a,b,c,d,e,s) VALUES {rows}"]
        if self.rnd.random() < 0.3:
            out.append("UPDATE b.t SET e = e * 2 WHERE id > CAST(LAST_INSERT_ID() AS SIGNED) + 50")
        return [*out, "COMMIT"]

    def _mixed(self) -> list[str]:
        r = self.rnd.random()
        make = (self._one if r < 0.6 else self._small if r < 0.8 else self._json if r < 0.9
                else self._hundred if r < 0.95 else self._alltypes)
        return make()

    def write(self, shape: str, mib: int) -> None:
        """Statements of shape until the server's binlog has grown by mib MiB."""
        make: Callable[[], list[str]] = {"one-row": self._one, "small": self._small, "100-row": self._hundred,
                                         "json": self._json, "all-types": self._alltypes, "mix": self._mixed}[shape]
        start = self.size()
        while self.size() - start < mib << 20:
            statements: list[str] = []
            for _ in range(BATCH):
                statements += make()
            self.cur.execute(";".join(statements))
            while self.cur.nextset():
                pass

    def big(self, rows: int) -> None:
        self.cur.execute("SET SESSION cte_max_recursion_depth = 100000000")
        self.cur.execute(f"""INSERT INTO b.t (a, b, c, d, e, s) WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL
                             SELECT i + 1 FROM n WHERE i < {rows}) SELECT i, CONCAT('row', i), i / 100,
                             '2026-01-01 00:00:00', i * 1.5, i % 256 FROM n""")

    def size(self) -> int:
        self.cur.execute("SHOW BINARY LOGS")
        return sum(r[1] for r in self.cur.fetchall())

    def rotate(self) -> str:
        """Start a new file; the name of the one the next shape writes into."""
        self.cur.execute("FLUSH BINARY LOGS")
        self.cur.execute("SHOW BINARY LOGS")
        return self.cur.fetchall()[-1][0]


def generate(server, mib: int, big_rows: int, shapes: list[str] = SHAPES) -> dict[str, list[Path]]:
    from pymysql.constants import CLIENT

    conn = server.connect(client_flag=CLIENT.MULTI_STATEMENTS)
    w = Writer(conn)
    w.cur.execute("CREATE DATABASE b")
    for sql in TABLES:
        w.cur.execute(sql)
    firsts = {}
    for shape in shapes:
        firsts[shape] = w.rotate()
        print(f"  writing {shape} …", file=sys.stderr)
        w.big(big_rows) if shape == "big" else w.write(shape, mib)
    end = w.rotate()
    w.cur.execute("SHOW BINARY LOGS")
    names = [r[0] for r in w.cur.fetchall()]
    conn.close()
    bounds = [names.index(firsts[s]) for s in shapes] + [names.index(end)]
    return {s: [server.binlog_dir / n for n in names[bounds[i]:bounds[i + 1]]] for i, s in enumerate(shapes)}


def corpus(work: Path, mib: int, shape: str) -> tuple[str, list[Path]]:
    """`mib` MiB of one shape written by a MySQL server started for it (and stopped), its rotated
    files copied into work/binlogs: the server's version and the copies."""
    copied = work / "binlogs"
    copied.mkdir()
    with contextlib.ExitStack() as running:
        server = servers.start("mysql", work / "server", sync_binlog="0", innodb_flush_log_at_trx_commit="0",
                               max_binlog_size="256M")
        running.callback(server.stop)
        print(f"MySQL {server.version}: {mib} MiB of {shape} …", file=sys.stderr)
        files = [copied / f.name for f in generate(server, mib, 0, [shape])[shape]]
        for f in files:
            f.write_bytes((server.binlog_dir / f.name).read_bytes())
        return server.version, files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mib", type=int, default=64, help="MiB of binlog per shape (default 64)")
    ap.add_argument("--big-rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="binlake-shapes-"))
    settings = {"max_binlog_size": "256M", "binlog_rows_query_log_events": "OFF", "sync_binlog": "0",
                "innodb_flush_log_at_trx_commit": "0"}
    with contextlib.ExitStack() as running:  # the server stops once the corpora are written
        server = servers.start("mysql", work / "gtids", **settings)
        running.callback(server.stop)
        print(f"MySQL {server.version}: {args.mib} MiB per shape …", file=sys.stderr)
        corpora = generate(server, args.mib, args.big_rows)
    with contextlib.ExitStack() as running:
        server = servers.start("mysql", work / "shipped", **settings, **SHIPPED)
        running.callback(server.stop)
        print(f"MySQL as shipped ({', '.join(f'{k}={v}' for k, v in SHIPPED.items())}) …", file=sys.stderr)
        shipped = generate(server, args.mib, args.big_rows, SHIPPED_SHAPES)
        corpora |= {f"{shape}, as shipped": files for shape, files in shipped.items()}
    py = sys.executable
    vv = [*servers.mysql_argv("mysqlbinlog"), "-vv", "--base64-output=DECODE-ROWS"]
    rows = []
    for shape, files in corpora.items():
        strs = [str(f) for f in files]
        mib = sum(f.stat().st_size for f in files) / (1 << 20)
        print(f"  measuring {shape} ({mib:.0f} MiB) …", file=sys.stderr)
        scan = min(timed([py, "-m", "binlake.cli", "scan", "--rows", *strs])[0] for _ in range(args.repeat))
        theirs = min(timed([*vv, *strs])[0] for _ in range(args.repeat))
        txns = _transactions(files)
        rows.append((shape, mib, txns, scan, theirs))
    walk = walk_argv(corpora["mix"])
    boundary = min(float(subprocess.run(walk, capture_output=True, text=True, check=True).stdout)
                   for _ in range(args.repeat))
    mix_mib = sum(f.stat().st_size for f in corpora["mix"]) / (1 << 20)
    rows.sort(key=lambda r: r[4] / r[3])  # worst ratio first
    lines = [
        f"One MySQL {_version(corpora)} server; {os.cpu_count()} cores; each command in its "
        f"own process to /dev/null, the best of {args.repeat} runs, the same files the same day. Ratio: "
        "binlake's speed over `mysqlbinlog -vv --base64-output=DECODE-ROWS`'s (above 1: binlake is faster).",
        "",
        "| shape | MiB | transactions | `scan --rows` s | MiB/s | `mysqlbinlog -vv` s | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [f"| {s} | {m:.1f} | {t:,} | {a:.2f} | {m / a:.1f} | {b:.2f} | **{b / a:.2f}×** |"
              for s, m, t, a, b in rows]
    worst, best = rows[0], rows[-1]
    lines += ["", "\"as shipped\": written by a server with MySQL's own defaults for "
              + ", ".join(f"{k}={v}" for k, v in SHIPPED.items()) + " (every transaction an anonymous GTID, "
              "table maps without column names); the others with GTIDs and FULL metadata.",
              "", f"Worst shape: {worst[0]}, {worst[4] / worst[3]:.2f}×; best: {best[0]}, {best[4] / best[3]:.2f}×. "
              f"Boundary-only walk of the mix (the transaction index, timed in the process): {boundary:.3f} s, "
              f"{mix_mib / 1024 / boundary:.2f} GiB/s on one core."]
    publish("bench/shapes.py", lines)


def _transactions(files: list[Path]) -> int:
    from binlake.archive.index import index_transactions
    from binlake.binlog.framing import BinlogReader

    n = 0
    for f in files:
        with BinlogReader.open(f) as r:
            n += sum(1 for _ in index_transactions(r, str(f)))
    return n


def _version(corpora: dict[str, list[Path]]) -> str:
    from binlake.binlog.framing import BinlogReader

    with BinlogReader.open(corpora["mix"][0]) as r:
        return r.fde.server_version


if __name__ == "__main__":
    main()
