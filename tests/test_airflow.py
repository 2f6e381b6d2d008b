"""The DAGs as Airflow runs them: real `airflow dags test` runs against the real MySQL server, the
S3 endpoint and Spark; backfills through a running scheduler; the UI in headless Chromium."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import boto3
import pytest

from binlake.local.airflow import POOL_COMMAND
from binlake.splits.times import parse_time
from tests.support.lake import differences, lake, scanned, table
from tests.support.scanning import REPO, ndjson, run_cli, scan

ARTIFACTS = Path(os.environ.get("BINLAKE_TEST_ARTIFACTS", REPO / ".artifacts"))
DAG_CHECK = """
import json, sys
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder=sys.argv[1])
out = {"errors": {k: str(v) for k, v in bag.import_errors.items()}, "dags": {}}
for dag_id, dag in bag.dags.items():
    out["dags"][dag_id] = {
        "doc": bool(dag.doc_md), "max_active_runs": dag.max_active_runs, "catchup": dag.catchup,
        "timetable": type(dag.timetable).__name__, "summary": getattr(dag.timetable, "summary", None),
        "tasks": {t.task_id: {"type": [c.__name__ for c in type(t).__mro__], "doc": bool(t.doc_md),
                              "retries": t.retries, "downstream": sorted(t.downstream_task_ids),
                              "max_active_tis_per_dag": t.max_active_tis_per_dag, "pool": t.pool,
                              "mapped": "MappedOperator" in [c.__name__ for c in type(t).__mro__]} for t in dag.tasks}}
print(json.dumps(out))
"""


def test_dags_import_cleanly_with_docs_retries_and_the_spark_operator(airflow):
    af = airflow()
    proc = subprocess.run([str(Path(af.env["PATH"].split(os.pathsep)[0]) / "python"), "-c", DAG_CHECK,
                           str(REPO / "dags")], env=af.env, capture_output=True, text=True, timeout=300, check=True)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["errors"] == {}
    archive, txns, upkeep, snapshot = (got["dags"][d] for d in ("binlake_archive", "binlake_transactions",
                                                                 "binlake_upkeep", "binlake_snapshot"))
    assert archive["doc"] and txns["doc"] and upkeep["doc"] and snapshot["doc"]
    assert archive["max_active_runs"] == 1 and not archive["catchup"]
    assert set(archive["tasks"]) == {"list_new_files", "archive_file", "summarize", "all_archived",
                                     "find_missing_baselines"}
    assert archive["tasks"]["summarize"]["downstream"] == ["find_missing_baselines"]
    assert snapshot["timetable"] == "AssetTriggeredTimetable" and set(snapshot["tasks"]) == {"take_snapshots"}
    assert archive["tasks"]["archive_file"]["mapped"]
    assert txns["timetable"] == "CronDataIntervalTimetable" and txns["summary"] == "0 * * * *"
    assert txns["tasks"]["wait_for_archive"]["downstream"] == ["assemble"]
    assert txns["tasks"]["assemble"]["downstream"] == ["validate"]
    assert txns["tasks"]["validate"]["downstream"] == ["apply_tables", "publish_report"]  # applied once validated
    # the warehouse's writers: Spark jobs, one at a time, queued in the one-slot pool every deployment makes
    writers = [txns["tasks"]["assemble"], txns["tasks"]["apply_tables"], upkeep["tasks"]["upkeep"]]
    assert all("SparkSubmitOperator" in t["type"] and t["max_active_tis_per_dag"] == 1 for t in writers)
    assert {t["pool"] for t in writers} == {POOL_COMMAND[2]} and POOL_COMMAND[3] == "1"
    assert upkeep["max_active_runs"] == 1
    for dag in (archive, txns, upkeep, snapshot):
        for task_id, task in dag["tasks"].items():
            assert task["doc"], f"{task_id} has no doc_md"
            assert task["retries"] >= 1 or task_id == "publish_report", task_id

    # the same files under `airflow dags list-import-errors`, as a user checks them
    af.cli("dags", "reserialize")
    assert "No data found" in af.cli("dags", "list-import-errors").stdout


# -- a live MySQL server into the S3 endpoint, through the Airflow connections -------------------


@pytest.fixture(scope="module")
def mysql_server(mysql_factory):
    """This module's own server: the live test resets its binary logs."""
    return mysql_factory()


