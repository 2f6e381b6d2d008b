"""Values exactly as the server shows them, held to the server's own rendering of each.

The values issue 22 found changed: a zero TIMESTAMP / TIMESTAMP(6) / DATETIME(6), YEAR 0, a
BINARY(n) ending in zero bytes, a GEOMETRY's SRID and an empty collection. Each is written on a
real server of each flavor and read back by the server itself: `CAST(… AS CHAR)` under UTC,
`YEAR + 0`, `HEX()`, `ST_SRID()` and the WKT of the stored coordinates (MySQL: `ST_AsText` of the
geometry with its SRID set to 0, so no axis is swapped; MariaDB's `ST_AsText` shows them as
stored). Both decoding paths give the same records (tests.test_rowdecode.decoded_alike).
"""

from __future__ import annotations

import base64
import uuid

import pytest

from tests.test_rowdecode import _position, _range_copies, decoded_alike

FLAVORS = ["mysql_server", "mariadb_server"]
COLUMNS = ("id INT PRIMARY KEY, ts TIMESTAMP NULL, ts6 TIMESTAMP(6) NULL, dt6 DATETIME(6) NULL, y YEAR NULL, "
           "bn BINARY(16) NULL")
ROWS = [  # (id, ts, ts6, dt6, y, bn as hex)
    (1, "0000-00-00 00:00:00", "0000-00-00 00:00:00", "0000-00-00 00:00:00", 0, "00"),
    (2, "2026-01-01 00:00:00", "1970-01-01 00:00:01.000001", "2026-01-01 00:00:00.5", 2155,
     "123e4567e89b12d3a456426614174000"),
    (3, "2038-01-19 03:14:07", "2038-01-19 03:14:07.999999", "9999-12-31 23:59:59.999999", 1901, "ff00ff00"),
]
GEOMETRIES = [  # (id, WKT, SRID); MySQL's 4326 takes latitude first
    (1, "POINT(12.5 -45.25)", 4326),
    (2, "GEOMETRYCOLLECTION EMPTY", 0),
    (3, "LINESTRING(0 0,-1000000.125 2.5)", 3857),
    (4, "POLYGON((0 0,10 0,10 10,0 0))", 0),
    (5, "MULTIPOINT((1 2),(3 4))", 4326),
]


def _write(server, flavor: str, tmp_path):
    db = f"values_{uuid.uuid4().hex[:12]}"
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = '', time_zone = '+00:00'")  # zero dates allowed, as on old servers
        cur.execute(f"CREATE DATABASE {db}")
        try:
            cur.execute(f"CREATE TABLE {db}.t ({COLUMNS})")
            cur.execute(f"CREATE TABLE {db}.g (id INT PRIMARY KEY, g GEOMETRY NULL)")
            start = _position(cur, flavor)
            for i, ts, ts6, dt6, y, bn in ROWS:
                cur.execute(f"INSERT INTO {db}.t VALUES (%s, %s, %s, %s, %s, UNHEX(%s))", (i, ts, ts6, dt6, y, bn))
            for i, wkt, srid in GEOMETRIES:
                cur.execute(f"INSERT INTO {db}.g VALUES (%s, ST_GeomFromText(%s, %s))", (i, wkt, srid))
            end = _position(cur, flavor)
            cur.execute(f"SELECT id, CAST(ts AS CHAR), CAST(ts6 AS CHAR), CAST(dt6 AS CHAR), y + 0, HEX(bn) "
                        f"FROM {db}.t ORDER BY id")
            held = [{"id": i, "ts": ts, "ts6": ts6, "dt6": dt6, "y": int(y),
                     "bn": "base64:" + base64.b64encode(bytes.fromhex(bn)).decode()}
                    for i, ts, ts6, dt6, y, bn in cur.fetchall()]
            stored = "ST_AsText(ST_SRID(g, 0))" if flavor == "mysql" else "ST_AsText(g)"
            cur.execute(f"SELECT id, ST_SRID(g), {stored} FROM {db}.g ORDER BY id")
            shapes = [{"id": i, "g": f"SRID={srid};{wkt}" if srid else wkt} for i, srid, wkt in cur.fetchall()]
            cur.execute("SHOW BINARY LOGS")
            names = [r[0] for r in cur.fetchall()]
        finally:
            cur.execute(f"DROP DATABASE {db}")
    return _range_copies(server.binlog_dir, names, start, end, tmp_path), held, shapes


