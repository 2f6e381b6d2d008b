"""The row versions across a failover in the middle of a range (issue 39): a real replica,
promoted, goes on writing under the same source name; its binary log repeats the old primary's
transactions (generation 2 of the archive). `binlake asof` before and after the failover, by
GTID and by time, is the SELECT of the server that was the primary then.

Each flavor has its own primary and replica (this module's), the same workload: keyed and
keyless tables written on the old primary, then on the promoted replica a row of the old
primary's updated, one deleted, one inserted, a column added and set.
"""

from __future__ import annotations

import pytest

from binlake.tables.order import place
from tests.test_tables_servers import _archive, _asof, _assemble_validate_apply, _checkpoint

ACCT = ["id", "CAST(bal AS CHAR)", "note"]
BAG = ["x", "y"]


def _promote(replica, primary) -> None:
    """The replica caught up with everything the primary executed, then made a primary."""
    mysql = replica.flavor == "mysql"
    with primary.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT @@global.gtid_executed" if mysql else "SELECT @@global.gtid_binlog_pos")
        executed = cur.fetchone()[0]
    with replica.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT WAIT_FOR_EXECUTED_GTID_SET(%s, 120)" if mysql else "SELECT MASTER_GTID_WAIT(%s, 120)",
                    (executed,))
        assert cur.fetchone()[0] == 0, f"the replica did not catch up with {executed}"
        cur.execute("STOP REPLICA" if mysql else "STOP SLAVE")
        cur.execute("RESET REPLICA ALL" if mysql else "RESET SLAVE ALL")


def _binlog_file(server) -> str:
    """The binary log file the server writes now (its own status)."""
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW BINARY LOG STATUS" if server.flavor == "mysql" else "SHOW BINLOG STATUS")
        return cur.fetchone()[0]


@pytest.mark.parametrize("flavor", ["mysql", "mariadb"])
def test_asof_before_and_after_a_failover_is_each_primarys_select(request, flavor, spark, tmp_path):
    from tests.support.snapshots import replicate

    factory = request.getfixturevalue(f"{flavor}_factory")
    primary = factory()
    # MariaDB logs what a replica applies only with log_slave_updates (MySQL 9: on by default)
    replica = factory(**({"log_slave_updates": "ON"} if flavor == "mariadb" else {}))
    replicate(replica, primary)
    with replica.connect() as conn, conn.cursor() as cur:
        cur.execute("START REPLICA" if flavor == "mysql" else "START SLAVE")
    store = f"file://{tmp_path}/store"
    # The old primary's workload in a file numbered above every file the replica writes: the order
    # by file and offset alone would put the promoted replica's changes first; only the archive's
    # generations put them after (binlake.tables.order). FLUSH BINARY LOGS is not replicated.
    with primary.connect() as conn, conn.cursor() as cur:
        for _ in range(4):
            cur.execute("FLUSH BINARY LOGS")
    old_file = _binlog_file(primary)
    _archive(primary, store)  # the schema history before the workload
    with primary.connect() as conn, conn.cursor() as cur, primary.connect() as other, other.cursor() as look:
        cur.execute("CREATE DATABASE shop")
        cur.execute("CREATE TABLE shop.acct (id INT PRIMARY KEY, bal BIGINT UNSIGNED, note VARCHAR(20))")
        cur.execute("CREATE TABLE shop.bag (x INT, y VARCHAR(10))")  # no key: a multiset
        cur.execute("INSERT INTO shop.acct VALUES (1, 10, 'a'), (2, 18446744073709551615, 'b'), (3, 30, 'c')")
        cur.execute("INSERT INTO shop.bag VALUES (1, 'a'), (1, 'a'), (2, 'b')")
        cur.execute("UPDATE shop.acct SET bal = 11 WHERE id = 1")
        cur.execute("DELETE FROM shop.bag WHERE x = 1 LIMIT 1")
        before = _checkpoint(look, {"acct": ACCT, "bag": BAG}, flavor)
        cur.execute("FLUSH BINARY LOGS")
    _archive(primary, store)
    _promote(replica, primary)
    primary.stop()  # gone: nothing of it is read again
    with replica.connect() as conn, conn.cursor() as cur, replica.connect() as other, other.cursor() as look:
        cur.execute("UPDATE shop.acct SET note = 'moved', bal = bal - 1 WHERE id = 2")  # the old primary's row
        cur.execute("DELETE FROM shop.acct WHERE id = 3")
        cur.execute("INSERT INTO shop.acct VALUES (4, 40, 'd')")
        cur.execute("ALTER TABLE shop.acct ADD COLUMN extra INT NOT NULL DEFAULT 7")
        cur.execute("UPDATE shop.acct SET extra = 8 WHERE id = 1")
        cur.execute("UPDATE shop.bag SET y = 'z' WHERE x = 2")
        after = _checkpoint(look, {"acct": [*ACCT, "extra"], "bag": BAG}, flavor)
        new_file = _binlog_file(replica)
        cur.execute("FLUSH BINARY LOGS")
    assert place(new_file)[1] < place(old_file)[1], (new_file, old_file)
    _archive(replica, store)  # the same source name, another server: generation 2
    # its files, named as the old primary's, a new generation beside them (DESIGN.md; docs/archive.md)
    assert any(p.name.endswith("@g0002") for p in (tmp_path / "store").rglob("*")), \
        sorted(p.name for p in (tmp_path / "store").rglob("*"))
    warehouse = tmp_path / "lake"
    _assemble_validate_apply(spark, store, warehouse)
    for point in (before, after):
        for at in (point["gtid"], point["time"]):
            for table, expected in point["tables"].items():
                # the SELECT of the server that was the primary then, column for column
                assert _asof(warehouse, at, table, flavor) == expected, (at, table)
