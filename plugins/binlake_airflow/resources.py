"""binlake sources and stores opened with Airflow's connections (MySQL, AWS) instead of URLs with secrets."""

from __future__ import annotations

import logging
from functools import cache

from binlake_airflow.settings import Settings, SourceSpec

log = logging.getLogger(__name__)


def connection(conn_id: str, what: str):
    """The Airflow connection `conn_id` (named by the binlake Variable for `what`). One that is not
    defined fails the task at once: no retry defines it, and no fallback is taken (a provider's
    hook would go on with an empty connection: boto3's default credential chain, which on a
    machine with AWS credentials reaches real AWS; a default MySQL host)."""
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowFailException, AirflowNotFoundException

    try:
        return BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        raise AirflowFailException(
            f"{what}: the Airflow connection {conn_id!r} is not defined: add it (Admin > Connections, "
            f"`airflow connections add`, or the environment variable AIRFLOW_CONN_{conn_id.upper()})") from None


def open_source(spec: SourceSpec):
    """The binlake source of a spec: a MySQL connection's host, port, login and password, or a URL."""
    from binlake.archive.sources import MySQLSource
    from binlake.archive.sources import open_source as from_url

    if spec.url:
        return from_url(spec.url)
    assert spec.mysql_conn_id is not None
    conn = connection(spec.mysql_conn_id, f"source {spec.name}")
    url = f"mysql://{conn.login or 'root'}@{conn.host or '127.0.0.1'}:{conn.port or 3306}"
    return MySQLSource(url, password=conn.password or "")


def flush_binary_logs(spec: SourceSpec) -> None:
    """Close the active binlog file so that what was written until now can be archived."""
    from airflow.providers.mysql.hooks.mysql import MySqlHook

    assert spec.mysql_conn_id is not None
    connection(spec.mysql_conn_id, f"source {spec.name}")
    MySqlHook(mysql_conn_id=spec.mysql_conn_id).run("FLUSH BINARY LOGS")
    log.info("%s: FLUSH BINARY LOGS", spec.name)


def open_store(settings: Settings):
    """The archive store; s3:// goes through the AWS connection (its endpoint_url extra, its keys)."""
    from binlake.archive.stores import S3Store
    from binlake.archive.stores import open_store as from_url

    if settings.store.startswith("s3://") and settings.aws_conn_id:
        return S3Store(settings.store, client=_s3_client(settings.aws_conn_id))
    return from_url(settings.store)


@cache
def _s3_client(aws_conn_id: str):
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    connection(aws_conn_id, "the store")
    return S3Hook(aws_conn_id=aws_conn_id).get_conn()


def aws_environment(settings: Settings) -> dict[str, str]:
    """The AWS connection as the environment the Spark job reads: boto3 for an s3:// archive (and the
    warehouse's writer lease), S3A for an s3a:// warehouse (endpoint, keys, region). Passed as
    environment, never as settings on a command line that Airflow logs."""
    if not ((settings.store.startswith("s3://") or settings.warehouse.startswith("s3a://")) and settings.aws_conn_id):
        return {}
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    connection(settings.aws_conn_id, "the store")
    hook = S3Hook(aws_conn_id=settings.aws_conn_id)
    creds = hook.get_credentials()
    env = {"AWS_ACCESS_KEY_ID": creds.access_key, "AWS_SECRET_ACCESS_KEY": creds.secret_key}
    if creds.token:
        env["AWS_SESSION_TOKEN"] = creds.token
    if hook.conn_config.endpoint_url:
        env["AWS_ENDPOINT_URL"] = hook.conn_config.endpoint_url
    if hook.conn_config.region_name:
        env["AWS_DEFAULT_REGION"] = hook.conn_config.region_name
    return env
