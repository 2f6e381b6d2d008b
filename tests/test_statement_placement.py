"""Where a statement of an archived file lies (binlake.spark.range_reads.RangeReads.placed): in the
transaction whose bytes hold its position, the last to start at or before it in its file if it
ends after it. A few statements (a range's table statements) are placed by a filter of their
positions, many (a source logging STATEMENT) by a window over the file's positions: both give
the same places. The transactions' byte ranges below are written by hand, as a manifest's index
gives them (each ends where the next starts, or before: a file's events between transactions),
and so is each expected place."""

from __future__ import annotations

import pytest

from binlake.spark import range_reads
from binlake.spark.range_reads import RangeReads

TXNS = [  # binlog_file, start_pos, end_pos, txn_id
    ("binlog.000001", 120, 400, "t1"),
    ("binlog.000001", 400, 900, "t2"),
    ("binlog.000001", 950, 1000, "t3"),  # a lone Query event (DDL): no BEGIN
    ("binlog.000002", 120, 700, "t4"),
    ("binlog.000001@g0002", 120, 300, "t5"),  # the same name in a later generation
]
STATEMENTS = [  # file, position, name -> the transaction holding it
    (("binlog.000001", 120, "at a start"), "t1"),
    (("binlog.000001", 399, "at the last byte"), "t1"),
    (("binlog.000001", 500, "inside"), "t2"),
    (("binlog.000001", 600, "inside, a second"), "t2"),
    (("binlog.000001", 950, "a lone statement"), "t3"),
    (("binlog.000001", 920, "between transactions"), None),
    (("binlog.000001", 1000, "past the last"), None),
    (("binlog.000002", 130, "another file"), "t4"),
    (("binlog.000001@g0002", 200, "a later generation"), "t5"),
    (("binlog.000003", 130, "a file without transactions"), None),
]


@pytest.mark.parametrize("few", [True, False], ids=["filter", "window"])
def test_each_statement_lies_in_the_transaction_whose_bytes_hold_it(spark, monkeypatch, few):
    monkeypatch.setattr(range_reads, "FEW", len(STATEMENTS) if few else 0)
    txns = spark.createDataFrame(TXNS, "binlog_file string, start_pos long, end_pos long, txn_id string")
    reads = RangeReads(spark, None, "", source="s", txns=txns, span=("2026-01-01", "2026-01-02"))
    got = {r["name"]: r["txn_id"] for r in reads.placed(txns, [s for s, _ in STATEMENTS]).collect()}
    assert got == {s[2]: txn for s, txn in STATEMENTS if txn is not None}
