"""The warehouse's Delta tables read with delta-rs, without a JVM: where a warehouse is as delta-rs
opens it (`storage`), SQL over one table (`query`, `stream`, `read`), and the current versions of a
row versions' table that the driver's fold of a short range takes (binlake.spark.range_fold): every
one (`current`), or those of the keys the range changes (`changed_current`).

delta-rs's DataFusion (`deltalake.QueryBuilder`) reads what the row versions' tables use (column
mapping `name`, deletion vectors; binlake.spark.versions) and prunes data files by a predicate on
their statistics, as Spark's reader does. The versions come a batch at a time, each cut to the
changed keys' as it comes: what a read holds is a batch and the versions it keeps, not the table.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from binlake.tables.key_ranges import changed_ranges
from binlake.tables.state import TableState
from binlake.tables.stream import Routes, held_keys, integer_key, typed

Arrow = TypeVar("Arrow", pa.RecordBatch, pa.Table)
# A changed integer key's first value as Arrow compares it with every integer column (BIGINT
# UNSIGNED's DECIMAL(20,0) too)
_WHOLE = pa.decimal128(20, 0)


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


def read(warehouse: str, name: str, sql: str) -> pa.Table:
    """`sql` over the warehouse's table `name` (`transactions`, `row_changes`, …) as `t`, at its
    newest version, in the Arrow types Spark's reader gives."""
    uri, options = storage(warehouse)
    return plain(query(f"{uri}/{name}", options, None, sql))


def current(warehouse: str, ts: TableState) -> Iterator[pa.RecordBatch]:
    """The current versions of the row versions' table of `ts`, every column, as Spark's reader
    gives them (binlake.spark.versions.Versions.current: strings, not DataFusion's string views),
    `_valid_from` as the records' text."""
    for b in _current(warehouse, ts, None):
        yield _as_read(b)


def changed_current(warehouse: str, ts: TableState, *, routes: Routes, lineage: int, grps: pa.Array
                    ) -> Iterator[pa.RecordBatch]:
    """`current` of the versions whose key is one of `grps` (key texts, binary) in the table of
    `ts` matched by key in `lineage`: the files that hold none of the keys pruned by a predicate on
    the first key column (binlake.tables.key_ranges), then each batch cut (`changed`)."""
    ranges = changed_ranges(ts.shape(), ts.key, grps.to_pylist())
    where = ranges.sql(ident, lambda v: literal(v, ranges.column.kind().spark)) if ranges else None
    for b in changed(routes, lineage, ts.name, _current(warehouse, ts, where), grps=grps):
        yield _as_read(b)


def changed(routes: Routes, lineage: int, table: str, batches: Iterable[pa.RecordBatch], *, grps: pa.Array
            ) -> Iterator[pa.RecordBatch]:
    """Of each batch of a table's versions, those whose key text (held_keys: the fold's, so as the
    server matches keys) is one of `grps`. An integer key is cut by its first column's value first,
    in Arrow, keeping the versions held_keys keys only in Python (a value in `_raw`, one unknown):
    held_keys then keys only those, not every version read."""
    integers = integer_key(routes, lineage, table)
    by_value = None  # the first key column, and its values in the changed keys (null too, for a null)
    if integers:
        firsts = {k[0] for k in (orjson.loads(g) for g in grps.to_pylist() if g) if k[0] is None or type(k[0]) is int}
        by_value = integers[0], pa.array([None if v is None else Decimal(v) for v in firsts], _WHOLE)
    for b in batches:
        if by_value is not None:
            column, values = by_value
            hit = pc.is_in(b.column(column).cast(_WHOLE), value_set=values, skip_nulls=False)
            b = b.filter(pc.or_(hit, pc.invert(typed(b))))
        if not b.num_rows:
            continue
        (keyed,) = held_keys(routes, lineage, table, [b])
        kept = keyed.filter(pc.is_in(keyed.column("_grp"), value_set=grps)).drop_columns(["_grp"])
        if kept.num_rows:
            yield kept


def _current(warehouse: str, ts: TableState, where: str | None) -> Iterator[pa.RecordBatch]:
    """The current versions as DataFusion reads them, each batch in the plain Arrow types."""
    uri, options = storage(warehouse)
    sql = f"SELECT * FROM t WHERE _to_order IS NULL{f' AND ({where})' if where else ''}"
    for b in stream(f"{uri}/{ts.path}", options, None, sql):
        if b.num_rows:
            yield plain(b)


def plain(data: Arrow) -> Arrow:
    """A batch or table as DataFusion reads it in the Arrow types Spark's reader gives."""
    return data.cast(pa.schema([f.with_type(_plain(f.type)) for f in data.schema]))


def _plain(t: pa.DataType) -> pa.DataType:
    """A DataFusion type as Spark's Arrow gives it: views as strings and bytes (pyarrow's filters
    take no views), within lists and maps too."""
    if pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_map(t):
        return pa.map_(_plain(t.key_type), t.item_field.with_type(_plain(t.item_type)))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(t.value_field.with_type(_plain(t.value_type)))
    return t


def _as_read(b: pa.RecordBatch) -> pa.RecordBatch:
    """`_valid_from` as the records' text."""
    i = b.schema.get_field_index("_valid_from")
    return b.set_column(i, "_valid_from", iso(b.column(i)))


def iso(times: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Timestamps (microseconds, UTC) as the records' text (binlake.splits.times.parse_time's form)."""
    return pc.strftime(times, format="%Y-%m-%dT%H:%M:%SZ")  # microseconds: the unit's digits after %S


def ident(name: str) -> str:
    """A column's name quoted for DataFusion's SQL."""
    return '"' + name.replace('"', '""') + '"'


def text(v: str) -> str:
    """A string as a DataFusion literal."""
    return "'" + v.replace("'", "''") + "'"


def literal(v: Any, spark_type: str) -> str:
    """A key's value (an int, a Decimal or a str) as a DataFusion literal of its Delta column's type."""
    if spark_type.startswith("DECIMAL"):
        return f"CAST('{v}' AS {spark_type})"
    return text(v) if isinstance(v, str) else str(v)
