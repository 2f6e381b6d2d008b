"""Framing: the file magic, the FORMAT_DESCRIPTION event and the walk from event to event.

A binlog is `fe 62 69 6e` then events. Every event starts with a common header
(19 bytes since MySQL 4.0; 13 in MySQL 3.23 "v1" files; longer in some patched
servers, as the FORMAT_DESCRIPTION event says), and since MySQL 5.6.1 / MariaDB 5.3
may end with a CRC32. Frames are cut by `event_size` alone; nothing here decodes a
body beyond the FORMAT_DESCRIPTION event, so a walk costs one header per event.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import re
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from binlake.binlog import constants as c
from binlake.binlog.builds import extension, pure_python
from binlake.errors import BinlogError

_HEADER = struct.Struct("<IBIIIH")  # timestamp, type, server_id, event_size, log_pos, flags
_HEADER_V1 = struct.Struct("<IBII")  # MySQL 3.23: no log_pos/flags in the header
_U32 = struct.Struct("<I")

# A walk over a memory-mapped file hands the pages it has passed back to the kernel every
# RELEASE_BYTES: they stay in the page cache, but the process's RSS no longer grows with the
# file (a 1 GiB transaction would otherwise count 1 GiB). A later walk over them faults them
# back in from the cache.
RELEASE_BYTES = 64 << 20


_frames: Any = extension("binlake.binlog._frames")  # None: the reference loop cuts every event


def compiled() -> bool:
    """Whether the compiled frame walk is built (BINLAKE_PURE_PYTHON aside)."""
    return _frames is not None


# Frames asked of the compiled walk at once, at first and at most, doubling between: a walk is
# often one event (the index reads a GTID, then jumps over its transaction), a transaction's few
# (the look-ahead), or a whole file. Cut ahead, the frames not taken are CRC work thrown away.
_FIRST_RUN, _MOST_RUN = 1, 1024

# Post-header lengths of binlog versions 1 and 3 (MySQL 3.23 / 4.0), which have no
# FORMAT_DESCRIPTION event; index = event type - 1. Values from the servers' own tables.
_OLD_POST_HEADERS = {
    1: bytes([56, 11, 0, 0, 0, 18, 0, 4, 4, 4, 4, 18, 0, 0]),
    3: bytes([56, 11, 0, 8, 0, 18, 0, 4, 4, 4, 4, 18, 0, 0]),
}


@dataclass(frozen=True, slots=True)
class FormatDescription:
    """What a reader must know to cut and decode a file's events."""

    binlog_version: int
    server_version: str
    header_len: int
    post_header_lens: bytes
    checksum_alg: int  # 0 none, 1 CRC32
    created: int
    type_map: bytes | None = None  # event ids of the 5.1/5.2 "a_drop" trees -> today's ids

    @property
    def flavor(self) -> str:
        return "mariadb" if "mariadb" in self.server_version.lower() else "mysql"

    @property
    def has_checksum(self) -> bool:
        return self.checksum_alg == c.CHECKSUM_CRC32

    def post_header_len(self, type_code: int) -> int:
        i = type_code - 1
        return self.post_header_lens[i] if 0 <= i < len(self.post_header_lens) else 0

    def to_dict(self) -> dict:
        return {
            "binlog_version": self.binlog_version,
            "server_version": self.server_version,
            "header_len": self.header_len,
            "post_header_lens": self.post_header_lens.hex(),
            "checksum_alg": self.checksum_alg,
            "created": self.created,
        }

    @classmethod
    def from_dict(cls, d: dict) -> FormatDescription:
        return cls(
            d["binlog_version"], d["server_version"], d["header_len"],
            bytes.fromhex(d["post_header_lens"]), d["checksum_alg"], d["created"],
        )


def version_tuple(server_version: str) -> tuple[int, int, int]:
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", server_version)
    return (int(m[1]), int(m[2]), int(m[3])) if m else (0, 0, 0)


