"""A transaction bigger than a split, decoded by several tasks at once.

A survey walks the transaction's events once without decoding a row, to learn its commit
facts and where it can be cut: between two row-carrying events, about every
`split_bytes`. Each cut carries what a task starting there needs to decode on its own:
the TABLE_MAP events in effect and the ROWS_QUERY of the statement under way. Tasks
number their rows from 0 and report each rows event's row count and size; `finish` then
replays the segment rule of docs/transactions.md over those counts, so `seq`,
`segment_id` and `end_segment` come out exactly as one reader would have numbered them.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from binlake.assemble import (
    Emit,
    EmitBlocks,
    Facts,
    FileAssembler,
    Options,
    Txn,
    classify_end,
    transaction_record,
)
from binlake.binlog import constants as c
from binlake.binlog import events as ev_codec
from binlake.binlog import rows as rows_codec
from binlake.binlog.framing import BinlogReader, FormatDescription, Frame
from binlake.boundary import Boundary, BoundaryParser, Opener
from binlake.describe import Event, describe
from binlake.errors import BinlogError

ROW_CARRIERS = frozenset({c.TABLE_MAP_EVENT, c.ROWS_QUERY_LOG_EVENT, c.ANNOTATE_ROWS_EVENT, *c.ROWS_EVENTS})


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def _raw(f: Frame, fde: FormatDescription) -> bytes:
    i = f.body_start - fde.header_len
    return bytes(f.buf[i:i + f.size])


def frame_at(raw_b64: str, pos: int, fde: FormatDescription) -> Frame:
    """One event, given as its bytes and file offset, as a frame."""
    return next(BinlogReader(base64.b64decode(raw_b64), "event", base=pos, fde=fde).frames())


def survey(reader: BinlogReader, start: int, end: int, split_bytes: int) -> dict | None:
    """Commit facts and cut points of the transaction at [start, end).

    None when it cannot be cut: compressed (one TRANSACTION_PAYLOAD), fewer than two
    pieces, or anything irregular (a CRC mismatch, an invalid transition, no end): one task
    then reads it whole and reports what is wrong exactly as a single reader would.
    """
    fde = reader.fde
    frames = reader.frames(start, end)
    try:
        first = next(frames)
        p = BoundaryParser()
        e0 = describe(p, first, -1, fde)
        if e0.boundary is not Boundary.START or e0.error or not first.crc_ok or not p.feed(e0.boundary, e0.opener):
            return None
        table_maps: dict[int, bytes] = {}
        rows_query: bytes | None = None
        cuts: list[dict] = []
        last_cut = start
        prev_rows = False
        last_ts = first.timestamp
        for f in frames:
            t = f.type
            if not f.crc_ok or t == c.TRANSACTION_PAYLOAD_EVENT:
                return None
            if prev_rows and t in ROW_CARRIERS and f.pos - last_cut >= split_bytes:
                cuts.append({"pos": f.pos, "table_maps": [_b64(b) for b in table_maps.values()],
                             "rows_query": _b64(rows_query) if rows_query else None,
                             "parser": [p.state.name, p.opener.name]})
                last_cut = f.pos
            e = describe(p, f, -1, fde)
            if e.error:
                return None
            prev_rows = t in c.ROWS_EVENTS
            if e.boundary is Boundary.IGNORE:
                continue
            last_ts = f.timestamp
            if not p.feed(e.boundary, e.opener):
                return None
            if t == c.TABLE_MAP_EVENT:
                table_maps[rows_codec.rows_table_id(t, f.body, fde.post_header_len(t))] = _raw(f, fde)
            elif t in (c.ROWS_QUERY_LOG_EVENT, c.ANNOTATE_ROWS_EVENT):
                rows_query = _raw(f, fde)
            elif t in c.ROWS_EVENTS and _stmt_end(f, fde):
                rows_query = None
            if e.boundary is Boundary.END:
                if not cuts:
                    return None
                return {"start": start, "start_event": _b64(_raw(first, fde)), "end_event_pos": f.pos,
                        "end_event": _b64(_raw(f, fde)), "end_pos": f.end, "last_ts": last_ts, "cuts": cuts}
    except (BinlogError, StopIteration):
        return None
    return None


def _stmt_end(f: Frame, fde: FormatDescription) -> bool:
    at = 4 if fde.post_header_len(f.type) == 6 else 6
    return bool(int.from_bytes(bytes(f.body[at:at + 2]), "little") & c.STMT_END_F)


def _open(asm: FileAssembler, big: dict) -> Txn:
    """The big transaction as its first reader would have opened it, from the survey's facts."""
    fde = asm.fde
    start = frame_at(big["start_event"], big["start"], fde)
    p = BoundaryParser()
    start_e = describe(p, start, -1, fde)
    p.feed(Boundary.START, start_e.opener)
    end_e = describe(p, frame_at(big["end_event"], big["end_event_pos"], fde), -1, fde)
    facts = Facts(complete=True, end=end_e, end_pos=big["end_pos"], last_ts=big["last_ts"])
    return asm._new_txn(start_e, facts)


