"""Every column type in a snapshot, held to the server's own rendering of what it stored.

For each case of tests/support/type_matrix.py (every type at its limits; the oracle is the
server's answer to `CAST(v AS CHAR)`, `HEX(v)`, `CONVERT(v USING utf8mb4)`, `ST_SRID`/`ST_AsText`,
`JSON_TYPE`, spelt as docs/row-values.md documents it by the case's form, and test_type_matrix
holds the row images' values to the same) a table `(id, v)` keeps one row per value, and
`binlake snapshot` of the database must give exactly those rows. Beside the matrix, what a
snapshot reads otherwise than a row image: ZEROFILL (the server pads its text), generated and
invisible columns, and MySQL JSON documents holding one number's text both as a DECIMAL and as
another number: typed path by path in a table with a key, flagged without one.
"""

from __future__ import annotations

import json
import uuid

import pytest

from tests.support.snapshots import baseline, take
from tests.support.type_matrix import CASES, server_text, typed_document

SERVERS = ("mysql_server", "mariadb_server")
PARAMS = [pytest.param(s, case.name, id=f"{s.removesuffix('_server')}-{case.name}")
          for s in SERVERS for case in CASES if s.removesuffix("_server") in case.flavors]

EXTRAS = ("CREATE TABLE {db}.extras (id INT PRIMARY KEY, zi INT(6) ZEROFILL, zd DECIMAL(8,2) ZEROFILL, "
          "zf FLOAT ZEROFILL, a INT, gs INT AS (a + 1) STORED, gv INT AS (a * 2) VIRTUAL, inv INT INVISIBLE, "
          "c CHAR(4))")
EXTRA_ROWS = ("(1, 42, 12.5, 1.5, 7, DEFAULT, DEFAULT, 3, 'ab  ')", "(2, NULL, NULL, NULL, NULL, DEFAULT, DEFAULT, "
              "NULL, NULL)", "(3, 0, 0, 0.1, -1, DEFAULT, DEFAULT, -5, '')")
# the server's own value of each column: its number without ZEROFILL's padding, the stored float32
EXTRAS_ORACLE = ("id, zi + 0, CAST(zd + 0 AS CHAR), CAST(zf * 1e0 AS CHAR), a, gs, gv, inv, c")
# MySQL documents holding a number's text as a DECIMAL and as an INTEGER or a DOUBLE
COLLIDING = [
    "JSON_OBJECT('a', CAST(15 AS DECIMAL(2,0)), 'b', 15, 'c', JSON_ARRAY(CAST(2.5 AS DECIMAL(3,1)), 2.5e0))",
    "JSON_ARRAY(CAST(1.5 AS DECIMAL(2,1)), JSON_OBJECT('x', 1.5e0, 'y', JSON_ARRAY(CAST(1.5 AS DECIMAL(2,1)))))",
]
PLAIN = "JSON_OBJECT('d', CAST(2.50 AS DECIMAL(3,2)), 'n', 3, 'f', 0.5e0)"  # no text both: exact from its text


class Held:
    """One flavor's database: every case's table and the extras, the server's rendering of each
    row, and a snapshot of the database."""

    def __init__(self, server, flavor: str, store: str) -> None:
        self.db = f"snapvalues_{uuid.uuid4().hex[:10]}"
        self.rows: dict[str, list[dict]] = {}
        self.errors: dict[str, str] = {}
        with server.connect() as conn, conn.cursor() as cur:
            cur.execute("SET SESSION sql_mode = '', time_zone = '+00:00'")
            cur.execute(f"CREATE DATABASE {self.db} CHARACTER SET utf8mb4")
            for case in (c for c in CASES if flavor in c.flavors):
                cur.execute(f"CREATE TABLE {self.db}.{case.name} (id INT PRIMARY KEY, v {case.sql_type})")
                try:
                    cur.execute(f"INSERT INTO {self.db}.{case.name} VALUES "
                                + ", ".join(f"({i}, {v})" for i, v in enumerate(case.values)))
                except Exception as e:  # noqa: BLE001 - the case fails with it, the others run
                    self.errors[case.name] = f"the server took no row: {e}"
                    continue
                cur.execute(f"SELECT id, {', '.join(case.oracle)} FROM {self.db}.{case.name} ORDER BY id")
                self.rows[case.name] = [{"id": r[0], "v": None if r[1] is None else case.form(*map(server_text, r[1:]))}
                                        for r in cur.fetchall()]
            cur.execute(EXTRAS.format(db=self.db))
            cur.execute(f"INSERT INTO {self.db}.extras (id, zi, zd, zf, a, gs, gv, inv, c) VALUES "
                        + ", ".join(EXTRA_ROWS))
            cur.execute(f"SELECT {EXTRAS_ORACLE} FROM {self.db}.extras ORDER BY id")
            names = ("id", "zi", "zd", "zf", "a", "gs", "gv", "inv", "c")
            self.rows["extras"] = [
                {n: float(v) if n == "zf" and v is not None else server_text(v) for n, v in zip(names, r, strict=True)}
                for r in cur.fetchall()]
            if flavor == "mysql":
                self._json(cur)
        self.name = f"values-{flavor}"
        self.result = take(server, store, self.name, [f"{self.db}.{t}" for t in self.rows])
        self.record, got = baseline(store, self.name, self.result.id)
        self.got = {t: rows for (db, t), rows in got.items()}

    def _json(self, cur) -> None:
        for table, key in (("jkey", "PRIMARY KEY"), ("jnokey", "")):
            cur.execute(f"CREATE TABLE {self.db}.{table} (id INT {key}, v JSON)")
            for i, doc in enumerate([*COLLIDING, PLAIN]):
                cur.execute(f"INSERT INTO {self.db}.{table} VALUES ({i}, {doc})")
            cur.execute(f"SELECT id, CAST(v AS CHAR) FROM {self.db}.{table} ORDER BY id")
            # each number typed by the server's JSON_TYPE at its path
            self.rows[table] = [{"id": i, "v": typed_document(cur, f"{self.db}.{table}", i, text), "text": text}
                                for i, text in cur.fetchall()]