def test_live_server_through_both_dags(mysql_server, s3_endpoint, airflow, spark_submit, tmp_path):
    server = mysql_server
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("RESET BINARY LOGS AND GTIDS")
        cur.execute("DROP DATABASE IF EXISTS shop")
        cur.execute("CREATE DATABASE shop")
    start = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(seconds=1)
    for _ in range(2):  # the docker-compose workload (seeded), over two files
        compose_workload(server, transactions=150)
        with server.connect() as conn, conn.cursor() as cur:
            cur.execute("FLUSH BINARY LOGS")
    tables, last_gtid, documents = _shop_tables(server)  # the server's SELECT at the workload's end, and its last GTID
    boto3.client("s3").create_bucket(Bucket="airflow-live")
    # the warehouse's Delta tables on the S3 endpoint too (s3a://), the reports in a local directory;
    # S3's endpoint and keys reach the tasks only through the AWS connection (the fixture drops AWS_*)
    warehouse, quality = "s3a://airflow-live/warehouse", tmp_path / "quality"
    settings = {"store": "s3://airflow-live/archive", "aws_conn_id": "binlake_s3", "warehouse": warehouse,
                "quality": str(quality),
                "sources": [{"name": "live", "mysql_conn_id": "binlake_mysql", "flush_binary_logs": True}]}
    af = airflow({
        "AIRFLOW_VAR_BINLAKE": json.dumps(settings),
        "AIRFLOW_CONN_BINLAKE_MYSQL": json.dumps({"conn_type": "mysql", "host": server.host, "port": server.port,
                                                  "login": server.user, "password": server.password}),
        "AIRFLOW_CONN_BINLAKE_S3": json.dumps({"conn_type": "aws", "login": "testing", "password": "testing",
                                               "extra": {"endpoint_url": s3_endpoint,
                                                         "region_name": "us-east-1"}}),
        # Airflow's OpenLineage provider, configured: its events into a file
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps({"type": "file", "log_file_path": str(tmp_path / "lineage"),
                                                       "append": True}),
        "AIRFLOW__OPENLINEAGE__NAMESPACE": "binlake-test",
    })
    end = dt.datetime.now(dt.UTC)  # before the archive run's FLUSH: its rotation reaches past `end`
    run = af.dags_test("binlake_archive")
    assert run["state"] == "success", run["output"][-3000:]
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        names = [r[0] for r in cur.fetchall()][:-1]  # the active file is never archived
    assert sum(1 for t in run["tasks"] if t.startswith("archive_file[")) == len(names)
    s3 = boto3.client("s3")
    for name in names:  # byte-identical to the server's files
        body = s3.get_object(Bucket="airflow-live", Key=f"archive/live/binlogs/{name}")["Body"].read()
        assert body == (server.binlog_dir / name).read_bytes(), name
        assert s3.head_object(Bucket="airflow-live", Key=f"archive/live/manifests/{name}.json")
    # the run snapshotted the server's tables into the schema history: information_schema's columns
    assert _snapshot_columns(s3, server) == _server_columns(server)

    conf = {"start": start.isoformat(), "end": end.isoformat()}
    run = af.dags_test("binlake_transactions", conf)
    assert run["state"] == "success", run["output"][-3000:]
    assert run["tasks"] == {"wait_for_archive": "success", "assemble": "success", "validate": "success",
                            "apply_tables": "success", "publish_report": "success"}
    got = lake(warehouse)  # delta-rs, on the S3 endpoint
    want = scan([server.binlog_dir / n for n in names], rows=True, source="live")
    assert got["transactions"] and differences(got, scanned(want)) == {}
    report = json.loads(next((quality / "runs").glob("*/results.json")).read_text())["report"]
    assert report["success"] is True
    versions = {name: table(warehouse, name).version() for name in ("transactions", "row_changes")}
    assert {k: report["versions"][k] for k in versions} == versions  # validated at the versions it wrote
    # lineage: the archive feeds the assemble task, which updates each table's Asset with the
    # run's range and counts (the scan's)
    events = _asset_events(af)
    for name, rows_of in (("transactions", "transaction"), ("row_changes", "row_change")):
        extra = events[f"binlake_{name}"][-1]
        assert (extra["status"], extra["rows"], extra["warehouse"]) == ("ok", len(want[rows_of]), warehouse)
        assert (extra["start"], extra["end"]) == (parse_time(conf["start"]), parse_time(conf["end"]))
        assert extra["version"] == versions[name]
    assert events["binlake_archives"][-1] == {"live": {"files": len(names), "transactions":
                                                            len(want["transaction"])}}
    assert ("binlake_transactions", "assemble", "binlake_archives") in _inlets(af)
    # the source tables: as of the server's last GTID, every table equals the server's SELECT
    assert _asof_tables(warehouse, last_gtid, documents) == tables
    # the source's Asset: the range, applied, and counts the binlog and the server give
    (applied,) = events["binlake_tables_live"]
    assert (applied["status"], applied["start"], applied["end"], applied["rebuilt_from"]) == \
        ("applied", parse_time(conf["start"]), parse_time(conf["end"]), None)
    assert applied["row_changes"] == _applied_row_changes(want)  # the scan's committed rows (XA at its commit)
    assert applied["tables_changed"] == len(tables)  # information_schema's tables of shop: each written
    # every version opened in a first range is current or closed in it: the current ones are the server's rows
    assert applied["versions_opened"] - applied["versions_closed"] == sum(sum(t.values()) for t in tables.values())
    # OpenLineage: the assemble task's completion names the archive in and the three tables out;
    # apply_tables', the changelog in and the source's tables out
    lineage = list(map(json.loads, (tmp_path / "lineage").read_text().splitlines()))
    done = {task: [(sorted((d["namespace"], d["name"]) for d in e["inputs"]),
                    sorted((d["namespace"], d["name"]) for d in e["outputs"])) for e in lineage
                   if e.get("job", {}).get("name") == f"binlake_transactions.{task}"
                   and e.get("eventType") == "COMPLETE"]
            for task in ("assemble", "apply_tables")}
    bucket = "s3://airflow-live"
    assert done["assemble"][0] == ([(bucket, "archive/live")],
                                   [(bucket, f"warehouse/{t}") for t in ("anomalies", "row_changes", "transactions")])
    assert done["apply_tables"][0] == ([(bucket, f"warehouse/{t}") for t in ("row_changes", "transactions")],
                                       [(bucket, "warehouse/tables/live")])

    # a rerun of the same interval changes nothing (it assembles the range again: the source tables
    # are rebuilt from its start, to the same rows); an archive rerun finds nothing new but the flushed file
    assert af.dags_test("binlake_transactions", conf)["state"] == "success"
    assert lake(warehouse) == got
    rebuilt = _asset_events(af)["binlake_tables_live"][-1]
    assert (rebuilt["status"], rebuilt["rebuilt_from"]) == ("applied", parse_time(conf["start"]))
    assert _asof_tables(warehouse, last_gtid, documents) == tables
    # a quiet interval of this source (which has a schema history): before the server's first
    # write (it was reset just before `start`), the changelog's tasks green, its tables as they
    # were; a backfill before the applied range with a gap no run validated, which the source
    # tables refuse: apply_tables fails at once (one try), naming the range to run first; no event
    quiet = {"start": (start - dt.timedelta(hours=2)).isoformat(), "end": (start - dt.timedelta(hours=1)).isoformat()}
    run = af.dags_test("binlake_transactions", quiet)
    assert run["tasks"] == {"wait_for_archive": "success", "assemble": "success", "validate": "success",
                            "apply_tables": "failed", "publish_report": "success"}, run["output"][-3000:]
    assert (f"tables of source live: {parse_time(quiet['start'])} .. {parse_time(quiet['end'])} refused: no "
            f"validation of {parse_time(quiet['end'])}..{parse_time(conf['start'])} for source live") in run["output"]
    assert af.metadata("SELECT try_number FROM task_instance WHERE dag_id = 'binlake_transactions' AND run_id = :run "
                       "AND task_id = 'apply_tables'", run=run["run_id"]) == [(1,)]
    assert len(_asset_events(af)["binlake_tables_live"]) == 2
    assert lake(warehouse) == got and _asof_tables(warehouse, last_gtid, documents) == tables
    # the upkeep DAG compacts the day's files (two runs' worth) into one per table, the rows the same;
    # the row versions' too, and asof reads them still (the state names the compacted versions)
    files = len(table(warehouse, "row_changes").file_uris())
    upkeep = af.dags_test("binlake_upkeep")
    assert upkeep["state"] == "success", upkeep["output"][-3000:]
    assert lake(warehouse) == got and len(table(warehouse, "row_changes").file_uris()) < files
    assert _asof_tables(warehouse, last_gtid, documents) == tables
    again = af.dags_test("binlake_archive")
    assert again["state"] == "success"
    assert sum(1 for t in again["tasks"] if t.startswith("archive_file[")) == 1
    listed = s3.list_objects_v2(Bucket="airflow-live", Prefix="archive/live/schema/snapshots/")
    assert len(listed["Contents"]) == 2  # one snapshot per run
    # no DDL ran between the runs: the second is a reference to the first, read as the server's tables
    first, second = sorted(o["Key"] for o in listed["Contents"])
    doc = json.loads(s3.get_object(Bucket="airflow-live", Key=second)["Body"].read())
    assert doc["kind"] == "unchanged" and "tables" not in doc and doc["tables_of"] == first.removeprefix("archive/")
    assert _snapshot_columns(s3, server) == _server_columns(server)


