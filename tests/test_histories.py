"""Real server histories (issue 20): a reset, a failover to a real replica, a restore, holes in
GTID numbering, files the server refuses to send after a GTID migration, a crash mid-file. Each
scenario runs on servers of its own (they RESET, replicate, SET GLOBAL and migrate gtid_mode),
archives by runs before and after the event, and ends with
the archive byte-identical to the server's files, `binlake assemble` equal to `binlake scan`
over every generation, the rows equal to the server's SELECT, the GTIDs equal to the server's
own sets, and `binlake validate` passing. Broken variants fail validation with words that
name what is wrong."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest

from binlake.archive.identity import server_file
from binlake.binlog.gtid import parse_gtid_set
from tests.support.history import gtid_executed, rotated, table, traffic
from tests.support.lake import differences, lake, rows, scanned
from tests.support.scanning import ndjson, run_cli, scan

RANGE = ("2000-01-01", "2100-01-01")


def _archive(server, store: Path, name: str = "src", *extra: str):
    proc = run_cli("archive", "--source", f"mysql://root@127.0.0.1:{server.port}", "--store", f"file://{store}",
                   "--source-name", name, *extra)
    return proc, ndjson(proc.stdout)


def _objects(store: Path, name: str = "src") -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((store / name / "binlogs").iterdir())}


def _gtids(values) -> set[str]:
    """MySQL GTID sets or single GTIDs as single GTIDs."""
    out = set()
    for text in values:
        for (sid, tag), ivs in parse_gtid_set(text).intervals.items():
            out |= {f"{sid}:{tag}:{n}" if tag else f"{sid}:{n}" for a, b in ivs for n in range(a, b)}
    return out


def _assemble_and_check(spark, store: Path, warehouse: Path, name: str = "src",
                        repeated: set[str] = frozenset()) -> list[dict]:
    """Assemble every generation; the tables equal `binlake scan` of every archived object (less
    the `repeated` GTIDs in later generations: first copies win); the range validates. Returns
    the transactions."""
    from binlake.spark.job import assemble
    from binlake.spark.validate import validate

    summary = assemble(spark, f"file://{store}", str(warehouse), *RANGE)
    objects = sorted((store / name / "binlogs").iterdir())
    out = {"transaction": [], "row_change": [], "anomaly": []}
    for path in objects:  # one scan per file: a generation's files follow on, two generations do not
        for kind, recs in scan([path], rows=True, source=name).items():
            out[kind] += [r for r in recs if "@g" not in path.name or r.get("txn_id") not in repeated]
    assert differences(lake(warehouse), scanned(out)) == {}
    assert summary.repeats == sum(1 for p in objects if "@g" in p.name
                                  for t in scan([p], source=name)["transaction"] if t["gtid"] in repeated)
    assert not out["anomaly"]
    report = validate(spark, str(warehouse), *RANGE, store=f"file://{store}")
    assert report.success, report.text()
    return list(rows(warehouse, "transactions"))


def _inserted(warehouse: Path) -> list[dict]:
    got = [json.loads(r["after"]) if isinstance(r["after"], str) else r["after"]
           for r in rows(warehouse, "row_changes") if r["op"] == "insert" and r["table"] == "t"]
    return sorted(got, key=lambda r: r["id"])


@pytest.mark.parametrize("flavor", ["mysql", "mariadb"])
def test_a_reset_starts_a_new_generation_and_loses_nothing(request, flavor, spark, tmp_path):
    server = request.getfixturevalue(f"{flavor}_factory")()
    store = tmp_path / "store"
    traffic(server, "before", 10, seed=1)
    before_gtids = gtid_executed(server)
    first = rotated(server)
    proc, out = _archive(server, store)
    assert proc.returncode == 0, proc.stderr
    assert out[-1]["archived"] == sorted(first)

    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("RESET BINARY LOGS AND GTIDS" if flavor == "mysql" else "RESET MASTER")
    traffic(server, "after", 7, seed=2)
    after_gtids = gtid_executed(server)
    second = rotated(server)
    assert set(second) <= set(first)  # the server reused the names: the trap of issue 20
    proc, out = _archive(server, store)
    # every new file archived, exit 0, with the notice
    assert proc.returncode == 0, proc.stderr
    notices = [r for r in out if r["record"] == "notice"]
    assert [(n["kind"], n["generation"], n["file"]) for n in notices] == [("reset", 2, "binlog.000001")]
    assert "notice: binlog.000001: a new generation 2" in proc.stderr
    assert out[-1]["archived"] == [f"{n}@g0002" for n in sorted(second)]
    assert out[-1]["already_archived"] == 0
    # byte-identical: generation 1 to the files the server had before the reset, 2 to today's
    objects = _objects(store)
    assert objects == {**first, **{f"{n}@g0002": b for n, b in second.items()}}
    again, out = _archive(server, store)
    assert again.returncode == 0 and out[-1]["archived"] == [] and out[-1]["already_archived"] == len(second)

    txns = _assemble_and_check(spark, store, tmp_path / "lake")
    by_gen = {1: [], 2: []}
    for t in txns:
        by_gen[2 if "@g0002" in t["binlog_file"] else 1].append(t["gtid"])
    # the GTIDs of each generation are what the server reported executed before and after the reset
    if flavor == "mysql":
        assert _gtids(by_gen[1]) == _gtids([before_gtids]) and len(by_gen[1]) == len(_gtids([before_gtids]))
        assert _gtids(by_gen[2]) == _gtids([after_gtids]) and len(by_gen[2]) == len(_gtids([after_gtids]))
    else:  # one domain, one server: sequence numbers 1..n, n from gtid_binlog_pos
        for gen, pos in ((1, before_gtids), (2, after_gtids)):
            domain, server_id, last = pos.split("-")
            assert sorted(int(g.split("-")[2]) for g in by_gen[gen]) == list(range(1, int(last) + 1))
    # every row the server holds, inserted once, from one generation or the other
    assert _inserted(tmp_path / "lake") == table(server)

    _broken_variants(spark, store, tmp_path)


def _broken_variants(spark, store: Path, tmp_path: Path) -> None:
    """A file removed from the store, a manifest that belongs to another file: validation fails,
    naming what is wrong."""
    from binlake.spark.job import assemble
    from binlake.spark.validate import validate

    def broken(name: str, damage) -> str:
        copy = tmp_path / f"store_{name}"
        shutil.copytree(store, copy)
        damage(copy / "src")
        warehouse = tmp_path / f"lake_{name}"
        assemble(spark, f"file://{copy}", str(warehouse), *RANGE)
        report = validate(spark, str(warehouse), *RANGE, store=f"file://{copy}")
        assert not report.success
        return report.text()

    def remove(src: Path) -> None:
        (src / "binlogs" / "binlog.000002").unlink()
        (src / "manifests" / "binlog.000002.json").unlink()

    assert "binlog.000003: file binlog.000002 is not archived" in broken("removed", remove)

    def foreign(src: Path) -> None:  # binlog.000002's manifest replaced by one of another file of that name
        m = json.loads((src / "manifests" / "binlog.000002@g0002.json").read_text())
        m.update(name="binlog.000002", generation=1)
        (src / "manifests" / "binlog.000002.json").write_text(json.dumps(m))

    text = broken("foreign", foreign)
    assert "✗ expect_query_to_return_no_rows: the server's GTID chain holds" in text, text
    # the foreign file's GTIDs are not the ones binlog.000003's PREVIOUS_GTIDS claim, and it has
    # not the ones binlog.000001's chain leads to
    assert "binlog.000003: GTIDs" in text and "are in no archived file" in text, text
    assert "binlog.000002: GTIDs" in text and "of binlog.000001 are not in the previous GTIDs of binlog.000002" in text


def test_holes_in_gtid_numbering_the_chain_does_not_claim_are_no_defect(mysql_factory, spark, tmp_path):
    """Transactions written with an explicit gtid_next: the server's own number 100 after 1..n,
    and a second uuid whose numbers start at 42. Healthy: validate passes."""
    server = mysql_factory()
    other = "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d"
    traffic(server, "auto", 5, seed=3)
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT @@server_uuid")
        own = cur.fetchone()[0]
        for gtid in (f"{own}:100", f"{other}:42", f"{other}:43", f"{other}:50"):
            cur.execute(f"SET gtid_next = '{gtid}'")
            cur.execute("INSERT INTO h.t VALUES (%s, 'explicit', %s)", (int(gtid.rsplit(":", 1)[1]) + 1000, gtid))
            cur.execute("SET gtid_next = 'AUTOMATIC'")
            cur.execute("FLUSH BINARY LOGS")
    traffic(server, "auto2", 5, seed=4)
    got = _one_generation(server, spark, tmp_path)
    assert _gtids(got) == _gtids([gtid_executed(server)])  # holes and all
    assert {f"{other}:42", f"{other}:50", f"{own}:100"} <= set(got)


def _one_generation(server, spark, tmp_path: Path) -> list[str]:
    """Archive every closed file of a server's one history: byte-identical, assembled equal to
    the scan, validated, every GTID once and every row the server holds. The GTIDs."""
    first = rotated(server)
    proc, _ = _archive(server, store := tmp_path / "store")
    assert proc.returncode == 0, proc.stderr
    assert _objects(store) == first
    got = [t["gtid"] for t in _assemble_and_check(spark, store, tmp_path / "lake")]
    assert len(got) == len(set(got))
    assert _inserted(tmp_path / "lake") == table(server)
    return got


def test_holes_in_mariadb_sequence_numbers_are_no_defect(mariadb_factory, spark, tmp_path):
    """MariaDB transactions written with an explicit gtid_seq_no: 100 after 1..n in domain 0, and
    a second domain whose numbers start at 42. Healthy: validate passes."""
    server = mariadb_factory()
    traffic(server, "auto", 5, seed=3)
    explicit = ((0, 100), (7, 42), (7, 43), (7, 50))
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT @@server_id")
        sid = cur.fetchone()[0]
        for domain, seq in explicit:
            cur.execute(f"SET SESSION gtid_domain_id = {domain}, SESSION gtid_seq_no = {seq}")
            cur.execute("INSERT INTO h.t VALUES (%s, 'explicit', %s)", (1000 * domain + seq, f"{domain}-{seq}"))
            cur.execute("FLUSH BINARY LOGS")
        cur.execute("SET SESSION gtid_domain_id = 0")
    traffic(server, "auto2", 5, seed=4)
    assert {f"{d}-{sid}-{n}" for d, n in explicit} <= set(_one_generation(server, spark, tmp_path))


def test_files_refused_after_a_gtid_migration_are_recorded_then_archived_from_the_directory(
        mysql_factory, spark, tmp_path):
    """MySQL's online migration of gtid_mode (OFF -> OFF_PERMISSIVE -> ON_PERMISSIVE -> ON)
    leaves files of anonymous transactions, which a server with GTID_MODE=ON refuses to send.
    The run records each with the server's reason and the remedy, archives every later file and
    exits 1; validation fails naming them; the directory run closes the gap."""
    server = mysql_factory(gtid_mode="OFF", enforce_gtid_consistency="OFF")
    traffic(server, "anonymous", 6, seed=5, rotate_every=3)
    with server.connect() as conn, conn.cursor() as cur:
        for step in ("SET GLOBAL enforce_gtid_consistency = ON", "SET GLOBAL gtid_mode = OFF_PERMISSIVE",
                     "SET GLOBAL gtid_mode = ON_PERMISSIVE", "SET GLOBAL gtid_mode = ON"):
            cur.execute(step)
    traffic(server, "gtid", 6, seed=6, rotate_every=3)
    files = rotated(server)
    store = tmp_path / "store"
    proc, out = _archive(server, store)
    assert proc.returncode == 1
    refused = [r for r in out if r["record"] == "refused"]
    assert refused and all("anonymous transaction" in r["reason"] for r in refused)
    assert all(f"--source 'dir://{server.binlog_dir}?basename=binlog'" in r["remedy"]
               and "--source-name src" in r["remedy"] for r in refused)
    assert "the server refuses to send" in proc.stderr and "binlake archive --source 'dir://" in proc.stderr
    # every later file archived past the refused ones
    last_refused = max(r["file"] for r in refused)
    later = [n for n in files if n > last_refused]
    assert later and set(later) <= set(out[-1]["archived"])
    assert all(r["file"] not in _objects(store) for r in refused)

    from binlake.spark.job import assemble
    from binlake.spark.validate import validate

    assemble(spark, f"file://{store}", str(tmp_path / "gappy"), *RANGE)
    report = validate(spark, str(tmp_path / "gappy"), *RANGE, store=f"file://{store}")
    text = report.text()
    assert not report.success
    for r in refused:  # each named with the server's reason and the remedy
        assert f"{r['file']}: the server refuses to send it (" in text and r["remedy"] in text, text

    # the remedy, as the record words it
    fix = run_cli(*shlex.split(refused[0]["remedy"].split(": ", 1)[1].split(" (")[0])[1:])
    assert fix.returncode == 0, fix.stderr
    fixed = ndjson(fix.stdout)[-1]
    assert sorted(fixed["archived"]) == sorted(r["file"] for r in refused)
    assert not list((store / "src").glob("refused/*"))
    assert _objects(store) == files  # byte-identical, one generation
    again, out = _archive(server, store)
    assert again.returncode == 0 and out[-1]["archived"] == [] and out[-1]["refused"] == []
    txns = _assemble_and_check(spark, store, tmp_path / "lake")
    anonymous = [t for t in txns if t["gtid"] is None]
    assert anonymous and all(server_file(t["binlog_file"]) <= last_refused for t in anonymous)
    assert _inserted(tmp_path / "lake") == table(server)


def _own_gtids(server, executed: str) -> set[str]:
    """A server's GTIDs by its own account: MySQL's gtid_executed; MariaDB's gtid_binlog_pos
    `d-s-N` read as d-s-1..N, true where that server alone wrote the domain since its log began."""
    if server.flavor == "mysql":
        return _gtids([executed])
    domain, server_id, last = executed.split("-")
    return {f"{domain}-{server_id}-{n}" for n in range(1, int(last) + 1)}


@pytest.mark.parametrize("flavor", ["mysql", "mariadb"])
def test_a_restore_into_a_fresh_server_under_the_old_source_name(request, flavor, spark, tmp_path):
    """A dump loaded into a fresh server that is told the GTIDs it holds (MySQL: mysqldump
    --set-gtid-purged=ON; MariaDB: RESET MASTER and gtid_binlog_state), archived under the old
    source name: another server, so a new generation; the GTIDs its chain claims are the ones
    the old server's generation archived, so no break."""
    import subprocess

    from tests.support.servers import mysql_argv

    factory = request.getfixturevalue(f"{flavor}_factory")
    old = factory()
    traffic(old, "old", 8, seed=7)
    old_gtids = gtid_executed(old)
    first = rotated(old)
    store = tmp_path / "store"
    assert _archive(old, store)[0].returncode == 0
    tools = (mysql_argv("mysqldump"), mysql_argv("mysql")) if flavor == "mysql" else (["mariadb-dump"], ["mariadb"])
    gtid_opts = ["--set-gtid-purged=ON"] if flavor == "mysql" else []
    dump = subprocess.run([*tools[0], "-h127.0.0.1", f"-P{old.port}", "-uroot", "--databases", "h",
                           "--single-transaction", *gtid_opts], capture_output=True, check=True).stdout
    new = factory()
    if flavor == "mariadb":  # the restore is not logged; then the server takes the old GTID state
        dump = b"SET sql_log_bin = 0;\n" + dump
    subprocess.run([*tools[1], "-h127.0.0.1", f"-P{new.port}", "-uroot"], input=dump, check=True)
    with new.connect() as conn, conn.cursor() as cur:
        if flavor == "mariadb":
            cur.execute("RESET MASTER")
            cur.execute("SET GLOBAL gtid_binlog_state = %s", (old_gtids,))
        cur.execute("FLUSH BINARY LOGS")  # a file whose PREVIOUS_GTIDS / GTID_LIST claim the old GTIDs
    traffic(new, "restored", 6, seed=8)
    second = rotated(new)
    proc, out = _archive(new, store)
    assert proc.returncode == 0, proc.stderr
    assert [(n["kind"], n["generation"]) for n in out if n["record"] == "notice"] == [("new_server", 2)]
    assert _objects(store) == {**first, **{f"{n}@g0002": b for n, b in second.items()}}
    txns = _assemble_and_check(spark, store, tmp_path / "lake")
    gen2 = [t["gtid"] for t in txns if "@g0002" in t["binlog_file"]]
    assert len(gen2) == len(set(gen2))
    if flavor == "mysql":  # what the new server executed itself: its gtid_executed less the purged
        assert _gtids(gen2) == _gtids([gtid_executed(new)]) - _gtids([old_gtids])
    else:  # its own numbers, on from the old server's last
        domain, server_id, last = gtid_executed(new).split("-")
        assert sorted(gen2, key=lambda g: int(g.rsplit("-", 1)[1])) == [
            f"{domain}-{server_id}-{n}" for n in range(int(old_gtids.rsplit("-", 1)[1]) + 1, int(last) + 1)]
    assert _inserted(tmp_path / "lake") == table(new)


