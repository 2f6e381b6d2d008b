"""Assemble whole transactions, their row changes and anomalies from one binlog file.

Two passes per transaction, as the seeds' replicator "rewinds": when a transaction
starts, a light pass walks its events (headers and small bodies only: GTID, QUERY
text, XID, XA_PREPARE) to its end to learn the commit facts — commit timestamp, xid,
outcome. The main pass then decodes its rows and streams them out already stamped,
so a transaction is never held in memory whole: only the row changes of the current
segment wait, to learn whether a later segment follows (`end_segment`).
"""

from __future__ import annotations

import array
import itertools
import re
import struct
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import orjson

from binlake.binlog import constants as c
from binlake.binlog import events as ev_codec
from binlake.binlog import fastrows
from binlake.binlog import rows as rows_codec
from binlake.binlog.framing import BinlogReader, Frame
from binlake.binlog.payload import inner_frames
from binlake.boundary import Boundary, BoundaryParser
from binlake.describe import Event, describe
from binlake.errors import BinlogError, FatalBinlogError, RowDecodeError
from binlake.records import anomaly as make_anomaly
from binlake.records import derived_txn_id, image_json, json_line, ts_from_micros, ts_from_seconds

Emit = Callable[[str, dict], None]  # ("transaction" | "row_change" | "anomaly", record)
EmitRows = Callable[[list[dict]], None]  # a segment's row changes at once (fewer calls per row)
EmitLines = Callable[[Iterable[bytes]], None]  # a segment's row changes as JSON lines, in chunks
_DECODE_ERRORS = (RowDecodeError, ValueError, struct.error, IndexError, KeyError,
                  UnicodeDecodeError)


@dataclass
class Options:
    source: str = "local"
    segment_rows: int = 100_000
    segment_bytes: int = 64 << 20
    rows: bool = True  # emit row changes (they are decoded for the counts either way)


@dataclass(slots=True)
class RowBlock:
    """The row changes of one rows event as columns, for the Spark job's Arrow batches: what they
    share once, seq counted from `seq`, and the images' JSON texts (the same text `scan --rows`
    prints) as an Arrow string column's (offsets, data); None for the side the operation has none
    of (an insert's before, a delete's after)."""

    txn_id: str
    segment_id: int
    seq: int
    binlog_file: str
    event_pos: int
    commit_ts: str
    event_ts: str
    schema: str
    table: str
    op: str
    rows_query: str | None
    xid: int | None
    rows: int
    before: tuple[bytes, bytes] | None
    after: tuple[bytes, bytes] | None
    end_segment: bool = False
    piece: int | None = None  # a big transaction's piece: its place comes from binlake.pieces.finish
    ev_ord: int | None = None


EmitBlocks = Callable[[list[RowBlock]], None]  # a segment's row changes as blocks


@dataclass
class Facts:
    """What the light pass learns of a transaction before its rows are read."""

    complete: bool = False
    end: Event | None = None
    end_pos: int = 0
    last_ts: int = 0
    broken: bool = False  # a CRC mismatch or an undecodable event inside


@dataclass
class Txn:
    start: Event
    facts: Facts
    txn_id: str
    commit_ts: str
    xid: int | None
    event_count: int = 0
    rows: dict[str, int] = field(default_factory=lambda: {"insert": 0, "update": 0, "delete": 0})
    tables: set[str] = field(default_factory=set)
    compressed: bool = False
    broken: bool = False
    seq: int = 0
    segment_id: int = 1
    seg_rows: int = 0
    seg_bytes: int = 0
    seg_buf: list = field(default_factory=list)  # records, or chunks of JSON lines (emit_lines)
    seg_ends: bool = False  # the "end_segment" the current segment's JSON lines are written with
    rows_query: str | None = None
    first_ts: int = 0


