"""A real Airflow 3 for the tests: a temporary AIRFLOW_HOME, this checkout's DAGs, the `airflow`
command of the venv; `airflow dags test` runs on SQLite, or, with `database="postgres"`, a running
api-server + scheduler + dag-processor (LocalExecutor) on 127.0.0.1 for backfills and the browser,
on a private PostgreSQL as `binlake airflow` runs them (SQLite's one write lock stalls a running
api-server: binlake.local.postgres)."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
from pathlib import Path

from binlake.local.airflow import AIRFLOW, POOL_COMMAND, SERVICES, Services
from binlake.local.demo import airflow_env
from binlake.local.postgres import Postgres
from tests.support.waiting import until


def api_token(url: str, password: str) -> str:
    """A JWT for user admin from a running api-server (POST /auth/token), for its REST API."""
    import urllib.request

    req = urllib.request.Request(url + "/auth/token", method="POST", headers={"Content-Type": "application/json"},
                                 data=json.dumps({"username": "admin", "password": password}).encode())
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())["access_token"]


class Airflow:
    def __init__(self, home: Path, env: dict[str, str] | None = None, keep_aws_env: bool = False,
                 database: str = "sqlite") -> None:
        self.home = home
        home.mkdir(parents=True, exist_ok=True)
        self.env = airflow_env(home)
        if not keep_aws_env:  # the DAGs must reach S3 through their AWS connection, not the test's environment
            self.env = {k: v for k, v in self.env.items() if not k.startswith("AWS_")}
        self.env.update(env or {})
        self.env["AIRFLOW__CORE__PARALLELISM"] = "2"
        self.services = Services(home, self.env, SERVICES[:3])  # no triggerer: no DAG defers
        self.port = 0
        self.postgres = Postgres(home) if database == "postgres" else None
        if self.postgres is not None:
            self.env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = self.postgres.start()
        try:
            self._migrate()
            if self.postgres is not None:  # the scheduler starts no task of a missing pool (`dags test` ignores pools)
                self.cli(*POOL_COMMAND)
        except BaseException:  # not made, so no fixture stops it: its database stopped here
            self.stop()
            raise

    def _migrate(self) -> None:
        """`airflow db migrate`; on SQLite, once per test session and worker: later homes start from a
        copy of the first migrated database (it holds no home's data: Alembic's version, the default
        pool, the log templates), which spares each home an `airflow` command's start and migration."""
        if self.postgres is not None:
            self.cli("db", "migrate")
            return
        template = self.home.parent / "airflow-migrated.db"  # beside the homes, one per pytest worker
        db = self.home / "airflow.db"
        if template.is_file():
            shutil.copyfile(template, db)
            return
        self.cli("db", "migrate")
        partial = template.with_suffix(".tmp")  # renamed whole: a later home never copies half a file
        shutil.copyfile(db, partial)
        partial.rename(template)

    def cli(self, *args: str, check: bool = True, timeout: float = 1200) -> subprocess.CompletedProcess:
        proc = subprocess.run([AIRFLOW, *args], env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"airflow {' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-4000:]}\n"
                                 f"{proc.stderr[-4000:]}")
        return proc

    def dags_test(self, dag_id: str, conf: dict | None = None) -> dict:
        """`airflow dags test`; the run it made (run_id, state), with the state of each of its
        tasks, read from the metadata database: an `airflow` command costs seconds to start."""
        ((before,),) = self.metadata("SELECT COALESCE(MAX(id), 0) FROM dag_run WHERE dag_id = :dag", dag=dag_id)
        args = ["dags", "test", dag_id] + (["-c", json.dumps(conf)] if conf else [])
        out = self.cli(*args, check=False)  # a failed run is an outcome the test reads, like a success
        ((run_id, state),) = self.metadata("SELECT run_id, state FROM dag_run WHERE dag_id = :dag AND id > :id",
                                           dag=dag_id, id=before)
        return {"run_id": run_id, "state": state, "output": out.stdout + out.stderr,
                "tasks": self.task_states(dag_id, run_id)}

    def metadata(self, query: str, **params: object) -> list[tuple]:
        """Rows of Airflow's metadata database (SQLite, or the private PostgreSQL), as the
        services and the CLI read it."""
        from sqlalchemy import create_engine, text

        engine = create_engine(self.env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"])
        try:
            with engine.connect() as conn:
                return [tuple(r) for r in conn.execute(text(query), params)]
        finally:
            engine.dispose()

    def runs(self, dag_id: str) -> list[dict]:
        """The DAG's runs (run_id, state, logical_date, end_date: ISO 8601 in UTC, or None), from
        the metadata database: tests poll this while a scheduler and Spark share two cores, and an
        `airflow dags list-runs` costs seconds of CPU to start."""
        rows = self.metadata("SELECT run_id, state, logical_date, end_date FROM dag_run WHERE dag_id = :dag "
                             "ORDER BY id", dag=dag_id)
        return [{"run_id": run_id, "state": state, "logical_date": _iso(logical), "end_date": _iso(ended)}
                for run_id, state, logical, ended in rows]

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str]:
        """Each task's state in the run ("task" or "task[index]" for a mapped one)."""
        rows = self.metadata("SELECT task_id, map_index, state FROM task_instance WHERE dag_id = :dag "
                             "AND run_id = :run", dag=dag_id, run=run_id)
        return {task if index == -1 else f"{task}[{index}]": state for task, index, state in rows}

    # -- the running services ------------------------------------------------------------------

    def start(self) -> str:
        """api-server, scheduler (no log server: logs are read from disk) and dag-processor on
        loopback (binlake.local.airflow.Services); a restart keeps the address tests were given."""
        url = self.services.start(self.port)
        self.port = self.services.port
        return url

    def password(self) -> str:
        return self.services.password()

    def wait_runs(self, dag_id: str, run_ids: set[str] | None = None, count: int = 0, timeout: float = 1200) -> list:
        """Wait until the named runs (or `count` runs) have ended; returns them."""
        def ended() -> list | None:
            runs = [r for r in self.runs(dag_id) if run_ids is None or r["run_id"] in run_ids]
            done = [r for r in runs if r["state"] in ("success", "failed")]
            return runs if len(done) >= max(count, len(run_ids or ())) and len(done) == len(runs) else None

        return until(ended, f"{dag_id}: runs ended", timeout, every=5)

    def wait_backfills(self, dag_id: str, timeout: float = 300) -> None:
        """Wait until the scheduler has marked every backfill of the DAG complete (a loop after its
        last run ends): Airflow refuses a new backfill while one is running. Read from the
        metadata database (no CLI lists backfills)."""
        assert self.postgres is not None, "backfills are made on a running Airflow: database='postgres'"

        def done() -> bool:
            conn = self.postgres.connect()
            try:
                with conn.cursor() as cur:
                    cur.execute("SELECT COUNT(*) FROM backfill WHERE dag_id = %s AND completed_at IS NULL", (dag_id,))
                    return cur.fetchone()[0] == 0
            finally:
                conn.close()

        until(done, f"{dag_id}: every backfill complete", timeout, every=2)

    def wait_rerun(self, dag_id: str, run_id: str, ended: str, timeout: float = 1200) -> dict:
        """Wait until a run that ended at `ended` has run again and ended."""
        def again() -> dict | None:
            (run,) = [r for r in self.runs(dag_id) if r["run_id"] == run_id]
            return run if run["state"] in ("success", "failed") and run["end_date"] != ended else None

        return until(again, f"{dag_id} {run_id} run again", timeout, every=5)

    def stop(self) -> None:
        """The services, then the database (its data directory removed: the home is temporary)."""
        self.services.stop()
        if self.postgres is not None:
            data = self.postgres.datadir
            self.postgres.stop()
            shutil.rmtree(data, ignore_errors=True)


def _iso(value: dt.datetime | str | None) -> str | None:
    """A metadata time as the REST API and the CLI print it: PostgreSQL gives datetimes, SQLite
    the text Airflow stored (UTC)."""
    if value is None:
        return None
    t = value if isinstance(value, dt.datetime) else dt.datetime.fromisoformat(value)
    return (t if t.tzinfo else t.replace(tzinfo=dt.UTC)).astimezone(dt.UTC).isoformat()
