"""Shared fixtures. In CI (CI=true) a missing server or data set fails the run, never skips it."""

from __future__ import annotations

import os

import pytest

from tests.support.scanning import PUBLIC


def require(condition: bool, what: str) -> None:
    if condition:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is missing in CI")
    pytest.skip(f"{what} is missing")


@pytest.fixture(scope="session")
def public_binlogs():
    require(PUBLIC.is_dir(), f"the public binlog corpus ({PUBLIC})")
    return PUBLIC


def _server(flavor: str, tmp_path_factory):
    from tests.support import servers

    try:
        server = servers.start(flavor, tmp_path_factory.mktemp(flavor))
    except Exception as e:  # noqa: BLE001 - reported as the reason
        require(False, f"a real {flavor} server ({e})")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def mysql_server(tmp_path_factory):
    """A real MySQL 9.x on 127.0.0.1, stopped when the session ends."""
    yield from _server("mysql", tmp_path_factory)


@pytest.fixture(scope="session")
def mariadb_server(tmp_path_factory):
    """A real MariaDB 10.11 on 127.0.0.1, stopped when the session ends."""
    yield from _server("mariadb", tmp_path_factory)


@pytest.fixture(scope="session")
def s3_endpoint():
    """A real S3 HTTP endpoint on 127.0.0.1 (moto's server), with the AWS chain pointed at it."""
    import socket

    from moto.server import ThreadedMotoServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    saved = {k: os.environ.get(k) for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                           "AWS_DEFAULT_REGION")}
    os.environ.update(AWS_ENDPOINT_URL=url, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                      AWS_DEFAULT_REGION="us-east-1")
    yield url
    server.stop()
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