@pytest.mark.parametrize("server", FLAVORS)
def test_values_are_the_servers_own(server, request, monkeypatch, tmp_path):
    flavor = server.removesuffix("_server")
    files, held, shapes = _write(request.getfixturevalue(server), flavor, tmp_path)
    fast, _ = decoded_alike(files, monkeypatch)
    got = {t: [r["after"] for r in fast["row_change"] if r["table"] == t] for t in ("t", "g")}
    assert got["t"] == held
    assert got["g"] == shapes
    # what the server showed, spelled out: the zero values, the padded BINARY, the SRID
    assert held[0] == {"id": 1, "ts": "0000-00-00 00:00:00", "ts6": "0000-00-00 00:00:00.000000",
                       "dt6": "0000-00-00 00:00:00.000000", "y": 0, "bn": "base64:" + "A" * 22 + "=="}
    assert shapes[1]["g"] == "GEOMETRYCOLLECTION EMPTY"
    # MySQL stores a geographic point longitude first (its WKT input is latitude first); MariaDB as given
    assert shapes[0]["g"] == ("SRID=4326;POINT(-45.25 12.5)" if flavor == "mysql" else "SRID=4326;POINT(12.5 -45.25)")


ADDRESSES = [  # (UUID, INET6, INET4): zeros at the end, IPv4-mapped and -compatible, runs of zero words
    ("123e4567-e89b-12d3-a456-426614174000", "::1", "10.0.0.1"),
    ("00000000-0000-0000-0000-000000000000", "::", "0.0.0.0"),
    ("6ccd780c-baba-1026-9564-5b8c656024db", "::ffff:192.0.2.128", "255.255.255.255"),
    ("ffffffff-ffff-ffff-ffff-ffffffffffff", "::192.0.2.128", "1.2.3.0"),
    ("01000000-0000-0000-0000-000000000000", "2001:db8::ff00:42:8329", "0.0.0.1"),
    ("00000000-0000-0000-0000-000000000001", "1:0:0:2:0:0:0:3", "127.0.0.1"),
    ("10000000-0000-0000-0000-000000000000", "1:0:2:3:4:5:6:7", "192.168.0.0"),
    ("abcdef01-2345-6789-abcd-ef0123456789", "fe80::", "8.8.8.8"),
    ("00000000-0000-0000-0000-0000000000ff", "::ffff:0.0.0.0", "100.64.0.0"),
]


def test_mariadb_uuid_and_inet_values_are_the_servers_text(mariadb_server, tmp_path):
    # The binlog logs them as the BINARY(n) of their bytes, zeros at the end left out: only the
    # schema history says what they are. Held to the server's own text of each (CAST AS CHAR).
    from tests.support.scanning import ndjson, run_cli

    db = f"inet_{uuid.uuid4().hex[:12]}"
    with mariadb_server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
        try:
            cur.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, u UUID, i6 INET6, i4 INET4)")
            done = run_cli("schema", "capture", "--source", f"mysql://root@127.0.0.1:{mariadb_server.port}",
                           "--out", str(tmp_path / "snapshot.json"))
            assert done.returncode == 0, done.stderr
            start = _position(cur, "mariadb")
            for i, row in enumerate(ADDRESSES):
                cur.execute(f"INSERT INTO {db}.t VALUES (%s, %s, %s, %s)", (i, *row))
            end = _position(cur, "mariadb")
            cur.execute(f"SELECT id, CAST(u AS CHAR), CAST(i6 AS CHAR), CAST(i4 AS CHAR) FROM {db}.t ORDER BY id")
            held = [{"id": i, "u": u, "i6": i6, "i4": i4} for i, u, i6, i4 in cur.fetchall()]
            cur.execute("SHOW BINARY LOGS")
            names = [r[0] for r in cur.fetchall()]
        finally:
            cur.execute(f"DROP DATABASE {db}")
    files = _range_copies(mariadb_server.binlog_dir, names, start, end, tmp_path)
    done = run_cli("scan", "--rows", "--anomalies", "--schema", str(tmp_path / "snapshot.json"), *map(str, files))
    assert done.returncode == 0, done.stderr
    records = ndjson(done.stdout)
    assert [r for r in records if r["record"] == "anomaly"] == []
    assert [r["after"] for r in records if r["record"] == "row_change"] == held
    assert held[2]["i6"] == "::ffff:192.0.2.128" and held[1]["u"] == "00000000-0000-0000-0000-000000000000"


