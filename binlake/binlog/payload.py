"""TRANSACTION_PAYLOAD (MySQL 8.0.20+ binlog_transaction_compression): the events inside.

The body is a list of (type, length, value) fields in packed integers, ended by a
zero type, then the compressed events (zstd, or stored as is). Inner events have a
common header and no CRC32 of their own. Decompression streams, so a payload is
never expanded whole in memory: one inner event at a time.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import zstandard

from binlake.binlog import varlen
from binlake.binlog.framing import Frame

COMPRESSION_ZSTD = 0
COMPRESSION_NONE = 255
_FIELD_END, _FIELD_SIZE, _FIELD_COMPRESSION, _FIELD_UNCOMPRESSED_SIZE = 0, 1, 2, 3
_HEADER = struct.Struct("<IBIIIH")


@dataclass(slots=True)
class PayloadHeader:
    compression: int
    payload_size: int
    uncompressed_size: int | None
    data_start: int  # offset of the compressed bytes within the body


def parse_header(body: bytes | memoryview) -> PayloadHeader:
    pos = 0
    fields: dict[int, int] = {}
    while True:
        ftype, pos = varlen.read_packed(body, pos)
        if ftype == _FIELD_END:
            break
        flen, pos = varlen.read_packed(body, pos)
        value, _ = varlen.read_packed(body, pos)
        fields[ftype] = value
        pos += flen
    size = fields.get(_FIELD_SIZE, len(body) - pos)
    return PayloadHeader(fields.get(_FIELD_COMPRESSION, COMPRESSION_NONE), size,
                         fields.get(_FIELD_UNCOMPRESSED_SIZE), pos)


def _stream(body: memoryview, header: PayloadHeader) -> BinaryIO:
    data = body[header.data_start:header.data_start + header.payload_size]
    if header.compression == COMPRESSION_NONE:
        return io.BytesIO(data)
    if header.compression == COMPRESSION_ZSTD:
        return zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data),
                                                         read_across_frames=True)
    raise ValueError(f"unknown payload compression type {header.compression}")


def _read_exact(stream, n: int) -> bytes:
    chunks = []
    while n > 0:
        chunk = stream.read(n)
        if not chunk:
            break
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def inner_frames(outer: Frame, header_len: int = 19) -> Iterator[Frame]:
    """Yield the events inside a payload frame, each placed at the payload's end.

    Raises ValueError on a corrupt payload (bad compression, an inner event cut short).
    """
    body = outer.body
    header = parse_header(body)
    stream = _stream(body, header)
    place = outer.pos + outer.size  # where mysqlbinlog prints them: the payload's end
    try:
        while True:
            head = _read_exact(stream, header_len)
            if not head:
                return
            if len(head) < header_len:
                raise ValueError("payload ends inside an inner event header")
            ts, type_code, server_id, size, log_pos, flags = _HEADER.unpack_from(head, 0)
            if size < header_len:
                raise ValueError(f"inner event of size {size} is shorter than its header")
            rest = _read_exact(stream, size - header_len)
            if len(rest) < size - header_len:
                raise ValueError("payload ends inside an inner event")
            buf = head + rest
            yield Frame(place, type_code, ts, server_id, size, log_pos, flags, buf,
                        header_len, size)
    except zstandard.ZstdError as e:
        raise ValueError(f"zstd: {e}") from None
