"""The type matrix: every column type at its limits, on both real servers, each decoded value held
to the server's own rendering of what it stored, on both decoding paths.

For each case of tests/support/type_matrix.py a table `(id, v)` gets one row per value (a single
INSERT), then every row is deleted: each value is decoded twice, from an after and a before
image. The expectation of each row is the server's answer to the case's oracle (`CAST(v AS
CHAR)`, `HEX(v)`, `CONVERT(v USING utf8mb4)`, `ST_SRID(v)` and `ST_AsText`, `JSON_TYPE(v)`),
spelt as docs/row-values.md documents it by the case's form; binlake is never asked. The range
is scanned once by the compiled decoder and once with BINLAKE_PURE_PYTHON=1: both must give it.
Which columns an image holds (NULL against absent in MINIMAL and NOBLOB images) is held to the
server's own `mysqlbinlog -vv` / `mariadb-binlog -vv`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.support.scanning import lines_path, lines_records, records_path, scan, scan_lines
from tests.support.type_matrix import CASES, Case, b64, server_text, typed_document
from tests.test_rowdecode import _position, _range_copies, logged

SERVERS = ("mysql_server", "mariadb_server")  # as parameters, they mark each test with what it needs
PARAMS = [pytest.param(s, case, id=f"{s.removesuffix('_server')}-{case.name}")
          for s in SERVERS for case in CASES if s.removesuffix("_server") in case.flavors]


def _scan_both(files: list[Path]) -> tuple[dict[str, dict], int]:
    """The records of files by each decoding path, and how many transactions the lane wrote: the
    compiled path's are read back from what `binlake scan --rows` prints (the lane's lines, where
    it takes a transaction, binlake.assemble.lane)."""
    lines, summary = scan_lines(files)
    fast = lines_records(lines)
    saved = os.environ.get("BINLAKE_PURE_PYTHON")
    os.environ["BINLAKE_PURE_PYTHON"] = "1"
    try:
        return {"compiled": fast, "reference": scan(files)}, summary.laned
    finally:
        if saved is None:
            del os.environ["BINLAKE_PURE_PYTHON"]
        else:
            os.environ["BINLAKE_PURE_PYTHON"] = saved


class Matrix:
    """What one flavor's server stored for every case, and the binlog range that wrote it."""

    def __init__(self, server, flavor: str, into: Path) -> None:
        self.flavor = flavor
        self.errors: dict[str, str] = {}
        self.held: dict[str, list[dict]] = {}
        db = f"matrix_{uuid.uuid4().hex[:12]}"
        cases = [c for c in CASES if flavor in c.flavors]
        with server.connect() as conn, conn.cursor() as cur:
            # zero dates allowed (as on old servers), every time in UTC
            cur.execute("SET SESSION sql_mode = '', time_zone = '+00:00'")
            cur.execute(f"CREATE DATABASE {db} CHARACTER SET utf8mb4")
            try:
                for case in cases:
                    cur.execute(f"CREATE TABLE {db}.{case.name} (id INT PRIMARY KEY, v {case.sql_type})")
                start = _position(cur, flavor)
                for case in cases:
                    rows = ", ".join(f"({i}, {v})" for i, v in enumerate(case.values))
                    try:
                        cur.execute(f"INSERT INTO {db}.{case.name} VALUES {rows}")
                    except Exception as e:  # noqa: BLE001 - the case fails with it, the others run
                        self.errors[case.name] = f"the server took no row: {e}"
                        continue
                    cur.execute(f"SELECT id, {', '.join(case.oracle)} FROM {db}.{case.name} ORDER BY id")
                    self.held[case.name] = [
                        {"id": r[0], "v": None if r[1] is None else case.form(*map(server_text, r[1:]))}
                        for r in cur.fetchall()]
                    cur.execute(f"DELETE FROM {db}.{case.name}")
                end = _position(cur, flavor)
                cur.execute("SHOW BINARY LOGS")
                names = [r[0] for r in cur.fetchall()]
            finally:
                cur.execute(f"DROP DATABASE {db}")
        self.files = _range_copies(server.binlog_dir, names, start, end, into)
        self.records, self.laned = _scan_both(self.files)


@pytest.fixture(scope="module")
def matrix(request, tmp_path_factory):
    made: dict[str, Matrix] = {}

    def get(server: str) -> Matrix:
        if server not in made:
            flavor = server.removesuffix("_server")
            made[server] = Matrix(request.getfixturevalue(server), flavor, tmp_path_factory.mktemp(f"matrix-{flavor}"))
        return made[server]

    return get


