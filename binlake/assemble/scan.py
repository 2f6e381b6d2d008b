"""Single-process scan: files read as one stream, in the order given, into an output."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

from binlake.assemble.outputs import Laned, Output, Takes
from binlake.assemble.sinks import RowSink
from binlake.assemble.walk import Counts, FileAssembler, Options
from binlake.binlog.framing import BinlogReader
from binlake.records import AnomalyRecord, TransactionRecord

if TYPE_CHECKING:
    from binlake.schema.ddl import SchemaState

log = logging.getLogger(__name__)


@dataclass
class ScanSummary(Counts):
    files: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    by_outcome: dict[str, int] = field(default_factory=dict)


def scan_files(paths: Iterable[str | os.PathLike], opts: Options, output: Output, *,
               schema: SchemaState | None = None) -> ScanSummary:
    """Scan each file in turn into `output`; raises BinlogError (file:offset) when a file cannot be
    read. `schema`: the schema history's state at the first file, advanced from file to file."""
    summary = ScanSummary()
    counted = _Counted(output, summary)
    for path in paths:
        with BinlogReader.open(path, name=os.fspath(path)) as reader:
            counts = FileAssembler(reader, opts, counted, binlog_file=os.path.basename(path), schema=schema).run()
        summary.files += 1
        for f in fields(Counts):
            setattr(summary, f.name, getattr(summary, f.name) + getattr(counts, f.name))
        if counts.laned:  # the lane's: committed dml transactions
            summary.by_kind["dml"] = summary.by_kind.get("dml", 0) + counts.laned
            summary.by_outcome["committed"] = summary.by_outcome.get("committed", 0) + counts.laned
        log.info("%s: %d events, %d transactions, %d row changes, %d anomalies",
                 path, counts.events, counts.transactions, counts.row_changes, counts.anomalies)
    return summary


class _Counted:
    """An output whose transactions are counted by kind and outcome on their way to it."""

    def __init__(self, output: Output, summary: ScanSummary) -> None:
        self.output = output
        self.summary = summary

    @property
    def takes(self) -> Takes:
        return self.output.takes

    @property
    def rows(self) -> RowSink:
        return self.output.rows

    def transaction(self, rec: TransactionRecord) -> None:
        s = self.summary
        s.by_kind[rec["kind"]] = s.by_kind.get(rec["kind"], 0) + 1
        s.by_outcome[rec["outcome"]] = s.by_outcome.get(rec["outcome"], 0) + 1
        self.output.transaction(rec)

    def anomaly(self, rec: AnomalyRecord) -> None:
        self.output.anomaly(rec)

    def laned(self, run: Laned) -> None:
        self.output.laned(run)
