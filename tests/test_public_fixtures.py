"""Every file of the public binlog corpus is read, or rejected with one clear line.

Where the expected counts come from: the servers' own mysqlbinlog. Each file was printed by MySQL
9.7's `mysqlbinlog -vv` (MySQL files) or MariaDB 10.11's `mariadb-binlog -vv` (MariaDB files, and
MySQL files older than 5.0 that only it reads), and its events grouped as WL#4162 groups them:
BEGIN (or a transactional MariaDB GTID) … XID / COMMIT / ROLLBACK / XA PREPARE is one
transaction (`dml`; `xa_prepare` when it ends prepared), a statement outside any (with the GTID,
INTVAR, RAND or USER_VAR events before it, and the XID right after it where there is one: MySQL
5.0 logged autocommit statements without BEGIN, and mysqlbinlog prints that XID as their COMMIT)
is one: `dml` when the statement the tool prints is an INSERT, REPLACE, UPDATE, DELETE or LOAD
DATA, `ddl` otherwise; a rows statement without BEGIN (TABLE_MAP … rows flagged STMT_END_F) is
one `dml`, and the file's end inside one leaves it `incomplete`. Where neither tool reads a file whole, the
note above its entry says where its counts come from (the corpus README's histograms, or a
mysql-test `.result`).
"""

from __future__ import annotations

import pytest

from binlake.assemble.outputs import Records
from binlake.assemble.scan import scan_files
from binlake.assemble.sinks import RecordSink
from binlake.assemble.walk import Options
from tests.support.scanning import headers, run_cli, scan

QUERY, ROTATE, INCIDENT = 2, 4, 26  # MySQL's Log_event_type codes

