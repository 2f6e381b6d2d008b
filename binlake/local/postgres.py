"""A private PostgreSQL for a local Airflow's metadata: one cluster per Airflow home, on 127.0.0.1.

Airflow's services on SQLite share one write lock, and the api-server takes it on its event loop
(the audit log of every POST, the UI's Trigger button included): when another of its requests
holds the lock, the whole api-server stops answering, tasks miss their heartbeats and are
killed. PostgreSQL, Airflow's most tested backend, has no such lock. This uses the server
programs the machine has (Debian's `postgresql` package: /usr/lib/postgresql/N/bin); nothing is
installed system-wide and no system service is touched: the cluster is initialised on first use,
started for as long as the Airflow it serves, then stopped. The role `airflow` has a generated
password (scram-sha-256); the server listens on 127.0.0.1 and on a socket in its data directory.

PostgreSQL refuses to run as root: as root, the cluster runs as the `postgres` user, in a
directory that user can reach (under /var/tmp, named for the home, linked from the home).
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from binlake.errors import BinlakeError

DATABASE = "airflow"


def bindir() -> Path | None:
    """The directory of `initdb` and `postgres`: on PATH, else Debian's newest version."""
    found = shutil.which("initdb")
    if found and (real := Path(found).resolve()).with_name("postgres").exists():
        return real.parent  # the real directory: postgres finds its share/ from it
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"),
                      key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    return Path(versions[-1]).parent if versions else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: alive
        pass
    return True


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Postgres:
    """The cluster of one Airflow home: `start()` returns Airflow's SQLAlchemy URL, `stop()`."""

    def __init__(self, home: Path) -> None:
        self.home = home
        found = bindir()
        if found is None:
            raise BinlakeError("no PostgreSQL server programs (initdb, postgres) on PATH or in /usr/lib/postgresql: "
                               "install Debian's `postgresql` package, or run with --database sqlite")
        self.bin = found
        self.user: pwd.struct_passwd | None = None
        if os.geteuid() == 0:  # postgres will not run as root
            try:
                self.user = pwd.getpwnam("postgres")
            except KeyError:
                raise BinlakeError("PostgreSQL refuses to run as root and there is no `postgres` user to run it as: "
                                   "run as another user, or with --database sqlite") from None
        self.proc: subprocess.Popen | None = None
        self.log = home / "postgres.log"
        self.port = 0

    @property
    def datadir(self) -> Path:
        link = self.home / "postgres"
        if self.user is None:
            return link
        if not link.is_symlink():  # a directory the postgres user can reach, whatever the home's modes
            digest = hashlib.sha1(str(self.home.resolve()).encode()).hexdigest()[:12]
            link.symlink_to(Path("/var/tmp") / f"binlake-airflow-postgres-{digest}")
        return link.resolve()

    def _as_owner(self) -> dict:
        if self.user is None:
            return {}
        return {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}

    def _password(self) -> str:
        return (self.home / "postgres.password").read_text().strip()

    def _init(self) -> None:
        # As root the cluster is in /var/tmp, named for the home's path: a home with no link to it
        # is new, and a cluster there an earlier home's at the same path, left when it was deleted.
        orphan = self.user is not None and not (self.home / "postgres").is_symlink()
        data = self.datadir
        secret = self.home / "postgres.password"
        if (data / "PG_VERSION").exists():
            if secret.exists():
                return
            if not orphan:
                raise BinlakeError(f"{secret} is missing: without it nothing can log in to the cluster {data} "
                                   f"(remove {data} to start with a new one)")
            self._remove_orphan(data)
        data.mkdir(parents=True, exist_ok=True, mode=0o700)
        secret.write_text(secrets.token_urlsafe(18) + "\n")
        secret.chmod(0o600)
        # initdb's own copy, then gone (beside the directory: initdb wants it empty)
        with tempfile.NamedTemporaryFile("w", dir=data.parent, delete=False) as pw:
            pw.write(self._password() + "\n")
        if self.user is not None:
            os.chown(data, self.user.pw_uid, self.user.pw_gid)
            os.chown(pw.name, self.user.pw_uid, self.user.pw_gid)
        try:
            proc = subprocess.run([str(self.bin / "initdb"), "-D", str(data), "-U", DATABASE, "--pwfile", pw.name,
                                   "--auth", "scram-sha-256", "-E", "UTF8", "--no-locale"],
                                  capture_output=True, text=True, cwd=data, **self._as_owner())
        finally:
            os.unlink(pw.name)
        if proc.returncode != 0:
            raise BinlakeError(f"initdb {data} exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")

    def _remove_orphan(self, data: Path) -> None:
        """An earlier home's cluster (its password gone with it) removed, unless its server runs."""
        pid_file = data / "postmaster.pid"
        if pid_file.exists():
            pid = int(pid_file.read_text().split()[0])
            if _alive(pid):
                raise BinlakeError(f"{data}: the PostgreSQL of an earlier Airflow home at {self.home} still runs "
                                   f"(pid {pid}), and its password went with that home: stop it (kill -INT {pid}) "
                                   "and start again")
        shutil.rmtree(data)

    def start(self, timeout: float = 60) -> str:
        """Initialise the cluster if it is new, start it, create the database; Airflow's URL. A
        server that fails to come up is stopped: none is left running for no one."""
        self._init()
        try:
            self._serve(timeout)
            self._create_database()
        except BaseException:
            self.stop()
            raise
        return (f"postgresql+psycopg2://{DATABASE}:{self._password()}@127.0.0.1:{self.port}/{DATABASE}")

    def _serve(self, timeout: float) -> None:
        for attempt in range(5):
            self.port = _free_port()
            log = open(self.log, "ab")  # noqa: SIM115 - the server's, closed when it has started
            self.proc = subprocess.Popen(
                [str(self.bin / "postgres"), "-D", str(self.datadir), "-h", "127.0.0.1", "-p", str(self.port),
                 "-k", str(self.datadir), "-c", "max_connections=200"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=self.datadir, **self._as_owner())
            log.close()
            try:
                self._wait(timeout)
                break
            except BinlakeError:
                taken = "could not bind" in self.log.read_text(errors="replace")
                self.stop()
                if not taken or attempt == 4:
                    raise

    def connect(self, dbname: str = DATABASE):
        import psycopg2

        return psycopg2.connect(host="127.0.0.1", port=self.port, user=DATABASE, password=self._password(),
                                dbname=dbname, connect_timeout=5)

    def _wait(self, timeout: float) -> None:
        import psycopg2

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                said = self.log.read_text(errors="replace").strip().splitlines()[-2:]
                raise BinlakeError(f"postgres exited {self.proc.returncode if self.proc else '?'} ({self.log}): "
                                   + " ".join(said))
            try:
                self.connect("postgres").close()
                return
            except psycopg2.OperationalError:  # starting: refused, or "the database system is starting up"
                time.sleep(0.2)
        raise BinlakeError(f"postgres did not accept connections on 127.0.0.1:{self.port} in {timeout:.0f} s: "
                           f"see {self.log}")

    def _create_database(self) -> None:
        conn = self.connect("postgres")
        try:
            conn.autocommit = True  # CREATE DATABASE cannot run in a transaction
            with conn.cursor() as cur:
                cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,))
                if cur.fetchone() is None:
                    cur.execute(f"CREATE DATABASE {DATABASE}")
        finally:
            conn.close()

    def stop(self) -> None:
        """A fast shutdown (open sessions rolled back, data kept), waited for."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        with contextlib.suppress(ProcessLookupError):  # its own children: gone with it
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc = None
