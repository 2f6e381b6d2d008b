"""The compiled row decoder gives exactly the records of the pure-Python reference path.

Every file the tests know (the recorded real-server workloads of both flavors, the bundled
samples, the public corpus of many MySQL and MariaDB versions) is scanned twice in-process,
once with BINLAKE_PURE_PYTHON=1, and every record is compared, JSON types included. The random
rows of every column type written to the live servers are also held to what was written: each
image equals the row the test wrote and the row the server returned for it (SELECT). MySQL's
binary JSON is held to the reference on documents of every kind made here (tests.support.
json_binary, and each with bytes changed: the reference's value or a fall back, never another)
and on seeded documents written to a live server; GEOMETRY (EWKT) on geometries of every kind
(tests.support.wkb, changed the same way) and VECTOR on float32s of any bits, and both on a
live server's tables, which the compiled path takes whole; TIME2, negative ones included, on
MySQL's storage of every fsp and on any bytes, against mysql-replication's own reader.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import random
import struct
import uuid
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from pymysqlreplication import json_binary
from pymysqlreplication.constants import FIELD_TYPE
from pymysqlreplication.packet import BinLogPacketWrapper
from pymysqlreplication.row_event import RowsEvent

from binlake.binlog import _rowdecode, fastrows
from binlake.binlog import values as rows
from tests.support import json_binary as jb
from tests.support import wkb
from tests.support.scanning import (
    DATA,
    PUBLIC,
    REPO,
    headers,
    lines_path,
    lines_records,
    records_path,
    scan,
    scan_lines,
)
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


def logged(server, create: str, write: Callable, into: Path) -> list[Path]:
    """The binlog range write(cursor, db) logs on server, in a database of the test's own with the
    table `create` makes (`{db}` its name), as files binlake reads (_range_copies, in into)."""
    db = f"logged_{uuid.uuid4().hex[:12]}"
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
        try:
            cur.execute(create.format(db=db))
            start = _position(cur, server.flavor)
            write(cur, db)
            end = _position(cur, server.flavor)
            cur.execute("SHOW BINARY LOGS")
            names = [r[0] for r in cur.fetchall()]
        finally:
            cur.execute(f"DROP DATABASE {db}")
    return _range_copies(server.binlog_dir, names, start, end, into)


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
    """The records of files as `binlake scan --rows` prints them (the lane's lines, binlake.assemble.lane,
    read back), and how many rows events each path decoded and how many transactions the lane
    wrote; once the compiled and the reference paths are seen to give the same records, the
    printed lines those records, and the sink's lines (written straight from the images) orjson's
    lines of the reference."""
    fast, ref, used = _both(files, monkeypatch)
    assert ref["anomaly"] == [] and fast["anomaly"] == []
    for kind in ref:
        assert _typed(fast[kind]) == _typed(ref[kind]), kind
    printed, summary = scan_lines(files)
    laned = lines_records(printed)
    for kind in ("transaction", "row_change"):
        assert _typed(laned[kind]) == _typed(fast[kind]), kind
    lines = lines_path(files)
    with monkeypatch.context() as m:
        m.setenv("BINLAKE_PURE_PYTHON", "1")
        assert lines == records_path(files)
    return laned, {**used, "laned": summary.laned}


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
    # the compiled path took every statement (6 inserts, 100 updates, a delete: a rows event each at
    # the least), the edge rows' negative TIMEs included
    assert used["compiled"] >= 6 + 100 + 1 and used["reference"] == 0, used
    # and the lane (binlake.assemble.lane) wrote every transaction, statements that are not UTF-8 included
    assert used["laned"] == len(fast["transaction"]) > 100, used
    values = {k for r in fast["row_change"] if r["table"] == "plain" and r["after"] for k, v in r["after"].items()
              if v is not None}
    assert values == set(NAMES)


# -- MySQL's binary JSON ------------------------------------------------------------------------

JSON_PLAN = (("doc", _rowdecode.K_JSON, 4, 0, None),)
JSON_KEYS = fastrows.json_keys(JSON_PLAN)
JSON_DEPTH = 100  # MySQL's deepest document (JSON_DOCUMENT_MAX_DEPTH)
OPAQUE_TYPES = (1, 3, 8, 13, 15, 16, 252, 253, 254, 255)  # other MySQL types: "base64:type<n>:..."
TEMPORAL_TYPES = (7, 10, 11, 12, 14, 17, 18, 19)  # TIMESTAMP, DATE, TIME, DATETIME and their twins


def _reference_json(doc: bytes):
    """A JSON column's value as the reference path reads it (rows.CONVERSIONS, after the package's
    read_binary_json): an error is an exception."""
    return None if not doc else rows.CONVERSIONS[FIELD_TYPE.JSON](None, json_binary.parse_json(doc[0], doc[1:]))


def _compiled_one(plan: tuple, raw: bytes, length: int = 4) -> tuple[Any, bytes, bytes] | None:
    """An insert of one column (plan's, its value after `length` length bytes) holding raw,
    through the three compiled writers: the value decode() gives, the line render() writes and
    the after image columns() writes; None when any of them falls back (they must agree on that)."""
    body = b"\x00" + (len(raw).to_bytes(length, "little") if length else b"") + raw
    keys = fastrows.json_keys(plan)
    outs = []
    for call in (lambda: _rowdecode.decode(body, 0, plan, b"\x01", b"", 0),
                 lambda: _rowdecode.render(body, 0, plan, keys, b"\x01", b"", 0, b'{"seq":', 0,
                                           b',"before":', b"}\n"),
                 lambda: _rowdecode.columns(body, 0, plan, keys, b"\x01", b"", 0)):
        try:
            outs.append(call())
        except _rowdecode.Fallback:
            outs.append(None)
    assert (outs[0] is None) == (outs[1] is None) == (outs[2] is None), raw.hex()
    if outs[0] is None:
        return None
    (decoded,), (_, line), (_, _, (_, image)) = outs
    assert decoded[0] is None
    return decoded[1][plan[0][0]], line, image


def _compiled_json(doc: bytes) -> tuple[bytes, bytes, bytes] | None:
    """A JSON document through the three compiled writers (_compiled_one), its value as orjson's text."""
    got = _compiled_one(JSON_PLAN, doc)
    return None if got is None else (orjson.dumps(got[0]), got[1], got[2])


def _assert_json_alike(doc: bytes, fall_back: bool = False) -> None:
    """The compiled writers give the reference's value (or fall back: fall_back says which is due)."""
    try:
        want = _reference_json(doc)
    except Exception:  # noqa: BLE001 - the reference words its error: the compiled path must decline
        want = ValueError
    got = _compiled_json(doc)
    if fall_back or want is ValueError:
        assert got is None, doc.hex()
        return
    if got is None:
        return
    value, line, image = got
    assert value == orjson.dumps(want), doc.hex()
    assert line == orjson.dumps({"seq": 0, "before": None, "after": {"doc": want}}) + b"\n"
    assert image == orjson.dumps({"doc": want})


def _random_json(rnd: random.Random, depth: int = 0):
    """A value of every kind binary JSON holds, nested a few levels."""
    r = rnd.random()
    if depth < 5 and r < 0.2:
        keys = ["", "a", "b", "ab", "ä", "😀", "k\"\\\n", "long key " * 3, "Z", "\x00", "id", "aa"]
        return {rnd.choice(keys) + rnd.choice(["", str(rnd.randrange(50))]): _random_json(rnd, depth + 1)
                for _ in range(rnd.randint(0, 8))}
    if depth < 5 and r < 0.4:
        return [_random_json(rnd, depth + 1) for _ in range(rnd.randint(0, 8))]
    return rnd.choice([
        lambda: None, lambda: True, lambda: False,
        lambda: rnd.randint(-2**15, 2**15 - 1), lambda: rnd.randint(-2**31, 2**31 - 1),
        lambda: rnd.randint(-2**63, 2**63 - 1), lambda: jb.Unsigned(rnd.randrange(2**16)),
        lambda: jb.Unsigned(rnd.randrange(2**32)), lambda: jb.Unsigned(rnd.randrange(2**64)),
        lambda: rnd.choice([0.0, -0.0, 1.5, 0.1, 3.0, 1e16, 1e-7, -2.5e-300, 1.7976931348623157e308]),
        lambda: rnd.uniform(-1e9, 1e9), lambda: struct.unpack("<d", rnd.randbytes(8))[0] * 0 + rnd.random(),
        lambda: "".join(rnd.choices("abc xyzÄÖüé€😀中文'\"\\\n\t\x01\x1f\x7f/", k=rnd.randint(0, 30))),
        lambda: rnd.randbytes(rnd.randint(0, 12)),  # not always UTF-8: "base64:..."
        lambda: "x" * rnd.choice([127, 128, 16383, 16384]),  # the length's 1-, 2- and 3-byte forms
        lambda: _random_decimal(rnd),
        lambda: jb.temporal(rnd.choice((11, 19)), jb.packed_time(
            rnd.random() < 0.5, rnd.randrange(839), rnd.randrange(60), rnd.randrange(60), rnd.randrange(10**6))),
        lambda: jb.temporal(rnd.choice((7, 10, 12, 14, 17, 18)), jb.packed_datetime(
            rnd.randrange(10000), rnd.randrange(13), rnd.randrange(32), rnd.randrange(24), rnd.randrange(60),
            rnd.randrange(60), rnd.randrange(10**6))),
        lambda: jb.Opaque(rnd.choice(TEMPORAL_TYPES), rnd.randbytes(rnd.choice([8, 8, 3, 0, 9]))),
        lambda: jb.Opaque(rnd.choice(OPAQUE_TYPES), rnd.randbytes(rnd.randint(0, 20))),
    ])()


def _random_decimal(rnd: random.Random) -> jb.Opaque:
    precision = rnd.randint(1, 65)
    scale = rnd.randint(0, min(30, precision))
    digits = rnd.choice([0, 1, rnd.randint(0, precision)])
    value = Decimal(rnd.randrange(10 ** digits)).scaleb(-scale)
    return jb.decimal(str(-value if rnd.random() < 0.3 else value), precision, scale)


def test_json_documents_of_every_kind_as_the_reference_reads_them():
    rnd = random.Random(20261125)
    docs = [jb.document(_random_json(rnd), large=rnd.random() < 0.2) for _ in range(3000)]
    docs += [
        b"",  # an empty value: None
        jb.document({"big": "x" * 70_000, "n": [1, 2, jb.Unsigned(3)]}),  # past 64 KiB: the large form
        jb.document([{"k": i, "v": [i] * 3} for i in range(5000)]),
        jb.document(functools.reduce(lambda doc, _: [doc], range(JSON_DEPTH - 1), [])),  # as deep as MySQL's
        *(jb.document(v) for v in (None, True, False, 0, -1, jb.Unsigned(2**64 - 1), -2**63, 0.5, "", "ü")),
        *(jb.document(jb.decimal(t, p, s)) for t, p, s in (
            ("0.0000001", 7, 7), ("0.000001", 6, 6), ("-0.00", 3, 2), ("0", 1, 0), ("12.50", 4, 2),
            ("123456789012345678901234567890.123456789012345678901234567890", 65, 30), ("0.0000000", 10, 7))),
    ]
    for doc in docs:
        _assert_json_alike(doc)
    assert sum(_compiled_json(doc) is not None for doc in docs) == len(docs)  # none fell back
    # what MySQL never writes falls back: a document deeper than it allows, keys out of its order
    # or not UTF-8 (the reference would merge or base64 them)
    _assert_json_alike(jb.document(functools.reduce(lambda doc, _: [doc], range(JSON_DEPTH), [])), fall_back=True)
    unordered = bytearray(jb.document({"a": 1, "b": 2}))
    key_at = unordered.index(b"ab")
    unordered[key_at:key_at + 2] = b"ba"
    _assert_json_alike(bytes(unordered), fall_back=True)
    _assert_json_alike(jb.document({b"\xff": 1}), fall_back=True)
    # any byte changed: the reference's value or a fall back, never another value
    for bad in _corrupted(rnd, docs[:1500]):
        _assert_json_alike(bad)


def _corrupted(rnd: random.Random, values: list[bytes]):
    """Three variants of each value, each with a byte changed or cut there."""
    for value in values:
        for _ in range(3):
            bad = bytearray(value)
            if not bad:
                continue
            at = rnd.randrange(len(bad))
            if rnd.random() < 0.2:
                bad = bad[:at]
            else:
                bad[at] = rnd.randrange(256)
            yield bytes(bad)


JSON_SCALARS = ["null", "true", "false", "0", "-1", "32767", "-32768", "65535", "2147483647", "-2147483648",
                "4294967295", "9223372036854775807", "-9223372036854775808", "18446744073709551615", "0.5",
                "-0.0", "1e300", "3.0", '""', '"ü😀\\"\\\\\\n\\t\\u0001"']
JSON_OPAQUES = [  # SQL expressions MySQL keeps as opaque values (or unsigned integers) in a document
    "CAST({n} / 7 AS DECIMAL(30,10))", "CAST('-0.0000001' AS DECIMAL(20,10))", "CAST({n} AS DECIMAL(5,0))",
    "CAST('2026-01-{d:02d}' AS DATE)", "CAST('-{n}:02:03.5' AS TIME(1))", "CAST('12:00:00' AS TIME)",
    "CAST('2026-11-25 01:02:{d:02d}.123456' AS DATETIME(6))", "ts", "yr", "bt", "CAST(x'00ff{d:02x}' AS BINARY)",
    "CAST({n} AS UNSIGNED)", "CAST({n} * 100000 AS UNSIGNED)", "CAST(18446744073709551615 AS UNSIGNED)",
]


def _random_json_text(rnd: random.Random, depth: int = 0) -> str:
    """A JSON document's text of every kind the server parses into its binary form."""
    r = rnd.random()
    if depth < 4 and r < 0.25:
        keys = ["a", "b", "ab", "", "ä", "😀", "key", "a long key of some length", 'q"\\', "Z"]
        members = {rnd.choice(keys) + str(rnd.randrange(30)) * rnd.randint(0, 1): _random_json_text(rnd, depth + 1)
                   for _ in range(rnd.randint(0, 7))}
        return "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in members.items()) + "}"
    if depth < 4 and r < 0.45:
        return "[" + ",".join(_random_json_text(rnd, depth + 1) for _ in range(rnd.randint(0, 7))) + "]"
    if r < 0.6:
        return json.dumps(rnd.choice([rnd.randint(-2**63, 2**63 - 1), rnd.randint(-40000, 40000),
                                      rnd.uniform(-1e6, 1e6), rnd.random() * 10 ** rnd.randint(-20, 20)]))
    if r < 0.75:
        return json.dumps("".join(rnd.choices("abc xyzÄÖüé€😀中文'\"\\\n\t\x01/", k=rnd.randint(0, 40))),
                          ensure_ascii=rnd.random() < 0.5)
    return rnd.choice(JSON_SCALARS)