# file -> (transactions, {kind: n}, {outcome: n}, anomaly codes)
READABLE = {
    "EasyPost__rust-mysql-binlog/bin-log.000001": (3, {"ddl": 1, "dml": 2}, {"committed": 3}, []),
    # mariadb-binlog: CREATE TABLE t1, CREATE TABLE t3, 3 INSERT INTO t1 and one LOAD DATA
    # (CREATE_FILE, APPEND_BLOCK, EXEC_LOAD), all statements outside BEGIN
    "Longhui__mysql-5.5.30/binlog_old_version_4_1.000001": (6, {"ddl": 2, "dml": 4}, {"committed": 6}, []),
    # the README: cut inside a 64 KiB rows event (both tools stop there, warning of the cut)
    "Longhui__mysql-5.5.30/bug11747416_32228_binlog.000001":
        (2, {"ddl": 1, "dml": 1}, {"committed": 1, "incomplete": 1}, ["TRUNCATED"]),
    # the README's histogram: QUERY 1 (CREATE TABLE), two TABLE_MAP + PRE_GA_WRITE_ROWS statements
    # (MyISAM, no BEGIN), which mariadb-binlog prints without their flags
    "Longhui__mysql-5.5.30/bug32407.001": (3, {"ddl": 1, "dml": 2}, {"committed": 3}, []),
    # mariadb-binlog: create table, insert, update, drop table; no BEGIN
    "Longhui__mysql-5.5.30/bug47142_master-bin.000001": (4, {"ddl": 2, "dml": 2}, {"committed": 4}, []),
    "Longhui__mysql-5.5.30/master-bin.000001": (0, {}, {}, []),
    "Longhui__mysql-5.5.30/trunc_binlog.000001": (1, {"dml": 1}, {"incomplete": 1}, ["TRUNCATED"]),
    # 3 CREATE TABLE, 3 rows statements, BEGIN … XID, 3 INSERT statements, a LOAD DATA (the same
    # statements as binlog_old_versions.result replays from each tree). 5.1.15 TABLE_MAPs carry no
    # column metadata: rows of VARCHAR tables cannot be decoded without the table definition, so
    # the 3 rows statements are reported incomplete, with the reason (binlake's, not the server's).
    "Longhui__mysql-5.5.30/ver_5_1-telco.001":
        (11, {"ddl": 3, "dml": 8}, {"committed": 8, "incomplete": 3}, ["DECODE_ERROR"]),
    "Percona-Lab__percona-binlog-server/data_80045_gtid/binlog.000001":
        (4, {"ddl": 1, "dml": 3}, {"committed": 4}, []),
    "Percona-Lab__percona-binlog-server/data_80045_gtid/binlog.000002":
        (2, {"dml": 2}, {"committed": 2}, []),
    "Yelp__ybinlogp/mysql-bin.default-path": (14, {"ddl": 4, "dml": 10}, {"committed": 14}, []),
    "alibaba__canal/mysql-bin.000001": (111, {"ddl": 22, "dml": 89}, {"committed": 111}, []),
    "apecloud__mysql-binlog-connector-rust/mysql-bin.000057":
        (3, {"ddl": 1, "dml": 2}, {"committed": 3}, []),
    "blackbeam__rust_mysql_common/binlog_transaction_with_GTID_TAG.000001":
        (1, {"dml": 1}, {"committed": 1}, []),
    "blackbeam__rust_mysql_common/json-opaque.binlog": (3, {"ddl": 2, "dml": 1}, {"committed": 3}, []),
    "blackbeam__rust_mysql_common/json.binlog.000001": (8, {"ddl": 2, "dml": 6}, {"committed": 8}, []),
    "blackbeam__rust_mysql_common/mariadb-bin.000001": (2, {"dml": 2}, {"committed": 2}, []),
    "blackbeam__rust_mysql_common/minimal_row_metadata.000001": (1, {"dml": 1}, {"committed": 1}, []),
    "blackbeam__rust_mysql_common/transaction_compression.000001":
        (1, {"dml": 1}, {"committed": 1}, []),
    "blackbeam__rust_mysql_common/vector.binlog": (10, {"ddl": 7, "dml": 3}, {"committed": 10}, []),
    "enhancedformysql__mysql-8.0.40/binlog_recovery/duplicate_xid_xa_commit.000001":
        (4, {"dml": 1, "xa_prepare": 1, "xa_commit": 2}, {"committed": 3, "prepared": 1}, []),
    # A lone GTID + XA_PREPARE whose transaction_length still counts the missing body: mysqlbinlog
    # prints "transaction_length=382" for a GTID at 157 in a file of 273 bytes.
    "enhancedformysql__mysql-8.0.40/binlog_recovery/orphan_xa_prepare.000001":
        (1, {"xa_prepare": 1}, {"prepared": 1}, ["LENGTH_MISMATCH"]),
    "enhancedformysql__mysql-8.0.40/binlog_savepoint.000001": (1, {"dml": 1}, {"committed": 1}, []),
    "enhancedformysql__mysql-8.0.40/binlog_transaction.000001":
        (9, {"ddl": 6, "dml": 3}, {"committed": 8, "rolled_back": 1}, []),
    "enhancedformysql__mysql-8.0.40/binlog_transaction_with_GTID.000001":
        (3, {"ddl": 2, "dml": 1}, {"committed": 3}, []),
    # the README: deliberately broken (a cut PREVIOUS_GTIDS event); mysqlbinlog warns of the cut
    "enhancedformysql__mysql-8.0.40/binlog_truncated_prev_gtid_event.000001": (0, {}, {}, ["TRUNCATED"]),
    "enhancedformysql__mysql-8.0.40/bug11747887-bin.000003": (4, {"ddl": 3, "dml": 1}, {"committed": 4}, []),
    # mysqlbinlog: CREATE TABLE t1, CREATE TABLE t2, CREATE TRIGGER, INSERT INTO t1; no BEGIN
    "enhancedformysql__mysql-8.0.40/bug16266.000001": (4, {"ddl": 3, "dml": 1}, {"committed": 4}, []),
    "enhancedformysql__mysql-8.0.40/bug32407.001": (2, {"ddl": 1, "dml": 1}, {"committed": 2}, []),
    # mysqlbinlog: 28 statements, no BEGIN: DROP TABLE, DROP TRIGGER, 2 CREATE TABLE, 2 procedures,
    # a trigger, a function, a DROP TRIGGER; 11 INSERT and 8 DELETE
    "enhancedformysql__mysql-8.0.40/bug33029-slave-relay-bin.000001":
        (28, {"ddl": 9, "dml": 19}, {"committed": 28}, []),
    # neither tool reads past its INCIDENT event (the README: FORMAT_DESCRIPTION, INCIDENT, ROTATE):
    # no transaction, the incident an anomaly (test_incident below)
    "enhancedformysql__mysql-8.0.40/bug40482-bin.000001": (0, {}, {}, ["INCIDENT"]),
    "enhancedformysql__mysql-8.0.40/master-bin.000001": (0, {}, {}, []),
    "enhancedformysql__mysql-8.0.40/rpl_binlog_with_gipk_info_full_metadata.000001":
        (4, {"ddl": 2, "dml": 2}, {"committed": 4}, []),
    "enhancedformysql__mysql-8.0.40/rpl_binlog_with_gipk_info_minimal_metadata.000001":
        (4, {"ddl": 2, "dml": 2}, {"committed": 4}, []),
    "enhancedformysql__mysql-8.0.40/rpl_unfiltered_hidden_gcol.000001":
        (3, {"ddl": 2, "dml": 1}, {"committed": 3}, []),
    "enhancedformysql__mysql-8.0.40/update-full-row.binlog": (1, {"dml": 1}, {"committed": 1}, []),
    "enhancedformysql__mysql-8.0.40/update-partial-row.binlog": (1, {"dml": 1}, {"committed": 1}, []),
    # 5.2.2 "a_drop6" tree: event type ids permuted as the servers do when reading it (neither tool
    # does). The README's histogram read through MySQL's permutation (log_event.cc: old 20, 21, 22
    # are XID, BEGIN_LOAD_QUERY, EXECUTE_LOAD_QUERY): QUERY 6, XID 1, a LOAD DATA, INTVAR, RAND,
    # USER_VAR: BEGIN + 2 INSERTs … XID, 3 INSERT statements, the LOAD DATA.
    "enhancedformysql__mysql-8.0.40/ver_5_1-wl2325_s.001": (5, {"dml": 5}, {"committed": 5}, []),
    # mariadb-binlog: 3 CREATE TABLE, 3 rows statements (TABLE_MAP, v1 rows), BEGIN … XID, 3 INSERT
    # statements and a LOAD DATA (BEGIN_LOAD_QUERY, APPEND_BLOCK, EXECUTE_LOAD_QUERY)
    "enhancedformysql__mysql-8.0.40/ver_5_1_23.001": (11, {"ddl": 3, "dml": 8}, {"committed": 11}, []),
    "enhancedformysql__mysql-8.0.40/ver_trunk_row_v2.001": (12, {"ddl": 3, "dml": 9}, {"committed": 12}, []),
    "go-mysql-org__go-mysql/tcb-eval002c-bin.003320": (1, {"dml": 1}, {"committed": 1}, []),
    # GTID events 4433, XID 4431
    "mariadb-operator__mariadb-poc/domain_id_0/mariadb-repl-bin.000002":
        (4433, {"ddl": 2, "dml": 4431}, {"committed": 4433}, []),
    "mariadb-operator__mariadb-poc/domain_id_1/mariadb-repl-bin.000002":
        (12, {"ddl": 12}, {"committed": 12}, []),
    "ottok__mariadb-10.3/mariadb-5.5-binlog.000001": (4, {"ddl": 1, "dml": 3}, {"committed": 4}, []),
    "ottok__mariadb-10.3/master-bin-seq_10.3.36.000001": (4, {"ddl": 2, "dml": 2}, {"committed": 4}, []),
    # each: create table test.t1, insert into test.t1, drop table test.t1; no BEGIN
    "ottok__mariadb-10.3/mdev-4645-binlog_checksum.binlog": (3, {"ddl": 2, "dml": 1}, {"committed": 3}, []),
    "ottok__mariadb-10.3/mdev-4645-binlog_group_id.binlog": (3, {"ddl": 2, "dml": 1}, {"committed": 3}, []),
    "ottok__mariadb-10.3/mdev-4645-binlog_group_id_checksum.binlog": (3, {"ddl": 2, "dml": 1}, {"committed": 3}, []),
    "ottok__mariadb-10.3/mdev-4645-binlog_none.binlog": (3, {"ddl": 2, "dml": 1}, {"committed": 3}, []),
    # GTID events 1381 (10.0.11's carry no ddl/trans flag), XID 1340
    "ottok__mariadb-10.3/mdev6020-mysql-bin.000001":
        (1381, {"ddl": 41, "dml": 1340}, {"committed": 1381}, []),
    "shyiko__mysql-binlog-connector-java/mysql-bin.checksum-none":
        (40, {"ddl": 4, "dml": 36}, {"committed": 40}, []),
    "shyiko__mysql-binlog-connector-java/mysql-bin.sakila": (53, {"ddl": 37, "dml": 16}, {"committed": 53}, []),
    "zalora__binlog-parser/mysql-bin.07": (2, {"ddl": 1, "dml": 1}, {"committed": 2}, []),
    "zalora__binlog-parser/mysql-bin.empty": (0, {}, {}, []),
}

