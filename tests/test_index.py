"""The transaction index (jumping by transaction_length where it can) agrees with the scan."""

from __future__ import annotations

import pytest

from binlake.binlog.framing import BinlogReader
from binlake.index import index_transactions
from tests.support.scanning import DATA, PUBLIC, scan

FILES = [
    PUBLIC / "Percona-Lab__percona-binlog-server/data_80045_gtid/binlog.000001",
    PUBLIC / "apecloud__mysql-binlog-connector-rust/mysql-bin.000057",
    PUBLIC / "blackbeam__rust_mysql_common/binlog_transaction_with_GTID_TAG.000001",
    PUBLIC / "blackbeam__rust_mysql_common/mariadb-bin.000001",
    PUBLIC / "ottok__mariadb-10.3/mdev6020-mysql-bin.000001",
    PUBLIC / "alibaba__canal/mysql-bin.000001",
    PUBLIC / "enhancedformysql__mysql-8.0.40/binlog_transaction.000001",
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