class FileAssembler:
    """Runs the boundary parser over one file and emits its records."""

    def __init__(self, reader: BinlogReader, opts: Options, emit: Emit,
                 binlog_file: str | None = None, emit_rows: EmitRows | None = None,
                 emit_lines: EmitLines | None = None, emit_blocks: EmitBlocks | None = None) -> None:
        self.reader = reader
        self.opts = opts
        self.emit = emit
        self.emit_rows = emit_rows or self._emit_each
        # Row changes as the JSON lines `scan --rows` prints, written by the compiled decoder
        # straight from the row images: no Python object per row or value.
        self.emit_lines = emit_lines if opts.rows else None
        self.emit_blocks = emit_blocks if opts.rows else None  # the same, as columns
        self.file = binlog_file or reader.name.rsplit("/", 1)[-1]
        self.fde = reader.fde
        self.parser = BoundaryParser()
        self.txn: Txn | None = None
        self.orphans: list | None = None  # [start, end, detail] of events outside any transaction
        self.table_maps: dict[int, rows_codec.TableMap] = {}
        self.stats = {"events": 0, "transactions": 0, "row_changes": 0, "anomalies": 0,
                      "ignored_unknown": 0}
        self.previous_gtids: str | None = None

    # -- output ------------------------------------------------------------------------

    def _anomaly(self, start: int, end: int, code: str, detail: str, severity: str = "error"):
        self.stats["anomalies"] += 1
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

    def run(self) -> dict:
        for _ in self.steps():
            pass
        return self.stats

    def steps(self, start: int | None = None) -> Iterator[None]:
        """Run, yielding after every event: a caller streaming the records out can take them
        as they come instead of holding a whole file's (see binlake.splits)."""
        start = self.reader.first_event_pos if start is None else start
        try:
            for frame, inner in self._stream(start, self._bad_payload):
                self.stats["events"] += 1
                try:
                    self._on_frame(frame, inner)
                except (BinlogError, RowDecodeError):
                    raise
                except Exception as exc:  # a bug: say where it happened
                    exc.binlake_where = self._where(frame.pos)  # type: ignore[attr-defined]
                    raise
                yield
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

    def _at_end(self) -> None:
        if self.txn:
            self._break(self.reader.end, "TRUNCATED",
                        f"{self._where(self.reader.end)}: file ends inside a transaction")

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
        e = describe(self.parser, frame, inner, self.fde)
        if e.error:
            self._anomaly(frame.pos, frame.end, "DECODE_ERROR", f"{self._where(frame.pos)}: {e.error}")
            if self.txn:
                self.txn.broken = True
        b = e.boundary
        if b is Boundary.IGNORE:
            self._ignored(e)
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
        if t == c.START_ENCRYPTION_EVENT:
            raise FatalBinlogError(self.reader.name, e.frame.pos,
                                   "encrypted binlog: not supported (MariaDB encrypt_binlog)")
        if t not in c.EVENT_NAMES:
            if e.frame.flags & c.LOG_EVENT_IGNORABLE_F:
                self.stats["ignored_unknown"] += 1
            else:
                self._anomaly(e.frame.pos, e.frame.end, "UNKNOWN_EVENT",
                              f"{self._where(e.frame.pos)}: unknown event type {t} "
                              f"({e.frame.size} bytes) carried as opaque", "warning")
        if self.txn:
            self.txn.event_count += 1

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
        self.txn = self._new_txn(e, self._lookahead(e))
        self._add(self.txn, e)

    def _new_txn(self, e: Event, facts: Facts) -> Txn:
        g = e.gtid
        gtid = g.gtid if g else None
        txn_id = gtid or derived_txn_id(e.frame.server_id, self.file, e.frame.pos)
        if g and g.immediate_commit_ts:
            commit_ts = ts_from_micros(g.immediate_commit_ts)
        elif facts.end is not None:
            commit_ts = ts_from_seconds(facts.end.frame.timestamp)
        else:
            commit_ts = ts_from_seconds(facts.last_ts or e.frame.timestamp)
        end = facts.end
        xid = None
        if end is not None:
            xid = end.xid if end.xid is not None else (end.query.ddl_xid if end.query else None)
        return Txn(e, facts, txn_id, commit_ts, xid, first_ts=e.frame.timestamp)

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
                e = describe(p, frame, inner, self.fde)
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

    def _payload_pos(self, inner_frame: Frame) -> int:
        # Inner events sit at their payload's end; find that payload's start.
        for f in self.reader.frames():
            if f.end == inner_frame.pos and f.type == c.TRANSACTION_PAYLOAD_EVENT:
                return f.pos
        return inner_frame.pos

    def _add(self, txn: Txn, e: Event) -> None:
        f = e.frame
        t = f.type
        txn.event_count += 1
        if e.inner >= 0 or t in c.MARIADB_COMPRESSED_EVENTS:
            txn.compressed = True
        if t == c.TABLE_MAP_EVENT:
            try:
                tm = rows_codec.decode_table_map(f.body, self.fde.post_header_len(t), self.fde.flavor)
                self.table_maps[tm.table_id] = tm
            except _DECODE_ERRORS as exc:
                self._decode_failed(txn, f, exc)
        elif t in c.ROWS_EVENTS:
            self._rows(txn, f)
        elif t in (c.ROWS_QUERY_LOG_EVENT, c.ANNOTATE_ROWS_EVENT):
            try:
                txn.rows_query = (ev_codec.decode_rows_query(f.body) if t == c.ROWS_QUERY_LOG_EVENT
                                  else ev_codec.decode_annotate_rows(f.body))
            except (ValueError, IndexError):
                txn.rows_query = None

    def _decode_failed(self, txn: Txn, f: Frame, exc: Exception) -> None:
        txn.broken = True
        self._anomaly(f.pos, f.end, "DECODE_ERROR",
                      f"{self._where(f.pos)}: cannot decode {c.event_name(f.type)} event: {exc}")
        if f.type == c.TABLE_MAP_EVENT:
            self.table_maps.pop(rows_codec.rows_table_id(f.type, f.body, self.fde.post_header_len(f.type)), None)

    def _rows(self, txn: Txn, f: Frame) -> None:
        phl = self.fde.post_header_len(f.type)
        try:
            table_id = rows_codec.rows_table_id(f.type, f.body, phl)
            tm = self.table_maps.get(table_id)
            if tm is None:
                raise ValueError(f"no TABLE_MAP for table id {table_id}")
            if self.emit_lines is not None and self._rendered(txn, f, tm, phl):
                return
            if self.emit_blocks is not None and self._blocked(txn, f, tm, phl):
                return
            ev = rows_codec.decode_rows(f.type, f.body, phl, tm, self.fde.flavor)
        except _DECODE_ERRORS as exc:
            self._decode_failed(txn, f, exc)
            return
        self._place(txn, f, tm, ev)

    def _place(self, txn: Txn, f: Frame, tm: rows_codec.TableMap, ev) -> None:
        """Number the decoded rows of one rows event and hold them in the current segment."""
        self._room(txn)
        if self.opts.rows:
            recs = self._row_changes(txn, f, tm, ev.op, ev.rows)
            if self.emit_blocks is not None:
                if recs:  # an event the compiled path did not take: its records as the same columns
                    txn.seg_buf.append(self._block(txn, f, tm, ev.op, len(recs), *_image_columns(recs)))
            elif self.emit_lines is None:
                txn.seg_buf.extend(recs)
            elif recs:  # an event the compiled path did not take: its records as the same lines
                first = self._segment_starts(txn)
                for rec in recs:
                    rec["end_segment"] = txn.seg_ends
                self._hold_lines(txn, f, len(recs), b"".join(map(json_line, recs)), first)
        self._held(txn, f, tm, ev.op, len(ev.rows), ev.flags)

    def _rendered(self, txn: Txn, f: Frame, tm: rows_codec.TableMap, phl: int) -> bool:
        """Hold a rows event's row changes as JSON lines if the compiled path takes it."""
        op = rows_codec.ROWS_EVENT_TYPES.get(f.type)
        if op is None or tm.json_keys is None or not fastrows.enabled():
            return False
        self._room(txn)
        first = self._segment_starts(txn)
        done = rows_codec.render_rows(f.type, f.body, phl, tm, op, self._line_parts(txn, f, tm, op), txn.seq)
        if done is None:
            return False
        flags, n, lines = done
        self._hold_lines(txn, f, n, lines, first)
        self._held(txn, f, tm, op, n, flags)
        return True

    @staticmethod
    def _columns(f: Frame, tm: rows_codec.TableMap, phl: int) -> tuple | None:
        """(op, flags, rows, before, after) of a rows event by the compiled path, or None."""
        op = rows_codec.ROWS_EVENT_TYPES.get(f.type)
        if op is None or tm.json_keys is None or not fastrows.enabled():
            return None
        done = rows_codec.render_columns(f.type, f.body, phl, tm, op)
        return None if done is None else (op, *done)

    def _blocked(self, txn: Txn, f: Frame, tm: rows_codec.TableMap, phl: int) -> bool:
        """Hold a rows event's row changes as a RowBlock if the compiled path takes it."""
        done = self._columns(f, tm, phl)
        if done is None:
            return False
        op, flags, n, before, after = done
        self._room(txn)
        if n:
            txn.seg_buf.append(self._block(txn, f, tm, op, n, before, after))
        self._held(txn, f, tm, op, n, flags)
        return True

    def _block(self, txn: Txn, f: Frame, tm: rows_codec.TableMap, op: str, n: int,
               before: tuple[bytes, bytes] | None, after: tuple[bytes, bytes] | None) -> RowBlock:
        return RowBlock(txn.txn_id, txn.segment_id, txn.seq, self.file, f.pos, txn.commit_ts,
                        ts_from_seconds(f.timestamp), tm.schema, tm.table, op, txn.rows_query, txn.xid, n,
                        before, after)

    @staticmethod
    def _segment_starts(txn: Txn) -> bool:
        """Whether the next lines are the segment's first: those are written as not its last,
        then guessed (_guess_last)."""
        if txn.seg_buf:
            return False
        txn.seg_ends = False
        return True

    def _hold_lines(self, txn: Txn, f: Frame, n: int, lines: bytes, first: bool) -> None:
        if lines:
            txn.seg_buf.append(self._guess_last(txn, f, n, lines) if first else lines)

    def _room(self, txn: Txn) -> None:
        """Flush the current segment if it is full: the next rows go to a new one."""
        if txn.seg_rows and (txn.seg_rows >= self.opts.segment_rows
                             or txn.seg_bytes >= self.opts.segment_bytes):
            self._flush_segment(txn, end_segment=False)
            txn.segment_id += 1
            txn.seg_rows = txn.seg_bytes = 0

    def _guess_last(self, txn: Txn, f: Frame, n: int, lines: bytes) -> bytes:
        """A segment's first lines, rows event f's n rows: when the rest of the transaction, at
        this event's rows per byte, fits in the segment with room to spare, guess that it is the
        last and write them, and the segment's next lines, with "end_segment":true. Most lines are
        then written right the first time; _flush_segment mends a wrong guess."""
        left = txn.facts.end_pos - f.end  # the transaction's bytes after this event
        rows = txn.seg_rows + n + n / f.size * left
        if (left >= 0 and rows < 0.9 * self.opts.segment_rows
                and txn.seg_bytes + f.size + left < self.opts.segment_bytes):
            txn.seg_ends = True
            return fastrows.swap_heads(lines, len(self._line_head(txn, False)), self._line_head(txn, True))
        return lines

    def _held(self, txn: Txn, f: Frame, tm: rows_codec.TableMap, op: str, n: int, flags: int) -> None:
        self._count(txn, tm, op, n)
        txn.seg_bytes += f.size
        txn.seg_rows += n
        txn.seq += n
        if flags & c.STMT_END_F:
            txn.rows_query = None

    @staticmethod
    def _count(txn: Txn, tm: rows_codec.TableMap, op: str, n: int) -> None:
        txn.tables.add(f"{tm.schema}.{tm.table}")
        txn.rows[op] += n

    def _row_changes(self, txn: Txn, f: Frame, tm: rows_codec.TableMap, op: str, rows) -> list[dict]:
        """The row changes of one rows event; what they share is looked up once."""
        txn_id, segment_id, file, pos, commit_ts = txn.txn_id, txn.segment_id, self.file, f.pos, txn.commit_ts
        event_ts, schema, table, rows_query, xid = (ts_from_seconds(f.timestamp), tm.schema, tm.table,
                                                    txn.rows_query, txn.xid)
        return [{
            "record": "row_change", "txn_id": txn_id, "segment_id": segment_id,
            "end_segment": False, "seq": seq, "binlog_file": file,
            "event_pos": pos, "commit_ts": commit_ts,
            "event_ts": event_ts, "schema": schema,
            "table": table, "op": op, "before": before, "after": after,
            "rows_query": rows_query, "xid": xid,
        } for seq, (before, after) in enumerate(rows, txn.seq)]

    @staticmethod
    def _line_head(txn: Txn, end_segment: bool) -> bytes:
        """What every JSON line of the transaction's current segment starts with, up to `"seq":`."""
        return b"".join((b'{"record":"row_change","txn_id":', orjson.dumps(txn.txn_id), b',"segment_id":',
                         orjson.dumps(txn.segment_id), b',"end_segment":', b"true" if end_segment else b"false",
                         b',"seq":'))

    def _line_parts(self, txn: Txn, f: Frame, tm: rows_codec.TableMap, op: str) -> tuple[bytes, bytes, bytes]:
        """The JSON lines of one rows event around seq, before and after: the fields of
        _row_changes in its order, as orjson writes them."""
        d = orjson.dumps
        mid = b"".join((b',"binlog_file":', d(self.file), b',"event_pos":', d(f.pos), b',"commit_ts":',
                        d(txn.commit_ts), b',"event_ts":', d(ts_from_seconds(f.timestamp)), b',"schema":',
                        d(tm.schema), b',"table":', d(tm.table), b',"op":', d(op), b',"before":'))
        tail = b"".join((b',"rows_query":', d(txn.rows_query), b',"xid":', d(txn.xid), b"}\n"))
        return self._line_head(txn, txn.seg_ends), mid, tail

    def _flush_segment(self, txn: Txn, end_segment: bool) -> None:
        buf, txn.seg_buf = txn.seg_buf, []
        if txn.broken or not txn.facts.complete or txn.facts.broken:
            return  # rows of a transaction that did not commit whole are not presented
        if self.emit_lines is not None:
            self.stats["row_changes"] += txn.seg_rows
            if end_segment != txn.seg_ends:  # the guess was wrong
                buf = _swap_heads(buf, self._line_head(txn, txn.seg_ends), self._line_head(txn, end_segment))
            self.emit_lines(buf)
            return
        if self.emit_blocks is not None:
            for block in buf:
                block.end_segment = end_segment
            self.stats["row_changes"] += txn.seg_rows
            self.emit_blocks(buf)
            return
        for rec in buf:
            rec["end_segment"] = end_segment
        self.stats["row_changes"] += len(buf)
        self.emit_rows(buf)

    def _self_contained(self, e: Event) -> None:
        """A statement with no GTID around it: a transaction of its own, boundaries synthetic."""
        facts = Facts(complete=True, end=e, end_pos=e.frame.end, last_ts=e.frame.timestamp)
        txn_id = derived_txn_id(e.frame.server_id, self.file, e.frame.pos)
        xid = e.query.ddl_xid if e.query else None
        txn = Txn(e, facts, txn_id, ts_from_seconds(e.frame.timestamp), xid,
                  first_ts=e.frame.timestamp)
        self._add(txn, e)
        self._close(txn)

    def _close(self, txn: Txn) -> None:
        self._flush_segment(txn, end_segment=True)
        self.txn = None
        end = txn.facts.end
        kind, outcome, end_event = classify_end(txn.start, end)
        synthetic = end_event == "SELF_CONTAINED"
        if txn.broken or txn.facts.broken:
            outcome = "incomplete"
        self._emit_txn(txn, kind, outcome, end_event, synthetic, txn.facts.end_pos)

    def _break(self, pos: int, code: str, detail: str, range_end: int | None = None) -> None:
        """The open transaction cannot end: report it incomplete, its bytes in an anomaly."""
        txn = self.txn
        assert txn is not None
        self.txn = None
        txn.seg_buf = []
        start = txn.start.frame.pos
        self._anomaly(start, range_end if range_end is not None else pos, code, detail)
        kind = "dml"
        self._emit_txn(txn, kind, "incomplete", None, False, pos)

    def _emit_txn(self, txn: Txn, kind: str, outcome: str, end_event: str | None,
                  synthetic: bool, end_pos: int) -> None:
        rec, mismatch = transaction_record(txn, kind, outcome, end_event, synthetic, end_pos,
                                           self.opts.source, self.file)
        self.stats["transactions"] += 1
        self.emit("transaction", rec)
        if mismatch:
            self._anomaly(*mismatch)


