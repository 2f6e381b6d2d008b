"""A transaction bigger than a split, decoded by several tasks at once.

A survey walks the transaction's events once without decoding a row, to learn its commit
facts and where it can be cut: between two row-carrying events, about every
`split_bytes`. Each cut carries what a task starting there needs to decode on its own:
the TABLE_MAP events in effect and the ROWS_QUERY of the statement under way. Tasks
number their rows from 0 and report each rows event's row count and size (a PieceRecord);
`finish` then replays the segment rule (binlake.assemble.segments.replay) over those counts, so
`seq`, `segment_id` and `end_segment` come out exactly as one reader would have numbered
them, and `place_record` / `place_block` put each piece's rows there.
"""

from __future__ import annotations

import base64
import contextlib
from dataclasses import dataclass, field
from typing import cast

from binlake.assemble.outputs import Output
from binlake.assemble.rowsevents import rows_query
from binlake.assemble.segments import Unplaced, replay
from binlake.assemble.sinks import RowBlock
from binlake.assemble.transactions import Facts, Txn, open_txn, transaction_record
from binlake.assemble.walk import FileAssembler, Options, Resume
from binlake.binlog import constants as c
from binlake.binlog import rows as rows_codec
from binlake.binlog.framing import BinlogReader, FormatDescription, Frame
from binlake.binlog.tablemap import TableMap, decode_table_map
from binlake.boundaries.describe import describe, stmt_ends
from binlake.boundaries.parser import Boundary, BoundaryParser, Opener
from binlake.errors import BinlogError
from binlake.records import DatedAnomaly, Int32, RowChangeRecord, TransactionRecord, UnplacedRowChange

ROW_CARRIERS = frozenset({c.TABLE_MAP_EVENT, c.ROWS_QUERY_LOG_EVENT, c.ANNOTATE_ROWS_EVENT, *c.ROWS_EVENTS})


@dataclass
class Cut:
    """Where a piece starts, and what a reader from the transaction's start holds there."""

    pos: int
    table_maps: list[str]  # the TABLE_MAP events in effect, base64
    rows_query: str | None  # the ROWS_QUERY / ANNOTATE_ROWS event of the statement under way, base64
    state: str  # the boundary parser's state and opener (their names)
    opener: str


@dataclass
class Survey:
    """A big transaction's commit facts and cuts, learnt without decoding a row."""

    txn_id: str
    start: int
    start_event: str  # base64 of the opening event
    end_event_pos: int
    end_event: str  # base64 of the ending event
    end_pos: int
    last_ts: int
    cuts: list[Cut] = field(default_factory=list)

    @property
    def pieces(self) -> int:
        return len(self.cuts) + 1

    @classmethod
    def from_dict(cls, d: dict) -> Survey:
        return cls(**{**d, "cuts": [Cut(**cut) for cut in d["cuts"]]})


@dataclass(kw_only=True)
class PieceRecord:
    """What a piece's task learnt, for finish(): its counts and each rows event's (rows, size)."""

    txn_id: str
    piece: Int32
    event_count: int
    rows_inserted: int
    rows_updated: int
    rows_deleted: int
    tables: list[str]
    compressed: bool
    broken: bool
    events: list[list[int]]


@dataclass(frozen=True, slots=True)
class Fix:
    """Where a piece's rows event goes in the whole transaction."""

    segment_id: int
    end_segment: bool
    seq_base: int


Fixes = dict[tuple[str, int, int | None], Fix]  # (txn_id, piece, its rows event's ordinal) -> the place


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def _raw(f: Frame, fde: FormatDescription) -> bytes:
    i = f.body_start - fde.header_len
    return bytes(f.buf[i:i + f.size])


def frame_at(raw_b64: str, pos: int, fde: FormatDescription) -> Frame:
    """One event, given as its bytes and file offset, as a frame."""
    return next(BinlogReader(base64.b64decode(raw_b64), "event", base=pos, fde=fde).frames())


def survey(reader: BinlogReader, start: int, end: int, *, split_bytes: int, txn_id: str) -> Survey | None:
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
        cuts: list[Cut] = []
        last_cut = start
        prev_rows = False
        last_ts = first.timestamp
        for f in frames:
            t = f.type
            if not f.crc_ok or t == c.TRANSACTION_PAYLOAD_EVENT:
                return None
            if prev_rows and t in ROW_CARRIERS and f.pos - last_cut >= split_bytes:
                cuts.append(Cut(f.pos, [_b64(b) for b in table_maps.values()],
                                _b64(rows_query) if rows_query else None, p.state.name, p.opener.name))
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
            elif t in c.ROWS_EVENTS and stmt_ends(f, fde):
                rows_query = None
            if e.boundary is Boundary.END:
                if not cuts:
                    return None
                return Survey(txn_id, start, _b64(_raw(first, fde)), f.pos, _b64(_raw(f, fde)), f.end, last_ts,
                              cuts)
    except (BinlogError, StopIteration):
        return None
    return None


def _opened(s: Survey, fde: FormatDescription, binlog_file: str) -> Txn:
    """The big transaction as its first reader would have opened it, from the survey's facts."""
    p = BoundaryParser()
    start = describe(p, frame_at(s.start_event, s.start, fde), -1, fde)
    p.feed(Boundary.START, start.opener)
    end = describe(p, frame_at(s.end_event, s.end_event_pos, fde), -1, fde)
    return open_txn(start, Facts(complete=True, end=end, end_pos=s.end_pos, last_ts=s.last_ts), binlog_file)


