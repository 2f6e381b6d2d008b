"""`binlake snapshot` on real servers: tables read whole and in key order across chunks, at a
point the server makes exact, under concurrent writes, killed and resumed, with DDL after the
point, and with the least privileges.

Oracles: the server's own SELECT of each table (in its ORDER BY of the key) and its binlog
position and GTID set; under concurrent writes a replica of the source stopped exactly at each
session's point (MySQL's START REPLICA UNTIL SQL_AFTER_GTIDS, MariaDB's START SLAVE UNTIL
master_gtid_pos), whose own GTID record must then be the point's, and whose tables must be
the chunks' rows; the server's error for a missing privilege.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid

import boto3
import pytest

from binlake.archive import keys
from binlake.archive.stores import open_store
from binlake.baseline import layout
from tests.support.scanning import ndjson, run_cli
from tests.support.snapshots import (
    KEYS,
    Writers,
    baseline,
    chunk_rows,
    create_workload,
    replica_at,
    replicate,
    rows_of,
    take,
    url,
)

SERVERS = ("mysql_server", "mariadb_server")


def _db() -> str:
    return f"snap_{uuid.uuid4().hex[:10]}"


def _point(server) -> dict:
    """Where the server's binlog ends, by its own account."""
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW BINARY LOG STATUS" if server.flavor == "mysql" else "SHOW BINLOG STATUS")
        file, pos = cur.fetchone()[:2]
        cur.execute("SELECT @@global.gtid_executed" if server.flavor == "mysql" else "SELECT @@global.gtid_binlog_pos")
        return {"file": file, "position": int(pos), "gtids": cur.fetchone()[0].replace("\n", "")}


def _select(server, sql: str, names: tuple[str, ...]) -> list[dict]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(sql)
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


# -- whole tables, in key order, across chunks ------------------------------------------------

STATIC = {
    # a big table: 25 chunks of 1000 rows
    "big": ("CREATE TABLE {db}.big (id BIGINT PRIMARY KEY, s VARCHAR(20), n INT)",
            "INSERT INTO {db}.big SELECT seq, CONCAT('s', seq), seq % 97 FROM {seq}",
            "SELECT id, s, n FROM {db}.big ORDER BY id", ("id", "s", "n")),
    # wide rows: chunks cut by bytes, not rows
    "wide": ("CREATE TABLE {db}.wide (id INT PRIMARY KEY, pad VARCHAR(3000))",
             "INSERT INTO {db}.wide SELECT seq, REPEAT(CHAR(65 + seq % 26), 1000 + seq) FROM {seq} WHERE seq < 300",
             "SELECT id, pad FROM {db}.wide ORDER BY id", ("id", "pad")),
    # a composite key with a case-insensitive collation and equal prefixes across chunk ends
    "comp": ("CREATE TABLE {db}.comp (a VARCHAR(8) COLLATE utf8mb4_general_ci, b INT, c DATETIME(3), v INT, "
             "PRIMARY KEY (a, b, c))",
             "INSERT INTO {db}.comp SELECT ELT(1 + seq % 5, 'a', 'B', 'b ', 'ä', 'Ab'), seq % 3, "
             "TIMESTAMPADD(SECOND, seq, '2026-01-01 00:00:00.125'), seq FROM {seq} WHERE seq < 3000",
             "SELECT a, b, CAST(c AS CHAR), v FROM {db}.comp ORDER BY a, b, c", ("a", "b", "c", "v")),
    # no primary key: a unique NOT NULL key, beside a unique key with a NULL column
    "uk": ("CREATE TABLE {db}.uk (x INT NOT NULL, y CHAR(3) NOT NULL, z INT NULL, UNIQUE KEY zz (z), "
           "UNIQUE KEY xy (x, y))",
           "INSERT INTO {db}.uk SELECT seq % 700, CHAR(97 + seq DIV 700), IF(seq % 2, NULL, seq) FROM {seq} "
           "WHERE seq < 2100",
           "SELECT x, y, z FROM {db}.uk ORDER BY x, y", ("x", "y", "z")),
    # an ENUM key orders by its members' numbers, not their names
    "ek": ("CREATE TABLE {db}.ek (e ENUM('z', 'a', 'm'), id INT, PRIMARY KEY (e, id))",
           "INSERT INTO {db}.ek SELECT ELT(1 + seq % 3, 'z', 'a', 'm'), seq FROM {seq} WHERE seq < 3000",
           "SELECT e, id FROM {db}.ek ORDER BY e, id", ("e", "id")),
    # a key of DECIMAL, TIME, BIT and SET values: BIT and SET order by their numbers
    "mixed": ("CREATE TABLE {db}.mixed (d DECIMAL(6,2), t TIME(3), bi BIT(4), st SET('a', 'b'), id INT, "
              "PRIMARY KEY (d, t, bi, st, id))",
              "INSERT INTO {db}.mixed SELECT (seq % 7) / 4, SEC_TO_TIME(seq % 11 - 5.5), seq % 3, "
              "ELT(1 + seq % 4, '', 'a', 'b', 'a,b'), seq FROM {seq} WHERE seq < 2400",
              "SELECT CAST(d AS CHAR), CAST(t AS CHAR), bi + 0, st, id FROM {db}.mixed ORDER BY d, t, bi, st, id",
              ("d", "t", "bi", "st", "id")),
    # no usable key: read whole, duplicates and NULLs kept
    "bag": ("CREATE TABLE {db}.bag (x INT, y VARCHAR(5), UNIQUE KEY (y))",
            "INSERT INTO {db}.bag SELECT seq % 10, IF(seq % 3, NULL, CONCAT('y', seq)) FROM {seq} WHERE seq < 2500",
            "SELECT x, y FROM {db}.bag", ("x", "y")),
    "empty": ("CREATE TABLE {db}.empty (id INT PRIMARY KEY)", None, "SELECT id FROM {db}.empty", ("id",)),
}


