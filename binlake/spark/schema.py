"""The warehouse tables' Spark schemas, made from binlake.records' shapes, and records turned
into their Arrow rows.

Fields, order and types are the records' (binlake.records: DESIGN.md's); docs/warehouse.md says
what each column holds. Two additions, the lake's shapes there: `row_changes.source`, so sources
can share a warehouse, and `anomalies.commit_ts`, the date an anomaly is filed under
(binlake.splits.tasks). `before` / `after` are JSON object strings: one MapType could not hold
values of different types, and JSON keeps every value's type as `binlake scan` prints it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import types
import typing
from collections.abc import Mapping
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DateType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from binlake.assemble.outputs import Anomaly, Item, Transaction
from binlake.assemble.pieces import PieceRecord
from binlake.records import DatedAnomaly, LakeRowChange, TransactionRecord, fields_of, image_json

_TYPES: dict[object, DataType] = {str: StringType(), int: LongType(), bool: BooleanType(), dict: StringType()}
_SAID: dict[str, DataType] = {"timestamp": TimestampType(), "int32": IntegerType(), "json": StringType()}


def _spark_type(hint) -> DataType:
    """A record field's type (its annotation) as a Spark column's: every column may be null."""
    if typing.get_origin(hint) is typing.Annotated:
        return _SAID[typing.get_args(hint)[1]]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):  # X | None
        return _spark_type(next(a for a in typing.get_args(hint) if a is not type(None)))
    if typing.get_origin(hint) is list:
        return ArrayType(_spark_type(typing.get_args(hint)[0]))
    return _TYPES[hint]


def struct_of(shape: type) -> StructType:
    """The Spark schema of a record's shape (a TypedDict of binlake.records, or a dataclass)."""
    hints = typing.get_type_hints(shape, include_extras=True)
    names = [f.name for f in dataclasses.fields(shape)] if dataclasses.is_dataclass(shape) else fields_of(shape)
    return StructType([StructField(name, _spark_type(hints[name]), True) for name in names])


TRANSACTIONS = struct_of(TransactionRecord)
ROW_CHANGES = struct_of(LakeRowChange)
ANOMALIES = struct_of(DatedAnomaly)
TABLES = {"transactions": TRANSACTIONS, "row_changes": ROW_CHANGES, "anomalies": ANOMALIES}
PARTITION = StructField("commit_date", DateType(), True)
# The tables as stored: partitioned by commit_date, which Parquet keeps in the directory names.
STORED = {name: StructType(struct.fields + [PARTITION]) for name, struct in TABLES.items()}

# Pieces of big transactions: what binlake.assemble.pieces.finish needs, and the rows' place in them.
PIECES = struct_of(PieceRecord)
# What the facts pass's split tasks emit: one column per record kind, the others null; `kind` says which.
STAGED = StructType([StructField("transaction", TRANSACTIONS, True), StructField("anomaly", ANOMALIES, True),
                     StructField("piece", PIECES, True), StructField("kind", StringType(), True)])

_TS_FIELDS = {"commit_ts", "original_commit_ts", "first_event_ts", "event_ts"}