def test_a_mariadb_server_through_both_dags(mariadb_factory, airflow, spark_submit, tmp_path):
    """The second flavor as the DAGs take it: MariaDB 10.11's files archived by the archive DAG
    (byte-identical), the transactions DAG's run over them, and its tables as of the server's last
    GTID equal to the server's SELECT (the same seeded docker-compose workload as above, XA and
    rollbacks included); the warehouse on local disk."""
    server = mariadb_factory()
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE DATABASE shop")
    start = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(seconds=1)
    compose_workload(server, transactions=150)
    tables, last_gtid, documents = _shop_tables(server)
    warehouse = tmp_path / "warehouse"
    settings = {"store": f"file://{tmp_path / 'archive'}", "warehouse": str(warehouse),
                "quality": str(tmp_path / "quality"),
                "sources": [{"name": "live", "mysql_conn_id": "binlake_mariadb", "flush_binary_logs": True}]}
    af = airflow({"AIRFLOW_VAR_BINLAKE": json.dumps(settings),
                  "AIRFLOW_CONN_BINLAKE_MARIADB": json.dumps({"conn_type": "mysql", "host": server.host,
                                                              "port": server.port, "login": server.user,
                                                              "password": server.password})})
    end = dt.datetime.now(dt.UTC)
    run = af.dags_test("binlake_archive")
    assert run["state"] == "success", run["output"][-3000:]
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        names = [r[0] for r in cur.fetchall()][:-1]  # the active file is never archived
    for name in names:
        archived = tmp_path / "archive" / "live" / "binlogs" / name
        assert archived.read_bytes() == (server.binlog_dir / name).read_bytes(), name
    run = af.dags_test("binlake_transactions", {"start": start.isoformat(), "end": end.isoformat()})
    assert run["tasks"] == {"wait_for_archive": "success", "assemble": "success", "validate": "success",
                            "apply_tables": "success", "publish_report": "success"}, run["output"][-3000:]
    assert not documents and tables["orders"] and tables["customers"]  # the workload's tables, written
    assert _asof_tables(str(warehouse), last_gtid, documents) == tables
    (applied,) = _asset_events(af)["binlake_tables_live"]
    assert applied["row_changes"] == _applied_row_changes(
        scan([server.binlog_dir / n for n in names], rows=True, source="live"))