def _json_statements(rnd: random.Random, db: str) -> list[str]:
    """Seeded statements on {db}.j (id, doc JSON, doc2 JSON, ts, yr, bt): inserts of documents
    of every kind (text parsed by the server, and opaque values built in SQL), large and deep ones,
    full updates of both documents, deletes."""
    def opaque(i: int) -> str:
        return rnd.choice(JSON_OPAQUES).format(n=rnd.randrange(1, 800), d=rnd.randrange(1, 29))

    def literal(text: str) -> str:
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"

    out = []
    for i in range(1, 301):
        doc = literal(_random_json_text(rnd))
        if i % 3 == 0:  # opaque values inside an object, an array, or as the document
            doc = rnd.choice([f"JSON_OBJECT('o', {opaque(i)}, 'p', JSON_ARRAY({opaque(i)}, {opaque(i)}), "
                              f"'d', CAST({doc} AS JSON))", f"JSON_ARRAY({opaque(i)}, CAST({doc} AS JSON))",
                              f"CAST({opaque(i)} AS JSON)"])
        doc2 = "NULL" if i % 5 == 0 else literal(_random_json_text(rnd))
        out.append(f"INSERT INTO {db}.j VALUES ({i}, {doc}, {doc2}, "
                   f"'2026-11-25 10:{i % 60:02d}:00.{i:06d}', {1901 + i % 255}, {i % 256})")
    big = {"text": "x" * 70_000, "n": list(range(100))}  # past 64 KiB: large objects and arrays
    deep = '{"k":' * (JSON_DEPTH - 2) + '[1.5,"s"]' + "}" * (JSON_DEPTH - 2)  # as deep as MySQL allows
    out += [
        f"INSERT INTO {db}.j (id, doc) VALUES (1001, {literal(json.dumps(big))})",
        f"INSERT INTO {db}.j (id, doc) VALUES (1002, {literal(json.dumps(list(range(20_000))))})",
        f"INSERT INTO {db}.j (id, doc) VALUES (1003, '{'[' * JSON_DEPTH}{']' * JSON_DEPTH}')",
        f"INSERT INTO {db}.j (id, doc) VALUES (1004, JSON_OBJECT('deep', CAST('{deep}' AS JSON)))",
    ]
    for i in range(1, 301, 3):
        out.append(f"UPDATE {db}.j SET doc = {literal(_random_json_text(rnd))}, doc2 = JSON_ARRAY({opaque(i)}, doc) "
                   f"WHERE id = {i}")
    out.append(f"UPDATE {db}.j SET doc = JSON_SET(doc, '$.n[0]', 'first') WHERE id = 1001")
    out.append(f"DELETE FROM {db}.j WHERE id % 7 = 0 OR id > 1000")
    return out