def _json(v) -> str:
    """A value as JSON text: an integer and a float differ, -0.0 and 0.0 differ."""
    return json.dumps(v, ensure_ascii=False, sort_keys=True)


@pytest.mark.parametrize(("server", "case"), PARAMS)
def test_each_value_is_the_servers_own(server: str, case: Case, matrix):
    m = matrix(server)
    assert case.name not in m.errors, m.errors.get(case.name)
    held = m.held[case.name]
    assert len(held) == len(case.values)
    want = [_json(r) for r in held]
    for path, records in m.records.items():
        changes = [r for r in records["row_change"] if r["table"] == case.name]
        assert [r["op"] for r in changes] == ["insert"] * len(held) + ["delete"] * len(held), path
        for side in ("after", "before"):
            images = [r[side] for r in changes if r[side] is not None]
            got = [_json(r) for r in images]
            assert got == want, (f"{path} path, {side} images: " + "; ".join(
                f"{case.values[n]}: got {g}, server {w}" for n, (g, w) in enumerate(zip(got, want, strict=True))
                if g != w))


@pytest.mark.parametrize("server", SERVERS)
def test_both_paths_and_the_json_lines_agree(server: str, matrix, monkeypatch):
    m = matrix(server)
    for kind in ("transaction", "row_change", "anomaly"):
        assert [_json(r) for r in m.records["compiled"][kind]] == [_json(r) for r in m.records["reference"][kind]]
    assert m.records["compiled"]["anomaly"] == []
    # The lane wrote every transaction but those of tables the compiled decoder leaves to the
    # reference path (MariaDB's COMPRESSED columns: fastrows.REFERENCE_ONLY).
    reference_only = {c.name for c in CASES if "COMPRESSED" in c.sql_type.upper()}
    txns = m.records["compiled"]["transaction"]
    left = [t for t in txns if {name.split(".", 1)[1] for name in t["tables"]} & reference_only]
    assert m.laned == len(txns) - len(left) and m.laned > 0
    lines = lines_path(m.files)
    monkeypatch.setenv("BINLAKE_PURE_PYTHON", "1")
    assert lines == records_path(m.files)


# -- which columns an image holds: NULL against absent ----------------------------------------

IMAGE_COLUMNS = [  # name, definition: generated, invisible, and BLOB/TEXT columns NOBLOB leaves out
    ("id", "INT PRIMARY KEY"), ("a", "INT NULL"), ("s", "VARCHAR(10) NULL"), ("t", "TEXT NULL"),
    ("bl", "BLOB NULL"), ("gs", "INT AS (a + 1) STORED"), ("gv", "INT AS (a * 2) VIRTUAL"),
    ("inv", "INT NULL INVISIBLE"),
]
IMAGE_STATEMENTS = [  # (binlog_row_image, statement)
    ("FULL", "INSERT INTO {t} (id, a, s, t, bl, inv) VALUES (1, 1, 'x', 'text', 'ab', 5)"),
    ("FULL", "UPDATE {t} SET a = NULL, inv = NULL WHERE id = 1"),
    ("MINIMAL", "INSERT INTO {t} (id, s) VALUES (2, NULL)"),
    ("MINIMAL", "UPDATE {t} SET a = NULL, s = 'y' WHERE id = 1"),
    ("MINIMAL", "UPDATE {t} SET t = 'u', a = 4 WHERE id = 2"),
    ("MINIMAL", "DELETE FROM {t} WHERE id = 2"),
    ("NOBLOB", "INSERT INTO {t} (id, a, t) VALUES (3, 7, NULL)"),
    ("NOBLOB", "UPDATE {t} SET a = 8 WHERE id = 3"),
    ("NOBLOB", "UPDATE {t} SET bl = 'cd' WHERE id = 3"),
    ("NOBLOB", "DELETE FROM {t} WHERE id = 3"),
    ("FULL", "DELETE FROM {t} WHERE id = 1"),
]
_EVENT = re.compile(r"^### (INSERT INTO|UPDATE|DELETE FROM) ")
_COLUMN = re.compile(r"^###   @(\d+)=(.*?)(?: /\* .* \*/)?$")


