"""Where a walk's records go: the one protocol (Output) that the walk (binlake.assemble.walk), its
skim and its lane (binlake.assemble.lane) all write to, and the outputs binlake has.

An output says what it takes (`takes`), and the walk asks it, never what class it is:

- RECORDS, every output: the walk's transactions and anomalies one at a time (dicts of
  binlake.records' shapes), and the row changes through its row sink (`rows`,
  binlake.assemble.sinks: as records, JSON lines or columns, held per segment);
- LINES: also the lane's whole transactions as the JSON lines `binlake scan` prints (LaneLines);
- COLUMNS: also the lane's transactions' records and row changes as columns (RecordRun, RowRun).

The outputs: Records (records to callables: tests, in-process callers), Lines (`binlake scan`'s
JSON lines to one stream) and Items (typed items in a list, what binlake.splits' tasks yield).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from binlake.assemble.lane import LaneLines, RecordRun, RowRun
from binlake.assemble.sinks import BlockSink, LineSink, RecordSink, RowBlock, RowSink
from binlake.records import AnomalyRecord, DatedAnomaly, RowChangeRecord, TransactionRecord, json_line, record_line

Laned = LaneLines | RecordRun | RowRun  # what the lane hands an output that takes LINES or COLUMNS


class Takes(enum.Flag):
    RECORDS = enum.auto()
    LINES = enum.auto()
    COLUMNS = enum.auto()


class Output(Protocol):
    @property
    def takes(self) -> Takes: ...

    @property
    def rows(self) -> RowSink:
        """Where row changes go, held per segment (consulted only when the walk's options ask for them)."""

    def transaction(self, rec: TransactionRecord) -> None: ...
    def anomaly(self, rec: AnomalyRecord) -> None: ...

    def laned(self, run: Laned) -> None:
        """Whole transactions the lane wrote: LaneLines where the output takes LINES, RecordRun and
        RowRun where it takes COLUMNS."""


class Records:
    """Records handed to callables, each left out where none is given; row changes to the sink
    given, in its form (by default dropped)."""

    takes = Takes.RECORDS

    def __init__(self, transaction: Callable[[TransactionRecord], object] | None = None,
                 anomaly: Callable[[AnomalyRecord], object] | None = None, rows: RowSink | None = None) -> None:
        self.on_transaction = transaction
        self.on_anomaly = anomaly
        self.rows = rows if rows is not None else RecordSink(lambda recs: None)

    def transaction(self, rec: TransactionRecord) -> None:
        if self.on_transaction is not None:
            self.on_transaction(rec)

    def anomaly(self, rec: AnomalyRecord) -> None:
        if self.on_anomaly is not None:
            self.on_anomaly(rec)

    def laned(self, run: Laned) -> None:
        raise AssertionError("Records takes no lane's runs")


class Lines:
    """`binlake scan`'s JSON lines written to one stream: every transaction, the row changes the
    walk's options ask for, the anomalies when asked; the lane's whole transactions among them."""

    takes = Takes.RECORDS | Takes.LINES

    def __init__(self, write: Callable[[bytes], object], anomalies: bool = True) -> None:
        self.write = write
        self.anomalies = anomalies
        self.rows = LineSink(self._write_all)

    def _write_all(self, chunks: Iterable[bytes]) -> None:
        for chunk in chunks:
            self.write(chunk)

    def transaction(self, rec: TransactionRecord) -> None:
        self.write(json_line(rec))

    def anomaly(self, rec: AnomalyRecord) -> None:
        if self.anomalies:
            self.write(record_line("anomaly", rec))

    def laned(self, run: Laned) -> None:
        assert isinstance(run, LaneLines), "Lines takes the lane's lines"
        self.write(run.text)


@dataclass(frozen=True, slots=True)
class Transaction:
    record: TransactionRecord


@dataclass(frozen=True, slots=True)
class Anomaly:
    record: AnomalyRecord | DatedAnomaly  # dated (its commit_ts) by binlake.splits


@dataclass(frozen=True, slots=True)
class RowChanges:
    """A segment's row changes, as records (of a big transaction's piece: unplaced)."""

    records: Sequence[RowChangeRecord]


@dataclass(frozen=True, slots=True)
class RowBlocks:
    """A segment's row changes, one RowBlock per rows event."""

    blocks: list[RowBlock]


Item = Transaction | Anomaly | RowChanges | RowBlocks | RecordRun | RowRun


class Items:
    """Every record as a typed item, in a list its owner drains as the walk goes. With `columns`, the
    row changes come as RowBlocks and the lane's runs as RecordRun and RowRun; without, the row
    changes as records and no lane."""

    def __init__(self, columns: bool = False) -> None:
        self.items: list[Item] = []
        self.takes = Takes.RECORDS | Takes.COLUMNS if columns else Takes.RECORDS
        self.rows: RowSink = BlockSink(self._blocks) if columns else RecordSink(self._records)

    def _blocks(self, blocks: list[RowBlock]) -> None:
        self.items.append(RowBlocks(blocks))

    def _records(self, recs: list[RowChangeRecord]) -> None:
        self.items.append(RowChanges(recs))

    def transaction(self, rec: TransactionRecord) -> None:
        self.items.append(Transaction(rec))

    def anomaly(self, rec: AnomalyRecord) -> None:
        self.items.append(Anomaly(rec))

    def laned(self, run: Laned) -> None:
        assert not isinstance(run, LaneLines), "Items takes the lane's columns"
        self.items.append(run)

    def drain(self) -> list[Item]:
        items, self.items = self.items, []
        return items