def _checksum_aware(server_version: str) -> bool:
    """Servers from MySQL 5.6.1 / MariaDB 5.3 put the checksum algorithm in the FDE."""
    v = version_tuple(server_version)
    if "mariadb" in server_version.lower():
        return v >= (5, 3, 0)
    return v >= (5, 6, 1)


def crc_ok(event: bytes | memoryview) -> bool:
    """Whether a whole event's trailing CRC32 matches. A FORMAT_DESCRIPTION event's CRC was
    computed before the server cleared its LOG_EVENT_BINLOG_IN_USE_F flag on closing the file."""
    area = bytearray(event[:-4])
    if area[4] == c.FORMAT_DESCRIPTION_EVENT:
        area[17] &= ~c.LOG_EVENT_BINLOG_IN_USE_F & 0xFF
    return zlib.crc32(area) == _U32.unpack_from(event, len(event) - 4)[0]


class Frame:
    """One event as cut from the file: its header fields and where its body lies."""

    __slots__ = ("pos", "type", "timestamp", "server_id", "size", "log_pos", "flags",
                 "buf", "body_start", "body_end", "crc_ok")

    # the compiled walk (_frames.c) makes every Frame with these positionally, in this order
    def __init__(self, pos, type_, timestamp, server_id, size, log_pos, flags, buf,  # noqa: PLR0917
                 body_start, body_end, crc_ok=True):
        self.pos = pos
        self.type = type_
        self.timestamp = timestamp
        self.server_id = server_id
        self.size = size
        self.log_pos = log_pos
        self.flags = flags
        self.buf = buf
        self.body_start = body_start
        self.body_end = body_end
        self.crc_ok = crc_ok

    @property
    def end(self) -> int:
        return self.pos + self.size

    @property
    def body(self) -> memoryview:
        """The event body: after the common header, without the CRC32 trailer."""
        return memoryview(self.buf)[self.body_start:self.body_end]

    def __repr__(self) -> str:
        return f"<{c.event_name(self.type)} at {self.pos} size {self.size}>"


def parse_fde_body(body: bytes | memoryview) -> FormatDescription:
    """Decode a FORMAT_DESCRIPTION body (everything after the common header, CRC included)."""
    binlog_version = struct.unpack_from("<H", body, 0)[0]
    server_version = bytes(body[2:52]).split(b"\0", 1)[0].decode("latin-1")
    created = _U32.unpack_from(body, 52)[0]
    header_len = body[56]
    rest = bytes(body[57:])
    alg = c.CHECKSUM_OFF
    if _checksum_aware(server_version) and len(rest) >= 5:
        alg = rest[-5]
        rest = rest[:-5]
        if alg not in (c.CHECKSUM_OFF, c.CHECKSUM_CRC32):
            raise ValueError(f"unknown checksum algorithm {alg}")
    if header_len < 19:
        raise ValueError(f"common header length {header_len} is below 19")
    type_map = None
    if _A_DROP.match(server_version) and len(rest) == 22:
        # These development trees numbered TABLE_MAP..EXECUTE_LOAD_QUERY 16..22; the
        # servers read their files through this permutation, and so do we.
        type_map = _A_DROP_PERMUTATION
        permuted = bytearray(22)
        for old in range(1, 23):
            permuted[type_map[old] - 1] = rest[old - 1]
        rest = bytes(permuted)
    return FormatDescription(binlog_version, server_version, header_len, rest, alg, created,
                             type_map)


