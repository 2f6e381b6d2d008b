"""The compiled walk over runs of ordinary transactions (BinlogReader.skim) changes no record.

Each file of the real-server recordings (tests/data, both flavors), the bundled samples and the
public corpus is scanned twice, the skim on and off (`Options(skim=False)`: every event through the
boundary parser and each transaction's look-ahead, the walk the ground-truth tests hold to the
servers); transactions, row changes (as `scan --rows` writes them) and anomalies must be equal.
That the skim takes what it should is checked against the files' own headers, read with no
binlake code: every transaction of a GTID, a QUERY BEGIN, table maps and rows, and an XID.
Damaged copies (a flipped byte, a cut inside a transaction) give the same records both ways.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from binlake.assemble import Options
from binlake.binlog.framing import BinlogReader
from binlake.scan import scan_files
from binlake.sinks import LineSink
from tests.support.scanning import DATA, PUBLIC, REPO, headers
from tests.test_public_fixtures import READABLE

SAMPLES = REPO / "binlake" / "samples"
REAL = sorted([*DATA.glob("mysql/binlog.0*"), *DATA.glob("mariadb/binlog.0*"), *SAMPLES.glob("*/binlog.0*")])
GTIDS, MARIA_GTID, QUERY, XID = (33, 34, 42), 162, 2, 16
# TABLE_MAP, rows v1/v2/partial, MariaDB's compressed rows, ROWS_QUERY, ANNOTATE_ROWS (the servers' type codes)
INSIDE = {19, 23, 24, 25, 30, 31, 32, 39, *range(166, 172), 29, 160}


def _records(path: Path, skim: bool) -> tuple[list[bytes], int]:
    """Every record a scan makes, in order, as JSON; and how many transactions the skim took."""
    out: list[bytes] = []
    taken = 0
    original = BinlogReader.skim

    def counting(self, *args, **kw):
        nonlocal taken
        got = original(self, *args, **kw)
        taken += len(got[0])
        return got

    BinlogReader.skim = counting  # type: ignore[method-assign]
    try:
        scan_files([path], Options(skim=skim), lambda kind, rec: out.append(orjson.dumps(rec)),
                   LineSink(out.extend))
    finally:
        BinlogReader.skim = original  # type: ignore[method-assign]
    return out, taken


def _ordinary(data: bytes) -> int:
    """Transactions of the file that are GTID, BEGIN (none after a MariaDB GTID that is not
    standalone), table maps and rows, XID: from the event headers and the BEGIN's text."""
    n = 0
    at = headers(data)
    for k, (pos, t, _size) in enumerate(at):
        j = k + 1
        if t == MARIA_GTID and not data[pos + 19 + 12] & (1 | 128):
            pass
        elif t in GTIDS and j < len(at) and at[j][1] == QUERY and _text(data, at[j]) == b"BEGIN":
            j += 1
        else:
            continue
        while j < len(at) and at[j][1] in INSIDE:
            j += 1
        n += j < len(at) and at[j][1] == XID
    return n


def _text(data: bytes, header: tuple[int, int, int]) -> bytes:
    pos, _, size = header
    body = data[pos + 19:pos + size - 4]
    return body[13 + int.from_bytes(body[11:13], "little") + body[8] + 1:]


@pytest.mark.parametrize("path", REAL, ids=lambda p: str(p.relative_to(REPO)))
def test_same_records_on_real_server_files(path: Path):
    skimmed, taken = _records(path, True)
    walked, none = _records(path, False)
    assert skimmed == walked and none == 0
    assert taken == _ordinary(path.read_bytes()), "the skim took every ordinary transaction"


def test_the_recordings_have_ordinary_transactions_to_skim():
    assert all(_ordinary(p.read_bytes()) for p in DATA.glob("*/binlog.000002"))


@pytest.mark.parametrize("name", sorted(READABLE))
def test_same_records_on_the_public_corpus(name: str):
    path = PUBLIC / name
    if not path.exists():
        pytest.fail(f"missing from the public corpus: {path}")
    assert _records(path, True)[0] == _records(path, False)[0]


def _damaged(tmp_path: Path, how: str) -> Path:
    src = DATA / "mysql" / "binlog.000002"
    data = bytearray(src.read_bytes())
    at = headers(bytes(data))
    rows = [h for h in at if h[1] in (30, 31, 32)]
    pos, _, size = rows[len(rows) // 2]
    if how == "flipped":
        data[pos + size - 8] ^= 0xFF
    else:
        data = data[:pos + size // 2]
    out = tmp_path / f"{how}.000002"
    out.write_bytes(bytes(data))
    return out


@pytest.mark.parametrize("how", ["flipped", "cut"])
def test_a_damaged_transaction_gives_the_same_records(tmp_path: Path, how: str):
    path = _damaged(tmp_path, how)
    skimmed, taken = _records(path, True)
    assert skimmed == _records(path, False)[0]
    code = b'"CHECKSUM_MISMATCH"' if how == "flipped" else b'"TRUNCATED"'
    assert any(code in rec for rec in skimmed) and taken > 0