JSON_PARTIAL = ["JSON_SET(doc, '$.a', 2)", "JSON_REPLACE(doc, '$.b[0]', 'x')", "JSON_REMOVE(doc, '$.b')"]


def test_same_records_for_json_documents_on_a_live_server(mysql_server, monkeypatch, tmp_path):
    """Seeded JSON documents of every kind written to a real MySQL server (scalars, small and large
    objects and arrays, deep ones, opaque DECIMAL/DATE/TIME/DATETIME/TIMESTAMP/YEAR/BIT/BINARY
    values, unsigned integers): the compiled decoder takes every rows event of the table but the
    partial JSON updates, and gives the reference's records and lines."""
    db = f"jsondocs_{uuid.uuid4().hex[:12]}"
    with mysql_server.connect() as conn, conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = 'STRICT_ALL_TABLES', time_zone = '+00:00'")
        cur.execute(f"CREATE DATABASE {db} CHARACTER SET utf8mb4")
        try:
            cur.execute(f"CREATE TABLE {db}.j (id INT PRIMARY KEY, doc JSON, doc2 JSON, ts TIMESTAMP(6) NULL, "
                        "yr YEAR, bt BIT(8))")
            start = _position(cur, "mysql")
            for sql in _json_statements(random.Random(20261125), db):
                cur.execute(sql)
            cur.execute(f"INSERT INTO {db}.j (id, doc) VALUES (2000, '{{\"a\": 1, \"b\": [1, 2, 3]}}')")
            cur.execute("SET SESSION binlog_row_value_options = 'PARTIAL_JSON'")
            for expr in JSON_PARTIAL:  # logged as diffs (PARTIAL_UPDATE_ROWS): the reference applies them
                cur.execute(f"UPDATE {db}.j SET doc = {expr} WHERE id = 2000")
            end = _position(cur, "mysql")
            cur.execute("SHOW BINARY LOGS")
            names = [r[0] for r in cur.fetchall()]
        finally:
            cur.execute(f"DROP DATABASE {db}")
    files = _range_copies(mysql_server.binlog_dir, names, start, end, tmp_path)
    fast, used = decoded_alike(files, monkeypatch)
    assert used["reference"] == len(JSON_PARTIAL) and used["compiled"] > 400, used
    docs = [r["after"]["doc"] for r in fast["row_change"] if r["after"]]
    assert {type(d) for d in docs} >= {dict, list, int, float, str, bool, type(None)}
    assert fast["row_change"][-1]["after"]["doc"] == {"a": 2}


