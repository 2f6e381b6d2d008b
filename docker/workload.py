"""An endless, seeded workload on the `shop` database, so that the local stack's binlogs hold what
binlake must handle: multi-statement transactions, updates and deletes, rollbacks, DDL, and XA.

Environment (defaults in brackets): MYSQL_HOST [mysql], MYSQL_PORT [3306], MYSQL_USER [shop],
MYSQL_PASSWORD [shop], MYSQL_DATABASE [shop], WORKLOAD_SEED [1], WORKLOAD_INTERVAL [0.5] seconds
between transactions, WORKLOAD_LIMIT [0: endless] transactions.
"""

from __future__ import annotations

import collections
import datetime as dt
import logging
import os
import random
import time
from collections.abc import Callable

import pymysql

log = logging.getLogger("workload")

TABLES = (
    """CREATE TABLE IF NOT EXISTS customers (
        id INT AUTO_INCREMENT PRIMARY KEY,
        name VARCHAR(64) NOT NULL,
        email VARCHAR(128) NOT NULL,
        balance DECIMAL(12, 2) NOT NULL DEFAULT 0,
        created_at DATETIME(6) NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS orders (
        id BIGINT AUTO_INCREMENT PRIMARY KEY,
        customer_id INT NOT NULL,
        status ENUM('new', 'paid', 'shipped', 'cancelled') NOT NULL DEFAULT 'new',
        total DECIMAL(12, 2) NOT NULL DEFAULT 0,
        note JSON NULL,
        created_at DATETIME(6) NOT NULL,
        updated_at DATETIME(6) NULL
    )""",
    """CREATE TABLE IF NOT EXISTS order_items (
        id BIGINT AUTO_INCREMENT PRIMARY KEY,
        order_id BIGINT NOT NULL,
        sku VARCHAR(32) NOT NULL,
        qty INT NOT NULL,
        price DECIMAL(10, 2) NOT NULL,
        KEY (order_id)
    )""",
)
DDL_INDEX = "idx_orders_status"
XA_PREFIX = "shop-xa-"
NAMES = ("ada", "grace", "edsger", "barbara", "ken", "dennis", "margaret", "linus", "radia", "donald")
STATUSES = ("paid", "shipped", "cancelled")


class Workload:
    def __init__(self, conn: pymysql.connections.Connection, rng: random.Random) -> None:
        self.conn = conn
        self.rng = rng
        self.serial = 0
        # name, weight, transaction: the mix (DDL and XA stay occasional).
        self.mix: list[tuple[str, int, Callable[[], None]]] = [
            ("new_order", 40, self.new_order),
            ("update_order", 25, self.update_order),
            ("customer", 12, self.customer),
            ("delete_order", 10, self.delete_order),
            ("rollback", 5, self.rollback),
            ("xa", 5, self.xa),
            ("ddl", 1, self.ddl),
        ]

    # -- helpers -------------------------------------------------------------------------------

    def _now(self) -> str:
        return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")

    def _pick(self, cur: pymysql.cursors.Cursor, table: str) -> int | None:
        """A random existing id of a table (or None when it is empty)."""
        cur.execute(f"SELECT MIN(id), MAX(id) FROM {table}")
        low, high = cur.fetchone()
        if low is None:
            return None
        cur.execute(f"SELECT id FROM {table} WHERE id >= %s ORDER BY id LIMIT 1", (self.rng.randint(low, high),))
        return cur.fetchone()[0]

    def _insert_order(self, cur: pymysql.cursors.Cursor) -> int:
        customer = self._pick(cur, "customers")
        if customer is None:
            customer = self._insert_customer(cur)
        note = None if self.rng.random() < 0.7 else f'{{"gift": true, "serial": {self.serial}}}'
        cur.execute("INSERT INTO orders (customer_id, note, created_at) VALUES (%s, %s, %s)",
                    (customer, note, self._now()))
        order = cur.lastrowid
        items = [(order, f"SKU-{self.rng.randint(1, 500):04d}", self.rng.randint(1, 5),
                  round(self.rng.uniform(1, 200), 2)) for _ in range(self.rng.randint(1, 5))]
        cur.executemany("INSERT INTO order_items (order_id, sku, qty, price) VALUES (%s, %s, %s, %s)", items)
        cur.execute("UPDATE orders SET total = (SELECT SUM(qty * price) FROM order_items WHERE order_id = %s) "
                    "WHERE id = %s", (order, order))
        return order

    def _insert_customer(self, cur: pymysql.cursors.Cursor) -> int:
        name = f"{self.rng.choice(NAMES)}-{self.rng.randint(1, 10**6)}"
        cur.execute("INSERT INTO customers (name, email, created_at) VALUES (%s, %s, %s)",
                    (name, f"{name}@shop.example", self._now()))
        return cur.lastrowid

    def _transaction(self, body: Callable[[pymysql.cursors.Cursor], None]) -> None:
        self.conn.begin()
        try:
            with self.conn.cursor() as cur:
                body(cur)
        except BaseException:
            self.conn.rollback()
            raise
        self.conn.commit()

    # -- transactions --------------------------------------------------------------------------

    def setup(self) -> None:
        with self.conn.cursor() as cur:
            for ddl in TABLES:
                cur.execute(ddl)
            # An XA transaction of ours left prepared by a crash between PREPARE and COMMIT: roll it back.
            cur.execute("XA RECOVER")
            for _, _, _, data in cur.fetchall():
                xid = data.decode() if isinstance(data, bytes) else data
                if xid.startswith(XA_PREFIX):
                    log.warning("rolling back XA transaction %r left prepared", xid)
                    cur.execute("XA ROLLBACK %s", (xid,))

    def new_order(self) -> None:
        self._transaction(self._insert_order)

    def update_order(self) -> None:
        def body(cur: pymysql.cursors.Cursor) -> None:
            order = self._pick(cur, "orders")
            if order is not None:
                cur.execute("UPDATE orders SET status = %s, updated_at = %s WHERE id = %s",
                            (self.rng.choice(STATUSES), self._now(), order))

        self._transaction(body)

    def customer(self) -> None:
        def body(cur: pymysql.cursors.Cursor) -> None:
            existing = self._pick(cur, "customers")
            if existing is None or self.rng.random() < 0.3:
                self._insert_customer(cur)
            else:
                cur.execute("UPDATE customers SET balance = balance + %s WHERE id = %s",
                            (round(self.rng.uniform(-50, 100), 2), existing))

        self._transaction(body)

    def delete_order(self) -> None:
        def body(cur: pymysql.cursors.Cursor) -> None:
            order = self._pick(cur, "orders")
            if order is not None:
                cur.execute("DELETE FROM order_items WHERE order_id = %s", (order,))
                cur.execute("DELETE FROM orders WHERE id = %s", (order,))

        self._transaction(body)

    def rollback(self) -> None:
        """Work that is rolled back: InnoDB changes leave nothing in the binlog."""
        self.conn.begin()
        try:
            with self.conn.cursor() as cur:
                self._insert_order(cur)
        finally:
            self.conn.rollback()

    def xa(self) -> None:
        """XA START … END, PREPARE, then COMMIT or ROLLBACK (each its own binlog transaction), or a
        one-phase commit (a single one)."""
        xid = f"{XA_PREFIX}{self.serial}"
        one_phase = self.rng.random() < 0.2
        with self.conn.cursor() as cur:
            cur.execute("XA START %s", (xid,))
            try:
                self._insert_order(cur)
                cur.execute("XA END %s", (xid,))
                if one_phase:
                    cur.execute("XA COMMIT %s ONE PHASE", (xid,))
                    return
                cur.execute("XA PREPARE %s", (xid,))
            except BaseException:
                _xa_abandon(self.conn, xid)
                raise
            # A prepared XA transaction outlives its connection: finish it even when this fails.
            try:
                cur.execute("XA ROLLBACK %s" if self.rng.random() < 0.25 else "XA COMMIT %s", (xid,))
            except pymysql.err.MySQLError:
                _xa_abandon(self.conn, xid)
                raise

    def ddl(self) -> None:
        """Alternately add and drop an index (a self-contained statement in the binlog)."""
        with self.conn.cursor() as cur:
            cur.execute("SHOW INDEX FROM orders WHERE Key_name = %s", (DDL_INDEX,))
            if cur.fetchall():
                cur.execute(f"ALTER TABLE orders DROP INDEX {DDL_INDEX}")
            else:
                cur.execute(f"ALTER TABLE orders ADD INDEX {DDL_INDEX} (status, created_at)")

    def step(self) -> str:
        self.serial += 1
        name, _, run = self.rng.choices(self.mix, weights=[w for _, w, _ in self.mix])[0]
        run()
        return name