def _json(v) -> str:
    """A value as JSON text: an integer and a float differ, -0.0 and 0.0 differ."""
    return json.dumps(v, ensure_ascii=False, sort_keys=True)


@pytest.fixture(scope="module")
def held(request, tmp_path_factory):
    made: dict[str, Held] = {}

    def get(server: str) -> Held:
        if server not in made:
            flavor = server.removesuffix("_server")
            store = f"file://{tmp_path_factory.mktemp(f'snapvalues-{flavor}')}"
            made[server] = Held(request.getfixturevalue(server), flavor, store)
        return made[server]

    return get


@pytest.mark.parametrize(("server", "case"), PARAMS)
def test_each_value_is_the_servers_own(server: str, case: str, held):
    h = held(server)
    assert case not in h.errors, h.errors.get(case)
    want, got = h.rows[case], h.got[case]
    assert len(got) == len(want)  # every row the server holds, in key order
    assert [_json(g) for g in got] == [_json(w) for w in want], "; ".join(
        f"id {w['id']}: got {_json(g)}, server {_json(w)}" for g, w in zip(got, want, strict=True) if g != w)


@pytest.mark.parametrize("server", SERVERS)
def test_zerofill_generated_and_invisible_columns(server: str, held):
    h = held(server)
    assert h.got["extras"] == h.rows["extras"]
    # ZEROFILL's padding is the server's text only ('000042', '000012.50'), never the value's
    assert h.got["extras"][0]["zi"] == 42 and h.got["extras"][0]["zd"] == "12.50"
    assert h.got["extras"][0]["c"] == "ab"  # a CHAR without its trailing spaces, as SELECT shows it


def test_json_numbers_of_one_text_are_typed_by_path(held):
    """With a key, a document holding `15` as a DECIMAL and as an INTEGER is typed path by path
    (the server's JSON_TYPE at each number is the oracle); without a key the colliding documents
    are flagged with the server's text and listed by the chunk, the others exact."""
    h = held("mysql_server")
    assert [_json(r) for r in h.got["jkey"]] == [_json({"id": w["id"], "v": w["v"]}) for w in h.rows["jkey"]]
    assert h.got["jkey"][0]["v"]["a"] == "15" and h.got["jkey"][0]["v"]["b"] == 15
    nokey = sorted(h.got["jnokey"], key=lambda r: r["id"])
    for got, want in zip(nokey[:len(COLLIDING)], h.rows["jnokey"], strict=False):
        assert set(got["v"]) == {"$unexact"} and got["v"]["$unexact"]["text"] == want["text"]
    assert _json(nokey[-1]["v"]) == _json(h.rows["jnokey"][-1]["v"])
    table = next(t for t in h.record["tables"] if t["table"] == "jnokey")
    flagged = [(c["file"], u["row"], u["column"]) for c in table["chunks"] for u in c.get("unexact", [])]
    ids = [r["id"] for r in h.got["jnokey"]]
    assert sorted(ids[row] for _, row, column in flagged if column == "v") == list(range(len(COLLIDING)))
    assert all("unexact" not in c for t in h.record["tables"] if t["table"] != "jnokey" for c in t["chunks"])
