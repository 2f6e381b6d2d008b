"""How a transaction's row changes are numbered: `seq`, `segment_id` and `end_segment`.

The rule (docs/transactions.md, "Segments"): row changes are numbered 0..n-1 in binlog order;
a new segment starts at a rows event when the current one already holds `segment_rows` row
changes or `segment_bytes` of rows events. Segmenter applies it while a transaction streams,
and binlake.assemble.pieces replays it over the counts of a big transaction's pieces; Unplaced numbers a
piece's rows without placing them, for that replay to place.

Both speak to the walk the same way (binlake.assemble.rowsevents.Placing): `before` a rows event,
`after` it with its row count and size, and `close` at the transaction's end; and both tell
the sink (binlake.assemble.sinks) when to hand on what it holds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from binlake.assemble.sinks import RowSink


class Segmenter:
    """Numbers one transaction's row changes as they stream, segment by segment."""

    __slots__ = ("max_rows", "max_bytes", "txn_end", "segment_id", "seq", "rows", "bytes")
    piece = None
    ordinal = None

    def __init__(self, max_rows: int, max_bytes: int, txn_end: int = 0) -> None:
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self.txn_end = txn_end  # where the transaction ends, for likely_last
        self.segment_id = 1
        self.seq = 0  # of the next row change
        self.rows = 0  # in the current segment
        self.bytes = 0  # of rows events in the current segment

    def full(self) -> bool:
        return bool(self.rows) and (self.rows >= self.max_rows or self.bytes >= self.max_bytes)

    def before(self, sink: RowSink | None, presentable: bool) -> int:
        """Before a rows event: when the current segment is full, it ends here (not the last).
        Each method returns how many row changes the sink handed on."""
        if not self.full():
            return 0
        done = _hand_on(sink, presentable, end_segment=False)
        self.segment_id += 1
        self.rows = self.bytes = 0
        return done

    def after(self, rows: int, size: int, sink: RowSink | None) -> int:
        self.rows += rows
        self.bytes += size
        self.seq += rows
        return 0

    def close(self, sink: RowSink | None, presentable: bool) -> int:
        """The transaction ends: its last segment is handed on."""
        return _hand_on(sink, presentable, end_segment=True)

    def surely_last(self, size: int, end: int) -> bool:
        """Whether the segment that a rows event of `size` bytes ending at `end` starts is the
        transaction's last whatever its rows: the rest of the transaction fits in it even at a row
        per byte (a row image has at least its null bitmap). Known before the event is decoded."""
        left = self.txn_end - end
        return left >= 0 and self.rows + size + left < 0.9 * self.max_rows and self.bytes + size + left < self.max_bytes

    def likely_last(self, rows: int, size: int, end: int) -> bool:
        """Whether the segment that a rows event of `rows` rows and `size` bytes ending at `end`
        starts will be the transaction's last: the rest of the transaction, at this event's rows
        per byte, fits in it with room to spare. A guess (binlake.assemble.sinks.LineSink mends it)."""
        left = self.txn_end - end
        expected = self.rows + rows + rows / size * left
        return (left >= 0 and expected < 0.9 * self.max_rows
                and self.bytes + size + left < self.max_bytes)


class Unplaced:
    """A big transaction's piece (binlake.assemble.pieces): its rows numbered from 0 and handed on at once,
    with no segment (segment_id None) and the ordinal of their rows event, for
    binlake.assemble.pieces.finish to place; each rows event's (rows, size) is kept for that."""

    __slots__ = ("piece", "seq", "events")
    segment_id = None

    def __init__(self, piece: int) -> None:
        self.piece = piece
        self.seq = 0
        self.events: list[tuple[int, int]] = []

    @property
    def ordinal(self) -> int:
        return len(self.events)

    def before(self, sink: RowSink | None, presentable: bool) -> int:
        return 0

    def after(self, rows: int, size: int, sink: RowSink | None) -> int:
        self.events.append((rows, size))
        self.seq += rows
        # out at once, whatever becomes of the transaction: finish() decides which rows are presented
        return sink.flush(end_segment=False) if sink is not None else 0

    def close(self, sink: RowSink | None, presentable: bool) -> int:
        return 0

    def surely_last(self, size: int, end: int) -> bool:
        return False

    def likely_last(self, rows: int, size: int, end: int) -> bool:
        return False


def _hand_on(sink: RowSink | None, presentable: bool, end_segment: bool) -> int:
    if sink is None:
        return 0
    if presentable:
        return sink.flush(end_segment)
    sink.drop()  # rows of a transaction that did not commit whole are not presented
    return 0


def replay(events: Iterable[tuple[int, int]], max_rows: int, max_bytes: int) -> tuple[list[tuple[int, int]], int]:
    """(segment_id, seq of its first row) of each rows event of a transaction, given each one's
    (rows, size) in binlog order, exactly as Segmenter numbers them streaming; and the number
    of segments."""
    seg = Segmenter(max_rows, max_bytes)
    out = []
    for rows, size in events:
        seg.before(None, False)
        out.append((seg.segment_id, seg.seq))
        seg.after(rows, size, None)
    return out, seg.segment_id
