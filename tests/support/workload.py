"""A seeded workload run against a real server, recorded as GROUND TRUTH for the parser.

`run_workload(server, seed, big_rows)` drives a MySQL 9.x or MariaDB 10.11 server (a
`tests.support.servers.Server`) through every kind of transaction binlake must assemble and
returns, as a JSON-serialisable dict, what the binary log must hold: one entry per transaction
in binlog order, with its GTID, kind, outcome, ending event, xid facts, compression, row counts
per table and operation, DDL text, and the typed values of the all-types table's row changes.

Everything recorded comes from what the workload did (its own seeded generator and the row
counts the server reported), plus server state read between transactions: the GTID of each
transaction by diffing `gtid_executed` (MySQL) / `gtid_binlog_pos` (MariaDB), and the binlog
file and positions from `SHOW BINARY LOG STATUS` / `SHOW BINLOG STATUS`. Nothing is parsed out
of the binlog. Where the servers' logging differs by rule (FK cascades, DDL xids, REPLACE), the
rule is written down once here and checked by `tests/test_workload.py` against the server's own
`mysqlbinlog` output.

Transactions run one at a time, on several connections, so binlog order is execution order.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import random
import re
import struct
import time
from contextlib import contextmanager
from decimal import Decimal

from tests.support.waiting import until

DB = "bl"

# Rows changed by foreign-key cascades in ROW format. MySQL 9.7 enforces foreign keys in the SQL
# layer (rows events flagged USE_SQL_FOREIGN_KEY_F) and logs the cascaded child rows, before the
# parent's row; MariaDB's InnoDB applies cascades below the binlog and logs only a TABLE_MAP of
# the child table. Checked against mysqlbinlog by tests/test_workload.py.
FK_CASCADES_LOGGED = {"mysql": True, "mariadb": False}


def ddl_has_xid(flavor: str, sql: str) -> bool:
    """Whether the server logs `sql` with an xid in its QUERY event's status variables.

    MySQL 8+ logs one for atomic DDL (every engine but MyISAM & co.); MariaDB 10.6+ logs Q_XID
    for the DDL its ddl_log makes atomic, which excludes CREATE DATABASE and TRUNCATE.
    """
    s = sql.upper()
    if flavor == "mysql":
        return "ENGINE=MYISAM" not in s
    return not s.startswith(("CREATE DATABASE", "TRUNCATE"))


OPS = ("insert", "update", "delete")


# ---------------------------------------------------------------- values, in binlake's mapping
# A column's value has three forms, chosen by its SQL type as CREATE TABLE writes it: native (what a
# generator makes: int, float, Decimal, datetime.date or the zero date's text "0000-00-00",
# datetime.datetime, TIME as signed microseconds, str, bytes, a SET as a list of its members, a JSON
# document, a geometry as (kind, coords)), the SQL argument that writes it (`sql_arg`), and the value
# binlake must give for it in docs/row-values.md's forms (`binlake_value`). `from_pymysql` puts what
# the server returns for a SELECT in that form too, to hold a decoded image to the server's values.

def _base(sql_type: str) -> str:
    """The type's name: DECIMAL of "DECIMAL(30,10)", TIMESTAMP of "TIMESTAMP(6) NULL"."""
    return re.split(r"[\s(]", sql_type.strip(), maxsplit=1)[0].upper()


def _params(sql_type: str) -> list[str]:
    """What the type's parentheses hold: precision and scale, fsp, or ENUM/SET members."""
    m = re.match(r"[^(]*\((.*)\)", sql_type)
    if not m:
        return []
    return re.findall(r"'([^']*)'", m[1]) or [p.strip() for p in m[1].split(",")]


def _fsp(sql_type: str) -> int:
    params = _params(sql_type)
    return int(params[0]) if params else 0


def _scale(sql_type: str) -> int:
    params = _params(sql_type)
    return int(params[1]) if len(params) > 1 else 0


def _b64(b: bytes) -> str:
    return "base64:" + base64.b64encode(b).decode()


def _fraction(us: int, fsp: int) -> str:
    """A second's fraction to fsp digits, after its dot ("" for none)."""
    return f".{us:06d}"[:fsp + 1] if fsp else ""


def _time_str(us: int, fsp: int) -> str:
    """TIME as "[-]HH:MM:SS[.f]" from a signed number of microseconds."""
    sign = "-" if us < 0 else ""
    s, frac = divmod(abs(us), 1_000_000)
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return f"{sign}{h:02d}:{m:02d}:{sec:02d}{_fraction(frac, fsp)}"


def _dt_str(d: dt.datetime, fsp: int) -> str:
    """DATETIME and TIMESTAMP, the year always four digits."""
    return (f"{d.year:04d}-{d.month:02d}-{d.day:02d} {d.hour:02d}:{d.minute:02d}:{d.second:02d}"
            f"{_fraction(d.microsecond, fsp)}")


def _dec_str(v: Decimal, scale: int) -> str:
    """DECIMAL(p,s) as the exact string with its s decimals."""
    whole, _, frac = format(v, "f").partition(".")
    return f"{whole}.{frac:0<{scale}}" if scale else whole


def _num(x: float) -> str:
    return str(int(x)) if x == int(x) else repr(x)


def _wkt(geom: tuple) -> str:
    kind, coords = geom
    pts = ",".join(f"{_num(x)} {_num(y)}" for x, y in coords)
    if kind == "POINT":
        return f"POINT({pts})"
    if kind == "LINESTRING":
        return f"LINESTRING({pts})"
    return f"POLYGON(({pts}))"


def _f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def sql_arg(sql_type: str, v) -> tuple[str, object]:
    """(placeholder, argument) that write the native value v into a column of sql_type exactly."""
    base = _base(sql_type)
    if v is None:
        return "%s", None
    if base == "DECIMAL":
        return "%s", _dec_str(v, _scale(sql_type))
    if base in ("FLOAT", "DOUBLE"):
        return "%s", repr(float(v))
    if base == "TIME":
        return "%s", _time_str(v, 6)
    if base in ("DATETIME", "TIMESTAMP"):
        return "%s", _dt_str(v, 6)
    if base == "DATE":
        return "%s", v if isinstance(v, str) else v.isoformat()
    if base == "SET":
        return "%s", ",".join(v)
    if base == "JSON":
        return "%s", json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    if base == "GEOMETRY":
        return "ST_GeomFromText(%s)", _wkt(v)
    return "%s", v


def binlake_value(sql_type: str, v, flavor: str):
    """The value binlake must give for the native value v of a column of sql_type."""
    base = _base(sql_type)
    if v is None:
        return None
    if base == "DECIMAL":
        return _dec_str(v, _scale(sql_type))
    if base == "FLOAT":
        return _f32(v)  # the float32 the column holds
    if base == "TIME":
        return _time_str(v, _fsp(sql_type))
    if base in ("DATETIME", "TIMESTAMP"):
        return _dt_str(v, _fsp(sql_type))
    if base == "DATE":
        return v if isinstance(v, str) else v.isoformat()
    if base == "CHAR":
        return v.rstrip(" ")  # the server keeps CHAR without its trailing spaces
    if base == "BINARY":  # the server pads BINARY(n) with zero bytes to n
        return _b64(v.ljust(int(_params(sql_type)[0]) if "(" in sql_type else 1, b"\0"))
    if base in ("VARBINARY", "TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB"):
        return _b64(v)
    if base == "SET":
        return [m for m in _params(sql_type) if m in v]  # in definition order
    if base == "JSON":
        # MariaDB's JSON is LONGTEXT: the binlog holds the text as written.
        return json.dumps(v, ensure_ascii=False, separators=(",", ":")) if flavor == "mariadb" else v
    if base == "GEOMETRY":
        return _wkt(v)
    return v


