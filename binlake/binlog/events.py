"""Bodies of the events that shape transactions: GTIDs, QUERY, XID, XA_PREPARE, ROTATE, …

Row images (TABLE_MAP, *_ROWS) live in `rows.py`; compressed payloads in `payload.py`.
Each decoder takes the event body (after the common header, without the CRC32) and
the post-header length the FORMAT_DESCRIPTION event gives for its type.
"""

from __future__ import annotations

import re
import struct
import zlib
from dataclasses import dataclass

from binlake.binlog import constants as c
from binlake.binlog import varlen
from binlake.binlog.gtid import format_uuid, maria_gtid, mysql_gtid

_ZERO_SID = "00000000-0000-0000-0000-000000000000"


@dataclass(slots=True)
class GtidInfo:
    """What a GTID-class event says about the transaction it opens."""

    gtid: str | None  # None for ANONYMOUS_GTID
    last_committed: int | None = None
    sequence_number: int | None = None
    immediate_commit_ts: int | None = None  # microseconds since the epoch, UTC
    original_commit_ts: int | None = None
    transaction_length: int | None = None  # 0 = not known (5.7 files read by 8.0)
    flags: int = 0  # MariaDB flags2, MySQL gtid flags
    domain_id: int | None = None
    xa_xid: str | None = None  # MariaDB XA GTID events carry the XID

    @property
    def standalone(self) -> bool:
        return bool(self.flags & c.FL_STANDALONE)


_GTID_HEAD = struct.Struct("<B16sq")  # flags, sid, gno
_LOGICAL = struct.Struct("<qq")  # last_committed, sequence_number, after their type code 2


def decode_mysql_gtid(type_code: int, body: bytes | memoryview) -> GtidInfo:
    """GTID (33) / ANONYMOUS_GTID (34): fixed offsets, optional tails by remaining length."""
    b = bytes(body)
    n = len(b)
    flags, sid, gno = _GTID_HEAD.unpack_from(b)
    info = GtidInfo(None if type_code == c.ANONYMOUS_GTID_LOG_EVENT else mysql_gtid(format_uuid(sid), gno),
                    flags=flags)
    pos = 25
    if n >= pos + 17 and b[pos] == 2:  # LOGICAL_TIMESTAMP_TYPECODE
        info.last_committed, info.sequence_number = _LOGICAL.unpack_from(b, pos + 1)
        pos += 17
    if n >= pos + 7:
        ts = int.from_bytes(b[pos:pos + 7], "little")
        pos += 7
        if ts & (1 << 55):  # the original timestamp follows
            ts &= (1 << 55) - 1
            info.original_commit_ts = int.from_bytes(b[pos:pos + 7], "little")
            pos += 7
        else:
            info.original_commit_ts = ts
        info.immediate_commit_ts = ts
        if n > pos:
            info.transaction_length, pos = varlen.read_packed(b, pos)
    return info


def decode_tagged_gtid(body: bytes | memoryview) -> GtidInfo:
    """GTID_TAGGED (42, MySQL 8.3+): a mysql::serialization message of numbered fields."""
    b = bytes(body)
    pos = 0
    _version, pos = varlen.read_unsigned(b, pos)
    size, pos = varlen.read_unsigned(b, pos)
    _last_non_ignorable, pos = varlen.read_unsigned(b, pos)
    end = min(size, len(b))
    fields: dict[int, int] = {}
    sid, tag = _ZERO_SID, None
    while pos < end:
        fid, pos = varlen.read_unsigned(b, pos)
        if fid == 1:  # uuid: 16 varlen bytes
            raw = bytearray()
            for _ in range(16):
                x, pos = varlen.read_unsigned(b, pos)
                raw.append(x)
            sid = format_uuid(bytes(raw))
        elif fid == 3:  # tag: length-prefixed string
            n, pos = varlen.read_unsigned(b, pos)
            tag = b[pos:pos + n].decode("ascii") or None
            pos += n
        elif fid in (2, 4, 5):  # gno, last_committed, sequence_number: signed
            fields[fid], pos = varlen.read_signed(b, pos)
        elif fid <= 11:
            fields[fid], pos = varlen.read_unsigned(b, pos)
        else:
            break  # a field of a newer server: the ones we need come first
    immediate = fields.get(6)
    return GtidInfo(
        gtid=mysql_gtid(sid, fields.get(2, 0), tag),
        last_committed=fields.get(4),
        sequence_number=fields.get(5),
        immediate_commit_ts=immediate,
        original_commit_ts=fields.get(7, immediate),
        transaction_length=fields.get(8),
        flags=fields.get(0, 0),
    )


