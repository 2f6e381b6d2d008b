"""The assemble task's operator as Airflow runs it (`airflow tasks test`, SQLite): the Spark
connection it submits through is the `binlake` Variable's `spark_conn_id`, rendered by Airflow at
run time and passed through SparkSubmitOperator's own `conn_id`; the range and sources both range
jobs (assemble, apply_tables) are given."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
from pathlib import Path

from binlake.archive.run import archive
from binlake.archive.sources import DirSource
from binlake.archive.stores import open_store
from binlake.local.demo import commit_range, sample_files
from binlake.spark import add_arguments, add_tables_arguments
from tests.support.lake import lake
from tests.support.truth import samples_truth


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

# The DAG's two range tasks as the DAG file makes them, their start and end set as Airflow renders
# them: the arguments each gives its job for the `binlake` Variable (JSON, argv[2]).
RANGE_ARGS = """
import json, sys
from airflow.dag_processing.dagbag import DagBag
from binlake_airflow import settings
dag = DagBag(dag_folder=sys.argv[1]).dags["binlake_transactions"]
cfg = settings.parse(json.loads(sys.argv[2]))
out = {}
for task_id in ("assemble", "apply_tables"):
    task = dag.get_task(task_id)
    task.start, task.end = sys.argv[3], sys.argv[4]
    out[task_id] = task.range_args(cfg)
print(json.dumps(out))
"""


def test_both_range_jobs_get_the_variables_range_and_every_source(airflow):
    # assemble and apply_tables submit their jobs with one operator's range arguments; each job's
    # own parser (its spark_jobs entry point's) reads from them what the Variable and the run say:
    # the store, the warehouse, the range, and every source in the Variable's order.
    import argparse
    import subprocess

    from tests.support.scanning import REPO

    variable = {"store": "s3://archive/binlake", "warehouse": "s3a://lake/binlake",
                "sources": [{"name": "db1", "mysql_conn_id": "binlake_db1"}, {"name": "old", "url": "dir:///srv/old"}]}
    start, end = "2026-11-22T10:00:00+00:00", "2026-11-22T11:00:00+00:00"
    af = airflow()
    out = subprocess.run([str(Path(af.env["PATH"].split(os.pathsep)[0]) / "python"), "-c", RANGE_ARGS,
                          str(REPO / "dags"), json.dumps(variable), start, end], env=af.env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    argv = json.loads(out.stdout.strip().splitlines()[-1])
    for task_id, add in (("assemble", add_arguments), ("apply_tables", add_tables_arguments)):
        parser = argparse.ArgumentParser()
        add(parser)
        got = parser.parse_args(argv[task_id])
        assert (got.store, got.warehouse, got.start, got.end, got.sources) == \
            (variable["store"], variable["warehouse"], start, end, ["db1", "old"]), task_id


# The upkeep DAG's task as the DAG file makes it: the arguments it gives its job for each
# `binlake` Variable (JSON, argv[2]: a list of them).
UPKEEP_ARGS = """
import json, sys
from airflow.dag_processing.dagbag import DagBag
from binlake_airflow import settings
task = DagBag(dag_folder=sys.argv[1]).dags["binlake_upkeep"].get_task("upkeep")
print(json.dumps([task.upkeep_args(settings.parse(v)) for v in json.loads(sys.argv[2])]))
"""


def test_the_upkeep_job_gets_the_variables_quality_directory(airflow, tmp_path):
    # The upkeep removes the GX project's older results from the Variable's `quality` directory:
    # the job's own parser (spark_jobs/warehouse_upkeep.py's) reads it from the task's arguments;
    # without one, a local warehouse's default is the job's ({warehouse}/quality) and an s3a://
    # warehouse's quality is left alone.
    import argparse
    import subprocess

    from binlake.spark import add_upkeep_arguments
    from binlake.spark.settings import RETAIN_DAYS
    from tests.support.scanning import REPO

    sources = [{"name": "db1", "mysql_conn_id": "binlake_db1"}]
    variables = [{"store": "s3://a/b", "warehouse": "s3a://lake/w", "quality": str(tmp_path / "q"),
                  "upkeep_retain_days": 3, "sources": sources},
                 {"store": "s3://a/b", "warehouse": "s3a://lake/w", "sources": sources},
                 {"store": "s3://a/b", "warehouse": str(tmp_path / "w"), "sources": sources}]
    af = airflow()
    out = subprocess.run([str(Path(af.env["PATH"].split(os.pathsep)[0]) / "python"), "-c", UPKEEP_ARGS,
                          str(REPO / "dags"), json.dumps(variables)], env=af.env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    parser = argparse.ArgumentParser()
    parser.add_argument("--warehouse", required=True)
    add_upkeep_arguments(parser)
    got = [parser.parse_args(argv) for argv in json.loads(out.stdout.strip().splitlines()[-1])]
    assert [(a.warehouse, a.retain_days, a.quality) for a in got] == [
        ("s3a://lake/w", 3, str(tmp_path / "q")), ("s3a://lake/w", RETAIN_DAYS, None),
        (str(tmp_path / "w"), RETAIN_DAYS, None)]


# The DAG's assemble and apply_tables tasks prepared for a range on a local master, as their
# execute() prepares them: the driver's java options each spark-submit gets (JSON, the last line).
PREPARED = """
import json, sys, types
from airflow.dag_processing.dagbag import DagBag
from binlake_airflow import settings
dag = DagBag(dag_folder=sys.argv[1]).dags["binlake_transactions"]
out = {}
for task_id in ("assemble", "apply_tables"):
    task = dag.get_task(task_id)
    task.start, task.end = sys.argv[3], sys.argv[4]
    task.prepare(settings.parse(json.loads(sys.argv[2])), types.SimpleNamespace(host="local[2]"),
                 (task.start, task.end))
    out[task_id] = task.conf.get("spark.driver.extraJavaOptions")