@pytest.mark.parametrize("flavor", ["mysql", "mariadb"])
def test_the_server_killed_mid_file_and_restarted(request, flavor, spark, tmp_path):
    """The file the server was writing when it was killed ends without ROTATE or STOP; the
    server starts a new file when it restarts. Archived whole, byte for byte, continuity holding."""
    from binlake.binlog import constants as c
    from binlake.binlog.framing import BinlogReader

    server = request.getfixturevalue(f"{flavor}_factory")()
    traffic(server, "before", 5, seed=9)
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW BINARY LOG STATUS" if flavor == "mysql" else "SHOW MASTER STATUS")
        crashed = cur.fetchone()[0]
        for i in range(3):  # committed (sync_binlog=1) into the file the crash leaves open
            cur.execute("INSERT INTO h.t VALUES (%s, 'crash', 'x')", (10_000 + i,))
    server.kill()
    server.restart()
    traffic(server, "after", 4, seed=10)
    files = rotated(server)
    with BinlogReader.open(server.binlog_dir / crashed) as r:
        assert [f.type for f in r.frames()][-1] not in (c.ROTATE_EVENT, c.STOP_EVENT)  # the crash's mark
    store = tmp_path / "store"
    proc, out = _archive(server, store)
    assert proc.returncode == 0, proc.stderr
    if flavor == "mariadb":  # MariaDB's dump clears the in-use flag (FORMAT_DESCRIPTION's flags, offset
        # 4 + 17) of a file it never closed: the one bit by which the copy differs (docs/archive.md)
        on_disk = bytearray(files[crashed])
        assert on_disk[21] & c.LOG_EVENT_BINLOG_IN_USE_F
        on_disk[21] &= ~c.LOG_EVENT_BINLOG_IN_USE_F
        files[crashed] = bytes(on_disk)
    assert _objects(store) == files
    txns = _assemble_and_check(spark, store, tmp_path / "lake")
    assert sum(t["binlog_file"] == crashed for t in txns) >= 3
    got = [t["gtid"] for t in txns]
    assert len(got) == len(set(got)) and set(got) == _own_gtids(server, gtid_executed(server))
    assert _inserted(tmp_path / "lake") == table(server)


