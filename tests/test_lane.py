"""The lane (binlake.assemble.lane) writes, byte for byte, what the walk writes.

`binlake scan` hands runs of ordinary transactions to compiled code that writes their lines itself.
Each file of the real-server recordings (tests/data, both flavors), the bundled samples and the
public corpus is scanned as `binlake scan --rows --anomalies` prints it, with the lane and by the
reference walk (`Options(skim=False)`: every event through the boundary parser and each
transaction's look-ahead, the walk the ground-truth tests hold to the servers); the bytes must be
equal, with and without rows, and with segments small enough to fill inside a transaction. That the
lane takes what it should is counted from the files' own headers, read with no binlake code.
Damaged copies give the same lines both ways. The values the lane writes are held to the servers
themselves by the type matrix (test_type_matrix) and the random rows of every type
(test_rowdecode, test_row_metadata), which read their records from the lane's lines.
"""

from __future__ import annotations

import random
import zlib
from decimal import Decimal
from pathlib import Path

import pytest

from binlake.errors import BinlakeError
from tests.support.scanning import DATA, PUBLIC, REPO, damaged_rows, headers, lines_records, ordinary_count, scan_lines
from tests.test_public_fixtures import READABLE
from tests.test_rowdecode import logged

SAMPLES = REPO / "binlake" / "samples"
REAL = sorted([*DATA.glob("mysql/binlog.0*"), *DATA.glob("mariadb/binlog.0*"), *SAMPLES.glob("*/binlog.0*")])
GTIDS = {33, 34}  # GTID, ANONYMOUS_GTID (the servers' type codes)
# TABLE_MAP, rows v1 and v2 (not partial JSON, not MariaDB's compressed), ROWS_QUERY, ANNOTATE_ROWS
INSIDE = {19, 23, 24, 25, 30, 31, 32, 29, 160}
MARIA_NOT_ORDINARY = 1 | 64 | 128  # FL_STANDALONE, FL_PREPARED_XA, FL_COMPLETED_XA


def _both(path: Path, **opts) -> tuple[bytes, bytes, int]:
    """The lines with the lane and by the reference walk, and how many transactions the lane wrote."""
    laned, summary = scan_lines([path], **opts)
    walked, none = scan_lines([path], skim=False, **opts)
    assert none.laned == 0
    assert {k: v for k, v in vars(summary).items() if k != "laned"} == \
        {k: v for k, v in vars(none).items() if k != "laned"}
    return laned, walked, summary.laned


def _ordinary(data: bytes) -> int:
    """Transactions of the file the lane is for, from its headers (ordinary_count): a GTID (MySQL's,
    with or without a GTID, then BEGIN; MariaDB's not standalone nor XA), only table maps, v1/v2
    rows and their statements, then an XID. (That each table is one the compiled decoder takes is
    not read here: every table of these files is.)"""
    return ordinary_count(data, GTIDS, INSIDE, MARIA_NOT_ORDINARY)


@pytest.mark.parametrize("path", REAL, ids=lambda p: str(p.relative_to(REPO)))
def test_same_lines_on_real_server_files(path: Path):
    laned, walked, taken = _both(path)
    assert laned == walked
    assert taken == _ordinary(path.read_bytes()), "the lane took every ordinary transaction"


def test_the_recordings_have_transactions_for_the_lane():
    assert all(_ordinary(p.read_bytes()) for p in DATA.glob("*/binlog.000001"))


@pytest.mark.parametrize("opts", [{"rows": False}, {"segment_rows": 2}, {"segment_bytes": 200}],
                         ids=["no-rows", "2-row-segments", "200-byte-segments"])
def test_same_lines_without_rows_and_with_small_segments(opts: dict):
    for path in REAL:
        laned, walked, _ = _both(path, **opts)
        assert laned == walked, path


@pytest.mark.parametrize("name", sorted(READABLE))
def test_same_lines_on_the_public_corpus(name: str):
    path = PUBLIC / name
    if not path.exists():
        pytest.fail(f"missing from the public corpus: {path}")
    laned, walked, _ = _both(path)
    assert laned == walked