def _shop_tables(server) -> tuple[dict[str, Counter], str, set[str]]:
    """Each table of the workload's database as the server's SELECT gives it (each row its columns'
    `CAST(… AS CHAR)` text, a JSON document parsed), its last GTID (gtid_executed; MariaDB's
    gtid_binlog_pos), and the JSON columns (`table.column`; MariaDB's JSON is LONGTEXT: text)."""
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS "
                    "WHERE TABLE_SCHEMA = 'shop' ORDER BY TABLE_NAME, ORDINAL_POSITION")
        columns: dict[str, list[str]] = {}
        documents = set()
        for t, c, kind in cur.fetchall():
            columns.setdefault(t, []).append(c)
            if (kind.decode() if isinstance(kind, bytes) else kind) == "json":
                documents.add(f"{t}.{c}")
        tables = {}
        for t, cols in columns.items():
            cur.execute(f"SELECT {', '.join(f'CAST(`{c}` AS CHAR)' for c in cols)} FROM shop.`{t}`")
            tables[t] = Counter(
                json.dumps({c: _text(f"{t}.{c}" in documents, json.loads(v) if f"{t}.{c}" in documents and v else v)
                            for c, v in zip(cols, row, strict=True)}, sort_keys=True) for row in cur.fetchall())
        if server.flavor == "mariadb":  # one domain, one server: its last GTID
            cur.execute("SELECT @@global.gtid_binlog_pos")
            return tables, cur.fetchone()[0], documents
        cur.execute("SELECT @@global.gtid_executed")
        uuid, ranges = cur.fetchone()[0].replace("\n", "").split(":", 1)  # one server since the reset: one uuid
    return tables, f"{uuid}:{ranges.split('-')[-1]}", documents


def _text(document: bool, v):
    """A value as both sides are compared: its text (the server's CAST, a row value's JSON text),
    a JSON document written with sorted keys."""
    if v is None:
        return None
    if document:
        return json.dumps(v, sort_keys=True)
    return v.decode() if isinstance(v, bytes) else v if isinstance(v, str) else str(v)


