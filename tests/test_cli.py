"""`binlake scan` and `binlake demo` as a user runs them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from binlake.local.demo import sample_files
from tests.conftest import require
from tests.support.scanning import DATA, REPO, SHARED, headers, ndjson, run_cli, scan
from tests.support.truth import samples_truth


def design_fields() -> dict[str, list[str]]:
    """Each record's fields in order, as DESIGN.md's "Records" lists them (`transactions` — …:
    `field, field (what it holds), …`)."""
    design = SHARED / "DESIGN.md"
    require(design.is_file(), f"the design ({design})")
    out = {}
    for table, listed in re.findall(r"^`(\w+)` — [^`]*`([^`]*)`", design.read_text(), re.M):
        out[table] = [f.strip() for f in re.sub(r"\([^)]*\)", "", listed).split(",")]
    return out


def test_scan_prints_design_records():
    files = sorted(str(p) for p in (DATA / "mysql").glob("binlog.0*"))
    proc = run_cli("scan", "--rows", "--anomalies", *files)
    assert proc.returncode == 0, proc.stderr
    records = ndjson(proc.stdout)
    kinds = {r["record"] for r in records}
    assert kinds == {"transaction", "row_change"}
    fields = design_fields()
    for r in records:
        table = "transactions" if r["record"] == "transaction" else "row_changes"
        assert [k for k in r if k != "record"] == fields[table]


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
    """The corpus README's trunc_binlog.000001: 174 bytes, "ends inside an open transaction (BEGIN +
    INSERT, no COMMIT/STOP)"; its BEGIN is the second event (the raw headers say where)."""
    path = public_binlogs / "Longhui__mysql-5.5.30/trunc_binlog.000001"
    data = path.read_bytes()
    begin = headers(data)[1][0]
    proc = run_cli("scan", "--anomalies", str(path))
    assert proc.returncode == 0
    (anomaly,) = [r for r in ndjson(proc.stdout) if r["record"] == "anomaly"]
    assert [k for k in anomaly if k != "record"] == design_fields()["anomalies"]
    assert (anomaly["code"], anomaly["start_pos"], anomaly["end_pos"], len(data)) == ("TRUNCATED", begin, 174, 174)
    assert anomaly["detail"] == f"{path.name}:174: file ends inside a transaction"