# -- GEOMETRY and VECTOR ------------------------------------------------------------------------

GEOMETRY_PLAN = (("v", _rowdecode.K_GEOMETRY, 4, 0, None),)
VECTOR_PLAN = (("v", _rowdecode.K_VECTOR, 4, 0, None),)
COORDINATES = [0.0, -0.0, 1.0, -1.0, 0.5, -1.5, 0.1, 1e-7, 5e-324, -5e-324, 2.2250738585072014e-308,
               2.225073858507201e-308, 1.7976931348623157e308, -1.7976931348623157e308, 1e15 - 1, -(1e15 - 1),
               1e15, 999999999999999.9, 1e16, 123456789.123, 2.0 ** 53, 2.0 ** 63, -(2.0 ** 63), 1e22, 1e-300]


def _coordinate(rnd: random.Random) -> float:
    r = rnd.random()
    if r < 0.4:
        return rnd.choice(COORDINATES)
    if r < 0.7:
        return round(rnd.uniform(-1e6, 1e6), rnd.randint(0, 6))
    while True:  # any finite double (MySQL stores no NaN or infinity)
        x = struct.unpack("<d", rnd.randbytes(8))[0]
        if x - x == 0:
            return x


def _random_geometry(rnd: random.Random, kind: str | None = None, depth: int = 0) -> tuple[str, Any]:
    kind = kind or rnd.choice(list(wkb.KINDS) if depth < 3 else list(wkb.KINDS)[:6])
    empty = rnd.random() < 0.1

    def points(least: int) -> list[tuple[float, float]]:
        return [(_coordinate(rnd), _coordinate(rnd)) for _ in range(rnd.randint(least, 6))]

    if kind == "POINT":
        return kind, (_coordinate(rnd), _coordinate(rnd))
    if kind == "LINESTRING":
        return kind, [] if empty and depth == 0 else points(2)
    if kind == "POLYGON":
        return kind, [] if empty and depth == 0 else [points(4) for _ in range(rnd.randint(1, 3))]
    if kind == "GEOMETRYCOLLECTION":  # members of any kind, collections and empty ones among them
        return kind, [] if empty else [_random_geometry(rnd, None, depth + 1) for _ in range(rnd.randint(1, 4))]
    member = wkb.MEMBER[kind]  # a MULTI* of non-empty members (MySQL takes no empty one)
    return kind, [] if empty else [_random_geometry(rnd, member, depth + 1)[1] for _ in range(rnd.randint(1, 4))]


