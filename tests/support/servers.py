"""Real MySQL 9.x and MariaDB 10.11 servers for the tests, the benchmarks and the test data.

MySQL: Debian's stable archive has none, so the `sid` packages (mysql-server-core,
mysql-client-core and every library they need, sid's libc included) are fetched with a
private apt configuration — its sources list written at run time from the mirror already
in the machine's apt sources, signatures checked against the system's archive keyring —
and unpacked with `dpkg -x` into a prefix under the cache. The programs run through that
prefix's own dynamic loader, so the system's libraries are never touched.

MariaDB 10.11 comes from Debian stable with the system's apt (server and client cores only;
no service is started). `install all` also makes sure of PostgreSQL's server programs (Debian
stable's), which `binlake airflow` runs its metadata database with.

Downloads and the unpacked prefix are cached in ${BINLAKE_CACHE:-~/.cache/binlake}: a warm
install does no network and takes well under a second.

    python -m tests.support.servers install|start|stop|status [mysql|mariadb|all]
"""

from __future__ import annotations

import argparse
import atexit
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pymysql

CACHE = Path(os.environ.get("BINLAKE_CACHE", Path.home() / ".cache" / "binlake"))
MYSQL_PACKAGES = ("mysql-server-core", "mysql-client-core")
# Perl only serves scripts we never run.
_SKIP = ("perl", "libperl", "libgdbm", "libdb5")
FLAVORS = ("mysql", "mariadb")