def _asof_tables(warehouse: str, at: str, documents: set[str]) -> dict[str, Counter]:
    """`binlake asof` of the live source's tables at a GTID, as _shop_tables gives the server's."""
    proc = run_cli("asof", "--warehouse", warehouse, "--source", "live", "--at", at)
    assert proc.returncode == 0, proc.stderr[-3000:]
    tables: dict[str, Counter] = {}
    for line in ndjson(proc.stdout):
        assert line["schema"] == "shop"
        row = {c: _text(f"{line['table']}.{c}" in documents, v) for c, v in line["row"].items()}
        tables.setdefault(line["table"], Counter())[json.dumps(row, sort_keys=True)] += 1
    return tables


def _applied_row_changes(scanned_records: dict[str, list[dict]]) -> int:
    """The row changes of committed transactions, an XA transaction's when its XA COMMIT is there
    (the server applied those), as the binlog's own row events say (a scan)."""
    txns = scanned_records["transaction"]
    committed = {t["txn_id"] for t in txns if t["kind"] == "dml" and t["outcome"] == "committed"}
    xids = {t["xa_xid"] for t in txns if t["kind"] == "xa_commit" and t["outcome"] == "committed"}
    committed |= {t["txn_id"] for t in txns if t["kind"] == "xa_prepare" and t["xa_xid"] in xids}
    return sum(1 for r in scanned_records["row_change"] if r["txn_id"] in committed)


def _asset_events(af) -> dict[str, list[dict]]:
    """Each Asset's events' extras, oldest first, from Airflow's metadata database."""
    import sqlite3

    with sqlite3.connect(af.home / "airflow.db") as db:
        found = db.execute("SELECT a.name, e.extra FROM asset_event e JOIN asset a ON a.id = e.asset_id "
                           "ORDER BY e.id").fetchall()
    out: dict[str, list[dict]] = {}
    for name, extra in found:
        out.setdefault(name, []).append(json.loads(extra))
    return out


def _inlets(af) -> set[tuple[str, str, str]]:
    """(DAG, task, Asset) of every task's inlets, as Airflow recorded them."""
    import sqlite3

    with sqlite3.connect(af.home / "airflow.db") as db:
        return set(db.execute("SELECT r.dag_id, r.task_id, a.name FROM task_inlet_asset_reference r "
                              "JOIN asset a ON a.id = r.asset_id").fetchall())


def _snapshot_columns(s3, server) -> tuple[str, list[tuple[str, str, str]]]:
    """The newest snapshot of the history, as binlake's readers take it: a reference's tables are
    those of the whole snapshot it names."""
    from binlake.archive.stores import open_store
    from binlake.schema.history import loaded, snapshots

    store = open_store("s3://airflow-live/archive")
    snapshot = loaded(store, snapshots(store, "live")[-1])
    return snapshot.point["server_uuid"], [(t.name, c.name, c.type) for (db, _), t in sorted(snapshot.tables.items())
                                           if db == "shop" for c in t.columns]


def _server_columns(server) -> tuple[str, list[tuple[str, str, str]]]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT @@server_uuid")
        uuid = cur.fetchone()[0]
        cur.execute("SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS "
                    "WHERE TABLE_SCHEMA = 'shop' ORDER BY TABLE_NAME, ORDINAL_POSITION")
        return uuid, [(t, n, ct.decode() if isinstance(ct, bytes) else ct) for t, n, ct in cur.fetchall()]


def compose_workload(server, transactions: int) -> None:
    env = {**os.environ, "MYSQL_HOST": server.host, "MYSQL_PORT": str(server.port), "MYSQL_USER": server.user,
           "MYSQL_PASSWORD": server.password, "WORKLOAD_SEED": "77", "WORKLOAD_INTERVAL": "0",
           "WORKLOAD_LIMIT": str(transactions)}
    subprocess.run([sys.executable, str(REPO / "docker" / "workload.py")], env=env, check=True, timeout=600,
                   capture_output=True)


def test_wrong_mysql_password_fails_the_listing_with_the_reason(mysql_server, airflow, tmp_path):
    settings = {"store": f"file://{tmp_path / 'archive'}", "warehouse": str(tmp_path / "warehouse"),
                "sources": [{"name": "live", "mysql_conn_id": "binlake_mysql"}]}
    af = airflow({
        "AIRFLOW_VAR_BINLAKE": json.dumps(settings),
        "AIRFLOW_CONN_BINLAKE_MYSQL": json.dumps({"conn_type": "mysql", "host": mysql_server.host,
                                                  "port": mysql_server.port, "login": "nobody",
                                                  "password": "wrong"}),
    })
    run = af.dags_test("binlake_archive")
    assert run["state"] == "failed"
    assert run["tasks"]["list_new_files"] == "failed"  # at once: credentials do not heal by retrying
    assert "access denied (wrong user or password)" in run["output"]
    assert not (tmp_path / "archive").exists() or not any((tmp_path / "archive").rglob("*.json"))