def _xa_abandon(conn: pymysql.connections.Connection, xid: str) -> None:
    """Best effort: end and roll back an XA transaction left by an error, on a fresh connection if
    this one is gone (a prepared XA transaction would otherwise stay prepared on the server)."""
    for statement in ("XA END %s", "XA ROLLBACK %s"):
        try:
            with conn.cursor() as cur:
                cur.execute(statement, (xid,))
        except pymysql.err.MySQLError:
            pass
    try:
        with connect() as fresh, fresh.cursor() as cur:
            cur.execute("XA ROLLBACK %s", (xid,))
    except pymysql.err.MySQLError:
        pass  # it was not prepared, or is already gone


def connect() -> pymysql.connections.Connection:
    return pymysql.connect(
        host=os.environ.get("MYSQL_HOST", "mysql"), port=int(os.environ.get("MYSQL_PORT", "3306")),
        user=os.environ.get("MYSQL_USER", "shop"), password=os.environ.get("MYSQL_PASSWORD", "shop"),
        database=os.environ.get("MYSQL_DATABASE", "shop"), autocommit=True, charset="utf8mb4", connect_timeout=10)


def _connect_retrying() -> pymysql.connections.Connection:
    delay = 1.0
    while True:
        try:
            return connect()
        except pymysql.err.OperationalError as e:
            log.warning("cannot connect (%s); retrying in %.0f s", e, delay)
            time.sleep(delay)
            delay = min(delay * 2, 30.0)


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    seed = int(os.environ.get("WORKLOAD_SEED", "1"))
    interval = float(os.environ.get("WORKLOAD_INTERVAL", "0.5"))
    limit = int(os.environ.get("WORKLOAD_LIMIT", "0"))
    rng = random.Random(seed)
    counts: collections.Counter[str] = collections.Counter()
    workload: Workload | None = None
    log.info("seed %d, one transaction every %.2f s%s", seed, interval, f", {limit} in all" if limit else "")
    while not limit or counts.total() < limit:
        try:
            if workload is None:
                workload = Workload(_connect_retrying(), rng)
                workload.setup()
            counts[workload.step()] += 1
        except (pymysql.err.OperationalError, pymysql.err.InterfaceError) as e:
            # The server went away (restart, network): start again on a new connection.
            log.warning("connection lost (%s); reconnecting", e)
            counts["failed"] += 1
            if workload is not None:
                workload.conn.close()
            workload = None
            time.sleep(1.0)
            continue
        except pymysql.err.MySQLError as e:
            # A deadlock or a lock wait timeout: the transaction is rolled back, the loop goes on.
            log.warning("transaction failed: %s", e)
            counts["failed"] += 1
        if counts.total() % 100 == 0:
            log.info("%d transactions: %s", counts.total(), ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))
        time.sleep(interval)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