class PieceAssembler(FileAssembler):
    """Decodes one piece of a big transaction: rows numbered from 0, nothing buffered."""

    def __init__(self, reader: BinlogReader, opts: Options, emit: Emit, binlog_file: str,
                 big: dict, piece: int, emit_blocks: EmitBlocks | None = None) -> None:
        super().__init__(reader, opts, emit, binlog_file, emit_blocks=emit_blocks)
        self.big_spec = big
        self.piece = piece
        self.last = piece == len(big["cuts"])
        self.ev_stats: list[list[int]] = []
        self.closed = False
        self.big: Txn | None = None

    def steps(self, start: int | None = None):
        txn = self.big = self.txn = _open(self, self.big_spec)
        start_e: Event = txn.start
        self.parser.feed(Boundary.START, start_e.opener)
        begin = self.reader.first_event_pos
        if self.piece == 0:
            self.stats["events"] += 1
            self._add(txn, start_e)
            begin = start_e.frame.end
        else:
            cut = self.big_spec["cuts"][self.piece - 1]
            state, opener = cut["parser"]  # as the boundary parser stood at the cut
            self.parser.state, self.parser.opener = Boundary[state], Opener[opener]
            for raw in cut["table_maps"]:
                f = frame_at(raw, 4, self.fde)  # where it was does not matter here
                try:
                    tm = rows_codec.decode_table_map(f.body, self.fde.post_header_len(f.type), self.fde.flavor)
                    self.table_maps[tm.table_id] = tm
                except Exception:  # noqa: BLE001 - the piece holding the event reported it
                    pass
            if cut["rows_query"]:
                f = frame_at(cut["rows_query"], 4, self.fde)
                txn.rows_query = (ev_codec.decode_rows_query(f.body) if f.type == c.ROWS_QUERY_LOG_EVENT
                                  else ev_codec.decode_annotate_rows(f.body))
        yield from super().steps(begin)

    def _at_end(self) -> None:
        if self.txn is self.big and not self.last:
            self.txn = None  # the transaction goes on in the next piece
            return
        super()._at_end()

    def _place(self, txn: Txn, f: Frame, tm: rows_codec.TableMap, ev) -> None:
        if txn is not self.big:
            super()._place(txn, f, tm, ev)
            return
        ordinal = len(self.ev_stats)
        if self.opts.rows:
            recs = self._row_changes(txn, f, tm, ev.op, ev.rows)
            for rec in recs:
                rec["segment_id"] = None  # set by finish()
                rec["piece"] = self.piece
                rec["ev_ord"] = ordinal
            self.stats["row_changes"] += len(recs)
            self.emit_rows(recs)
        self._piece_event(txn, f, tm, ev.op, len(ev.rows), ev.flags)

    def _blocked(self, txn: Txn, f: Frame, tm: rows_codec.TableMap, phl: int) -> bool:
        if txn is not self.big:
            return super()._blocked(txn, f, tm, phl)
        done = self._columns(f, tm, phl)
        if done is None:
            return False
        op, flags, n, before, after = done
        if n:  # out at once, unnumbered: finish() places it (segment_id None until then)
            block = self._block(txn, f, tm, op, n, before, after)
            block.segment_id, block.piece, block.ev_ord = None, self.piece, len(self.ev_stats)
            self.stats["row_changes"] += n
            self.emit_blocks([block])
        self._piece_event(txn, f, tm, op, n, flags)
        return True

    def _piece_event(self, txn: Txn, f: Frame, tm: rows_codec.TableMap, op: str, n: int, flags: int) -> None:
        """Count a rows event of the big transaction: what finish() needs of it."""
        self._count(txn, tm, op, n)
        self.ev_stats.append([n, f.size])
        txn.seq += n
        if flags & c.STMT_END_F:
            txn.rows_query = None

    def _close(self, txn: Txn) -> None:
        if txn is not self.big:
            super()._close(txn)
            return
        self.txn = None
        self.closed = True

    def _break(self, pos: int, code: str, detail: str, range_end: int | None = None) -> None:
        if self.txn is self.big:
            self.big.broken = True
        super()._break(pos, code, detail, range_end)

    def piece_record(self) -> dict:
        """What finish() needs of this piece."""
        t = self.big
        assert t is not None
        return {"record": "piece", "txn_id": t.txn_id, "piece": self.piece, "event_count": t.event_count,
                "rows_inserted": t.rows["insert"], "rows_updated": t.rows["update"],
                "rows_deleted": t.rows["delete"], "tables": sorted(t.tables), "compressed": t.compressed,
                "broken": t.broken or (self.last and not self.closed), "events": self.ev_stats}