def test_a_refused_file_fails_its_task_and_a_reset_is_a_warning(mysql_factory, airflow, tmp_path):
    """The archive DAG on a server's history: files the server refuses to send (anonymous
    transactions after a gtid_mode migration) fail their task at once with the reason and the
    remedy while the later files are archived; after the remedy and a reset, the next run
    archives the reused names as a new generation, with a warning, and succeeds."""
    from tests.support.history import rotated, traffic

    server = mysql_factory(gtid_mode="OFF", enforce_gtid_consistency="OFF")
    traffic(server, "anonymous", 4, seed=11, rotate_every=2)
    with server.connect() as conn, conn.cursor() as cur:
        for mode in ("OFF_PERMISSIVE", "ON_PERMISSIVE", "ON"):
            cur.execute("SET GLOBAL enforce_gtid_consistency = ON")
            cur.execute(f"SET GLOBAL gtid_mode = {mode}")
    traffic(server, "gtid", 4, seed=12, rotate_every=2)
    store = tmp_path / "archive"
    settings = {"store": f"file://{store}", "warehouse": str(tmp_path / "warehouse"),
                "sources": [{"name": "live", "mysql_conn_id": "binlake_mysql"}]}
    af = airflow({
        "AIRFLOW_VAR_BINLAKE": json.dumps(settings),
        "AIRFLOW_CONN_BINLAKE_MYSQL": json.dumps({"conn_type": "mysql", "host": server.host, "port": server.port,
                                                  "login": server.user, "password": server.password}),
    })
    files = rotated(server)
    run = af.dags_test("binlake_archive")
    assert run["state"] == "failed"
    states = [s for t, s in sorted(run["tasks"].items()) if t.startswith("archive_file[")]
    refused = sorted(p.name[:-5] for p in (store / "live" / "refused").iterdir())
    assert refused and states.count("failed") == len(refused) and states.count("success") == len(files) - len(refused)
    assert "Cannot replicate anonymous transaction" in run["output"]
    assert (f"binlake archive --source 'dir://{server.binlog_dir}?basename=binlog' --store file://{store} "
            "--source-name live") in run["output"]

    fix = run_cli("archive", "--source", f"dir://{server.binlog_dir}?basename=binlog", "--store", f"file://{store}",
                  "--source-name", "live")
    assert fix.returncode == 0, fix.stderr
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("RESET BINARY LOGS AND GTIDS")
    traffic(server, "after", 4, seed=13, rotate_every=2)
    run = af.dags_test("binlake_archive")
    assert run["state"] == "success", run["output"][-3000:]
    assert "a new generation 2 of source live" in run["output"]
    archived = {p.name: p.read_bytes() for p in (store / "live" / "binlogs").iterdir()}
    assert archived == {**files, **{f"{n}@g0002": b for n, b in rotated(server).items()}}


# -- connections, damaged files, the store checked first -------------------------------------------


def _task_instances(af, dag_id: str) -> list[dict]:
    """Airflow's own record of the DAG's task instances (its metadata database)."""
    import sqlite3

    with sqlite3.connect(af.home / "airflow.db") as db:
        db.row_factory = sqlite3.Row
        return [dict(r) for r in db.execute(
            "SELECT task_id, map_index, rendered_map_index, state, try_number FROM task_instance WHERE dag_id = ?",
            (dag_id,))]


def test_exported_connections_and_variables_reach_binlake_airflow(tmp_path, monkeypatch):
    # docs/airflow.md: connections may be exported as AIRFLOW_CONN_*; `binlake airflow` runs
    # Airflow with them (and with exported variables), its own settings (AIRFLOW__*) its own.
    from binlake.local.airflow import AIRFLOW, local_env

    s3 = {"conn_type": "aws", "login": "KEY", "password": "SECRET", "extra": {"endpoint_url": "http://s3.example:9000"}}
    monkeypatch.setenv("AIRFLOW_CONN_BINLAKE_S3", json.dumps(s3))
    monkeypatch.setenv("AIRFLOW_VAR_ELSEWHERE", "kept")
    monkeypatch.setenv("AIRFLOW__CORE__DAGS_FOLDER", str(tmp_path / "not-these"))
    env = local_env(tmp_path / "home", None, "*/5 * * * *", 2)
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == str(REPO / "dags")
    (tmp_path / "home").mkdir()
    got = subprocess.run([AIRFLOW, "connections", "get", "binlake_s3", "-o", "json"], env=env, capture_output=True,
                         text=True, timeout=300)
    (conn,) = json.loads(next(ln for ln in got.stdout.splitlines() if ln.startswith("[")))
    assert (conn["conn_type"], conn["login"], json.loads(conn["extra_dejson"] if isinstance(conn["extra_dejson"], str)
                                                           else json.dumps(conn["extra_dejson"]))) == \
        ("aws", "KEY", s3["extra"]), got.stdout + got.stderr
    got = subprocess.run([AIRFLOW, "variables", "get", "elsewhere"], env=env, capture_output=True, text=True,
                         timeout=300)
    assert got.stdout.strip().splitlines()[-1] == "kept", got.stdout + got.stderr