def _ts(text: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(text) if text else None


def staged(item: Item | PieceRecord) -> tuple[str, dict]:
    """A facts pass's item (binlake.splits.tasks.run_split: a Transaction, an Anomaly or a
    PieceRecord) as the STAGED column it goes in, and its record."""
    if isinstance(item, PieceRecord):
        return "piece", dataclasses.asdict(item)
    if isinstance(item, Transaction | Anomaly):
        return ("transaction" if isinstance(item, Transaction) else "anomaly"), dict(item.record)
    raise ValueError(f"a facts pass stages no {type(item).__name__}")


def arrow_record(kind: str, rec: Mapping[str, Any], source: str) -> dict:
    """A record as emitted by the assembler, in STAGED's shape."""
    out = {k: (_ts(v) if k in _TS_FIELDS else v) for k, v in rec.items() if k != "record"}
    if kind == "row_change":
        out["before"] = _json(out["before"])
        out["after"] = _json(out["after"])
        out["source"] = source
    return {kind: out}


def _json(value) -> str | None:
    return None if value is None else image_json(value).decode()


# Fields that hold one long text shared by many records (a multi-row INSERT's Rows_query is
# repeated on each of its rows): each distinct text crosses into Arrow once, then is copied in C++.
_SHARED_TEXT = {"rows_query"}


def arrow_batch(arrow, kind: str, recs: list[dict]):
    """One Arrow batch of STAGED (`arrow`, its Arrow schema) from records of one kind, built
    column by column; the other kinds' columns are all null."""
    import pyarrow as pa

    struct = arrow.field(kind).type
    children = [_column(pa, [r.get(c.name) for r in recs], c) for c in struct]
    return _staged(pa, arrow, kind, children)


def _staged(pa, arrow, kind: str, children: list):
    """A batch of STAGED (`arrow`) whose `kind` column is built of `children` (its fields'
    columns, in order); the other kinds' columns all null."""
    struct = arrow.field(kind).type
    n = len(children[0])
    return pa.RecordBatch.from_arrays(
        [pa.repeat(pa.scalar(kind, pa.string()), n) if f.name == "kind"
         else pa.StructArray.from_arrays(children, fields=list(struct)) if f.name == kind
         else pa.nulls(n, f.type) for f in arrow], schema=arrow)


def records_run_batch(arrow, run, source: str):
    """One Arrow batch of STAGED (`arrow`), its transaction column, from the lane's RecordRun
    (binlake.assemble.lane): the fields numpy's, the ids and the tables' names the lane's own, what is the
    same for every one of them (a committed dml transaction of one file, whole) repeated; no Python
    per transaction."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from binlake.assemble.lane import NULL_GTID, NULL_LENGTH, NULL_LOGICAL, NULL_ORIGINAL, RECORD_FIELDS, RUN_RECORD

    f = np.frombuffer(run.fields, np.int64).reshape(-1, len(RECORD_FIELDS))
    at = {name: f[:, i] for i, name in enumerate(RECORD_FIELDS)}
    n = len(f)
    nulls = at["nulls"]
    offsets, data = run.ids
    ids = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    names = pa.array([f"{t.schema}.{t.table}" for t in run.tables], pa.string())
    listed = np.zeros(n + 1, np.int32)
    np.cumsum(at["tables"], out=listed[1:])

    def some(name: str, bit: int) -> pa.Array:  # null where the record says null
        return pa.array(at[name], mask=(nulls & bit) != 0)

    text = pa.string()
    struct = arrow.field("transaction").type
    types = {f.name: f.type for f in struct}

    def same(value, t) -> pa.Array:
        return pa.repeat(pa.scalar(value, t), n)

    cols = {name: at[name] for name in ("server_id", "start_pos", "end_pos", "xid", "event_count", "row_count",
                                        "rows_inserted", "rows_updated", "rows_deleted")}
    cols |= {
        "txn_id": ids, "gtid": pc.if_else(pa.array((nulls & NULL_GTID) != 0), pa.scalar(None, text), ids),
        "source": same(source, text), "binlog_file": same(run.binlog_file, text),
        "transaction_length": some("transaction_length", NULL_LENGTH),
        "commit_ts": at["commit_us"], "original_commit_ts": some("original_us", NULL_ORIGINAL),
        "first_event_ts": at["first_us"], "last_committed": some("last_committed", NULL_LOGICAL),
        "sequence_number": some("sequence_number", NULL_LOGICAL),
        "tables": pa.ListArray.from_arrays(pa.array(listed), names.take(pa.array(np.frombuffer(run.named, np.int32)))),
    }
    cols |= {name: same(value, types[name]) for name, value in RUN_RECORD.items()}
    return _staged(pa, arrow, "transaction", [_as(pa, cols[c.name], c.type) for c in struct])


def records_batch(arrow, recs: list[dict]):
    """One Arrow batch of a flat schema (ROW_CHANGES') from records in arrow_record's shape."""
    import pyarrow as pa

    return pa.RecordBatch.from_arrays([_column(pa, [r.get(f.name) for r in recs], f) for f in arrow], schema=arrow)


def blocks_batch(arrow, blocks: list, source: str):
    """One Arrow batch of ROW_CHANGES from RowBlocks (binlake.assemble.sinks): the row changes of whole
    rows events, built in Arrow's C++ without a Python object per row: the fields a block's rows
    share are repeated by `take`, the images' JSON texts are the decoder's own buffers."""
    import numpy as np
    import pyarrow as pa

    counts = np.fromiter((b.rows for b in blocks), np.int64, len(blocks))
    n = int(counts.sum())
    which = pa.array(np.repeat(np.arange(len(blocks), dtype=np.int32), counts))
    starts = np.cumsum(counts) - counts
    cols = [_block_column(pa, np, f, blocks, which=which, counts=counts, starts=starts, source=source, n=n)
            for f in arrow]
    return pa.RecordBatch.from_arrays(cols, schema=arrow)


_OPS = ("insert", "update", "delete")


def run_batch(arrow, run, source: str):
    """One Arrow batch of ROW_CHANGES from the lane's RowRun (binlake.assemble.lane): its fields per rows
    event repeated by numpy over their rows, the images the lane's own buffers; no Python per row
    nor per rows event."""
    import numpy as np
    import pyarrow as pa

    from binlake.assemble.lane import BLOCK_FIELDS

    b = np.frombuffer(run.blocks, np.int64).reshape(-1, len(BLOCK_FIELDS))
    at = {name: b[:, i] for i, name in enumerate(BLOCK_FIELDS)}
    counts = at["rows"]
    n = int(counts.sum())
    which = np.repeat(np.arange(len(b)), counts)
    valid = np.frombuffer(run.valid, np.uint8)

    def each(name: str):  # the field of each row's rows event
        return at[name][which]

    def named(values: list, index) -> pa.Array:  # values[index] per row, None where index < 0
        return pa.array([*values, None], pa.string()).take(pa.array(np.where(index < 0, len(values), index)))

    cols = {
        "txn_id": named(run.txn_ids, each("txn")),
        "segment_id": pa.repeat(pa.scalar(1, pa.int32()), n),
        "end_segment": pa.repeat(pa.scalar(True), n),
        "seq": np.arange(n, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts) + each("seq"),
        "binlog_file": pa.repeat(pa.scalar(run.binlog_file, pa.string()), n),
        "event_pos": each("event_pos"), "commit_ts": each("commit_us"), "event_ts": each("event_us"),
        "schema": named([t.schema for t in run.tables], each("table")),
        "table": named([t.table for t in run.tables], each("table")),
        "op": named(list(_OPS), each("op")),
        "before": _images(pa, np, run.before, valid & 1, n=n), "after": _images(pa, np, run.after, valid & 2, n=n),
        "rows_query": named(run.statements, each("statement")),
        "xid": each("xid"),
        "source": pa.repeat(pa.scalar(source, pa.string()), n),
    }
    return pa.RecordBatch.from_arrays([_as(pa, cols[f.name], f.type) for f in arrow], schema=arrow)


def _images(pa, np, column: tuple[bytes, bytes], present, *, n: int):
    offsets, data = column
    bitmap = np.packbits(present != 0, bitorder="little")
    return pa.Array.from_buffers(pa.string(), n, [pa.py_buffer(bitmap.tobytes()), pa.py_buffer(offsets),
                                                  pa.py_buffer(data)])


def _as(pa, col, t):
    if not isinstance(col, pa.Array):
        col = pa.array(col, t)
    return col if col.type == t else col.cast(t)


def _block_column(pa, np, f, blocks: list, *, which, counts, starts, source: str, n: int):
    name = f.name
    if name in ("before", "after"):
        parts = [_texts(pa, getattr(b, name), b.rows) for b in blocks]
        col = pa.concat_arrays(parts)
        return col if col.type == f.type else col.cast(f.type)
    if name == "seq":  # each block's rows numbered on from its first seq
        first = np.fromiter((b.at.seq for b in blocks), np.int64, len(blocks))
        return pa.array(np.arange(n, dtype=np.int64) + np.repeat(first - starts, counts), f.type)
    if name == "source":
        return pa.repeat(pa.scalar(source, f.type), n)
    values = [b.end_segment if name == "end_segment" else getattr(b.at, name) for b in blocks]
    if name in _TS_FIELDS:
        values = [_ts(v) for v in values]
    return pa.array(values, f.type).take(which)


def _texts(pa, column: tuple[bytes, bytes] | None, rows: int):
    if column is None:
        return pa.nulls(rows, pa.string())
    offsets, data = column
    return pa.Array.from_buffers(pa.string(), rows, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _column(pa, values: list, f):
    if f.name not in _SHARED_TEXT:
        return pa.array(values, type=f.type)
    ids: dict[int, int] = {}
    distinct: list[str] = []
    index: list[int | None] = []
    for v in values:  # by identity: all of them are alive in `values` meanwhile
        if v is None:
            index.append(None)
            continue
        i = ids.get(id(v))
        if i is None:
            i = ids[id(v)] = len(distinct)
            distinct.append(v)
        index.append(i)
    return pa.DictionaryArray.from_arrays(pa.array(index, pa.int32()), pa.array(distinct, f.type)).cast(f.type)