def decode_maria_gtid(body: bytes | memoryview, server_id: int) -> GtidInfo:
    b = bytes(body)
    seq, domain, flags = struct.unpack_from("<QIB", b, 0)
    info = GtidInfo(maria_gtid(domain, server_id, seq), flags=flags, domain_id=domain)
    pos = 13
    if flags & c.FL_GROUP_COMMIT_ID:
        pos += 8
    if flags & (c.FL_PREPARED_XA | c.FL_COMPLETED_XA) and len(b) >= pos + 6:
        fmt, glen, blen = struct.unpack_from("<iBB", b, pos)
        data = b[pos + 6:pos + 6 + glen + blen]
        info.xa_xid = format_xid(data[:glen], data[glen:], fmt)
    return info


def format_xid(gtrid: bytes, bqual: bytes, format_id: int) -> str:
    """The canonical XA xid, as MySQL writes it into XA COMMIT/ROLLBACK statements."""
    return f"X'{gtrid.hex()}',X'{bqual.hex()}',{format_id}"


_XA_COMPLETE = re.compile(r"\s*XA\s+(?:COMMIT|ROLLBACK)\s+(.*?)(?:\s+ONE\s+PHASE)?\s*;?\s*$", re.I | re.S)
# One part of an xid as a statement spells it: X'hex', 0xhex, 'text' or a number.
_XID_TOKEN = re.compile(r"\s*(X'([0-9a-fA-F]*)'|0x([0-9a-fA-F]+)|'((?:[^'\\]|\\.|'')*)'|(\d+))\s*,?")


def parse_xa_xid(text: str) -> str | None:
    """The xid of an XA COMMIT/ROLLBACK statement, in format_xid's canonical form."""
    m = _XA_COMPLETE.match(text)
    if not m:
        return None
    parts = _split_xid(m.group(1))
    if not parts:
        return None
    gtrid = parts[0]
    bqual = parts[1] if len(parts) > 1 else b""
    fmt = int(parts[2]) if len(parts) > 2 else 1
    return format_xid(gtrid, bqual, fmt)


def _split_xid(s: str) -> list | None:
    out: list = []
    pos = 0
    while pos < len(s):
        m = _XID_TOKEN.match(s, pos)
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


@dataclass(slots=True)
class XaPrepare:
    one_phase: bool
    xid: str


def decode_xa_prepare(body: bytes | memoryview) -> XaPrepare:
    b = bytes(body)
    one_phase, fmt, glen, blen = struct.unpack_from("<Biii", b, 0)
    data = b[13:13 + glen + blen]
    return XaPrepare(bool(one_phase), format_xid(data[:glen], data[glen:], fmt))


def decode_xid(body: bytes | memoryview) -> int:
    return struct.unpack_from("<Q", body, 0)[0]


@dataclass(slots=True)
class Query:
    thread_id: int
    exec_time: int
    error_code: int
    db: str
    text: str
    ddl_xid: int | None  # MySQL 8 atomic DDL and MariaDB log a DDL's xid in the status variables
    collation_server: int | None = None  # the server's default collation when it ran (a schema's default)


# Lengths of the QUERY status variables, by code; None = variable, handled below.
_STATUS_FIXED = {0: 4, 1: 8, 3: 4, 4: 6, 7: 2, 8: 2, 9: 8, 10: 4, 13: 3, 14: 8,
                 16: 1, 17: 8, 18: 2, 19: 1, 20: 1, 128: 3, 129: 8, 130: 1}
Q_DDL_LOGGED_WITH_XID = 17  # MySQL 8 atomic DDL
Q_XID = 129  # MariaDB: the xid of a DDL
Q_CHARSET_CODE = 4


