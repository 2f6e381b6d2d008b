"""Test helpers for `binlake snapshot`: a source URL for a test server, a snapshot taken
in-process, and a baseline read back from its store (every chunk held to the record's size,
sha256 and row count as it is read)."""

from __future__ import annotations

import hashlib

import orjson
import zstandard

from binlake.archive import keys
from binlake.archive.sources import MySQLSource
from binlake.archive.stores import open_store
from binlake.baseline import layout
from binlake.baseline.run import Options, Result, snapshot


def url(server, user: str = "root", password: str = "") -> str:
    return f"mysql://{user}:{password}@{server.host}:{server.port}"


def take(server, store_url: str, name: str, tables: list[str] | None = None, observe=None, user: str = "root",
         **options) -> Result:
    return snapshot(MySQLSource(url(server, user)), open_store(store_url), name, tables, options=Options(**options),
                    observe=observe)


def chunk_rows(store, name: str, id: str, chunk: dict) -> list[dict]:
    data = store.get(keys.baseline_chunk_key(name, id, chunk["file"]))
    assert len(data) == chunk["bytes"] and hashlib.sha256(data).hexdigest() == chunk["sha256"], chunk["file"]
    rows = [orjson.loads(line) for line in zstandard.ZstdDecompressor().decompressobj().decompress(data).splitlines()]
    assert len(rows) == chunk["rows"], chunk["file"]
    return rows


def baseline(store_url: str, name: str, id: str) -> tuple[dict, dict[tuple[str, str], list[dict]]]:
    """A complete snapshot's record and each table's rows, chunk after chunk."""
    store = open_store(store_url)
    record = layout.read_json(store, keys.baseline_record_key(name, id))
    assert record is not None, f"{id}: no snapshot.json"
    rows = {(t["schema"], t["table"]): [r for c in t["chunks"] for r in chunk_rows(store, name, id, c)]
            for t in record["tables"]}
    return record, rows


# -- a live source under concurrent writes, and a replica stopped where a snapshot's point is ----

WORKLOAD_TABLES = {
    "acct": "CREATE TABLE {db}.acct (id INT PRIMARY KEY, balance BIGINT NOT NULL, note VARCHAR(40), "
            "updated DATETIME(6))",
    "bag": "CREATE TABLE {db}.bag (x INT, y VARCHAR(12))",  # no key: a multiset
    "events": "CREATE TABLE {db}.events (id BIGINT AUTO_INCREMENT PRIMARY KEY, acct INT, amount INT, "
              "ts DATETIME(6))",
    "pairs": "CREATE TABLE {db}.pairs (b VARCHAR(10), a INT, PRIMARY KEY (b, a))",  # a composite key
}
# each table's rows as the tests compare them: the server's text of every value, in key order
WORKLOAD_SELECT = {
    "acct": ("SELECT id, balance, note, CAST(updated AS CHAR) FROM {db}.acct ORDER BY id",
             ("id", "balance", "note", "updated")),
    "bag": ("SELECT x, y FROM {db}.bag", ("x", "y")),
    "events": ("SELECT id, acct, amount, CAST(ts AS CHAR) FROM {db}.events ORDER BY id",
               ("id", "acct", "amount", "ts")),
    "pairs": ("SELECT b, a FROM {db}.pairs ORDER BY b, a", ("b", "a")),
}
KEYS = {"acct": ("id",), "bag": None, "events": ("id",), "pairs": ("b", "a")}


def create_workload(server, db: str, rows: int, bag: int) -> None:
    """The workload's tables with their first rows: `rows` accounts, `bag` rows without a key."""
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
        for create in WORKLOAD_TABLES.values():
            cur.execute(create.format(db=db))
        for lo in range(0, max(rows, bag), 1000):
            n = range(lo, min(lo + 1000, rows))
            if n:
                cur.execute(f"INSERT INTO {db}.acct VALUES " + ", ".join(
                    f"({i}, 1000, 'a{i}', '2026-01-01 00:00:00.000001')" for i in n))
                cur.execute(f"INSERT INTO {db}.pairs VALUES " + ", ".join(f"('p{i % 37}', {i})" for i in n))
            m = range(lo, min(lo + 1000, bag))
            if m:
                cur.execute(f"INSERT INTO {db}.bag VALUES " + ", ".join(f"({i % 50}, 'y{i % 7}')" for i in m))


