"""`binlake scan` and `binlake demo` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from binlake.records import ANOMALY_FIELDS, ROW_CHANGE_FIELDS, TRANSACTION_FIELDS
from tests.support.scanning import DATA, ndjson, run_cli, scan
from tests.support.truth import samples_truth


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


def test_scan_prints_the_records_of_the_assembler():
    """The command writes a segment's row changes in one call: the same records, values and
    order as the assembler's, segment ends included (small segments, several per transaction)."""
    for flavor in ("mysql", "mariadb"):
        files = sorted(str(p) for p in (DATA / flavor).glob("binlog.0*"))
        proc = run_cli("scan", "--rows", "--segment-rows", "3", *files)
        assert proc.returncode == 0, proc.stderr
        printed = ndjson(proc.stdout)
        expected = json.loads(json.dumps(scan(files, rows=True, segment_rows=3)))
        rows = expected["row_change"]
        assert len(rows) > 100 and sum(not r["end_segment"] for r in rows) > 10
        assert [r for r in printed if r["record"] == "row_change"] == rows
        assert [{"record": "transaction", **r} for r in expected["transaction"]] == \
            [r for r in printed if r["record"] == "transaction"]


def test_scan_without_rows_prints_transactions_only():
    proc = run_cli("scan", str(DATA / "mariadb" / "binlog.000001"))
    assert proc.returncode == 0
    assert {r["record"] for r in ndjson(proc.stdout)} == {"transaction"}


def test_anomaly_records(public_binlogs):
    proc = run_cli("scan", "--anomalies", str(public_binlogs / "Longhui__mysql-5.5.30/trunc_binlog.000001"))
    assert proc.returncode == 0
    (anomaly,) = [r for r in ndjson(proc.stdout) if r["record"] == "anomaly"]
    assert tuple(k for k in anomaly if k != "record") == ANOMALY_FIELDS
    assert anomaly["code"] == "TRUNCATED" and anomaly["detail"].startswith("trunc_binlog.000001:")


@pytest.mark.usefixtures("airflow", "spark_submit")  # the demo makes its own Airflow home
def test_demo_runs_the_pipeline_through_the_dags(tmp_path):
    """The README's first command: the bundled samples through binlake_archive and
    binlake_transactions (`airflow dags test`, SQLite), then a summary and the report's path."""
    proc = run_cli("demo", "--home", str(tmp_path / "home"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "binlake_transactions 2026-11-22T11:00:00Z .. 2026-11-22T12:00:00Z: success" in out
    truth = samples_truth()  # the workload that wrote the samples
    assert f"transactions: {truth['transactions']}" in out and f"row changes:  {truth['row_changes']}" in out
    assert "anomalies:    0" in out
    assert f"xa_prepare   {truth['kind:xa_prepare']}" in out and f"ddl          {truth['kind:ddl']}" in out
    assert "validation:   PASSED" in out
    report = Path(out.split("report:", 1)[1].split()[0])
    assert report.is_file() and report.name == "index.html"
