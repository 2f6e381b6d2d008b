"""A walk's events: a file's frames, each TRANSACTION_PAYLOAD followed by the events inside it."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from binlake.binlog import constants as c
from binlake.binlog.framing import BinlogReader, Frame
from binlake.binlog.payload import inner_frames


def events(reader: BinlogReader, start: int, on_bad_payload: Callable[[Frame, str], None] | None
           ) -> Iterator[tuple[Frame, int]]:
    """(frame, its index inside a payload, -1 for a real event of the file) from `start` on; a payload
    that cannot be inflated is told to `on_bad_payload` (the walk after its inner events read so far)."""
    for f in reader.frames(start):
        yield f, -1
        if f.type == c.TRANSACTION_PAYLOAD_EVENT and f.crc_ok:
            try:
                for i, inner in enumerate(inner_frames(f, 19)):
                    yield inner, i
            except ValueError as exc:
                if on_bad_payload:
                    on_bad_payload(f, f"corrupt TRANSACTION_PAYLOAD: {exc}")


def next_type(reader: BinlogReader, frame: Frame, inner: int) -> int | None:
    """The type of the event after a real one (an XID after a statement ends its group)."""
    return reader.type_at(frame.end) if inner < 0 else None


def payload_pos(reader: BinlogReader, inner_frame: Frame) -> int:
    """Where the payload an inner event belongs to starts (inner events sit at their payload's end)."""
    for f in reader.frames():
        if f.end == inner_frame.pos and f.type == c.TRANSACTION_PAYLOAD_EVENT:
            return f.pos
    return inner_frame.pos