def _sequence(cur, db: str, n: int) -> str:
    """A table of the numbers 0..n-1 (both flavors)."""
    cur.execute(f"CREATE TABLE {db}.seq (seq INT PRIMARY KEY)")
    for lo in range(0, n, 5000):
        cur.execute(f"INSERT INTO {db}.seq VALUES " + ", ".join(f"({i})" for i in range(lo, min(lo + 5000, n))))
    return f"{db}.seq"


@pytest.mark.parametrize("server", SERVERS)
def test_tables_in_key_order_across_chunks(server, request, tmp_path):
    """Each table's rows are the server's, in its ORDER BY of the key, chunk after chunk; every
    chunk's first and last keys are its rows'; a table of MyISAM is skipped and said so; every
    session's point is where the server's binlog ended (nothing was written since)."""
    s = request.getfixturevalue(server)
    db = _db()
    with s.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
        seq = _sequence(cur, db, 25_000)
        for create, insert, _, _ in STATIC.values():
            cur.execute(create.format(db=db))
            if insert:
                cur.execute(insert.format(db=db, seq=seq))
        cur.execute(f"CREATE TABLE {db}.old (id INT PRIMARY KEY) ENGINE=MyISAM")
    at = _point(s)
    store = f"file://{tmp_path}"
    tables = [f"{db}.{t}" for t in (*STATIC, "old")]
    result = take(s, store, "static", tables, chunk_rows=1000, chunk_bytes=100_000)
    record, got = baseline(store, "static", result.id)

    # MySQL reads every table in one session; MariaDB each in its own (binlake.baseline.session):
    # all at the point where the server's binlog ended
    assert [sess["point"] for sess in record["sessions"]] == [at] * (1 if s.flavor == "mysql" else len(STATIC))
    assert record["skipped"] == [{"schema": db, "table": "old", "kind": "engine",
                                  "reason": "engine MyISAM takes no part in a consistent snapshot"}]
    by_name = {t["table"]: t for t in record["tables"]}
    assert sorted(by_name) == sorted(STATIC)
    for name, (_, _, select, names) in STATIC.items():
        want = _select(s, select.format(db=db), names)
        for row in want if name == "mixed" else ():  # a SET's text, as the list of its members
            row["st"] = row["st"].split(",") if row["st"] else []
        rows = got[(db, name)]
        if name == "bag":  # a multiset: no order
            assert sorted(map(json.dumps, rows)) == sorted(map(json.dumps, want))
            continue
        assert rows == want, name
        key = by_name[name]["key"]
        for chunk in by_name[name]["chunks"]:
            part = chunk_rows(open_store(store), "static", result.id, chunk)
            assert chunk["first"] == [part[0][k] for k in key] and chunk["last"] == [part[-1][k] for k in key]
    assert by_name["big"]["key"] == ["id"] and len(by_name["big"]["chunks"]) == 25
    assert all(c["rows"] == 1000 for c in by_name["big"]["chunks"])
    wide = by_name["wide"]["chunks"]  # ~1.2 KB a row: cut near 100,000 bytes, long before 1000 rows
    assert len(wide) > 3 and all(c["rows"] < 100 for c in wide)
    assert by_name["comp"]["key"] == ["a", "b", "c"] and len(by_name["comp"]["chunks"]) == 3
    assert by_name["uk"]["key"] == ["x", "y"] and by_name["ek"]["key"] == ["e", "id"]
    assert len(by_name["mixed"]["chunks"]) == 3
    assert by_name["bag"]["key"] is None and by_name["bag"]["rows"] == 2500
    assert by_name["empty"]["rows"] == 0 and by_name["empty"]["chunks"] == []
    # the record's schema: the tables' definitions, as the schema history holds them
    schema = record["schema"]
    assert schema["kind"] == "snapshot" and schema["point"]["before"] == at
    assert {t["name"] for t in schema["tables"]} == set(STATIC)
    assert not open_store(store).exists(keys.baseline_progress_key("static", result.id))


