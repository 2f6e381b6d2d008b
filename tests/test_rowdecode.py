"""The compiled row decoder gives exactly the records of the pure-Python reference path.

Every file the tests know (the recorded real-server workloads of both flavors, the bundled
samples, the public corpus of many MySQL and MariaDB versions) is scanned twice in-process,
once with BINLAKE_PURE_PYTHON=1, and every record is compared, JSON types included. The random
rows of every column type written to the live servers are also held to the server itself: each
image equals the row as the server returned it (SELECT) before and after each statement.
"""

from __future__ import annotations

import base64
import json

import pytest

from binlake.binlog import fastrows
from tests.support.scanning import DATA, PUBLIC, REPO, lines_path, records_path, scan
from tests.test_public_fixtures import READABLE

SAMPLES = REPO / "binlake" / "samples"
FILES = {
    "tests/data/mysql": sorted(DATA.glob("mysql/binlog.0*")),
    "tests/data/mariadb": sorted(DATA.glob("mariadb/binlog.0*")),
    "samples/mysql-9.7": sorted(SAMPLES.glob("mysql-9.7/binlog.0*")),
    "samples/mariadb-10.11": sorted(SAMPLES.glob("mariadb-10.11/binlog.0*")),
}


def _typed(records: list[dict]) -> list[str]:
    return [json.dumps(r, ensure_ascii=False, sort_keys=True) for r in records]


def _both(paths, monkeypatch) -> tuple[dict, dict, dict]:
    before = dict(fastrows.counts)
    fast = scan(paths)
    used = {k: fastrows.counts[k] - before[k] for k in before}
    with monkeypatch.context() as m:
        m.setenv("BINLAKE_PURE_PYTHON", "1")
        ref = scan(paths)
    return fast, ref, used


def test_the_compiled_decoder_is_built():
    # the README's install builds it (gcc and the Python headers are on every supported machine)
    assert fastrows.enabled(), "binlake.binlog._rowdecode is missing: pip install -e . did not compile it"


@pytest.mark.parametrize("name", sorted(FILES))
def test_same_records_on_real_server_files(name, monkeypatch):
    fast, ref, used = _both(FILES[name], monkeypatch)
    assert len(fast["row_change"]) > 100
    for kind in ref:
        assert _typed(fast[kind]) == _typed(ref[kind]), kind
    # most rows events of these workloads are of ordinary tables: the compiled path took them
    assert used["compiled"] > 3 * used["reference"], used


@pytest.mark.parametrize("name", sorted(READABLE))
def test_same_records_on_the_public_corpus(name, monkeypatch):
    path = PUBLIC / name
    if not path.exists():
        pytest.fail(f"missing from the public corpus: {path}")
    fast, ref, _ = _both([path], monkeypatch)
    for kind in ref:
        assert _typed(fast[kind]) == _typed(ref[kind]), kind


COLUMNS = """id INT PRIMARY KEY, ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
f FLOAT, d DOUBLE, dec1 DECIMAL(10,2), dec2 DECIMAL(65,30), dec3 DECIMAL(5,0), dec4 DECIMAL(4,4),
c CHAR(10), vc VARCHAR(300), vl VARCHAR(20) CHARACTER SET latin1, vb VARBINARY(50), bn BINARY(4),
t TEXT, b BLOB, mt MEDIUMTEXT, dt0 DATETIME, dt3 DATETIME(3), dt6 DATETIME(6), ts TIMESTAMP(2) NULL,
tm TIME(1), tm0 TIME, tm5 TIME(5), da DATE, y YEAR, e ENUM('a','b','c'), s SET('x','y','z'), bt BIT(10),
bt1 BIT(1), bt64 BIT(64)"""
NAMES = [line.split()[0] for line in COLUMNS.replace("\n", " ").split(", ") if line.strip()]
TYPES = {line.split()[0]: line.split()[1] for line in COLUMNS.replace("\n", " ").split(", ") if line.strip()}