print(json.dumps(out))
"""


def test_a_local_range_the_driver_reads_gets_the_class_archive_and_the_short_jvm(airflow, tmp_path):
    # The samples' range is one the driver reads itself (settings.in_driver), and one of few
    # transactions to apply (settings.for_apply): C1 only for both jobs; a local
    # master's JVM maps the class archive make install made (binlake.spark.classes). Both, in that
    # order: the archive's options first, so that the range's (and a user's) come last and win.
    import subprocess

    from binlake.spark.settings import JAVA_OPTIONS, SHORT_JVM, class_sharing
    from tests.conftest import require
    from tests.support.scanning import REPO

    require(bool(class_sharing()), "the archive of Spark's classes (make install)")
    store = tmp_path / "archive"
    mysql_samples = next(f for f in sample_files() if "/mysql-" in f).rsplit("/", 1)[0]
    archive(DirSource(mysql_samples), open_store(f"file://{store}"), "s")
    start, end = commit_range(store)
    variable = {"store": f"file://{store}", "warehouse": str(tmp_path / "warehouse"),
                "sources": [{"name": "s", "url": f"dir://{mysql_samples}"}]}
    af = airflow()
    out = subprocess.run([str(Path(af.env["PATH"].split(os.pathsep)[0]) / "python"), "-c", PREPARED,
                          str(REPO / "dags"), json.dumps(variable), start, end], env=af.env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    short = f"{class_sharing()} {SHORT_JVM[JAVA_OPTIONS]}"
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"assemble": short, "apply_tables": short}


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
    # The source is down and nothing reached the archive: once archive_wait_seconds have passed
    # since the interval ended and since the run began (0 here: at once), wait_for_archive fails
    # on its poke (not "running" for hours), the message naming the source, how far its archive
    # got and the archive DAG.
    settings = {"store": f"file://{tmp_path / 'archive'}", "warehouse": str(tmp_path / "warehouse"),
                "sources": [{"name": "db1", "url": "mysql://root@127.0.0.1:9"}], "archive_wait_seconds": 0}
    af = airflow({"AIRFLOW_VAR_BINLAKE": json.dumps(settings)})
    run = af.dags_test("binlake_transactions", conf={"start": "2026-11-01T10:00:00Z", "end": "2026-11-01T11:00:00Z"})
    assert run["state"] == "failed"
    assert run["tasks"]["wait_for_archive"] == "failed" and run["tasks"]["assemble"] == "upstream_failed"
    assert ("the archive has not reached the interval's end 2026-11-01T11:00:00.000000Z" in run["output"]
            and "db1 (archived up to nothing yet)" in run["output"] and "binlake_archive" in run["output"]), \
        run["output"][-3000:]


def test_a_final_sources_interval_waits_until_its_files_are_archived(airflow, tmp_path):
    # A final source (old binlogs) is complete once every file it lists is archived: before the
    # archive's first run has copied them, its interval waits (it was assembled at once, from an
    # archive still being written: the demo's first run); after, the sensor passes.
    mysql_samples = next(f for f in sample_files() if "/mysql-" in f).rsplit("/", 1)[0]
    store = tmp_path / "archive"
    settings = {"store": f"file://{store}", "warehouse": str(tmp_path / "warehouse"),
                "sources": [{"name": "s", "url": f"dir://{mysql_samples}", "final": True}]}
    af = airflow({"AIRFLOW_VAR_BINLAKE": json.dumps(settings), "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO"})
    interval = json.dumps({"start": "2026-11-22T11:00:00Z", "end": "2026-11-22T12:00:00Z"})
    first = af.cli("tasks", "test", "binlake_transactions", "wait_for_archive", "-t", interval, check=False)
    text = first.stdout + first.stderr
    assert "new_state=up_for_reschedule" in text and "s (8 of its files not archived yet" in text, text[-3000:]
    archive(DirSource(mysql_samples), open_store(f"file://{store}"), "s")
    second = af.cli("tasks", "test", "binlake_transactions", "wait_for_archive", "-t", interval, check=False)
    assert "new_state=success" in second.stdout + second.stderr, (second.stdout + second.stderr)[-3000:]


def test_a_failing_suite_fails_the_run_at_validate_with_the_jobs_report(airflow, spark_submit, tmp_path):
    """The assemble job runs the suites in its own Spark session (`--validate-as`: its driver on
    this worker, a local warehouse) and the validate task reads their report. On the recorded
    MySQL binlogs with their third XID event made ignorable (tests/test_validate.py's damage: that
    transaction never ends), the run fails at validate after assemble succeeded; the report says
    FAILED on the outcome, and it is the only validation made: the job's, named in its log. The
    source tables are not applied: apply_tables does not run, and no source's state is written."""
    src, store, (start, end) = _damaged_archive(tmp_path)
    settings = {"store": f"file://{store}", "warehouse": str(tmp_path / "warehouse"),
                "sources": [{"name": "db", "url": f"dir://{src}", "final": True}]}
    af = airflow({"AIRFLOW_VAR_BINLAKE": json.dumps(settings), "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO"})
    run = af.dags_test("binlake_transactions", conf={"start": start, "end": end})
    assert run["state"] == "failed", run["output"][-3000:]
    assert run["tasks"] == {"wait_for_archive": "success", "assemble": "success", "validate": "failed",
                            "apply_tables": "upstream_failed", "publish_report": "upstream_failed"}, \
        run["output"][-3000:]
    assert not (tmp_path / "warehouse" / "tables").exists()
    (made,) = (tmp_path / "warehouse" / "quality" / "runs").iterdir()
    text = run["output"]
    assert f"then validating as {made.name}" in text and "the suites ran in the assemble job's Spark session" in text
    assert "validation failed for" in text
    report = json.loads((made / "results.json").read_text())["report"]
    assert report["success"] is False
    assert "outcome: expect_column_values_to_not_be_in_set" in {f["description"] for s in report["suites"]
                                                               for f in s["failed"]}