def _reference_geometry(stored: bytes):
    """A GEOMETRY column's value as the reference path gives it (rows.CONVERSIONS): an error is an exception."""
    return rows.CONVERSIONS[FIELD_TYPE.GEOMETRY](None, stored)


def _reference_vector(stored: bytes):
    """A VECTOR column's value as the reference path gives it (the package reads it as a BLOB)."""
    convert = rows.Converter([], frozenset({0}), frozenset(), {})  # the reference's own conversion
    return convert.value(0, SimpleNamespace(type=FIELD_TYPE.BLOB), stored)


def _assert_alike(plan: tuple, reference, raw: bytes, fall_back: bool = False) -> bool:
    """The compiled writers give the reference's value (its repr: -0.0 and NaN too) or fall back
    (fall_back says when that is due, as it is when the reference fails); whether they fell back."""
    try:
        want = reference(raw)
    except Exception:  # noqa: BLE001 - the reference words its error: the compiled path must decline
        fall_back = True
    got = _compiled_one(plan, raw)
    if fall_back or got is None:
        assert got is None or not fall_back, raw.hex()
        return True
    value, line, image = got
    assert repr(value) == repr(want), raw.hex()
    assert line == orjson.dumps({"seq": 0, "before": None, "after": {"v": want}}) + b"\n", raw.hex()
    assert image == orjson.dumps({"v": want}), raw.hex()
    return False


