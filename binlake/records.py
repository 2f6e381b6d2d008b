"""The records binlake emits — transactions, row changes, anomalies — as DESIGN.md names them.

Each record's fields, their order and their types are defined once, here, as TypedDicts: the
walk builds its records as them (mypy holds every construction to them), the Spark tables'
schemas are made from them (binlake.spark.schema), and the lines and columns the compiled lane
writes are checked against them when it loads (binlake.assemble.lane). The lake's tables add
two fields (LakeRowChange.source, DatedAnomaly.commit_ts: docs/warehouse.md).

Also here, the texts every stage gives the records' values: timestamps, derived transaction ids,
JSON lines.
"""

from __future__ import annotations

import datetime as dt
import functools
import uuid
from collections.abc import Mapping
from typing import Annotated, Literal, TypedDict

import orjson

# A UTC instant with microseconds, as the records write it: 2026-11-22T10:00:00.000000Z
Timestamp = Annotated[str, "timestamp"]
Int32 = Annotated[int, "int32"]  # a count that fits 32 bits (the tables' IntegerType); other ints are 64-bit
Image = Annotated[dict | None, "json"]  # a row image, column name -> value; its JSON text in the tables


class TransactionRecord(TypedDict):
    """One transaction (DESIGN.md, "Records"; docs/transactions.md)."""

    record: Literal["transaction"]
    txn_id: str
    gtid: str | None
    source: str
    server_id: int
    binlog_file: str
    start_pos: int
    end_pos: int
    transaction_length: int | None
    kind: str  # dml | ddl | xa_prepare | xa_commit | xa_rollback
    outcome: str  # committed | rolled_back | prepared | incomplete
    end_event: str | None
    synthetic_boundary: bool
    xid: int | None
    xa_xid: str | None
    commit_ts: Timestamp
    original_commit_ts: Timestamp | None
    first_event_ts: Timestamp
    last_committed: int | None
    sequence_number: int | None
    compressed: bool
    event_count: int
    row_count: int
    rows_inserted: int
    rows_updated: int
    rows_deleted: int
    tables: list[str]
    statement: str | None
    segment_count: Int32


class RowChangeRecord(TypedDict):
    """One changed row (DESIGN.md, "Records"; docs/row-values.md for its images' values)."""

    record: Literal["row_change"]
    txn_id: str
    segment_id: Int32 | None  # None: a big transaction's piece, placed later (binlake.assemble.pieces)
    end_segment: bool
    seq: int
    binlog_file: str
    event_pos: int
    commit_ts: Timestamp
    event_ts: Timestamp
    schema: str
    table: str
    op: str  # insert | update | delete
    before: Image
    after: Image
    rows_query: str | None
    xid: int | None


class UnplacedRowChange(RowChangeRecord, total=False):
    """A row change of a big transaction's piece, before it is placed in the whole transaction
    (binlake.assemble.pieces.place_record): its piece and its rows event's ordinal there."""

    piece: int
    ev_ord: int | None


class AnomalyRecord(TypedDict):
    """One problem found (DESIGN.md, "Records"; its codes in docs/transactions.md)."""

    source: str
    binlog_file: str
    start_pos: int
    end_pos: int
    code: str
    detail: str
    severity: str  # error | warning


class LakeRowChange(RowChangeRecord):
    """A row change in the lake: its source too, so that sources can share a warehouse."""

    source: str


class DatedAnomaly(AnomalyRecord):
    """An anomaly in the lake: the date it is filed under (binlake.splits: the commit time of the
    transaction it concerns)."""

    commit_ts: Timestamp


def fields_of(shape: type) -> tuple[str, ...]:
    """A record's fields in their order (its `record`, the kind JSON lines carry, left out); their
    types: typing.get_type_hints(shape, include_extras=True)."""
    return tuple(name for name in shape.__annotations__ if name != "record")


TRANSACTION_FIELDS = fields_of(TransactionRecord)
ROW_CHANGE_FIELDS = fields_of(RowChangeRecord)
ANOMALY_FIELDS = fields_of(AnomalyRecord)
TXN_NAMESPACE = uuid.UUID("6b1f3c2e-8d4a-5b7e-9c1d-0a2b3c4d5e6f")


def json_line(rec: Mapping[str, object]) -> bytes:
    """A record as `binlake scan` prints it: one line of JSON, as orjson writes it."""
    return orjson.dumps(rec, option=orjson.OPT_APPEND_NEWLINE)


def record_line(kind: str, rec: Mapping[str, object]) -> bytes:
    """A record as `binlake scan` prints it, its kind first (`record`)."""
    return json_line(rec if "record" in rec else {"record": kind, **rec})


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


def anomaly(source: str, binlog_file: str, start_pos: int, end_pos: int, *, code: str, detail: str,
            severity: str = "error") -> AnomalyRecord:
    return {"source": source, "binlog_file": binlog_file, "start_pos": start_pos,
            "end_pos": end_pos, "code": code, "detail": detail, "severity": severity}