def _damaged_archive(tmp_path: Path) -> tuple[Path, Path, tuple[str, str]]:
    """The recorded MySQL binlogs with their third XID made ignorable, archived: their directory,
    the archive and its commit range."""
    from tests.support.scanning import DATA
    from tests.test_validate import BINLOG_VARIANTS

    src = tmp_path / "binlogs"
    src.mkdir()
    for f in sorted((DATA / "mysql").glob("binlog.0*")):
        shutil.copy(f, src / f.name)
    BINLOG_VARIANTS["dropped_xid"](src)
    store = tmp_path / "archive"
    archive(DirSource(str(src)), open_store(f"file://{store}"), "db")
    return src, store, commit_range(store)


def test_validate_runs_the_suites_itself_when_the_job_did_not(airflow, tmp_path):
    """Where the assemble job could not validate (a cluster-mode driver, or no XCom from it), the
    validate task runs the suites in a local SparkSession of its own. The interval is assembled
    by `binlake assemble` without --validate, then the task runs alone (`airflow tasks test`: no
    assemble XCom). The data is the recorded MySQL binlogs with their third XID made ignorable
    (tests/test_validate.py's damage: that transaction never ends), so the outcome suite fails:
    the task fails with the report it made, the only validation in the warehouse."""
    from binlake.splits.times import parse_time
    from tests.support.scanning import run_cli

    src, store, (start, end) = _damaged_archive(tmp_path)
    warehouse = tmp_path / "warehouse"
    done = run_cli("assemble", "--store", f"file://{store}", "--warehouse", str(warehouse), "--start", start,
                   "--end", end)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not (warehouse / "quality").exists()  # the job did not validate
    settings = {"store": f"file://{store}", "warehouse": str(warehouse),
                "sources": [{"name": "db", "url": f"dir://{src}", "final": True}]}
    af = airflow({"AIRFLOW_VAR_BINLAKE": json.dumps(settings), "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO"})
    out = af.cli("tasks", "test", "binlake_transactions", "validate", "-t", json.dumps({"start": start, "end": end}),
                 check=False)
    text = out.stdout + out.stderr  # `tasks test` exits 0 whatever the task did: its log says
    assert "new_state=failed" in text and "AirflowFailException: validation failed for" in text, text[-3000:]
    assert "the suites ran in the assemble job's Spark session" not in text
    (made,) = (warehouse / "quality" / "runs").iterdir()
    report = json.loads((made / "results.json").read_text())["report"]
    assert report["success"] is False
    assert [parse_time(report["start"]), parse_time(report["end"])] == [parse_time(start), parse_time(end)]
    assert "outcome: expect_column_values_to_not_be_in_set" in {f["description"] for s in report["suites"]
                                                               for f in s["failed"]}


