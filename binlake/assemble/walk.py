"""Assemble whole transactions, their row changes and anomalies from one binlog file.

Two passes per transaction, as the seeds' replicator "rewinds": when a transaction
starts, a light pass walks its events (headers and small bodies only: GTID, QUERY
text, XID, XA_PREPARE) to its end to learn the commit facts — commit timestamp, xid,
outcome. The main pass then decodes its rows and streams them out already stamped,
so a transaction is never held in memory whole: only the row changes of the current
segment wait, to learn whether a later segment follows (`end_segment`). The transactions
production writes most (a GTID, BEGIN, table maps and rows, XID) need neither the light pass
nor the parser: the compiled walk (BinlogReader.skim) finds their ends and xids, runs at a time,
and hands back their frames; the walk takes anything else event by event.

This module is the walk and the transaction facts. Transactions and anomalies go to `emit`;
row changes to a sink (binlake.assemble.sinks), numbered by binlake.assemble.segments. A walk may start inside
a transaction (Resume: a big transaction's piece, binlake.assemble.pieces).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from binlake.assemble.lane import Lane, Lines, RecordRun
from binlake.assemble.segments import Segmenter
from binlake.assemble.sinks import BlockSink, LineSink, RecordSink, RowsAt, RowSink
from binlake.binlog import constants as c
from binlake.binlog import events as ev_codec
from binlake.binlog import rows as rows_codec
from binlake.binlog.framing import BinlogReader, Frame
from binlake.binlog.payload import inner_frames
from binlake.binlog.tablemap import TableMap, TableMapCache, table_map_name
from binlake.boundaries.describe import Event, describe, opening
from binlake.boundaries.parser import ORDINARY_INSIDE, Boundary, BoundaryParser, Kind, Opener, event_kind
from binlake.errors import BinlogError, FatalBinlogError, RowDecodeError
from binlake.records import Facts, Txn, open_txn, transaction_record, ts_from_seconds
from binlake.records import anomaly as make_anomaly

if TYPE_CHECKING:  # sqlglot, behind it, is imported only where a schema history is followed
    from binlake.schema.ddl import SchemaState

Emit = Callable[[str, dict], None]  # ("transaction" | "row_change" | "anomaly", record)
_DECODE_ERRORS = (RowDecodeError, ValueError, struct.error, IndexError, KeyError,
                  UnicodeDecodeError)
_BETWEEN = (Boundary.NOT_DEFINED, Boundary.SELF_CONTAINED, Boundary.END)  # parser states no transaction is open in
_SKIM_RUN = 256  # ordinary transactions cut per call of the compiled walk


@dataclass
class Options:
    source: str = "local"
    segment_rows: int = 100_000
    segment_bytes: int = 64 << 20
    rows: bool = True  # emit row changes (they are decoded for the counts either way)
    # Runs of ordinary transactions cut by the compiled walk (BinlogReader.skim); off, every event
    # goes through the boundary parser and each transaction's look-ahead (the reference walk).
    skim: bool = True
    # The schema history's tables at the walk's start, advanced by the DDL the walk meets
    # (binlake.schema): names and checks TABLE_MAPs. None: the binlog's own metadata only.
    schema: SchemaState | None = None


@dataclass
class Counts:
    events: int = 0
    transactions: int = 0
    row_changes: int = 0
    anomalies: int = 0
    ignored_unknown: int = 0  # unknown events flagged ignorable, skipped
    laned: int = 0  # transactions written by the lane (binlake.assemble.lane), of `transactions`


class Placing(Protocol):
    """How a transaction's row changes are numbered and when its sink hands them on
    (binlake.assemble.segments: Segmenter, Unplaced). Each call returns the row changes handed on."""

    @property
    def segment_id(self) -> int | None: ...
    @property
    def seq(self) -> int: ...
    @property
    def piece(self) -> int | None: ...
    @property
    def ordinal(self) -> int | None: ...

    def before(self, sink: RowSink | None, presentable: bool) -> int: ...
    def after(self, rows: int, size: int, sink: RowSink | None) -> int: ...
    def close(self, sink: RowSink | None, presentable: bool) -> int: ...
    def surely_last(self, size: int, end: int) -> bool: ...
    def likely_last(self, rows: int, size: int, end: int) -> bool: ...


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
    """Runs the boundary parser over one file and emits its records."""

    def __init__(self, reader: BinlogReader, opts: Options, emit: Emit, sink: RowSink | None = None,
                 binlog_file: str | None = None, resume: Resume | None = None, lines: Lines | None = None,
                 records: Callable[[RecordRun], None] | None = None) -> None:
        """lines: where records may also be written as JSON lines (binlake.assemble.lane), the stream `emit`
        and a LineSink write theirs to, for the transactions the lane takes (a BlockSink with
        `emit_run` is handed their row changes as columns); records: where the lane's transactions'
        records go as columns instead (binlake.assemble.lane.RecordRun)."""
        self.reader = reader
        self.opts = opts
        self.emit = emit
        if opts.rows and sink is None:
            sink = RecordSink(self._emit_each)
        self.sink = sink if opts.rows else None
        self.file = binlog_file or reader.name.rsplit("/", 1)[-1]
        self.fde = reader.fde
        self.parser = BoundaryParser()
        self.txn: Txn | None = None
        self.placing: Placing = Segmenter(opts.segment_rows, opts.segment_bytes)
        self.orphans: list | None = None  # [start, end, detail] of events outside any transaction
        self.table_maps: dict[int, TableMap] = {}  # by table id: the maps in effect
        self.decoded = TableMapCache(self.fde.flavor)
        self.schema = opts.schema
        if self.schema is not None:
            self.schema.flavor = self.fde.flavor
        self.mismatches: set[tuple[str, str, str]] = set()  # SCHEMA_MISMATCH said once per file
        self.counts = Counts()
        self.skims = opts.skim
        self.resume = resume
        if resume is not None:
            self.txn, self.placing = resume.txn, resume.placing
            self.parser.state, self.parser.opener = resume.state, resume.opener
            self.table_maps = {tm.table_id: tm for tm in resume.table_maps}
        self.lane: Lane | None = None
        # The lane writes row changes as lines (a LineSink's) or hands them on as columns (a
        # BlockSink's that takes runs)
        runs = sink.laned if opts.rows and isinstance(sink, BlockSink) and sink.emit_run else None
        lanes_rows = not opts.rows or isinstance(sink, LineSink) or runs is not None
        if lines is not None and lanes_rows and opts.skim and resume is None and Lane.fits(reader):
            self.lane = Lane(reader, lines, opts.source, self.file, opts.rows, opts.segment_rows,
                             opts.segment_bytes, self.table_maps, self.decoded, self.schema, runs, records)

    # -- output ------------------------------------------------------------------------

    def _anomaly(self, start: int, end: int, code: str, detail: str, severity: str = "error"):
        self.counts.anomalies += 1
        self.emit("anomaly", make_anomaly(self.opts.source, self.file, start, end, code,
                                          detail, severity))

    def _emit_each(self, recs: list[dict]) -> None:
        for rec in recs:
            self.emit("row_change", rec)

    def _where(self, pos: int) -> str:
        return f"{self.file}:{pos}"

    # -- the event stream --------------------------------------------------------------

    def _stream(self, start: int, on_bad_payload: Callable[[Frame, str], None] | None
                ) -> Iterator[tuple[Frame, int]]:
        for f in self.reader.frames(start):
            yield f, -1
            if f.type == c.TRANSACTION_PAYLOAD_EVENT and f.crc_ok:
                try:
                    for i, inner in enumerate(inner_frames(f, 19)):
                        yield inner, i
                except ValueError as exc:
                    if on_bad_payload:
                        on_bad_payload(f, f"corrupt TRANSACTION_PAYLOAD: {exc}")

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
        for frame, inner in self._stream(start, self._bad_payload):
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
                except _DECODE_ERRORS:  # the reference walk says what is wrong with it
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
            end, txns, events, rows = self.lane.run(pos)
        except Exception as exc:
            self._located(exc, pos)
            raise
        if txns:
            self.counts.transactions += txns
            self.counts.laned += txns
            self.counts.events += events
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
                          f"{self._where(frame.pos)}: CRC32 mismatch in "
                          f"{c.event_name(frame.type)} event")
            if self.txn:
                self.txn.broken = True
        e = describe(self.parser, frame, inner, self.fde, self._next_type(frame, inner))
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
                              f"({e.frame.size} bytes) carried as opaque", "warning")
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
        facts = self._lookahead(e)
        self.txn = open_txn(e, facts, self.file)
        self.placing = Segmenter(self.opts.segment_rows, self.opts.segment_bytes, facts.end_pos)
        self._add(self.txn, e)

    def _lookahead(self, start: Event) -> Facts:
        """Walk the transaction's events without decoding rows, to its end."""
        p = BoundaryParser()
        p.feed(Boundary.START, start.opener)
        facts = Facts(last_ts=start.frame.timestamp)
        key = (start.frame.pos, start.inner)
        outer = start.frame.pos
        if start.inner >= 0:  # a START inside a payload: begin at the payload itself
            outer = self._payload_pos(start.frame)
        seen_start = False
        try:
            for frame, inner in self._stream(outer, None):
                if not seen_start:
                    seen_start = (frame.pos, inner) == key
                    continue
                if not frame.crc_ok:
                    facts.broken = True
                e = describe(p, frame, inner, self.fde, self._next_type(frame, inner))
                if e.error:
                    facts.broken = True
                if e.boundary is Boundary.IGNORE:
                    continue
                facts.last_ts = frame.timestamp
                if not p.feed(e.boundary, e.opener):
                    facts.end_pos = frame.pos if inner < 0 else self._payload_pos(frame)
                    return facts
                if e.boundary is Boundary.END:
                    facts.complete = True
                    facts.end = e
                    facts.end_pos = frame.end if inner < 0 else frame.pos
                    return facts
        except BinlogError as exc:
            facts.end_pos = exc.offset
            return facts
        facts.end_pos = self.reader.end
        return facts

    def _next_type(self, frame: Frame, inner: int) -> int | None:
        """The type of the event after a real one (an XID after a statement ends its group)."""
        return self.reader.type_at(frame.end) if inner < 0 else None

    def _payload_pos(self, inner_frame: Frame) -> int:
        # Inner events sit at their payload's end; find that payload's start.
        for f in self.reader.frames():
            if f.end == inner_frame.pos and f.type == c.TRANSACTION_PAYLOAD_EVENT:
                return f.pos
        return inner_frame.pos

    def _add(self, txn: Txn, e: Event) -> None:
        self._add_frame(txn, e.frame, e.inner)
        if e.query is not None and self.schema is not None and e.role == "statement" and not e.query.error_code:
            self.schema.apply(e.query.db, e.query.text, e.query.collation_server)
            if self.lane is not None:
                self.lane.forget()

    def _add_frame(self, txn: Txn, f: Frame, inner: int) -> None:
        t = f.type
        txn.event_count += 1
        if inner >= 0 or t in c.MARIADB_COMPRESSED_EVENTS:
            txn.compressed = True
        if t == c.TABLE_MAP_EVENT:
            try:
                self._table_map(f)
            except _DECODE_ERRORS as exc:
                self._decode_failed(txn, f, exc)
        elif t in c.ROWS_EVENTS:
            self._rows(txn, f)
        elif t in (c.ROWS_QUERY_LOG_EVENT, c.ANNOTATE_ROWS_EVENT):
            txn.rows_query = rows_query(f)

    def _table_map(self, f: Frame) -> None:
        phl = self.fde.post_header_len(f.type)
        known = self.schema.columns(*table_map_name(f.body, phl)) if self.schema is not None else None
        tm = self.decoded.decode(f.body, phl, known)
        self.table_maps[tm.table_id] = tm
        said = (tm.schema, tm.table, tm.mismatch or "")
        if tm.mismatch and said not in self.mismatches:
            self.mismatches.add(said)
            self._anomaly(f.pos, f.end, "SCHEMA_MISMATCH",
                          f"{self._where(f.pos)}: TABLE_MAP of {tm.schema}.{tm.table} disagrees with the schema "
                          f"history: {tm.mismatch}; its rows have positional names (said once per file)", "warning")

    def _decode_failed(self, txn: Txn, f: Frame, exc: Exception) -> None:
        txn.broken = True
        self._anomaly(f.pos, f.end, "DECODE_ERROR",
                      f"{self._where(f.pos)}: cannot decode {c.event_name(f.type)} event: {exc}")
        if f.type == c.TABLE_MAP_EVENT:
            self.table_maps.pop(rows_codec.rows_table_id(f.type, f.body, self.fde.post_header_len(f.type)), None)

    def _rows(self, txn: Txn, f: Frame) -> None:
        """Decode a rows event, count it, and give its row changes their place in the sink."""
        phl = self.fde.post_header_len(f.type)
        placing, sink = self.placing, self.sink
        try:
            op = rows_codec.ROWS_EVENT_TYPES[f.type]
            table_id = rows_codec.rows_table_id(f.type, f.body, phl)
            tm = self.table_maps.get(table_id)
            if tm is None:
                raise ValueError(f"no TABLE_MAP for table id {table_id}")
            self.counts.row_changes += placing.before(sink, txn.presentable)
            done: tuple[int, int] | None = None
            if sink is not None:
                at = RowsAt(txn.txn_id, placing.segment_id, placing.seq, self.file, f.pos, txn.commit_ts,
                            ts_from_seconds(f.timestamp), tm.schema, tm.table, op, txn.rows_query, txn.xid,
                            placing.piece, placing.ordinal)
                done = sink.take(at, f, tm, phl, placing)
            if done is None:
                ev = rows_codec.decode_rows(f.type, f.body, phl, tm, self.fde.flavor)
                if sink is not None:
                    sink.hold(at, f, ev.rows, placing)
                done = ev.flags, len(ev.rows)
        except _DECODE_ERRORS as exc:
            self._decode_failed(txn, f, exc)
            return
        flags, n = done
        txn.count(tm.schema, tm.table, op, n)
        self.counts.row_changes += placing.after(n, f.size, sink)
        if flags & c.STMT_END_F:
            txn.rows_query = None

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
        rec, mismatch = transaction_record(txn, end_pos, self.opts.source, self.file, cut_short)
        self.counts.transactions += 1
        self.emit("transaction", rec)
        if mismatch:
            self._anomaly(*mismatch)


def rows_query(f: Frame) -> str | None:
    """The statement text of a ROWS_QUERY (MySQL) or ANNOTATE_ROWS (MariaDB) event; None when
    it cannot be read (the rows are still decoded)."""
    try:
        if f.type == c.ROWS_QUERY_LOG_EVENT:
            return ev_codec.decode_rows_query(f.body)
        return ev_codec.decode_annotate_rows(f.body)
    except (ValueError, IndexError):
        return None
