"""GTID texts and the server's chain over them: the forms MySQL prints (`SHOW BINARY LOG
STATUS`'s Executed_Gtid_Set: `uuid:1-5:7,uuid:tag:1-3`), MariaDB's `domain-server-seq`, and
binlake's own purge-gap form `d-s-a..b` (binlake.archive.run)."""

from __future__ import annotations

from binlake.archive.chain import covers, follows, missing, same_gtids
from binlake.binlog.gtid import maria_range, parse_gtid_set

U = "3e11fa47-71ca-11e1-9e33-c80aa9429562"  # the uuid of MySQL's manual's GTID examples


def test_the_mysql_chain_is_a_files_previous_gtids_and_its_own():
    # MySQL's manual: PREVIOUS_GTIDS holds the GTIDs of all previous binary log files
    nxt = follows(f"{U}:1-5", f"{U}:6-7:9", "mysql")
    assert nxt == f"{U}:1-7:9"
    assert same_gtids(nxt, f"{U}:1-7:9", "mysql") and covers(nxt, f"{U}:9", "mysql")
    assert missing(f"{U}:1-5", f"{U}:1-9", "mysql") == f"{U}:6-9"
    assert not covers(f"{U}:1-5", f"{U}:blue:1", "mysql")  # a tag is a sequence of its own


def test_the_mariadb_chain_is_the_last_sequence_number_per_domain():
    # MariaDB's GTID_LIST: the last GTID per (domain, server) before the file
    nxt = follows("0-1-10,1-2-4", "0-1-12,0-3-11", "mariadb")
    assert same_gtids(nxt, "0-1-12,1-2-4", "mariadb")
    assert missing("0-1-10", "0-1-20,2-1-3", "mariadb") == "0-11..20,2-1..3"


def test_purge_gaps_print_in_binlakes_own_form():
    assert maria_range(0, 1, 13, 20) == "0-1-13..20"


def test_sets_print_as_mysql_prints_them():
    assert str(parse_gtid_set(f"{U}:7:1-5,{U}:blue:3:1-2")) == f"{U}:1-5:7:blue:1-3"
