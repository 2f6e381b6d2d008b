"""The compiled row decoder gives exactly the records of the pure-Python reference path.

Every file the tests know (the recorded real-server workloads of both flavors, the bundled
samples, the public corpus of many MySQL and MariaDB versions) is scanned twice in-process,
once with BINLAKE_PURE_PYTHON=1, and every record is compared, JSON types included. The random
rows of every column type written to the live servers are also held to what was written: each
image equals the row the test wrote and the row the server returned for it (SELECT).
"""

from __future__ import annotations

import datetime as dt
import json
import random
import uuid
from decimal import Decimal
from pathlib import Path

import pytest

from binlake.binlog import fastrows
from tests.support.scanning import DATA, PUBLIC, REPO, headers, lines_path, records_path, scan
from tests.support.workload import binlake_value, from_pymysql, sql_arg
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


COLUMNS = [  # name, SQL type: every type the compiled decoder knows, at several sizes and fsps
    ("id", "INT PRIMARY KEY"), ("ti", "TINYINT"), ("tiu", "TINYINT UNSIGNED"), ("si", "SMALLINT"),
    ("siu", "SMALLINT UNSIGNED"), ("mi", "MEDIUMINT"), ("miu", "MEDIUMINT UNSIGNED"), ("i", "INT"),
    ("iu", "INT UNSIGNED"), ("bi", "BIGINT"), ("biu", "BIGINT UNSIGNED"), ("f", "FLOAT"), ("d", "DOUBLE"),
    ("dec1", "DECIMAL(10,2)"), ("dec2", "DECIMAL(65,30)"), ("dec3", "DECIMAL(5,0)"), ("dec4", "DECIMAL(4,4)"),
    ("c", "CHAR(10)"), ("vc", "VARCHAR(300)"), ("vl", "VARCHAR(20) CHARACTER SET latin1"),
    ("vb", "VARBINARY(50)"), ("bn", "BINARY(4)"), ("t", "TEXT"), ("b", "BLOB"), ("mt", "MEDIUMTEXT"),
    ("dt0", "DATETIME"), ("dt3", "DATETIME(3)"), ("dt6", "DATETIME(6)"), ("ts", "TIMESTAMP(2) NULL"),
    ("tm", "TIME(1)"), ("tm0", "TIME"), ("tm5", "TIME(5)"), ("da", "DATE"), ("y", "YEAR"),
    ("e", "ENUM('a','b','c')"), ("s", "SET('x','y','z')"), ("bt", "BIT(10)"), ("bt1", "BIT(1)"), ("bt64", "BIT(64)"),
]
NAMES = [n for n, _ in COLUMNS]
TIME_MAX_S = 838 * 3600 + 59 * 60 + 59  # TIME's range is ±838:59:59 (MySQL manual, "The TIME Type")


def _row(rnd, i: int, edges: bool) -> dict:
    """A random row in the native forms of tests.support.workload, every value one the column holds
    exactly (fractions of at most its fsp digits, numbers within its range): what is inserted is
    what is stored. `edges`: years before 1000, the zero date, YEAR 0, negative TIMEs."""
    def maybe(v):
        return None if rnd.random() < 0.1 else v

    def decimal(p: int, s: int) -> Decimal:
        return Decimal(rnd.choice((-1, 1)) * rnd.randrange(10 ** rnd.randint(s, p))).scaleb(-s)

    def sign() -> int:
        return -1 if edges and rnd.random() < 0.5 else 1

    text = "".join(rnd.choices("abc xyzÄÖüé€😀中文'\"\\\n", k=rnd.randint(0, 40)))
    year = rnd.randint(1, 999) if edges else rnd.randint(1000, 9999)
    return {"id": i, **{n: maybe(v) for n, v in zip(NAMES[1:], [
        rnd.randint(-128, 127), rnd.randint(0, 255), rnd.randint(-32768, 32767), rnd.randint(0, 65535),
        rnd.randint(-2**23, 2**23 - 1), rnd.randint(0, 2**24 - 1), rnd.randint(-2**31, 2**31 - 1),
        rnd.randint(0, 2**32 - 1), rnd.randint(-2**63, 2**63 - 1), rnd.randint(0, 2**64 - 1),
        rnd.uniform(-1e6, 1e6), rnd.uniform(-1e300, 1e300) if rnd.random() < 0.5 else rnd.random(),
        decimal(10, 2), decimal(65, 30), decimal(5, 0), decimal(4, 4),
        text[:10], text * rnd.randint(0, 7), "".join(rnd.choices("abcäöüéß ", k=rnd.randint(0, 20))),
        rnd.randbytes(rnd.randint(0, 50)), rnd.randbytes(rnd.randint(0, 4)),
        text * rnd.randint(0, 30), rnd.randbytes(rnd.randint(0, 3000)), text * rnd.randint(0, 100),
        dt.datetime(year, rnd.randint(1, 12), rnd.randint(1, 28), rnd.randint(0, 23), rnd.randint(0, 59),
                    rnd.randint(0, 59)),
        dt.datetime(2026, 2, rnd.randint(1, 28), 1, 2, 3, rnd.randrange(1000) * 1000),
        dt.datetime(1999, 12, 31, 23, 59, 59, rnd.randrange(1_000_000)),
        dt.datetime(2000 + rnd.randint(0, 37), 6, 15, 12, 34, 56, rnd.randrange(100) * 10_000),
        sign() * rnd.randrange(TIME_MAX_S * 10) * 100_000,
        (rnd.randint(0, 23) * 3600 + 1) * 1_000_000,
        sign() * rnd.randrange(60 * 100_000) * 10,
        rnd.choice(["0000-00-00", dt.date(year, 1, 31), dt.date(2024, 2, 29)]) if edges else
        dt.date(rnd.randint(1000, 9999), rnd.randint(1, 12), rnd.randint(1, 28)),
        rnd.choice([0, 1901, 2155, 2026]) if edges else rnd.randint(1901, 2155),
        rnd.choice("abc"), rnd.sample("xyz", rnd.randint(0, 3)), rnd.randint(0, 1023),
        rnd.randint(0, 1), rnd.randint(0, 2**64 - 1)], strict=True)}}


