"""The assemble task's operator as Airflow runs it (`airflow tasks test`, SQLite): the Spark
connection it submits through is the `binlake` Variable's `spark_conn_id`, rendered by Airflow at
run time and passed through SparkSubmitOperator's own `conn_id`."""

from __future__ import annotations

import json

from binlake.archive.run import archive
from binlake.archive.sources import DirSource
from binlake.archive.stores import open_store
from binlake.demo import commit_range, sample_files
from tests.support.lake import lake


def test_the_variables_spark_connection_is_the_one_used(airflow, spark_submit, tmp_path):
    store = tmp_path / "archive"
    mysql_samples = next(f for f in sample_files() if "/mysql-" in f).rsplit("/", 1)[0]
    archive(DirSource(mysql_samples), open_store(f"file://{store}"), "s")
    start, end = commit_range(store)
    settings = {"store": f"file://{store}", "warehouse": str(tmp_path / "warehouse"),
                "sources": [{"name": "s", "url": f"dir://{mysql_samples}", "final": True}],
                "spark_conn_id": "binlake_spark"}
    af = airflow({
        "AIRFLOW_VAR_BINLAKE": json.dumps(settings),
        # only the Variable's connection exists: submitting through spark_default would fail
        "AIRFLOW_CONN_BINLAKE_SPARK": json.dumps({"conn_type": "spark", "host": "local[1]"}),
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
    })
    del af.env["AIRFLOW_CONN_SPARK_DEFAULT"]
    out = af.cli("tasks", "test", "binlake_transactions", "assemble", "-t",
                 json.dumps({"start": start, "end": end}))
    text = out.stdout + out.stderr
    assert "into " + settings["warehouse"] + " (local[1])" in text  # the operator's log line names the master
    assert "--master local[1]" in text  # the provider's hook built spark-submit from that connection
    assert lake(tmp_path / "warehouse")["transactions"]  # and the job ran through it



def test_binlakes_own_imports_raise_no_deprecation_warning(tmp_path):
    # Airflow 3 moved the task exceptions to airflow.sdk.exceptions; the old names warn in every
    # task's log. A fresh interpreter imports the plugins and both DAG files with every warning
    # kept: none may come from binlake's code (the providers' own are theirs). The imports made
    # inside tasks are read from the sources: none of the moved modules.
    import ast
    import os
    import subprocess
    import sys

    from tests.support.scanning import REPO

    code = ("import runpy, warnings\n"
            "with warnings.catch_warnings(record=True) as seen:\n"
            "    warnings.simplefilter('always')\n"
            "    import binlake_airflow.archive_tasks, binlake_airflow.transactions_tasks\n"
            "    runpy.run_path('dags/binlake_transactions.py'); runpy.run_path('dags/binlake_archive.py')\n"
            "for w in seen:\n"
            "    print(w.category.__name__, w.filename, sep=' | ')\n")
    env = {**os.environ, "PYTHONPATH": str(REPO / "plugins"), "AIRFLOW_HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    ours = [line for line in out.stdout.splitlines() if "Deprecat" in line.split(" | ")[0]
            and "site-packages" not in line and any(f"/{d}/" in line for d in ("plugins", "dags", "binlake"))]
    assert ours == []
    moved = {"airflow.exceptions", "airflow.models.baseoperator", "airflow.decorators", "airflow.sensors.base"}
    for path in [*(REPO / "plugins").rglob("*.py"), *(REPO / "dags").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert node.module not in moved, f"{path.relative_to(REPO)}:{node.lineno} imports {node.module}"


def test_an_archive_that_stopped_fails_the_interval_with_what_is_known(airflow, tmp_path):
    # The source is down and nothing reached the archive: an interval that ended more than
    # archive_wait_seconds ago fails at wait_for_archive on its first poke (not "running" for
    # hours), the message naming the source, how far its archive got and the archive DAG.
    settings = {"store": f"file://{tmp_path / 'archive'}", "warehouse": str(tmp_path / "warehouse"),
                "sources": [{"name": "db1", "url": "mysql://root@127.0.0.1:9"}], "archive_wait_seconds": 60}
    af = airflow({"AIRFLOW_VAR_BINLAKE": json.dumps(settings)})
    run = af.dags_test("binlake_transactions", conf={"start": "2026-11-01T10:00:00Z", "end": "2026-11-01T11:00:00Z"})
    assert run["state"] == "failed"
    assert run["tasks"]["wait_for_archive"] == "failed" and run["tasks"]["assemble"] == "upstream_failed"
    assert ("the archive has not reached the interval's end 2026-11-01T11:00:00.000000Z" in run["output"]
            and "db1 (archived up to nothing yet)" in run["output"] and "binlake_archive" in run["output"]), \
        run["output"][-3000:]