def _server_form(name: str, v):
    """A value as the server returns it (PyMySQL's Python value of the column's SELECT), in
    binlake's mapping of docs/row-values.md: the oracle the decoded images are held to."""
    sql = TYPES[name]
    fsp = int(sql[sql.index("(") + 1:-1]) if "(" in sql and sql.startswith(("DATETIME", "TIMESTAMP", "TIME")) else 0
    if v is None or isinstance(v, str) and sql.startswith(("DATE", "TIME")):
        return v  # NULL; a zero date PyMySQL leaves as the server's text ("0000-00-00")
    if sql.startswith(("DATETIME", "TIMESTAMP")):
        text = f"{v.year:04d}-{v.month:02d}-{v.day:02d} {v.hour:02d}:{v.minute:02d}:{v.second:02d}"
        return f"{text}.{v.microsecond:06d}"[:20 + fsp] if fsp else text
    if sql.startswith("TIME"):
        us = (v.days * 86400 + v.seconds) * 1_000_000 + v.microseconds
        s, frac = divmod(abs(us), 1_000_000)
        text = f"{'-' if us < 0 else ''}{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"
        return f"{text}.{frac:06d}"[:len(text) + 1 + fsp] if fsp else text
    if sql == "DATE":
        return f"{v.year:04d}-{v.month:02d}-{v.day:02d}"
    if sql.startswith("DECIMAL"):
        return str(v)  # PyMySQL's Decimal of the server's text: exactly the scale's digits
    if sql.startswith("BINARY"):
        # binlake gives BINARY(n) without the zero bytes the server pads it with (issue 22 changes that)
        return "base64:" + base64.b64encode(v.rstrip(b"\0")).decode()
    if sql.startswith(("VARBINARY", "BLOB")):
        return "base64:" + base64.b64encode(v).decode()
    if sql.startswith("BIT"):
        return int.from_bytes(v, "big")
    if sql.startswith("SET"):
        return [m for m in ("x", "y", "z") if m in v]  # definition order
    if sql == "YEAR" and v == 0:
        return 1900  # binlake gives YEAR 0 as 1900 today (issue 22 changes that)
    return v


def _server_rows(cur, table: str, where: str = "") -> dict[int, dict]:
    """Rows of a table as the server returns them, in binlake's mapping, by id."""
    cols = ", ".join("f+0e0" if n == "f" else n for n in NAMES)  # FLOAT as its exact float32 value
    cur.execute(f"SELECT {cols} FROM rowtypes.{table} {where}")
    return {r[0]: {n: _server_form(n, v) for n, v in zip(NAMES, r, strict=True)} for r in cur.fetchall()}


def _row(rnd, i: int, edges: bool) -> list:
    def maybe(v):
        return None if rnd.random() < 0.1 else v

    def digits(n):
        return "".join(rnd.choices("0123456789", k=n)) or "0"

    text = "".join(rnd.choices("abc xyzÄÖüé€😀中文'\"\\\n", k=rnd.randint(0, 40)))
    year = rnd.randint(1, 999) if edges else rnd.randint(1000, 9999)
    time_sign = "-" if edges and rnd.random() < 0.5 else ""
    return [i, *(maybe(v) for v in [
        rnd.randint(-128, 127), rnd.randint(0, 255), rnd.randint(-32768, 32767), rnd.randint(0, 65535),
        rnd.randint(-2**23, 2**23 - 1), rnd.randint(0, 2**24 - 1), rnd.randint(-2**31, 2**31 - 1),
        rnd.randint(0, 2**32 - 1), rnd.randint(-2**63, 2**63 - 1), rnd.randint(0, 2**64 - 1),
        rnd.uniform(-1e6, 1e6), rnd.uniform(-1e300, 1e300) if rnd.random() < 0.5 else rnd.random(),
        f"{rnd.choice('-+')}{digits(rnd.randint(0, 8))}.{digits(2)}",
        f"{rnd.choice('-+')}{digits(rnd.randint(0, 35))}.{digits(30)}",
        f"{rnd.choice('-+')}{digits(rnd.randint(0, 5))}", f"{rnd.choice('-+')}0.{digits(4)}",
        text[:10], text * rnd.randint(0, 7), "".join(rnd.choices("abcäöüéß ", k=rnd.randint(0, 20))),
        rnd.randbytes(rnd.randint(0, 50)), rnd.randbytes(rnd.randint(0, 4)),
        text * rnd.randint(0, 30), rnd.randbytes(rnd.randint(0, 3000)), text * rnd.randint(0, 100),
        f"{year:04d}-{rnd.randint(1, 12):02d}-{rnd.randint(1, 28):02d} {rnd.randint(0, 23):02d}:"
        f"{rnd.randint(0, 59):02d}:{rnd.randint(0, 59):02d}",
        f"2026-02-{rnd.randint(1, 28):02d} 01:02:03.{digits(3)}", f"1999-12-31 23:59:59.{digits(6)}",
        f"20{rnd.randint(0, 37):02d}-06-15 12:34:56.{digits(2)}",
        f"{time_sign}{rnd.randint(0, 838):02d}:{rnd.randint(0, 59):02d}:{rnd.randint(0, 59):02d}.{digits(1)}",
        f"{rnd.randint(0, 23):02d}:00:01", f"{time_sign}00:00:{rnd.randint(0, 59):02d}.{digits(5)}",
        rnd.choice(["0000-00-00", f"{year:04d}-01-31", "2024-02-29"]) if edges else
        f"{rnd.randint(1000, 9999)}-{rnd.randint(1, 12):02d}-{rnd.randint(1, 28):02d}",
        rnd.choice([0, 1901, 2155, 2026]) if edges else rnd.randint(1901, 2155),
        rnd.choice("abc"), ",".join(rnd.sample("xyz", rnd.randint(0, 3))), rnd.randint(0, 1023),
        rnd.randint(0, 1), rnd.randint(0, 2**64 - 1)])]