class Writers:
    """Threads writing transactions into the workload's tables until stop(): transfers between
    accounts with an event each, pairs inserted and deleted, rows of the keyless table added and
    removed; each thread its own connection, every transaction committed whole."""

    def __init__(self, server, db: str, rows: int, threads: int = 3, seed: int = 39) -> None:
        import threading

        self.server, self.db, self.rows = server, db, rows
        self.stopping = threading.Event()
        self.committed = 0
        self.errors: list[BaseException] = []
        self.threads = [threading.Thread(target=self._run, args=(seed + i,), daemon=True) for i in range(threads)]

    def __enter__(self) -> Writers:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=120)
        assert not self.errors, self.errors

    def _run(self, seed: int) -> None:
        import random

        import pymysql

        rng = random.Random(seed)
        db = self.db
        try:
            with self.server.connect(autocommit=False) as conn, conn.cursor() as cur:
                while not self.stopping.is_set():
                    a, b, amount = rng.randrange(self.rows), rng.randrange(self.rows), rng.randint(1, 50)
                    try:
                        kind = rng.random()
                        if kind < 0.5:
                            cur.execute(f"UPDATE {db}.acct SET balance = balance - %s, updated = NOW(6) WHERE id = %s",
                                        (amount, a))
                            cur.execute(f"UPDATE {db}.acct SET balance = balance + %s, note = %s, updated = NOW(6) "
                                        "WHERE id = %s", (amount, f"from {a}", b))
                            cur.execute(f"INSERT INTO {db}.events (acct, amount, ts) VALUES (%s, %s, NOW(6))",
                                        (a, amount))
                        elif kind < 0.7:
                            cur.execute(f"INSERT IGNORE INTO {db}.pairs VALUES (%s, %s)", (f"p{a % 37}", a + b))
                        elif kind < 0.8:
                            cur.execute(f"DELETE FROM {db}.pairs WHERE b = %s ORDER BY a LIMIT 1", (f"p{a % 37}",))
                        elif kind < 0.9:
                            cur.execute(f"INSERT INTO {db}.bag VALUES (%s, %s)", (a % 50, f"y{b % 7}"))
                        else:
                            cur.execute(f"DELETE FROM {db}.bag WHERE x = %s LIMIT 1", (a % 50,))
                        conn.commit()
                        self.committed += 1
                    except pymysql.err.OperationalError as e:
                        if e.args[0] not in (1213, 1205):  # a deadlock or a lock wait: that transaction again
                            raise
                        conn.rollback()
        except BaseException as e:  # noqa: BLE001 - the test's stop() raises it
            self.errors.append(e)


def rows_of(server, db: str, table: str) -> list[dict]:
    """A workload table's rows as the server holds them, in key order (the oracle's side)."""
    sql, names = WORKLOAD_SELECT[table]
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(sql.format(db=db))
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def replicate(replica, primary) -> None:
    """Make `replica` a replica of `primary` by GTID, stopped: it applies nothing until replica_at."""
    with replica.connect() as conn, conn.cursor() as cur:
        if replica.flavor == "mysql":
            cur.execute(f"CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT={primary.port}, "
                        "SOURCE_USER='root', SOURCE_PASSWORD='', SOURCE_AUTO_POSITION=1, GET_SOURCE_PUBLIC_KEY=1")
        else:
            cur.execute(f"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={primary.port}, "
                        "MASTER_USER='root', MASTER_PASSWORD='', MASTER_USE_GTID=slave_pos")


def replica_at(replica, gtids: str, timeout: float = 120) -> None:
    """Apply the primary's transactions on `replica` up to the GTID set `gtids` exactly, and stop
    there: MySQL's START REPLICA UNTIL SQL_AFTER_GTIDS (one applier: in the primary's commit
    order), MariaDB's START SLAVE UNTIL master_gtid_pos. The replica's own record of what it
    executed must then be `gtids`."""
    import time

    mysql = replica.flavor == "mysql"
    with replica.connect() as conn, conn.cursor() as cur:
        if mysql:
            cur.execute("START REPLICA SQL_THREAD UNTIL SQL_AFTER_GTIDS = %s", (gtids,))
            cur.execute("START REPLICA IO_THREAD")
        else:
            cur.execute("STOP SLAVE")
            cur.execute("START SLAVE UNTIL master_gtid_pos = %s", (gtids,))
        deadline = time.monotonic() + timeout
        while True:
            cur.execute("SHOW REPLICA STATUS" if mysql else "SHOW SLAVE STATUS")
            status = dict(zip([d[0] for d in cur.description], cur.fetchone(), strict=True))
            running = status["Replica_SQL_Running" if mysql else "Slave_SQL_Running"]
            error = status["Last_SQL_Error"]
            assert not error, error
            if running == "No":
                break
            assert time.monotonic() < deadline, f"the replica did not reach {gtids} in {timeout} s"
            time.sleep(0.05)
        cur.execute("SELECT @@global.gtid_executed" if mysql else "SELECT @@global.gtid_slave_pos")
        executed = cur.fetchone()[0].replace("\n", "")
    # what it executed of the primary's (a MySQL replica's set also holds its own, made at its start)
    uuids = {part.split(":")[0] for part in _gtid_set(gtids)}
    assert {p for p in _gtid_set(executed) if not mysql or p.split(":")[0] in uuids} == _gtid_set(gtids), \
        (executed, gtids)


def _gtid_set(text: str) -> set[str]:
    return {part.strip() for part in text.split(",") if part.strip()}
