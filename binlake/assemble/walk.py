"""The walk of one binlog file: whole transactions, their row changes and anomalies, to an output.

Every event goes through the boundary parser (binlake.boundaries); when a transaction starts, its
commit facts are learnt first (binlake.assemble.lookahead), then its rows are decoded and streamed
out already stamped (binlake.assemble.rowsevents), so a transaction is never held in memory whole:
only the row changes of the current segment wait, to learn whether a later segment follows
(`end_segment`, binlake.assemble.segments). The transactions production writes most (a GTID,
BEGIN, table maps and rows, XID) need neither the look-ahead nor the parser: the compiled walk
(BinlogReader.skim) finds their ends and xids, runs at a time, and where the output takes them
whole the lane (binlake.assemble.lane) writes them.

Everything goes to one output (binlake.assemble.outputs.Output): transactions and anomalies as
records, row changes through its row sink, the lane's runs in the form it takes. A walk may start
inside a transaction (Resume: a big transaction's piece, binlake.assemble.pieces).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from binlake.assemble.lane import Lane
from binlake.assemble.lookahead import lookahead
from binlake.assemble.outputs import Output, Takes
from binlake.assemble.rowsevents import DECODE_ERRORS, Placing, RowsEvents, rows_query
from binlake.assemble.segments import Segmenter
from binlake.assemble.statement_dml import written_tables
from binlake.assemble.stream import events, next_type
from binlake.assemble.transactions import Facts, Txn, open_txn, transaction_record
from binlake.binlog import constants as c
from binlake.binlog.framing import BinlogReader, Frame
from binlake.binlog.tablemap import TableMap
from binlake.boundaries.describe import Event, Memo, describe, opening
from binlake.boundaries.parser import ORDINARY_INSIDE, Boundary, BoundaryParser, Kind, Opener, event_kind
from binlake.errors import BinlogError, FatalBinlogError, RowDecodeError
from binlake.records import anomaly

if TYPE_CHECKING:  # sqlglot, behind it, is imported only where a schema history is followed
    from binlake.schema.ddl import SchemaState

_BETWEEN = (Boundary.NOT_DEFINED, Boundary.SELF_CONTAINED, Boundary.END)  # parser states no transaction is open in
_SKIM_RUN = 256  # ordinary transactions cut per call of the compiled walk


@dataclass(frozen=True)
class Options:
    source: str = "local"
    segment_rows: int = 100_000
    segment_bytes: int = 64 << 20
    rows: bool = True  # emit row changes (they are decoded for the counts either way)
    # Runs of ordinary transactions cut by the compiled walk (BinlogReader.skim); off, every event
    # goes through the boundary parser and each transaction's look-ahead (the reference walk).
    skim: bool = True


@dataclass
class Counts:
    events: int = 0
    transactions: int = 0
    row_changes: int = 0
    anomalies: int = 0
    ignored_unknown: int = 0  # unknown events flagged ignorable, skipped
    laned: int = 0  # transactions written by the lane (binlake.assemble.lane), of `transactions`


@dataclass
class Resume:
    """A walk that starts inside a transaction: the transaction as its first reader opened it,
    and what that reader held where this walk starts. Its record is not this walk's to emit
    (it began before the walk): the walk only counts into it, and says whether it ended."""

    txn: Txn
    placing: Placing
    state: Boundary = Boundary.START
    opener: Opener = Opener.GTID
    table_maps: list[TableMap] = field(default_factory=list)
    continues: bool = False  # it goes on past the walk's range: no TRUNCATED at the range's end
    opening: bool = False  # the walk starts at its opening event: taken in as is, no look-ahead
    ended: bool = False  # set by the walk: its ending event was seen


class FileAssembler:
    """Runs the boundary parser over one file and writes its records to an output."""

    def __init__(self, reader: BinlogReader, opts: Options, output: Output, *, binlog_file: str | None = None,
                 resume: Resume | None = None, schema: SchemaState | None = None) -> None:
        """schema: the schema history's tables where the walk starts, which the DDL it meets advances
        (its owner's: `binlake scan` carries it from file to file); None: the binlog's metadata only."""
        self.reader = reader
        self.opts = opts
        self.output = output
        self.file = binlog_file or reader.name.rsplit("/", 1)[-1]
        self.fde = reader.fde
        self.parser = BoundaryParser()
        self.memo = Memo()
        self.txn: Txn | None = None
        self.placing: Placing = Segmenter(opts.segment_rows, opts.segment_bytes)
        self.orphans: list | None = None  # [start, end, detail] of events outside any transaction
        self.schema = schema
        if schema is not None:
            schema.flavor = self.fde.flavor
        self.sink = output.rows if opts.rows else None
        self.counts = Counts()
        self.skims = opts.skim
        self.resume = resume
        self.events = RowsEvents(fde=self.fde, binlog_file=self.file, sink=self.sink, schema=schema,
                                 said=self._anomaly, table_maps=resume.table_maps if resume is not None else ())
        if resume is not None:
            self.txn, self.placing = resume.txn, resume.placing
            self.parser.state, self.parser.opener = resume.state, resume.opener
        self.lane: Lane | None = None
        whole = output.takes & (Takes.LINES | Takes.COLUMNS)  # the output takes the lane's runs
        if whole and opts.skim and resume is None and Lane.fits(reader):
            self.lane = Lane(reader, output, columns=Takes.COLUMNS in output.takes, source=opts.source,
                             binlog_file=self.file, rows=opts.rows, segment_rows=opts.segment_rows,
                             segment_bytes=opts.segment_bytes, table_maps=self.events.table_maps,
                             decoded=self.events.decoded, schema=schema)

    # -- output ------------------------------------------------------------------------

    def _anomaly(self, start: int, end: int, code: str, detail: str, *, severity: str = "error") -> None:
        self.counts.anomalies += 1
        self.output.anomaly(anomaly(self.opts.source, self.file, start, end, code=code, detail=detail,
                                    severity=severity))

    def _where(self, pos: int) -> str:
        return f"{self.file}:{pos}"

    # -- the main pass -----------------------------------------------------------------

    def run(self) -> Counts:
        for _ in self.steps():
            pass
        return self.counts

    def steps(self, start: int | None = None) -> Iterator[None]:
        """Run, yielding after every event (a run of ordinary transactions: after each): a caller
        streaming the records out can take them as they come instead of holding a whole file's
        (see binlake.splits)."""
        start = self.reader.first_event_pos if start is None else start
        if self.resume is not None and self.resume.opening:
            opening = self.resume.txn.start
            self.counts.events += 1
            self._add(self.resume.txn, opening)
            start = opening.frame.end
        pos: int | None = start
        try:
            while pos is not None:
                pos = yield from self._skim(pos)
                pos = yield from self._walk(pos)
        except FatalBinlogError:
            raise
        except BinlogError as exc:
            code = "TRUNCATED" if exc.reason.startswith("truncated") else "CORRUPT"
            self._flush_orphans()
            if self.txn:
                self._break(exc.offset, code, f"{exc}", range_end=self.reader.end)
            else:
                self._anomaly(exc.offset, self.reader.end, code, str(exc))
            return
        self._flush_orphans()
        self._at_end()

    def _located(self, exc: Exception, pos: int) -> None:
        """An exception out of the event at `pos`: a bug unless it is a binlog's own error, and a
        bug says where it happened."""
        if not isinstance(exc, (BinlogError, RowDecodeError)):
            exc.binlake_where = self._where(pos)  # type: ignore[attr-defined]

    def _between(self) -> bool:
        """Whether the walk stands between transactions, where the compiled walk may take over."""
        return self.skims and self.txn is None and self.parser.state in _BETWEEN

    def _walk(self, start: int) -> Generator[None, None, int | None]:
        """Event by event through the boundary parser, until a transaction has ended (the offset
        after it); None at the end of the data."""
        for frame, inner in events(self.reader, start, self._bad_payload):
            self.counts.events += 1
            try:
                self._on_frame(frame, inner)
            except Exception as exc:
                self._located(exc, frame.pos)
                raise
            yield
            if frame.type == c.FORMAT_DESCRIPTION_EVENT and frame.pos != self.reader.first_event_pos:
                self.skims = False  # a later format (a relay log's): only the reference walk follows it
            if inner < 0 and frame.type != c.TRANSACTION_PAYLOAD_EVENT and self._between():
                return frame.end
        return None

    def _skim(self, pos: int) -> Generator[None, None, int]:
        """Runs of ordinary transactions (BinlogReader.skim): their ends and xids found by the
        compiled walk, so neither the look-ahead nor a boundary decision per event is needed; the
        offset of the first transaction it did not take."""
        while self._between():
            if self.lane is not None and self.orphans is None:  # orphans are said before what follows
                pos, laned = self._laned(pos)
                if laned:
                    yield
                    continue
            # with the lane, the skim takes only the one transaction the lane stopped at
            txns, _ = self.reader.skim(pos, ORDINARY_INSIDE, _SKIM_RUN if self.lane is None else 1)
            for frames, xid in txns:
                try:
                    start = opening(frames[0], self.fde)
                except DECODE_ERRORS:  # the reference walk says what is wrong with it
                    return pos
                self._ordinary(start, frames, xid)
                pos = frames[-1].end
                yield
            if not txns:
                break
        return pos

    def _laned(self, pos: int) -> tuple[int, int]:
        """The run of transactions the lane writes from `pos`: the offset after them, and how many."""
        assert self.lane is not None
        try:
            end, txns, events_, rows = self.lane.run(pos)
        except Exception as exc:
            self._located(exc, pos)
            raise
        if txns:
            self.counts.transactions += txns
            self.counts.laned += txns
            self.counts.events += events_
            self.counts.row_changes += rows
            self.parser.state, self.parser.opener = Boundary.END, Opener.NONE  # as after an XID
        return end, txns

    def _ordinary(self, start: Event, frames: list[Frame], xid: int) -> None:
        last = frames[-1]
        facts = Facts(complete=True, end=Event(last, -1, Boundary.END, xid=xid), end_pos=last.end,
                      last_ts=last.timestamp)
        self._flush_orphans()
        self.txn = txn = open_txn(start, facts, self.file)
        self.placing = Segmenter(self.opts.segment_rows, self.opts.segment_bytes, facts.end_pos)
        self.counts.events += len(frames)
        for f in frames:
            try:
                self._add_frame(txn, f, -1)
            except Exception as exc:
                self._located(exc, f.pos)
                raise
        self.parser.state, self.parser.opener = Boundary.END, Opener.NONE  # as after its XID
        self._close(txn)

    def _at_end(self) -> None:
        if self.txn is None:
            return
        if self.resume is not None and self.txn is self.resume.txn and self.resume.continues:
            self.txn = None  # the transaction goes on after this walk's range
            return
        self._break(self.reader.end, "TRUNCATED", f"{self._where(self.reader.end)}: file ends inside a transaction")

    def _bad_payload(self, frame: Frame, reason: str) -> None:
        self._anomaly(frame.pos, frame.end, "DECODE_ERROR", f"{self._where(frame.pos)}: {reason}")
        if self.txn:
            self.txn.broken = True

    def _on_frame(self, frame: Frame, inner: int) -> None:
        if not frame.crc_ok:
            self._anomaly(frame.pos, frame.end, "CHECKSUM_MISMATCH",
                          f"{self._where(frame.pos)}: CRC32 mismatch in {c.event_name(frame.type)} event")
            if self.txn:
                self.txn.broken = True
        e = describe(self.parser, frame, inner, self.fde, next_type=next_type(self.reader, frame, inner),
                     memo=self.memo)
        b = e.boundary
        if b is Boundary.NOT_DEFINED:  # a QUERY that cannot be read: where its transaction ends is not known
            self._cut_at(frame, "DECODE_ERROR", f"{self._where(frame.pos)}: {e.error}")
            return
        if e.error:
            self._anomaly(frame.pos, frame.end, "DECODE_ERROR", f"{self._where(frame.pos)}: {e.error}")
            if self.txn:
                self.txn.broken = True
        if b is Boundary.IGNORE:
            self._ignored(e)
            return
        if event_kind(frame.type) is Kind.INCIDENT:
            said = e.incident or "its body unreadable"
            self._cut_at(frame, "INCIDENT", f"{self._where(frame.pos)}: INCIDENT event, {said}: "
                                            "the source marks events lost here; a replica stops at it")
            return
        if not self.parser.feed(b, e.opener):
            detail = f"{self._where(frame.pos)}: {self.parser.error_text(b)}"
            if self.txn:
                self._break(frame.pos, "BOUNDARY_TRANSITION", detail)
            self.parser.reset()
            if b not in (Boundary.START, Boundary.SELF_CONTAINED) or not self.parser.feed(b, e.opener):
                self._orphan(frame, detail)
                return
        if b is Boundary.START:
            self._flush_orphans()
            self._open(e)
        elif b is Boundary.SELF_CONTAINED:
            self._flush_orphans()
            self._self_contained(e)
        else:
            assert self.txn is not None
            self._add(self.txn, e)
            if b is Boundary.END:
                self._close(self.txn)

    def _ignored(self, e: Event) -> None:
        t = e.frame.type
        if t == c.START_ENCRYPTION_EVENT and e.frame.crc_ok:  # a damaged one is only a CHECKSUM_MISMATCH
            raise FatalBinlogError(self.reader.name, e.frame.pos,
                                   "encrypted binlog: not supported (MariaDB encrypt_binlog)")
        if t not in c.EVENT_NAMES:
            if e.frame.flags & c.LOG_EVENT_IGNORABLE_F:
                self.counts.ignored_unknown += 1
            else:
                self._anomaly(e.frame.pos, e.frame.end, "UNKNOWN_EVENT",
                              f"{self._where(e.frame.pos)}: unknown event type {t} "
                              f"({e.frame.size} bytes) carried as opaque", severity="warning")
        if self.txn:
            self.txn.event_count += 1

    def _cut_at(self, frame: Frame, code: str, detail: str) -> None:
        """An event no transaction goes on past, and that is none itself: an anomaly over it and
        over the transaction open there (reported incomplete); the parser resets, as at an error."""
        self._flush_orphans()
        if self.txn:
            self._break(frame.pos, code, f"{detail}; the transaction open there cannot be whole",
                        range_end=frame.end)
        else:
            self._anomaly(frame.pos, frame.end, code, detail)
        self.parser.reset()

    def _orphan(self, frame: Frame, detail: str) -> None:
        if self.orphans is None:
            self.orphans = [frame.pos, frame.end, detail]
        else:
            self.orphans[1] = max(self.orphans[1], frame.end)

    def _flush_orphans(self) -> None:
        if self.orphans:
            start, end, detail = self.orphans
            self.orphans = None
            self._anomaly(start, end, "BOUNDARY_TRANSITION",
                          f"{detail}; events up to offset {end} belong to no transaction")

    # -- transactions ------------------------------------------------------------------

    def _open(self, e: Event) -> None:
        facts = lookahead(self.reader, e, self.memo)
        self.txn = open_txn(e, facts, self.file)
        self.placing = Segmenter(self.opts.segment_rows, self.opts.segment_bytes, facts.end_pos)
        self._add(self.txn, e)

    def _add(self, txn: Txn, e: Event) -> None:
        self._add_frame(txn, e.frame, e.inner)
        if e.query is None or e.role != "statement":
            return
        # statement-logged DML: its tables, from its text (an error code too: it may have written some)
        txn.tables.update(written_tables(e.query.db, e.query.text,
                                         grouped=e.boundary in (Boundary.INSIDE, Boundary.START)))
        if self.schema is not None and not e.query.error_code:
            self.schema.apply(e.query.db, e.query.text, e.query.collation_server)
            if self.lane is not None:
                self.lane.forget()

    def _add_frame(self, txn: Txn, f: Frame, inner: int) -> None:
        t = f.type
        txn.event_count += 1
        if inner >= 0 or t in c.MARIADB_COMPRESSED_EVENTS:
            txn.compressed = True
        if t == c.TABLE_MAP_EVENT:
            self.events.table_map(txn, f)
        elif t in c.ROWS_EVENTS:
            self.counts.row_changes += self.events.rows(txn, f, self.placing)
        elif t in (c.ROWS_QUERY_LOG_EVENT, c.ANNOTATE_ROWS_EVENT):
            txn.rows_query = rows_query(f)

    def _self_contained(self, e: Event) -> None:
        """A statement with no GTID around it: a transaction of its own, boundaries synthetic."""
        facts = Facts(complete=True, end=e, end_pos=e.frame.end, last_ts=e.frame.timestamp)
        txn = open_txn(e, facts, self.file)
        self.placing = Segmenter(self.opts.segment_rows, self.opts.segment_bytes, facts.end_pos)
        self._add(txn, e)
        self._close(txn)

    def _close(self, txn: Txn) -> None:
        self.txn = None
        self.counts.row_changes += self.placing.close(self.sink, txn.presentable)
        if self.resume is not None and txn is self.resume.txn:
            self.resume.ended = True
            return
        self._emit_txn(txn, txn.facts.end_pos)

    def _break(self, pos: int, code: str, detail: str, range_end: int | None = None) -> None:
        """The open transaction cannot end: report it incomplete, its bytes in an anomaly."""
        txn = self.txn
        assert txn is not None
        self.txn = None
        txn.broken = True
        if self.sink is not None:
            self.sink.drop()
        self._anomaly(txn.start.frame.pos, range_end if range_end is not None else pos, code, detail)
        if self.resume is None or txn is not self.resume.txn:
            self._emit_txn(txn, pos, cut_short=True)

    def _emit_txn(self, txn: Txn, end_pos: int, cut_short: bool = False) -> None:
        txn.segment_count = self.placing.segment_id or 1
        rec, mismatch = transaction_record(txn, end_pos=end_pos, source=self.opts.source, binlog_file=self.file,
                                           cut_short=cut_short)
        self.counts.transactions += 1
        self.output.transaction(rec)
        if mismatch:
            self.counts.anomalies += 1
            self.output.anomaly(mismatch)
