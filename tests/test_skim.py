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

from binlake.assemble.outputs import Records
from binlake.assemble.scan import scan_files
from binlake.assemble.sinks import LineSink
from binlake.assemble.walk import Options
from binlake.binlog.framing import BinlogReader
from tests.support.scanning import DATA, PUBLIC, REPO, damaged_rows, ordinary_count
from tests.test_public_fixtures import READABLE

SAMPLES = REPO / "binlake" / "samples"
REAL = sorted([*DATA.glob("mysql/binlog.0*"), *DATA.glob("mariadb/binlog.0*"), *SAMPLES.glob("*/binlog.0*")])
GTIDS = {33, 34, 42}  # GTID, ANONYMOUS_GTID, GTID_TAGGED (the servers' type codes)
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
        scan_files([path], Options(skim=skim), Records(lambda rec: out.append(orjson.dumps(rec)),
                                                      lambda rec: out.append(orjson.dumps(rec)), LineSink(out.extend)))
    finally:
        BinlogReader.skim = original  # type: ignore[method-assign]
    return out, taken


def _ordinary(data: bytes) -> int:
    """Transactions of the file that are GTID, BEGIN (none after a MariaDB GTID that is not
    standalone), table maps and rows, XID: from the event headers and the BEGIN's text."""
    return ordinary_count(data, GTIDS, INSIDE, 1 | 128)  # not FL_STANDALONE nor FL_COMPLETED_XA


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


@pytest.mark.parametrize("how", ["flipped", "cut"])
def test_a_damaged_transaction_gives_the_same_records(tmp_path: Path, how: str):
    path = damaged_rows(DATA / "mysql" / "binlog.000002", tmp_path, how, 0.5)
    skimmed, taken = _records(path, True)
    assert skimmed == _records(path, False)[0]
    code = b'"CHECKSUM_MISMATCH"' if how == "flipped" else b'"TRUNCATED"'
    assert any(code in rec for rec in skimmed) and taken > 0
