"""Where a transaction's row changes go, in the form each consumer wants them (RowSink).

The walk (binlake.assemble.rowsevents) hands a sink each rows event with its place (RowsAt): the sink
may decode it itself by the compiled path (`take`), or be given its rows decoded (`hold`); it
holds them until told to hand them on (`flush`, with the segment's `end_segment`) or to let
them go (`drop`). When is decided by the numbering (binlake.assemble.segments). Three forms:

- RecordSink: records (dicts with DESIGN.md's fields), for tests and in-process callers;
- LineSink: the JSON lines `binlake scan --rows` prints, written by the compiled decoder
  straight from the row images, byte for byte what the records give (tests/test_json_lines.py);
- BlockSink: RowBlocks, a rows event's row changes as columns, for the Spark job's Arrow
  batches (binlake.spark.schema.blocks_batch).

Each output (binlake.assemble.outputs) has the sink of the form it takes. The transactions the
lane takes (binlake.assemble.lane) reach no sink: the lane hands the output their lines or columns.
"""

from __future__ import annotations

import array
import itertools
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

import orjson

from binlake.binlog import fastrows
from binlake.binlog import rows as rows_codec
from binlake.binlog.framing import Frame
from binlake.binlog.tablemap import TableMap
from binlake.records import ROW_CHANGE_FIELDS, RowChangeRecord, UnplacedRowChange, image_json, json_line

Rows = list[tuple[dict | None, dict | None]]  # (before, after) per row, as rows.decode_rows gives them


class Numbering(Protocol):
    """The side of binlake.assemble.segments a sink consults (for LineSink's guess)."""

    def surely_last(self, size: int, end: int) -> bool: ...
    def likely_last(self, rows: int, size: int, end: int) -> bool: ...


@dataclass(slots=True)
class RowsAt:
    """What every row change of one rows event shares: its transaction, its place, its table."""

    txn_id: str
    segment_id: int | None  # None: a big transaction's piece, placed later (binlake.assemble.pieces)
    seq: int  # of the event's first row change
    binlog_file: str
    event_pos: int
    commit_ts: str
    event_ts: str
    schema: str
    table: str
    op: str
    rows_query: str | None
    xid: int | None
    piece: int | None = None  # a big transaction's piece: with ev_ord, where finish() places it
    ev_ord: int | None = None


@dataclass(slots=True)
class RowBlock:
    """The row changes of one rows event as columns: what they share once (`at`, seq counted
    from at.seq), and the images' JSON texts (the text `scan --rows` prints) as an Arrow string
    column's (offsets, data); None for the side the operation has none of (an insert's before,
    a delete's after)."""

    at: RowsAt
    rows: int
    before: tuple[bytes, bytes] | None
    after: tuple[bytes, bytes] | None
    end_segment: bool = False


class RowSink(Protocol):
    def take(self, at: RowsAt, f: Frame, tm: TableMap, post_header_len: int, *,
             numbering: Numbering) -> tuple[int, int] | None:
        """Decode and hold a rows event by the compiled path: (flags, rows), or None when that
        path does not take it (`hold` is then given its rows decoded)."""

    def hold(self, at: RowsAt, f: Frame, rows: Rows, numbering: Numbering) -> None: ...

    def flush(self, end_segment: bool) -> int:
        """Hand on what is held, as rows of a segment that is (or is not) the last; how many rows."""

    def drop(self) -> None: ...


def row_records(at: RowsAt, rows: Rows) -> list[RowChangeRecord]:
    """The row changes of one rows event as records (binlake.records.RowChangeRecord); a big
    transaction's piece's with their piece and rows event ordinal too (UnplacedRowChange)."""
    txn_id, segment_id, file, pos, commit_ts = at.txn_id, at.segment_id, at.binlog_file, at.event_pos, at.commit_ts
    event_ts, schema, table, rows_query, xid, op = at.event_ts, at.schema, at.table, at.rows_query, at.xid, at.op
    recs: list[RowChangeRecord] = [{
        "record": "row_change", "txn_id": txn_id, "segment_id": segment_id,
        "end_segment": False, "seq": seq, "binlog_file": file,
        "event_pos": pos, "commit_ts": commit_ts,
        "event_ts": event_ts, "schema": schema,
        "table": table, "op": op, "before": before, "after": after,
        "rows_query": rows_query, "xid": xid,
    } for seq, (before, after) in enumerate(rows, at.seq)]
    if at.piece is not None:
        return [UnplacedRowChange(**rec, piece=at.piece, ev_ord=at.ev_ord) for rec in recs]
    return recs