def _table_maps(cut: Cut, fde: FormatDescription) -> list[TableMap]:
    out = []
    for raw in cut.table_maps:
        f = frame_at(raw, 4, fde)  # where it was does not matter here
        with contextlib.suppress(Exception):  # the piece holding the event reports it
            out.append(decode_table_map(f.body, fde.post_header_len(f.type), fde.flavor))
    return out


class Piece:
    """Decodes one piece of a big transaction: a walk resumed inside it (binlake.assemble.walk.Resume),
    its rows numbered from 0 and handed on at once, unplaced (binlake.assemble.segments.Unplaced)."""

    def __init__(self, reader: BinlogReader, opts: Options, output: Output, *, binlog_file: str, survey: Survey,
                 piece: int) -> None:
        s = survey
        fde = reader.fde
        txn = _opened(s, fde, binlog_file)
        self.piece = piece
        self.last = piece == len(s.cuts)
        self.placing = Unplaced(piece)
        self.resume = Resume(txn, self.placing, continues=not self.last, opening=piece == 0)
        if piece == 0:
            self.resume.opener = txn.start.opener or Opener.GTID
        else:
            cut = s.cuts[piece - 1]
            self.resume.state, self.resume.opener = Boundary[cut.state], Opener[cut.opener]
            self.resume.table_maps = _table_maps(cut, fde)
            if cut.rows_query:
                txn.rows_query = rows_query(frame_at(cut.rows_query, 4, fde))
        self.asm = FileAssembler(reader, opts, output, binlog_file=binlog_file, resume=self.resume)

    def record(self) -> PieceRecord:
        """What finish() needs of this piece (after its walk)."""
        t = self.resume.txn
        return PieceRecord(txn_id=t.txn_id, piece=self.piece, event_count=t.event_count,
                           rows_inserted=t.rows["insert"], rows_updated=t.rows["update"],
                           rows_deleted=t.rows["delete"], tables=sorted(t.tables), compressed=t.compressed,
                           broken=t.broken or (self.last and not self.resume.ended),
                           events=[list(e) for e in self.placing.events])


@dataclass
class Finished:
    transaction: TransactionRecord
    anomaly: DatedAnomaly | None  # LENGTH_MISMATCH, dated by the transaction's commit_ts
    fixes: Fixes  # empty when the transaction is broken: none of its rows are presented


def finish(s: Survey, pieces: list[PieceRecord], *, opts: Options, binlog_file: str,
           fde: FormatDescription) -> Finished:
    """Put a big transaction's pieces together: its record, and where each piece's rows go."""
    txn = _opened(s, fde, binlog_file)
    pieces = sorted(pieces, key=lambda p: p.piece)
    broken = len(pieces) != s.pieces or any(p.broken for p in pieces)
    events: list[tuple[int, int]] = []
    for p in pieces:
        txn.event_count += p.event_count
        for op, n in (("insert", p.rows_inserted), ("update", p.rows_updated), ("delete", p.rows_deleted)):
            txn.rows[op] += n
        txn.tables.update(p.tables)
        txn.compressed |= p.compressed
        events += [(n, size) for n, size in p.events]
    txn.broken = broken
    places, txn.segment_count = replay(events, opts.segment_rows, opts.segment_bytes)
    rec, mismatch = transaction_record(txn, end_pos=s.end_pos, source=opts.source, binlog_file=binlog_file)
    anomaly = DatedAnomaly(**mismatch, commit_ts=rec["commit_ts"]) if mismatch else None
    fixes: Fixes = {}
    if not broken:
        at = iter(places)
        for p in pieces:
            base = None  # the seq of the piece's first row: its own rows are numbered from 0
            for ordinal in range(len(p.events)):
                segment_id, seq = next(at)
                base = seq if base is None else base
                fixes[txn.txn_id, p.piece, ordinal] = Fix(segment_id, segment_id == txn.segment_count, base)
    return Finished(rec, anomaly, fixes)


def place_record(rec: RowChangeRecord, fixes: Fixes) -> bool:
    """A row change record given its place in the whole transaction; False when finish() gave it
    none (its transaction is broken: not presented). Records of no piece are placed already."""
    unplaced = cast("UnplacedRowChange", rec)  # a piece's (binlake.assemble.sinks.row_records)
    piece, ordinal = unplaced.pop("piece", None), unplaced.pop("ev_ord", None)
    if piece is None:
        return True
    fix = fixes.get((rec["txn_id"], piece, ordinal))
    if fix is None:
        return False
    rec["segment_id"], rec["end_segment"], rec["seq"] = fix.segment_id, fix.end_segment, rec["seq"] + fix.seq_base
    return True


def place_block(block: RowBlock, fixes: Fixes) -> bool:
    """A RowBlock given its place in the whole transaction (as place_record)."""
    at = block.at
    if at.piece is None:
        return True
    fix = fixes.get((at.txn_id, at.piece, at.ev_ord))
    if fix is None:
        return False
    at.segment_id, at.seq, block.end_segment = fix.segment_id, at.seq + fix.seq_base, fix.end_segment
    return True