@pytest.mark.usefixtures("airflow", "spark_submit")  # the demo makes its own Airflow home
def test_demo_runs_the_pipeline_through_the_dags(tmp_path):
    """The README's first command: the bundled samples through binlake_archive and
    binlake_transactions (`airflow dags test`, SQLite), then a summary and the report's path."""
    # The samples are tests/data's files (binlake/samples/README.md): their counts are the
    # workload's ground truth; their hour is the one the workload ran in (mysqlbinlog.txt: 11:47-11:48).
    truth = samples_truth()
    kinds = {k.split(":", 1)[1]: n for k, n in truth.items() if k.startswith("kind:")}
    proc = run_cli("demo", "--home", str(tmp_path / "home"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "binlake_transactions 2026-11-22T11:00:00Z .. 2026-11-22T12:00:00Z: success" in out
    assert f"transactions: {truth['transactions']}\n" in out and f"row changes:  {truth['row_changes']}\n" in out
    assert "anomalies:    0\n" in out
    assert all(f"    {kind:12} {n}\n" in out for kind, n in kinds.items()), kinds
    assert "validation:   PASSED" in out
    report = Path(out.split("report:", 1)[1].split()[0])
    assert report.is_file() and report.name == "index.html"
    _check_shown_table(out)


def _check_shown_table(out: str) -> None:
    """The demo's source table as of two instants: the rows printed at each are the rows the
    samples' own row events leave in that table after that transaction (binlake scan --rows, replayed)."""
    source, name, instants = _shown_table(out)
    records = scan([f for f in sample_files() if f"/{source.removeprefix('sample-')}/" in f], rows=True)
    assert len(instants) == 2 and instants[0][0] != instants[1][0]
    for gtid, header, rows in instants:
        assert sorted(rows) == sorted(_replayed(records, name, gtid, header)), gtid
    assert sorted(instants[0][2]) != sorted(instants[1][2])  # the table changed between them


def _shown_table(out: str) -> tuple[str, str, list[tuple[str, list[str], list[list[str]]]]]:
    """The demo's printout of a source table: its source, its `db.table`, and at each instant (its
    GTID) the columns and the rows, each cell as printed (the columns aligned under the header)."""
    head = re.search(r"^  (\S+) of (\S+) as of two instants \(\d+ row versions\):$", out, re.M)
    assert head, out
    instants = []
    for block in re.split(r"^    after ", out[head.end():], flags=re.M)[1:]:
        title, *lines = block.splitlines()
        lines = [ln[6:] for ln in lines if ln.startswith("      ")]
        starts = [m.start() for m in re.finditer(r"\S+", lines[0])]
        cells = [[ln[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)] for ln in lines]
        instants.append((title.split(",", 1)[0], cells[0], cells[1:]))
    return head[2], head[1], instants


def _replayed(records: dict[str, list[dict]], name: str, gtid: str, header: list[str]) -> list[list[str]]:
    """The table's rows after transaction `gtid`, from the row events alone: committed transactions
    in binlog order (one server: its commit order), an XA transaction's rows at its XA COMMIT, an
    update or a delete taking the row its before image (FULL: the whole row) shows; each value as
    the printout writes it (text itself, NULL, any other value its JSON)."""
    rows_of: dict[str, list[dict]] = {}
    for r in records["row_change"]:
        if f"{r['schema']}.{r['table']}" == name:
            rows_of.setdefault(r["txn_id"], []).append(r)
    table: list[dict] = []
    prepared: dict[str, list[dict]] = {}
    for t in records["transaction"]:
        changes = sorted(rows_of.get(t["txn_id"], []), key=lambda r: r["seq"])
        if t["kind"] == "xa_prepare":
            prepared[t["xa_xid"]] = changes
        applied = changes if t["kind"] == "dml" and t["outcome"] == "committed" else \
            prepared.pop(t["xa_xid"], []) if t["kind"] == "xa_commit" else []
        for r in applied:
            if r["op"] != "insert":
                table.remove(r["before"])
            if r["op"] != "delete":
                table.append(r["after"])
        if t["gtid"] == gtid:
            break
    else:
        raise AssertionError(f"no transaction {gtid} in the samples")

    def cell(v) -> str:
        return "NULL" if v is None else v if isinstance(v, str) else json.dumps(v, ensure_ascii=False,
                                                                               separators=(",", ":"))
    return [[cell(row[c]) for c in header] for row in table]


def test_make_airflow_passes_its_home_port_and_config():
    # `make airflow` gives `binlake airflow` what it is given: make's own dry run prints the command
    import subprocess

    from tests.support.scanning import REPO

    out = subprocess.run(["make", "-n", "airflow", "CONFIG=mine.json", "HOME_DIR=/srv/af", "PORT=8095"], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    (line,) = [ln for ln in out.stdout.splitlines() if "binlake airflow" in ln]
    assert line.split("binlake airflow", 1)[1].split() == \
        ["--config", "mine.json", "--home", "/srv/af", "--port", "8095"]
    out = subprocess.run(["make", "-n", "airflow"], cwd=REPO, capture_output=True, text=True, timeout=120)
    (line,) = [ln for ln in out.stdout.splitlines() if "binlake airflow" in ln]
    assert line.split("binlake airflow", 1)[1].split() == []


@pytest.mark.usefixtures("airflow", "spark_submit")
def test_demo_with_its_warehouse_on_s3(tmp_path, s3_endpoint):
    """`binlake demo --warehouse s3a://…`: the same DAGs, the Delta tables in a bucket of the S3
    endpoint, S3's endpoint and keys taken from the AWS environment and never printed."""
    import os
    import subprocess
    import sys

    import boto3

    from tests.support.lake import lake

    boto3.client("s3").create_bucket(Bucket="demo")
    truth = samples_truth()  # the workload's ground truth of the samples
    secret = "demo-secret-4f7a"  # moto takes any key: a distinctive one, to look for
    env = {**os.environ, "AWS_SECRET_ACCESS_KEY": secret}
    proc = subprocess.run([sys.executable, "-m", "binlake.cli", "demo", "--home", str(tmp_path / "home"),
                           "--warehouse", "s3a://demo/lake"], env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert f"transactions: {truth['transactions']}\n" in out and f"row changes:  {truth['row_changes']}\n" in out
    assert "validation:   PASSED" in out
    _check_shown_table(out)  # the source tables on S3 too, read back by delta-rs
    listed = boto3.client("s3").list_objects_v2(Bucket="demo", Prefix="lake/transactions/_delta_log/")
    assert any(o["Key"].endswith(".json") for o in listed["Contents"])  # a Delta table in the bucket
    tables = lake("s3a://demo/lake")  # read by delta-rs: the samples' counts
    assert (sum(tables["transactions"].values()), sum(tables["row_changes"].values())) == \
        (truth["transactions"], truth["row_changes"])
    logged = (tmp_path / "home" / "demo.log").read_text()
    assert secret not in out + proc.stderr + logged


def test_the_command_leaves_with_its_whole_output_and_status():
    """`binlake` leaves by os._exit, past the interpreter's teardown (binlake.cli.entry): its output
    is still whole (a line per record of the in-process scan of the same files: 160 KiB, more than
    a pipe holds), a failure's status is main's, and a reader gone early (`| head`) gets no traceback."""
    files = sorted(str(p) for p in (DATA / "mysql").glob("binlog.0*"))
    expected = scan(files, rows=True)
    proc = run_cli("scan", "--rows", *files)
    assert proc.returncode == 0, proc.stderr
    assert len(ndjson(proc.stdout)) == len(expected["transaction"]) + len(expected["row_change"]) > 200
    missing = run_cli("scan", "/nonexistent/binlog.000001")
    assert missing.returncode == 1 and "/nonexistent/binlog.000001" in missing.stderr
    with subprocess.Popen([sys.executable, "-m", "binlake.cli", "scan", "--rows", *files],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as head:
        assert head.stdout is not None and head.stderr is not None
        head.stdout.read(100)
        head.stdout.close()
        err = head.stderr.read()
    assert head.returncode == 0 and err == b""


def test_a_spark_job_entry_point_leaves_with_its_error_and_status(tmp_path):
    """spark_jobs/ leave as `binlake` does (binlake.exits): a refusal before the session (a store
    that is not there) is one line `binlake: …` on stderr and exit status 1, nothing lost to the way out."""
    proc = subprocess.run([sys.executable, str(REPO / "spark_jobs" / "assemble_transactions.py"), "--store",
                           f"file://{tmp_path / 'store'}", "--source", "nosuch", "--warehouse", str(tmp_path / "lake"),
                           "--start", "2026-01-01", "--end", "2026-01-02"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines()[-1] == f"binlake: file://{tmp_path / 'store'}: no such store directory"