# A relay log whose BEGIN events were lost (mysql-test's "corrupt relay log"): the
# boundary parser must say so, once per broken place, and keep every other transaction.
CORRUPT_RELAY = "enhancedformysql__mysql-8.0.40/corrupt-relay-bin.000624"

# Each file's one line (after its path). What it says is the README's: the FORMAT_DESCRIPTION whose
# type byte was set to 48, the 10 bytes after the magic, MySQL's encrypted-file magic (fd 62 69 6e),
# MariaDB's START_ENCRYPTION after its FORMAT_DESCRIPTION (4 + 252 bytes), gzip's header (1f 8b,
# deflate, a file name).
REJECTED = {
    "enhancedformysql__mysql-8.0.40/binlog_no_fd_event.000001":
        ":4: no FORMAT_DESCRIPTION event at offset 4 (found event type 48): not a readable binlog",
    "enhancedformysql__mysql-8.0.40/binlog_truncated_event.000001":
        ":4: truncated: 10 bytes where the first event header should be",
    "enhancedformysql__mysql-8.0.40/rpl_nogtid_encryption_master-bin.000002":
        ":0: encrypted binlog: not supported (MySQL binlog_encryption)",
    "ottok__mariadb-10.3/binlog_before_20574.bin": ":256: encrypted binlog: not supported (MariaDB encrypt_binlog)",
    "shyiko__mysql-binlog-connector-java/mysql-bin.sakila.gz":
        ":0: not a binlog file: magic 1f 8b 08 08, expected fe 62 69 6e",
}