def server_images(text: str, columns: list[tuple[str, str]]) -> list[tuple[str, dict | None, dict | None]]:
    """The row changes `mysqlbinlog -vv` / `mariadb-binlog -vv` prints: (op, before, after), each
    image the columns it shows, @n named by the table's n-th column; a value as binlake documents
    it: NULL null, an integer the number, a quoted text the string (a BLOB's `base64:` of it)."""
    out: list[list] = []
    image: dict | None = None
    for line in text.splitlines():
        m = _EVENT.match(line)
        if m:
            out.append([{"INSERT INTO": "insert", "UPDATE": "update", "DELETE FROM": "delete"}[m[1]], None, None])
        elif line in ("### WHERE", "### SET"):
            image = {}
            out[-1][1 if line == "### WHERE" else 2] = image
        elif (m := _COLUMN.match(line)) and image is not None:
            name, sql = columns[int(m[1]) - 1]
            raw = m[2]
            if raw == "NULL":
                image[name] = None
            elif raw.startswith("'"):
                text_value = raw[1:-1]
                image[name] = b64(text_value.encode().hex()) if sql.startswith("BLOB") else text_value
            else:
                image[name] = int(raw)
    return [(op, before, after) for op, before, after in out]


def _logged(server, create: str, write, into: Path) -> tuple[list[Path], str]:
    """A database of the test's own with the table `create` makes (`{db}` its name), and what
    write(cursor, db) logs: the binlog range (copies in `into`) and the server's own reading of it
    (`mysqlbinlog -vv` / `mariadb-binlog -vv`)."""
    files = logged(server, create, write, into)
    shown = subprocess.run([*server.mysqlbinlog, "-vv", "--base64-output=DECODE-ROWS", *map(str, files)],
                           capture_output=True, text=True, check=True).stdout
    return files, shown


@pytest.mark.parametrize("server", SERVERS)
def test_null_and_absent_are_the_servers_own(server: str, request, tmp_path):
    """FULL, MINIMAL and NOBLOB images (binlog_row_image is a session setting: no global change),
    with stored and virtual generated columns and an invisible one: every image holds the columns
    the server's own binlog reader shows, with its values; a column it leaves out is absent."""
    def write(cur, db: str) -> None:
        for image, statement in IMAGE_STATEMENTS:
            cur.execute(f"SET SESSION binlog_row_image = '{image}'")
            cur.execute(statement.format(t=f"{db}.t"))

    columns = ", ".join(f"{n} {d}" for n, d in IMAGE_COLUMNS)
    files, shown = _logged(request.getfixturevalue(server), f"CREATE TABLE {{db}}.t ({columns})", write, tmp_path)
    want = server_images(shown, IMAGE_COLUMNS)
    assert len(want) == 11
    for path, records in _scan_both(files)[0].items():
        got = [(r["op"], r["before"], r["after"]) for r in records["row_change"]]
        assert [_json(g) for g in got] == [_json(w) for w in want], path


# -- partial JSON updates ----------------------------------------------------------------------

PARTIAL_UPDATES = [  # each logged as a diff (binlog_row_value_options=PARTIAL_JSON): every operation
    "JSON_SET(doc, '$.a', 2)",  # replace a member
    "JSON_SET(doc, '$.new', 'v')",  # insert a member
    "JSON_REPLACE(doc, '$.arr[1]', JSON_OBJECT('x', 1))",  # replace an element
    "JSON_REMOVE(doc, '$.arr[0]')",  # remove an element
    "JSON_REMOVE(doc, '$.obj.k')",  # remove a nested member
    "JSON_SET(doc, '$.arr[9]', 'appended')",  # insert past an array's end: appended
    "JSON_SET(doc, '$.\"a b\".c', true)",  # a quoted key
    "JSON_SET(doc, '$.s', 'ü😀', '$.a', 3, '$.n', NULL)",  # several in one
    "JSON_SET(doc, '$.d', CAST('2026-01-02' AS DATE), '$.t', CAST('-01:02:03.5' AS TIME))",  # opaque values
    "JSON_REPLACE(doc, '$.deep[0][0]', JSON_ARRAY(1, 2))",
    "JSON_SET(doc, '$.a', 3), x = 1",  # the document unchanged: an empty diff, another column changed
]


