"""Single-process scan: files read as one stream, in the order given, into records."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields

from binlake.assemble.sinks import RowSink
from binlake.assemble.walk import Counts, Emit, FileAssembler, Options
from binlake.binlog.framing import BinlogReader

log = logging.getLogger(__name__)


@dataclass
class ScanSummary(Counts):
    files: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    by_outcome: dict[str, int] = field(default_factory=dict)


def scan_files(paths: Iterable[str | os.PathLike], opts: Options, emit: Emit,
               sink: RowSink | None = None, write: Callable[[bytes], object] | None = None) -> ScanSummary:
    """Scan each file in turn; raises BinlogError (file:offset) when a file cannot be read.
    Row changes go to `sink` (binlake.assemble.sinks), else to `emit` as records. `write`: the stream
    `emit` and the sink write JSON lines to, where the lane (binlake.assemble.lane) writes its own."""
    summary = ScanSummary()

    def counting_lines(lines: bytes, txns: int) -> None:  # the lane's: committed dml transactions
        summary.by_kind["dml"] = summary.by_kind.get("dml", 0) + txns
        summary.by_outcome["committed"] = summary.by_outcome.get("committed", 0) + txns
        assert write is not None
        write(lines)

    def counting_emit(kind: str, rec: dict) -> None:
        if kind == "transaction":
            summary.by_kind[rec["kind"]] = summary.by_kind.get(rec["kind"], 0) + 1
            summary.by_outcome[rec["outcome"]] = summary.by_outcome.get(rec["outcome"], 0) + 1
        emit(kind, rec)

    for path in paths:
        with BinlogReader.open(path, name=os.fspath(path)) as reader:
            counts = FileAssembler(reader, opts, counting_emit, sink, os.path.basename(path),
                                   lines=counting_lines if write is not None else None).run()
        summary.files += 1
        for f in fields(Counts):
            setattr(summary, f.name, getattr(summary, f.name) + getattr(counts, f.name))
        log.info("%s: %d events, %d transactions, %d row changes, %d anomalies",
                 path, counts.events, counts.transactions, counts.row_changes, counts.anomalies)
    return summary