class _Holding:
    """What a sink holds of the current segment: its pieces and their row count."""

    def __init__(self) -> None:
        self.held: list = []
        self.rows = 0
        self.fast = fastrows.enabled()  # the compiled decoder is there and not turned off

    def drop(self) -> None:
        self.held, self.rows = [], 0

    def _hand_on(self) -> tuple[list, int]:
        held, rows = self.held, self.rows
        self.drop()
        return held, rows


class RecordSink(_Holding):
    """Row changes as records, a segment's at once."""

    def __init__(self, emit_rows: Callable[[list[RowChangeRecord]], None]) -> None:
        super().__init__()
        self.emit_rows = emit_rows

    def take(self, at, f, tm, post_header_len, *, numbering) -> None:
        return None

    def hold(self, at: RowsAt, f: Frame, rows: Rows, numbering: Numbering) -> None:
        self.held += row_records(at, rows)
        self.rows += len(rows)

    def flush(self, end_segment: bool) -> int:
        held, rows = self._hand_on()
        for rec in held:
            rec["end_segment"] = end_segment
        if held:
            self.emit_rows(held)
        return rows


class LineSink(_Holding):
    """Row changes as the JSON lines `binlake scan --rows` prints, a segment's in chunks.

    Each line carries `end_segment`, known only when the segment ends: a segment's first lines
    are written with a guess (Numbering.likely_last), its next ones alike, and a wrong guess is
    mended when the segment is handed on."""

    def __init__(self, emit_lines: Callable[[Iterable[bytes]], None]) -> None:
        super().__init__()
        self.emit_lines = emit_lines
        self.ends = False  # the end_segment the held lines are written with
        self.at: RowsAt | None = None  # of the held lines' segment (for their heads)

    def take(self, at: RowsAt, f: Frame, tm: TableMap, post_header_len: int, *,
             numbering: Numbering) -> tuple[int, int] | None:
        op = rows_codec.ROWS_EVENT_TYPES.get(f.type)
        if op is None or tm.json_keys is None or not self.fast:
            return None
        first = self._starts(at)
        if first and numbering.surely_last(f.size, f.end):  # written as the last at once: nothing to guess
            self.ends, first = True, False
        done = rows_codec.render_rows(f.type, f.body, post_header_len, tm, op=op, parts=self._parts(at), seq=at.seq)
        if done is None:
            return None
        flags, n, lines = done
        self._keep(at, f, lines, n=n, first=first, numbering=numbering)
        return flags, n

    def hold(self, at: RowsAt, f: Frame, rows: Rows, numbering: Numbering) -> None:
        recs = row_records(at, rows)
        if not recs:
            return
        first = self._starts(at)
        for rec in recs:
            rec["end_segment"] = self.ends
        self._keep(at, f, b"".join(map(json_line, recs)), n=len(recs), first=first, numbering=numbering)

    def flush(self, end_segment: bool) -> int:
        held, rows = self._hand_on()
        if rows and end_segment != self.ends:  # the guess was wrong
            assert self.at is not None
            self.emit_lines(_swap_heads(held, _head(self.at, self.ends), _head(self.at, end_segment)))
        elif rows:
            self.emit_lines(held)
        return rows

    def _starts(self, at: RowsAt) -> bool:
        """Whether the next lines are their segment's first: those are written as not its last,
        then perhaps guessed the last (_keep)."""
        if self.held:
            return False
        self.ends = False
        self.at = at
        return True

    def _keep(self, at: RowsAt, f: Frame, lines: bytes, *, n: int, first: bool, numbering: Numbering) -> None:
        if not lines:
            return
        if first and numbering.likely_last(n, f.size, f.end):
            self.ends = True
            lines = fastrows.swap_heads(lines, len(_head(at, False)), _head(at, True))
        self.held.append(lines)
        self.rows += n

    def _parts(self, at: RowsAt) -> tuple[bytes, bytes, bytes]:
        """The JSON lines of one rows event around seq, before and after: the row change's fields
        (binlake.records.RowChangeRecord) in their order, as orjson writes them (an object's
        members, its braces cut off)."""
        mid = orjson.dumps({name: getattr(at, name) for name in _MID})
        tail = orjson.dumps({name: getattr(at, name) for name in _TAIL})
        return _head(at, self.ends), b"," + mid[1:-1] + b',"before":', b"," + tail[1:-1] + b"}\n"


