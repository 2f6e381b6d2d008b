"""`binlake scan` and `binlake demo` as a user runs them."""

from __future__ import annotations

from binlake.records import ANOMALY_FIELDS, ROW_CHANGE_FIELDS, TRANSACTION_FIELDS
from tests.support.scanning import DATA, PUBLIC, ndjson, run_cli


def test_scan_prints_design_records():
    files = sorted(str(p) for p in (DATA / "mysql").glob("binlog.0*"))
    proc = run_cli("scan", "--rows", "--anomalies", *files)
    assert proc.returncode == 0, proc.stderr
    records = ndjson(proc.stdout)
    kinds = {r["record"] for r in records}
    assert kinds == {"transaction", "row_change"}
    for r in records:
        fields = TRANSACTION_FIELDS if r["record"] == "transaction" else ROW_CHANGE_FIELDS
        assert tuple(k for k in r if k != "record") == fields


def test_scan_without_rows_prints_transactions_only():
    proc = run_cli("scan", str(DATA / "mariadb" / "binlog.000001"))
    assert proc.returncode == 0
    assert {r["record"] for r in ndjson(proc.stdout)} == {"transaction"}


def test_anomaly_records():
    proc = run_cli("scan", "--anomalies", str(PUBLIC / "Longhui__mysql-5.5.30/trunc_binlog.000001"))
    assert proc.returncode == 0
    (anomaly,) = [r for r in ndjson(proc.stdout) if r["record"] == "anomaly"]
    assert tuple(k for k in anomaly if k != "record") == ANOMALY_FIELDS
    assert anomaly["code"] == "TRUNCATED" and anomaly["detail"].startswith("trunc_binlog.000001:")


def test_demo():
    proc = run_cli("demo")
    assert proc.returncode == 0, proc.stderr
    assert "transactions: 151" in proc.stdout
    assert "anomalies:    0" in proc.stdout