def ci() -> bool:
    """Whether this is CI, where a missing server fails the run (CI=1, true, yes, on)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes", "on")


def _run(argv: list, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv))} failed ({proc.returncode}):\n"
                           f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return proc


# -- install -------------------------------------------------------------------------------

def _mirror() -> str:
    """The Debian mirror this machine already uses (never written into the repository)."""
    deb822 = Path("/etc/apt/sources.list.d/debian.sources")
    if deb822.exists():
        for line in deb822.read_text().splitlines():
            if line.startswith("URIs:"):
                return line.split()[1]
    legacy = Path("/etc/apt/sources.list")
    if legacy.exists():
        for line in legacy.read_text().splitlines():
            parts = line.split()
            if parts and parts[0] == "deb":
                return next(p for p in parts[1:] if "://" in p)
    raise RuntimeError("no Debian mirror found in /etc/apt/sources.list(.d)")


class _SidApt:
    """apt-get/apt-cache against Debian sid through a private configuration."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.opts = [
            "-o", f"Dir::Etc::SourceList={root / 'sources.list'}",
            "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", f"Dir::State::Lists={root / 'lists'}",
            "-o", f"Dir::Cache={root / 'cache'}",
            "-o", f"Dir::State::Status={root / 'status'}",
            "-o", "Debug::NoLocking=1",
            "-o", "APT::Sandbox::User=root",
        ]

    def update(self) -> None:
        for d in ("lists/partial", "cache/archives/partial"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        (self.root / "status").touch()
        keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
        (self.root / "sources.list").write_text(f"deb [signed-by={keyring}] {_mirror()} sid main\n")
        lists = list((self.root / "lists").glob("*Packages*"))
        if lists and time.time() - min(p.stat().st_mtime for p in lists) < 86400:
            return
        _run(["apt-get", "-q", *self.opts, "update"])

    def closure(self, packages: tuple[str, ...]) -> list[str]:
        out = _run(["apt-cache", *self.opts, "depends", "--recurse", "--no-recommends",
                    "--no-suggests", "--no-conflicts", "--no-breaks", "--no-replaces",
                    "--no-enhances", "--no-pre-depends", *packages]).stdout
        names = {ln.strip() for ln in out.splitlines() if ln and not ln.startswith((" ", "<"))}
        return sorted(n for n in names if not n.startswith(_SKIP))

    def download(self, packages: list[str], into: Path) -> None:
        into.mkdir(parents=True, exist_ok=True)
        _run(["apt-get", "-q", *self.opts, "download", *packages], cwd=into)


def mysql_prefix() -> Path:
    return CACHE / "mysql-prefix"


def _install_mysql() -> Path:
    prefix = mysql_prefix()
    stamp = prefix / ".installed"
    if stamp.exists():
        return prefix
    apt = _SidApt(CACHE / "apt-sid")
    apt.update()
    packages = apt.closure(MYSQL_PACKAGES)
    debs = CACHE / "apt-sid" / "debs"
    have = {p.name.split("_", 1)[0] for p in debs.glob("*.deb")} if debs.exists() else set()
    missing = [p for p in packages if p not in have]
    if missing:
        apt.download(missing, debs)
    tmp = prefix.with_name(prefix.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for deb in sorted(debs.glob("*.deb")):
        _run(["dpkg", "-x", str(deb), str(tmp)])
    shutil.rmtree(prefix, ignore_errors=True)
    tmp.rename(prefix)
    stamp.write_text(json.dumps(sorted(p.name for p in debs.glob("*.deb"))))
    return prefix


def _install_mariadb() -> Path:
    if (shutil.which("mariadbd") or Path("/usr/sbin/mariadbd").exists()) and shutil.which(
            "mariadb-install-db") and shutil.which("mariadb-binlog"):
        return Path("/usr")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    _run(["apt-get", "update", "-q"], env=env)
    # Only the cores: no init scripts, so nothing is started behind our back.
    _run(["apt-get", "install", "-y", "-q", "--no-install-recommends",
          "mariadb-server-core", "mariadb-client"], env=env)
    return Path("/usr")


def install_postgres() -> Path:
    """The PostgreSQL server programs `binlake airflow` runs its metadata database with
    (binlake.local.postgres), from Debian stable; nothing started here."""
    from binlake.local.postgres import bindir

    if (found := bindir()) is None:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        _run(["apt-get", "update", "-q"], env=env)
        _run(["apt-get", "install", "-y", "-q", "--no-install-recommends", "postgresql"], env=env)
        found = bindir()
        assert found is not None, "postgresql installed, yet no initdb/postgres in /usr/lib/postgresql"
    return found


def install(flavor: str) -> Path:
    """Install (or find in the cache) a flavor's server and client tools; returns the prefix."""
    if flavor == "mysql":
        return _install_mysql()
    if flavor == "mariadb":
        return _install_mariadb()
    raise ValueError(f"unknown flavor {flavor!r}")


def mysql_argv(program: str) -> list[str]:
    """The argv that runs a program of the MySQL prefix through the prefix's own loader."""
    p = mysql_prefix()
    libs = ":".join(str(p / d) for d in ("usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu"))
    where = "usr/sbin" if program == "mysqld" else "usr/bin"
    return [str(p / "usr/lib64/ld-linux-x86-64.so.2"), "--library-path", libs, str(p / where / program)]


# -- run -----------------------------------------------------------------------------------

@dataclass
class Server:
    flavor: str
    version: str
    host: str
    port: int
    user: str
    password: str
    datadir: Path
    binlog_dir: Path
    binlog_basename: str
    pid: int
    mysqlbinlog: list[str]
    mysql_client: list[str]
    socket: Path = field(default=Path())
    workdir: Path = field(default=Path())
    argv: list[str] = field(default_factory=list)

    def connect(self, autocommit: bool = True, **kw) -> pymysql.connections.Connection:
        args = {"host": self.host, "port": self.port, "user": self.user, "password": self.password,
                "autocommit": autocommit, "charset": "utf8mb4", "connect_timeout": 10, **kw}
        return pymysql.connect(**args)

    def stop(self) -> None:
        """Stop by PID: SIGTERM, wait, then SIGKILL. Idempotent."""
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                pid, _ = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    return
            except ChildProcessError:  # not our child (started by another process)
                try:
                    os.kill(self.pid, 0)
                except ProcessLookupError:
                    return
            time.sleep(0.1)
        os.kill(self.pid, signal.SIGKILL)

    def kill(self) -> None:
        """SIGKILL, as a crash: no shutdown, no flush."""
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass

    def restart(self) -> None:
        """Start again on the same datadir and port (after stop() or kill())."""
        proc, conn = _launch(self.argv, self.socket, self.workdir / "error.log", f"{self.flavor} restart")
        conn.close()
        self.pid = proc.pid

    def to_json(self) -> str:
        d = asdict(self)
        return json.dumps({k: str(v) if isinstance(v, Path) else v for k, v in d.items()})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Each server a process starts gets its own server_id: the first of a flavor the id the test data
# were written with (1 MySQL, 2 MariaDB), the next ones 101/102, 201/202, ...; never the id of a
# binlog dump (binlake's default replica id is 0x62696E6C).
_STARTED = itertools.count()
_FIRST_ID = {"mysql": 1, "mariadb": 2}
_TEMPLATES: dict[str, Path] = {}  # flavor -> a datadir initialised once by this process
_BIND_RETRIES = 5


def _settings(flavor: str, server_id: int, overrides: dict) -> dict:
    common = {
        "server-id": server_id, "log-bin": "binlog", "binlog-format": "ROW", "binlog-checksum": "CRC32",
        "max-binlog-size": "1M", "innodb-buffer-pool-size": "64M", "performance-schema": "OFF",
        "sync-binlog": "1", "bind-address": "127.0.0.1", "binlog-row-metadata": "FULL",
        "character-set-server": "utf8mb4", "default-time-zone": "+00:00",
    }
    if flavor == "mysql":
        common |= {"gtid-mode": "ON", "enforce-gtid-consistency": "ON", "binlog-rows-query-log-events": "ON",
                   "mysqlx": "OFF", "innodb-redo-log-capacity": "16M", "secure-file-priv": ""}
    else:
        common |= {"binlog-annotate-row-events": "ON", "gtid-domain-id": "0", "log-bin-compress": "OFF",
                   "innodb-log-file-size": "16M"}
    common |= {k.replace("_", "-"): v for k, v in overrides.items()}
    return common


def _mysql_base() -> list[str]:
    p = mysql_prefix()
    return [f"--basedir={p / 'usr'}", f"--lc-messages-dir={p / 'usr/share/mysql'}",
            f"--character-sets-dir={p / 'usr/share/mysql/charsets'}", f"--plugin-dir={p / 'usr/lib/mysql/plugin'}"]


def _template(flavor: str) -> Path:
    """An initialised datadir for the flavor, made once per process: every server starts on a copy
    (initialising takes seconds, copying a fraction of one)."""
    done = _TEMPLATES.get(flavor)
    if done is not None:
        return done
    root = Path(tempfile.mkdtemp(prefix=f"binlake-{flavor}-datadir-"))
    atexit.register(shutil.rmtree, root, True)
    datadir, tmpdir = root / "data", root / "tmp"  # its own tmpdir, as start's servers have
    tmpdir.mkdir()
    if flavor == "mysql":
        _run([*mysql_argv("mysqld"), "--no-defaults", *_mysql_base(), f"--datadir={datadir}", "--user=root",
              "--initialize-insecure", "--innodb-redo-log-capacity=16M", f"--log-error={root / 'init.log'}",
              f"--tmpdir={tmpdir}"])
    else:
        _run(["mariadb-install-db", "--no-defaults", f"--datadir={datadir}", "--user=root",
              "--auth-root-authentication-method=normal", "--skip-test-db", f"--tmpdir={tmpdir}"])
    _TEMPLATES[flavor] = datadir
    return datadir


def start(flavor: str, workdir: Path, **overrides) -> Server:
    """A fresh server in `workdir`, listening on 127.0.0.1 on a free port.

    An override of None removes a setting, True passes a bare flag (e.g. disable_log_bin=True)."""
    install(flavor)
    workdir = Path(workdir).resolve()
    datadir = workdir / "data"
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copytree(_template(flavor), datadir, symlinks=True)
    (datadir / "auto.cnf").unlink(missing_ok=True)  # MySQL makes its server_uuid there: each server its own
    if flavor == "mysql":
        base, daemon = _mysql_base(), mysql_argv("mysqld")
        tools = (mysql_argv("mysqlbinlog"), mysql_argv("mysql"))
    else:
        base, daemon = [], [shutil.which("mariadbd") or "/usr/sbin/mariadbd"]
        tools = (["mariadb-binlog"], ["mariadb"])
    server_id = _FIRST_ID[flavor] + 100 * next(_STARTED)
    opts = [f"--{k}" if v is True else f"--{k}={v}" for k, v in _settings(flavor, server_id, overrides).items()
            if v is not None]
    log, sock = workdir / "error.log", workdir / "mysqld.sock"
    # Each server its own tmpdir: a server starting deletes every `#sql*` file of its tmpdir (the
    # temporary tables a crash left), those of the servers running beside it too (/tmp by default).
    tmpdir = workdir / "tmp"
    tmpdir.mkdir(exist_ok=True)
    for attempt in range(_BIND_RETRIES):
        # The port is free when chosen; another process may take it before the server binds it:
        # then the server says so and exits, and it starts again on another port.
        port = _free_port()
        argv = [*daemon, "--no-defaults", *base, f"--datadir={datadir}", "--user=root", f"--port={port}",
                f"--socket={sock}", f"--pid-file={workdir / 'mysqld.pid'}", f"--log-error={log}", f"--tmpdir={tmpdir}",
                *opts]
        try:
            proc, conn = _launch(argv, sock, log, f"{flavor} on 127.0.0.1:{port}")
            break
        except RuntimeError:
            if attempt + 1 == _BIND_RETRIES or not _port_taken(log):
                raise
            log.rename(workdir / f"error.{attempt}.log")
    with conn.cursor() as cur:
        # Tests connect over TCP from 127.0.0.1, as users' tools do.
        cur.execute("CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY ''")
        cur.execute("GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION")
        cur.execute("SELECT VERSION()")
        version = cur.fetchone()[0]
    conn.close()
    server = Server(flavor, version, "127.0.0.1", port, "root", "", datadir, datadir, "binlog", proc.pid,
                    tools[0], tools[1], sock, workdir, argv)
    (workdir / "server.json").write_text(server.to_json())
    return server


def _port_taken(log: Path) -> bool:
    """Whether a server's error log says its TCP port was in use (MySQL and MariaDB both word it so)."""
    text = log.read_text(errors="replace") if log.exists() else ""
    return "Address already in use" in text or "Do you already have another" in text


def _launch(argv: list[str], sock: Path, log: Path, what: str):
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 90
    while time.time() < deadline and proc.poll() is None:
        try:
            return proc, pymysql.connect(unix_socket=str(sock), user="root", autocommit=True)
        except (pymysql.err.MySQLError, OSError):  # no socket yet, refused, a handshake cut short
            time.sleep(0.2)
    if proc.poll() is None:
        proc.kill()
    tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no error log)"
    raise RuntimeError(f"{what} did not start; error log tail:\n{tail}")


def _load(workdir: Path) -> Server:
    d = json.loads((workdir / "server.json").read_text())
    for k in ("datadir", "binlog_dir", "socket", "workdir"):
        d[k] = Path(d[k])
    return Server(**d)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=("install", "start", "stop", "status"))
    ap.add_argument("flavor", nargs="?", default="all", choices=(*FLAVORS, "all"))
    ap.add_argument("--workdir", type=Path, default=CACHE / "run")
    args = ap.parse_args(argv)
    flavors = FLAVORS if args.flavor == "all" else (args.flavor,)
    if args.action == "install" and args.flavor == "all":
        print(f"postgres: server programs in {install_postgres()}")
    for flavor in flavors:
        wd = args.workdir / flavor
        if args.action == "install":
            t0 = time.time()
            prefix = install(flavor)
            print(f"{flavor}: installed in {prefix} ({time.time() - t0:.1f}s)")
        elif args.action == "start":
            shutil.rmtree(wd, ignore_errors=True)
            s = start(flavor, wd)
            print(f"{flavor} {s.version}: 127.0.0.1:{s.port} pid {s.pid} datadir {s.datadir}")
        elif args.action == "stop":
            if (wd / "server.json").exists():
                _load(wd).stop()
                print(f"{flavor}: stopped")
        else:
            if (wd / "server.json").exists():
                s = _load(wd)
                alive = Path(f"/proc/{s.pid}").exists()
                print(f"{flavor} {s.version}: 127.0.0.1:{s.port} pid {s.pid} {'running' if alive else 'stopped'}")
            else:
                print(f"{flavor}: not started")
    return 0


if __name__ == "__main__":
    sys.exit(main())