# A line's fields between its seq and its images, and after them (what RowsAt says of them)
_MID = ROW_CHANGE_FIELDS[ROW_CHANGE_FIELDS.index("seq") + 1:ROW_CHANGE_FIELDS.index("before")]
_TAIL = ROW_CHANGE_FIELDS[ROW_CHANGE_FIELDS.index("after") + 1:]


def _head(at: RowsAt, end_segment: bool) -> bytes:
    """What every JSON line of a segment starts with, up to `"seq":`."""
    head = orjson.dumps({"record": "row_change", "txn_id": at.txn_id, "segment_id": at.segment_id,
                         "end_segment": end_segment})
    return head[:-1] + b',"seq":'


def _swap_heads(chunks: list[bytes], head: bytes, new: bytes) -> Iterator[bytes]:
    """Chunks of a segment's JSON lines with each line's head swapped for another (each line
    starts with it: JSON text holds no raw newline but between lines). Each chunk is let go
    as its copy is made, so a big segment is never held twice."""
    chunks.reverse()
    while chunks:
        yield fastrows.swap_heads(chunks.pop(), len(head), new)


class BlockSink(_Holding):
    """Row changes as RowBlocks, one per rows event, a segment's at once."""

    def __init__(self, emit_blocks: Callable[[list[RowBlock]], None]) -> None:
        super().__init__()
        self.emit_blocks = emit_blocks

    def take(self, at: RowsAt, f: Frame, tm: TableMap, post_header_len: int, *,
             numbering: Numbering) -> tuple[int, int] | None:
        op = rows_codec.ROWS_EVENT_TYPES.get(f.type)
        if op is None or tm.json_keys is None or not self.fast:
            return None
        done = rows_codec.render_columns(f.type, f.body, post_header_len, tm, op=op)
        if done is None:
            return None
        flags, n, before, after = done
        self._keep(RowBlock(at, n, before, after))
        return flags, n

    def hold(self, at: RowsAt, f: Frame, rows: Rows, numbering: Numbering) -> None:
        # an event the compiled path did not take: its images as the same columns
        self._keep(RowBlock(at, len(rows), _json_column([b for b, _ in rows]), _json_column([a for _, a in rows])))

    def flush(self, end_segment: bool) -> int:
        held, rows = self._hand_on()
        for block in held:
            block.end_segment = end_segment
        if held:
            self.emit_blocks(held)
        return rows

    def _keep(self, block: RowBlock) -> None:
        if block.rows:
            self.held.append(block)
            self.rows += block.rows


def _json_column(images: list[dict | None]) -> tuple[bytes, bytes] | None:
    """Row images as an Arrow string column's (offsets, data) of their JSON texts; None when
    the operation has none on this side (one side of a rows event is all images or all None)."""
    if not images or images[0] is None:
        return None
    texts = [image_json(image) for image in images if image is not None]
    offsets = array.array("i", [0])
    offsets.extend(itertools.accumulate(map(len, texts)))
    if sys.byteorder != "little":
        offsets.byteswap()
    return offsets.tobytes(), b"".join(texts)
