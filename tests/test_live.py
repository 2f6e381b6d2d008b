"""Binlogs freshly written by the real servers, with the seeded workload and a 200,000-row
transaction bigger than max_binlog_size, scan to exactly the workload's ground truth and
agree with the server's own mysqlbinlog."""

from __future__ import annotations

import subprocess

import pytest

from tests.support.scanning import scan
from tests.support.truth import compare, mysqlbinlog_rows, mysqlbinlog_transactions, scanned_rows
from tests.support.workload import run_workload

BIG = 200_000


@pytest.fixture(scope="module", params=[pytest.param("mysql", marks=pytest.mark.mysql),
                                        pytest.param("mariadb", marks=pytest.mark.mariadb)])
def live(request):
    # a server of this module's own: its binary logs are reset (the ground truth starts empty) and
    # the workload changes global settings (gtid_mode, log_bin_compress)
    server = request.getfixturevalue(f"{request.param}_factory")()
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("RESET BINARY LOGS AND GTIDS" if server.flavor == "mysql" else "RESET MASTER")
    truth = run_workload(server, seed=4321, big_rows=BIG)
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("SHOW BINARY LOGS")
        names = [r[0] for r in cur.fetchall()][:-1]
    files = [server.binlog_dir / n for n in names]
    return server, truth, files


def test_live_scan_equals_ground_truth(live):
    server, truth, files = live
    out = scan(files, rows=True)
    assert compare(out, truth) == []
    big = max(out["transaction"], key=lambda t: t["row_count"])
    assert big["row_count"] >= BIG
    assert big["end_pos"] - big["start_pos"] > 1 << 20  # bigger than max_binlog_size
    assert big["segment_count"] == -(-big["row_count"] // 100_000)


def test_live_agrees_with_mysqlbinlog(live):
    server, truth, files = live
    decoded = subprocess.run([*server.mysqlbinlog, "-vv", "--base64-output=DECODE-ROWS", *map(str, files)],
                             capture_output=True, text=True, errors="replace", check=True,
                             timeout=600).stdout
    out = scan(files, rows=True)
    assert scanned_rows(out["row_change"]) == mysqlbinlog_rows(decoded)
    assert len(out["transaction"]) == mysqlbinlog_transactions(decoded, server.flavor)