def from_pymysql(sql_type: str, v, flavor: str):
    """What PyMySQL returns for a column of sql_type (FLOAT selected as f+0e0, GEOMETRY as
    ST_AsText) in binlake's form: the server's own value, to hold a decoded image to."""
    base = _base(sql_type)
    if v is None:
        return None
    if isinstance(v, bytes) and base in ("TEXT", "JSON", "GEOMETRY"):
        v = v.decode()
    if base == "JSON":
        return v if flavor == "mariadb" else json.loads(v)
    if base == "GEOMETRY":
        return v
    if base == "TIME":
        v = (v.days * 86400 + v.seconds) * 1_000_000 + v.microseconds
    elif base == "BIT":
        v = int.from_bytes(v, "big")
    elif base == "SET" and isinstance(v, str):
        v = v.split(",")
    return binlake_value(sql_type, v, flavor)


_INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "MEDIUMINT": 24, "INT": 32, "BIGINT": 64}
_CHARSET = re.compile(r"CHARACTER SET (\w+)", re.I)


def unnamed_value(sql_type: str, v, metadata: str):
    """binlake's value v (binlake_value) as binlake gives it when the TABLE_MAP names no column
    (docs/row-values.md): MySQL's MINIMAL and MariaDB's MINIMAL log signedness and charsets, so
    only ENUM and SET change (an ENUM its index, a SET its bitmask); MariaDB's NO_LOG logs neither,
    so an unsigned integer is read as signed and a string's bytes are UTF-8 text when they decode,
    else base64 (a BINARY(n) without the zeros the server strips from it)."""
    base = _base(sql_type)
    if v is None:
        return None
    if base == "ENUM":
        return _params(sql_type).index(v) + 1
    if base == "SET":
        return sum(1 << _params(sql_type).index(m) for m in v)
    if metadata != "NO_LOG":
        return v
    bits = _INT_BITS.get(base)
    if bits and "UNSIGNED" in sql_type.upper():
        return v - (1 << bits) if v >= 1 << (bits - 1) else v
    if isinstance(v, str) and (base in ("CHAR", "VARCHAR", "TEXT", "MEDIUMTEXT", "LONGTEXT", "TINYTEXT")
                               or v.startswith("base64:")):
        charset = _CHARSET.search(sql_type)
        raw = base64.b64decode(v[7:]) if v.startswith("base64:") else \
            v.encode("latin-1" if charset and charset[1].lower() == "latin1" else "utf-8")
        if base == "BINARY":  # logged without its padding zeros: unknown as binary, nothing pads it
            raw = raw.rstrip(b"\0")
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return _b64(raw)
    return v


ALLTYPES_COLUMNS = [
    # name, SQL type
    ("id", "INT NOT NULL PRIMARY KEY"),
    ("ti", "TINYINT"), ("tiu", "TINYINT UNSIGNED"),
    ("si", "SMALLINT"), ("siu", "SMALLINT UNSIGNED"),
    ("mi", "MEDIUMINT"), ("miu", "MEDIUMINT UNSIGNED"),
    ("i", "INT"), ("iu", "INT UNSIGNED"),
    ("bi", "BIGINT"), ("biu", "BIGINT UNSIGNED"),
    ("dec", "DECIMAL(30,10)"), ("f", "FLOAT"), ("d", "DOUBLE"), ("bt", "BIT(12)"),
    ("dt", "DATE"), ("tm", "TIME(6)"), ("dtm", "DATETIME(6)"),
    ("ts", "TIMESTAMP(6) NULL DEFAULT NULL"), ("yr", "YEAR"),
    ("ch", "CHAR(10)"), ("vc", "VARCHAR(100)"), ("bn", "BINARY(8)"), ("vb", "VARBINARY(32)"),
    ("tx", "TEXT"), ("bb", "BLOB"),
    ("en", "ENUM('red','green','blue')"), ("st", "SET('a','b','c','d')"),
    ("js", "JSON"), ("g", "GEOMETRY"),
]
ALLTYPES = dict(ALLTYPES_COLUMNS)
_SET_MEMBERS = ["a", "b", "c", "d"]
_INT_RANGES = {
    "ti": (-128, 127), "tiu": (0, 255), "si": (-32768, 32767), "siu": (0, 65535),
    "mi": (-8388608, 8388607), "miu": (0, 16777215), "i": (-2**31, 2**31 - 1),
    "iu": (0, 2**32 - 1), "bi": (-2**63, 2**63 - 1), "biu": (0, 2**64 - 1),
}
_TIME_MAX_US = (838 * 3600 + 59 * 60 + 59) * 1_000_000
_TS_MIN = dt.datetime(1970, 1, 1, 0, 0, 1)
_TS_MAX = dt.datetime(2038, 1, 19, 3, 14, 7, 999999)
_EMOJI = "🐬🚀✓ éß漢字ü🙂"