def test_the_lane_takes_anonymous_transactions():
    """The public corpus holds what the recordings do not (anonymous GTIDs: MySQL's shipped
    gtid_mode=OFF); the lane must take every ordinary one, not leave them to the walk: counted from
    the headers of each public file that has them and one format (a second FORMAT_DESCRIPTION, a
    server restarted in the file, is the walk's to read)."""
    counted = 0
    for name in sorted(READABLE):
        path = PUBLIC / name
        data = path.read_bytes() if path.exists() else b""
        if not _anonymous(path) or sum(1 for _pos, t, _size in headers(data) if t == 15) != 1:
            continue
        assert _both(path)[2] == _ordinary(data), name
        counted += _ordinary(data)
    assert counted >= 40  # the files' own headers: 36 in shyiko's checksum-none file alone


def _anonymous(path: Path) -> int:
    return sum(1 for _pos, t, _size in headers(path.read_bytes()) if t == 34) if path.exists() else 0


@pytest.mark.parametrize("how", ["flipped", "cut"])
def test_a_damaged_transaction_gives_the_same_lines(tmp_path: Path, how: str):
    path = damaged_rows(DATA / "mysql" / "binlog.000001", tmp_path, how, 1 / 3)
    laned, walked, taken = _both(path)
    assert laned == walked and taken > 0
    code = b'"CHECKSUM_MISMATCH"' if how == "flipped" else b'"TRUNCATED"'
    assert code in laned


# Statements that are not UTF-8 (a BLOB's literal bytes), as the servers log them in ROWS_QUERY /
# ANNOTATE_ROWS: each kind of ill-formed sequence Python's "replace" handler takes for one U+FFFD
# (a lone continuation byte, a truncated sequence, overlongs, surrogates, past U+10FFFF, 5 bytes),
# beside well-formed text. None holds a quote or a backslash: they stay literal bytes.
NOT_UTF8 = [b"\xff", b"\x80\xbf", b"\xc3", b"\xc0\xaf", b"\xe2\x82", b"\xe0\x80\xaf", b"\xed\xa0\x80",
            b"\xf0\x9f\x98", b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80",
            b"\xe1\x80\xe2\xf0\x91\x92\xf1\xbf\x41", b"ok \xe2\x82\xac \xf0\x9f\x98\x80 \xe2\x82 end"]


@pytest.mark.parametrize("server", ["mysql_server", "mariadb_server"])
def test_a_statement_that_is_not_utf8(server: str, request, tmp_path: Path):
    """Each INSERT's statement, as the server logs it beside its rows, is the statement the test
    sent, its bytes decoded as Python's bytes.decode("utf-8", "replace") does (docs/transactions.md,
    "Fields"); the lane writes every one of these transactions."""
    sent = [b"INSERT INTO %s.t VALUES (%d, _binary'" % (b"%s", i) + raw + b"')" for i, raw in enumerate(NOT_UTF8)]

    def write(cur, db: str) -> None:
        for statement in sent:  # the bytes as they are: pymysql sends a str's surrogates back as bytes
            cur.execute((statement % db.encode()).decode("utf-8", "surrogateescape"))

    files = logged(request.getfixturevalue(server), "CREATE TABLE {db}.t (id INT PRIMARY KEY, b BLOB)", write, tmp_path)
    lines, summary = scan_lines(files)
    got = lines_records(lines)
    assert summary.laned == len(got["transaction"]) == len(sent)
    assert lines == scan_lines(files, skim=False)[0]
    statements = [r["rows_query"] for r in got["row_change"]]
    assert len(statements) == len(sent)
    for n, (text, statement) in enumerate(zip(statements, sent, strict=True)):
        assert text.endswith(statement.split(b".t VALUES", 1)[1].decode("utf-8", "replace")), n


@pytest.mark.parametrize("flavor", ["mysql", "mariadb"])
def test_damage_anywhere_gives_the_same_lines(tmp_path: Path, flavor: str):
    """Seeded damage over a whole recording — one byte flipped at each of 40 places, or the file
    cut there — gives the same lines with the lane as by the reference walk, errors included."""
    src = DATA / flavor / "binlog.000001"
    data = src.read_bytes()
    rnd = random.Random(4162)
    for k in range(40):
        at = rnd.randrange(4, len(data))
        damaged = bytearray(data)
        if k % 4:
            damaged[at] ^= 1 << rnd.randrange(8)
        else:
            del damaged[at:]
        path = tmp_path / f"binlog.{k:06d}"
        path.write_bytes(bytes(damaged))
        assert _outcome(path) == _outcome(path, skim=False), f"damage {k} at {at}"