@pytest.mark.parametrize("flavor", ["mysql", "mariadb"])
def test_a_failover_to_a_replica_holds_every_gtid_once(request, flavor, spark, tmp_path):
    """A real replica (GTID auto-positioning, its own binary log with the transactions it
    applied) promoted, the source name pointed at it: its files collide with the old primary's
    names and repeat its GTIDs. Archived as generation 2; the warehouse holds every GTID once,
    the first archived copy winning, and every row the new primary holds once."""
    factory = request.getfixturevalue(f"{flavor}_factory")
    primary = factory()
    replica = factory(**({"log_slave_updates": "ON"} if flavor == "mariadb" else {}))
    with replica.connect() as conn, conn.cursor() as cur:
        if flavor == "mysql":
            cur.execute(f"CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT={primary.port}, "
                        "SOURCE_USER='root', SOURCE_PASSWORD='', SOURCE_AUTO_POSITION=1, GET_SOURCE_PUBLIC_KEY=1")
            cur.execute("START REPLICA")
        else:
            cur.execute(f"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={primary.port}, "
                        "MASTER_USER='root', MASTER_PASSWORD='', MASTER_USE_GTID=slave_pos")
            cur.execute("START SLAVE")
    traffic(primary, "primary", 10, seed=14)
    executed = gtid_executed(primary)
    first = rotated(primary)
    store = tmp_path / "store"
    assert _archive(primary, store)[0].returncode == 0
    with replica.connect() as conn, conn.cursor() as cur:  # caught up, then promoted
        if flavor == "mysql":
            cur.execute("SELECT WAIT_FOR_EXECUTED_GTID_SET(%s, 120)", (executed,))
            assert cur.fetchone()[0] == 0
            cur.execute("STOP REPLICA")
            cur.execute("RESET REPLICA ALL")
        else:
            cur.execute("SELECT MASTER_GTID_WAIT(%s, 120)", (executed,))
            assert cur.fetchone()[0] == 0
            cur.execute("STOP SLAVE")
            cur.execute("RESET SLAVE ALL")
    traffic(replica, "promoted", 6, seed=15)
    second = rotated(replica)
    proc, out = _archive(replica, store)  # the same source name, another server
    assert proc.returncode == 0, proc.stderr
    assert [(n["kind"], n["generation"]) for n in out if n["record"] == "notice"] == [("new_server", 2)]
    assert _objects(store) == {**first, **{f"{n}@g0002": b for n, b in second.items()}}

    # what the old primary executed, by its own account: its gtid_executed; MariaDB's
    # gtid_binlog_pos `0-<its server_id>-N` (it alone wrote domain 0 until the failover)
    if flavor == "mysql":
        from_primary = _gtids([executed])
    else:
        domain, server_id, last = executed.split("-")
        from_primary = {f"{domain}-{server_id}-{n}" for n in range(1, int(last) + 1)}
    txns = _assemble_and_check(spark, store, tmp_path / "lake", repeated=from_primary)
    got = [t["gtid"] for t in txns]
    assert len(got) == len(set(got))  # every GTID once
    assert {t["gtid"] for t in txns if "@g" not in t["binlog_file"]} == from_primary  # the first copies
    if flavor == "mysql":  # exactly what the new primary executed: the old one's and its own
        assert _gtids(got) == _gtids([gtid_executed(replica)])
    assert _inserted(tmp_path / "lake") == table(replica)


