"""A seeded, DDL-heavy workload: every ALTER form a schema history replays, renames, a table
dropped and re-created under its name, names qualified and relative to USE, comments and quoting
inside DDL, and a table created before the binlog range read. After every DDL phase each table
gets rows inserted, updated and deleted with values of its current columns (read from the
server's information_schema), and the binlog is rotated: the range spans many files.

Run the same workload on two servers that differ only in binlog_row_metadata: the one with FULL
metadata names every column itself, and is the oracle for the other.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Callable
from decimal import Decimal

DB = "hist"
# Before the range: created, then the binlog is rotated and the range starts.
BEFORE = [
    f"CREATE DATABASE {DB} CHARACTER SET utf8mb4",
    f"CREATE TABLE {DB}.old_t (id INT PRIMARY KEY, u INT UNSIGNED, name VARCHAR(20) CHARACTER SET latin1, "
    "e ENUM('a','b','c''d'), big BIGINT UNSIGNED)",
]
# The phases, each one or more DDL statements run with USE hist.
PHASES: list[list[str]] = [
    ["CREATE TABLE t1 (id INT PRIMARY KEY, a INT, b VARCHAR(10), c TEXT, s SET('x','y','z'))",
     f"CREATE TABLE `{DB}`.`t 2` (id BIGINT UNSIGNED PRIMARY KEY, `we;ird` VARCHAR(5) COMMENT 'a;b, c', "
     "d DATETIME(3), m DECIMAL(12,4))"],
    ["ALTER TABLE t1 ADD COLUMN x INT AFTER id, ADD COLUMN y DECIMAL(10,3) FIRST, ADD au INT UNSIGNED"],
    ["ALTER TABLE t1 MODIFY COLUMN a BIGINT, CHANGE COLUMN b b2 VARCHAR(30) CHARACTER SET latin1 AFTER y"],
    ["ALTER TABLE t1 RENAME COLUMN c TO c2, DROP COLUMN x"],
    ["ALTER TABLE t1 MODIFY s SET('x','y','z','w'), ADD COLUMN e ENUM('p','q') DEFAULT 'p'"],
    ["ALTER TABLE t1 CONVERT TO CHARACTER SET latin1"],
    ["RENAME TABLE t1 TO t1_old, `t 2` TO t1"],
    ["DROP TABLE t1_old",
     "CREATE TABLE t1_old (k INT PRIMARY KEY, v VARCHAR(3) CHARACTER SET latin1, w TINYINT UNSIGNED)"],
    ["CREATE TABLE t3 LIKE old_t",
     "ALTER TABLE t3 ADD COLUMN g INT AS (id * 2) VIRTUAL, ADD COLUMN h SMALLINT UNSIGNED INVISIBLE"],
    ["/* a leading comment; with a semicolon */ ALTER TABLE old_t ADD COLUMN z TINYINT(1) DEFAULT 1 "
     "COMMENT 'z; -- not a comment' AFTER u"],
    [f"ALTER TABLE {DB}.old_t DROP COLUMN e, ADD COLUMN e2 ENUM('n','m') NOT NULL DEFAULT 'm' FIRST"],
    ["CREATE TABLE t4 (PRIMARY KEY (id)) SELECT id, u, name, e2 FROM old_t"],
]


def _value(rnd: random.Random, ctype: str, data_type: str):
    """A random value a column of this type holds exactly."""
    unsigned = "unsigned" in ctype
    ints = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}
    if data_type in ints:
        bits = ints[data_type]
        if ctype.startswith("tinyint(1)"):
            return rnd.randint(0, 1)
        # the top of an unsigned range is where a value read as signed goes wrong
        return rnd.choice([(1 << bits) - 1, rnd.randrange(1 << bits)]) if unsigned else \
            rnd.randint(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    if data_type == "decimal":
        p, s = (int(x) for x in ctype[ctype.index("(") + 1:ctype.index(")")].split(","))
        return Decimal(rnd.randrange(10 ** (p - 1))).scaleb(-s)
    if data_type in ("varchar", "char"):
        n = int(ctype[ctype.index("(") + 1:ctype.index(")")])
        return "".join(rnd.choices("abcé xyzÄß", k=rnd.randint(0, n)))
    if data_type in ("text", "mediumtext", "longtext", "tinytext"):
        return "".join(rnd.choices("abcé xyzÄß\n", k=rnd.randint(0, 200)))
    if data_type in ("enum", "set"):
        members = [m.replace("''", "'") for m in ctype[ctype.index("(") + 2:-2].split("','")]
        if data_type == "enum":
            return rnd.choice(members)
        return ",".join(m for m in members if rnd.random() < 0.5)
    if data_type == "datetime":
        return dt.datetime(2026, rnd.randint(1, 12), rnd.randint(1, 28), rnd.randint(0, 23), 5, 6,
                           rnd.randrange(1000) * 1000)
    if data_type == "json":
        return json.dumps({"k": rnd.randint(0, 9), "v": [rnd.random() < 0.5, None, "é"]})
    raise ValueError(f"no values for {ctype}")


def _columns(cur, table: str) -> list[tuple[str, str, str, bool]]:
    """(name, COLUMN_TYPE, DATA_TYPE, is a key) of the table's writable columns, in order."""
    cur.execute("SELECT COLUMN_NAME, COLUMN_TYPE, DATA_TYPE, EXTRA, COLUMN_KEY FROM information_schema.COLUMNS "
                "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION", (DB, table))
    return [(n, t.decode() if isinstance(t, bytes) else t, d, k == "PRI") for n, t, d, extra, k in cur.fetchall()
            if "GENERATED" not in (extra or "").upper()]


def _rows(cur, rnd: random.Random, phase: int) -> None:
    cur.execute("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s ORDER BY TABLE_NAME",
                (DB,))
    for (table,) in cur.fetchall():
        cols = _columns(cur, table)
        names = ", ".join(f"`{n}`" for n, *_ in cols)
        for k in range(3):
            values = [phase * 100 + k if key else _value(rnd, t, d) for n, t, d, key in cols]
            cur.execute(f"INSERT INTO `{table}` ({names}) VALUES ({', '.join(['%s'] * len(cols))})", values)
        key = next(n for n, t, d, is_key in cols if is_key)
        plain = [(n, t, d) for n, t, d, is_key in cols if not is_key]
        if plain:
            n, t, d = plain[rnd.randrange(len(plain))]
            cur.execute(f"UPDATE `{table}` SET `{n}` = %s ORDER BY `{key}` LIMIT 1", (_value(rnd, t, d),))
        cur.execute(f"DELETE FROM `{table}` ORDER BY `{key}` LIMIT 1")


def before(cur) -> None:
    """The tables that predate the range, with a row each way."""
    for sql in BEFORE:
        cur.execute(sql)
    cur.execute(f"USE {DB}")
    _rows(cur, random.Random(1), 0)


def run(cur, flush: str, between: Callable[[], object] | None = None, seed: int = 20261125) -> None:
    """The phases, a rotation after each (then `between`, e.g. an archive run): the same
    statements and values on every server."""
    rnd = random.Random(seed)
    cur.execute(f"USE {DB}")
    for phase, statements in enumerate(PHASES, start=1):
        for sql in statements:
            cur.execute(sql)
        _rows(cur, rnd, phase)
        cur.execute(flush)
        if between is not None:
            between()