# MariaDB COMPRESSED columns, (name, definition, the server's rendering of the value): `a` is created
# before the archive's first run (its snapshot names it), the range ALTERs it and creates `b` (the
# history replays both statements). A column may be named `compressed`.
COMPRESSED_A = [
    ("id", "INT PRIMARY KEY", "id"), ("vc", "VARCHAR(1000) COMPRESSED", "CONVERT(vc USING utf8mb4)"),
    ("vl", "VARCHAR(300) CHARACTER SET latin1 COMPRESSED", "CONVERT(vl USING utf8mb4)"),
    ("tx", "TEXT COMPRESSED", "CONVERT(tx USING utf8mb4)"), ("bl", "BLOB COMPRESSED", "HEX(bl)"),
    ("vb", "VARBINARY(1000) COMPRESSED=zlib", "HEX(vb)"),
    ("lt", "LONGTEXT CHARACTER SET utf16 COMPRESSED", "CONVERT(lt USING utf8mb4)"),
    ("pb", "BLOB", "HEX(pb)"), ("pv", "VARBINARY(10)", "HEX(pv)"),  # beside them, not compressed
]
COMPRESSED_ALTER = ("ALTER TABLE {db}.a ADD COLUMN tb TINYBLOB COMPRESSED AFTER vc, "
                    "ADD COLUMN `compressed` VARCHAR(20) CHARACTER SET cp1251 NOT NULL COMPRESSED DEFAULT 'ж'")
COMPRESSED_ADDED = [("tb", "HEX(tb)"), ("compressed", "CONVERT(`compressed` USING utf8mb4)")]
COMPRESSED_B = [
    ("id", "INT PRIMARY KEY", "id"), ("t", "TEXT CHARACTER SET utf16 COMPRESSED", "CONVERT(t USING utf8mb4)"),
    ("v", "VARBINARY(50) COMPRESSED", "HEX(v)"),
    ("s", "VARCHAR(100) COLLATE latin1_bin COMPRESSED NOT NULL", "CONVERT(s USING utf8mb4)"),
]
COMPRESSED_ROWS = {  # table -> its INSERT's rows (one long, one empty, one NULL value each)
    "a": "(1, REPEAT('ab ü', 300), REPEAT('é', 250), 'short', REPEAT(x'00ff', 400), x'0000', REPEAT('😀x', 100), "
         "'text', x'00'), (2, '', '', '', x'', x'', '', '', x''), (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    "b": "(1, REPEAT('中😀', 200), REPEAT(x'00', 50), REPEAT('ÿ', 90)), (2, '', x'', '')",
}


def _held(cur, table: str, columns: list[tuple[str, str]]) -> dict[int, dict]:
    """The server's rendering of each row of the table (HEX() of bytes as binlake's `base64:`)."""
    cur.execute(f"SELECT {', '.join(sql for _, sql in columns)} FROM {table} ORDER BY id")
    return {row[0]: {name: v if v is None or not sql.startswith("HEX(") else
                     "base64:" + base64.b64encode(bytes.fromhex(v)).decode()
                     for (name, sql), v in zip(columns, row, strict=True)} for row in cur.fetchall()}


