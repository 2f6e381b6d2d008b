"""A snapshot of a live server's tables from information_schema, tied to a point of its binlog.

The binlog position and GTID set are read before and after the columns: a snapshot holds for
that interval (`point.before`, `point.after`), and when the two are equal no DDL can have run in
between. The user needs SELECT on the tables (information_schema shows only the columns of
tables the user may read) besides the archive's REPLICATION CLIENT.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from binlake.schema.model import Column, Snapshot, Table, charset_of

log = logging.getLogger(__name__)

SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")
_COLUMNS = """
SELECT c.TABLE_SCHEMA, c.TABLE_NAME, c.COLUMN_NAME, c.COLUMN_TYPE, c.CHARACTER_SET_NAME, c.COLLATION_NAME,
       c.EXTRA, t.TABLE_COLLATION
FROM information_schema.COLUMNS c
JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME
WHERE t.TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') AND c.TABLE_SCHEMA NOT IN %s {only}
ORDER BY c.TABLE_SCHEMA, c.TABLE_NAME, c.ORDINAL_POSITION
"""


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v) if v is not None else ""


def _maybe(v: Any) -> str | None:
    return _text(v) if v is not None else None


def binlog_point(cur, flavor: str) -> dict[str, Any]:
    """Where the server's binlog ends now: file, position and GTID state."""
    cur.execute("SHOW BINARY LOG STATUS" if flavor == "mysql" else "SHOW BINLOG STATUS")
    row = cur.fetchone()
    cur.execute("SELECT @@global.gtid_executed" if flavor == "mysql" else "SELECT @@global.gtid_binlog_pos")
    gtids = _text(cur.fetchone()[0])
    return {"file": _text(row[0]), "position": int(row[1]), "gtids": gtids.replace("\n", "")}


def stamp(at: dt.datetime) -> str:
    """A snapshot's `taken_at` as a capture writes it: UTC, whole seconds (keys of one second tie:
    binlake.schema.history orders them by their points)."""
    return at.astimezone(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def capture(conn, source: str | None = None) -> Snapshot:
    """Every user table's columns on the server behind conn (a PyMySQL connection)."""
    with conn.cursor() as cur:
        cur.execute("SELECT @@version_comment, @@version, @@server_id")
        comment, version, server_id = cur.fetchone()
        flavor = "mariadb" if "mariadb" in f"{comment} {version}".lower() else "mysql"
        cur.execute("SHOW VARIABLES LIKE 'server_uuid'")
        found = cur.fetchone()
        before = binlog_point(cur, flavor)
        databases, tables = read_tables(cur)
        after = binlog_point(cur, flavor)
    if not tables:  # information_schema shows a user only the tables it may read
        log.warning("schema snapshot holds no table: the user may lack SELECT on the schemas (docs/schema.md)")
    log.info("schema snapshot: %d tables of %d databases, binlog %s:%d .. %s:%d", len(tables), len(databases),
             before["file"], before["position"], after["file"], after["position"])
    point = {"server_uuid": _maybe(found[1]) if found else None, "server_id": int(server_id), "flavor": flavor,
             "before": before, "after": after}
    return Snapshot(tables, databases, point, source, stamp(dt.datetime.now(dt.UTC)))


def over_user_tables(cur, query: str, only: tuple[str, str] | None, alias: str = "") -> None:
    """Run an information_schema `query` over the user tables: its `{only}` narrowed to the one
    table `(schema, name)`, or to none; its first parameter the system schemas left out."""
    if only is None:
        cur.execute(query.format(only=""), (SYSTEM_SCHEMAS,))
    else:
        cur.execute(query.format(only=f"AND {alias}TABLE_SCHEMA = %s AND {alias}TABLE_NAME = %s"),
                    (SYSTEM_SCHEMAS, *only))


def read_tables(cur, only: tuple[str, str] | None = None) -> tuple[dict[str, str | None],
                                                                   dict[tuple[str, str], Table]]:
    """Every user database's default charset and every user table's columns (or only the one
    table `(schema, name)`), as information_schema shows them now: the user's, only the tables
    it may read."""
    cur.execute("SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA "
                "WHERE SCHEMA_NAME NOT IN %s", (SYSTEM_SCHEMAS,))
    databases = {_text(r[0]): _maybe(r[1]) for r in cur.fetchall()}
    over_user_tables(cur, _COLUMNS, only, alias="c.")
    rows = cur.fetchall()
    columns: dict[tuple[str, str], list[Column]] = {}
    charsets: dict[tuple[str, str], str | None] = {}
    for schema, table, name, ctype, charset, collation, extra, table_collation in rows:
        key = (_text(schema), _text(table))
        extra = _text(extra).upper()
        generated = "VIRTUAL" if "VIRTUAL" in extra else "STORED" if "STORED" in extra or "PERSISTENT" in extra \
            else None
        columns.setdefault(key, []).append(Column(
            _text(name), _text(ctype).lower(), _maybe(charset), _maybe(collation), generated,
            "INVISIBLE" in extra))
        charsets[key] = charset_of(_maybe(table_collation))
    tables = {k: Table(k[0], k[1], tuple(cols), charsets[k]) for k, cols in columns.items()}
    return databases, tables


def into_history(conn, store, source: str) -> str:
    """A snapshot of the server's tables recorded into the store's schema history (what
    `binlake archive` hands the archive to do at each run: binlake.archive.run.Capture); its key."""
    from binlake.schema.history import record

    return record(store, source, capture(conn, source))
