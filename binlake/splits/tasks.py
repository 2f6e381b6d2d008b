"""What each task of the Spark job runs over a split: its records as typed items; and the other
tasks a plan needs (a big transaction's survey, the comparison of a repeat with its first copy).

A split's bytes are memory-mapped (or spooled to a temporary file from S3), never read into memory
whole; its row changes stream out as they are decoded. An anomaly is dated (its `commit_ts`) by
the commit time of the last transaction starting at or before it (of the file's first
transaction when none does, of the file's first event when the file holds none): it lands with
the data it concerns, and hourly runs and a daily run date it alike.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import itertools
import json
import logging
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from binlake.archive.keys import binlog_key
from binlake.archive.stores import MissingObject, open_store
from binlake.assemble.lane import RecordRun
from binlake.assemble.outputs import Anomaly, Item, Items, RowChanges, Transaction
from binlake.assemble.pieces import Finished, Piece, PieceRecord, Survey, finish, survey
from binlake.assemble.walk import FileAssembler, Options
from binlake.binlog.framing import BinlogReader, FormatDescription
from binlake.records import AnomalyRecord, DatedAnomaly, anomaly, ts_from_micros
from binlake.splits.plan import DEFAULT_SPLIT_BYTES, Repeat, Split

if TYPE_CHECKING:
    from binlake.schema.ddl import SchemaState

log = logging.getLogger(__name__)


def run_survey(split: Split, store=None) -> Survey | None:
    """The survey of a big split's transaction, read from the store."""
    store = store or open_store(split.store)
    fde = FormatDescription.from_dict(split.fde)
    big = split.big
    assert big is not None
    start, end = big.start, big.start + big.length
    try:
        with store.open_range(binlog_key(split.source, split.file), start, end) as rng:
            reader = BinlogReader(rng.data, split.file, base=start, fde=fde, pages=rng.pages)
            return survey(reader, start, end, split_bytes=split.split_bytes or DEFAULT_SPLIT_BYTES, txn_id=big.txn_id)
    except MissingObject:
        return None  # the split's own task reports it


def run_split(split: Split, opts: Options, *, columns: bool = False, schema: SchemaState | None = None,
              store=None) -> Iterator[Item | PieceRecord]:
    """The items of one split (binlake.assemble.outputs: Transaction, RowChanges, Anomaly, and the
    lane's RecordRun and RowRun) and, for a piece of a big transaction, its PieceRecord; the
    anomalies last, dated (DatedAnomaly). With `columns`, as the Spark job takes them: row changes as
    RowBlocks (a big transaction's pieces' unplaced), the lane's runs as columns. `schema`: the
    schema history's state at the split's start, which its walk advances (binlake.splits.schemas)."""
    store = store or open_store(split.store)
    key = binlog_key(split.source, split.file)
    opts = replace(opts, source=split.source)
    start, end, size, name = split.start, split.end, split.size, split.file
    pending: list[AnomalyRecord] = []
    starts: list[tuple[int, str]] = []
    with contextlib.ExitStack() as stack:
        try:
            rng = stack.enter_context(store.open_range(key, start, end))
        except MissingObject as e:
            yield Anomaly(DatedAnomaly(**anomaly(split.source, name, start, end, code="MISSING_OBJECT",
                                                 detail=f"{e}: its manifest says {size} bytes"),
                                       commit_ts=split.fallback_ts))
            return
        held = min(rng.total, size)
        if rng.total != size and (start <= held < end or held == end == size):
            pending.append(anomaly(split.source, name, held, max(size, rng.total),
                                   code="TRUNCATED" if rng.total < size else "CORRUPT",
                                   detail=f"{store.url}/{key}: the object holds {rng.total} bytes but its "
                                          f"manifest says {size}"))
        output = Items(columns=columns)
        reader = BinlogReader(rng.data, f"{store.url}/{key}", base=start,
                              fde=FormatDescription.from_dict(split.fde), pages=rng.pages)
        piece = None
        if split.survey is not None and split.piece is not None:
            piece = Piece(reader, opts, output, binlog_file=name, survey=split.survey, piece=split.piece)
            walk = piece.asm
        else:
            walk = FileAssembler(reader, opts, output, binlog_file=name, schema=schema)
        for _ in itertools.chain(walk.steps(), [None]):  # the last records come after the last step
            for item in output.drain():
                if isinstance(item, Anomaly):
                    pending.append(item.record)
                    continue
                if isinstance(item, Transaction):
                    starts.append((item.record["start_pos"], item.record["commit_ts"]))
                elif isinstance(item, RecordRun):  # dated by the run's last: never inside a run
                    start_pos, commit_us = item.last()
                    starts.append((start_pos, ts_from_micros(commit_us)))
                yield item
        if piece is not None:
            yield piece.record()
    starts.sort()
    for rec in pending:
        yield Anomaly(DatedAnomaly(**rec, commit_ts=_date(starts, rec["start_pos"], split.fallback_ts)))
    log.info("%s %s [%d, %d): %d events, %d transactions, %d row changes, %d anomalies", split.source, name,
             start, end, walk.counts.events, walk.counts.transactions, walk.counts.row_changes, len(pending))


def _date(starts: list[tuple[int, str]], pos: int, fallback: str) -> str:
    i = bisect.bisect_right(starts, (pos, "\uffff"))
    return starts[i - 1][1] if i else fallback


def put_together(parts: list[Split], pieces: list[PieceRecord], opts: Options) -> Finished:
    """A big transaction from its pieces (binlake.assemble.pieces.finish): its record, its dated
    LENGTH_MISMATCH if any, and where each piece's rows go."""
    first = parts[0]
    assert first.survey is not None
    return finish(first.survey, pieces, opts=replace(opts, source=first.source), binlog_file=first.file,
                  fde=FormatDescription.from_dict(first.fde))


def _content(split: Split, store) -> tuple[str, int]:
    """A transaction's content, digested as it streams: its kind and outcome, then each row
    change's table, operation and images in order (not where or when a server logged it); and
    its row count."""
    sha = hashlib.sha256()
    rows = 0
    for item in run_split(split, Options(), store=store):
        if isinstance(item, Transaction):
            sha.update(json.dumps([item.record["kind"], item.record["outcome"]]).encode())
        elif isinstance(item, RowChanges):
            for rec in item.records:
                rows += 1
                sha.update(json.dumps([rec["schema"], rec["table"], rec["op"], rec["before"], rec["after"]],
                                      sort_keys=True, default=str).encode())
    return sha.hexdigest(), rows


def check_repeat(r: Repeat, store=None) -> DatedAnomaly | None:
    """The REPEAT_DIFFERS anomaly of a repeat whose content is not its first copy's, else None."""
    store = store or open_store(r.at.store)
    (mine, rows), (first, first_rows) = _content(r.at, store), _content(r.first, store)
    if mine == first:
        return None
    detail = (f"{r.file}: the transaction at {r.at.start} repeats GTID {r.txn_id} of {r.first.file} at "
              f"{r.first.start} with other content ({rows} row changes against {first_rows}, or other tables, "
              "operations or images): the first copy is kept")
    return DatedAnomaly(**anomaly(r.source, r.file, r.at.start, r.at.end, code="REPEAT_DIFFERS", detail=detail),
                        commit_ts=r.commit_ts)
