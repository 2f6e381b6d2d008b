"""Single-process scan: files read as one stream, in the order given, into records."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from binlake.assemble import Emit, EmitBlocks, EmitLines, EmitRows, FileAssembler, Options
from binlake.binlog.framing import BinlogReader

log = logging.getLogger(__name__)


@dataclass
class ScanSummary:
    files: int = 0
    events: int = 0
    transactions: int = 0
    row_changes: int = 0
    anomalies: int = 0
    ignored_unknown: int = 0  # unknown events flagged ignorable, skipped
    by_kind: dict[str, int] = field(default_factory=dict)
    by_outcome: dict[str, int] = field(default_factory=dict)


def scan_files(paths: Iterable[str | os.PathLike], opts: Options, emit: Emit,
               emit_rows: EmitRows | None = None, emit_lines: EmitLines | None = None,
               emit_blocks: EmitBlocks | None = None) -> ScanSummary:
    """Scan each file in turn; raises BinlogError (file:offset) when a file cannot be read."""
    summary = ScanSummary()

    def counting_emit(kind: str, rec: dict) -> None:
        if kind == "transaction":
            summary.by_kind[rec["kind"]] = summary.by_kind.get(rec["kind"], 0) + 1
            summary.by_outcome[rec["outcome"]] = summary.by_outcome.get(rec["outcome"], 0) + 1
        emit(kind, rec)

    for path in paths:
        with BinlogReader.open(path, name=os.fspath(path)) as reader:
            stats = FileAssembler(reader, opts, counting_emit, binlog_file=os.path.basename(path),
                                  emit_rows=emit_rows, emit_lines=emit_lines, emit_blocks=emit_blocks).run()
        summary.files += 1
        for key in ("events", "transactions", "row_changes", "anomalies", "ignored_unknown"):
            setattr(summary, key, getattr(summary, key) + stats[key])
        log.info("%s: %d events, %d transactions, %d row changes, %d anomalies",
                 path, stats["events"], stats["transactions"], stats["row_changes"],
                 stats["anomalies"])
    return summary