def test_geometries_of_every_kind_as_the_reference_writes_them():
    rnd = random.Random(20261125)
    values = [wkb.stored(rnd.choice([0, 4326, 3857, 2**32 - 1]), *_random_geometry(rnd)) for _ in range(3000)]
    values += [wkb.stored(srid, kind, value) for srid in (0, 4326, 3857) for kind, value in (
        ("POINT", (1.0, 2.0)), ("POINT", (-0.0, 5e-324)), ("POINT", (1.7976931348623157e308, -1e15)),
        ("LINESTRING", []), ("POLYGON", []), ("POLYGON", [[]]), ("MULTIPOINT", []), ("MULTILINESTRING", []),
        ("MULTIPOLYGON", []), ("GEOMETRYCOLLECTION", []), ("GEOMETRYCOLLECTION", [("GEOMETRYCOLLECTION", [])]),
        ("GEOMETRYCOLLECTION", [("POINT", (0.1, 0.2)), ("MULTIPOLYGON", [[[(0, 0), (1, 0), (1, 1), (0, 0)]]]),
                                ("GEOMETRYCOLLECTION", [("LINESTRING", [(1, 2), (3, 4)]), ("POLYGON", [])])]))]
    values += [b"", b"\x00\x00\x00\x00", b"\xe6\x10"]  # no more than an SRID: the reference's base64
    assert not any(_assert_alike(GEOMETRY_PLAN, _reference_geometry, v) for v in values)  # none fell back
    assert {_reference_geometry(wkb.stored(4326, "POINT", (-0.0, 1e16)))} == {"SRID=4326;POINT(-0 1e+16)"}
    # what MySQL never writes falls back: big-endian WKB, an unknown type, bytes past the geometry,
    # an empty member of a MULTI* (the reference fails), nesting deeper than 64
    point = wkb.stored(0, "POINT", (1.0, 2.0))
    nested = functools.reduce(lambda g, _: ("GEOMETRYCOLLECTION", [g]), range(65), ("POINT", (1.0, 2.0)))
    for bad in (b"\0\0\0\0\x00" + struct.pack(">Idd", 1, 1.0, 2.0), point[:5] + b"\x08" + point[6:],
                point + b"\0", wkb.stored(0, "MULTIPOLYGON", [[]]), wkb.stored(0, *nested)):
        _assert_alike(GEOMETRY_PLAN, _reference_geometry, bad, fall_back=True)
    # any byte changed or the value cut: the reference's value or a fall back, never another value
    for bad in _corrupted(rnd, values[:1500]):
        _assert_alike(GEOMETRY_PLAN, _reference_geometry, bad)