def test_partial_json_updates_are_the_servers_documents(mysql_server, tmp_path):
    """Every partial update, applied to the before image's document, gives the document the
    server holds after it (`CAST(doc AS CHAR)`); that each was logged as a diff, and of every
    operation, the server's `mysqlbinlog -vv` shows (`@2=JSON_REPLACE(@2, …)` and so on)."""
    held = []

    def write(cur, db: str) -> None:
        doc = {"a": 1, "arr": [1, 2, 3], "obj": {"k": 1, "l": 2}, "a b": {}, "s": "x", "n": 0, "deep": [[0]]}
        cur.execute(f"INSERT INTO {db}.t (id, doc) VALUES (1, %s)", (json.dumps(doc),))
        cur.execute("SET SESSION binlog_row_value_options = 'PARTIAL_JSON', binlog_row_image = 'FULL'")
        for update in PARTIAL_UPDATES:
            cur.execute(f"UPDATE {db}.t SET doc = {update} WHERE id = 1")
            cur.execute(f"SELECT CAST(doc AS CHAR) FROM {db}.t WHERE id = 1")
            held.append(json.loads(cur.fetchone()[0]))

    files, shown = _logged(mysql_server, "CREATE TABLE {db}.t (id INT PRIMARY KEY, doc JSON, x INT)", write, tmp_path)
    # each diff's operation as mysqlbinlog names it; `@2=@2` the empty diff of an unchanged document
    diffs = re.findall(r"^###   @2=(JSON_\w+(?=\(@2)|@2(?= ))", shown, re.M)
    assert len(diffs) == len(PARTIAL_UPDATES)
    assert set(diffs) == {"JSON_REPLACE", "JSON_INSERT", "JSON_ARRAY_INSERT", "JSON_REMOVE", "@2"}
    for path, records in _scan_both(files)[0].items():
        got = [r["after"]["doc"] for r in records["row_change"]][1:]  # the insert is before the updates
        assert [_json(g) for g in got] == [_json(h) for h in held], path
        assert [r["before"]["doc"] for r in records["row_change"][2:]] == got[:-1], path


# -- DECIMALs inside JSON documents --------------------------------------------------------------

def _dec(text: str, ps: str = "65,30") -> str:
    return f"CAST('{text}' AS DECIMAL({ps}))"


_D65_30 = "9" * 35 + "." + "9" * 30
_TINY = "0." + "0" * 29 + "1"
_LIMITS = (_dec(_D65_30), _dec("-" + _D65_30), _dec("0"), _dec("-0.0"), _dec(_TINY), _dec("-" + _TINY))


def _nested(depth: int) -> str:
    """The largest DECIMAL(65,30) at the bottom of `depth` levels, objects and arrays in turn."""
    expr = _dec("-" + _D65_30)
    for i in range(depth):
        expr = f"JSON_OBJECT('k{i}', {expr}, 'n', {i})" if i % 2 else f"JSON_ARRAY({i}, {expr})"
    return expr


NESTED_DECIMALS = [  # documents with opaque DECIMALs in objects and arrays, at several depths
    "JSON_OBJECT('max', {}, 'min', {}, 'zero', {}, 'negzero', {}, 'tiny', {}, 'ntiny', {})".format(*_LIMITS),
    "JSON_ARRAY({}, {}, {}, {}, {}, {})".format(*_LIMITS),
    f"JSON_OBJECT('a', JSON_ARRAY(1, JSON_OBJECT('b', JSON_ARRAY({_dec('-12.5')}, 2.5e0, {_dec('2.5', '2,1')}))))",
    _nested(3), _nested(30),
    # other precisions and scales beside integers and doubles of the same digits
    f"JSON_ARRAY({_dec('0.0000001', '10,7')}, {_dec('-0', '10,2')}, {_dec('15', '2,0')}, {_dec('-9.9', '2,1')}, "
    f"{_dec('-0.000001', '20,6')}, {_dec('123456789012345678901234567890', '30,0')}, 15, 1.5e0, -0.0e0)",
    # a large document (4-byte offsets) holding them
    f"JSON_OBJECT('pad', REPEAT('x', 70000), 'd', JSON_ARRAY({_LIMITS[1]}, JSON_OBJECT('t', {_LIMITS[4]})))",
]