@pytest.mark.parametrize("metadata", ["MINIMAL", "NO_LOG"])
def test_mariadb_compressed_columns_named_by_the_history_are_the_servers(metadata, mariadb_factory, monkeypatch,
                                                                       tmp_path):
    """binlog_row_metadata MINIMAL (charsets, no names) and NO_LOG (neither), on a server of the
    test's own: COMPRESSED columns, the binlog's own type codes, named and typed by the schema
    history that `binlake archive` records (a snapshot, advanced by the range's CREATE TABLE and
    ALTER TABLE with COMPRESSED columns), on both decoding paths: every image is the server's own
    rendering of the row (`CONVERT(… USING utf8mb4)`, `HEX()`), no anomaly."""
    from tests.support.scanning import ndjson, run_cli

    server = mariadb_factory(binlog_row_metadata=metadata)
    store = f"file://{tmp_path / 'store'}"
    archive = ["archive", "--source", f"mysql://root@127.0.0.1:{server.port}", "--store", store,
               "--source-name", "m1"]
    db = "cmp"
    a_cols = [(n, sql) for n, _, sql in COMPRESSED_A]
    b_cols = [(n, sql) for n, _, sql in COMPRESSED_B]
    want = []  # (table, op, before, after)
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db} CHARACTER SET utf8mb4")
        cur.execute(f"CREATE TABLE {db}.a ({', '.join(f'`{n}` {d}' for n, d, _ in COMPRESSED_A)})")
        cur.execute("FLUSH BINARY LOGS")
        done = run_cli(*archive)  # its snapshot names `a`; the range starts in the next file
        assert done.returncode == 0, done.stderr
        cur.execute(f"INSERT INTO {db}.a VALUES {COMPRESSED_ROWS['a']}")
        rows = _held(cur, f"{db}.a", a_cols)
        want += [("a", "insert", None, rows[i]) for i in sorted(rows)]
        cur.execute(COMPRESSED_ALTER.format(db=db))
        a_cols[2:2] = COMPRESSED_ADDED[:1]
        a_cols.append(COMPRESSED_ADDED[1])
        cur.execute(f"CREATE TABLE {db}.b ({', '.join(f'{n} {d}' for n, d, _ in COMPRESSED_B)})")
        cur.execute(f"INSERT INTO {db}.b VALUES {COMPRESSED_ROWS['b']}")
        held_b = _held(cur, f"{db}.b", b_cols)
        cur.execute(f"SELECT id, {', '.join(f'HEX({n})' for n, _ in b_cols[1:])} FROM {db}.b ORDER BY id")
        stored_b = {r[0]: [bytes.fromhex(h) for h in r[1:]] for r in cur.fetchall()}
        want += [("b", "insert", None, held_b[i]) for i in sorted(held_b)]
        before = _held(cur, f"{db}.a", a_cols)
        cur.execute(f"UPDATE {db}.a SET vc = 'x', tb = REPEAT(x'7f', 200), `compressed` = 'Жизнь' WHERE id = 1")
        after = _held(cur, f"{db}.a", a_cols)
        want.append(("a", "update", before[1], after[1]))
        cur.execute(f"DELETE FROM {db}.a WHERE id = 2")
        want.append(("a", "delete", after[2], None))
        cur.execute(f"UPDATE {db}.b SET t = CONCAT(t, 'ü'), s = '' WHERE id = 1")
        want.append(("b", "update", held_b[1], _held(cur, f"{db}.b", b_cols)[1]))
        cur.execute("FLUSH BINARY LOGS")
    done = run_cli(*archive)
    assert done.returncode == 0, done.stderr
    archived = sorted((tmp_path / "store" / "m1" / "binlogs").iterdir())
    assert want[0][3]["vb"] == "base64:AAA=" and want[-1][3]["s"] == ""  # the server's, spelt out
    for path in ("compiled", "reference"):
        if path == "reference":
            monkeypatch.setenv("BINLAKE_PURE_PYTHON", "1")
        done = run_cli("scan", "--rows", "--anomalies", "--store", store, "--source-name", "m1", *map(str, archived))
        assert done.returncode == 0, done.stderr
        records = ndjson(done.stdout)
        assert [r for r in records if r["record"] == "anomaly"] == [], path
        got = [(r["table"], r["op"], r["before"], r["after"]) for r in records if r["record"] == "row_change"]
        assert got == want, path
        # without a history: positional names; MINIMAL logs the charsets, so the same values; NO_LOG
        # does not, so the bytes the server stored (HEX()) as any string without charset metadata:
        # UTF-8 text when they decode, else base64
        done = run_cli("scan", "--rows", *map(str, archived))
        inserted = [r["after"] for r in ndjson(done.stdout) if r.get("table") == "b" and r["op"] == "insert"]
        if metadata == "MINIMAL":
            unnamed = [{f"col_{n + 1}": v for n, v in enumerate(held_b[i].values())} for i in sorted(held_b)]
        else:
            unnamed = [{"col_1": i, **{f"col_{n + 2}": _utf8_or_b64(b) for n, b in enumerate(stored_b[i])}}
                       for i in sorted(stored_b)]
        assert inserted == unnamed, path


def _utf8_or_b64(b: bytes) -> str:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(b).decode()