@dataclass
class Finished:
    transaction: dict
    anomaly: tuple | None  # LENGTH_MISMATCH (start, end, code, detail)
    fixes: list[tuple]  # (txn_id, piece, ev_ord, segment_id, end_segment, seq_base); empty when broken


def finish(big: dict, pieces: list[dict], opts: Options, binlog_file: str, fde: FormatDescription) -> Finished:
    """Put a big transaction's pieces together: its record, and where each piece's rows go."""
    asm = FileAssembler.__new__(FileAssembler)
    asm.fde, asm.file = fde, binlog_file
    txn = _open(asm, big)
    pieces = sorted(pieces, key=lambda p: p["piece"])
    expected = len(big["cuts"]) + 1
    broken = len(pieces) != expected or any(p["broken"] for p in pieces)
    for p in pieces:
        txn.event_count += p["event_count"]
        for op, key in (("insert", "rows_inserted"), ("update", "rows_updated"), ("delete", "rows_deleted")):
            txn.rows[op] += p[key]
        txn.tables.update(p["tables"])
        txn.compressed |= p["compressed"]
    seg, seg_rows, seg_bytes, seq = 1, 0, 0, 0
    spans = []
    for p in pieces:
        base = seq
        for ordinal, (n, size) in enumerate(p["events"]):
            if seg_rows and (seg_rows >= opts.segment_rows or seg_bytes >= opts.segment_bytes):
                seg += 1
                seg_rows = seg_bytes = 0
            seg_bytes += size
            seg_rows += n
            spans.append((p["piece"], ordinal, seg, base))
            seq += n
    txn.segment_id = seg
    kind, outcome, end_event = classify_end(txn.start, txn.facts.end)
    if broken:
        outcome = "incomplete"
    rec, mismatch = transaction_record(txn, kind, outcome, end_event, end_event == "SELF_CONTAINED",
                                       big["end_pos"], opts.source, binlog_file)
    fixes = [] if broken else [(txn.txn_id, piece, o, s, s == seg, base) for piece, o, s, base in spans]
    return Finished(rec, mismatch, fixes)
