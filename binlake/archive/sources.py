"""Where binlog files come from: a MySQL/MariaDB server over the replication protocol, or a directory.

Both give the rotated (closed) files with their sizes, and each file as a stream of bytes:
first the 4-byte magic, then runs of whole events exactly as they are in the file (a run is
one event or many, back to back; a file that ends inside an event ends with the part it has).
"""

from __future__ import annotations

import os
import re
import secrets
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

from binlake.archive import loop
from binlake.binlog import constants as c
from binlake.errors import BinlakeError

COM_BINLOG_DUMP = 0x12
BINLOG_DUMP_NON_BLOCK = 0x01
BINLOG_SEND_ANNOTATE_ROWS_EVENT = 0x02  # MariaDB leaves ANNOTATE_ROWS out unless asked
ER_SOURCE_FATAL_ERROR_READING_BINLOG = 1236  # the dump stopped: the reason is in the message
REPLICA_IDS = 0x62690000  # a run's default replica server_id is this plus 16 random bits
_HEADER = struct.Struct("<IBIIIH")
READ_SIZE = 1 << 20  # bytes read at once, from a file or the server's socket
# Bytes of events taken out of dump packets by each path in this process (tests and benchmarks read it).
dumped = {"compiled": 0, "reference": 0}


class SourceError(BinlakeError):
    """A source cannot be read: names the source (never its password) and why."""


class RefusedFile(SourceError):
    """The server lists a file but refuses to send it (MySQL with GTID_MODE=ON refuses files of
    anonymous transactions, written before an online migration of gtid_mode): its reason."""

    def __init__(self, message: str, file: str, reason: str) -> None:
        super().__init__(message)
        self.file, self.reason = file, reason


@dataclass(frozen=True)
class BinlogFile:
    name: str
    size: int


def _safe_name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name) or name in (".", ".."):
        raise SourceError(f"binlog file name {name!r} is not a plain file name: refusing it")
    return name


class DirSource:
    """dir:///path — a directory of binlog files (a mounted datadir, the bundled samples);
    dir:///path?basename=binlog takes only `binlog.NNNNNN` (a datadir also holds relay logs,
    MariaDB's `aria_log.NNNNNNNN`)."""

    def __init__(self, path: str, basename: str | None = None) -> None:
        self.path = Path(path)
        self.basename = basename
        self.url = f"dir://{self.path}" + (f"?basename={basename}" if basename else "")
        self.server_uuid: str | None = None  # not knowable from files alone
        self.binlog_dir: str | None = str(self.path)

    def files(self) -> list[BinlogFile]:
        if not self.path.is_dir():
            raise SourceError(f"{self.url}: no such directory")
        named = re.escape(self.basename) if self.basename else ".+"
        found = sorted((p for p in self.path.iterdir() if re.fullmatch(rf"{named}\.\d+", p.name) and p.is_file()),
                       key=lambda p: (p.name.rsplit(".", 1)[0], int(p.name.rsplit(".", 1)[1])))
        out = []
        for i, p in enumerate(found):
            later = i + 1 < len(found) and found[i + 1].name.rsplit(".", 1)[0] == p.name.rsplit(".", 1)[0]
            if later or _closed(p):
                out.append(BinlogFile(_safe_name(p.name), p.stat().st_size))
        return out

    def stream(self, f: BinlogFile) -> Iterator[bytes]:
        with open(self.path / f.name, "rb") as fh:
            yield fh.read(4)
            carry = b""
            while True:
                # an event longer than a read is read to its end at once, not grown read by read
                want = max(READ_SIZE, _HEADER.unpack_from(carry)[3] - len(carry) if len(carry) >= 19 else 0)
                block = fh.read(want)
                if not block:
                    if carry:
                        yield carry  # the file ends inside an event: the verifier says where
                    return
                data = carry + block if carry else block
                cut = _whole(data)
                if cut:
                    yield data[:cut]
                carry = data[cut:]


def _whole(data: bytes) -> int:
    """Where the last whole event of `data` ends (an event shorter than a header counts as a
    header's length, for the verifier to refuse)."""
    off, n = 0, len(data)
    while n - off >= 19:
        end = off + max(19, _HEADER.unpack_from(data, off)[3])
        if end > n:
            break
        off = end
    return off


def _closed(p: Path) -> bool:
    """The last file of a directory is closed when it ends with ROTATE or STOP and its
    FORMAT_DESCRIPTION no longer says "in use"."""
    from binlake.binlog.framing import BinlogReader
    from binlake.errors import BinlogError

    try:
        with BinlogReader.open(p) as r:
            in_use = struct.unpack_from("<H", r.data, 4 + 17)[0] & c.LOG_EVENT_BINLOG_IN_USE_F
            last = None
            for last in r.frames(verify=False):  # noqa: B007 - we want the last one
                pass
            return not in_use and last is not None and last.type in (c.ROTATE_EVENT, c.STOP_EVENT)
    except BinlogError:
        return False