@pytest.mark.parametrize("flavor", ["mysql", "mariadb"])
def test_same_records_for_every_column_type_on_a_live_server(flavor, request, monkeypatch):
    import random

    server = request.getfixturevalue(f"{flavor}_server")
    rnd = random.Random(20261122)
    stored: list[tuple[str, str, dict | None, dict | None]] = []  # (table, op, before, after) as the server has them
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = '', time_zone = '+00:00'")
        cur.execute("DROP DATABASE IF EXISTS rowtypes")
        cur.execute("CREATE DATABASE rowtypes CHARACTER SET utf8mb4")
        for table in ("plain", "edges"):
            cur.execute(f"CREATE TABLE rowtypes.{table} ({COLUMNS})")
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("SHOW BINARY LOGS")
        first = [r[0] for r in cur.fetchall()][-1]
        marks = ",".join(["%s"] * len(NAMES))
        for table, edges in (("plain", False), ("edges", True)):
            for batch in range(6):
                rows = [_row(rnd, batch * 50 + k, edges) for k in range(50)]
                cur.executemany(f"INSERT INTO rowtypes.{table} VALUES ({marks})", rows)
                conn.commit()
                new = _server_rows(cur, table, f"WHERE id >= {batch * 50} AND id < {batch * 50 + 50}")
                stored += [(table, "insert", None, new[k]) for k in sorted(new)]
            for k in range(0, 300, 3):
                new = _row(rnd, k, edges)[1:]
                before = _server_rows(cur, table, f"WHERE id = {k}")[k]
                cur.execute(f"UPDATE rowtypes.{table} SET {', '.join(n + ' = %s' for n in NAMES[1:])} WHERE id = %s",
                            [*new, k])
                stored.append((table, "update", before, _server_rows(cur, table, f"WHERE id = {k}")[k]))
            gone = _server_rows(cur, table, "WHERE id % 7 = 0")
            cur.execute(f"DELETE FROM rowtypes.{table} WHERE id % 7 = 0")
            stored += [(table, "delete", gone[k], None) for k in sorted(gone)]
            conn.commit()
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("SHOW BINARY LOGS")
        names = [r[0] for r in cur.fetchall()]
    files = [server.binlog_dir / n for n in names[names.index(first):-1]]
    fast, ref, used = _both(files, monkeypatch)
    # and as `scan --rows` writes them, straight from the images: orjson's lines of the reference
    lines = lines_path(files)
    with monkeypatch.context() as m:
        m.setenv("BINLAKE_PURE_PYTHON", "1")
        assert lines == records_path(files)
    tables = {}
    for r in ref["row_change"]:
        tables[(r["table"], r["op"])] = tables.get((r["table"], r["op"]), 0) + 1
    assert tables == {("plain", "insert"): 300, ("plain", "update"): 100, ("plain", "delete"): 43,
                      ("edges", "insert"): 300, ("edges", "update"): 100, ("edges", "delete"): 43}
    assert ref["anomaly"] == [] and fast["anomaly"] == []
    for kind in ref:
        assert _typed(fast[kind]) == _typed(ref[kind]), kind
    # every image is what the server held before and after each statement, value for value
    got = [(r["table"], r["op"], r["before"], r["after"]) for r in fast["row_change"]]
    assert len(got) == len(stored)
    for n, (g, want) in enumerate(zip(got, stored, strict=True)):
        assert g == want, f"row change {n} {g[:2]}: " + ", ".join(
            f"{k} {side[k]!r}, the server's {w[k]!r}" for side, w in zip(g[2:], want[2:], strict=True) if side
            for k in side if side[k] != w[k])
    # the plain table's events all took the compiled path; some edge rows need the reference
    assert used["compiled"] >= 2 + 100 + 1 and used["reference"] >= 1, used
    values = {k for r in fast["row_change"] if r["table"] == "plain" and r["after"] for k, v in r["after"].items()
              if v is not None}
    assert values == set(NAMES)