def _interpreter(root: Path, body: str) -> Path:
    """An interpreter at its own path with this venv's packages (a pyvenv.cfg and a link to the
    venv's lib beside it): to Spark, a Python of its own. `body` runs first in its bash launcher."""
    venv = Path(sys.prefix)
    (root / "bin").mkdir(parents=True)
    shutil.copy(venv / "pyvenv.cfg", root / "pyvenv.cfg")
    (root / "lib").symlink_to(venv / "lib")
    python = root / "bin" / "python"
    python.write_text(f'#!/bin/bash\n{body}\nexec -a "$0" {os.path.realpath(sys.executable)} "$@"\n')
    python.chmod(0o755)
    (root / "bin" / "python3").symlink_to(python)
    return python


def test_executors_of_a_standalone_worker_run_the_workers_python(airflow, spark_submit, tmp_path):
    """The compose stack's Spark layout outside Docker: a standalone master and worker started by
    the services' own commands and environment, the worker's `python3` not the driver's
    interpreter, and the assemble task as the scheduler runs it. PySpark's executors run the
    interpreter the driver names (PYSPARK_PYTHON in the driver's environment, else `python3`
    on the worker's PATH). The driver's interpreter refuses to be a PySpark worker, as the
    Airflow image's cannot be one on a Spark worker: the job passes only if every executor ran
    the worker's own Python."""
    import subprocess

    from binlake.local.airflow import free_port

    driver = _interpreter(tmp_path / "driver", 'case " $* " in *" pyspark.daemon "*|*" pyspark.worker "*)\n'
                          '  echo "an executor ran the driver\'s interpreter $0" >&2; exit 97;; esac')
    used = tmp_path / "worker-python.log"
    worker_python = _interpreter(tmp_path / "worker", f'echo "$*" >> {used}')
    store = tmp_path / "archive"
    mysql_samples = next(f for f in sample_files() if "/mysql-" in f).rsplit("/", 1)[0]
    archive(DirSource(mysql_samples), open_store(f"file://{store}"), "s")
    start, end = commit_range(store)

    port, ui = free_port(), free_port()
    spark_class = str(Path(sys.executable).parent / "spark-class")
    import pyspark

    # the image's SPARK_HOME is pyspark's package too (spark-class finds it by the interpreter)
    # (and no PYSPARK_PYTHON: a local session earlier in this process sets it, as the images do not)
    clean = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env = {**clean, "SPARK_HOME": os.path.dirname(pyspark.__file__), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_WORKER_DIR": str(tmp_path / "spark-work")}
    # docker-compose.yml's spark-master and spark-worker commands, on loopback
    services = [subprocess.Popen([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                  "--port", str(port), "--webui-port", str(ui)], env=env, start_new_session=True,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        services.append(subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}", "--host", "127.0.0.1",
             "--webui-port", str(free_port())],
            # compose's environment; the image's python3 is the worker's own (first on its PATH)
            env={**env, "PATH": f"{worker_python.parent}:{env['PATH']}", "PYSPARK_PYTHON": "python3",
                 "SPARK_WORKER_CORES": "1", "SPARK_WORKER_MEMORY": "1g"},
            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        _wait_for_worker(f"http://127.0.0.1:{ui}/json/")

        settings = {"store": f"file://{store}", "warehouse": str(tmp_path / "warehouse"),
                    "sources": [{"name": "s", "url": f"dir://{mysql_samples}", "final": True}],
                    # compose's: the driver (in the scheduler) reachable by the executors
                    "spark_conf": {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                                   "spark.executor.memory": "512m"}}
        af = airflow({"AIRFLOW_VAR_BINLAKE": json.dumps(settings), "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
                      "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "spark://127.0.0.1",
                                                                "port": port})})
        for name in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
            af.env.pop(name, None)
        # the task in the driver's interpreter, as the Airflow image's scheduler runs it
        out = subprocess.run([str(driver), "-m", "airflow", "tasks", "test", "binlake_transactions", "assemble",
                              "-t", json.dumps({"start": start, "end": end})], env=af.env, capture_output=True,
                             text=True, timeout=900)
    finally:
        for proc in reversed(services):
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
    text = out.stdout + out.stderr
    assert out.returncode == 0 and "an executor ran the driver's interpreter" not in text, text[-4000:]
    assert f"--master spark://127.0.0.1:{port}" in text  # the provider built spark-submit from the connection
    assert "pyspark.daemon" in used.read_text()  # the executors started the worker's Python
    # the samples' own count of the MySQL server's transactions (tests.support.truth)
    assert sum(lake(tmp_path / "warehouse")["transactions"].values()) == samples_truth("mysql")["transactions"]


def _wait_for_worker(status: str, timeout: float = 120) -> None:
    """Until the master's status (its web UI's JSON) counts a live worker; any not-ready answer
    (refused, an empty body while it starts, a 503) is asked again until the deadline."""
    from tests.support.waiting import json_at, until

    until(lambda: json_at(status).get("aliveworkers", 0) >= 1, "a Spark worker registered with the master", timeout)