class MySQLSource:
    """mysql://user[:password]@host:port — copies files over the replication protocol, as
    `mysqlbinlog --read-from-remote-server --raw` does. A user with REPLICATION SLAVE and
    REPLICATION CLIENT is enough. The password may come from BINLAKE_MYSQL_PASSWORD."""

    def __init__(self, url: str, server_id: int | None = None, password: str | None = None) -> None:
        u = urlparse(url)
        self.host = u.hostname or "127.0.0.1"
        self.port = u.port or 3306
        self.user = unquote(u.username or "root")
        self.password = password if password is not None else (
            unquote(u.password) if u.password is not None else os.environ.get("BINLAKE_MYSQL_PASSWORD", ""))
        # A server ends the dump of a replica when another connects under its server_id: each run
        # (concurrent Airflow tasks) dumps under its own unless told one.
        self.server_id = server_id or REPLICA_IDS | secrets.randbelow(1 << 16)
        self.server_uuid: str | None = None
        self.binlog_dir: str | None = None  # where the server keeps its binlog files (@@log_bin_basename)
        self.binlog_basename: str | None = None  # their name before the number
        self.url = f"mysql://{self.user}@{self.host}:{self.port}"  # never the password

    def connect(self, **options):
        """A PyMySQL connection to the server; `options` are PyMySQL's, over the defaults."""
        import pymysql

        try:
            return pymysql.connect(**{"host": self.host, "port": self.port, "user": self.user,
                                      "password": self.password, "autocommit": True, "connect_timeout": 10,
                                      "read_timeout": 600, **options})
        except pymysql.err.OperationalError as e:
            code = e.args[0] if e.args else 0
            if code == 1045:
                raise SourceError(f"{self.url}: access denied (wrong user or password)", lasting=True) from None
            raise SourceError(f"{self.url}: cannot connect: {e.args[-1] if e.args else e}") from None

    def files(self) -> list[BinlogFile]:
        import pymysql

        conn = self.connect()
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT @@log_bin")
                if not cur.fetchone()[0]:
                    raise SourceError(f"{self.url}: binary logging is off (log_bin)", lasting=True)
                cur.execute("SHOW BINARY LOGS")
                rows = cur.fetchall()
                cur.execute("SHOW VARIABLES LIKE 'server_uuid'")  # MariaDB has none
                found = cur.fetchone()
                self.server_uuid = found[1] if found else None
                cur.execute("SELECT @@log_bin_basename")
                basename = cur.fetchone()[0]
                self.binlog_dir = os.path.dirname(basename) if basename else None
                self.binlog_basename = os.path.basename(basename) if basename else None
        except pymysql.err.OperationalError as e:
            if e.args and e.args[0] in (1227, 1142):
                raise SourceError(f"{self.url}: missing privilege: grant REPLICATION CLIENT and "
                                  "REPLICATION SLAVE", lasting=True) from None
            raise SourceError(f"{self.url}: {e.args[-1] if e.args else e}") from None
        finally:
            conn.close()
        # The last file is the active one: never archived.
        return [BinlogFile(_safe_name(r[0]), int(r[1])) for r in rows[:-1]]

    def stream(self, f: BinlogFile) -> Iterator[bytes]:
        import pymysql

        conn = self.connect()
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT @@version_comment, @@version")
                flavor = "mariadb" if "mariadb" in " ".join(map(str, cur.fetchone())).lower() else "mysql"
                cur.execute("SELECT @@global.binlog_checksum")
                alg = cur.fetchone()[0]
                cur.execute(f"SET @master_binlog_checksum = '{alg}'")
                if flavor == "mysql":
                    cur.execute(f"SET @source_binlog_checksum = '{alg}'")
                else:
                    cur.execute("SET @mariadb_slave_capability = 4")  # send GTID events as they are
            flags = BINLOG_DUMP_NON_BLOCK | (BINLOG_SEND_ANNOTATE_ROWS_EVENT if flavor == "mariadb" else 0)
            payload = struct.pack("<IHI", 4, flags, self.server_id) + f.name.encode()
            conn._execute_command(COM_BINLOG_DUMP, payload)  # noqa: SLF001 - PyMySQL has no public COM_BINLOG_DUMP
            yield c.MAGIC
            pos = 4
            dump = _Dump(conn)
            while True:
                run = dump.run(f.size - pos)
                if run:
                    yield run
                    pos += len(run)
                    if pos >= f.size:
                        return
                    continue
                packet = dump.packet()
                if packet[0] == 0xFE and len(packet) < 9:  # EOF: the server has nothing more
                    return
                data = packet[1:]
                ts, type_code, server_id, size, log_pos, flags = _HEADER.unpack_from(data, 0)
                if type_code in (c.HEARTBEAT_LOG_EVENT, c.HEARTBEAT_LOG_EVENT_V2):
                    continue
                if type_code == c.ROTATE_EVENT and (flags & c.LOG_EVENT_ARTIFICIAL_F or log_pos == 0):
                    if pos > 4:
                        return  # the server moved on to the next file: this one had no ROTATE (a crash)
                    continue  # the fake ROTATE naming the file the dump starts in
                yield data
                pos += len(data)
                if type_code in (c.ROTATE_EVENT, c.STOP_EVENT) or pos >= f.size:
                    return  # the end of this file; the server would go on with the next
        except pymysql.err.MySQLError as e:
            if e.args and e.args[0] in (1227, 1045):
                raise SourceError(f"{self.url}: missing privilege REPLICATION SLAVE", lasting=True) from None
            reason = str(e.args[-1] if e.args else e)
            if e.args and e.args[0] == ER_SOURCE_FATAL_ERROR_READING_BINLOG and _displaced(reason):
                raise SourceError(f"{self.url}: dump of {f.name} ended: another replica connected with this run's "
                                  f"server_id {self.server_id} ({reason}); give each concurrent run its own "
                                  "--server-id") from None
            if e.args and e.args[0] == ER_SOURCE_FATAL_ERROR_READING_BINLOG and not _gone(reason):
                raise RefusedFile(f"{self.url}: the server refuses to send {f.name}: {reason}", f.name,
                                  reason) from None
            raise SourceError(f"{self.url}: dump of {f.name} failed: {e.args[-1] if e.args else e}") from None
        finally:
            conn.close()