def test_a_named_connection_that_does_not_exist_fails_at_once(s3_endpoint, airflow, tmp_path):
    # The store's AWS connection is not defined while the AWS environment would reach the S3
    # endpoint: no fallback to boto3's chain, the listing fails at once naming the connection, and
    # the bucket stays empty. The same for a source's MySQL connection.
    samples = next(f for f in _sample_dirs() if "/mysql-" in f)
    boto3.client("s3").create_bucket(Bucket="noconn")
    settings = {"store": "s3://noconn/archive", "aws_conn_id": "binlake_s3", "warehouse": str(tmp_path / "w"),
                "sources": [{"name": "s", "url": f"dir://{samples}", "final": True}]}
    af = airflow({"AIRFLOW_VAR_BINLAKE": json.dumps(settings)}, keep_aws_env=True)
    run = af.dags_test("binlake_archive")
    assert run["tasks"]["list_new_files"] == "failed", run["output"][-3000:]
    assert "the Airflow connection 'binlake_s3' is not defined" in run["output"]
    assert boto3.client("s3").list_objects_v2(Bucket="noconn")["KeyCount"] == 0  # nothing reached the endpoint
    settings = {"store": f"file://{tmp_path / 'archive'}", "warehouse": str(tmp_path / "w"),
                "sources": [{"name": "db1", "mysql_conn_id": "binlake_db1"}]}
    af.env["AIRFLOW_VAR_BINLAKE"] = json.dumps(settings)
    run = af.dags_test("binlake_archive")
    assert run["tasks"]["list_new_files"] == "failed", run["output"][-3000:]
    assert "source db1: the Airflow connection 'binlake_db1' is not defined" in run["output"]
    tries = [t["try_number"] for t in _task_instances(af, "binlake_archive") if t["task_id"] == "list_new_files"]
    assert tries == [1, 1]  # each run's listing tried once: a retry cannot define a connection


def _sample_dirs() -> list[str]:
    from binlake.local.demo import sample_files

    return sorted({f.rsplit("/", 1)[0] for f in sample_files()})


def _event_starts(data: bytes) -> list[int]:
    """The offsets of a binlog file's events, by their headers' event_size (bytes 9-12)."""
    at, out = 4, []
    while at + 19 <= len(data):
        out.append(at)
        at += int.from_bytes(data[at + 9:at + 13], "little")
    return out


def test_a_damaged_file_fails_its_own_task_once_and_the_others_archive(airflow, tmp_path):
    # Two dir:// sources; one of the first's files ends 13 bytes into its last event's header.
    # That file's task fails once (no retry: the bytes will not change), its message naming the
    # source, the file and the event's offset (the file's own framing); every other file of both
    # sources is archived in the same run, byte for byte; each file's task is labelled by it.
    import shutil

    mysql, mariadb = (next(d for d in _sample_dirs() if f"/{f}-" in d) for f in ("mysql", "mariadb"))
    bad = tmp_path / "bad"
    shutil.copytree(mysql, bad)
    damaged = bad / "binlog.000003"
    data = damaged.read_bytes()
    cut = _event_starts(data)[-1]
    damaged.write_bytes(data[:cut + 13])
    store = tmp_path / "archive"
    settings = {"store": f"file://{store}", "warehouse": str(tmp_path / "w"),
                "sources": [{"name": "bad", "url": f"dir://{bad}", "final": True},
                            {"name": "good", "url": f"dir://{mariadb}", "final": True}]}
    af = airflow({"AIRFLOW_VAR_BINLAKE": json.dumps(settings)})
    run = af.dags_test("binlake_archive")
    assert run["state"] == "failed"
    tis = [t for t in _task_instances(af, "binlake_archive") if t["task_id"] == "archive_file"]
    want = {f"bad/{p.name}" for p in bad.iterdir()} | {f"good/{p.name}" for p in Path(mariadb).iterdir()}
    assert {t["rendered_map_index"] for t in tis} == want
    failed = [t for t in tis if t["state"] != "success"]
    assert [(t["rendered_map_index"], t["state"], t["try_number"]) for t in failed] == \
        [("bad/binlog.000003", "failed", 1)], tis
    assert f"source bad: binlog.000003:{cut}: truncated event header: 13 bytes" in run["output"]
    for name, src in (("bad", bad), ("good", Path(mariadb))):
        for p in src.iterdir():
            archived = store / name / "binlogs" / p.name
            if p != damaged:
                assert archived.read_bytes() == p.read_bytes(), p
        assert not (store / "bad" / "manifests" / "binlog.000003.json").exists()
    # the run's summary added one event per archived file to each source's Asset; the run failed
    assert (run["tasks"]["summarize"], run["tasks"]["all_archived"]) == ("success", "upstream_failed"), run["tasks"]
    events = {name: len(extras) for name, extras in _asset_events(af).items() if name.startswith("binlake_archive_")}
    assert events == {"binlake_archive_bad": len(list(bad.iterdir())) - 1,
                      "binlake_archive_good": len(list(Path(mariadb).iterdir()))}