def _image_columns(recs: list[dict]) -> tuple[tuple[bytes, bytes] | None, tuple[bytes, bytes] | None]:
    """The before and after images of row change records as RowBlock's columns."""
    return _json_column([r["before"] for r in recs]), _json_column([r["after"] for r in recs])


def _json_column(images: list[dict | None]) -> tuple[bytes, bytes] | None:
    if images[0] is None:  # one side of a rows event is all images or all None
        return None
    texts = [image_json(image) for image in images]
    offsets = array.array("i", [0])
    offsets.extend(itertools.accumulate(map(len, texts)))
    if sys.byteorder != "little":
        offsets.byteswap()
    return offsets.tobytes(), b"".join(texts)


def _swap_heads(chunks: list[bytes], head: bytes, new: bytes) -> Iterator[bytes]:
    """Chunks of a segment's JSON lines with each line's head swapped for another (each line
    starts with it: JSON text holds no raw newline but between lines). Each chunk is let go
    as its copy is made, so a big segment is never held twice."""
    chunks.reverse()
    while chunks:
        yield fastrows.swap_heads(chunks.pop(), len(head), new)


def transaction_record(txn: Txn, kind: str, outcome: str, end_event: str | None, synthetic: bool,
                       end_pos: int, source: str, binlog_file: str) -> tuple[dict, tuple | None]:
    """The transaction's record, and the LENGTH_MISMATCH anomaly's (start, end, code, detail) if any."""
    g = txn.start.gtid
    start_pos = txn.start.frame.pos
    length = g.transaction_length if g and g.transaction_length else None
    end = txn.facts.end
    xa_xid = None
    if end is not None and end.xa is not None:
        xa_xid = end.xa.xid
    elif end is not None and end.query is not None and kind in ("xa_commit", "xa_rollback"):
        xa_xid = parse_xa_xid(end.query.text)
    elif g is not None and g.xa_xid:
        xa_xid = g.xa_xid
    rows = txn.rows
    rec = {
        "record": "transaction", "txn_id": txn.txn_id, "gtid": g.gtid if g else None,
        "source": source, "server_id": txn.start.frame.server_id,
        "binlog_file": binlog_file, "start_pos": start_pos, "end_pos": end_pos,
        "transaction_length": length, "kind": kind, "outcome": outcome,
        "end_event": end_event, "synthetic_boundary": synthetic, "xid": txn.xid,
        "xa_xid": xa_xid, "commit_ts": txn.commit_ts,
        "original_commit_ts": ts_from_micros(g.original_commit_ts)
        if g and g.original_commit_ts else None,
        "first_event_ts": ts_from_seconds(txn.first_ts),
        "last_committed": g.last_committed if g else None,
        "sequence_number": g.sequence_number if g else None,
        "compressed": txn.compressed, "event_count": txn.event_count,
        "row_count": rows["insert"] + rows["update"] + rows["delete"],
        "rows_inserted": rows["insert"], "rows_updated": rows["update"],
        "rows_deleted": rows["delete"], "tables": sorted(txn.tables),
        "statement": end.query.text if synthetic and end and end.query else None,
        "segment_count": txn.segment_id,
    }
    mismatch = None
    if length and outcome != "incomplete" and length != end_pos - start_pos:
        mismatch = (start_pos, end_pos, "LENGTH_MISMATCH",
                    f"{binlog_file}:{start_pos}: transaction_length {length} but the "
                    f"transaction spans {end_pos - start_pos} bytes")
    return rec, mismatch