def test_decimals_inside_json_documents_are_the_servers_text(mysql_server, tmp_path):
    """An opaque DECIMAL inside a document, in objects and arrays, 30 levels down, in a large
    document, at DECIMAL(65,30)'s limits, negative and negative zero: each the digits the server's
    JSON text (`CAST(v AS CHAR)`) writes at its place, a string (JSON_TYPE at its path says it is a
    DECIMAL), on both paths, from the insert's after image and the delete's before image."""
    held = []

    def write(cur, db: str) -> None:
        for i, doc in enumerate(NESTED_DECIMALS):
            cur.execute(f"INSERT INTO {db}.t VALUES ({i}, {doc})")
        cur.execute(f"SELECT id, CAST(v AS CHAR) FROM {db}.t ORDER BY id")
        held.extend({"id": i, "v": typed_document(cur, f"{db}.t", i, text)} for i, text in cur.fetchall())
        cur.execute(f"DELETE FROM {db}.t")

    files, _ = _logged(mysql_server, "CREATE TABLE {db}.t (id INT PRIMARY KEY, v JSON)", write, tmp_path)
    assert len(held) == len(NESTED_DECIMALS)
    # the server's own spelling of the limits, 30 decimals each (JSON_OBJECT sorts its keys)
    assert held[0]["v"]["max"] == _D65_30 and held[0]["v"]["zero"] == "0." + "0" * 30
    assert held[1]["v"][5] == "-" + _TINY
    for path, records in _scan_both(files)[0].items():
        changes = records["row_change"]
        assert [r["op"] for r in changes] == ["insert"] * len(held) + ["delete"] * len(held), path
        for side in ("after", "before"):
            got = [_json(r[side]) for r in changes if r[side] is not None]
            assert got == [_json(h) for h in held], f"{path} path, {side} images"


# -- partial JSON updates without a before image: every diff, as the server logged it ------------

PARTIAL_CHAINS = [  # each statement logs several diffs of the one column (binlog_row_image=MINIMAL)
    "JSON_SET(v, '$.a', 2, '$.s', 'it''s \"q\" \\\\ ü😀', '$.new', 3)",  # several paths: replaced, inserted
    "JSON_REMOVE(JSON_REPLACE(v, '$.a', JSON_OBJECT('k', JSON_ARRAY(1, 'x', NULL, true))), '$.new', '$.arr[0]')",
    "JSON_REPLACE(JSON_SET(v, '$.q', 'a'), '$.obj.k', 'b', '$.n', NULL)",
    "JSON_SET(JSON_REMOVE(v, '$.q'), '$.arr[9]', 7, '$.arr[9]', 8)",  # appended: logged as array inserts
    "JSON_SET(v, '$.arr[1]', CAST(CAST('-0.000000000000000000000000000001' AS DECIMAL(65,30)) AS JSON), "
    "'$.e', 1e300, '$.f', -2.5e0, '$.g', CAST(CAST(-0.0 AS DECIMAL(3,1)) AS JSON))",  # DECIMALs, doubles
    "JSON_SET(v, '$.obj.l', NULL, '$.\"a b\".c', false, '$.deep[0][0]', JSON_ARRAY(1, 2))",  # a quoted key
    "JSON_REMOVE(JSON_SET(JSON_REPLACE(v, '$.a', 5), '$.z', 'last'), '$.obj', '$.deep[0]')",  # three operations
]
_OPS = {"JSON_REPLACE": "Replace", "JSON_INSERT": "Insert", "JSON_ARRAY_INSERT": "Insert", "JSON_REMOVE": "Remove"}
_TOKEN = re.compile(r"\s*(?:(?P<call>JSON_\w+)\(|CAST\('(?P<json>(?:[^'\\]|\\.)*)' AS JSON\)|(?P<column>@2)|"
                    r"(?P<close>\))|(?P<comma>,)|'(?P<text>(?:[^'\\]|\\.)*)'|(?P<bare>[^\s,()]+))")


def _unquote(text: str) -> str:
    """A string as mysqlbinlog quotes it: `\\'`, `\\\\` and `\\xNN` escapes."""
    out = bytearray()
    for m in re.finditer(rb"\\x([0-9a-fA-F]{2})|\\(.)|(.)", text.encode(), re.S):
        out += bytes.fromhex(m[1].decode()) if m[1] else (m[2] or m[3])
    return out.decode()


def _at(doc, path: str):
    """The value at a JSON path (`$.a[1]."b c"`) of a document."""
    for key, index in re.findall(r'\.("(?:[^"\\]|\\.)*"|[^.\[]+)|\[(\d+)\]', path[1:]):
        doc = doc[int(index)] if index else doc[json.loads(key) if key.startswith('"') else key]
    return doc


