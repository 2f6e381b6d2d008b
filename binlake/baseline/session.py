"""One consistent-snapshot transaction of a live server, and the exact point of its binlog its
reads hold at: the file and position, and the GTID set (MySQL's gtid_executed form, MariaDB's
gtid_binlog_pos form), as binlake.schema.capture's `binlog_point` writes them.

- MySQL: `FLUSH TABLES WITH READ LOCK` is held only around `START TRANSACTION WITH CONSISTENT
  SNAPSHOT` and the point read (`SHOW BINARY LOG STATUS`, `gtid_executed`), as `mysqldump
  --single-transaction --source-data` holds it: while it is held no transaction commits, so the
  read view and the point are one instant. Neither `LOCK INSTANCE FOR BACKUP` (it lets DML
  commit) nor `performance_schema.log_status` (exact about the binlog and gtid_executed, but at
  another instant than any read view) makes them one. Needs FLUSH_TABLES (or RELOAD) and
  REPLICATION CLIENT besides SELECT.
- MariaDB: `START TRANSACTION WITH CONSISTENT SNAPSHOT` makes `binlog_snapshot_file` and
  `binlog_snapshot_position` the binlog position of its read view; `BINLOG_GTID_POS()` gives the
  GTID position there. Needs SELECT only.

information_schema is not transactional: the tables' definitions are read before and after the
point, and the session is begun again until the two agree (no DDL ran in between): those are the
definitions at the point. A table's definition is read again once the session holds its
metadata lock (`hold`): a DDL after the point changes it, or makes its reads fail with
ER_TABLE_DEF_CHANGED; either way the table is read in a later session (binlake.baseline.run).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from binlake.archive.sources import MySQLSource
from binlake.baseline.keys import Index, read_indexes
from binlake.baseline.layout import now_text
from binlake.baseline.values import quote
from binlake.errors import BinlakeError
from binlake.schema.capture import binlog_point, over_user_tables, read_tables
from binlake.schema.model import Table

log = logging.getLogger(__name__)

ER_TABLEACCESS_DENIED = 1142
ER_COLUMNACCESS_DENIED = 1143
ER_NO_SUCH_TABLE = 1146
ER_SPECIFIC_ACCESS_DENIED = 1227
ER_LOCK_WAIT_TIMEOUT = 1205
ER_TABLE_DEF_CHANGED = 1412
LOCK_WAIT_SECONDS = 60  # how long FLUSH TABLES WITH READ LOCK may wait for statements holding tables
ATTEMPTS = 10  # sessions begun before DDL that keeps changing the tables is an error
SAVEPOINT = "binlake_table"
_ENGINES = """
SELECT TABLE_SCHEMA, TABLE_NAME, ENGINE FROM information_schema.TABLES
WHERE TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') AND TABLE_SCHEMA NOT IN %s {only}
"""
# Engines whose tables a consistent-snapshot transaction reads at its point.
TRANSACTIONAL = frozenset({"InnoDB"})


class SnapshotError(BinlakeError):
    """A snapshot cannot be taken: names the server (never its password) or the table, and why."""


class DefinitionChanged(Exception):
    """A table was altered, truncated or recreated after the session's point (its reads fail with
    ER_TABLE_DEF_CHANGED): it is to be read in a later session."""


@dataclass(frozen=True)
class Server:
    flavor: str
    version: str
    server_id: int
    server_uuid: str | None


@dataclass
class Catalog:
    """What information_schema says of the user tables the session may read."""

    databases: dict[str, str | None]
    tables: dict[tuple[str, str], Table]
    indexes: dict[tuple[str, str], list[Index]]
    engines: dict[tuple[str, str], str | None]


def read_catalog(cur, only: tuple[str, str] | None = None) -> Catalog:
    """The user tables (or the one table `only`) as information_schema shows them now."""
    databases, tables = read_tables(cur, only)
    over_user_tables(cur, _ENGINES, only)
    engines = {(s.decode(), t.decode()): e.decode() if e is not None else None for s, t, e in cur.fetchall()}
    return Catalog(databases, tables, read_indexes(cur, only), engines)


def _encoders() -> dict:
    from pymysql.converters import conversions

    return {k: v for k, v in conversions.items() if not isinstance(k, int)}


def connect(source: MySQLSource):
    """A connection that hands every value over as the bytes the server sends, in each column's
    own charset (binlake.baseline.values), with the session settings a snapshot reads under."""
    conn = source.connect(use_unicode=False, conv=_encoders(), read_timeout=3600, write_timeout=3600)
    with conn.cursor() as cur:
        # UTC times; no sql_mode that pads CHAR or refuses a zero date's literal; the server
        # waits for a slow store (net_write_timeout) rather than dropping the connection
        cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        cur.execute(f"SET SESSION time_zone = '+00:00', sql_mode = '', character_set_results = NULL, "
                    f"net_write_timeout = 3600, net_read_timeout = 3600, lock_wait_timeout = {LOCK_WAIT_SECONDS}")
    return conn


def server_of(cur) -> Server:
    cur.execute("SELECT @@version_comment, @@version, @@server_id, @@log_bin")
    comment, version, server_id, log_bin = (v.decode() if isinstance(v, bytes) else v for v in cur.fetchone())
    flavor = "mariadb" if "mariadb" in f"{comment} {version}".lower() else "mysql"
    if not int(log_bin):
        raise SnapshotError("binary logging is off (log_bin): a snapshot's point is a place in the binlog",
                            lasting=True)
    cur.execute("SHOW VARIABLES LIKE 'server_uuid'")  # MariaDB has none
    found = cur.fetchone()
    return Server(flavor, version, int(server_id), found[1].decode() if found else None)


def _code(e: Exception) -> int:
    return e.args[0] if e.args and isinstance(e.args[0], int) else 0


@contextlib.contextmanager
def _needs(url: str, privilege: str) -> Iterator[None]:
    """A statement the server refuses for want of a privilege: an error naming it and why."""
    import pymysql

    try:
        yield
    except pymysql.err.MySQLError as e:
        if _code(e) == ER_SPECIFIC_ACCESS_DENIED:
            raise SnapshotError(f"{url}: missing privilege {privilege}", lasting=True) from None
        raise


def _start_mysql(cur, url: str) -> dict[str, Any]:
    import pymysql

    try:
        with _needs(url, "FLUSH_TABLES (or RELOAD): binlake holds FLUSH TABLES WITH READ LOCK for the instant it "
                         "reads a snapshot's point"):
            cur.execute("FLUSH TABLES WITH READ LOCK")
    except pymysql.err.MySQLError as e:
        if _code(e) == ER_LOCK_WAIT_TIMEOUT:
            raise SnapshotError(f"{url}: FLUSH TABLES WITH READ LOCK waited {LOCK_WAIT_SECONDS} s for statements "
                                "that hold tables open (a long query or LOCK TABLES): try again") from None
        raise
    try:
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        with _needs(url, "REPLICATION CLIENT: binlake reads a snapshot's point with SHOW BINARY LOG STATUS"):
            return binlog_point(cur, "mysql")
    finally:
        cur.execute("UNLOCK TABLES")


def _start_mariadb(cur, url: str) -> dict[str, Any]:
    cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
    cur.execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
    status = {k.decode().lower(): v.decode() for k, v in cur.fetchall()}
    file, position = status["binlog_snapshot_file"], int(status["binlog_snapshot_position"])
    cur.execute("SELECT BINLOG_GTID_POS(%s, %s)", (file, position))
    gtids = cur.fetchone()[0]
    if gtids is None:
        raise SnapshotError(f"{url}: BINLOG_GTID_POS({file!r}, {position}) is NULL: the server cannot say the GTID "
                            "position of the snapshot's point")
    return {"file": file, "position": position, "gtids": gtids.decode()}


class Session:
    """A consistent-snapshot transaction: `point` is where its reads hold, `catalog` the tables as
    they were there. `hold(table)` before reading a table, `release()` after it."""

    def __init__(self, conn, server: Server, point: dict[str, Any], started_at: str, *, catalog: Catalog,
                 url: str) -> None:
        self.conn, self.server, self.point, self.started_at, self.catalog = conn, server, point, started_at, catalog
        self.url = url

    @classmethod
    def open(cls, source: MySQLSource, wanted: Callable[[tuple[str, str]], bool],
             only: tuple[str, str] | None = None) -> Session:
        """Begin a session whose catalog holds at its point for the `wanted` tables (the one table
        `only`: its catalog has that one)."""
        conn = connect(source)
        try:
            with conn.cursor() as cur:
                server = server_of(cur)
                start = _start_mysql if server.flavor == "mysql" else _start_mariadb
                for attempt in range(1, ATTEMPTS + 1):
                    before = read_catalog(cur, only)
                    started = now_text()
                    point = start(cur, source.url)
                    catalog = read_catalog(cur, only)
                    if _of(before, wanted) == _of(catalog, wanted):
                        log.info("%s: session at %s:%d (GTIDs %s), %d tables", source.url, point["file"],
                                 point["position"], point["gtids"] or "none", len(_of(catalog, wanted)))
                        return cls(conn, server, point, started, catalog=catalog, url=source.url)
                    log.info("%s: a table's definition changed while the session began (attempt %d): again",
                             source.url, attempt)
                    cur.execute("ROLLBACK")
        except BaseException:
            conn.close()
            raise
        conn.close()
        raise SnapshotError(f"{source.url}: tables' definitions changed while each of {ATTEMPTS} sessions began "
                            "(DDL running all the time): try again later")

    @property
    def releases_tables(self) -> bool:
        """Whether release() lets DDL at a table read: MySQL's ROLLBACK TO SAVEPOINT releases its
        metadata lock; MariaDB's keeps it until the transaction ends while the binlog is on (a DDL
        could otherwise be logged before the rollback), so there a session reads one table."""
        return self.server.flavor == "mysql"

    def cursor(self, unbuffered: bool = False):
        import pymysql

        return self.conn.cursor(pymysql.cursors.SSCursor if unbuffered else None)

    def hold(self, table: tuple[str, str]) -> tuple[Table | None, list[Index]]:
        """Take the table's metadata lock (no DDL on it until release()) and read its definition
        as it is now: None when it is gone."""
        import pymysql

        with self.cursor() as cur:
            cur.execute(f"SAVEPOINT {SAVEPOINT}")
            try:
                with self.reading(table):
                    cur.execute(f"SELECT 1 FROM {name_of(table)} AS t LIMIT 0")
            except pymysql.err.MySQLError as e:
                if _code(e) == ER_NO_SUCH_TABLE:
                    return None, []
                raise
            _, tables = read_tables(cur, table)
            return tables.get(table), read_indexes(cur, table).get(table, [])

    @contextlib.contextmanager
    def reading(self, table: tuple[str, str]) -> Iterator[None]:
        """Statements reading a table: the server's refusal for want of SELECT as an error naming
        the table, ER_TABLE_DEF_CHANGED as DefinitionChanged."""
        import pymysql

        try:
            yield
        except pymysql.err.MySQLError as e:
            if _code(e) in (ER_TABLEACCESS_DENIED, ER_COLUMNACCESS_DENIED):
                raise SnapshotError(f"{self.url}: missing privilege SELECT on {name_of(table)}", lasting=True) from None
            if _code(e) == ER_TABLE_DEF_CHANGED:
                raise DefinitionChanged(str(e.args[-1])) from None
            raise

    def release(self) -> None:
        """Release the metadata lock of the table held last (its reads are done)."""
        with self.cursor() as cur:
            cur.execute(f"ROLLBACK TO SAVEPOINT {SAVEPOINT}")

    def close(self) -> None:
        try:
            with self.cursor() as cur:
                cur.execute("ROLLBACK")
        except Exception:  # noqa: BLE001 - the connection is gone: the transaction ended with it
            pass
        self.conn.close()


def name_of(table: tuple[str, str]) -> str:
    return f"{quote(table[0])}.{quote(table[1])}"


def _of(catalog: Catalog, wanted: Callable[[tuple[str, str]], bool]) -> dict[tuple[str, str], Table]:
    return {k: t for k, t in catalog.tables.items() if wanted(k)}