def count(records, key):
    out: dict[str, int] = {}
    for r in records:
        out[r[key]] = out.get(r[key], 0) + 1
    return out


def test_every_corpus_file_is_listed(public_binlogs):
    files = {str(p.relative_to(public_binlogs)) for p in public_binlogs.rglob("*")
             if p.is_file() and p.suffix not in (".md", ".result")}
    assert files == set(READABLE) | set(REJECTED) | {CORRUPT_RELAY}


@pytest.mark.parametrize("name", sorted(READABLE))
def test_readable(public_binlogs, name):
    n, kinds, outcomes, codes = READABLE[name]
    out = scan(public_binlogs / name)
    txns = out["transaction"]
    assert len(txns) == n
    assert count(txns, "kind") == kinds
    assert count(txns, "outcome") == outcomes
    assert sorted({a["code"] for a in out["anomaly"]}) == codes
    for t in txns:
        assert t["end_pos"] > t["start_pos"]
        assert t["row_count"] == t["rows_inserted"] + t["rows_updated"] + t["rows_deleted"]
        if t["transaction_length"] and t["outcome"] != "incomplete" and not codes:
            assert t["transaction_length"] == t["end_pos"] - t["start_pos"]
    ids = [t["txn_id"] for t in txns]
    assert len(ids) == len(set(ids))
    assert sum(t["row_count"] for t in txns if t["outcome"] != "incomplete") == len(out["row_change"])


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_rejected_with_one_clear_line(public_binlogs, name):
    path = public_binlogs / name
    proc = run_cli("scan", str(path))
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", f"{path}{REJECTED[name]}\n")


def test_corrupt_relay_log(public_binlogs):
    """A MySQL 5.0 relay log. MySQL 9.7's mysqlbinlog prints 172 BEGIN, 183 XID and 57 statements
    outside any BEGIN (all INSERTs), and stops at 91204, an invalid event. Grouped from its output:
    171 BEGIN … XID, the last BEGIN (91117) cut by the invalid event (test below); of the 57
    statements, 12 are followed right away by an XID, which mysqlbinlog prints as their COMMIT
    (MySQL 5.0 logged an autocommit statement on a transactional table without BEGIN), and 45 by
    no XID (non-transactional tables). Every XID ends a transaction: no boundary anomaly."""
    out = scan(public_binlogs / CORRUPT_RELAY)
    assert count(out["anomaly"], "code") == {"DECODE_ERROR": 1}
    txns = out["transaction"]
    assert (count(txns, "kind"), count(txns, "outcome")) == ({"dml": 229}, {"committed": 228, "incomplete": 1})
    assert count(txns, "end_event") == {"XID": 183, "SELF_CONTAINED": 45, None: 1}