def server_diffs(text: str, after) -> list[dict]:
    """The diffs `mysqlbinlog -vv` shows for a partial update (`JSON_REMOVE(JSON_REPLACE(@2, '$.a',
    2), '$.z')`: the innermost first), as binlake documents them: the operation, the path, the
    value (a string as quoted, `CAST('…' AS JSON)` its JSON text, true, false, null, an integer);
    a number with a fraction, which mysqlbinlog writes alike for a DOUBLE and a DECIMAL, is the
    one at its path in the document the server held after the statement (`after`, typed by
    typed_document)."""
    tokens = [(m.lastgroup, m[m.lastgroup]) for m in _TOKEN.finditer(text.strip())]
    pos = 0

    def value(kind: str, v: str, path: str):
        if kind == "text":
            return _unquote(v)
        if kind == "json":
            return json.loads(_unquote(v))
        if v in ("null", "true", "false"):
            return json.loads(v)
        return int(v) if re.fullmatch(r"-?\d+", v) else _at(after, path)

    def expr() -> list[dict]:
        nonlocal pos
        kind, v = tokens[pos]
        pos += 1
        if kind == "column":
            return []
        assert kind == "call", tokens[pos - 1]
        diffs = expr()
        while tokens[pos][0] == "comma":
            path = _unquote(tokens[pos + 1][1])
            if v == "JSON_REMOVE":
                diffs.append({"op": "Remove", "path": path, "value": None})
                pos += 2
            else:
                diffs.append({"op": _OPS[v], "path": path, "value": value(*tokens[pos + 3], path)})
                pos += 4
        assert tokens[pos][0] == "close", tokens[pos]
        pos += 1
        return diffs

    diffs = expr()
    assert pos == len(tokens), tokens[pos:]
    return diffs


def test_partial_json_updates_without_a_before_image_keep_every_diff(mysql_server, tmp_path):
    """binlog_row_image=MINIMAL with PARTIAL_JSON (both session settings): the before image has
    only the key, so the document's value is `{"$partial": [...]}`, every diff the statement
    logged, in the order they apply, each with the operation, path and value the server's own
    `mysqlbinlog -vv` shows for it, on both decoding paths."""
    after = []

    def write(cur, db: str) -> None:
        doc = {"a": 1, "arr": [1, 2, 3], "obj": {"k": 1, "l": 2}, "a b": {}, "s": "x", "n": 0, "deep": [[0]],
               "pad": "p" * 4000}  # large enough that the server logs diffs rather than the document
        cur.execute(f"INSERT INTO {db}.t VALUES (1, %s)", (json.dumps(doc),))
        cur.execute("SET SESSION binlog_row_value_options = 'PARTIAL_JSON', binlog_row_image = 'MINIMAL'")
        for update in PARTIAL_CHAINS:
            cur.execute(f"UPDATE {db}.t SET v = {update} WHERE id = 1")
            cur.execute(f"SELECT CAST(v AS CHAR) FROM {db}.t WHERE id = 1")
            after.append(typed_document(cur, f"{db}.t", 1, cur.fetchone()[0]))

    files, shown = _logged(mysql_server, "CREATE TABLE {db}.t (id INT PRIMARY KEY, v JSON)", write, tmp_path)
    # each update's @2, its lines joined, up to mysqlbinlog's type comment
    logged = [re.sub(r"\n###\s+", " ", m) for m in
              re.findall(r"^###   @2=(.*?) /\* JSON meta", shown, re.M | re.S)][1:]  # [0]: the insert's
    assert len(logged) == len(PARTIAL_CHAINS)
    want = [{"$partial": server_diffs(text, doc)} for text, doc in zip(logged, after, strict=True)]
    assert all(len(w["$partial"]) > 1 for w in want)  # each logged as several diffs, not a document
    assert {d["op"] for w in want for d in w["$partial"]} == {"Replace", "Insert", "Remove"}
    assert "JSON_ARRAY_INSERT" in shown and "JSON_INSERT" in shown
    assert want[4]["$partial"][0]["value"] == "-0.000000000000000000000000000001"  # JSON_TYPE: a DECIMAL
    for path, records in _scan_both(files)[0].items():
        updates = [r for r in records["row_change"] if r["op"] == "update"]
        assert [r["before"] for r in updates] == [{"id": 1}] * len(PARTIAL_CHAINS), path
        assert [_json(r["after"]["v"]) for r in updates] == [_json(w) for w in want], path
