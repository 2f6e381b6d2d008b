"""The assemble job's two passes over splits, as a Spark task runs them (`mapInArrow`) and as the
driver runs them itself for a short range (`run_here`): the facts pass (transactions, anomalies,
big transactions' pieces) and the rows pass (the row changes), each a function of Arrow batches of
splits to Arrow batches of records (binlake.spark.schema's shapes).

The schema states splits start from (binlake.splits.schemas) reach a task as a Spark broadcast, and
the driver's run as `Held` states: either way their `.value`.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from binlake.assemble.lane import RecordRun, RowRun
from binlake.assemble.outputs import RowBlocks
from binlake.assemble.pieces import place_block
from binlake.assemble.walk import Options
from binlake.malloc import keep_freed_memory
from binlake.schema.ddl import SchemaState
from binlake.spark import schema
from binlake.splits.plan import Split
from binlake.splits.tasks import run_split

BATCH = 4096  # records per Arrow batch out of a task
Task = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


@dataclass(frozen=True)
class Held:
    """Schema states (or fixes) the driver holds itself, read as a broadcast's are: `.value`."""

    value: Any


def _splits_of(batches) -> Iterator[Split]:
    for b in batches:
        for text in b.column("split").to_pylist():
            yield Split.from_json(text)


def _split_schema(split: Split, states) -> SchemaState | None:
    """The schema state a split starts from: a copy, which its walk advances."""
    if states is None or split.schema is None:
        return None
    return states.value[split.schema].copy()


def facts_task(opts: Options, states):
    """What each task of the facts pass runs over its split(s): transactions, anomalies and the
    pieces of big transactions out as Arrow batches of STAGED, each of one kind of record
    (schema.arrow_batch; the lane's transactions from its columns, schema.records_run_batch). Rows
    are decoded for their counts only. `states`: the schema states splits start from
    (binlake.splits.schemas) as a broadcast or `Held`, or None."""
    opts = replace(opts, rows=False)

    def run(batches):
        tune_worker_heap()
        arrow = arrow_schema(schema.STAGED)
        kinds = [n for n in arrow.names if n != "kind"]
        for split in _splits_of(batches):
            bufs: dict[str, list[dict]] = {k: [] for k in kinds}
            for item in run_split(split, opts, columns=True, schema=_split_schema(split, states)):
                if isinstance(item, RecordRun):  # the lane's (binlake.assemble.lane): its columns, no Python per record
                    yield schema.records_run_batch(arrow, item, split.source)
                    continue
                kind, rec = schema.staged(item)
                buf = bufs[kind]
                buf.append(schema.arrow_record(kind, rec, split.source)[kind])
                if len(buf) >= BATCH:
                    yield schema.arrow_batch(arrow, kind, buf)
                    bufs[kind] = []
            for kind, buf in bufs.items():
                if buf:
                    yield schema.arrow_batch(arrow, kind, buf)

    return run


def rows_task(opts: Options, fixes, states):
    """What each task of the rows pass runs over its split(s): the row changes alone, as Arrow
    batches of ROW_CHANGES; those of whole transactions from the decoder's blocks
    (schema.blocks_batch), those of big transactions' pieces placed by `fixes`, a broadcast of
    binlake.assemble.pieces.Fixes (a piece's rows with no fix, a broken transaction's, are not
    presented); `states` as facts_task's."""

    def run(batches):
        tune_worker_heap()
        arrow = arrow_schema(schema.ROW_CHANGES)
        place = fixes.value if fixes is not None else {}
        for split in _splits_of(batches):
            source = split.source
            blocks: list = []
            held = 0
            for item in run_split(split, opts, columns=True, schema=_split_schema(split, states)):
                if isinstance(item, RowBlocks):
                    placed = [block for block in item.blocks if place_block(block, place)]
                    blocks += placed
                    held += sum(block.rows for block in placed)
                    if held >= BATCH:
                        yield schema.blocks_batch(arrow, blocks, source)
                        blocks, held = [], 0
                elif isinstance(item, RowRun):  # the lane's (binlake.assemble.lane): whole transactions, no placing
                    yield schema.run_batch(arrow, item, source)
            if blocks:
                yield schema.blocks_batch(arrow, blocks, source)

    return run


def tune_worker_heap() -> None:
    """Two settings of a Python worker's heap, made when each task starts, in Spark's Python
    workers only (not in the driver, which runs the tasks of a short range itself: binlake.spark.read_ahead).

    PySpark's daemon collects garbage after every task of a reused worker (gc.collect): a full
    pass over every object alive in it, the imports' alone (pyarrow, numpy, binlake's decoders)
    a great many, a share of the workers' CPU on production's mix that bench/RESULTS.md measures
    (py-spy). What is alive when a task starts, collected first so that no garbage is
    kept, is put out of the collector's sight (gc.freeze): those passes see only what the tasks
    made. And the lane's columns, MiBs made and freed per run, stay in glibc's heap for the next
    run instead of being faulted in and zeroed again (binlake.malloc, as `binlake scan` does,
    set once per worker): less CPU in the rows pass (bench/RESULTS.md)."""
    from pyspark import TaskContext

    if TaskContext.get() is not None:
        keep_freed_memory()
        gc.collect()
        gc.freeze()


def arrow_schema(struct):
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(struct, timezone="UTC")


def run_here(task: Task, splits: Sequence[Split], struct) -> pa.Table:
    """`task` over the splits in this process (the driver), biggest first as Spark's tasks go: its
    batches as one Arrow table of `struct`'s shape."""
    arrow = arrow_schema(struct)
    if not splits:  # a quiet range
        return arrow.empty_table()
    tasks = sorted(splits, key=lambda s: -s.bytes)
    batches = list(task(iter([pa.RecordBatch.from_pylist([{"split": t.to_json()} for t in tasks])])))
    return pa.Table.from_batches(batches, schema=arrow)