def test_vectors_as_the_reference_reads_them():
    rnd = random.Random(20261125)
    specials = [0.0, -0.0, 1.0, 0.1, 1e-45, -1e-45, 1.1754942e-38, 1.1754944e-38, 3.4028234e38, -3.4028234e38]
    values = [b"", b"\x00\x00\x80", struct.pack("<10f", *specials), struct.pack("<f", 1.5) + b"\x01\x02"]
    values += [rnd.randbytes(4 * rnd.randint(0, 300)) for _ in range(500)]  # any bits: NaN and infinity too
    values += [struct.pack(f"<{n}f", *(rnd.choice(specials) for _ in range(n))) for n in range(1, 40)]
    assert not any(_assert_alike(VECTOR_PLAN, _reference_vector, v) for v in values)  # none fell back


GEOMETRY_SQL = ["POINT(1 2)", "POINT(-0.5 1e-7)", "LINESTRING(0 0,-10.125 2.5,3 4)",
                "POLYGON((0 0,10 0,10 10,0 10,0 0),(1 1,2 1,2 2,1 1))", "MULTIPOINT((1 2),(3 4))",
                "MULTILINESTRING((0 0,1 1),(2 2,3 3))", "MULTIPOLYGON(((0 0,1 0,1 1,0 0)),((5 5,6 5,6 6,5 5)))",
                "GEOMETRYCOLLECTION(POINT(1 2),GEOMETRYCOLLECTION(POINT(3 4),GEOMETRYCOLLECTION EMPTY))",
                "GEOMETRYCOLLECTION EMPTY", "POINT(0.1 12345678.9)"]