class AllTypes:
    """Rows of the all-types table: generated natively, rendered to SQL and to binlake values."""

    def __init__(self, rng: random.Random, flavor: str):
        self.rng = rng
        self.flavor = flavor

    # Native rows: a dict column -> python value (None for NULL), geometry as (kind, coords).
    def extreme(self, row_id: int, low: bool) -> dict:
        r = {"id": row_id}
        for c, (lo, hi) in _INT_RANGES.items():
            r[c] = lo if low else hi
        nines = "9" * 20 + "." + "9" * 10
        r["dec"] = Decimal("-" + nines) if low else Decimal(nines)
        r["f"] = -_f32(2.0 ** 127) if low else _f32(3.4028234663852886e38)
        r["d"] = -1.7976931348623157e308 if low else 2.2250738585072014e-308
        r["bt"] = 0 if low else 4095
        r["dt"] = dt.date(1000, 1, 1) if low else dt.date(9999, 12, 31)
        r["tm"] = -_TIME_MAX_US if low else _TIME_MAX_US
        r["dtm"] = dt.datetime(1000, 1, 1) if low else dt.datetime(9999, 12, 31, 23, 59, 59, 999999)
        r["ts"] = _TS_MIN if low else _TS_MAX
        r["yr"] = 1901 if low else 2155
        r["ch"] = "" if low else "ZZZZZZZZZ🐬"
        r["vc"] = "" if low else (_EMOJI * 10)[:100]
        r["bn"] = b"\x00" * 7 + b"\x01" if low else b"\xff" * 8
        r["vb"] = b"" if low else bytes(range(224, 256))
        r["tx"] = "" if low else "long text ✓ " * 40
        r["bb"] = b"" if low else bytes(range(256)) * 2
        r["en"] = "red" if low else "blue"
        r["st"] = [] if low else list(_SET_MEMBERS)
        r["js"] = {} if low else {"a": [1, 2, {"b": None}], "big": 9007199254740993,
                                   "s": "emoji 🐬", "t": True, "x": 1.5}
        r["g"] = ("POINT", [(0, 0)]) if low else ("POLYGON", [(0, 0), (10, 0), (10, 10), (0, 0)])
        return r

    def nulls(self, row_id: int) -> dict:
        return {c: (row_id if c == "id" else None) for c, _ in ALLTYPES_COLUMNS}

    def random(self, row_id: int) -> dict:
        g = self.rng
        r = {"id": row_id}
        for c, (lo, hi) in _INT_RANGES.items():
            r[c] = g.randint(lo, hi)
        r["dec"] = Decimal(f"{g.randint(-10**12, 10**12)}.{g.randint(0, 10**10 - 1):010d}")
        r["f"] = _f32(g.randint(-2**20, 2**20) / 2 ** g.randint(0, 12))
        r["d"] = g.randint(-10**12, 10**12) / 1024
        r["bt"] = g.randint(0, 4095)
        r["dt"] = dt.date(g.randint(1000, 9999), g.randint(1, 12), g.randint(1, 28))
        r["tm"] = g.randint(-_TIME_MAX_US // 1_000_000, _TIME_MAX_US // 1_000_000) * 1_000_000 \
            + g.randint(0, 999_999) * (1 if g.random() < 0.5 else -1)
        r["tm"] = max(-_TIME_MAX_US, min(_TIME_MAX_US, r["tm"]))
        r["dtm"] = dt.datetime(g.randint(1000, 9999), g.randint(1, 12), g.randint(1, 28),
                               g.randint(0, 23), g.randint(0, 59), g.randint(0, 59),
                               g.randint(0, 999_999))
        span = int((_TS_MAX - _TS_MIN).total_seconds())
        r["ts"] = _TS_MIN + dt.timedelta(seconds=g.randint(0, span - 1),
                                         microseconds=g.randint(0, 999_999))
        r["yr"] = g.randint(1901, 2155)
        r["ch"] = "".join(g.choice("abcxyz🐬é") for _ in range(g.randint(1, 10)))
        r["vc"] = "".join(g.choice("abc 🚀漢ü") for _ in range(g.randint(1, 100)))
        r["bn"] = bytes(g.randint(0, 255) for _ in range(7)) + bytes([g.randint(1, 255)])
        r["vb"] = bytes(g.randint(0, 255) for _ in range(g.randint(1, 32)))
        r["tx"] = "".join(g.choice("lorem ipsum ✓") for _ in range(g.randint(1, 300)))
        r["bb"] = bytes(g.randint(0, 255) for _ in range(g.randint(1, 300)))
        r["en"] = g.choice(["red", "green", "blue"])
        r["st"] = [m for m in _SET_MEMBERS if g.random() < 0.5]
        r["js"] = {"k": g.randint(-1000, 1000), "l": [g.randint(0, 9) for _ in range(3)],
                   "s": "v" + str(g.randint(0, 99))}
        x, y = g.randint(-100, 100), g.randint(-100, 100)
        r["g"] = g.choice([("POINT", [(x + 0.5, y)]), ("LINESTRING", [(x, y), (x + 1, y + 2.5)])])
        return r

    def insert_sql(self, rows: list[dict]) -> tuple[str, list]:
        cols = [c for c, _ in ALLTYPES_COLUMNS]
        tuples, args = [], []
        for r in rows:
            parts = []
            for c in cols:
                ph, a = sql_arg(ALLTYPES[c], r[c])
                parts.append(ph)
                args.append(a)
            tuples.append("(" + ",".join(parts) + ")")
        names = ",".join(f"`{c}`" for c in cols)
        return f"INSERT INTO alltypes ({names}) VALUES " + ",".join(tuples), args

    def update_sql(self, row_id: int, changes: dict) -> tuple[str, list]:
        sets, args = [], []
        for c, v in changes.items():
            ph, a = sql_arg(ALLTYPES[c], v)
            sets.append(f"`{c}`={ph}")
            args.append(a)
        return f"UPDATE alltypes SET {','.join(sets)} WHERE id=%s", [*args, row_id]

    def binlake_row(self, r: dict) -> dict:
        return {c: binlake_value(t, r[c], self.flavor) for c, t in ALLTYPES_COLUMNS}

    def check_stored(self, conn, r: dict) -> None:
        """Read the row back and compare with what was meant: the server stores what we think."""
        sel = []
        for c, _ in ALLTYPES_COLUMNS:
            if c == "g":
                sel.append("ST_AsText(g)")
            elif c == "f":
                sel.append("f+0e0")
            else:
                sel.append(f"`{c}`")
        with conn.cursor() as cur:
            cur.execute(f"SELECT {','.join(sel)} FROM alltypes WHERE id=%s", (r["id"],))
            got = cur.fetchone()
        want = self.binlake_row(r)
        for (c, t), g in zip(ALLTYPES_COLUMNS, got, strict=True):
            g = from_pymysql(t, g, self.flavor)
            if g != want[c]:
                raise AssertionError(f"alltypes id={r['id']} column {c}: stored {g!r}, "
                                     f"expected {want[c]!r}")


# ---------------------------------------------------------------- recording

def _parse_mysql_gtid_set(text: str) -> set[str]:
    """Every GTID of a MySQL GTID set, "uuid:gno" or "uuid:tag:gno" (MySQL 8.3+ tags)."""
    out: set[str] = set()
    for part in re.sub(r"\s+", "", text).split(","):
        if not part:
            continue
        tokens = part.split(":")
        uuid, tag = tokens[0].lower(), None
        for tok in tokens[1:]:
            if tok[0].isdigit():
                lo, _, hi = tok.partition("-")
                for n in range(int(lo), int(hi or lo) + 1):
                    out.add(f"{uuid}:{tag}:{n}" if tag else f"{uuid}:{n}")
            else:
                tag = tok
    return out


def _parse_mariadb_gtid_pos(text: str) -> dict[int, str]:
    return {int(g.split("-")[0]): g for g in text.split(",") if g}


class Recorder:
    """Runs transactions one at a time and records each one's ground truth."""

    def __init__(self, server, rng: random.Random):
        self.server = server
        self.flavor = server.flavor
        self.rng = rng
        self.admin = server.connect()
        self.txns: list[dict] = []

    def connect(self, db: str | None = DB, **session) -> object:
        conn = self.server.connect()
        with conn.cursor() as cur:
            cur.execute("SET time_zone='+00:00'")
            for k, v in session.items():
                cur.execute(f"SET SESSION {k}=%s", (v,))
        if db:
            conn.select_db(db)
        return conn

    def state(self) -> dict:
        with self.admin.cursor() as cur:
            if self.flavor == "mysql":
                cur.execute("SHOW BINARY LOG STATUS")
                f, pos, _, _, executed = cur.fetchone()
                gtids = _parse_mysql_gtid_set(executed)
            else:
                cur.execute("SHOW BINLOG STATUS")
                f, pos = cur.fetchone()[:2]
                cur.execute("SELECT @@global.gtid_binlog_pos")
                gtids = _parse_mariadb_gtid_pos(cur.fetchone()[0])
        return {"file": f, "pos": int(pos), "gtids": gtids}

    def settle(self) -> None:
        """After a rotation, wait for MariaDB's binlog checkpoint event naming the new file.

        MariaDB's background thread writes it once the previous file's transactions are durable
        in the engines; it must precede the next transaction for positions to be exact.
        """
        if self.flavor != "mariadb":
            return
        current = self.state()["file"]
        with self.admin.cursor() as cur:
            for _ in range(200):
                cur.execute(f"SHOW BINLOG EVENTS IN '{current}'")
                if any(ev[2] == "Binlog_checkpoint" and current in ev[5]
                       for ev in cur.fetchall()):
                    return
                time.sleep(0.05)
        raise RuntimeError(f"no binlog checkpoint for {current}")

    def _file_size(self, name: str) -> int:
        with self.admin.cursor() as cur:
            cur.execute("SHOW BINARY LOGS")
            for row in cur.fetchall():
                if row[0] == name:
                    return int(row[1])
        raise RuntimeError(f"binlog {name} not listed")

    @contextmanager
    def txn(self, conn, *, label: str, kind: str = "dml", outcome: str = "committed",
            end_event: str = "XID", has_xid: bool | None = None, compressed: bool = False,
            xa_xid: str | None = None, statement: str | None = None, anonymous: bool = False):
        t = Txn(conn)
        before = self.state()
        yield t
        after = self.state()
        if (after["file"], after["pos"]) == (before["file"], before["pos"]):
            raise AssertionError(f"{label}: nothing was written to the binlog")
        gtid = self._new_gtid(before, after, conn, anonymous, label)
        if after["file"] == before["file"]:
            end = after["pos"]
        else:  # the server rotated right after this transaction: it ends before the ROTATE event
            end = self._file_size(before["file"]) - (19 + 8 + len(after["file"]) + 4)
        rec = {
            "label": label,
            "gtid": gtid,
            "kind": kind,
            "outcome": outcome,
            "end_event": end_event,
            "has_xid": end_event == "XID" if has_xid is None else has_xid,
            "xa_xid": xa_xid,
            "compressed": compressed,
            "statement": statement,
            "rows": {tbl: dict(ops) for tbl, ops in t.rows.items()},
            "binlog_file": before["file"],
            "start_pos": before["pos"],
            "end_pos": end,
        }
        if t.values:
            rec["row_values"] = t.values
        self.txns.append(rec)

    def _new_gtid(self, before, after, conn, anonymous, label) -> str | None:
        if self.flavor == "mysql":
            new = after["gtids"] - before["gtids"]
            if anonymous:
                if new:
                    raise AssertionError(f"{label}: expected ANONYMOUS, got {new}")
                return None
            if len(new) != 1:
                raise AssertionError(f"{label}: expected one new GTID, got {sorted(new)}")
            return new.pop()
        changed = [g for d, g in after["gtids"].items() if before["gtids"].get(d) != g]
        if len(changed) != 1:
            raise AssertionError(f"{label}: expected one new GTID, got {changed}")
        with conn.cursor() as cur:
            cur.execute("SELECT @@session.last_gtid")
            last = cur.fetchone()[0]
        if last != changed[0]:
            raise AssertionError(f"{label}: last_gtid {last} but gtid_binlog_pos gained {changed}")
        return changed[0]

    def ddl(self, conn, sql: str, *, label: str | None = None, logged: str | None = None,
            compressed: bool = False, anonymous: bool = False) -> None:
        """A DDL statement, self-contained; `logged` is its text as the server logs it."""
        with self.txn(conn, label=label or sql[:60], kind="ddl", end_event="SELF_CONTAINED",
                      has_xid=ddl_has_xid(self.flavor, sql), statement=logged or sql,
                      compressed=compressed, anonymous=anonymous) as t:
            t.sql(sql)


class Txn:
    """Collects what one transaction changes, as the ROW-format binlog will show it."""

    def __init__(self, conn):
        self.conn = conn
        self.rows: dict[str, dict[str, int]] = {}
        self.values: list[dict] = []

    def sql(self, sql: str, args=None, affected: int | None = None) -> int:
        with self.conn.cursor() as cur:
            n = cur.execute(sql, args)
        if affected is not None and n != affected:
            raise AssertionError(f"{sql[:80]!r}: {n} rows affected, expected {affected}")
        return n

    def count(self, table: str, op: str, n: int = 1) -> None:
        if n:
            ops = self.rows.setdefault(f"{DB}.{table}" if "." not in table else table,
                                       dict.fromkeys(OPS, 0))
            ops[op] += n

    def value(self, table: str, op: str, before: dict | None, after: dict | None) -> None:
        self.values.append({"table": f"{DB}.{table}", "op": op, "before": before, "after": after})


# ---------------------------------------------------------------- the workload

_TABLES = {
    "kv": "CREATE TABLE kv (k INT NOT NULL PRIMARY KEY, v VARCHAR(64) NOT NULL) ENGINE=InnoDB",
    "accounts": "CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, email VARCHAR(64) NOT NULL,"
                " balance BIGINT NOT NULL, UNIQUE KEY uk_email (email)) ENGINE=InnoDB",
    "orders": "CREATE TABLE orders (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,"
              " account_id INT NOT NULL, amount DECIMAL(12,2) NOT NULL,"
              " status VARCHAR(16) NOT NULL) ENGINE=InnoDB",
    "audit": "CREATE TABLE audit (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,"
             " order_id INT NOT NULL, what VARCHAR(16) NOT NULL) ENGINE=InnoDB",
    "parent": "CREATE TABLE parent (id INT NOT NULL PRIMARY KEY, name VARCHAR(32) NOT NULL)"
              " ENGINE=InnoDB",
    "child": "CREATE TABLE child (id INT NOT NULL PRIMARY KEY, parent_id INT NOT NULL,"
             " CONSTRAINT fk_child_parent FOREIGN KEY (parent_id) REFERENCES parent (id)"
             " ON DELETE CASCADE ON UPDATE CASCADE) ENGINE=InnoDB",
    "mylog": "CREATE TABLE mylog (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,"
             " msg VARCHAR(255) NOT NULL) ENGINE=MyISAM",
    "stmt_t": "CREATE TABLE stmt_t (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, r DOUBLE,"
              " s VARCHAR(64)) ENGINE=InnoDB",
    "docs": "CREATE TABLE docs (id INT NOT NULL PRIMARY KEY, title VARCHAR(64) NOT NULL,"
            " body TEXT, doc JSON) ENGINE=InnoDB",
}
_TRIGGERS = [
    "CREATE TRIGGER trg_orders_ins AFTER INSERT ON orders FOR EACH ROW"
    " INSERT INTO audit (order_id, what) VALUES (NEW.id, 'insert')",
    "CREATE TRIGGER trg_orders_upd AFTER UPDATE ON orders FOR EACH ROW"
    " INSERT INTO audit (order_id, what) VALUES (NEW.id, 'update')",
]


def _xid(gtrid: bytes, bqual: bytes = b"", fmt: int = 1) -> str:
    """binlake's canonical XA xid, as the servers write it into XA COMMIT statements."""
    return f"X'{gtrid.hex()}',X'{bqual.hex()}',{fmt}"


class Workload:
    """The steps both flavors run; `rec` records, `rng` decides keys, values and sizes."""

    def __init__(self, rec: Recorder):
        self.rec = rec
        self.rng = rec.rng
        self.flavor = rec.flavor
        self.kv: dict[int, str] = {}
        self.accounts: dict[int, str] = {}
        self.next_key = 1
        self.serial = 0
        self.at = AllTypes(self.rng, self.flavor)

    def word(self) -> str:
        self.serial += 1
        return f"w{self.serial}-{self.rng.randint(0, 10**6)}"

    def new_keys(self, n: int) -> list[int]:
        keys = list(range(self.next_key, self.next_key + n))
        self.next_key += n
        return keys

    def definer(self, conn) -> str:
        with conn.cursor() as cur:
            cur.execute("SELECT CURRENT_USER()")
            user, host = cur.fetchone()[0].rsplit("@", 1)
        return f"`{user}`@`{host}`"

    def drop_logged(self, table: str) -> str:
        """Both servers rewrite the DROP TABLE they log."""
        return f"DROP TABLE `{table}` /* generated by server */"

    # -- schema ---------------------------------------------------------------------------
    def setup(self) -> None:
        rec = self.rec
        c0 = rec.connect(db=None)
        rec.ddl(c0, f"CREATE DATABASE {DB}")
        c0.close()
        self.c = rec.connect()
        for sql in _TABLES.values():
            rec.ddl(self.c, sql)
        definer = self.definer(self.c)
        for sql in _TRIGGERS:
            rec.ddl(self.c, sql, logged=sql.replace("CREATE TRIGGER",
                                                    f"CREATE DEFINER={definer} TRIGGER", 1))
        cols = ", ".join(f"`{c}` {t}" for c, t in ALLTYPES_COLUMNS)
        rec.ddl(self.c, f"CREATE TABLE alltypes ({cols}) ENGINE=InnoDB"
                        " DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin")

    # -- InnoDB DML -----------------------------------------------------------------------
    def kv_insert(self, conn, n: int, label: str, **kw) -> None:
        keys = self.new_keys(n)
        vals = {k: self.word() for k in keys}
        with self.rec.txn(conn, label=label, **kw) as t:
            t.sql("INSERT INTO kv (k, v) VALUES " + ",".join(["(%s,%s)"] * n),
                  [x for k in keys for x in (k, vals[k])], affected=n)
            t.count("kv", "insert", n)
        self.kv.update(vals)

    def kv_update(self, t: Txn, n: int) -> None:
        keys = sorted(self.rng.sample(sorted(self.kv), n))
        for k in keys:
            self.kv[k] = self.word()
            t.sql("UPDATE kv SET v=%s WHERE k=%s", (self.kv[k], k), affected=1)
        t.count("kv", "update", n)

    def kv_delete(self, t: Txn, n: int) -> None:
        keys = sorted(self.rng.sample(sorted(self.kv), n))
        t.sql("DELETE FROM kv WHERE k IN (" + ",".join(["%s"] * n) + ")", keys, affected=n)
        for k in keys:
            del self.kv[k]
        t.count("kv", "delete", n)

    def innodb_dml(self) -> None:
        rec, c = self.rec, self.c
        # autocommit statements
        self.kv_insert(c, self.rng.randint(3, 8), "autocommit insert kv")
        with rec.txn(c, label="autocommit update kv") as t:
            k = self.rng.choice(sorted(self.kv))
            self.kv[k] = self.word()
            t.sql("UPDATE kv SET v=%s WHERE k=%s", (self.kv[k], k), affected=1)
            t.count("kv", "update")
        with rec.txn(c, label="autocommit delete kv") as t:
            self.kv_delete(t, 1)
        self.kv_insert(c, 10, "autocommit insert kv (more)")
        # multi-statement transactions
        with rec.txn(c, label="multi-statement insert/update/delete") as t:
            t.sql("BEGIN")
            keys = self.new_keys(3)
            for k in keys:
                self.kv[k] = self.word()
                t.sql("INSERT INTO kv (k, v) VALUES (%s, %s)", (k, self.kv[k]), affected=1)
            t.count("kv", "insert", 3)
            self.kv_update(t, 2)
            self.kv_delete(t, 2)
            ids = [self.new_keys(1)[0] for _ in range(4)]
            for i in ids:
                self.accounts[i] = f"{self.word()}@example.com"
                t.sql("INSERT INTO accounts (id, email, balance) VALUES (%s, %s, %s)",
                      (i, self.accounts[i], self.rng.randint(0, 10**6)), affected=1)
            t.count("accounts", "insert", 4)
            t.sql("COMMIT")
        # upserts
        with rec.txn(c, label="INSERT ... ON DUPLICATE KEY UPDATE (2 updates, 2 inserts)") as t:
            old = sorted(self.rng.sample(sorted(self.kv), 2))
            new = self.new_keys(2)
            vals = {k: self.word() for k in old + new}
            n = t.sql("INSERT INTO kv (k, v) VALUES " + ",".join(["(%s,%s)"] * 4)
                      + " ON DUPLICATE KEY UPDATE v=VALUES(v)",
                      [x for k in old + new for x in (k, vals[k])])
            assert n == 2 * 2 + 2, n  # affected: 2 per updated row, 1 per inserted row
            self.kv.update(vals)
            t.count("kv", "update", 2)
            t.count("kv", "insert", 2)
        with rec.txn(c, label="ODKU unchanged row logs nothing, changed row an update") as t:
            same, other = sorted(self.rng.sample(sorted(self.kv), 2))
            self.kv[other] = self.word()
            t.sql("INSERT INTO kv (k, v) VALUES (%s,%s),(%s,%s) ON DUPLICATE KEY UPDATE"
                  " v=VALUES(v)", (same, self.kv[same], other, self.kv[other]), affected=2)
            t.count("kv", "update", 1)
        with rec.txn(c, label="REPLACE on a primary-key-only table: update in place") as t:
            k = self.rng.choice(sorted(self.kv))
            (nk,) = self.new_keys(1)
            self.kv[k], self.kv[nk] = self.word(), self.word()
            t.sql("REPLACE INTO kv (k, v) VALUES (%s,%s),(%s,%s)",
                  (k, self.kv[k], nk, self.kv[nk]), affected=3)
            t.count("kv", "update", 1)
            t.count("kv", "insert", 1)
        with rec.txn(c, label="REPLACE conflicting on the PK of a table with a unique key") as t:
            i = self.rng.choice(sorted(self.accounts))
            self.accounts[i] = f"{self.word()}@example.com"
            t.sql("REPLACE INTO accounts (id, email, balance) VALUES (%s, %s, %s)",
                  (i, self.accounts[i], 7), affected=2)
            t.count("accounts", "delete")
            t.count("accounts", "insert")

    def triggers(self) -> None:
        rec, c = self.rec, self.c
        accs = sorted(self.accounts)
        with rec.txn(c, label="insert orders, trigger inserts audit") as t:
            n = self.rng.randint(2, 4)
            t.sql("INSERT INTO orders (account_id, amount, status) VALUES "
                  + ",".join(["(%s,%s,'new')"] * n),
                  [x for _ in range(n) for x in (self.rng.choice(accs),
                                                  f"{self.rng.randint(1, 99999)}.25")],
                  affected=n)
            t.count("orders", "insert", n)
            t.count("audit", "insert", n)
            self.orders = n
        with rec.txn(c, label="update orders, trigger inserts audit") as t:
            t.sql("BEGIN")
            t.sql("UPDATE orders SET status='paid' WHERE id <= 2", affected=2)
            t.sql("COMMIT")
            t.count("orders", "update", 2)
            t.count("audit", "insert", 2)

    def fk_cascades(self) -> None:
        rec, c = self.rec, self.c
        logged = FK_CASCADES_LOGGED[self.flavor]
        with rec.txn(c, label="insert parents and children") as t:
            t.sql("BEGIN")
            t.sql("INSERT INTO parent (id, name) VALUES (1,'p1'),(2,'p2'),(3,'p3')", affected=3)
            kids = [(10 + i, 1 + i % 3) for i in range(9)]
            t.sql("INSERT INTO child (id, parent_id) VALUES " + ",".join(["(%s,%s)"] * 9),
                  [x for k in kids for x in k], affected=9)
            t.sql("COMMIT")
            t.count("parent", "insert", 3)
            t.count("child", "insert", 9)
        with rec.txn(c, label="delete parent: ON DELETE CASCADE deletes 3 children") as t:
            t.sql("DELETE FROM parent WHERE id=1", affected=1)
            t.count("parent", "delete")
            t.count("child", "delete", 3 if logged else 0)
        with rec.txn(c, label="update parent key: ON UPDATE CASCADE updates 3 children") as t:
            t.sql("UPDATE parent SET id=20 WHERE id=2", affected=1)
            t.count("parent", "update")
            t.count("child", "update", 3 if logged else 0)

    def myisam(self) -> None:
        rec, c = self.rec, self.c
        kw = {"end_event": "QUERY_COMMIT", "has_xid": False}
        with rec.txn(c, label="MyISAM insert (commit by QUERY COMMIT)", **kw) as t:
            t.sql("INSERT INTO mylog (msg) VALUES (%s),(%s),(%s)",
                  (self.word(), self.word(), self.word()), affected=3)
            t.count("mylog", "insert", 3)
        with rec.txn(c, label="MyISAM update", **kw) as t:
            t.sql("UPDATE mylog SET msg=CONCAT(msg, '!') WHERE id <= 2", affected=2)
            t.count("mylog", "update", 2)
        with rec.txn(c, label="MyISAM delete", **kw) as t:
            t.sql("DELETE FROM mylog WHERE id=3", affected=1)
            t.count("mylog", "delete")

    def statement_format(self) -> None:
        """STATEMENT-format sessions: INTVAR, RAND and USER_VAR events, no row events."""
        rec = self.rec
        s = rec.connect(binlog_format="STATEMENT")
        with rec.txn(s, label="SBR insert with AUTO_INCREMENT (INTVAR)") as t:
            t.sql("INSERT INTO stmt_t (s) VALUES ('auto')", affected=1)
        with rec.txn(s, label="SBR insert with RAND() (RAND event)") as t:
            t.sql("INSERT INTO stmt_t (id, r) VALUES (1000, RAND())", affected=1)
        t0 = self.word()
        s.cursor().execute("SET @u = %s", (t0,))
        with rec.txn(s, label="SBR insert with a user variable (USER_VAR)") as t:
            t.sql("INSERT INTO stmt_t (id, s) VALUES (1001, @u)", affected=1)
        with rec.txn(s, label="SBR multi-statement with LAST_INSERT_ID()") as t:
            t.sql("BEGIN")
            t.sql("INSERT INTO stmt_t (s) VALUES ('a'),('b')", affected=2)
            t.sql("UPDATE stmt_t SET r = LAST_INSERT_ID() WHERE id = 1000", affected=1)
            t.sql("DELETE FROM stmt_t WHERE id = 1001", affected=1)
            t.sql("COMMIT")
        with rec.txn(s, label="SBR MyISAM insert", end_event="QUERY_COMMIT", has_xid=False) as t:
            t.sql("INSERT INTO mylog (msg) VALUES ('statement')", affected=1)
        rec.ddl(s, "CREATE TABLE sbr_made (id INT PRIMARY KEY) ENGINE=InnoDB")
        s.close()

    def alltypes(self) -> None:
        rec, c, at = self.rec, self.c, self.at
        rows = [at.extreme(1, True), at.extreme(2, False), at.nulls(3),
                at.random(4), at.random(5), at.random(6)]
        # One row per statement, so one row per rows event: MySQL 9.7's mysqlbinlog -v stops
        # printing a rows event at its first GEOMETRY value, and the rows are counted there.
        with rec.txn(c, label="alltypes: insert extremes, NULLs and random rows") as t:
            t.sql("BEGIN")
            for r in rows:
                sql, args = at.insert_sql([r])
                t.sql(sql, args, affected=1)
                t.value("alltypes", "insert", None, at.binlake_row(r))
            t.sql("COMMIT")
            t.count("alltypes", "insert", len(rows))
        for r in rows:
            at.check_stored(c, r)
        live = {r["id"]: r for r in rows}
        neg = at.random(0)
        updates = [
            (4, {"i": neg["i"], "vc": "updated 🐬", "tm": -1_000_001, "st": ["b", "d"],
                 "js": {"updated": True, "n": [1, 2]}, "g": ("LINESTRING", [(1, 1), (2, 2)])}),
            (3, {"ti": 5, "dec": Decimal("0.0000000001"), "dtm": dt.datetime(2024, 2, 29, 12),
                 "bb": b"\x00\x01\x02", "en": "green"}),
            (1, {"ti": None, "vc": None, "js": None, "g": None, "tm": -500_000}),
        ]
        with rec.txn(c, label="alltypes: updates (values to and from NULL)") as t:
            t.sql("BEGIN")
            for rid, changes in updates:
                before = dict(live[rid])
                sql, args = at.update_sql(rid, changes)
                t.sql(sql, args, affected=1)
                live[rid] = {**before, **changes}
                t.value("alltypes", "update", at.binlake_row(before), at.binlake_row(live[rid]))
            t.sql("COMMIT")
            t.count("alltypes", "update", len(updates))
        for rid, _ in updates:
            at.check_stored(c, live[rid])
        with rec.txn(c, label="alltypes: deletes") as t:
            t.sql("BEGIN")
            for rid in (2, 5):
                t.sql("DELETE FROM alltypes WHERE id=%s", (rid,), affected=1)
                t.value("alltypes", "delete", at.binlake_row(live.pop(rid)), None)
            t.sql("COMMIT")
            t.count("alltypes", "delete", 2)

    def ddl_kinds(self) -> None:
        rec, c = self.rec, self.c
        rec.ddl(c, "ALTER TABLE kv ADD COLUMN note VARCHAR(32) NULL")
        rec.ddl(c, "CREATE INDEX idx_kv_note ON kv (note)")
        rec.ddl(c, "CREATE TABLE tmp_a (id INT PRIMARY KEY, x INT) ENGINE=InnoDB")
        rec.ddl(c, "RENAME TABLE tmp_a TO tmp_b")
        rec.ddl(c, "ALTER TABLE tmp_b ADD COLUMN y VARCHAR(8), ALGORITHM=COPY")
        with rec.txn(c, label="CREATE TABLE ... SELECT (row format: rows, kind dml)") as t:
            n = t.sql("CREATE TABLE kv_copy ENGINE=InnoDB SELECT k, v FROM kv WHERE k <= 12")
            t.count("kv_copy", "insert", n)
        rec.ddl(c, "TRUNCATE TABLE kv_copy")
        rec.ddl(c, "DROP TABLE kv_copy", logged=self.drop_logged("kv_copy"))
        rec.ddl(c, "DROP TABLE tmp_b", logged=self.drop_logged("tmp_b"))
        rec.ddl(c, "CREATE DATABASE bl2")
        rec.ddl(c, "CREATE TABLE bl2.t (id INT PRIMARY KEY) ENGINE=InnoDB")
        with rec.txn(c, label="insert into a second database") as t:
            t.sql("INSERT INTO bl2.t (id) VALUES (1),(2)", affected=2)
            t.count("bl2.t", "insert", 2)
        rec.ddl(c, "DROP DATABASE bl2")

    def detach(self, conn) -> None:
        """Close the connection that prepared an XA transaction and wait until the server has let
        it go: the server ends a closed session on its own time, and until then another session's
        XA COMMIT/ROLLBACK of its XID fails (XAER_NOTA on a busy MariaDB)."""
        import time

        thread = conn.thread_id()
        conn.close()
        deadline = time.monotonic() + 60
        with self.c.cursor() as cur:
            while True:
                cur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %s", (thread,))
                if cur.fetchone()[0] == 0:
                    return
                if time.monotonic() > deadline:
                    raise AssertionError(f"session {thread} still open 60 s after its connection closed")
                time.sleep(0.01)

    def xa(self) -> None:
        rec = self.rec
        # XA PREPARE, then XA COMMIT from another connection
        a = rec.connect()
        x1 = _xid(b"xa-commit-1")
        with rec.txn(a, label="XA PREPARE (later committed)", kind="xa_prepare",
                     outcome="prepared", end_event="XA_PREPARE", xa_xid=x1) as t:
            t.sql("XA START 'xa-commit-1'")
            self.kv_update(t, 2)
            keys = self.new_keys(1)
            self.kv[keys[0]] = self.word()
            t.sql("INSERT INTO kv (k, v) VALUES (%s, %s)", (keys[0], self.kv[keys[0]]), affected=1)
            t.count("kv", "insert")
            t.sql("XA END 'xa-commit-1'")
            t.sql("XA PREPARE 'xa-commit-1'")
        self.detach(a)
        self.kv_insert(self.c, 2, "ordinary transaction between XA PREPARE and XA COMMIT")
        b = rec.connect()
        with rec.txn(b, label="XA COMMIT", kind="xa_commit", end_event="QUERY_XA_COMMIT",
                     xa_xid=x1) as t:
            t.sql("XA COMMIT 'xa-commit-1'")
        # XA PREPARE then XA ROLLBACK, with a bqual and a format id
        a = rec.connect()
        x2 = _xid(b"xa-rb-2", b"branch", 7)
        with rec.txn(a, label="XA PREPARE (later rolled back)", kind="xa_prepare",
                     outcome="prepared", end_event="XA_PREPARE", xa_xid=x2) as t:
            t.sql("XA START 'xa-rb-2','branch',7")
            t.sql("INSERT INTO kv (k, v) VALUES (%s, 'rolled back')", (10**6,), affected=1)
            t.count("kv", "insert")
            t.sql("XA END 'xa-rb-2','branch',7")
            t.sql("XA PREPARE 'xa-rb-2','branch',7")
        self.detach(a)
        with rec.txn(b, label="XA ROLLBACK", kind="xa_rollback", outcome="rolled_back",
                     end_event="QUERY_XA_ROLLBACK", xa_xid=x2) as t:
            t.sql("XA ROLLBACK 'xa-rb-2','branch',7")
        # XA COMMIT ... ONE PHASE
        x3 = _xid(b"xa-one-3")
        if self.flavor == "mysql":
            kw = {"end_event": "XA_PREPARE", "has_xid": False, "xa_xid": x3}
        else:
            kw = {"end_event": "XID"}
        with rec.txn(b, label="XA COMMIT ONE PHASE", **kw) as t:
            t.sql("XA START 'xa-one-3'")
            self.kv_update(t, 1)
            t.sql("XA END 'xa-one-3'")
            t.sql("XA COMMIT 'xa-one-3' ONE PHASE")
        b.close()

    def big(self, n: int) -> None:
        rec, c = self.rec, self.c
        rec.ddl(c, "CREATE TABLE big (id INT NOT NULL PRIMARY KEY, pad VARCHAR(40) NOT NULL)"
                   " ENGINE=InnoDB")
        with rec.txn(c, label=f"one transaction of {n} rows, bigger than max_binlog_size") as t:
            t.sql("BEGIN")
            batch = 5000
            for lo in range(1, n + 1, batch):
                ids = range(lo, min(n, lo + batch - 1) + 1)
                t.sql("INSERT INTO big (id, pad) VALUES " + ",".join(["(%s,%s)"] * len(ids)),
                      [x for i in ids for x in (i, f"{self.rng.getrandbits(128):032x}")],
                      affected=len(ids))
            t.sql("COMMIT")
            t.count("big", "insert", n)

    def flush(self) -> None:
        """Rotate (FLUSH BINARY LOGS is never logged), so the data spans several files."""
        self.c.cursor().execute("FLUSH BINARY LOGS")
        self.rec.settle()

    def common(self) -> None:
        self.setup()
        self.innodb_dml()
        self.triggers()
        self.fk_cascades()
        self.myisam()
        self.statement_format()
        self.alltypes()
        self.ddl_kinds()
        self.xa()
        self.flush()


# ---------------------------------------------------------------- flavor-specific parts

def _mysql_extras(w: Workload) -> None:
    rec = w.rec
    # binlog_transaction_compression: TRANSACTION_PAYLOAD for transactional row DML only
    z = rec.connect(binlog_transaction_compression="ON")
    w.kv_insert(z, 20, "compressed insert", compressed=True)
    with rec.txn(z, label="compressed multi-statement with trigger rows",
                 compressed=True) as t:
        t.sql("BEGIN")
        w.kv_update(t, 3)
        w.kv_delete(t, 2)
        t.sql("INSERT INTO orders (account_id, amount, status) VALUES (1, '5.00', 'z')",
              affected=1)
        t.count("orders", "insert")
        t.count("audit", "insert")
        t.sql("COMMIT")
    with rec.txn(z, label="MyISAM under compression: not compressed",
                 end_event="QUERY_COMMIT", has_xid=False) as t:
        t.sql("INSERT INTO mylog (msg) VALUES ('not compressed')", affected=1)
        t.count("mylog", "insert")
    rec.ddl(z, "CREATE TABLE z_made (id INT PRIMARY KEY) ENGINE=InnoDB")
    z.close()

    # tagged GTIDs (MySQL 8.3+)
    g = rec.connect()
    g.cursor().execute("SET gtid_next='AUTOMATIC:blue'")
    w.kv_insert(g, 2, "tagged GTID insert")
    with rec.txn(g, label="tagged GTID multi-statement") as t:
        t.sql("BEGIN")
        w.kv_update(t, 1)
        w.kv_delete(t, 1)
        t.sql("COMMIT")
    rec.ddl(g, "CREATE TABLE tagged_made (id INT PRIMARY KEY) ENGINE=InnoDB")
    g.cursor().execute("SET gtid_next='AUTOMATIC:batch_7'")
    w.kv_insert(g, 1, "second tag")
    g.cursor().execute("SET gtid_next='AUTOMATIC'")
    w.kv_insert(g, 1, "untagged again")
    g.close()

    # binlog_row_image MINIMAL / NOBLOB, binlog_row_value_options PARTIAL_JSON
    with rec.txn(w.c, label="docs rows (FULL image)") as t:
        t.sql("INSERT INTO docs (id, title, body, doc) VALUES " + ",".join(["(%s,%s,%s,%s)"] * 4),
              [x for i in range(1, 5) for x in (
                  i, f"doc {i}", "body " * 50,
                  json.dumps({"n": i, "tags": ["a", "b"], "nested": {"x": "y" * 100}}))],
              affected=4)
        t.count("docs", "insert", 4)
    m = rec.connect(binlog_row_image="MINIMAL")
    with rec.txn(m, label="MINIMAL row image update and delete") as t:
        t.sql("BEGIN")
        t.sql("UPDATE docs SET title=CONCAT(title, ' (min)') WHERE id IN (1,2)", affected=2)
        t.sql("DELETE FROM docs WHERE id=4", affected=1)
        t.sql("INSERT INTO docs (id, title) VALUES (5, 'minimal insert')", affected=1)
        t.sql("COMMIT")
        t.count("docs", "update", 2)
        t.count("docs", "delete")
        t.count("docs", "insert")
    m.close()
    nb = rec.connect(binlog_row_image="NOBLOB")
    with rec.txn(nb, label="NOBLOB row image update") as t:
        t.sql("UPDATE docs SET title='noblob' WHERE id=3", affected=1)
        t.count("docs", "update")
    nb.close()
    pj = rec.connect(binlog_row_image="MINIMAL", binlog_row_value_options="PARTIAL_JSON")
    with rec.txn(pj, label="PARTIAL_JSON updates (JSON_SET, JSON_REPLACE, JSON_REMOVE)") as t:
        t.sql("BEGIN")
        t.sql("UPDATE docs SET doc=JSON_SET(doc, '$.n', 100, '$.new', 'v') WHERE id=1",
              affected=1)
        t.sql("UPDATE docs SET doc=JSON_REPLACE(doc, '$.tags[0]', 'z') WHERE id=2", affected=1)
        t.sql("UPDATE docs SET doc=JSON_REMOVE(doc, '$.nested') WHERE id=3", affected=1)
        t.sql("COMMIT")
        t.count("docs", "update", 3)
    pj.close()
    pjf = rec.connect(binlog_row_value_options="PARTIAL_JSON")
    with rec.txn(pjf, label="PARTIAL_JSON with FULL row image") as t:
        t.sql("UPDATE docs SET doc=JSON_SET(doc, '$.n', 200) WHERE id=1", affected=1)
        t.count("docs", "update")
    pjf.close()

    # gtid_mode round trip: ON -> ON_PERMISSIVE -> OFF_PERMISSIVE -> OFF and back
    def gtid_mode(mode: str) -> None:
        rec.admin.cursor().execute(f"SET GLOBAL gtid_mode={mode}")

    gtid_mode("ON_PERMISSIVE")
    o = rec.connect()
    w.kv_insert(o, 1, "gtid_mode=ON_PERMISSIVE: still GTIDs")
    o.close()
    gtid_mode("OFF_PERMISSIVE")
    o = rec.connect()
    w.kv_insert(o, 2, "gtid_mode=OFF_PERMISSIVE: anonymous", anonymous=True)
    o.close()
    gtid_mode("OFF")
    o = rec.connect()
    w.kv_insert(o, 2, "gtid_mode=OFF: anonymous", anonymous=True)
    with rec.txn(o, label="gtid_mode=OFF: anonymous multi-statement", anonymous=True) as t:
        t.sql("BEGIN")
        w.kv_update(t, 2)
        t.sql("COMMIT")
    with rec.txn(o, label="gtid_mode=OFF: anonymous MyISAM", anonymous=True,
                 end_event="QUERY_COMMIT", has_xid=False) as t:
        t.sql("INSERT INTO mylog (msg) VALUES ('anonymous')", affected=1)
        t.count("mylog", "insert")
    rec.ddl(o, "CREATE TABLE anon_made (id INT PRIMARY KEY) ENGINE=InnoDB", anonymous=True)
    o.close()
    gtid_mode("OFF_PERMISSIVE")
    gtid_mode("ON_PERMISSIVE")
    o = rec.connect()
    w.kv_insert(o, 1, "back to ON_PERMISSIVE: GTIDs again")
    o.close()
    with rec.admin.cursor() as cur:  # gtid_mode=ON is refused while one is ongoing: wait, or fail saying so

        def no_anonymous() -> bool:
            cur.execute("SHOW STATUS LIKE 'ONGOING_ANONYMOUS_TRANSACTION_COUNT'")
            return int(cur.fetchone()[1]) == 0

        until(no_anonymous, "no anonymous transaction ongoing before gtid_mode=ON", timeout=60, every=0.1)
    gtid_mode("ON")
    w.kv_insert(w.c, 1, "gtid_mode=ON again")


def _mariadb_extras(w: Workload) -> None:
    rec = w.rec
    # several GTID domains
    for domain in (1, 2):
        d = rec.connect(gtid_domain_id=domain)
        w.kv_insert(d, 2, f"gtid domain {domain} insert")
        with rec.txn(d, label=f"gtid domain {domain} multi-statement") as t:
            t.sql("BEGIN")
            w.kv_update(t, 1)
            t.sql("COMMIT")
        d.close()
    d = rec.connect(gtid_domain_id=1)
    rec.ddl(d, "CREATE TABLE domain1_made (id INT PRIMARY KEY) ENGINE=InnoDB")
    d.close()
    w.kv_insert(w.c, 1, "domain 0 again")

    # a logged BEGIN ... ROLLBACK: statement format, MyISAM changed inside a rolled back trx
    s = rec.connect(binlog_format="STATEMENT")
    with rec.txn(s, label="BEGIN ... ROLLBACK with a MyISAM change", outcome="rolled_back",
                 end_event="QUERY_ROLLBACK", has_xid=False) as t:
        t.sql("BEGIN")
        t.sql("INSERT INTO stmt_t (id, s) VALUES (2000, 'rolled back')", affected=1)
        t.sql("INSERT INTO mylog (msg) VALUES ('kept: MyISAM cannot roll back')", affected=1)
        t.sql("ROLLBACK")
    s.close()

    # log_bin_compress: compressed QUERY and ROWS events (types 165-171)
    with rec.admin.cursor() as cur:
        cur.execute("SELECT @@global.log_bin_compress_min_len")
        min_len = int(cur.fetchone()[0])
        cur.execute("SET GLOBAL log_bin_compress=ON")
    long = "x" * (4 * min_len)
    z = rec.connect()
    with rec.txn(z, label="log_bin_compress: big rows (compressed rows events)",
                 compressed=True) as t:
        t.sql("BEGIN")
        vals = {k: w.word() for k in w.new_keys(3)}
        t.sql("INSERT INTO kv (k, v) VALUES " + ",".join(["(%s,%s)"] * 3),
              [x for kv in vals.items() for x in kv], affected=3)
        w.kv.update(vals)
        t.count("kv", "insert", 3)
        t.sql("INSERT INTO docs (id, title, body) VALUES (%s, 'long', %s)", (1, long), affected=1)
        t.count("docs", "insert")
        t.sql("UPDATE docs SET body=CONCAT(body, 'y') WHERE id=1", affected=1)
        t.count("docs", "update")
        t.sql("COMMIT")
    w.kv_insert(z, 1, "log_bin_compress: small row (not compressed)")
    with rec.txn(z, label="log_bin_compress: small update (not compressed)") as t:
        t.sql("UPDATE stmt_t SET s='c' WHERE id=1000", affected=1)
        t.count("stmt_t", "update")
    rec.ddl(z, "CREATE TABLE short_ddl (id INT PRIMARY KEY) ENGINE=InnoDB")
    comment = "c" * (2 * min_len)
    rec.ddl(z, f"CREATE TABLE long_ddl (id INT PRIMARY KEY) ENGINE=InnoDB COMMENT='{comment}'",
            label="long DDL (compressed QUERY)", compressed=True)
    z.close()
    zs = rec.connect(binlog_format="STATEMENT")
    with rec.txn(zs, label="log_bin_compress: long statement (QUERY_COMPRESSED)",
                 compressed=True) as t:
        t.sql(f"INSERT INTO stmt_t (id, s) VALUES (3000, LEFT('{long}', 60))", affected=1)
    zs.close()
    with rec.admin.cursor() as cur:
        cur.execute("SET GLOBAL log_bin_compress=OFF")


def _server_facts(rec: Recorder) -> dict:
    with rec.admin.cursor() as cur:
        cur.execute("SELECT @@version, @@server_id")
        version, server_id = cur.fetchone()
        uuid = None
        if rec.flavor == "mysql":
            cur.execute("SELECT @@server_uuid")
            uuid = cur.fetchone()[0]
    return {"version": version, "server_id": int(server_id), "server_uuid": uuid}


def run_workload(server, seed: int = 1234, big_rows: int = 0) -> dict:
    """Run the whole workload on `server` and return its ground truth (JSON-serialisable)."""
    if server.flavor == "mysql":
        return run_mysql_workload(server, seed, big_rows)
    if server.flavor == "mariadb":
        return run_mariadb_workload(server, seed, big_rows)
    raise ValueError(f"unknown flavor {server.flavor!r}")


def _run(server, seed: int, big_rows: int, extras) -> dict:
    rec = Recorder(server, random.Random(seed))
    start = rec.state()
    w = Workload(rec)
    w.common()
    extras(w)
    if big_rows:
        w.big(big_rows)
    w.c.close()
    truth = {
        "flavor": server.flavor,
        **_server_facts(rec),
        "seed": seed,
        "big_rows": big_rows,
        "start": {"file": start["file"], "pos": start["pos"]},
        "fk_cascades_logged": FK_CASCADES_LOGGED[server.flavor],
        "transactions": rec.txns,
    }
    rec.admin.close()
    return truth


def run_mysql_workload(server, seed: int = 1234, big_rows: int = 0) -> dict:
    return _run(server, seed, big_rows, _mysql_extras)


def run_mariadb_workload(server, seed: int = 1234, big_rows: int = 0) -> dict:
    return _run(server, seed, big_rows, _mariadb_extras)