def _status_vars(status: bytes) -> tuple[int | None, int | None]:
    """Walk the status variables for a DDL's xid and the server's collation; stop at a code we
    don't know."""
    pos = 0
    n = len(status)
    xid = collation = None
    while pos < n:
        code = status[pos]
        pos += 1
        if code in (Q_DDL_LOGGED_WITH_XID, Q_XID):
            xid = struct.unpack_from("<Q", status, pos)[0] if pos + 8 <= n else None
        if code == Q_CHARSET_CODE and pos + 6 <= n:  # client charset, connection and server collations
            collation = struct.unpack_from("<H", status, pos + 4)[0]
        if code in _STATUS_FIXED:
            pos += _STATUS_FIXED[code]
        elif code in (2, 5, 6):  # catalog (len + str + NUL), time zone, catalog_nz
            pos += 1 + status[pos] + (1 if code == 2 else 0)
        elif code == 11:  # invoker: user, host
            pos += 1 + status[pos]
            pos += 1 + status[pos]
        elif code == 12:  # updated db names
            count = status[pos]
            pos += 1
            if count != 254:
                for _ in range(count):
                    pos = status.find(b"\0", pos) + 1
                    if pos == 0:
                        return xid, collation
        else:
            break
    return xid, collation


def check_query(body: bytes | memoryview, post_header_len: int) -> None:
    """Raise ValueError where the servers find a QUERY event invalid ("Found invalid event in binary
    log"): its status variables and database name run past its end. decode_query itself reads
    what it can."""
    status_len = struct.unpack_from("<H", body, 11)[0] if post_header_len >= 13 else 0
    db_len, room = body[8], len(body) - post_header_len
    if status_len + db_len + 1 > room:
        raise ValueError(f"status_vars_len {status_len} and db_len {db_len} run past the event: "
                         f"{room} bytes follow its post-header")


def decode_query(body: bytes | memoryview, post_header_len: int, compressed: bool = False) -> Query:
    b = bytes(body)
    thread_id, exec_time, db_len, error_code = struct.unpack_from("<IIBH", b, 0)
    status_len = struct.unpack_from("<H", b, 11)[0] if post_header_len >= 13 else 0
    pos = post_header_len
    status = b[pos:pos + status_len]
    pos += status_len
    db = b[pos:pos + db_len].decode("utf-8", "replace")
    pos += db_len + 1
    raw = b[pos:]
    if compressed:
        raw = uncompress_maria(raw)
    return Query(thread_id, exec_time, error_code, db, raw.decode("utf-8", "replace"), *_status_vars(status))


def uncompress_maria(data: bytes) -> bytes:
    """MariaDB log_bin_compress: 1 header byte (0x80 | length-of-length), length BE, zlib."""
    if not data:
        raise ValueError("empty compressed data")
    head = data[0]
    nlen = head & 0x07
    if not head & 0x80 or (head >> 4) & 0x07 != 0 or nlen == 0 or nlen > 4:
        raise ValueError(f"unknown MariaDB compression header 0x{head:02x}")
    size = int.from_bytes(data[1:1 + nlen], "big")
    try:
        out = zlib.decompress(data[1 + nlen:])
    except zlib.error as e:  # damaged: a decode error of its event, as any other
        raise ValueError(f"compressed data does not uncompress: {e}") from None
    if len(out) != size:
        raise ValueError(f"compressed data gives {len(out)} bytes, header says {size}")
    return out


def decode_rotate(body: bytes | memoryview, post_header_len: int) -> tuple[int, str]:
    b = bytes(body)
    position = struct.unpack_from("<Q", b, 0)[0] if post_header_len >= 8 else 4
    return position, b[post_header_len:].decode("utf-8", "replace")


def decode_rows_query(body: bytes | memoryview) -> str:
    # The first byte is a length that overflows for long statements: the text is the rest.
    return bytes(body[1:]).decode("utf-8", "replace")


def decode_annotate_rows(body: bytes | memoryview) -> str:
    return bytes(body).decode("utf-8", "replace")


# Incident numbers the servers define (MySQL's and MariaDB's Incident_log_event::Incident)
INCIDENTS = {1: "LOST_EVENTS"}


@dataclass(slots=True)
class Incident:
    number: int
    message: str

    def __str__(self) -> str:
        name = INCIDENTS.get(self.number, "a number no server defines")
        said = f'message "{self.message}"' if self.message else "no message"
        return f"incident {self.number} ({name}), {said}"


def decode_incident(body: bytes | memoryview, post_header_len: int) -> Incident:
    """The incident number (the post-header), then the message: a length byte and its text."""
    b = bytes(body)
    number = struct.unpack_from("<H", b, 0)[0]
    n = b[post_header_len] if len(b) > post_header_len else 0
    return Incident(number, b[post_header_len + 1:post_header_len + 1 + n].decode("utf-8", "replace"))
