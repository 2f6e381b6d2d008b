"""The records binlake emits — transactions, row changes, anomalies — as DESIGN.md names them."""

from __future__ import annotations

import datetime as dt
import functools
import uuid

import orjson

TXN_NAMESPACE = uuid.UUID("6b1f3c2e-8d4a-5b7e-9c1d-0a2b3c4d5e6f")

TRANSACTION_FIELDS = (
    "txn_id", "gtid", "source", "server_id", "binlog_file", "start_pos", "end_pos",
    "transaction_length", "kind", "outcome", "end_event", "synthetic_boundary", "xid", "xa_xid",
    "commit_ts", "original_commit_ts", "first_event_ts", "last_committed", "sequence_number",
    "compressed", "event_count", "row_count", "rows_inserted", "rows_updated", "rows_deleted",
    "tables", "statement", "segment_count",
)
ROW_CHANGE_FIELDS = (
    "txn_id", "segment_id", "end_segment", "seq", "binlog_file", "event_pos", "commit_ts",
    "event_ts", "schema", "table", "op", "before", "after", "rows_query", "xid",
)
ANOMALY_FIELDS = ("source", "binlog_file", "start_pos", "end_pos", "code", "detail", "severity")


def json_line(rec: dict) -> bytes:
    """A record as `binlake scan` prints it: one line of JSON, as orjson writes it."""
    return orjson.dumps(rec, option=orjson.OPT_APPEND_NEWLINE)


def image_json(image: dict) -> bytes:
    """A row image as the tables' `before`/`after` JSON text (column names, or numbers where a
    table map gave none, as keys)."""
    return orjson.dumps(image, option=orjson.OPT_NON_STR_KEYS)


def derived_txn_id(server_id: int, binlog_file: str, start_pos: int) -> str:
    """A transaction without GTID gets a UUID from where it is, so reruns give the same id."""
    return str(uuid.uuid5(TXN_NAMESPACE, f"{server_id}:{binlog_file}:{start_pos}"))


@functools.lru_cache(maxsize=4096)  # every row of an event carries its timestamp: format it once
def ts_from_seconds(seconds: int) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000000Z")


def ts_from_micros(micros: int) -> str:
    s, us = divmod(micros, 1_000_000)
    return f"{ts_from_seconds(s)[:-7]}{us:06d}Z"  # the second's text, its fraction replaced


def anomaly(source: str, binlog_file: str, start_pos: int, end_pos: int, code: str,
            detail: str, severity: str = "error") -> dict:
    return {"source": source, "binlog_file": binlog_file, "start_pos": start_pos,
            "end_pos": end_pos, "code": code, "detail": detail, "severity": severity}