def classify_end(start: Event, end: Event | None) -> tuple[str, str, str]:
    """kind, outcome, end_event of a transaction from the event that ended it."""
    if end is None:
        return "dml", "incomplete", None  # type: ignore[return-value]
    t = end.frame.type
    if t == c.XID_EVENT:
        return "dml", "committed", "XID"
    if t == c.XA_PREPARE_LOG_EVENT:
        if end.xa is not None and end.xa.one_phase:
            return "dml", "committed", "XA_PREPARE"
        return "xa_prepare", "prepared", "XA_PREPARE"
    if t in c.ROWS_EVENTS:  # rows with no BEGIN around them (MySQL 5.1 NDB / pre-GA)
        return "dml", "committed", "SELF_CONTAINED"
    if end.query is None:
        return "ddl", "committed", "SELF_CONTAINED"
    text = end.query.text.lstrip().upper()
    if end.role == "xa_complete":
        if text[2:].lstrip().startswith("COMMIT"):
            return "xa_commit", "committed", "QUERY_XA_COMMIT"
        return "xa_rollback", "rolled_back", "QUERY_XA_ROLLBACK"
    if end.role == "end":
        if text.startswith("COMMIT"):
            return "dml", "committed", "QUERY_COMMIT"
        if text.startswith("ROLLBACK"):
            return "dml", "rolled_back", "QUERY_ROLLBACK"
        return "xa_prepare", "prepared", "XA_PREPARE"  # MariaDB's QUERY 'XA PREPARE'
    return "ddl", "committed", "SELF_CONTAINED"


