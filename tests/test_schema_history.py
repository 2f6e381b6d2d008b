"""Named, typed rows from servers as they ship: a schema snapshot advanced by the binlog's own DDL.

The DDL-heavy workload of tests.support.ddl_workload runs on two real servers of a flavor that
differ only in binlog_row_metadata: FULL, which names every column itself (the oracle), and the
flavor's default (MySQL MINIMAL, MariaDB NO_LOG). The range read starts after tables were created
(their CREATE is not in it): a snapshot of the bare server taken there (`binlake schema
capture`, or `binlake schema import` of its SHOW CREATE TABLE texts) is what names them, and the
range's own DDL advances it. Every row change of the bare server, read with the snapshot, equals
the FULL server's, names and values.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support import ddl_workload
from tests.support.scanning import ndjson, run_cli

CASES = [("mysql_factory", "MINIMAL"), ("mariadb_factory", "NO_LOG")]  # (the servers' fixture, the setting)
FLUSH = {"mysql": "FLUSH BINARY LOGS", "mariadb": "FLUSH BINARY LOGS"}


def _run(server, flavor: str, out: Path, snapshot: bool) -> list[Path]:
    """The workload on server; the range's files (rotated, from the first after the tables that
    predate it). With snapshot: `out/snapshot.json` (capture) and `out/create.sql` (SHOW CREATE
    TABLE texts) of the server at the range's start, `out/snapshot-end.json` at its end, and an
    archive run after each phase into `out/store` (source db1)."""
    with server.connect() as conn, conn.cursor() as cur:
        ddl_workload.before(cur)
        cur.execute(FLUSH[flavor])
        cur.execute("SHOW BINARY LOGS")
        first = cur.fetchall()[-1][0]
        if snapshot:
            url = f"mysql://root@127.0.0.1:{server.port}"
            done = run_cli("schema", "capture", "--source", url, "--out", str(out / "snapshot.json"))
            assert done.returncode == 0, done.stderr
            cur.execute(f"SHOW CREATE DATABASE {ddl_workload.DB}")
            texts = [cur.fetchone()[1]]
            cur.execute(f"SHOW TABLES FROM {ddl_workload.DB}")
            for (table,) in cur.fetchall():
                cur.execute(f"SHOW CREATE TABLE {ddl_workload.DB}.`{table}`")
                texts.append(cur.fetchone()[1])
            (out / "create.sql").write_text(f"USE {ddl_workload.DB};\n" + ";\n".join(texts) + ";\n")
        ddl_workload.run(cur, FLUSH[flavor], between=(lambda: _archive(server, out)) if snapshot else None)
        if snapshot:
            done = run_cli("schema", "capture", "--source", url, "--out", str(out / "snapshot-end.json"))
            assert done.returncode == 0, done.stderr
        cur.execute("SHOW BINARY LOGS")
        names = [r[0] for r in cur.fetchall()]
    return [server.binlog_dir / n for n in names[names.index(first):-1]]


def _archive(server, out: Path) -> None:
    done = run_cli("archive", "--source", f"mysql://root@127.0.0.1:{server.port}", "--store",
                   f"file://{out / 'store'}", "--source-name", "db1")
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module", params=CASES, ids=[f"{f.removesuffix('_factory')}-{m}" for f, m in CASES])
def history(request, tmp_path_factory):
    name, metadata = request.param
    flavor = name.removesuffix("_factory")
    factory = request.getfixturevalue(name)
    out = tmp_path_factory.mktemp(f"history-{flavor}")
    full = _run(factory(binlog_row_metadata="FULL"), flavor, out, snapshot=False)
    bare = _run(factory(binlog_row_metadata=metadata), flavor, out, snapshot=True)
    return flavor, metadata, full, bare, out


def _scan(files: list[Path], *args: str) -> dict[str, list[dict]]:
    done = run_cli("scan", "--rows", "--anomalies", *args, *map(str, files))
    assert done.returncode == 0, done.stderr
    out: dict[str, list[dict]] = {"transaction": [], "row_change": [], "anomaly": []}
    for rec in ndjson(done.stdout):
        out[rec["record"]].append(rec)
    return out


def _changes(records: dict[str, list[dict]]) -> list[tuple]:
    return [(r["schema"], r["table"], r["op"], r["before"], r["after"]) for r in records["row_change"]]


def _assert_same(got: list[tuple], want: list[tuple]) -> None:
    assert len(got) == len(want)
    for n, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g == w, f"row change {n} of {g[0]}.{g[1]} ({g[2]}): {g[3:]} != FULL's {w[3:]}"


def _unknown(records: dict[str, list[dict]]) -> set[tuple[str, str]]:
    """(file, table) of each SCHEMA_UNKNOWN anomaly, the only anomalies there are, said once each."""
    assert {a["code"] for a in records["anomaly"]} <= {"SCHEMA_UNKNOWN"}
    said = [(a["binlog_file"], a["detail"].split(" TABLE_MAP of hist.")[1].split(": the schema history")[0])
            for a in records["anomaly"]]
    assert len(said) == len(set(said)), said
    return set(said)


def _positional(records: dict[str, list[dict]]) -> set[tuple[str, str]]:
    """(file, table) of the row changes with positional names."""
    return {(r["binlog_file"], r["table"]) for r in records["row_change"]
            if any(k.startswith("col_") for k in (r["after"] or r["before"]))}


def test_the_bare_binlog_has_no_names(history):
    # what the server logged: without the snapshot, positional names (docs/row-values.md)
    flavor, metadata, full, bare, out = history
    got = _scan(bare)
    assert got["row_change"] and all(k.startswith("col_") for r in got["row_change"] for k in (r["after"] or {}))


@pytest.mark.parametrize("how", ["capture", "import", "import into a store"])
def test_snapshot_and_replayed_ddl_name_every_row_as_full_metadata_does(history, how, tmp_path):
    flavor, metadata, full, bare, out = history
    want = _scan(full)
    assert want["anomaly"] == []
    history_args = ["--schema", str(out / "snapshot.json")]
    if how == "import":
        snapshot = tmp_path / "imported.json"
        done = run_cli("schema", "import", str(out / "create.sql"), "--flavor", flavor, "--out", str(snapshot))
        assert done.returncode == 0, done.stderr
        history_args = ["--schema", str(snapshot)]
    elif how == "import into a store":  # a dir:// archive's history: placed at the range's first file
        store = f"file://{tmp_path / 'store'}"
        done = run_cli("schema", "import", str(out / "create.sql"), "--flavor", flavor, "--store", store,
                       "--source-name", "dirsrc", "--position", f"{bare[0].name}:4")
        assert done.returncode == 0, done.stderr
        history_args = ["--store", store, "--source-name", "dirsrc"]
    got = _scan(bare, *history_args)
    assert got["anomaly"] == []
    _assert_same(_changes(got), _changes(want))
    # every table of every phase was written, renamed ones under each of their names
    tables = {r[1] for r in _changes(want)}
    assert tables == {"old_t", "t1", "t 2", "t1_old", "t3", "t4"}, tables
    assert len(want["row_change"]) > 5 * 3 * len(ddl_workload.PHASES)


def test_the_history_archive_runs_recorded_names_the_archived_files_as_full_metadata_does(history):
    # an archive run after every phase snapshotted the tables into the store's history; the
    # archived copies of the range, read with that history, are named as the FULL server names them
    flavor, metadata, full, bare, out = history
    snapshots = sorted((out / "store" / "db1" / "schema" / "snapshots").glob("*.json"))
    assert len(snapshots) == len(ddl_workload.PHASES)
    archived = [out / "store" / "db1" / "binlogs" / f.name for f in bare]
    got = _scan(archived, "--store", f"file://{out / 'store'}", "--source-name", "db1")
    assert got["anomaly"] == []
    _assert_same(_changes(got), _changes(_scan(full)))


def test_a_history_that_disagrees_gives_positional_names_and_an_anomaly(history):
    # an edited snapshot: old_t's `u` is said to be a VARCHAR, and t3, created LIKE old_t in the
    # range, inherits it. Their TABLE_MAPs disagree: every row of theirs positional, a
    # SCHEMA_MISMATCH per table and file naming the table, file and offset; the others named.
    flavor, metadata, full, bare, out = history
    doc = json.loads((out / "snapshot.json").read_text())
    old_t = next(t for t in doc["tables"] if t["name"] == "old_t")
    u = next(c for c in old_t["columns"] if c["name"] == "u")
    u.update(type="varchar(10)", charset="latin1")
    edited = out / "edited.json"
    edited.write_text(json.dumps(doc))
    got = _scan(bare, "--schema", str(edited))
    wrong = {"old_t", "t3"}
    mismatches = [a for a in got["anomaly"] if a["code"] == "SCHEMA_MISMATCH"]
    assert {a["detail"].split(" TABLE_MAP of hist.")[1].split(" ")[0] for a in mismatches} == wrong
    for a in mismatches:
        assert a["detail"].startswith(f"{a['binlog_file']}:{a['start_pos']}: TABLE_MAP of hist.")
        assert "`u` is varchar(10) latin1 in the history (logged as VARCHAR [10]), LONG in the binlog" in a["detail"]
    positional = [r for r in got["row_change"] if r["table"] in wrong]
    assert positional and all(k.startswith("col_") for r in positional for k in (r["after"] or r["before"]))
    assert {(a["binlog_file"], t) for a in mismatches for t in wrong if f"hist.{t} " in a["detail"]} == \
        {(r["binlog_file"], r["table"]) for r in positional}
    want = [c for c in _changes(_scan(full)) if c[1] not in wrong]
    _assert_same([c for c in _changes(got) if c[1] not in wrong], want)


def test_a_snapshot_taken_after_the_range_names_only_tables_no_ddl_changed_since(history):
    # The snapshot at the range's end is read back to its start only for tables that no DDL in
    # between touched. Every table of the workload is touched: t1 and `t 2` are named once the
    # range's own CREATEs define them (as FULL names them); old_t, only ALTERed in the range, and
    # t3 (LIKE old_t) stay positional all through: never the end's names on earlier rows.
    flavor, metadata, full, bare, out = history
    got = _scan(bare, "--schema", str(out / "snapshot-end.json"))
    unknown = {"old_t", "t3"}
    positional = [r for r in got["row_change"] if r["table"] in unknown]
    assert positional and all(k.startswith("col_") for r in positional for k in (r["after"] or r["before"]))
    # never silently: a SCHEMA_UNKNOWN anomaly names each such table, once in every file it is in
    assert _unknown(got) == _positional(got) == {(r["binlog_file"], r["table"]) for r in positional}
    want = [c for c in _changes(_scan(full)) if c[1] not in unknown]
    _assert_same([c for c in _changes(got) if c[1] not in unknown], want)


def test_archive_runs_in_the_same_second_name_every_row_of_every_range(mariadb_factory, tmp_path):
    # MariaDB as it ships (binlog_row_metadata=NO_LOG: no names in the binlog), the DDL workload
    # with an archive run (in this process: a fraction of a second each) after every phase, so
    # that several snapshots share their whole-second time. Each snapshot is chosen by its point
    # in the binlog, never by its time or its key's random id: every range, from each archived
    # file to the end, is named as the same workload on a FULL server names it, with no anomaly.
    import collections

    from binlake.archive.run import archive
    from binlake.archive.sources import MySQLSource
    from binlake.archive.stores import open_store
    from binlake.schema.capture import into_history
    from binlake.schema.history import snapshots

    store = open_store(f"file://{tmp_path / 'store'}")

    def archive_run() -> None:
        archive(MySQLSource(f"mysql://root@127.0.0.1:{bare.port}"), store, "db1", capture=into_history)

    full, bare = mariadb_factory(binlog_row_metadata="FULL"), mariadb_factory(binlog_row_metadata="NO_LOG")
    ranges = {}
    for name, server, between in (("full", full, None), ("bare", bare, archive_run)):
        with server.connect() as conn, conn.cursor() as cur:
            ddl_workload.before(cur)
            cur.execute("FLUSH BINARY LOGS")
            cur.execute("SHOW BINARY LOGS")
            first = cur.fetchall()[-1][0]
            ddl_workload.run(cur, "FLUSH BINARY LOGS", between=between)
            cur.execute("SHOW BINARY LOGS")
            names = [r[0] for r in cur.fetchall()]
        ranges[name] = names[names.index(first):-1]
    history = snapshots(store, "db1")
    seconds = collections.Counter(s.taken_at for s in history)
    assert len(history) == len(ddl_workload.PHASES) and max(seconds.values()) >= 2, seconds  # ties in time
    archived = [tmp_path / "store" / "db1" / "binlogs" / n for n in ranges["bare"]]
    assert len(archived) == len(ranges["full"]) == len(ddl_workload.PHASES)
    for i in range(len(archived)):
        got = _scan(archived[i:], "--store", f"file://{tmp_path / 'store'}", "--source-name", "db1")
        assert got["anomaly"] == [], (i, got["anomaly"][:3])
        _assert_same(_changes(got), _changes(_scan([full.binlog_dir / n for n in ranges["full"][i:]])))


# The statements of issue 21's measurement, and the row they must print (the values it inserted).
MEASURED = [
    "CREATE DATABASE t",
    "CREATE TABLE t.a (id INT UNSIGNED PRIMARY KEY, big BIGINT UNSIGNED, e ENUM('x','y'), "
    "s SET('a','b'), c CHAR(3) CHARACTER SET latin1, ts TIMESTAMP NULL)",
    "INSERT INTO t.a VALUES (4294967295, 18446744073709551615, 'y', 'a,b', 'é', '2026-01-01 00:00:00')",
]
MEASURED_ROW = {"id": 4294967295, "big": 18446744073709551615, "e": "y", "s": ["a", "b"], "c": "é",
                "ts": "2026-01-01 00:00:00"}


@pytest.mark.parametrize(("factory", "metadata"), CASES)
def test_one_archive_run_records_the_history_that_names_the_rows(factory, metadata, request, tmp_path):
    flavor = factory.removesuffix("_factory")
    server = request.getfixturevalue(factory)(binlog_row_metadata=metadata)
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
        for sql in MEASURED:
            cur.execute(sql)
        cur.execute(FLUSH[flavor])
        cur.execute("SELECT COLUMN_NAME, COLUMN_TYPE, CHARACTER_SET_NAME FROM information_schema.COLUMNS "
                    "WHERE TABLE_SCHEMA = 't' AND TABLE_NAME = 'a' ORDER BY ORDINAL_POSITION")
        columns = [(n, t.decode() if isinstance(t, bytes) else t, cs) for n, t, cs in cur.fetchall()]
    store = f"file://{tmp_path / 'store'}"
    done = run_cli("archive", "--source", f"mysql://root@127.0.0.1:{server.port}", "--store", store,
                   "--source-name", "db1")
    assert done.returncode == 0, done.stderr
    summary = ndjson(done.stdout)[-1]
    assert summary["archived"] == ["binlog.000001"] and summary["schema_snapshot"].startswith("db1/schema/snapshots/")
    # the snapshot holds the server's own information_schema
    doc = json.loads((tmp_path / "store" / summary["schema_snapshot"]).read_text())
    a = next(t for t in doc["tables"] if (t["schema"], t["name"]) == ("t", "a"))
    assert [(c["name"], c["type"], c.get("charset")) for c in a["columns"]] == \
        [(n, t.lower(), cs) for n, t, cs in columns]
    archived = tmp_path / "store" / "db1" / "binlogs" / "binlog.000001"
    rows = [r for r in ndjson(run_cli("scan", "--rows", str(archived)).stdout) if r["record"] == "row_change"]
    assert rows[-1]["after"] != MEASURED_ROW  # without the history: positional
    named = run_cli("scan", "--rows", "--store", store, "--source-name", "db1", str(archived))
    assert named.returncode == 0, named.stderr
    rows = [r for r in ndjson(named.stdout) if r["record"] == "row_change"]
    assert [r["after"] for r in rows] == [MEASURED_ROW]


def test_a_snapshot_is_moved_to_the_first_file_scanned_by_the_files_between(history, tmp_path):
    # Scanning the second half of the range: the snapshot of the range's start is advanced by the
    # first half's DDL (read from the files beside the scanned ones), and the end's snapshot loses
    # what the second half's DDL touched; both name every row as FULL does where they can.
    flavor, metadata, full, bare, out = history
    half = len(bare) // 2
    want = _changes(_scan(full[half:]))
    got = _scan(bare[half:], "--schema", str(out / "snapshot.json"))
    assert got["anomaly"] == []
    _assert_same(_changes(got), want)
    # the first half against the end's snapshot: the files after it are read for their DDL
    got = _scan(bare[:half], "--schema", str(out / "snapshot-end.json"))
    named = [json.dumps(c) for c in _changes(got) if not any(k.startswith("col_") for k in (c[4] or c[3]))]
    assert named and set(named) <= {json.dumps(c) for c in _changes(_scan(full[:half]))}
    assert _unknown(got) == _positional(got)  # each unnamed table says so
    # without the files between at hand, only the files' own DDL names tables: never the snapshot's
    alone = tmp_path / "alone"
    alone.mkdir()
    copies = [alone / f.name for f in bare[half:]]
    for f, c in zip(bare[half:], copies, strict=True):
        c.write_bytes(f.read_bytes())
    got = _scan(copies, "--schema", str(out / "snapshot.json"))
    assert {c[1] for c in _changes(got) if not any(k.startswith("col_") for k in (c[4] or c[3]))} <= \
        {"t1_old", "t3", "t4"}
    assert _unknown(got) == _positional(got) != set()


def _spark_and_scan(spark, store: Path, lake_dir: Path) -> tuple:
    """The assemble job over everything a store holds of db1, with the store's own history, and a
    scan of the same archived files with that history: (summary, the lake's digests, the scan's
    digests, the scan's records)."""
    from binlake.spark.job import assemble
    from tests.support.lake import lake, scanned

    summary = assemble(spark, f"file://{store}", str(lake_dir), "2000-01-01T00:00:00Z", "2100-01-01T00:00:00Z",
                       split_bytes=2_000)  # files in many splits: states at splits' starts
    files = sorted((store / "db1" / "binlogs").iterdir())
    records = _scan(files, "--store", f"file://{store}", "--source-name", "db1", "--source", "db1")
    return summary, lake(lake_dir), scanned(records), records


def test_the_spark_job_reads_the_stores_history_as_the_scan_does(history, spark, tmp_path):
    # Req 4: the job reads the history the archive runs recorded, and every table, row names and
    # values included, equals the scan's of the same files (whose rows of the range are FULL's:
    # the test above). With an edited history, the same positional rows and the same
    # SCHEMA_MISMATCH anomalies, once per table and file, though the job reads a file in splits.
    from tests.support.lake import differences

    flavor, metadata, full, bare, out = history
    summary, got, want, records = _spark_and_scan(spark, out / "store", tmp_path / "lake")
    assert differences(got, want) == {}
    assert records["anomaly"] == [] and summary.anomalies == 0
    ranged = {f.name for f in bare}
    assert [c for r in records["row_change"] if r["binlog_file"] in ranged for c in _changes({"row_change": [r]})] \
        == _changes(_scan(full))
    assert summary.schema_states > len(ddl_workload.PHASES)  # the range's DDL moved the splits' states on

    # an archive whose files start with the range (old_t's CREATE is not in it), its history the
    # capture of the range's start, edited: old_t's `u` said to be a VARCHAR (t3, LIKE old_t, too)
    edited = tmp_path / "edited"
    shutil.copytree(out / "store", edited)
    for f in (edited / "db1" / "binlogs").iterdir():
        if f.name < bare[0].name:
            f.unlink()
            (edited / "db1" / "manifests" / f"{f.name}.json").unlink()
    for f in (edited / "db1" / "schema" / "snapshots").iterdir():
        f.unlink()
    doc = json.loads((out / "snapshot.json").read_text())
    old_t = next(t for t in doc["tables"] if t["name"] == "old_t")
    next(c for c in old_t["columns"] if c["name"] == "u").update(type="varchar(10)", charset="latin1")
    (edited / "db1" / "schema" / "snapshots" / "20000101T000000Z-edited.json").write_text(json.dumps(doc))
    summary, got, want, records = _spark_and_scan(spark, edited, tmp_path / "edited-lake")
    assert differences(got, want) == {}
    mismatches = [a for a in records["anomaly"] if a["code"] == "SCHEMA_MISMATCH"]
    assert {a["detail"].split(" TABLE_MAP of hist.")[1].split(" ")[0] for a in mismatches} == {"old_t", "t3"}
    assert summary.splits > summary.files and summary.anomalies == len(mismatches)  # once per table and file


# -- captures that change nothing: recorded by reference ----------------------------------------


def _capture(tables: dict, hour: int, file: int):
    """A capture as binlake.schema.capture makes one: `tables` {name: [(column, type)]} of db1."""
    import datetime as dt

    from binlake.schema.capture import stamp
    from binlake.schema.model import Column, Snapshot, Table

    return Snapshot({("db1", n): Table("db1", n, tuple(Column(c, t) for c, t in cols)) for n, cols in tables.items()},
                    {"db1": "utf8mb4"}, {"before": {"file": f"binlog.{file:06d}", "position": 4},
                                         "after": {"file": f"binlog.{file:06d}", "position": 4}},
                    "db1", stamp(dt.datetime(2026, 11, 25, hour, tzinfo=dt.UTC)))


@pytest.mark.parametrize("where", ["file", "s3"])
def test_a_capture_that_changes_nothing_is_recorded_by_reference(where, tmp_path, request):
    """Hourly captures of a schema that changes once: each unchanged one is a small reference to
    the newest whole snapshot, and reads as the capture it was made of (the oracle: the captures
    themselves); a latest.json missing, not JSON, naming a key outside the history or a snapshot
    that is gone gives a whole snapshot, and a reference whose whole snapshot is gone is refused
    by name."""
    import boto3

    from binlake.archive.keys import latest_key
    from binlake.archive.stores import open_store
    from binlake.schema.history import loaded, record, snapshots

    if where == "s3":
        request.getfixturevalue("s3_endpoint")
        boto3.client("s3").create_bucket(Bucket="history")
        store = open_store("s3://history/archive")
    else:
        store = open_store(f"file://{tmp_path}")
    wide = {f"t{i}": [("id", "int unsigned"), ("doc", "json"), ("note", "varchar(200)")] for i in range(50)}
    altered = {**wide, "t0": [*wide["t0"], ("added", "datetime(6)")]}
    captures = [_capture(altered if 3 <= hour < 6 else wide, hour, hour + 1) for hour in range(8)]
    keys = [record(store, "db1", c) for c in captures]
    docs = [json.loads(store.get(k)) for k in keys]
    # whole where the tables changed (the first, the ALTER's, its undoing), references between
    assert [d["kind"] for d in docs] == ["snapshot", "unchanged", "unchanged", "snapshot", "unchanged",
                                         "unchanged", "snapshot", "unchanged"]
    assert [d.get("tables_of") for d in docs] == [None, keys[0], keys[0], None, keys[3], keys[3], None, keys[6]]
    assert max(len(store.get(k)) for k, d in zip(keys, docs, strict=True) if d["kind"] == "unchanged") < 1024
    assert min(len(store.get(k)) for k, d in zip(keys, docs, strict=True) if d["kind"] == "snapshot") > 10 * 1024
    history = snapshots(store, "db1")
    assert [loaded(store, s) for s in history] == captures  # each as it was captured: tables, time, point

    # latest.json is derived: without it, or wrong, the next capture is written whole
    for damage in ("gone", "not JSON", "names a key outside the history", "names a snapshot that is gone"):
        if damage == "gone":
            store.delete(latest_key("db1"))
        elif damage == "not JSON":
            store.put(latest_key("db1"), b"\x00{")
        elif damage == "names a key outside the history":
            latest = json.loads(store.get(latest_key("db1")))
            store.put(latest_key("db1"), json.dumps({**latest, "key": "../../elsewhere.json"}).encode())
        else:
            latest = json.loads(store.get(latest_key("db1")))  # the right digest, a key not in the store
            store.put(latest_key("db1"), json.dumps({**latest, "key": latest["key"] + ".gone"}).encode())
        key = record(store, "db1", _capture(wide, 9, 10))
        assert json.loads(store.get(key))["kind"] == "snapshot", damage
        assert json.loads(store.get(record(store, "db1", _capture(wide, 10, 11))))["tables_of"] == key, damage

    store.delete(keys[3])  # a reference whose whole snapshot is gone: refused, naming both
    with pytest.raises(ValueError, match=f"{keys[4]}: its tables are those of {keys[3]}, which the store lacks"):
        loaded(store, next(s for s in snapshots(store, "db1") if s.key == keys[4]))