def test_a_repeat_whose_content_differs_is_an_anomaly(mysql_factory, spark, tmp_path):
    """A replica whose table has drifted (a column more) logs other row images under the same
    GTIDs: after the failover each such repeat is a REPEAT_DIFFERS anomaly naming both copies,
    the first archived copy is kept, and the range does not validate."""
    from binlake.spark.job import assemble
    from binlake.spark.validate import validate

    primary, replica = mysql_factory(), mysql_factory()
    with replica.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE DATABASE h")
        cur.execute("CREATE TABLE h.t (id INT PRIMARY KEY, phase VARCHAR(16), v VARCHAR(40), "
                    "note VARCHAR(8) DEFAULT 'drift')")
        cur.execute(f"CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT={primary.port}, "
                    "SOURCE_USER='root', SOURCE_PASSWORD='', SOURCE_AUTO_POSITION=1, GET_SOURCE_PUBLIC_KEY=1")
        cur.execute("START REPLICA")
    before = gtid_executed(primary)
    traffic(primary, "primary", 4, seed=16)
    executed = gtid_executed(primary)
    store = tmp_path / "store"
    assert _archive(primary, store)[0].returncode == 0
    with replica.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT WAIT_FOR_EXECUTED_GTID_SET(%s, 120)", (executed,))
        assert cur.fetchone()[0] == 0
        cur.execute("STOP REPLICA")
        cur.execute("RESET REPLICA ALL")
        cur.execute("FLUSH BINARY LOGS")
    assert _archive(replica, store)[0].returncode == 0
    summary = assemble(spark, f"file://{store}", str(tmp_path / "lake"), *RANGE)
    anomalies = [a for a in rows(tmp_path / "lake", "anomalies") if a["code"] == "REPEAT_DIFFERS"]
    # the primary's inserts into h.t: the workload's 4 transactions after its CREATE DATABASE and
    # CREATE TABLE, the last 4 of the 6 GTIDs it added to the primary's gtid_executed; each logged
    # by the replica with a 4th column
    uuid = executed.split(":")[0]
    had = int(before.split(":")[1].split("-")[-1]) if before else 0
    last = had + 6
    assert executed == f"{uuid}:1-{last}", (before, executed)
    inserted = {f"{uuid}:{n}" for n in range(last - 3, last + 1)}
    assert summary.anomalies_by_code["REPEAT_DIFFERS"] == 4
    assert all(a["binlog_file"].endswith("@g0002") and "with other content" in a["detail"] for a in anomalies)
    assert {a["detail"].split("repeats GTID ")[1].split(" ")[0] for a in anomalies} == inserted
    assert [r["after"] for r in rows(tmp_path / "lake", "row_changes") if "drift" in str(r["after"])] == []
    report = validate(spark, str(tmp_path / "lake"), *RANGE, store=f"file://{store}")
    failed = {r.suite for r in report.suites if not r.success}
    assert not report.success and failed == {"anomalies"} and "@g0002" in report.text(), report.text()