def test_autocommit_statement_ends_at_its_xid(public_binlogs):
    """mysqlbinlog 9.7 prints, with no BEGIN before them:
        # at 3961 / # at 3989 / … Intvar / SET INSERT_ID=144100157 / … Query … insert into CLICK(…)
        # at 4264 / … end_log_pos 234240  Xid = 8208303284 / COMMIT
        # at 4291 / … Query … BEGIN
    one transaction, INTVAR to XID."""
    (t,) = [t for t in scan(public_binlogs / CORRUPT_RELAY)["transaction"] if t["start_pos"] == 3961]
    assert (t["end_pos"], t["xid"], t["kind"], t["end_event"], t["outcome"], t["event_count"]) == \
        (4291, 8208303284, "dml", "XID", "committed", 3)
    assert t["synthetic_boundary"] is False


INCIDENT_FILE = "enhancedformysql__mysql-8.0.40/bug40482-bin.000001"


def test_incident(public_binlogs):
    """An INCIDENT event says the source lost events there: a replica stops at it (MySQL 9.7's
    mysqlbinlog: "ERROR: Could not read entry at offset 106", mariadb-binlog 10.11: "'Found invalid
    event in binary log', data_len: 22, event_type: 26"). It is an anomaly, never a transaction.
    Its number and message, from its body (the FORMAT_DESCRIPTION gives INCIDENT a 2-byte
    post-header: the number; then a length byte and the message): 0x0042 = 66, no message."""
    path = public_binlogs / INCIDENT_FILE
    data = path.read_bytes()
    ((pos, _, size),) = [e for e in headers(data) if e[1] == INCIDENT]
    assert (pos, data[pos + 19:pos + size]) == (106, b"\x42\x00\x00")
    out = scan(path)
    assert out["transaction"] == []
    (a,) = out["anomaly"]
    assert (a["code"], a["severity"], a["start_pos"], a["end_pos"]) == ("INCIDENT", "error", 106, 128)
    assert a["detail"] == ("bug40482-bin.000001:106: INCIDENT event, incident 66 (a number no server defines), "
                           "no message: the source marks events lost here; a replica stops at it")


def test_incident_lost_events(public_binlogs, tmp_path):
    """The same event made LOST_EVENTS (1), the one incident servers write, with a message: the
    anomaly names both."""
    data = bytearray((public_binlogs / INCIDENT_FILE).read_bytes())
    body = b"\x01\x00" + bytes([5]) + b"oops!"
    data[106 + 9:106 + 13] = (19 + len(body)).to_bytes(4, "little")
    rotate = data[106 + 22:]  # the ROTATE after it: its end position moves with it
    data[106 + 19:] = body + rotate
    end = 106 + 19 + len(body)
    data[end + 13:end + 17] = (end + len(rotate)).to_bytes(4, "little")
    f = tmp_path / "bug40482-bin.000001"
    f.write_bytes(bytes(data))
    (a,) = scan(f)["anomaly"]
    assert (a["code"], a["start_pos"], a["end_pos"]) == ("INCIDENT", 106, end)
    assert a["detail"].startswith('bug40482-bin.000001:106: INCIDENT event, incident 1 (LOST_EVENTS), message "oops!"')


