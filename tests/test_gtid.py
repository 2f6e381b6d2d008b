"""GTID texts read into intervals: the forms MySQL prints (`SHOW BINARY LOG STATUS`'s
Executed_Gtid_Set: `uuid:1-5:7,uuid:tag:1-3`), MariaDB's `domain-server-seq`, and binlake's
own purge-gap form `d-s-a..b` (binlake.archive.run)."""

from __future__ import annotations

from binlake.binlog.gtid import Intervals, maria_range, parse_gtid_set

U = "3e11fa47-71ca-11e1-9e33-c80aa9429562"  # the uuid of MySQL's manual's GTID examples


def test_mysql_sets_and_single_gtids_merge_into_closed_intervals():
    known = Intervals()
    known.add_text(f"{U}:1-5:7")
    known.add_gtid(f"{U}:6")  # fills the hole between 5 and 7
    known.add_gtid(f"{U}:9")
    known.add_text(f"{U}:blue:1-3")
    assert known.closed() == [(U, 1, 7), (U, 9, 9), (f"{U}:blue", 1, 3)]


def test_mariadb_gtids_gtid_lists_and_purge_gaps():
    known = Intervals()
    known.add_text("0-1-10", from_one=True)  # a GTID_LIST entry: all of domain 0 up to 10
    known.add_gtid("0-1-12")
    known.add_text(maria_range(0, 1, 13, 20))  # recorded purged
    known.add_text("2-1-4")  # one GTID of domain 2
    assert maria_range(0, 1, 13, 20) == "0-1-13..20"
    assert known.closed() == [("0", 1, 10), ("0", 12, 20), ("2", 4, 4)]


def test_derived_transaction_ids_are_no_gtids():
    known = Intervals()
    known.add_gtid("6b1f3c2e-8d4a-5b7e-9c1d-0a2b3c4d5e6f")  # a uuid5 txn_id: no ':' and not d-s-n
    known.add_text("")
    assert known.closed() == []


def test_sets_print_as_mysql_prints_them():
    assert str(parse_gtid_set(f"{U}:7:1-5,{U}:blue:3:1-2")) == f"{U}:1-5:7:blue:1-3"
