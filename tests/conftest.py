"""Shared fixtures, and markers from them. In CI (`CI` set to 1, true or yes) a missing server, tool or
data set fails the run, never skips it.

Every test is marked by what it needs, from the fixtures it uses: `mysql`, `mariadb` (a real
server), `spark` (a JVM), `airflow`, `browser` (Chromium), `s3` (the loopback S3 endpoint).
`make test-fast` runs the tests that need none of the heavy ones.

The session servers (`mysql_server`, `mariadb_server`) are shared: a test may add databases and
rotate binlogs there, nothing more. A test module that resets, purges or changes a global setting
overrides the fixture with a server of its own (`mysql_factory` / `mariadb_factory`, one per
module), which the module's end stops.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support import module_order, servers, stuck
from tests.support.scanning import PUBLIC

# fixture -> the marker of what it needs
NEEDS = {"mysql_server": "mysql", "mysql_factory": "mysql", "mariadb_server": "mariadb",
         "mariadb_factory": "mariadb", "spark": "spark", "spark_submit": "spark", "airflow": "airflow",
         "chromium": "browser", "s3_endpoint": "s3"}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--record-module-durations", action="store_true",
                     help="write each module's measured seconds into tests/module_durations.json, "
                          "whose order the workers of `make test` take them in")


def pytest_configure(config: pytest.Config) -> None:
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # the controller sees every worker's reports
        config.pluginmanager.register(module_order.Clock(config.getoption("record_module_durations")))
    seconds = float(config.getini("faulthandler_timeout") or 0)
    if seconds > 0:  # with pytest's Python stacks of a test past its time, the JVMs' threads
        config.stash[WATCH] = stuck.Watch(seconds)


WATCH = pytest.StashKey["stuck.Watch"]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item):
    watch = item.config.stash.get(WATCH, None)
    timer = watch.start(item.nodeid) if watch is not None else None
    try:
        yield
    finally:
        if timer is not None:
            timer.cancel()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        callspec = getattr(item, "callspec", None)
        if callspec is not None:  # parametrize("name", ["mysql_server", ...]) + request.getfixturevalue(name),
            for v in callspec.params.values():  # or a tuple of parameters that names one
                used |= {x for x in (v if isinstance(v, tuple) else (v,)) if isinstance(x, str)}
        for marker in sorted({NEEDS[f] for f in used & NEEDS.keys()}):
            item.add_marker(marker)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        module_order.longest_first(items)


def pytest_terminal_summary(terminalreporter, config) -> None:
    """The random order's seed, even under -q, so that a failing order can be run again."""
    seed = config.getoption("randomly_seed", default=None) if config.pluginmanager.has_plugin("randomly") else None
    if seed is not None:
        terminalreporter.write_line(f"test order: pytest -p randomly --randomly-seed={seed}")


def require(condition: bool, what: str) -> None:
    if condition:
        return
    if servers.ci():
        pytest.fail(f"{what} is missing in CI")
    pytest.skip(f"{what} is missing")


@pytest.fixture(scope="session")
def public_binlogs():
    require(PUBLIC.is_dir(), f"the public binlog corpus ({PUBLIC})")
    return PUBLIC


def _factory(flavor: str, tmp_path_factory) -> Iterator[Callable[..., servers.Server]]:
    """start(**settings) -> a new server of the flavor; every one is stopped when the scope ends."""
    started: list[servers.Server] = []

    def start(**overrides) -> servers.Server:
        try:
            server = servers.start(flavor, tmp_path_factory.mktemp(flavor), **overrides)
        except Exception as e:  # noqa: BLE001 - reported as the reason
            require(False, f"a real {flavor} server ({e})")
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
        # A module's servers hold 100+ MiB each: the suite would need GiBs of /tmp by its end.
        # Their error logs stay beside the datadir for a failure's report.
        shutil.rmtree(server.datadir, ignore_errors=True)


@pytest.fixture(scope="module")
def mysql_factory(tmp_path_factory):
    """Starts real MySQL 9.x servers on 127.0.0.1 for one module: `mysql_factory(**settings)`."""
    yield from _factory("mysql", tmp_path_factory)


@pytest.fixture(scope="module")
def mariadb_factory(tmp_path_factory):
    """Starts real MariaDB 10.11 servers on 127.0.0.1 for one module."""
    yield from _factory("mariadb", tmp_path_factory)


@pytest.fixture(scope="session")
def mysql_server(tmp_path_factory):
    """A real MySQL 9.x on 127.0.0.1 shared by the session (see the module's doc), stopped at its end."""
    yield from _shared("mysql", tmp_path_factory)


@pytest.fixture(scope="session")
def mariadb_server(tmp_path_factory):
    """A real MariaDB 10.11 on 127.0.0.1 shared by the session, stopped at its end."""
    yield from _shared("mariadb", tmp_path_factory)


def _shared(flavor: str, tmp_path_factory) -> Iterator[servers.Server]:
    for start in _factory(flavor, tmp_path_factory):
        yield start()


@pytest.fixture(scope="session")
def s3_endpoint():
    """A real S3 HTTP endpoint on 127.0.0.1 (moto's server, in a process of its own: delta-rs holds
    this interpreter while it waits for an answer, which a server thread here could then not give),
    with the AWS chain pointed at it."""
    from tests.support.s3 import start_moto

    server, url = start_moto()
    saved = {k: os.environ.get(k) for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                           "AWS_DEFAULT_REGION")}
    os.environ.update(AWS_ENDPOINT_URL=url, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                      AWS_DEFAULT_REGION="us-east-1")
    yield url
    server.terminate()
    server.wait(timeout=30)
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session")
def spark(s3_endpoint):
    """A real local SparkSession (2 cores), made after the S3 endpoint so its workers see it."""
    try:
        from binlake.spark.job import session
    except ImportError as e:
        require(False, f"pyspark ({e})")
    spark = session("local[2]", app="binlake-tests", conf={"spark.ui.enabled": "false",
                                                           "spark.sql.shuffle.partitions": "4"})
    spark.sparkContext.setLogLevel("ERROR")
    yield spark
    spark.stop()


@pytest.fixture(scope="session")
def spark_submit() -> Path:
    """spark-submit of this install, for tests that run the job in its own JVM (`binlake assemble`,
    `binlake validate`, spark-submit itself)."""
    import sys

    path = Path(sys.executable).parent / "spark-submit"
    require(path.exists() and shutil.which("java") is not None, "spark-submit and Java 17")
    return path


@pytest.fixture(scope="module")
def airflow(tmp_path_factory) -> Iterator[Callable[..., object]]:
    """airflow(env=…, keep_aws_env=…, database=…) -> a real Airflow in a new temporary home
    (tests.support.airflow); the services and databases any of them started are stopped when the
    module ends."""
    from tests.support.airflow import Airflow

    made: list[Airflow] = []

    def make(env: dict[str, str] | None = None, keep_aws_env: bool = False, database: str = "sqlite") -> Airflow:
        af = Airflow(tmp_path_factory.mktemp("airflow"), env, keep_aws_env, database)
        made.append(af)
        return af

    yield make
    for af in made:
        af.stop()


@pytest.fixture(scope="session")
def chromium():
    """Debian's Chromium, driven headless (tests.support.browser)."""
    from tests.support import browser

    require(browser.available(), "Debian's chromium (scripts/install-browser.sh)")
    return browser