def _position(cur, flavor: str) -> tuple[str, int]:
    """Where the server's binlog ends now: file and offset."""
    cur.execute("SHOW BINARY LOG STATUS" if flavor == "mysql" else "SHOW BINLOG STATUS")
    file, pos = cur.fetchone()[:2]
    return file, int(pos)


def _range_copies(binlog_dir: Path, names: list[str], start: tuple[str, int], end: tuple[str, int],
                  into: Path) -> list[Path]:
    """The bytes a server wrote between two positions, as binlog files binlake reads: each file's
    part of the range behind the file's own magic and FORMAT_DESCRIPTION (offsets shift, nothing
    else does). Nothing written before or after the range is read."""
    out = []
    for name in names[names.index(start[0]):names.index(end[0]) + 1]:
        data = (binlog_dir / name).read_bytes()
        (pos, _, size), *_ = headers(data)
        lo = start[1] if name == start[0] else pos + size
        hi = end[1] if name == end[0] else len(data)
        out.append(into / name)
        out[-1].write_bytes(data[:pos + size] + data[lo:hi])
    return out


def _write(cur, db: str, flavor: str) -> tuple[list[tuple], list[tuple]]:
    """Insert 300 random rows into each table, update every third, delete every seventh: the row
    changes (table, op, before, after) as the test wrote them, in binlake's forms
    (tests.support.workload.binlake_value), and as the server returned them around each statement."""
    rnd = random.Random(20261122)
    wrote: list[tuple] = []
    held: list[tuple] = []

    def mapped(row: dict) -> dict:
        return {n: binlake_value(t, row[n], flavor) for n, t in COLUMNS}

    def select(table: str, where: str) -> dict[int, dict]:
        cols = ", ".join("f+0e0" if n == "f" else n for n in NAMES)  # FLOAT as its exact float32 value
        cur.execute(f"SELECT {cols} FROM {db}.{table} WHERE {where} ORDER BY id")
        return {r[0]: {n: from_pymysql(t, v, flavor) for (n, t), v in zip(COLUMNS, r, strict=True)}
                for r in cur.fetchall()}

    def args(row: dict) -> list:
        return [sql_arg(t, row[n])[1] for n, t in COLUMNS]

    for table, edges in (("plain", False), ("edges", True)):
        live: dict[int, dict] = {}
        for batch in range(6):
            rows = [_row(rnd, batch * 50 + k, edges) for k in range(50)]
            cur.executemany(f"INSERT INTO {db}.{table} VALUES ({','.join(['%s'] * len(NAMES))})",
                            [args(r) for r in rows])
            live |= {r["id"]: r for r in rows}
            new = select(table, f"id >= {batch * 50} AND id < {batch * 50 + 50}")
            wrote += [(table, "insert", None, mapped(r)) for r in rows]
            held += [(table, "insert", None, new[k]) for k in sorted(new)]
        for k in range(0, 300, 3):
            row = _row(rnd, k, edges)
            before = select(table, f"id = {k}")[k]
            cur.execute(f"UPDATE {db}.{table} SET {', '.join(n + ' = %s' for n in NAMES[1:])} WHERE id = %s",
                        [*args(row)[1:], k])
            wrote.append((table, "update", mapped(live[k]), mapped(row)))
            held.append((table, "update", before, select(table, f"id = {k}")[k]))
            live[k] = row
        gone = select(table, "id % 7 = 0")
        cur.execute(f"DELETE FROM {db}.{table} WHERE id % 7 = 0")
        wrote += [(table, "delete", mapped(live[k]), None) for k in sorted(live) if k % 7 == 0]
        held += [(table, "delete", gone[k], None) for k in sorted(gone)]
    return wrote, held