# -- own servers: a primary under concurrent writes, and its replica as the oracle -------------

@pytest.fixture(scope="module")
def pair(request):
    """flavor -> (primary, replica): the replica follows the primary by GTID, stopped until a
    test moves it to a snapshot's point (one applier, so it applies in the primary's order)."""
    made: dict[str, tuple] = {}

    def get(flavor: str):
        if flavor not in made:
            factory = request.getfixturevalue(f"{flavor}_factory")
            primary = factory()
            replica = factory(**({"replica_parallel_workers": "1"} if flavor == "mysql" else {}))
            replicate(replica, primary)
            made[flavor] = (primary, replica)
        return made[flavor]

    return get


def _check_sessions(record: dict, chunks: dict, replica, db: str) -> None:
    """Move the replica to each session's point in turn and hold that session's chunks to the
    replica's tables there (the DBLog rule): a keyed chunk holds exactly the rows whose key is
    after the previous chunk's last key and up to its own last, and no row is after a table's
    last chunk; a table without a key is read in one session, and holds exactly its rows."""
    tables = {t["table"]: t for t in record["tables"]}
    for k, session in enumerate(record["sessions"]):
        replica_at(replica, session["point"]["gtids"])
        for name, table in tables.items():
            here = [i for i, c in enumerate(table["chunks"]) if c["session"] == k]
            if not here:
                continue
            held = rows_of(replica, db, name)
            key = KEYS[name]
            if key is None:
                assert {c["session"] for c in table["chunks"]} == {k}
                got = [r for i in here for r in chunks[name][i]]
                assert sorted(map(json.dumps, got)) == sorted(map(json.dumps, held)), name
                continue
            held_keys = [tuple(r[c] for c in key) for r in held]
            assert held_keys == sorted(held_keys)  # the server's key order is Python's for these values
            for i in here:
                lo = tuple(table["chunks"][i - 1]["last"]) if i else None
                hi = tuple(table["chunks"][i]["last"])
                want = [r for r, kv in zip(held, held_keys, strict=True) if (lo is None or kv > lo) and kv <= hi]
                assert chunks[name][i] == want, f"{name} chunk {i} (session {k})"
            if here[-1] == len(table["chunks"]) - 1:  # its last chunk: nothing after it at that point
                assert not [kv for kv in held_keys if kv > tuple(table["chunks"][-1]["last"])], name


@pytest.mark.parametrize("flavor", ["mysql", "mariadb"])
def test_the_point_is_exact_under_concurrent_writes(flavor, pair, tmp_path):
    """Three writers commit transactions while a snapshot reads four tables in chunks of 100 rows
    (MySQL in one session, MariaDB in one a table): a replica stopped exactly at each session's
    point holds what its chunks hold, table by table and chunk by chunk."""
    primary, replica = pair(flavor)
    db = _db()
    create_workload(primary, db, rows=2000, bag=1500)
    store = f"file://{tmp_path}"
    with Writers(primary, db, rows=2000) as writers:
        before = writers.committed
        result = take(primary, store, "live", [f"{db}.{t}" for t in KEYS], chunk_rows=100)
        during = writers.committed - before
    record, got = baseline(store, "live", result.id)
    assert during > 0 and len(record["sessions"]) == (1 if flavor == "mysql" else len(KEYS))
    chunks = {t["table"]: [chunk_rows(open_store(store), "live", result.id, c) for c in t["chunks"]]
              for t in record["tables"]}
    _check_sessions(record, chunks, replica, db)
    assert sum(len(c) for c in chunks["acct"]) == 2000  # every account, at one instant