def _displaced(reason: str) -> bool:
    """Whether a dump was ended because another replica connected under the same server_id."""
    return "same server_uuid/server_id" in reason.lower() or "same server_id" in reason.lower()


def _gone(reason: str) -> bool:
    """Whether a dump failed because the file went (purged after the listing), not a refusal."""
    return "could not find first log file" in reason.lower()


class _Dump:
    """A binlog dump's packets, read off pymysql's socket a megabyte at a time, not packet by
    packet through pymysql's packet objects and per-read timeouts (most of the copy's time went
    there). `run()` gives the events of a run of ordinary packets at once (the compiled loop);
    `packet()` gives the next packet's payload, whatever it is: a payload of 16 MiB - 1 bytes goes
    on in the next packet; an error packet raises as pymysql raises it."""

    def __init__(self, conn) -> None:
        self.rfile, self.seq = conn._rfile, conn._next_seq_id  # noqa: SLF001 - read where pymysql reads
        self.buf = bytearray(READ_SIZE)
        self.start = self.end = 0  # the bytes received and not yet taken: buf[start:end]
        self.loop = loop()

    def _fill(self, need: int) -> None:
        """Receive until `need` bytes are waiting."""
        import pymysql

        while self.end - self.start < need:
            if self.start and (self.end == len(self.buf) or self.start + need > len(self.buf)):
                waiting = self.end - self.start
                self.buf[:waiting] = self.buf[self.start:self.end]
                self.start, self.end = 0, waiting
            if need > len(self.buf):
                self.buf.extend(bytes(need - len(self.buf)))
            try:
                with memoryview(self.buf) as view:
                    got = self.rfile.readinto1(view[self.end:])
            except OSError as e:
                raise pymysql.err.OperationalError(
                    2013, f"Lost connection to MySQL server during query ({e})") from None
            if not got:
                raise pymysql.err.OperationalError(2013, "Lost connection to MySQL server during query")
            self.end += got

    def run(self, limit: int) -> bytes:
        """The events of the ordinary event packets waiting (at least one when there are), up to
        the one that brings them to `limit` bytes; b"" when the next packet is not one."""
        if self.loop is None:
            return b""
        while True:
            self.start, self.seq, events, whole = self.loop.packets(self.buf, self.start, self.end, self.seq, limit)
            if events or whole:
                dumped["compiled"] += len(events)
                return events
            self._fill(4 + self._length() if self.end - self.start >= 4 else 4)

    def _length(self) -> int:
        """The payload length in the header of the packet waiting."""
        head = self.buf[self.start:self.start + 3]
        return head[0] | head[1] << 8 | head[2] << 16

    def packet(self) -> bytes:
        import pymysql

        parts = []
        while True:
            self._fill(4)
            n, seq = self._length(), self.buf[self.start + 3]
            if seq != self.seq:  # MariaDB restarts at 0 with an error packet when it shuts down
                raise pymysql.err.OperationalError(
                    2013, f"Lost connection to MySQL server during query (packet {seq}, expected {self.seq})")
            self._fill(4 + n)
            parts.append(bytes(self.buf[self.start + 4:self.start + 4 + n]))
            self.start += 4 + n
            self.seq = (self.seq + 1) & 0xFF
            if n < 0xFFFFFF:
                break
        packet = parts[0] if len(parts) == 1 else b"".join(parts)
        if packet[:1] == b"\xff":
            pymysql.err.raise_mysql_exception(packet)
        dumped["reference"] += len(packet) - 1
        return packet


def open_source(url: str, server_id: int | None = None):
    u = urlparse(url)
    if u.scheme == "dir":
        return DirSource(u.path, parse_qs(u.query).get("basename", [None])[0])
    if u.scheme == "mysql":
        return MySQLSource(url, server_id=server_id)
    raise SourceError(f"unsupported source {u.scheme}:// (use mysql://user@host:port or dir:///path)")
