"""`binlake airflow`: a local Airflow 3 for binlake on this machine, without Docker.

The services a deployment runs (api-server, scheduler, dag-processor, triggerer; LocalExecutor)
on a metadata database in one home directory (a private PostgreSQL cluster, binlake.local.postgres;
or SQLite on request), with this checkout's dags/ and plugins/, the
`binlake` Variable from a JSON file (or the demo's embedded defaults), `spark_default` as a local
master of this machine's cores, every listener on 127.0.0.1 (the log servers are off: logs are
read from the home's disk), and a short schedule so that the first interval lands within
minutes. It prints the UI's address and login and runs until interrupted; then it stops every
process it started (a task's spark-submit and JVM included). The library never imports Airflow:
it drives the `airflow` command installed beside it, as `binlake demo` does.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from binlake.errors import BinlakeError
from binlake.local.demo import airflow_env
from binlake.local.postgres import Postgres

AIRFLOW = str(Path(sys.executable).parent / "airflow")
SERVICES = (["api-server"], ["scheduler", "--skip-serve-logs"], ["dag-processor"], ["triggerer", "--skip-serve-logs"])
DEFAULT_HOME = Path.home() / ".local" / "share" / "binlake" / "airflow"  # with --config: the user's pipeline
DEMO_HOME = DEFAULT_HOME.with_name("airflow-demo")  # without: the demo's own runs and assets
KIND = "binlake-pipeline"  # the home's file naming which pipeline it runs: "demo" or "config"
DEFAULT_SCHEDULE = "*/5 * * * *"  # binlake_transactions: an interval lands within minutes
# The pool binlake's Spark jobs run in (plugins/binlake_airflow/spark_submit.py): one slot, the
# warehouse's one writer at a time. Airflow never starts a task of a pool that does not exist, so
# every deployment makes it (docs/airflow.md, "The writers' pool"): this command, once.
WRITERS_POOL = "binlake_warehouse"
POOL_COMMAND = ("pools", "set", WRITERS_POOL, "1", "the Spark jobs of binlake: one writer of the warehouse at a time")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Services:
    """Airflow's services on 127.0.0.1 for one AIRFLOW_HOME: `start()` (a port given, or a free
    one), `stop()`. A task's processes (spark-submit, its JVM) live in their service's process
    group, and none outlives it."""

    def __init__(self, home: Path, env: dict[str, str], services: tuple[list[str], ...] = SERVICES) -> None:
        self.home, self.env, self.services = home, env, services
        self.procs: list[tuple[subprocess.Popen, object]] = []
        self.port = 0

    def start(self, port: int = 0) -> str:
        """The services, and the UI's address. The api-server's port must be known before it starts
        (the workers are told where it is): without one given, a free one is chosen, and when
        another process binds it first the api-server says so and exits: they start again on
        another."""
        for attempt in range(5):
            self.port = port or free_port()
            try:
                return self._start()
            except BinlakeError:
                taken = "address already in use" in (self.home / "api-server.log").read_text(errors="replace").lower()
                self.stop()
                if port or not taken or attempt == 4:
                    raise
        raise AssertionError("unreachable")

    def _start(self) -> str:
        self.env.update({
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(self.port),
            "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{self.port}",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{self.port}/execution/",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
            "AIRFLOW__API_AUTH__JWT_SECRET": self.env.get("AIRFLOW__API_AUTH__JWT_SECRET") or os.urandom(16).hex(),
            "AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK": "False",  # its server would listen on 0.0.0.0
        })
        self.env.setdefault("AIRFLOW__CORE__PARALLELISM", str(max(2, os.cpu_count() or 2)))
        for args in self.services:
            log = open(self.home / f"{args[0]}.log", "ab")  # noqa: SIM115 - closed in stop()
            proc = subprocess.Popen([AIRFLOW, *args], env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            self.procs.append((proc, log))
        self._wait_listening()
        return f"http://127.0.0.1:{self.port}"

    def _wait_listening(self, timeout: float = 120) -> None:
        """Until this api-server answers as Airflow on its port (not just anything listening there)."""
        import urllib.request

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v2/version", timeout=5) as r:
                    if "version" in json.loads(r.read()):
                        return
            except (OSError, ValueError):  # not up yet (refused, reset, not JSON)
                pass
            time.sleep(0.5)
        raise BinlakeError(f"the api-server is not listening on {self.port} after {timeout:.0f} s: see {self.home}")

    def check(self) -> None:
        """A service that exited is an error naming its log."""
        for proc, _ in self.procs:
            if proc.poll() is not None:
                name = str(proc.args[1])  # type: ignore[index]
                raise BinlakeError(f"airflow {name} exited {proc.returncode}: see {self.home}/{name}.log")

    def password(self) -> str:
        """The generated password of user `admin` (the simple auth manager's file)."""
        return json.loads((self.home / "simple_auth_manager_passwords.json.generated").read_text())["admin"]

    def stop(self) -> None:
        for proc, _ in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc, log in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            with contextlib.suppress(ProcessLookupError):  # what the service started: gone with it
                os.killpg(proc.pid, signal.SIGKILL)
            log.close()  # type: ignore[attr-defined]
        self.procs = []


def local_env(home: Path, settings: dict | None, schedule: str, cores: int) -> dict[str, str]:
    """airflow_env (this checkout's DAGs, SQLite, loopback) with the user's exported connections
    and variables (AIRFLOW_CONN_*, AIRFLOW_VAR_*, docs/airflow.md), the Variable of the config
    file (over an exported one), a local Spark of `cores` (and as many shuffle partitions, not
    Spark's 200) as `spark_default` unless the user exports one, and the schedule, which the
    dag-processor, the scheduler and the CLI must all see."""
    env = airflow_env(home, users=True)
    if "AIRFLOW_CONN_SPARK_DEFAULT" not in os.environ:
        env["AIRFLOW_CONN_SPARK_DEFAULT"] = json.dumps({"conn_type": "spark", "host": f"local[{cores}]"})
    env["BINLAKE_TRANSACTIONS_SCHEDULE"] = schedule
    env["AIRFLOW__LOGGING__LOGGING_LEVEL"] = "INFO"  # the task logs: binlake's counts (Spark and GX stay at WARN)
    if settings is not None:
        conf = {"spark.sql.shuffle.partitions": str(2 * cores), **(settings.get("spark_conf") or {})}
        env["AIRFLOW_VAR_BINLAKE"] = json.dumps({**settings, "spark_conf": conf})
    return env


def run(home: Path, config: Path | None, *, port: int, schedule: str, stop: threading.Event | None = None,
        database: str = "postgres") -> int:
    """Start, unpause the DAGs, print where to look, run until interrupted (or `stop`), stop."""
    home = home.resolve()
    home.mkdir(parents=True, exist_ok=True)
    _own_pipeline(home, "config" if config is not None else "demo")
    settings = None
    if config is not None:
        try:
            settings = json.loads(config.read_text())
        except (OSError, ValueError) as e:
            raise BinlakeError(f"{config}: not the binlake Variable's JSON: {e}") from None
    env = local_env(home, settings, schedule, os.cpu_count() or 2)
    postgres = Postgres(home) if database == "postgres" else None
    services = Services(home, env)
    stop = stop or threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        if postgres is not None:
            env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = postgres.start()
        _cli(env, "db", "migrate")
        _cli(env, *POOL_COMMAND)
        url = services.start(port)
        _cli(env, "dags", "reserialize")
        for dag in ("binlake_archive", "binlake_transactions"):
            _cli(env, "dags", "unpause", dag)
        sourced = home / "env.sh"  # the airflow CLI needs the services' environment (a backfill, a test run)
        sourced.write_text("".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(env.items())
                                   if k.startswith(("AIRFLOW", "BINLAKE_")) or k == "PATH"))
        sourced.chmod(0o600)  # the database's password is in it
        db = f"PostgreSQL in {postgres.datadir}" if postgres is not None else "SQLite airflow.db"
        print(f"Airflow for binlake: {url}  (user admin, password {services.password()})\n"
              f"  home {home}: logs/ and each service's .log; metadata: {db}\n"
              f"  binlake_archive every 10 minutes, binlake_transactions on '{schedule}'\n"
              f"  the airflow CLI beside it: source {sourced}\n"
              "  Ctrl-C stops every service.", flush=True)
        while not stop.wait(5):
            services.check()
    finally:
        services.stop()
        if postgres is not None:
            postgres.stop()
        print("Airflow for binlake: stopped", flush=True)
    return 0


def default_home(config: Path | None) -> Path:
    return DEFAULT_HOME if config is not None else DEMO_HOME


def _own_pipeline(home: Path, kind: str) -> None:
    """A home runs one pipeline, the demo's or a configuration's: its database keeps the runs and
    Asset events of the one it ran, so the demo's successful intervals would be skipped by a
    backfill of the real sources (without `--reprocess-behavior completed`) and its assets stay."""
    marked = home / KIND
    was = marked.read_text().strip() if marked.exists() else kind
    if was != kind:
        raise BinlakeError(f"{home} holds the runs and assets of the {'demo' if was == 'demo' else 'configured'} "
                           f"pipeline: start the {'demo' if kind == 'demo' else 'configured one'} in another home "
                           f"(--home; by default {default_home(None if kind == 'demo' else Path('.'))}), or remove "
                           f"this one")
    marked.write_text(kind + "\n")


def _cli(env: dict[str, str], *args: str) -> None:
    proc = subprocess.run([AIRFLOW, *args], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BinlakeError(f"airflow {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