# -- killed and resumed -----------------------------------------------------------------------

def _cli(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "binlake.cli", "-v", "snapshot", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _kill_when(proc: subprocess.Popen, store, name: str, ready, timeout: float = 300) -> dict:
    """SIGKILL the snapshot as soon as its progress.json satisfies ready(progress); that progress."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        found = layout.unfinished(store, name)
        if found and ready(found[-1]):
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return layout.read_json(store, keys.baseline_progress_key(name, found[-1].id))
        time.sleep(0.005)
    raise AssertionError("the snapshot never got that far")


def _chunks_of(progress: dict, table: str) -> list[dict]:
    return next(t["chunks"] for t in progress["tables"] if t["table"] == table)


@pytest.mark.parametrize(("flavor", "kind"), [("mysql", "s3"), ("mariadb", "file")])
def test_a_killed_snapshot_resumes_where_it_died(flavor, kind, pair, tmp_path, request):
    """`binlake snapshot` SIGKILLed twice under concurrent writes: while reading the keyed table,
    then while reading the keyless one; the third run completes it. The chunks committed before
    each kill are kept as they were, the keyed table goes on from its last chunk's key in the next
    session, the keyless one is read again whole in one session; the stray chunks and unfinished
    writes the kills left are gone; each session's chunks are the replica's rows at its point."""
    primary, replica = pair(flavor)
    db = _db()
    create_workload(primary, db, rows=2000, bag=2000)
    if kind == "s3":
        request.getfixturevalue("s3_endpoint")
        bucket = f"snap-{uuid.uuid4().hex[:8]}"
        boto3.client("s3").create_bucket(Bucket=bucket)
        store_url = f"s3://{bucket}/lake"
    else:
        store_url = f"file://{tmp_path}"
    store = open_store(store_url)
    args = ["--source", url(primary), "--store", store_url, "--source-name", "k", "--chunk-rows", "50",
            *[a for t in KEYS for a in ("--table", f"{db}.{t}")]]
    with Writers(primary, db, rows=2000):
        first = _kill_when(_cli(*args), store, "k", lambda p: sum(len(t.chunks) for t in p.tables) >= 3)
        begun = len(first["sessions"])  # the first run's sessions: the second run's come after them
        second = _kill_when(_cli(*args), store, "k", lambda p: len(p.sessions) > begun and any(
            t.table == "bag" and len(t.chunks) >= 3 for t in p.tables))
        done = _cli(*args)
        out, err = done.communicate(timeout=600)
    assert done.returncode == 0, err
    summary = ndjson(out)[-1]
    assert summary["record"] == "snapshot" and summary["resumed"] is True
    assert "chunk 0: 50 rows" in err  # progress logged with counts
    record, _ = baseline(store_url, "k", summary["id"])
    assert record["sessions"][:len(second["sessions"])] == second["sessions"]
    tables = {t["table"]: t for t in record["tables"]}
    # what each kill left committed is kept, byte for byte, in its session
    assert tables["acct"]["chunks"][:len(_chunks_of(first, "acct"))] == _chunks_of(first, "acct")
    assert {c["session"] for c in _chunks_of(first, "acct")} <= set(range(begun))
    assert tables["acct"]["chunks"][:len(_chunks_of(second, "acct"))] == _chunks_of(second, "acct")
    assert {c["session"] for c in tables["acct"]["chunks"]} - set(range(begun)) != set()  # went on after the kill
    assert {c["session"] for c in tables["acct"]["chunks"]} <= set(range(len(second["sessions"])))
    # the keyless table half read by the second run is read again, whole, in one session of the third
    assert len(_chunks_of(second, "bag")) >= 3
    assert len({c["session"] for c in tables["bag"]["chunks"]}) == 1
    assert min(c["session"] for c in tables["bag"]["chunks"]) >= len(second["sessions"])
    listed = {keys.baseline_chunk_key("k", summary["id"], c["file"]) for t in record["tables"] for c in t["chunks"]}
    assert {k for k in store.keys(f"k/snapshots/{summary['id']}/") if k.endswith(".zst")} == listed
    # no unfinished chunk write, no dead run's lease (a lease's own write a kill interrupted is
    # discarded once stale, as the archive's are: binlake.archive.leases)
    assert [w for w in store.unfinished("k/") if not w.key.startswith("k/leases/")] == []
    assert store.keys("k/leases") == []
    chunks = {t["table"]: [chunk_rows(store, "k", summary["id"], c) for c in t["chunks"]] for t in record["tables"]}
    _check_sessions(record, chunks, replica, db)


# -- DDL after the point ----------------------------------------------------------------------

@pytest.mark.parametrize("server", SERVERS)
def test_a_table_altered_after_the_point_is_read_in_the_next_session(server, request, tmp_path):
    """As the snapshot is about to read `b`, another connection adds a column to it (MariaDB adds
    it instantly: reads at the old point would not fail), truncates `c` and writes a row into it:
    `b` and `c` are read in sessions whose point is where the server's binlog ended after that,
    with the definitions and rows the server holds then; `a` before, at the first point."""
    s = request.getfixturevalue(server)
    db = _db()
    with s.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
        for t in ("a", "b", "c"):
            cur.execute(f"CREATE TABLE {db}.{t} (id INT PRIMARY KEY, v VARCHAR(10))")
            cur.execute(f"INSERT INTO {db}.{t} VALUES (1, 'one'), (2, 'two'), (3, 'three')")
    before = _point(s)
    done = []

    def observe(kind: str, what: dict) -> None:
        if kind == "table" and what["table"] == (db, "b") and not done:
            with s.connect() as conn, conn.cursor() as cur:
                cur.execute(f"ALTER TABLE {db}.b ADD COLUMN z INT DEFAULT 7")
                cur.execute(f"TRUNCATE TABLE {db}.c")
                cur.execute(f"INSERT INTO {db}.c VALUES (9, 'nine')")
            done.append(_point(s))

    store = f"file://{tmp_path}"
    result = take(s, store, "ddl", [f"{db}.{t}" for t in "abc"], observe=observe)
    record, got = baseline(store, "ddl", result.id)
    points = {t["table"]: [record["sessions"][c["session"]]["point"] for c in t["chunks"]] for t in record["tables"]}
    assert points == {"a": [before], "b": [done[0]], "c": [done[0]]}
    assert got[(db, "b")] == _select(s, f"SELECT id, v, z FROM {db}.b ORDER BY id", ("id", "v", "z"))
    assert got[(db, "b")][0] == {"id": 1, "v": "one", "z": 7} and got[(db, "c")] == [{"id": 9, "v": "nine"}]
    columns = {t["name"]: [c["name"] for c in t["columns"]] for t in record["schema"]["tables"]}
    assert columns == {"a": ["id", "v"], "b": ["id", "v", "z"], "c": ["id", "v"]}


@pytest.mark.parametrize("server", SERVERS)
def test_ddl_on_a_table_read_already_does_not_wait_for_the_snapshot(server, request, tmp_path):
    """While the snapshot reads `b`, an ALTER of `a`, read already, goes through at once (a lock
    wait of 5 s would fail it): the snapshot holds a table's metadata lock only while it reads
    it (MySQL: a savepoint rolled back; MariaDB, which keeps it until the transaction ends: a
    session a table)."""
    s = request.getfixturevalue(server)
    db = _db()
    with s.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
        for t in ("a", "b"):
            cur.execute(f"CREATE TABLE {db}.{t} (id INT PRIMARY KEY)")
            cur.execute(f"INSERT INTO {db}.{t} VALUES (1), (2)")
    altered = []

    def observe(kind: str, what: dict) -> None:
        if kind == "chunk" and what["table"] == (db, "b"):
            with s.connect() as conn, conn.cursor() as cur:
                cur.execute("SET SESSION lock_wait_timeout = 5")
                cur.execute(f"ALTER TABLE {db}.a ADD COLUMN q INT")
                altered.append(True)

    take(s, f"file://{tmp_path}", "mdl", [f"{db}.a", f"{db}.b"], observe=observe)
    assert altered == [True]


# -- privileges -------------------------------------------------------------------------------

@pytest.mark.parametrize("flavor", ["mysql", "mariadb"])
def test_the_least_privileges_and_a_missing_one_named(flavor, pair, tmp_path):
    """MySQL needs SELECT, FLUSH_TABLES and REPLICATION CLIENT, and a user lacking one is told
    which (the server refused the statement that needs it); MariaDB needs SELECT only. A table
    asked for that the user may not read is named."""
    primary, _ = pair(flavor)
    db = _db()
    user = f"s{uuid.uuid4().hex[:6]}"
    with primary.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
        cur.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY)")
        cur.execute(f"INSERT INTO {db}.t VALUES (1), (2)")
        cur.execute(f"CREATE TABLE {db}.secret (id INT PRIMARY KEY)")
        cur.execute(f"CREATE USER '{user}'@'127.0.0.1'")
        cur.execute(f"GRANT SELECT ON {db}.t TO '{user}'@'127.0.0.1'")

    def run(*tables: str):
        return run_cli("snapshot", "--source", url(primary, user), "--store", f"file://{tmp_path}",
                       "--source-name", "p", *[a for t in tables for a in ("--table", t)])

    grants = ["FLUSH_TABLES", "REPLICATION CLIENT"] if flavor == "mysql" else []
    for grant in grants:
        proc = run(f"{db}.t")
        assert proc.returncode == 1
        assert proc.stderr.startswith(f"binlake: mysql://{user}@127.0.0.1:{primary.port}: missing privilege "
                                      f"{grant}"), proc.stderr
        with primary.connect() as conn, conn.cursor() as cur:
            cur.execute(f"GRANT {grant} ON *.* TO '{user}'@'127.0.0.1'")
    proc = run(f"{db}.t")
    assert proc.returncode == 0, proc.stderr
    record, got = baseline(f"file://{tmp_path}", "p", ndjson(proc.stdout)[-1]["id"])
    assert got == {(db, "t"): [{"id": 1}, {"id": 2}]}
    proc = run(f"{db}.t", f"{db}.secret")
    assert proc.returncode == 1
    assert f"table {db}.secret: no such table, or no SELECT privilege on it" in proc.stderr


@pytest.mark.parametrize("flavor", ["mysql", "mariadb"])
def test_missing_baselines_are_the_tables_archiving_began_with(flavor, pair, tmp_path):
    """`binlake snapshot --missing` takes the tables the source's schema history had at its first
    capture and no baseline holds: not a table created after it (its CREATE is in the archived
    changelog), not a table a baseline left out for its engine; then nothing is missing. The
    server's SELECT is the oracle of the rows; the captures, of which tables existed when."""
    primary, _ = pair(flavor)
    db, user = _db(), f"m{uuid.uuid4().hex[:6]}"
    with primary.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
        cur.execute(f"CREATE TABLE {db}.old (id INT PRIMARY KEY, v VARCHAR(8))")
        cur.execute(f"INSERT INTO {db}.old VALUES (1, 'a'), (2, 'b')")
        cur.execute(f"CREATE TABLE {db}.heap (id INT PRIMARY KEY) ENGINE=MyISAM")
        cur.execute(f"CREATE USER '{user}'@'127.0.0.1'")  # the archive's user, who sees this database only
        cur.execute(f"GRANT SELECT ON {db}.* TO '{user}'@'127.0.0.1'")
        cur.execute(f"GRANT {'FLUSH_TABLES, REPLICATION CLIENT' if flavor == 'mysql' else 'BINLOG MONITOR'} "
                    f"ON *.* TO '{user}'@'127.0.0.1'")
    store = f"file://{tmp_path}"
    capture = ("schema", "capture", "--source", url(primary, user), "--store", store, "--source-name", "m")
    assert run_cli(*capture).returncode == 0
    with primary.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {db}.new (id INT PRIMARY KEY)")
        cur.execute(f"INSERT INTO {db}.new VALUES (7)")
    assert run_cli(*capture).returncode == 0
    args = ("snapshot", "--source", url(primary, user), "--store", store, "--source-name", "m", "--missing")
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    out = ndjson(proc.stdout)[-1]
    record, got = baseline(store, "m", out["id"])
    assert got == {(db, "old"): _select(primary, f"SELECT id, v FROM {db}.old ORDER BY id", ("id", "v"))}
    assert [(t["schema"], t["table"], t["kind"]) for t in record["skipped"]] == [(db, "heap", "engine")]
    again = run_cli(*args)
    assert again.returncode == 0 and ndjson(again.stdout) == [{"record": "snapshot", "source": "m", "id": None,
                                                               "missing": []}]
    assert layout.ids(open_store(store), "m") == [out["id"]]


def test_a_snapshot_reads_a_live_server_only(tmp_path):
    proc = run_cli("snapshot", "--source", f"dir://{tmp_path}", "--store", f"file://{tmp_path}")
    assert proc.returncode == 1 and "a snapshot reads a live server" in proc.stderr
    proc = run_cli("snapshot", "--source", "mysql://root@127.0.0.1:1", "--store", f"file://{tmp_path}",
                   "--table", "nodot")
    assert proc.returncode == 1 and "--table nodot: expected DATABASE.TABLE" in proc.stderr

