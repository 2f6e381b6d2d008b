"""The schema history's replay policy on statement texts: what it follows, and that what it cannot
follow makes a table unknown (positional names), never guessed. tests/test_schema_history.py holds
what it follows to real servers' FULL metadata; this holds the edges no workload reaches cheaply.
"""

from __future__ import annotations

from binlake.schema.ddl import SchemaState, is_ddl
from binlake.schema.importing import import_ddl, statements


def _names(state: SchemaState, table: str, db: str = "d") -> list[str] | None:
    t = state.table(db, table)
    return None if t is None else [c.name for c in t.columns]


def test_statements_that_cannot_change_columns_are_not_parsed():
    for sql in ("INSERT INTO t VALUES (1)", "GRANT SELECT ON d.* TO u", "CREATE INDEX i ON t (a)",
                "CREATE DEFINER=`root`@`%` TRIGGER tr AFTER INSERT ON t FOR EACH ROW SET @a = 1",
                "CREATE VIEW v AS SELECT 1", "TRUNCATE TABLE t", "BEGIN"):
        assert not is_ddl(sql), sql
    for sql in ("CREATE TABLE t (a INT)", "/* c */ ALTER TABLE t ADD b INT", "DROP TEMPORARY TABLE t",
                "RENAME TABLE a TO b", "CREATE OR REPLACE TABLE t (a INT)", "CREATE DATABASE x"):
        assert is_ddl(sql), sql


def test_what_cannot_be_followed_makes_the_table_unknown():
    c = SchemaState()
    c.apply("d", "CREATE TABLE t (id INT PRIMARY KEY, a INT)")
    c.apply("d", "CREATE TABLE keep (id INT)")
    assert _names(c, "t") == ["id", "a"]
    # a type sqlglot's MySQL dialect does not read (spatial subtypes): t unknown, keep untouched
    c.apply("d", "ALTER TABLE t ADD COLUMN p POINT")
    assert _names(c, "t") is None and _names(c, "keep") == ["id"]
    # an ALTER of an unknown table stays unknown; a RENAME carries the unknown along
    c.apply("d", "ALTER TABLE t ADD COLUMN b INT")
    c.apply("d", "RENAME TABLE t TO u")
    assert _names(c, "u") is None and c.table("d", "t") is None
    # CREATE TABLE … SELECT without its columns (statement-based logging): unknown
    c.apply("d", "CREATE TABLE s SELECT * FROM keep")
    assert _names(c, "s") is None
    # created again with its columns: known again
    c.apply("d", "CREATE TABLE u (x INT)")
    assert _names(c, "u") == ["x"]
    assert {("d", "t"), ("d", "u"), ("d", "s"), ("d", "keep")} <= c.touched


def test_executable_comments_are_read_as_the_server_ran_them():
    # SHOW CREATE TABLE writes an invisible column as `/*!80023 INVISIBLE */` (MySQL 8.0.23+)
    c = SchemaState()
    c.apply("d", "CREATE TABLE t (id INT, h INT DEFAULT NULL /*!80023 INVISIBLE */) /*!50100 COMMENT 'x' */")
    assert [(col.name, col.invisible) for col in c.table("d", "t").columns] == [("id", False), ("h", True)]


def test_a_dump_is_split_outside_quotes_and_comments():
    dump = """-- MySQL dump
/*!40101 SET NAMES utf8mb4 */;
CREATE DATABASE /*!32312 IF NOT EXISTS*/ `d` /*!40100 DEFAULT CHARACTER SET latin1 */;
USE `d`;
DROP TABLE IF EXISTS `t`;
CREATE TABLE `t` (
  `id` int NOT NULL COMMENT 'a; b',
  `s` varchar(3) DEFAULT ';' # a comment; with a semicolon
) ENGINE=InnoDB;
"""
    assert len(list(statements(dump))) == 5
    snapshot = import_ddl(dump)
    t = snapshot.tables[("d", "t")]
    # the column takes the database's charset (latin1), as the server gave it
    assert [(col.name, col.type, col.charset) for col in t.columns] == [("id", "int", None),
                                                                          ("s", "varchar(3)", "latin1")]
    assert snapshot.databases == {"d": "latin1"}


