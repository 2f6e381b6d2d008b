"""Test helpers for the warehouse: read its Delta tables back, and compare them with scans.

Tables are read with delta-rs (`deltalake`), not Spark, so the check shares no code with the job
and is the second engine of the tables: local paths and s3a:// warehouses (the S3 endpoint of the
AWS environment). Rows are compared as digests of their canonical JSON: exact, and small in memory
even for hundreds of thousands of row changes.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

from deltalake import DeltaTable

from binlake.records import ANOMALY_FIELDS, ROW_CHANGE_FIELDS, TRANSACTION_FIELDS

FIELDS = {"transactions": TRANSACTION_FIELDS, "row_changes": ROW_CHANGE_FIELDS, "anomalies": ANOMALY_FIELDS}
KIND = {"transactions": "transaction", "row_changes": "row_change", "anomalies": "anomaly"}


def _ts(v):
    if isinstance(v, dt.datetime):
        return v.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return v


def canonical(table: str, rec: dict) -> dict:
    """DESIGN.md's fields of a record, as `binlake scan` prints them."""
    out = {k: _ts(rec.get(k)) for k in FIELDS[table]}
    if table == "row_changes":
        for k in ("before", "after"):
            if isinstance(out[k], str):
                out[k] = json.loads(out[k])
    if table == "transactions":
        out["tables"] = list(out["tables"] or [])
    if table == "anomalies":  # the scan names a path, the job the object: compare from the file name on
        out["detail"] = re.sub(r"\S*/(binlog\.\d+)", r"\1", out["detail"])
    return json.loads(json.dumps(out, default=str))


def digest(table: str, rec: dict) -> str:
    return hashlib.sha1(json.dumps(canonical(table, rec), sort_keys=True).encode()).hexdigest()


def storage_options() -> dict[str, str]:
    """delta-rs's settings for the S3 endpoint the AWS environment names (moto's, in the tests)."""
    env = os.environ
    out = {"AWS_REGION": env.get("AWS_DEFAULT_REGION", "us-east-1"), "AWS_ALLOW_HTTP": "true"}
    for key in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        if key in env:
            out[key] = env[key]
    return out


def table(warehouse: Path | str, name: str, version: int | None = None) -> DeltaTable | None:
    """A table as delta-rs opens it (an s3a:// warehouse as s3://), or None when there is none."""
    where = str(warehouse)
    if where.startswith("s3a://"):
        uri = "s3://" + where.removeprefix("s3a://").rstrip("/") + "/" + name
        options = storage_options()
    else:
        uri, options = str(Path(where.removeprefix("file://")) / name), {}
        if not Path(uri, "_delta_log").is_dir():
            return None
    if not DeltaTable.is_deltatable(uri, options):
        return None
    return DeltaTable(uri, version=version, storage_options=options)


def rows(warehouse: Path | str, name: str, version: int | None = None) -> Iterator[dict]:
    found = table(warehouse, name, version)
    if found is None:
        return
    for batch in found.to_pyarrow_dataset().to_batches():
        yield from batch.to_pylist()


def digests(records: Iterable[dict], table: str) -> Counter:
    return Counter(digest(table, r) for r in records)


def lake(warehouse: Path | str) -> dict[str, Counter]:
    return {t: digests(rows(warehouse, t), t) for t in FIELDS}


def scanned(out: dict[str, list[dict]]) -> dict[str, Counter]:
    """The same digests of an in-process scan's records (tests.support.scanning.scan)."""
    return {t: digests(out[KIND[t]], t) for t in FIELDS}


def differences(a: dict[str, Counter], b: dict[str, Counter]) -> dict[str, tuple[int, int]]:
    """Per table, (only in a, only in b) counts; empty when equal."""
    out = {}
    for t in FIELDS:
        left, right = a[t] - b[t], b[t] - a[t]
        if left or right:
            out[t] = (sum(left.values()), sum(right.values()))
    return out
