"""The Spark job's work in one process, in plan order: the reference the job is tested against."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from binlake.assemble.outputs import Anomaly, RowChanges, Transaction
from binlake.assemble.pieces import PieceRecord, place_record
from binlake.assemble.walk import Options
from binlake.records import RowChangeRecord
from binlake.splits.plan import Plan, Split, pieces_of
from binlake.splits.tasks import check_repeat, put_together, run_split, run_survey


def in_range(p: Plan, rec: Mapping[str, Any]) -> bool:
    """Transactions and row changes by commit time, anomalies by their date."""
    return p.start <= rec["commit_ts"] < p.end


def assemble_locally(p: Plan, opts: Options) -> Iterator[Transaction | RowChanges | Anomaly]:
    """The range's transactions, row changes and (dated) anomalies, as the Spark job's tables hold them.

    Holds a big transaction's row changes until its pieces are put together, so it is for
    tests and small archives; the Spark job does the same with a join instead.
    """
    splits = list(p.splits)
    bigs: list[list[Split]] = []
    for big in p.bigs:
        surveyed = run_survey(big)
        parts = pieces_of(big, surveyed)
        if surveyed:
            bigs.append(parts)
        else:
            splits += parts
    again = {r.key for r in p.repeats}

    def kept(split: Split, rec: Mapping[str, Any]) -> bool:  # in the range, and (a transaction's) a first archived copy
        return in_range(p, rec) and (split.source, rec["binlog_file"], rec.get("txn_id")) not in again

    for split in splits:
        for item in run_split(split, opts):
            if isinstance(item, Transaction) and kept(split, item.record):
                yield item
            elif isinstance(item, RowChanges) and (recs := [r for r in item.records if kept(split, r)]):
                yield RowChanges(recs)
            elif isinstance(item, Anomaly) and kept(split, item.record):
                yield item
    for parts in bigs:
        held: list[RowChangeRecord] = []
        pieces: list[PieceRecord] = []
        for split in parts:
            for item in run_split(split, opts):
                if isinstance(item, PieceRecord):
                    pieces.append(item)
                elif isinstance(item, RowChanges):
                    held += item.records
                elif isinstance(item, Transaction | Anomaly) and kept(split, item.record):
                    yield item
        done = put_together(parts, pieces, opts)
        if kept(parts[0], done.transaction):
            yield Transaction(done.transaction)
            if done.anomaly:
                yield Anomaly(done.anomaly)
            placed = [rec for rec in held if place_record(rec, done.fixes)]
            if placed:
                yield RowChanges(placed)
    for rec in p.anomalies:
        if in_range(p, rec):
            yield Anomaly(rec)
    for r in p.repeats:
        differs = check_repeat(r)
        if differs:
            yield Anomaly(differs)