def test_corrupt_relay_log_invalid_event(public_binlogs):
    """Both servers' decoders stop at the QUERY event at 91204 (mysqlbinlog 9.7: "ERROR: Could not
    read entry at offset 91204: Error in log format or read error 1. ERROR: Found invalid event in
    binary log", after "# at 91117 … BEGIN" and "# at 91176", then "ROLLBACK /* added by
    mysqlbinlog */"): its header says 171 bytes, its post-header status_vars_len 16949 and db_len 67
    (read below from its bytes), far more than the event holds. The file goes on with a valid
    ROTATE at 91375 (the corpus README: 874 events whose headers walk cleanly)."""
    path = public_binlogs / CORRUPT_RELAY
    data = path.read_bytes()
    events = headers(data)
    (pos, type_code, size), rotate = events[-2], events[-1]
    assert (pos, type_code, size, rotate[:2], len(events)) == (91204, QUERY, 171, (91375, ROTATE), 874)
    assert (int.from_bytes(data[pos + 19 + 11:pos + 19 + 13], "little"), data[pos + 19 + 8]) == (16949, 67)
    out: dict[str, list[dict]] = {"transaction": [], "row_change": [], "anomaly": []}
    summary = scan_files([path], Options(), Records(out["transaction"].append, out["anomaly"].append,
                                                    RecordSink(out["row_change"].extend)))
    # One anomaly says where and why, over the transaction the event is in (from its BEGIN); that
    # transaction is incomplete, cut where the invalid event starts; and every event was read.
    (bad,) = [a for a in out["anomaly"] if a["code"] not in ("BOUNDARY_TRANSITION",)]
    assert (bad["code"], bad["start_pos"], bad["end_pos"]) == ("DECODE_ERROR", 91117, 91375)
    assert bad["detail"].startswith("corrupt-relay-bin.000624:91204: cannot decode QUERY event: "
                                    "status_vars_len 16949 and db_len 67 run past the event")
    (cut,) = [t for t in out["transaction"] if t["start_pos"] == 91117]
    assert (cut["end_pos"], cut["outcome"]) == (91204, "incomplete")
    assert summary.events == len(events)


def test_tagged_gtid(public_binlogs):
    (t,) = scan(public_binlogs / "blackbeam__rust_mysql_common/binlog_transaction_with_GTID_TAG.000001")[
        "transaction"]
    # as MySQL 9.7's mysqlbinlog -vv prints the file: "# at 245 … GTID last_committed=0
    # sequence_number=1 … immediate_commit_timestamp=1770368687207196 transaction_length=296",
    # GTID_NEXT '…:mytag:3', and "end_log_pos 541 … Xid = 40"
    assert t["gtid"] == "55778904-0299-11f1-b1b8-4ef0c4956feb:mytag:3"
    assert (t["start_pos"], t["end_pos"], t["transaction_length"]) == (245, 541, 296)
    assert t["commit_ts"] == "2026-02-06T09:04:47.207196Z"
    assert (t["xid"], t["last_committed"], t["sequence_number"]) == (40, 0, 1)


def test_compressed_payload(public_binlogs):
    (t,) = scan(public_binlogs / "blackbeam__rust_mysql_common/transaction_compression.000001")[
        "transaction"]
    # mysqlbinlog -vv: "# at 197 … Anonymous_GTID", a Transaction_Payload ending at 431
    # (compression_type=ZSTD) whose inner events end with "Xid = 462"
    assert t["compressed"] is True
    assert t["gtid"] is None  # ANONYMOUS_GTID
    assert (t["start_pos"], t["end_pos"], t["xid"]) == (197, 431, 462)


def test_xa_prepare_and_commit_are_linked(public_binlogs):
    txns = scan(public_binlogs / "enhancedformysql__mysql-8.0.40/binlog_recovery/"
                                 "duplicate_xid_xa_commit.000001")["transaction"]
    # mysqlbinlog: "XA START X'78',X'',1" … "XA PREPARE X'78',X'',1", then "XA COMMIT X'78',X'',1" twice
    prep = [t for t in txns if t["kind"] == "xa_prepare"]
    commits = [t for t in txns if t["kind"] == "xa_commit"]
    assert prep[0]["xa_xid"] == "X'78',X'',1"
    assert {c["xa_xid"] for c in commits} == {"X'78',X'',1"}
    assert all(c["end_event"] == "QUERY_XA_COMMIT" for c in commits)


def test_mariadb_gtids(public_binlogs):
    txns = scan(public_binlogs / "mariadb-operator__mariadb-poc/domain_id_1/mariadb-repl-bin.000002")[
        "transaction"]
    # mariadb-binlog prints "GTID 1-10-1" … "GTID 1-10-12": domain 1, server 10
    assert [t["gtid"] for t in txns] == [f"1-10-{n}" for n in range(1, 13)]