def test_the_store_is_checked_before_the_server_is_flushed(mysql_server, airflow, tmp_path):
    # The store is down (its S3 endpoint refuses connections): the listing fails before FLUSH
    # BINARY LOGS, so a retry rotates nothing. The server's own list of files is the oracle.
    settings = {"store": "s3://down/archive", "aws_conn_id": "binlake_s3", "warehouse": str(tmp_path / "w"),
                "sources": [{"name": "live", "mysql_conn_id": "binlake_mysql", "flush_binary_logs": True}]}
    from binlake.local.airflow import free_port

    af = airflow({
        "AIRFLOW_VAR_BINLAKE": json.dumps(settings),
        "AIRFLOW_CONN_BINLAKE_MYSQL": json.dumps({"conn_type": "mysql", "host": mysql_server.host,
                                                  "port": mysql_server.port, "login": mysql_server.user,
                                                  "password": mysql_server.password}),
        "AIRFLOW_CONN_BINLAKE_S3": json.dumps({"conn_type": "aws", "login": "k", "password": "s", "extra": {
            "endpoint_url": f"http://127.0.0.1:{free_port()}", "region_name": "us-east-1",
            "config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 2}}}),
    })

    def files() -> list[str]:
        with mysql_server.connect() as conn, conn.cursor() as cur:
            cur.execute("SHOW BINARY LOGS")
            return [r[0] for r in cur.fetchall()]

    before = files()
    out = af.cli("tasks", "test", "binlake_archive", "list_new_files", check=False)
    text = out.stdout + out.stderr
    assert "StoreError" in text and "s3://down/archive" in text, text[-3000:]
    assert files() == before  # no FLUSH BINARY LOGS


def test_the_first_run_of_a_new_deployment_waits_for_the_archives_first_run(mysql_server, airflow, tmp_path):
    # A deployment started 40 minutes after an hour ended: the scheduler's first run is for that
    # hour, before the archive DAG has run. Its sensor waits (archive_wait_seconds is counted from
    # the run's start, not from the interval's end) instead of failing, and passes once the
    # archive's first run has copied the server's files, which reach past the interval's end.
    end = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(minutes=40)
    interval = json.dumps({"start": (end - dt.timedelta(hours=1)).isoformat(), "end": end.isoformat()})
    settings = {"store": f"file://{tmp_path / 'archive'}", "warehouse": str(tmp_path / "w"),
                "sources": [{"name": "live", "mysql_conn_id": "binlake_mysql", "flush_binary_logs": True}]}
    af = airflow({"AIRFLOW_VAR_BINLAKE": json.dumps(settings), "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
                  "AIRFLOW_CONN_BINLAKE_MYSQL": json.dumps({"conn_type": "mysql", "host": mysql_server.host,
                                                            "port": mysql_server.port, "login": mysql_server.user,
                                                            "password": mysql_server.password})})
    first = af.cli("tasks", "test", "binlake_transactions", "wait_for_archive", "-t", interval, check=False)
    text = first.stdout + first.stderr
    assert "new_state=up_for_reschedule" in text and "AirflowFailException" not in text, text[-3000:]
    assert af.dags_test("binlake_archive")["state"] == "success"
    second = af.cli("tasks", "test", "binlake_transactions", "wait_for_archive", "-t", interval, check=False)
    assert "new_state=success" in second.stdout + second.stderr, (second.stdout + second.stderr)[-3000:]
