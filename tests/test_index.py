"""The transaction index (jumping by transaction_length where it can) agrees with the scan.

The scan is the reference here: test_ground_truth holds it to the workloads' record of every
transaction, test_public_fixtures to mysqlbinlog's view of the public files. Damage is made by
the tests themselves, and what it must change is said from where it was made."""

from __future__ import annotations

import zlib

import pytest

from binlake.archive.index import IndexEntry, Indexer, index_transactions, vouched_entry
from binlake.binlog.framing import BinlogReader
from binlake.errors import BinlogError
from tests.support.scanning import DATA, PUBLIC, scan

FILES = [
    PUBLIC / "Percona-Lab__percona-binlog-server/data_80045_gtid/binlog.000001",
    PUBLIC / "apecloud__mysql-binlog-connector-rust/mysql-bin.000057",
    PUBLIC / "blackbeam__rust_mysql_common/binlog_transaction_with_GTID_TAG.000001",
    PUBLIC / "blackbeam__rust_mysql_common/mariadb-bin.000001",
    PUBLIC / "ottok__mariadb-10.3/mdev6020-mysql-bin.000001",
    PUBLIC / "alibaba__canal/mysql-bin.000001",
    PUBLIC / "enhancedformysql__mysql-8.0.40/binlog_transaction.000001",
    PUBLIC / "enhancedformysql__mysql-8.0.40/corrupt-relay-bin.000624",  # MySQL 5.0 autocommit, an invalid event
]


@pytest.mark.parametrize("path", FILES + sorted(DATA.glob("*/binlog.0*")), ids=lambda p: p.name)
@pytest.mark.parametrize("jump", [True, False])
def test_index_matches_scan(path, jump):
    txns = scan(path, rows=False)["transaction"]
    with BinlogReader.open(path) as r:
        entries = list(index_transactions(r, path.name, jump=jump))
    assert [(e.start, e.length, e.txn_id, e.gtid, e.commit_ts) for e in entries] == [
        (t["start_pos"], t["end_pos"] - t["start_pos"], t["txn_id"], t["gtid"], t["commit_ts"])
        for t in txns]


def _fed(path, trust_lengths: bool, data: bytes | None = None) -> list[IndexEntry]:
    """Every frame through an Indexer one by one, as the archive's copy feeds it."""
    with BinlogReader.open(path) if data is None else BinlogReader(data, name=str(path)) as r:
        indexer = Indexer(path.name, r.fde, trust_lengths=trust_lengths)
        out = []
        try:
            for f in r.frames(r.first_event_pos):
                out += indexer.feed(f)
        except BinlogError:  # a cut file: its tail
            pass
        out += indexer.finish(r.end)
    return out


@pytest.mark.parametrize("path", FILES + sorted(DATA.glob("*/binlog.0*")), ids=lambda p: p.name)
def test_counted_off_lengths_equal_the_walk(path, monkeypatch):
    import binlake.archive.index

    described = []
    real = binlake.archive.index.describe
    monkeypatch.setattr(binlake.archive.index, "describe", lambda *a, **k: described.append(1) or real(*a, **k))
    counted = _fed(path, True)
    n_counted, described[:] = len(described), []
    assert counted == _fed(path, False)
    with BinlogReader.open(path) as r:
        vouched = sum(1 for f in r.frames(r.first_event_pos, verify=False) if vouched_entry(f, path.name))
    # where GTIDs give lengths, their transactions' events were not walked
    assert (n_counted < len(described)) == (vouched > 0), (n_counted, len(described), vouched)


def test_a_length_that_ends_inside_an_event_makes_the_transaction_incomplete():
    path = sorted(DATA.glob("mysql/binlog.0*"))[0]
    data = bytearray(path.read_bytes())
    with BinlogReader.open(path) as r:
        gtid = next(f for f in r.frames(r.first_event_pos) if vouched_entry(f, path.name)
                    and 251 <= vouched_entry(f, path.name).length < 65536)
        n = vouched_entry(gtid, path.name).length
        body_at = gtid.pos + 19
        at = bytes(gtid.body).rfind(b"\xfc" + n.to_bytes(2, "little"))
    assert at > 0
    data[body_at + at + 1:body_at + at + 3] = (n - 1).to_bytes(2, "little")  # one byte short of its XID's end
    data[gtid.end - 4:gtid.end] = zlib.crc32(data[gtid.pos:gtid.end - 4]).to_bytes(4, "little")
    walked, counted = _fed(path, False, bytes(data)), _fed(path, True, bytes(data))
    hit = [i for i, e in enumerate(walked) if e.start == gtid.pos]
    assert len(hit) == 1 and walked[hit[0]].complete and walked[hit[0]].length == n
    assert counted[hit[0]] == IndexEntry(gtid.pos, n, walked[hit[0]].txn_id, walked[hit[0]].gtid,
                                         walked[hit[0]].commit_ts, complete=False)
    # the transactions after it are indexed as before
    assert counted[:hit[0]] + counted[hit[0] + 1:] == walked[:hit[0]] + walked[hit[0] + 1:]


def test_a_file_that_ends_inside_a_counted_off_transaction():
    path = sorted(DATA.glob("mysql/binlog.0*"))[0]
    whole = _fed(path, True)
    cut = whole[-2].start + whole[-2].length // 2
    data = path.read_bytes()
    counted, walked = _fed(path, True, data[:cut]), _fed(path, False, data[:cut])
    assert counted[-1] == IndexEntry(whole[-2].start, cut - whole[-2].start, whole[-2].txn_id, whole[-2].gtid,
                                     whole[-2].commit_ts, complete=False)
    assert counted[:-1] == walked[:-1] == whole[:-2]


@pytest.mark.parametrize("path", sorted(DATA.glob("mysql/binlog.0*")), ids=lambda p: p.name)
def test_the_jumps_are_counted_off_by_the_compiled_loop(path, monkeypatch):
    """With `jump`, the transactions whose GTID or ANONYMOUS_GTID events give their lengths (every
    one a MySQL 8+ server writes whole) are counted off by the archive's compiled loop; the tagged
    GTIDs' (type 42, read in Python) are jumped as before."""
    import binlake.archive.index
    from binlake.archive import loop

    compiled = loop()
    assert compiled is not None, "binlake.archive._eventruns is not built"
    counted = []

    class Counting:
        def txns(self, *args):
            got = compiled.txns(*args)
            counted.extend(got[4])
            return got

    monkeypatch.setattr(binlake.archive.index, "loop", lambda: Counting())
    with BinlogReader.open(path) as r:
        entries = list(index_transactions(r, path.name))
        vouched = [f.pos for f in r.frames(r.first_event_pos) if f.type in (33, 34) and vouched_entry(f, path.name)]
    assert [start for start, *_ in counted] == vouched
    assert [e.start for e in entries if e.start in set(vouched)] == vouched
