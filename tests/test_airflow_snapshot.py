"""binlake_snapshot and the archive DAG's search for tables without a baseline, as Airflow runs
them: real `airflow dags test` runs against real MySQL servers, through the Airflow connections.

Oracles: the server's SELECT of each table; which tables existed when each archive run captured
the schema (the test made them); Airflow's own record of the asset events an archive run added
(its metadata database) and of its runs' and tasks' states.
"""

from __future__ import annotations

import json
import sqlite3

import boto3

from binlake.archive.stores import open_store
from binlake.baseline import layout
from tests.support.snapshots import baseline


def _rows(server, sql: str) -> list[dict]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(sql)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def _run(server, *statements: str) -> None:
    with server.connect() as conn, conn.cursor() as cur:
        for sql in statements:
            cur.execute(sql)


def _connection(server) -> str:
    return json.dumps({"conn_type": "mysql", "host": server.host, "port": server.port, "login": server.user,
                       "password": server.password})


def _events(af) -> list[dict]:
    """The extras of the events of the Asset binlake_baselines_needed, oldest first, as Airflow's
    metadata database holds them."""
    db = sqlite3.connect(af.home / "airflow.db")
    try:
        found = db.execute("SELECT e.extra FROM asset_event e JOIN asset a ON a.id = e.asset_id "
                           "WHERE a.name = 'binlake_baselines_needed' ORDER BY e.id").fetchall()
    finally:
        db.close()
    return [json.loads(extra) for (extra,) in found]


def test_the_archive_finds_tables_without_a_baseline_and_the_snapshot_takes_them(mysql_factory, s3_endpoint,
                                                                                   airflow):
    """One deployment, its store on S3 through the AWS connection. Archive runs capture the
    tables; the first names those archiving began with in an event of binlake_baselines_needed;
    binlake_snapshot (as its asset schedule runs it: no params) takes them. On demand, the table
    the params name is read: one that is not there fails the task at once (no retry), naming it.
    A table created after the first capture (its CREATE is in the archive)
    needs no baseline: the last archive run finds nothing missing and adds no event."""
    server = mysql_factory()
    _run(server, "CREATE DATABASE shop", "CREATE TABLE shop.t1 (id INT PRIMARY KEY, v VARCHAR(10))",
         "INSERT INTO shop.t1 VALUES (1, 'one'), (2, 'two'), (3, NULL)",
         "CREATE TABLE shop.heap (id INT PRIMARY KEY) ENGINE=MyISAM")
    boto3.client("s3").create_bucket(Bucket="airflow-snapshot")
    store_url = "s3://airflow-snapshot/archive"
    settings = {"store": store_url, "aws_conn_id": "binlake_s3", "warehouse": "/nonexistent",
                "sources": [{"name": "db1", "mysql_conn_id": "binlake_db1", "flush_binary_logs": True}]}
    af = airflow({"AIRFLOW_VAR_BINLAKE": json.dumps(settings), "AIRFLOW_CONN_BINLAKE_DB1": _connection(server),
                  "AIRFLOW_CONN_BINLAKE_S3": json.dumps({"conn_type": "aws", "login": "testing",
                                                         "password": "testing",
                                                         "extra": {"endpoint_url": s3_endpoint,
                                                                   "region_name": "us-east-1"}})})
    af.cli("dags", "reserialize")  # binlake_snapshot known to Airflow as the asset's consumer
    store = open_store(store_url)

    run = af.dags_test("binlake_archive")
    assert run["state"] == "success", run["output"][-3000:]
    assert run["tasks"]["find_missing_baselines"] == "success"
    # the first capture is where archiving began: its tables need baselines
    assert _events(af) == [{"missing": {"db1": ["shop.heap", "shop.t1"]}}]
    # created after it: complete from its CREATE in the archive
    _run(server, "CREATE TABLE shop.t2 (id INT PRIMARY KEY)", "INSERT INTO shop.t2 VALUES (5)")

    run = af.dags_test("binlake_snapshot")
    assert run["state"] == "success", run["output"][-3000:]
    (scheduled,) = layout.ids(store, "db1")
    record, got = baseline(store_url, "db1", scheduled)
    assert got == {("shop", "t1"): _rows(server, "SELECT id, v FROM shop.t1 ORDER BY id")}
    assert [(s["table"], s["kind"]) for s in record["skipped"]] == [("heap", "engine")]

    # on demand: the table asked for, read from the run's params (one not there: no retry)
    run = af.dags_test("binlake_snapshot", {"source": "db1", "tables": ["shop.nothere"]})
    assert run["state"] == "failed" and run["tasks"] == {"take_snapshots": "failed"}
    assert "table shop.nothere: no such table, or no SELECT privilege on it" in run["output"]
    assert layout.ids(store, "db1") == [scheduled]

    before = len(_events(af))
    run = af.dags_test("binlake_archive")
    assert run["state"] == "success" and run["tasks"]["find_missing_baselines"] == "success"
    assert len(_events(af)) == before  # nothing missing (shop.t2 included): no event, no snapshot scheduled