@pytest.mark.parametrize("rows", [True, False], ids=["rows", "no-rows"])
def test_values_damaged_under_a_good_checksum(tmp_path: Path, rows: bool):
    """A byte of a row image changed and the event's CRC32 written again for it (what a server's
    bug or a bad disk under the checksum would give): the lane writes or leaves the transaction
    as the walk does, whose reference decoder reads every value — with rows, and without them,
    where the lane only counts the rows but must refuse every value the walk cannot read."""
    rnd = random.Random(162 + rows)
    files = [p for p in REAL if p.stat().st_size > 4096]
    for k in range(48):
        src = rnd.choice(files)
        data = bytearray(src.read_bytes())
        pos, _, size = rnd.choice([h for h in headers(bytes(data)) if h[1] in (23, 24, 25, 30, 31, 32)])
        at = rnd.randrange(pos + 19 + 10, pos + size - 4)
        data[at] ^= 1 << rnd.randrange(8)
        data[pos + size - 4:pos + size] = zlib.crc32(data[pos:pos + size - 4]).to_bytes(4, "little")
        path = tmp_path / f"binlog.{k:06d}"
        path.write_bytes(bytes(data))
        assert _outcome(path, rows=rows) == _outcome(path, rows=rows, skim=False), f"{src.name} {at}"


DECIMALS = [(10, 2), (65, 30), (5, 0), (4, 4), (30, 10)]  # precision, scale: 5 to 30 bytes each


@pytest.mark.parametrize("rows", [True, False])
def test_decimals_damaged_under_a_good_checksum(mysql_server, tmp_path: Path, rows: bool):
    """Bits flipped inside the DECIMAL values of one-row inserts (a table of DECIMALs but its key),
    each event's CRC32 written again: the lane takes or refuses each transaction as the walk does,
    whose reference decoder reads every value. Without rows the lane checks a decimal's groups
    without writing its digits (decimal_valid): a damaged value it took would show only here."""
    rnd = random.Random(4163 + rows)
    columns = ", ".join(f"d{i} DECIMAL({p},{s})" for i, (p, s) in enumerate(DECIMALS))

    def value(p: int, s: int) -> Decimal:
        digits = p if rnd.random() < 0.2 else rnd.randint(s, p)  # a fifth at the type's widest
        return Decimal(rnd.choice((-1, 1)) * rnd.randrange(10 ** digits)).scaleb(-s)

    def write(cur, db: str) -> None:
        for i in range(60):
            cur.execute(f"INSERT INTO {db}.d VALUES (%s{', %s' * len(DECIMALS)})",
                        (i, *(value(p, s) for p, s in DECIMALS)))

    files = logged(mysql_server, f"CREATE TABLE {{db}}.d (id INT PRIMARY KEY, {columns})", write, tmp_path)
    inserts = [(f, h) for f in files for h in headers(f.read_bytes()) if h[1] == 30]  # WRITE_ROWS_EVENT
    assert len(inserts) == 60
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    refused = 0
    for _ in range(96):
        src, (pos, _, size) = rnd.choice(inserts)
        data = bytearray(src.read_bytes())
        extra = int.from_bytes(data[pos + 27:pos + 29], "little")  # the post-header's extra data, its length included
        values = pos + 19 + 8 + extra + 1 + 1 + 1 + 4  # columns, their bitmap, the null bitmap, the key
        at = rnd.randrange(values, pos + size - 4)
        # mostly a high bit: at a group's first byte it makes the group more than 9 digits hold
        data[at] ^= 1 << rnd.choice((5, 6, 7, rnd.randrange(8)))
        data[pos + size - 4:pos + size] = zlib.crc32(data[pos:pos + size - 4]).to_bytes(4, "little")
        path = damaged / src.name
        path.write_bytes(bytes(data))
        walked = _outcome(path, rows=rows, skim=False)
        assert _outcome(path, rows=rows) == walked, f"{src.name} {at}"
        refused += b'"anomaly"' in walked[0]
    assert refused >= 5  # the walk refused 8 and 9 of these seeded values: the lane's check was put to work


def _outcome(path: Path, **opts) -> tuple[bytes, str | None]:
    """The lines a scan prints, and the error it stops with (file:offset: reason), if any."""
    try:
        return scan_lines([path], **opts)[0], None
    except BinlakeError as e:
        return b"", str(e)