def parse_xa_xid(text: str) -> str | None:
    """The xid of an XA COMMIT/ROLLBACK statement, in format_xid's canonical form."""
    m = re.match(r"\s*XA\s+(?:COMMIT|ROLLBACK)\s+(.*?)(?:\s+ONE\s+PHASE)?\s*;?\s*$", text,
                 re.I | re.S)
    if not m:
        return None
    parts = _split_xid(m.group(1))
    if not parts:
        return None
    gtrid = parts[0]
    bqual = parts[1] if len(parts) > 1 else b""
    fmt = int(parts[2]) if len(parts) > 2 else 1
    return ev_codec.format_xid(gtrid, bqual, fmt)


def _split_xid(s: str) -> list | None:
    out: list = []
    token = re.compile(r"\s*(X'([0-9a-fA-F]*)'|0x([0-9a-fA-F]+)|'((?:[^'\\]|\\.|'')*)'|(\d+))\s*,?")
    pos = 0
    while pos < len(s):
        m = token.match(s, pos)
        if not m:
            return None
        if m.group(2) is not None:
            out.append(bytes.fromhex(m.group(2)))
        elif m.group(3) is not None:
            out.append(bytes.fromhex(m.group(3)))
        elif m.group(4) is not None:
            out.append(m.group(4).replace("''", "'").encode())
        else:
            out.append(m.group(5))
        pos = m.end()
    return out
