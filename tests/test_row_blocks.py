"""The Spark job's parse tasks build their Arrow batches of row changes from the decoder's
RowBlocks (columns per rows event, the images' JSON texts in Arrow's own buffers); they must
hold exactly the rows the records path gives, value for value.

Every file the tests know is read both ways, with the default segments and with small ones.
"""

from __future__ import annotations

import pytest

from binlake.assemble.lane import RecordRun
from binlake.assemble.outputs import Items
from binlake.assemble.walk import FileAssembler, Options
from binlake.binlog import _rowdecode, fastrows
from binlake.binlog.framing import BinlogReader
from binlake.spark import schema
from binlake.spark.passes import BATCH, arrow_schema
from tests.support.scanning import PUBLIC, assert_same_items, blocks_path, lines_records, records_list, scan_lines
from tests.test_json_lines import SMALL
from tests.test_public_fixtures import READABLE
from tests.test_rowdecode import FILES

ARROW = arrow_schema(schema.ROW_CHANGES)


def _rows_of_blocks(paths, **opts) -> list[dict]:
    blocks = blocks_path(paths, **opts)
    out: list[dict] = []
    for i in range(0, len(blocks), 50):  # several batches, each of many blocks
        out += schema.blocks_batch(ARROW, blocks[i:i + 50], "src").to_pylist()
    return out


def _rows_of_records(paths, **opts) -> list[dict]:
    recs = [schema.arrow_record("row_change", r, "src")["row_change"] for r in records_list(paths, **opts)]
    out: list[dict] = []
    for i in range(0, len(recs), BATCH):
        out += schema.records_batch(ARROW, recs[i:i + BATCH]).to_pylist()
    return out


def _same(paths, **opts) -> list[dict]:
    got, want = _rows_of_blocks(paths, **opts), _rows_of_records(paths, **opts)
    assert_same_items(got, want, "row change")
    return got


@pytest.fixture
def columns_calls(monkeypatch) -> list[int]:
    """Rows per rows event the compiled columns path took (the blocks' own path, not the
    records' fallback, which the compiled decode() also serves)."""
    calls: list[int] = []
    real = fastrows.columns

    def spy(*args, **kwargs):
        done = real(*args, **kwargs)
        if done is not None:
            calls.append(done[1])
        return done

    monkeypatch.setattr(fastrows, "columns", spy)
    return calls


@pytest.mark.parametrize("name", sorted(FILES))
def test_same_rows_on_real_server_files(name, columns_calls):
    rows = _same(FILES[name])
    assert len(columns_calls) > 10 and sum(columns_calls) > len(rows) / 2  # most rows came as columns
    small = _same(FILES[name], **SMALL)
    assert {r["end_segment"] for r in small} == {False, True}
    assert [(r["txn_id"], r["seq"], r["before"], r["after"]) for r in small] == \
        [(r["txn_id"], r["seq"], r["before"], r["after"]) for r in rows]


@pytest.mark.parametrize("name", sorted(READABLE))
def test_same_rows_on_the_public_corpus(name):
    path = PUBLIC / name
    if not path.exists():
        pytest.fail(f"missing from the public corpus: {path}")
    _same([path])
    _same([path], **SMALL)


def test_same_rows_with_the_compiled_decoder_off(monkeypatch):
    # every block is then made from records by the Python path: the rows do not change
    paths = FILES["tests/data/mysql"]
    want = _rows_of_blocks(paths, **SMALL)
    monkeypatch.setenv("BINLAKE_PURE_PYTHON", "1")
    before = dict(fastrows.counts)
    assert _rows_of_blocks(paths, **SMALL) == want
    assert fastrows.counts["compiled"] == before["compiled"]
    assert fastrows.counts["reference"] > before["reference"]


def test_columns_of_a_rows_event():
    # two inserts of (id INT, name VARCHAR(10) utf8): the images as an Arrow string column
    plan = (("id", _rowdecode.K_INT32, 0, 0, None), ("name", _rowdecode.K_STR_UTF8, 1, 0, None))
    keys = tuple(fastrows.json_keys(plan))
    body = b"\x00" + (7).to_bytes(4, "little") + b"\x02h\"" + b"\x02" + (8).to_bytes(4, "little")
    rows, before, after = _rowdecode.columns(body, 0, plan, keys, b"\x03", b"", 0)
    assert (rows, before) == (2, None)
    offsets, data = after
    first = b'{"id":7,"name":"h\\""}'
    assert data == first + b'{"id":8,"name":null}'
    assert list(memoryview(offsets).cast("i")) == [0, len(first), len(data)]
    with pytest.raises(_rowdecode.Fallback) as e:  # a row of no bytes is declined, not looped on
        _rowdecode.columns(b"\x00" * 8, 0, plan[:1], keys[:1], b"\x00", b"", 0)
    assert e.value.args == ()  # with no words: the reference path words errors


STAGED = arrow_schema(schema.STAGED)


# Beside the recordings (GTIDs; MariaDB's without logical clocks nor lengths): public files of
# anonymous transactions, with and without checksums.
RECORD_FILES = {**FILES, "anonymous": [PUBLIC / "blackbeam__rust_mysql_common/json.binlog.000001",
                                       PUBLIC / "shyiko__mysql-binlog-connector-java/mysql-bin.checksum-none"]}


@pytest.mark.parametrize("name", sorted(RECORD_FILES))
def test_the_lanes_record_columns_make_the_records_batches(name):
    """The facts pass takes the lane's transaction records as columns (binlake.assemble.lane.RecordRun,
    schema.records_run_batch): the batch holds what the records path (arrow_record, arrow_batch)
    makes of the same transactions as the lane writes them in lines, value for value, nulls,
    timestamps and lists included."""
    paths = RECORD_FILES[name]
    lines, summary = scan_lines(paths, rows=False, source="src")
    recs = [schema.arrow_record("transaction", r, "src")["transaction"] for r in lines_records(lines)["transaction"]]
    runs: list[RecordRun] = []
    for path in paths:
        with BinlogReader.open(path) as r:
            output = Items(columns=True)
            FileAssembler(r, Options(rows=False, source="src"), output).run()
            runs += [item for item in output.drain() if isinstance(item, RecordRun)]
    got = []
    for run in runs:
        batch = [row["transaction"] for row in schema.records_run_batch(STAGED, run, "src").to_pylist()]
        last = batch[-1]  # what dates an anomaly after the run (binlake.splits.tasks.run_split)
        assert run.last() == (last["start_pos"], round(last["commit_ts"].timestamp() * 1_000_000))
        got += batch
    assert sum(run.transactions for run in runs) == summary.laned == len(got) > 10
    taken = {(r["binlog_file"], r["start_pos"]) for r in got}
    want = [r for r in recs if (r["binlog_file"], r["start_pos"]) in taken]
    assert_same_items(got, [row["transaction"] for row in schema.arrow_batch(STAGED, "transaction", want).to_pylist()],
                      "transaction")
    if name == "anonymous":
        assert all(r["gtid"] is None for r in got)