@pytest.mark.parametrize("flavor", ["mysql", "mariadb"])
def test_geometry_and_vector_tables_take_the_compiled_path(flavor, request, monkeypatch, tmp_path):
    """GEOMETRY columns (and MySQL's VECTOR) written to a live server: the compiled decoder takes
    every rows event and gives the reference's records and lines."""
    vector = ", vec VECTOR(3)" if flavor == "mysql" else ""

    def write(cur, db: str) -> None:
        for i, text in enumerate(GEOMETRY_SQL):
            srid = (0, 4326, 3857)[i % 3]
            vec = f", STRING_TO_VECTOR('[{i}.5, -0, 1e-3]')" if vector else ""
            cur.execute(f"INSERT INTO {db}.g VALUES ({i}, ST_GeomFromText('{text}', {srid}), "
                        f"ST_GeomFromText('POINT({i} -{i}.25)'){vec})")
        cur.execute(f"UPDATE {db}.g SET g = ST_GeomFromText('LINESTRING(1 1,2 2)') WHERE id % 2 = 0")
        cur.execute(f"DELETE FROM {db}.g")

    files = logged(request.getfixturevalue(f"{flavor}_server"),
                   f"CREATE TABLE {{db}}.g (id INT PRIMARY KEY, g GEOMETRY, p POINT{vector})", write, tmp_path)
    fast, used = decoded_alike(files, monkeypatch)
    n = len(GEOMETRY_SQL) + 2  # statements, a transaction each: the lane wrote them all
    assert used == {"compiled": n, "reference": 0, "laned": n}, used
    texts = [r["after"]["g"] for r in fast["row_change"] if r["op"] == "insert"]
    assert texts[0] == "POINT(1 2)" and texts[1].startswith("SRID=4326;"), texts


# -- negative TIME2 -----------------------------------------------------------------------------


class _Packet:
    """The bytes of one value, read by the package's own big-endian readers."""

    read_int_be_by_size = BinLogPacketWrapper.read_int_be_by_size
    read_int24_be = BinLogPacketWrapper.read_int24_be

    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self, n: int) -> bytes:
        out, self.data = self.data[:n], self.data[n:]
        return out


class _Time2Reader:
    """mysql-replication's TIME2 reader (RowsEvent's, name-mangled) over one value's bytes."""

    # the package's private readers: the reference's very code, not a copy
    _RowsEvent__read_fsp = RowsEvent._RowsEvent__read_fsp  # noqa: SLF001
    _RowsEvent__read_binary_slice = RowsEvent._RowsEvent__read_binary_slice  # noqa: SLF001
    read_time2 = RowsEvent._RowsEvent__read_time2  # noqa: SLF001

    def __init__(self, data: bytes) -> None:
        self.packet = _Packet(data)


def _reference_time2(fsp: int, raw: bytes) -> str:
    col = SimpleNamespace(fsp=fsp)
    return rows.CONVERSIONS[FIELD_TYPE.TIME2](col, _Time2Reader(raw).read_time2(col))


def _mysql_time2(us: int, fsp: int) -> bytes:
    """A TIME(fsp) of us microseconds (signed) as MySQL stores it (my_time_packed: the whole
    packed value negated, its fraction borrowed)."""
    whole, frac = divmod(abs(us), 1_000_000)
    frac //= 10 ** (6 - fsp)
    n = (fsp + 1) // 2
    if fsp % 2:
        frac *= 10
    packed = (((whole // 3600) << 12 | (whole // 60 % 60) << 6 | whole % 60) << (8 * n)) + frac
    if us < 0:
        packed = -packed
    return (packed + (0x800000 << (8 * n))).to_bytes(3 + n, "big")


def test_times_negative_ones_too_as_the_reference_reads_them():
    rnd = random.Random(20261125)
    for fsp in range(7):
        plan = (("v", _rowdecode.K_TIME2, fsp, 0, None),)
        n = (fsp + 1) // 2
        values = [_mysql_time2(us, fsp) for us in (0, -1, 1, -1_000_000, -999_999, -1_000_001, -500_000, -10,
                                                   -838 * 3_600_000_000 - 59 * 60_000_000 - 59_000_000)]
        values += [_mysql_time2(rnd.randint(-839 * 3_600_000_000, 839 * 3_600_000_000), fsp) for _ in range(2000)]
        assert all(_compiled_one(plan, raw, length=0) for raw in values), fsp  # none falls back
        values += [rnd.randbytes(3 + n) for _ in range(1000)]  # any bytes: the reference's or a fall back
        for raw in values:
            got = _compiled_one(plan, raw, length=0)
            if got is None:
                continue
            want = _reference_time2(fsp, raw)
            assert got[0] == want, (fsp, raw.hex())
            assert got[1] == orjson.dumps({"seq": 0, "before": None, "after": {"v": want}}) + b"\n"
            assert got[2] == orjson.dumps({"v": want})
