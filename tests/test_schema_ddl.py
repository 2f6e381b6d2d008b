"""The schema history's replay policy on statement texts: what it follows, and that what it cannot
follow makes a table unknown (positional names), never guessed. tests/test_schema_history.py holds
what it follows to real servers' FULL metadata; this holds the edges no workload reaches cheaply.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import pytest

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
    # a type the replay does not read (MariaDB's INET6): t unknown, keep untouched
    c.apply("d", "ALTER TABLE t ADD COLUMN p INET6")
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
    from binlake.schema.capture import capture

    with _replayed_on(mariadb_server, "mariadb", COMPRESSED_DDL) as (conn, cur, db, replayed, shown):
        server = capture(conn)
        for table in ("t", "u"):
            cur.execute(f"SHOW CREATE TABLE {table}")
            shown.apply(db, cur.fetchone()[1])

    def columns(t) -> list[tuple]:  # a byte string's charset: information_schema's NULL, the replay's binary
        return [(c.name, c.type, None if c.charset == "binary" else c.charset) for c in t.columns]

    for table in ("t", "u"):
        want = columns(server.tables[(db, table)])
        assert columns(replayed.table(db, table)) == want, table
        assert columns(shown.table(db, table)) == want, table
    assert ("c", "blob /*m!100301 compressed*/", None) in columns(server.tables[(db, "t")])


@contextlib.contextmanager
def _replayed_on(server, flavor: str, ddl: list[str]) -> Iterator[tuple]:
    """`ddl` run on the real server in a database of its own and replayed beside it: the connection,
    a cursor in that database, its name, the replay, and a state that has only the database (for
    SHOW CREATE TABLE's texts); the database dropped at the end."""
    db = f"ddl_{uuid.uuid4().hex[:12]}"
    replayed, shown = SchemaState(flavor=flavor), SchemaState(flavor=flavor)
    with server.connect() as conn, conn.cursor() as cur:
        create = f"CREATE DATABASE {db} CHARACTER SET utf8mb4"
        cur.execute(create)
        replayed.apply(db, create)
        shown.apply(db, create)
        try:
            cur.execute(f"USE {db}")
            for sql in ddl:
                cur.execute(sql)
                replayed.apply(db, sql)
            yield conn, cur, db, replayed, shown
        finally:
            cur.execute(f"DROP DATABASE {db}")


SPATIAL_DDL = {  # the spatial subtypes, MySQL's SRID attribute, the words as names and as functions
    "mysql": [
        "CREATE TABLE t (id INT PRIMARY KEY, point POINT NOT NULL SRID 4326, l LINESTRING COMMENT 'LINESTRING', "
        "g GEOMCOLLECTION, gc GEOMETRYCOLLECTION, h GEOMETRY SRID 0, `polygon` POLYGON NULL)",
        "ALTER TABLE t ADD COLUMN q MULTIPOLYGON AFTER id, MODIFY point MULTIPOINT, CHANGE l l2 MULTILINESTRING",
        "CREATE TABLE u (a INT, b POINT AS (POINT(a, a)) STORED, srid INT)",
    ],
    "mariadb": [  # MariaDB shows int(11)
        "CREATE TABLE t (id INT(11) PRIMARY KEY, point POINT NOT NULL, l LINESTRING COMMENT 'LINESTRING', "
        "gc GEOMETRYCOLLECTION, h GEOMETRY, `polygon` POLYGON NULL)",
        "ALTER TABLE t ADD COLUMN q MULTIPOLYGON AFTER id, MODIFY point MULTIPOINT, CHANGE l l2 MULTILINESTRING",
        "CREATE TABLE u (a INT(11), b POINT AS (POINT(a, a)) STORED, srid INT(11))",
    ],
}


@pytest.mark.parametrize("server", ["mysql_server", "mariadb_server"])
def test_spatial_columns_replay_as_the_server_types_them(server, request):
    """Each statement run on the real server and replayed: every column's name and type as the
    server's information_schema has them (`binlake schema capture`): `point`, `multipolygon`, and
    a collection as the flavor names it (MySQL `geomcollection`, MariaDB `geometrycollection`)."""
    from binlake.schema.capture import capture

    flavor = server.removesuffix("_server")
    with _replayed_on(request.getfixturevalue(server), flavor, SPATIAL_DDL[flavor]) as (conn, _, db, replayed, _):
        found = capture(conn)
    for table in ("t", "u"):
        want = [(c.name, c.type) for c in found.tables[(db, table)].columns]
        assert [(c.name, c.type) for c in replayed.table(db, table).columns] == want, table
    assert ("point", "multipoint") in want or table == "u"


def test_a_snapshot_is_chosen_from_the_historys_keys(tmp_path):
    """A history as the archive writes it (record(), times as capture() stamps them: whole
    seconds), several snapshots a second, each an hour's file apart, plus two keys written by older
    binlakes (`{time}-{id}.json`, `{time}-{id}@{file}.json`, whose documents say their point). The
    oracle is the snapshots' own points: for a range starting at a file, the first snapshot at or
    after its start, else the last before it, by (file, position), never by time or the key's
    random id. The listing reads the older keys' documents only, a choice reads the chosen
    snapshot only (and the whole one a reference names), and a whole snapshot gone fails only the
    ranges that choose a reference to it."""
    import datetime as dt
    import json

    from binlake.archive.keys import snapshots_prefix
    from binlake.archive.stores import FileStore
    from binlake.schema.capture import stamp
    from binlake.schema.history import choose, loaded, of_archived_file, record, snapshots
    from binlake.schema.model import Column, Snapshot, Table

    store = FileStore(str(tmp_path))
    tables = {("db", "t"): Table("db", "t", (Column("id", "int"),))}
    made: dict[str, Snapshot] = {}  # key -> the snapshot recorded under it
    for n in range(1, 31):  # files binlog.000001..30; six snapshots in each second
        second = dt.datetime(2026, 11, 25, 4, 0, n // 6, tzinfo=dt.UTC)
        s = Snapshot(tables if n != 12 else {}, {"db": None},
                     {"before": {"file": f"binlog.{n:06d}", "position": 4 + n}}, "s", stamp(second))
        if n in (8, 9):  # the keys of older binlakes: without the point, then without the position
            old = f"{snapshots_prefix('s')}/{s.taken_at.replace('-', '').replace(':', '')}-0badc0d{n}"
            key = old + (".json" if n == 8 else f"@{s.point['before']['file']}.json")
            store.put(key, json.dumps(s.to_json()).encode())
        else:
            key = record(store, "s", s)
        made[key] = s
    assert len({s.taken_at for s in made.values()}) == 6  # ties: six a second
    by_point = sorted(made, key=lambda k: made[k].point["before"]["position"])
    read: list[str] = []

    class Counting(FileStore):
        def get(self, key: str) -> bytes:
            read.append(key)
            return super().get(key)

    counting = Counting(str(tmp_path))
    history = snapshots(counting, "s")
    assert sorted(read) == sorted(by_point[7:9])  # the older keys' documents, to learn their points
    assert sorted(s.key for s in history) == sorted(made)
    for n in (1, 5, 6, 7, 8, 9, 12, 13, 24, 30, 31):
        read.clear()
        got = choose(history, f"binlog.{n:06d}", lambda s: of_archived_file(store, "s", s))
        want = by_point[min(n, 30) - 1]  # at the file's start, else (binlog.000031) the last before it
        assert got is not None and got.key == want, n
        assert loaded(counting, got) == made[want], n
        whole = [json.loads(store.get(want)).get("tables_of")] if n not in (8, 9) else []
        assert [k for k in read if "/schema/" in k] == [want, *filter(None, whole)], n

    # a whole snapshot gone (binlog.000013's: the schema changed back after binlog.000012's
    # empty one): refused, by name, for the ranges that choose a reference to it; the ranges
    # that choose another read on
    gone = by_point[12]
    assert json.loads(store.get(gone))["kind"] == "snapshot"
    assert json.loads(store.get(by_point[19]))["tables_of"] == gone
    store.delete(gone)
    history = snapshots(store, "s")
    for n, fails in ((13, True), (20, True), (31, True), (5, False), (9, False), (12, False)):
        chosen = choose(history, f"binlog.{n:06d}")
        assert chosen is not None
        if fails:
            with pytest.raises(ValueError, match=f"its tables are those of {gone}, which the store lacks"):
                loaded(store, chosen)
        else:
            assert loaded(store, chosen) == made[chosen.key], n


def test_a_state_from_a_mariadb_snapshot_reads_mariadb_ddl():
    """A state made from a MariaDB server's snapshot (as the jobs move the history's snapshot to
    their range) reads its DDL as MariaDB's: a COMPRESSED column (COMPRESSED_DDL's) is followed."""
    from binlake.schema.model import Snapshot

    state = SchemaState(Snapshot({}, point={"flavor": "mariadb", "before": {"file": "b.000001", "position": 4}}))
    state.apply("d", "CREATE TABLE t (a TEXT COMPRESSED)")
    assert [(c.name, c.type) for c in state.table("d", "t").columns] == [("a", "text /*m!100301 compressed*/")]


GENERATED_DDL = {  # generated columns in each of the flavor's forms; a column named `persistent` too
    "mysql": [
        "CREATE TABLE g (id INT PRIMARY KEY, a INT, s INT GENERATED ALWAYS AS (a + 2) STORED, "
        "v INT AS (a + 3) VIRTUAL, d INT AS (a + 4), t VARCHAR(12) AS (CONCAT('t', a)) STORED NOT NULL, "
        "persistent INT)",
        "ALTER TABLE g ADD COLUMN q INT AS (a * 2) STORED AFTER persistent, ADD COLUMN w INT AS (a * 3) VIRTUAL FIRST",
    ],
    "mariadb": [  # PERSISTENT: MariaDB's word for STORED (MariaDB shows int(11))
        "CREATE TABLE g (id INT(11) PRIMARY KEY, a INT(11), p INT(11) AS (a + 1) PERSISTENT, "
        "s INT(11) GENERATED ALWAYS AS (a + 2) STORED, v INT(11) AS (a + 3) VIRTUAL, d INT(11) AS (a + 4), "
        "t VARCHAR(12) GENERATED ALWAYS AS (CONCAT('t', a)) PERSISTENT COMMENT 'PERSISTENT', persistent INT(11))",
        "ALTER TABLE g ADD COLUMN q INT(11) AS (a * 2) PERSISTENT AFTER persistent, "
        "ADD COLUMN w INT(11) AS (a * 3) VIRTUAL FIRST",
    ],
}


@pytest.mark.parametrize("server", ["mysql_server", "mariadb_server"])
def test_generated_columns_replay_as_the_server_types_and_logs_them(server, request):
    """Generated columns (MariaDB's PERSISTENT, STORED, VIRTUAL, the default, GENERATED ALWAYS AS)
    run on the real server and replayed: each column's name, type and generation as the server's
    information_schema has them, also from SHOW CREATE TABLE's text. Then a row: its row image as
    the server's `mysqlbinlog -vv` prints it holds one value per replayed column (the virtual ones
    too), each the server's SELECT of it."""
    import re
    import subprocess

    from binlake.schema.capture import capture

    srv = request.getfixturevalue(server)
    flavor = server.removesuffix("_server")
    with _replayed_on(srv, flavor, GENERATED_DDL[flavor]) as (conn, cur, db, replayed, shown):
        found = capture(conn)
        cur.execute("SHOW CREATE TABLE g")
        shown.apply(db, cur.fetchone()[1])
        cur.execute("SHOW BINARY LOG STATUS" if flavor == "mysql" else "SHOW MASTER STATUS")
        file, pos = cur.fetchone()[:2]
        cur.execute("INSERT INTO g (id, a, persistent) VALUES (1, 5, 7)")
        cur.execute("SELECT * FROM g")
        selected = [str(v) for v in cur.fetchone()]
    want = [(c.name, c.type, c.generated) for c in found.tables[(db, "g")].columns]
    assert [(c.name, c.type, c.generated) for c in replayed.table(db, "g").columns] == want
    assert [(c.name, c.type, c.generated) for c in shown.table(db, "g").columns] == want
    assert {g for _, _, g in want} == {None, "STORED", "VIRTUAL"}  # the server's own kinds, each replayed

    text = subprocess.run([*srv.mysqlbinlog, "-vv", "--base64-output=DECODE-ROWS", f"--start-position={pos}",
                           str(srv.binlog_dir / file)], capture_output=True, text=True, check=True, timeout=60).stdout
    image = text.split(f"### INSERT INTO `{db}`.`g`", 1)[1].split("\n# at ", 1)[0]
    logged = re.findall(r"^###   @(\d+)=(.*?)(?: /\*.*\*/)?$", image, re.M)
    assert [int(n) for n, _ in logged] == list(range(1, len(want) + 1))  # every column, in the table's order
    assert [v[1:-1] if v.startswith("'") else v for _, v in logged] == selected