def written_range(server, flavor: str, into: Path) -> tuple[list[Path], list[tuple], list[tuple]]:
    """_write's rows in a database of the test's own, on tables of every type of COLUMNS: the binlog
    range its statements wrote (copies in `into`), and the row changes as written and as held."""
    db = f"rowtypes_{uuid.uuid4().hex[:12]}"
    with server.connect() as conn, conn.cursor() as cur:
        # strict: a value the column cannot hold exactly is an error, never stored changed
        cur.execute("SET SESSION sql_mode = 'STRICT_ALL_TABLES', time_zone = '+00:00'")
        cur.execute(f"CREATE DATABASE {db} CHARACTER SET utf8mb4")
        try:
            for table in ("plain", "edges"):
                cur.execute(f"CREATE TABLE {db}.{table} ({', '.join(f'{n} {t}' for n, t in COLUMNS)})")
            start = _position(cur, flavor)
            wrote, held = _write(cur, db, flavor)
            end = _position(cur, flavor)
            cur.execute("SHOW BINARY LOGS")
            names = [r[0] for r in cur.fetchall()]
        finally:
            cur.execute(f"DROP DATABASE {db}")
    return _range_copies(server.binlog_dir, names, start, end, into), wrote, held


def decoded_alike(files: list[Path], monkeypatch) -> tuple[dict, dict]:
    """The records of files and how many rows events each path decoded, once the compiled and the
    reference paths are seen to give the same records, and `scan --rows`'s lines (written
    straight from the images) orjson's lines of the reference."""
    fast, ref, used = _both(files, monkeypatch)
    assert ref["anomaly"] == [] and fast["anomaly"] == []
    for kind in ref:
        assert _typed(fast[kind]) == _typed(ref[kind]), kind
    lines = lines_path(files)
    with monkeypatch.context() as m:
        m.setenv("BINLAKE_PURE_PYTHON", "1")
        assert lines == records_path(files)
    return fast, used


def assert_images(row_changes: list[dict], sources: dict[str, list[tuple]]) -> None:
    """Every image is, value for value, the one each source gives: (table, op, before, after)."""
    got = [(r["table"], r["op"], r["before"], r["after"]) for r in row_changes]
    for source, want in sources.items():
        assert len(got) == len(want), source
        for n, (g, w) in enumerate(zip(got, want, strict=True)):
            assert g == w, f"row change {n} {g[:2]}: " + ", ".join(
                f"{k} {side[k]!r}, {source} {other[k]!r}" for side, other in zip(g[2:], w[2:], strict=True)
                if side for k in side if side[k] != other[k])


@pytest.mark.parametrize("flavor", ["mysql", "mariadb"])
def test_same_records_for_every_column_type_on_a_live_server(flavor, request, monkeypatch, tmp_path):
    """1,200 random rows of every column type written to a real server: each decoded image is the
    row the test wrote and the row the server returned for it (SELECT), before and after each
    statement; the compiled and the reference paths give the same records.

    The test writes to a database of its own and reads only the binlog range its statements wrote
    (the server's positions before and after them), so what other tests did on the server is no
    input."""
    files, wrote, held = written_range(request.getfixturevalue(f"{flavor}_server"), flavor, tmp_path)
    fast, used = decoded_alike(files, monkeypatch)
    assert_images(fast["row_change"], {"the test wrote": wrote, "the server held": held})
    # the compiled path took the plain table's statements (6 inserts, 100 updates, a delete: a rows
    # event each at the least); some edge rows' events (negative TIMEs) need the reference
    assert used["compiled"] >= 6 + 100 + 1 and used["reference"] >= 1, used
    values = {k for r in fast["row_change"] if r["table"] == "plain" and r["after"] for k, v in r["after"].items()
              if v is not None}
    assert values == set(NAMES)
