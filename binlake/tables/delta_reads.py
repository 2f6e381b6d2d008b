"""The warehouse's Delta tables read with delta-rs, without a JVM: where a warehouse is as delta-rs
opens it (`storage`), and SQL over one table (`query`, `stream`). delta-rs's DataFusion
(`deltalake.QueryBuilder`) reads what the row versions' tables use (column mapping `name`, deletion
vectors; binlake.spark.versions).
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa


def storage(warehouse: str) -> tuple[str, dict[str, str]]:
    """The warehouse as delta-rs opens it: a local path, or s3:// with the AWS environment's
    endpoint and keys (an s3a:// warehouse, as Spark names it, is the same bucket)."""
    if warehouse.startswith(("s3a://", "s3://")):
        env = os.environ
        options = {k: env[k] for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                       "AWS_SESSION_TOKEN") if k in env}
        options["AWS_REGION"] = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
        if options.get("AWS_ENDPOINT_URL", "").startswith("http://"):
            options["AWS_ALLOW_HTTP"] = "true"
        return "s3://" + warehouse.split("://", 1)[1].rstrip("/"), options
    return str(Path(warehouse.removeprefix("file://"))), {}


def stream(uri: str, options: dict[str, str], version: int | None, sql: str) -> pa.RecordBatchReader:
    """`sql` over the Delta table at `uri` (as `t`; its newest version where `version` is None),
    through delta-rs's DataFusion: its batches as they are read."""
    from deltalake import DeltaTable, QueryBuilder

    table = DeltaTable(uri, version=version, storage_options=options)
    return pa.RecordBatchReader.from_stream(QueryBuilder().register("t", table).execute(sql))


def query(uri: str, options: dict[str, str], version: int | None, sql: str) -> pa.Table:
    """`stream`'s batches as one table."""
    return stream(uri, options, version, sql).read_all()
