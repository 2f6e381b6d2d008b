"""The records' shapes are defined once (binlake.records): the Spark tables' schemas are made from
them, and the compiled lane, which writes the same records, is held to them when it loads."""

from __future__ import annotations

import pytest

from binlake.assemble import lane
from binlake.binlog import fastrows
from binlake.records import ANOMALY_FIELDS, ROW_CHANGE_FIELDS, TRANSACTION_FIELDS
from tests.conftest import require

# DESIGN.md, "Records", as written there: the oracle of every shape below
DESIGN_TRANSACTION = """txn_id, gtid, source, server_id, binlog_file, start_pos, end_pos, transaction_length,
kind, outcome, end_event, synthetic_boundary, xid, xa_xid, commit_ts, original_commit_ts, first_event_ts,
last_committed, sequence_number, compressed, event_count, row_count, rows_inserted, rows_updated, rows_deleted,
tables, statement, segment_count"""
DESIGN_ROW_CHANGE = """txn_id, segment_id, end_segment, seq, binlog_file, event_pos, commit_ts, event_ts, schema,
table, op, before, after, rows_query, xid"""
DESIGN_ANOMALY = "source, binlog_file, start_pos, end_pos, code, detail, severity"


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.replace("\n", " ").split(","))


def test_the_records_are_designs():
    assert _names(DESIGN_TRANSACTION) == TRANSACTION_FIELDS
    assert _names(DESIGN_ROW_CHANGE) == ROW_CHANGE_FIELDS
    assert _names(DESIGN_ANOMALY) == ANOMALY_FIELDS


def test_the_tables_schemas_are_the_records_and_their_two_additions():
    from pyspark.sql.types import IntegerType, LongType, TimestampType

    from binlake.spark import schema

    # the additions: docs/warehouse.md (a row change's source, an anomaly's date)
    assert tuple(schema.TRANSACTIONS.fieldNames()) == _names(DESIGN_TRANSACTION)
    assert tuple(schema.ROW_CHANGES.fieldNames()) == (*_names(DESIGN_ROW_CHANGE), "source")
    assert tuple(schema.ANOMALIES.fieldNames()) == (*_names(DESIGN_ANOMALY), "commit_ts")
    # docs/warehouse.md's types: timestamps, 32-bit counts of segments, 64-bit positions
    assert schema.TRANSACTIONS["commit_ts"].dataType == TimestampType()
    assert schema.TRANSACTIONS["segment_count"].dataType == IntegerType()
    assert schema.ROW_CHANGES["segment_id"].dataType == IntegerType()
    assert schema.ROW_CHANGES["event_pos"].dataType == LongType()


@pytest.fixture
def built_lane() -> None:
    """The install compiles the lane: a checkout without it skips here, CI fails (conftest.require)."""
    require(fastrows.lane_built(), "the compiled lane (binlake.binlog._rowdecode: pip install -e .)")


def test_the_compiled_lane_writes_the_records_shapes(built_lane):
    import orjson

    record, row, record_columns, block_columns = fastrows.lane_layouts(b'"schema":"d","table":"t",')
    assert tuple(orjson.loads(record)) == ("record", *_names(DESIGN_TRANSACTION))
    assert tuple(orjson.loads(row)) == ("record", *_names(DESIGN_ROW_CHANGE))
    assert (record_columns, block_columns) == (lane.RECORD_FIELDS, lane.BLOCK_FIELDS)


def test_a_lane_out_of_step_with_the_shapes_is_refused(built_lane, monkeypatch):
    record, row, record_columns, block_columns = fastrows.lane_layouts(b'"schema":"","table":"",')
    swapped = record.replace(b'"gtid"', b'"GTID"')
    monkeypatch.setattr(fastrows, "lane_layouts", lambda members: (swapped, row, record_columns, block_columns))
    with pytest.raises(ImportError, match="record line"):
        lane.check_layouts()
    monkeypatch.setattr(fastrows, "lane_layouts", lambda members: (record, row, record_columns[::-1], block_columns))
    with pytest.raises(ImportError, match="record columns"):
        lane.check_layouts()