def test_partition_maintenance_and_table_options_keep_the_columns():
    # MySQL manual, "ALTER TABLE Partition Operations": they change partitions, never columns
    c = SchemaState()
    c.apply("d", "CREATE TABLE t (id INT, a INT) PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (10))")
    for sql in ("ALTER TABLE t ADD PARTITION (PARTITION p1 VALUES LESS THAN (20))", "ALTER TABLE t DROP PARTITION p0",
                "ALTER TABLE t TRUNCATE PARTITION p1", "ALTER TABLE t REORGANIZE PARTITION p1 INTO "
                "(PARTITION p2 VALUES LESS THAN (30))", "ALTER TABLE t EXCHANGE PARTITION p2 WITH TABLE u",
                "ALTER TABLE t REMOVE PARTITIONING", "ALTER TABLE t PARTITION BY HASH(id) PARTITIONS 4",
                "ALTER TABLE t ENGINE=InnoDB, ROW_FORMAT=DYNAMIC", "ALTER TABLE t AUTO_INCREMENT=5",
                "ALTER TABLE t ADD INDEX (a), ADD UNIQUE KEY u (id), ALTER INDEX u INVISIBLE, RENAME KEY u TO v",
                "ALTER TABLE t ADD CONSTRAINT c CHECK (a > 0)", "ALTER TABLE t DROP CHECK c"):
        c.apply("d", sql)
        assert _names(c, "t") == ["id", "a"], sql
    assert c.unfollowed == 0


def test_a_snapshot_is_placed_only_against_the_file_it_was_taken_in(tmp_path):
    # After a reset the server reuses file names; the archive keeps the earlier binlog.000002 under
    # its name. A snapshot whose point names binlog.000002 but was taken after that file ended (or
    # before it began) belongs to another server's file of that name: not a candidate.
    import json

    from binlake.archive.stores import FileStore
    from binlake.schema.history import choose, of_archived_file
    from binlake.schema.model import Snapshot

    store = FileStore(str(tmp_path))
    store.put("s/manifests/binlog.000002.json", json.dumps(
        {"first_event_ts": "2026-11-25T10:00:00.000000Z", "last_event_ts": "2026-11-25T11:00:00.000000Z"}).encode())

    def at(file: str, taken: str) -> Snapshot:
        return Snapshot({}, point={"before": {"file": file, "position": 4}}, taken_at=taken)

    during, after, before = (at("binlog.000002", t) for t in
                             ("2026-11-25T10:30:00Z", "2026-11-25T12:00:00Z", "2026-11-25T09:00:00Z"))
    assert [of_archived_file(store, "s", s) for s in (during, after, before)] == [True, False, False]
    assert of_archived_file(store, "s", at("binlog.000003", "2026-11-25T12:00:00Z"))  # not archived: nothing against it
    usable = lambda s: of_archived_file(store, "s", s)  # noqa: E731
    assert choose([after, during], "binlog.000001", usable) is during
    assert choose([after], "binlog.000001", usable) is None


COMPRESSED_DDL = [  # MariaDB's COMPRESSED attribute anywhere among a column's, and the word as a name
    "CREATE TABLE t (compressed INT, a TEXT COMPRESSED CHARACTER SET latin1, b VARCHAR(5) COMPRESSED=zlib NOT NULL, "
    "c BLOB COMPRESSED DEFAULT NULL COMMENT 'COMPRESSED', d VARCHAR(9) NOT NULL COMPRESSED, "
    "e TEXT COLLATE utf8mb4_bin COMPRESSED, f VARBINARY(7) COMPRESSED) ROW_FORMAT=COMPRESSED",
    "ALTER TABLE t ADD COLUMN g TINYTEXT CHARACTER SET utf16 COMPRESSED AFTER compressed",
    "ALTER TABLE t CHANGE compressed h VARCHAR(3) COMPRESSED, ADD compressed LONGBLOB COMPRESSED FIRST",
    "ALTER TABLE t MODIFY a MEDIUMTEXT COMPRESSED, RENAME COLUMN b TO x",
    "CREATE TABLE u (id INT(11), compressed VARCHAR(4) COMPRESSED NULL)",  # MariaDB shows int(11)
]