_A_DROP = re.compile(r"5\.(1\.[1-5]-a_drop5|1\.4-a_drop6|2\.[0-2]-a_drop6)")
_A_DROP_PERMUTATION = bytes([
    c.UNKNOWN_EVENT, c.START_EVENT_V3, c.QUERY_EVENT, c.STOP_EVENT, c.ROTATE_EVENT,
    c.INTVAR_EVENT, c.LOAD_EVENT, c.SLAVE_EVENT, c.CREATE_FILE_EVENT, c.APPEND_BLOCK_EVENT,
    c.EXEC_LOAD_EVENT, c.DELETE_FILE_EVENT, c.NEW_LOAD_EVENT, c.RAND_EVENT, c.USER_VAR_EVENT,
    c.FORMAT_DESCRIPTION_EVENT, c.TABLE_MAP_EVENT, c.PRE_GA_WRITE_ROWS_EVENT,
    c.PRE_GA_UPDATE_ROWS_EVENT, c.PRE_GA_DELETE_ROWS_EVENT, c.XID_EVENT,
    c.BEGIN_LOAD_QUERY_EVENT, c.EXECUTE_LOAD_QUERY_EVENT,
])


class BinlogReader:
    """Random access to one binlog file (or a byte range of it) as frames.

    `data` holds the bytes from file offset `base` on; positions are file offsets.
    Without `fde` the data must start at offset 0 (the magic) and the format is read
    from the first event. `pages` names the memory map behind `data` and the map's offset
    of `data[0]`, so that walks can release the pages they have passed.
    """

    def __init__(self, data, name: str, *, base: int = 0, fde: FormatDescription | None = None,
                 size: int | None = None, pages: tuple[mmap.mmap, int] | None = None) -> None:
        self.data = data
        self.name = name
        self.base = base
        self.end = base + (len(data) if size is None else size)
        self._mmap: mmap.mmap | None = None
        self.pages = pages
        self._low, self._high, self._since = self.end, base, 0  # walked since the last release
        if fde is None:
            self.fde, self.first_event_pos = self._read_format()
        else:
            self.fde, self.first_event_pos = fde, max(base, 4)

    @classmethod
    def open(cls, path: str | os.PathLike, name: str | None = None) -> BinlogReader:
        name = name or os.fspath(path)
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size == 0:
                    raise BinlogError(name, 0, "empty file: not a binlog")
                mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as e:
            raise BinlogError(name, 0, f"cannot read: {e.strerror or e}") from None
        reader = cls(mm, name, pages=(mm, 0))
        reader._mmap = mm
        return reader

    def close(self) -> None:
        if self._mmap is not None:
            with contextlib.suppress(BufferError):  # a view still held (an exception's frames): the
                self._mmap.close()  # map goes with it, and that exception is the one to see
            self._mmap = None
        self.pages = None

    def passed(self, start: int, end: int) -> None:
        """A walk has passed file offsets [start, end): their pages go back once walks together
        have passed RELEASE_BYTES (walks are often short, one per transaction), everything from
        the lowest start to the highest end since the last time."""
        self._low, self._high = min(self._low, start), max(self._high, end)
        self._since += end - start
        if self._since >= RELEASE_BYTES:
            self.release(self._low, self._high)
            self._low, self._high, self._since = self._high, self._high, 0

    def release(self, start: int, end: int) -> None:
        """Give back the whole pages of the map between file offsets `start` and `end`."""
        if self.pages is None:
            return
        mm, at = self.pages
        lo = -(-(start - self.base + at) // mmap.PAGESIZE) * mmap.PAGESIZE
        hi = (end - self.base + at) // mmap.PAGESIZE * mmap.PAGESIZE
        if hi > lo and not mm.closed:
            mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)

    def __enter__(self) -> BinlogReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the first event ---------------------------------------------------------------

    def _fail(self, offset: int, reason: str) -> BinlogError:
        return BinlogError(self.name, offset, reason)

    def _read_format(self) -> tuple[FormatDescription, int]:
        data = self.data
        n = len(data)
        if n == 0:
            raise self._fail(0, "empty file: not a binlog")
        magic = bytes(data[:4])
        if magic == c.ENCRYPTED_MAGIC:
            raise self._fail(0, "encrypted binlog: not supported (MySQL binlog_encryption)")
        if magic != c.MAGIC:
            raise self._fail(0, f"not a binlog file: magic {magic.hex(' ') or '(none)'}, "
                                "expected fe 62 69 6e")
        if n < 4 + 13:
            raise self._fail(4, f"truncated: {n - 4} bytes where the first event header should be")
        type_code = data[8]
        size = _U32.unpack_from(data, 13)[0]
        if type_code == c.FORMAT_DESCRIPTION_EVENT:
            if n < 4 + size or size < 19 + 57:
                raise self._fail(4, f"truncated FORMAT_DESCRIPTION event: {size} bytes "
                                    f"announced, {n - 4} in file")
            try:
                fde = parse_fde_body(memoryview(data)[4 + 19:4 + size])
            except (ValueError, struct.error, IndexError) as e:
                raise self._fail(4, f"corrupt FORMAT_DESCRIPTION event: {e}") from None
            if fde.has_checksum and not crc_ok(memoryview(data)[4:4 + size]):
                raise self._fail(4, "checksum mismatch in FORMAT_DESCRIPTION event")
            return fde, 4
        if type_code == c.START_EVENT_V3:
            binlog_version = 1 if size == 13 + 56 else 3
            hlen = 13 if binlog_version == 1 else 19
            if n < 4 + size:
                raise self._fail(4, "truncated START_V3 event")
            body = memoryview(data)[4 + hlen:4 + size]
            server_version = bytes(body[2:52]).split(b"\0", 1)[0].decode("latin-1")
            created = _U32.unpack_from(body, 52)[0]
            return FormatDescription(binlog_version, server_version, hlen,
                                     _OLD_POST_HEADERS[binlog_version], c.CHECKSUM_OFF,
                                     created), 4
        raise self._fail(4, f"no FORMAT_DESCRIPTION event at offset 4 (found event type "
                            f"{type_code}): not a readable binlog")

    # -- the walk ----------------------------------------------------------------------

    def type_at(self, pos: int) -> int | None:
        """The type of the event whose header starts at file offset `pos`, as frames() gives it;
        None where no whole header lies in the data."""
        i = pos - self.base
        if i < 0 or pos + self.fde.header_len > self.end or i + self.fde.header_len > len(self.data):
            return None
        t = self.data[i + 4]
        type_map = self.fde.type_map
        return type_map[t] if type_map is not None and t < len(type_map) else t

    @property
    def compiled_walk(self) -> bool:
        """Whether the compiled walk (_frames.c, and the lane over it) reads this file's format:
        today's event headers (not binlog v1's, nor the type ids of 5.1/5.2's a_drop trees), and
        it is built and not turned off (BINLAKE_PURE_PYTHON)."""
        fde = self.fde
        return _frames is not None and fde.binlog_version != 1 and fde.type_map is None and not pure_python()

    def skim(self, pos: int, inside: bytes, most: int = 256, most_events: int = 4096
             ) -> tuple[list[tuple[list[Frame], int]], int]:
        """The ordinary transactions from file offset `pos` on, each as its frames and its xid, and
        the offset after them (`pos` when there are none): a GTID (MySQL's then a QUERY 'BEGIN', or
        MariaDB's without FL_STANDALONE), then only events of the types `inside` marks (one byte per
        type), then an XID; whole in the data, every CRC32 matching, at most `most_events` events
        (a bigger one is left to the walk that streams it), no more transactions once that many
        events are cut.
        Cut by the compiled walk (_frames.c) alone: where it is off, or the file's format is one it
        does not read, none."""
        fde = self.fde
        if not self.compiled_walk:
            return [], pos
        txns, end = _frames.skim(Frame, self.data, self.base, pos, self.end, fde.header_len, fde.has_checksum,
                                 fde.post_header_len(c.QUERY_EVENT), inside, most, most_events)
        if end > pos and self.pages is not None:
            self.passed(pos, end)
        return txns, end

    def frames(self, start: int | None = None, end: int | None = None,
               verify: bool = True, only: frozenset[int] | None = None) -> Iterator[Frame]:
        """Yield frames from `start` (default: the first event) up to `end`; with `only`, the
        frames of those types alone (the others are stepped over by their headers, unchecked).

        Raises BinlogError with reason starting "truncated" when an event runs past the
        end of the data, and "corrupt" when a header cannot be an event header.
        A CRC32 mismatch does not stop the walk: the frame has `crc_ok = False`.
        """
        data = self.data
        base = self.base
        pos = self.first_event_pos if start is None else start
        stop = self.end if end is None else min(end, self.end)
        fde = self.fde
        v1 = fde.binlog_version == 1
        hdr = _HEADER_V1 if v1 else _HEADER
        unpack = hdr.unpack_from
        min_size = fde.header_len
        crc = fde.has_checksum
        crc32 = zlib.crc32
        released = pos
        next_release = pos + RELEASE_BYTES if self.pages is not None else stop
        # Runs of ordinary events are cut by the compiled walk (_frames.c), each other event here.
        fast = _frames if self.compiled_walk and only is None else None
        run = _FIRST_RUN
        try:
            while pos < stop:
                if pos >= next_release:  # a long walk (a big transaction) releases as it goes
                    self.passed(released, pos)
                    released, next_release = pos, pos + RELEASE_BYTES
                if fast is not None:
                    got = fast.cut(Frame, data, base, pos, stop, next_release, fde.header_len, crc, verify, run)[0]
                    if got:
                        for frame in got:
                            pos += frame.size  # before the yield: a frame handed on counts as passed
                            yield frame
                        run = min(run * 2, _MOST_RUN)
                        continue
                i = pos - base
                if stop - pos < hdr.size:
                    raise self._fail(pos, f"truncated event header: {stop - pos} bytes left")
                if v1:
                    ts, type_code, server_id, size = unpack(data, i)
                    log_pos = flags = 0
                else:
                    ts, type_code, server_id, size, log_pos, flags = unpack(data, i)
                if fde.type_map is not None and type_code < len(fde.type_map):
                    type_code = fde.type_map[type_code]
                if size < min_size + (4 if crc else 0):
                    raise self._fail(pos, f"corrupt event header: event_size {size} is smaller "
                                          f"than the {min_size}-byte header")
                if pos + size > stop:
                    if end is not None and pos + size <= self.end:
                        return  # the caller's range ends here; the event is whole in the data
                    raise self._fail(pos, f"truncated {c.event_name(type_code)} event: "
                                          f"{size} bytes announced, {self.end - pos} in file")
                if only is not None and type_code not in only and type_code != c.FORMAT_DESCRIPTION_EVENT:
                    pos += size
                    continue
                body_end = i + size
                ok = True
                if crc and type_code != c.FORMAT_DESCRIPTION_EVENT:
                    body_end -= 4
                    ok = crc32(data[i:body_end]) == _U32.unpack_from(data, body_end)[0]
                elif type_code == c.FORMAT_DESCRIPTION_EVENT and pos != self.first_event_pos:
                    # A later FDE (relay logs carry the source's): switch format from here on.
                    frame = Frame(pos, type_code, ts, server_id, size, log_pos, flags, data,
                                  i + fde.header_len, body_end)
                    try:
                        fde = parse_fde_body(frame.body)
                    except (ValueError, struct.error, IndexError) as e:
                        raise self._fail(pos, f"corrupt FORMAT_DESCRIPTION event: {e}") from None
                    if fde.has_checksum:
                        frame.body_end -= 4
                    pos += size
                    yield frame
                    min_size = fde.header_len
                    crc = fde.has_checksum
                    if fde.type_map is not None:
                        fast = None
                    continue
                elif crc:
                    body_end -= 4
                frame = Frame(pos, type_code, ts, server_id, size, log_pos, flags, data,
                              i + fde.header_len, body_end, ok if verify else True)
                pos += size
                yield frame
        finally:
            if self.pages is not None:
                self.passed(released, pos)