def test_mariadb_compressed_columns_replay_as_the_server_types_them(mariadb_server):
    """Each statement run on a real MariaDB and replayed: every column's name, type and charset as
    the server's information_schema has them (`binlake schema capture`); the same for the
    statements SHOW CREATE TABLE gives back (`/*M!100301 COMPRESSED*/`)."""
    import uuid

    from binlake.schema.capture import capture

    db = f"cmpddl_{uuid.uuid4().hex[:12]}"
    replayed, shown = SchemaState(flavor="mariadb"), SchemaState(flavor="mariadb")
    with mariadb_server.connect() as conn, conn.cursor() as cur:
        create = f"CREATE DATABASE {db} CHARACTER SET utf8mb4"
        cur.execute(create)
        replayed.apply(db, create)
        shown.apply(db, create)
        try:
            cur.execute(f"USE {db}")
            for sql in COMPRESSED_DDL:
                cur.execute(sql)
                replayed.apply(db, sql)
            server = capture(conn)
            for table in ("t", "u"):
                cur.execute(f"SHOW CREATE TABLE {table}")
                shown.apply(db, cur.fetchone()[1])
        finally:
            cur.execute(f"DROP DATABASE {db}")

    def columns(t) -> list[tuple]:  # a byte string's charset: information_schema's NULL, the replay's binary
        return [(c.name, c.type, None if c.charset == "binary" else c.charset) for c in t.columns]

    for table in ("t", "u"):
        want = columns(server.tables[(db, table)])
        assert columns(replayed.table(db, table)) == want, table
        assert columns(shown.table(db, table)) == want, table
    assert ("c", "blob /*m!100301 compressed*/", None) in columns(server.tables[(db, "t")])


def test_a_snapshot_is_chosen_from_the_historys_keys(tmp_path):
    """A history of hourly snapshots (one written by an older binlake, whose key says neither when
    nor where): the choice reads the chosen snapshot, and the older one, only; and chooses as it
    did with every snapshot read, against files archived at the snapshots' times and not."""
    import json

    from binlake.archive.keys import snapshots_prefix
    from binlake.archive.stores import FileStore
    from binlake.schema.history import Listed, choose, loaded, of_archived_file, record, snapshots
    from binlake.schema.model import Snapshot

    store = FileStore(str(tmp_path))
    store.put("s/manifests/binlog.000005.json", json.dumps(  # written while the fifth snapshot was taken
        {"first_event_ts": "2026-11-25T04:00:00.000000Z", "last_event_ts": "2026-11-25T05:00:00.000000Z"}).encode())
    store.put("s/manifests/binlog.000006.json", json.dumps(  # a later server's file of that name: not usable
        {"first_event_ts": "2026-11-25T09:00:00.000000Z", "last_event_ts": "2026-11-25T10:00:00.000000Z"}).encode())
    for i in range(30):
        s = Snapshot({}, {f"db{i}": None}, {"before": {"file": f"binlog.{i + 1:06d}", "position": 4}}, "s",
                     f"2026-11-{25 + i // 24}T{i % 24:02d}:30:00.000000Z")
        if i == 7:  # an older binlake's key: {time}-{id}.json
            old = f"{snapshots_prefix('s')}/20261125T073000.000000Z-0badc0de.json"
            store.put(old, json.dumps(s.to_json()).encode())
        else:
            record(store, "s", s)
    keys = sorted(store.keys(snapshots_prefix("s")))
    every = [Snapshot.from_json(json.loads(store.get(k))) for k in keys]  # the oracle: the whole history read
    read: list[str] = []

    class Counting(FileStore):
        def get(self, key: str) -> bytes:
            read.append(key)
            return super().get(key)

    counting = Counting(str(tmp_path))
    history = snapshots(counting, "s")
    assert read == [keys[7]]
    for first in ("binlog.000001", "binlog.000005", "binlog.000006", "binlog.000008", "binlog.000020", "binlog.000031"):
        usable = lambda s: of_archived_file(store, "s", s)  # noqa: E731
        want = choose(every, first, usable)
        read.clear()
        got = choose(history, first, usable)
        assert want is not None and loaded(counting, got) == want, first
        # a listed one is read when loaded, the one whose key says nothing was read with the listing
        assert [k for k in read if "/schema/" in k] == ([got.key] if isinstance(got, Listed) else []), first
