"""The row versions of a real MySQL server's tables (`binlake tables`), read back with `binlake
asof`, held to the server's own SELECT at recorded checkpoints, by GTID and by time.

One server of this module's own per flavor, MySQL 9 and MariaDB 10.11 (its binary log is this
module's alone), runs a recorded workload:
typed columns (BIGINT UNSIGNED, DECIMAL(65,30), TIME(6) over 24 hours and negative, JSON), a
primary-key update, a table without a key holding equal rows (a multiset), partial row images
(the session's binlog_row_image MINIMAL and NOBLOB: values completed from the previous version,
a value never logged left out until a FULL image shows it), ADD/RENAME/DROP COLUMN, an XA
transaction prepared at a checkpoint and committed after it, an XA rollback, TRUNCATE, DROP TABLE
and CREATE again under the same name. At each checkpoint the test records every table with SELECT
(each value as the server's text), its last GTID (MySQL's gtid_executed, MariaDB's
gtid_binlog_pos) and the server's UTC time.
Then: archive, assemble, validate, apply; `binlake asof` at each checkpoint equals the SELECT, on
both flavors; at every other transaction of the workload, it equals a replica of the server
stopped right after it. On MySQL's lake (the rules below are the flavor's no more than the apply's): a
rerun changes nothing; the range applied in pieces, and in pieces backwards (a backfill), gives
the same versions as applied whole; a range after a gap is refused, naming the range to apply
first.
"""

from __future__ import annotations

import base64
import datetime as dt
import itertools
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from binlake.splits.times import parse_time
from tests.support.scanning import cli_here, ndjson, run_cli
from tests.support.waiting import until

RANGE = ("2000-01-01", "2100-01-01")
def _checkpoint(cur, columns: dict[str, list[str]], flavor: str) -> dict:
    """The server's tables (_tables), last GTID and time now."""
    tables = _tables(cur, columns)
    executed = "gtid_executed" if flavor == "mysql" else "gtid_binlog_pos"
    cur.execute(f"SELECT @@global.{executed}, DATE_FORMAT(UTC_TIMESTAMP(6), '%Y-%m-%dT%H:%i:%s.%fZ')")
    executed, now = cur.fetchone()
    if flavor == "mariadb":  # one domain, one server: `0-<server id>-<its last sequence number>`
        # Its binary log's commit times are whole seconds (docs/tables.md): the workload goes on in
        # the server's next second, so that `now` is after the second of every write before it only.
        second = int(dt.datetime.fromisoformat(now).timestamp())

        def next_second() -> bool:
            cur.execute("SELECT UNIX_TIMESTAMP()")
            return int(cur.fetchone()[0]) > second

        until(next_second, "the server's clock in the next second", 5, every=0.05)
        return {"tables": tables, "gtid": executed, "time": now}
    # the server's own last GTID (a promoted replica's set also holds its old primary's)
    cur.execute("SELECT @@server_uuid")
    uuid = cur.fetchone()[0]
    (ranges,) = [p.split(":", 1)[1] for p in executed.replace("\n", "").split(",") if p.startswith(uuid)]
    return {"tables": tables, "gtid": f"{uuid}:{ranges.split('-')[-1]}", "time": now}


def _tables(cur, columns: dict[str, list[str]]) -> dict[str, Counter]:
    """The server's tables: each row its [column, text] pairs in the table's order, less the
    columns of `part` the binlog never showed (MINIMAL, by id: what asof leaves out)."""
    tables = {}
    for name, cols in columns.items():
        cur.execute(f"SELECT {', '.join(cols)} FROM shop.{name}")
        rows = Counter()
        for row in cur.fetchall():
            pairs = [[_name(c), _text(c, v)] for c, v in zip(cols, row, strict=True)]
            gone = MINIMAL.get(row[0], set()) if name == "part" else set()
            rows[json.dumps([p for p in pairs if p[0] not in gone])] += 1
        tables[name] = rows
    return tables


def _name(expr: str) -> str:
    """A SELECT expression's column: `CAST(bal AS CHAR)` is bal."""
    return expr.removeprefix("CAST(").split(" ")[0]


def _text(column: str, v):
    """A value of the server's SELECT as the test compares it: its text (a JSON document parsed)."""
    if v is None:
        return None
    if isinstance(v, bytes):
        v = v.decode()
    if column == DOC:
        return json.dumps(json.loads(v), sort_keys=True)
    return str(v)


def _asof_text(name: str, v, flavor: str):
    if v is None:
        return None
    if name == "doc":  # the JSON column: the server's text is the document, compared parsed
        # (MariaDB's JSON is LONGTEXT: its row images, and so asof, give the document's text)
        return json.dumps(json.loads(v) if flavor == "mariadb" else v, sort_keys=True)
    if isinstance(v, str) and v.startswith("base64:"):  # BLOB: row-values' base64, the server's text
        return base64.b64decode(v.removeprefix("base64:")).decode()
    return str(v)


DOC = "CAST(doc AS CHAR)"
ACCT = ["id", "CAST(bal AS CHAR)", "CAST(amt AS CHAR)", "CAST(tm AS CHAR)", DOC]
PART = ["id", "a", "b", "big", "c"]
# part's row 3, inserted under MINIMAL naming id and a only, never changed again: b, big, c never
# logged (row 2, inserted so too, is known whole from the FULL before image of its next update)
MINIMAL = {3: {"b", "big", "c"}}


def _workload(server, flavor: str) -> list[dict]:
    """The recorded workload; its checkpoints."""
    points = []
    # checkpoints read in a session of their own: MariaDB's session of a prepared XA transaction can run no query
    with server.connect() as conn, conn.cursor() as cur, server.connect() as other, other.cursor() as look:
        cur.execute("CREATE DATABASE shop")
        cur.execute("CREATE TABLE shop.acct (id INT PRIMARY KEY, bal BIGINT UNSIGNED, amt DECIMAL(65,30), "
                    "tm TIME(6), doc JSON, note VARCHAR(20))")
        cur.execute("CREATE TABLE shop.bag (x INT, y VARCHAR(10))")  # no key: a multiset
        cur.execute("CREATE TABLE shop.part (id INT PRIMARY KEY, a INT, b VARCHAR(10), big BLOB, c INT DEFAULT 5)")
        cur.execute("INSERT INTO shop.part VALUES (1, 1, 'x', 'blob1', 9)")
        cur.execute("SET SESSION binlog_row_image = 'MINIMAL'")
        cur.execute("UPDATE shop.part SET a = 2 WHERE id = 1")  # before: the key; after: a
        cur.execute("INSERT INTO shop.part (id, a) VALUES (2, 3), (3, 6)")  # b, big and c not logged
        cur.execute("SET SESSION binlog_row_image = 'NOBLOB'")
        cur.execute("UPDATE shop.part SET b = 'y' WHERE id = 1")  # big unchanged: not in the images
        cur.execute("SET SESSION binlog_row_image = 'FULL'")
        cur.execute("INSERT INTO shop.acct VALUES "
                    "(1, 18446744073709551615, '-12345678901234567890123456789012345.123456789012345678901234567890',"
                    " '-838:59:59.000000', '{\"a\": [1, 2.5, \"x\"], \"b\": null}', 'one'),"
                    "(2, 0, '0.000000000000000000000000000001', '100:00:00.000001', '[]', NULL),"
                    "(3, 42, '1', '00:00:00', '\"s\"', 'three'), (4, 7, '-0.5', '-00:00:01.5', '{}', 'four')")
        cur.execute("INSERT INTO shop.bag VALUES (1, 'a'), (1, 'a'), (2, 'b'), (1, 'a')")
        cur.execute("UPDATE shop.acct SET id = 10 WHERE id = 1")  # the key changes: the row moves
        cur.execute("DELETE FROM shop.bag WHERE x = 1 LIMIT 1")  # one of three equal rows
        cur.execute("UPDATE shop.bag SET y = 'c' WHERE x = 1 LIMIT 1")  # another of them
        points.append(_checkpoint(look, {"acct": ACCT + ["note"], "bag": ["x", "y"], "part": PART}, flavor))
        cur.execute("UPDATE shop.part SET a = 4 WHERE id = 2")  # a FULL image: every value known again
        cur.execute("ALTER TABLE shop.acct ADD COLUMN extra INT NOT NULL DEFAULT 7")
        cur.execute("UPDATE shop.acct SET bal = bal + 1, extra = 8 WHERE id = 2")
        cur.execute("XA START 'x1'")
        cur.execute("UPDATE shop.acct SET note = 'xa' WHERE id = 3")
        cur.execute("XA END 'x1'")
        cur.execute("XA PREPARE 'x1'")
        # x1 prepared only: not applied
        points.append(_checkpoint(look, {"acct": ACCT + ["note", "extra"], "bag": ["x", "y"], "part": PART}, flavor))
        cur.execute("XA COMMIT 'x1'")
        cur.execute("XA START 'x2'")
        cur.execute("DELETE FROM shop.acct WHERE id = 4")
        cur.execute("XA END 'x2'")
        cur.execute("XA PREPARE 'x2'")
        cur.execute("XA ROLLBACK 'x2'")
        points.append(_checkpoint(look, {"acct": ACCT + ["note", "extra"], "bag": ["x", "y"], "part": PART}, flavor))
        cur.execute("ALTER TABLE shop.acct RENAME COLUMN note TO memo")
        cur.execute("ALTER TABLE shop.acct DROP COLUMN extra")
        cur.execute("UPDATE shop.acct SET memo = 'renamed' WHERE id = 10")
        cur.execute("TRUNCATE TABLE shop.bag")
        cur.execute("INSERT INTO shop.bag VALUES (5, 'e')")
        points.append(_checkpoint(look, {"acct": ACCT + ["memo"], "bag": ["x", "y"], "part": PART}, flavor))
        cur.execute("DROP TABLE shop.acct")
        cur.execute("CREATE TABLE shop.acct (id INT PRIMARY KEY, memo VARCHAR(20))")
        cur.execute("INSERT INTO shop.acct VALUES (1, 'again')")
        points.append(_checkpoint(look, {"acct": ["id", "memo"], "bag": ["x", "y"], "part": PART}, flavor))
        cur.execute("FLUSH BINARY LOGS")  # every transaction in a closed file
    return points


@pytest.fixture(scope="module")
def lakes(spark, tmp_path_factory):
    """Each flavor's lake, built when a test first asks for it: `lakes(flavor, request)`."""
    built: dict[str, dict] = {}

    def get(flavor: str, request) -> dict:
        if flavor not in built:
            built[flavor] = _build(request.getfixturevalue(f"{flavor}_factory")(), flavor, spark, tmp_path_factory)
        return built[flavor]

    return get


@pytest.fixture
def applied(lakes, request):
    return lakes("mysql", request)


def _build(server, flavor: str, spark, tmp_path_factory) -> dict:
    """The workload archived, assembled, validated; the warehouse before and after the apply."""
    from binlake.spark.job import assemble
    from binlake.spark.validate import validate

    root = tmp_path_factory.mktemp(f"tables-{flavor}")
    store = f"file://{root}/store"
    _archive(server, store)  # the schema history captured before the workload
    points = _workload(server, flavor)
    _archive(server, store)
    warehouse = root / "lake"
    summary = assemble(spark, store, str(warehouse), *RANGE)
    assert summary.status == "ok"
    report = validate(spark, str(warehouse), *RANGE, store=store)
    assert report.success, report.text()
    untouched = root / "assembled"
    shutil.copytree(warehouse, untouched)
    out = _apply(spark, store, warehouse, *RANGE)
    assert out.status == "applied", out.reason
    return {"store": store, "warehouse": warehouse, "points": points, "assembled": untouched, "summary": out,
            "root": root, "flavor": flavor, "server": server}


def _archive(server, store: str) -> None:
    proc = run_cli("archive", "--source", f"mysql://root@127.0.0.1:{server.port}", "--store", store,
                   "--source-name", "src")
    assert proc.returncode == 0, proc.stderr


def _assemble_validate_apply(spark, store: str, warehouse: Path, span: tuple[str, str] = RANGE) -> None:
    """A range of the archive (the whole one by default) through the DAG's three steps, each to succeed."""
    from binlake.spark.job import assemble
    from binlake.spark.validate import validate

    assert assemble(spark, store, str(warehouse), *span).status == "ok"
    report = validate(spark, str(warehouse), *span, store=store)
    assert report.success, report.text()
    out = _apply(spark, store, warehouse, *span)
    assert out.status == "applied", out.reason


def _apply(spark, store: str, warehouse: Path, start: str, end: str):
    from binlake.spark.tables import TablesJob

    job = TablesJob(spark, store, str(warehouse), (start, end))
    (summary,) = job.run(["src"])
    # what it applied holds to the row versions' suites (docs/quality.md, "Row versions")
    assert all(r.success for r in job.reports), "\n".join(r.text() for r in job.reports)
    return summary


def _pieces(applied: dict, spark, lake: Path, cuts: list[str]) -> None:
    """The module's assembled lake copied to `lake`, then the ranges between `cuts` applied to it in
    turn, as hourly runs."""
    shutil.copytree(applied["assembled"], lake)
    for a, b in zip(cuts, cuts[1:], strict=False):
        assert _apply(spark, applied["store"], lake, a, b).status == "applied"


def _asof(warehouse: Path, at: str, table: str, flavor: str = "mysql") -> Counter:
    got = _asof_tables(warehouse, at, flavor, "--table", f"shop.{table}")
    assert set(got) <= {table}, got
    return got.get(table, Counter())


def _asof_tables(warehouse: Path, at: str, flavor: str, *args: str, run=cli_here) -> dict[str, Counter]:
    """`binlake asof`'s rows of shop's tables, in the form _tables gives the server's: the command's
    own main in this process, or (run=run_cli) the command as a user runs it."""
    proc = run("asof", "--warehouse", str(warehouse), "--source", "src", "--at", at, *args)
    assert proc.returncode == 0, proc.stderr
    return _grouped(ndjson(proc.stdout), flavor)


def _asof_here(warehouse: Path, at: str, flavor: str) -> dict[str, Counter]:
    """_asof_tables in this process (the command's own code less its start: many instants)."""
    import io

    from binlake.tables.asof import tables_at, write_jsonl

    found, partials = tables_at(str(warehouse), "src", at)
    assert partials == [], partials
    out = io.BytesIO()
    write_jsonl(found, out)
    return _grouped(ndjson(out.getvalue().decode()), flavor)


def _grouped(lines, flavor: str) -> dict[str, Counter]:
    out: dict[str, Counter] = {}
    for line in lines:
        assert line["schema"] == "shop", line
        row = json.dumps([[k, _asof_text(k, v, flavor)] for k, v in line["row"].items()])
        out.setdefault(line["table"], Counter())[row] += 1
    return out


@pytest.mark.parametrize("flavor", ["mysql", "mariadb"])
def test_asof_each_checkpoint_by_gtid_and_by_time_is_the_servers_select(lakes, request, flavor):
    lake = lakes(flavor, request)
    for i, point in enumerate(lake["points"]):
        for at in (point["gtid"], point["time"]):
            for table, expected in point["tables"].items():
                # the server's SELECT at that checkpoint, column for column in the table's order then
                assert _asof(lake["warehouse"], at, table, flavor) == expected, (i, at, table)
        # the command as a user runs it, every table at once (a table with no row prints none)
        whole = _asof_tables(lake["warehouse"], point["gtid"], flavor, run=run_cli)
        assert whole == {t: rows for t, rows in point["tables"].items() if rows}, i


@pytest.mark.parametrize("flavor", ["mysql", "mariadb"])
def test_asof_at_each_transaction_between_checkpoints_is_a_replica_stopped_there(lakes, request, flavor):
    """Every transaction of the workload that no checkpoint ends: a replica of the workload's
    server, stopped right after it (MySQL's START REPLICA UNTIL SQL_AFTER_GTIDS, MariaDB's START
    SLAVE UNTIL master_gtid_pos: one applier, in the primary's commit order), holds the tables
    then; `binlake asof` at its GTID gives the replica's SELECT."""
    from tests.support.snapshots import replica_at, replicate

    lake = lakes(flavor, request)
    mysql = flavor == "mysql"
    replica = request.getfixturevalue(f"{flavor}_factory")(**({"replica_parallel_workers": "1"} if mysql else {}))
    replicate(replica, lake["server"])
    # the workload's GTIDs, 1 to the last checkpoint's: the server's, fresh, ran nothing else
    head, last = lake["points"][-1]["gtid"].rsplit(":" if mysql else "-", 1)
    checkpoints = {point["gtid"] for point in lake["points"]}
    between = [f"{head}:{n}" if mysql else f"{head}-{n}" for n in range(1, int(last) + 1)]
    between = [gtid for gtid in between if gtid not in checkpoints]
    assert len(between) >= 20, between  # the workload's transactions less its five checkpoints
    for gtid in between:
        n = gtid.rsplit(":" if mysql else "-", 1)[1]
        replica_at(replica, (f"{head}:1" if n == "1" else f"{head}:1-{n}") if mysql else gtid)
        with replica.connect() as conn, conn.cursor() as cur:
            cur.execute("SELECT table_name, column_name FROM information_schema.columns "
                        "WHERE table_schema = 'shop' ORDER BY table_name, ordinal_position")
            columns: dict[str, list[str]] = {}
            for table, column in cur.fetchall():
                columns.setdefault(table, []).append(_select(column))
            expected = {name: rows for name, rows in _tables(cur, columns).items() if rows}
        assert _asof_here(lake["warehouse"], gtid, flavor) == expected, gtid  # the replica's SELECT there


def _select(column: str) -> str:
    """The workload's column as the checkpoints SELECT it (ACCT): the exact types as their text."""
    return DOC if column == "doc" else f"CAST({column} AS CHAR)" if column in ("bal", "amt", "tm") else column


def test_asof_past_the_watermark_is_refused_and_names_it(applied):
    proc = run_cli("asof", "--warehouse", str(applied["warehouse"]), "--source", "src", "--at", "2100-01-02")
    assert proc.returncode == 1
    # the watermark is the applied range's end (the range given to binlake tables)
    assert "past the watermark" in proc.stderr and "2100-01-01T00:00:00.000000Z" in proc.stderr


def test_before_its_create_in_the_changelog_a_table_did_not_exist(applied):
    # The workload created shop's tables after the first archive run: the planner recorded in
    # _binlake.json (read as written) that each became complete by its CREATE (acct's first one:
    # dropped and created again, it stays so), and asof before it finds no such table, not a partial one.
    state = json.loads((applied["warehouse"] / "tables" / "src" / "_binlake.json").read_text())
    assert {name: t["complete_from"]["by"] for name, t in state["tables"].items()} == \
        {"shop/acct": "create", "shop/bag": "create", "shop/part": "create"}
    before = "2000-01-02"  # in the applied range, before the workload ran
    proc = run_cli("asof", "--warehouse", str(applied["warehouse"]), "--source", "src", "--at", before)
    assert (proc.returncode, proc.stdout) == (0, ""), proc.stderr
    proc = run_cli("asof", "--warehouse", str(applied["warehouse"]), "--source", "src", "--at", before,
                   "--table", "shop.acct")
    assert (proc.returncode, proc.stdout) == (0, "") and "shop.acct did not exist at 2000-01-02" in proc.stderr, \
        proc.stderr


def test_csv_and_parquet_at_a_checkpoint(applied, tmp_path):
    import pyarrow.parquet as pq

    point = applied["points"][0]
    # csv: each value's row-values text quoted, NULL and unknown empty, then the unknown names
    proc = run_cli("asof", "--warehouse", str(applied["warehouse"]), "--source", "src", "--at", point["time"],
                   "--table", "shop.part", "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == '"id","a","b","big","c","_unknown"'
    expected = set()
    for text in point["tables"]["part"]:  # the server's SELECT then, less what MINIMAL never logged
        pairs = dict(json.loads(text))
        fields = []
        for name in ("id", "a", "b", "big", "c"):
            v = pairs.get(name)
            if v is not None and name == "big":
                v = "base64:" + base64.b64encode(v.encode()).decode()  # a BLOB's row-values text
            fields.append("" if v is None else '"' + v + '"')
        unknown = [n for n in ("id", "a", "b", "big", "c") if n not in pairs]
        expected.add(",".join(fields + ['"' + json.dumps(unknown).replace('"', '""') + '"']))
    assert set(lines[1:]) == expected and len(lines) - 1 == sum(point["tables"]["part"].values())
    # parquet: the typed columns, named as then; BIGINT UNSIGNED exact in DECIMAL(20,0), TIME as microseconds
    out = tmp_path / "acct.parquet"
    proc = run_cli("asof", "--warehouse", str(applied["warehouse"]), "--source", "src", "--at", point["gtid"],
                   "--table", "shop.acct", "--format", "parquet", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    table = pq.read_table(out)
    assert table.column_names == ["id", "bal", "amt", "tm", "doc", "note", "_unknown", "_raw"]
    got = {r["id"]: r for r in table.to_pylist()}
    server = {int(dict(json.loads(t))["id"]): dict(json.loads(t)) for t in point["tables"]["acct"]}
    assert set(got) == set(server)
    for key, row in server.items():
        assert str(got[key]["bal"]) == row["bal"] and got[key]["amt"] == row["amt"]  # the server's text
        sign, hms = (-1, row["tm"][1:]) if row["tm"].startswith("-") else (1, row["tm"])
        h, m, sec = hms.split(":")
        assert got[key]["tm"] == sign * ((int(h) * 3600 + int(m) * 60) * 1_000_000 + round(float(sec) * 1_000_000))


def _versions(warehouse: Path) -> dict[str, Counter]:
    """Every version of every table (every column), as delta-rs reads the newest Delta version; a
    retired column (`name~n`) left empty is not compared (a rebuild's ALTERs may leave one more)."""
    import pyarrow as pa
    from deltalake import QueryBuilder

    from tests.support.lake import table

    out = {}
    for path in sorted((warehouse / "tables" / "src" / "shop").iterdir()):
        rows = QueryBuilder().register("t", table(warehouse, f"tables/src/shop/{path.name}")) \
            .execute("SELECT * FROM t").read_all()
        out[path.name] = Counter(json.dumps({k: v for k, v in r.items() if "~" not in k or v is not None},
                                            sort_keys=True, default=str) for r in pa.table(rows).to_pylist())
    return out


def test_a_rerun_changes_nothing(applied, spark):
    from tests.support.lake import table

    warehouse = applied["warehouse"]
    before = {p.name: table(warehouse, f"tables/src/shop/{p.name}").version()
              for p in (warehouse / "tables" / "src" / "shop").iterdir()}
    versions = _versions(warehouse)
    again = _apply(spark, applied["store"], warehouse, *RANGE)
    assert again.status == "unchanged"
    # no commit to any table, the same versions
    assert {p: table(warehouse, f"tables/src/shop/{p}").version() for p in before} == before
    assert _versions(warehouse) == versions


def test_each_tables_commit_names_the_apply_that_made_it(applied):
    # docs/tables.md: a Delta commit per table the range changes (a MERGE, or an append where it
    # closes no version), each naming its run; the tables are written several at once, and each
    # commit still carries the note of the one apply of this lake (_build's, over RANGE)
    from tests.support.lake import table

    warehouse = applied["warehouse"]
    notes = {}
    for p in sorted((warehouse / "tables" / "src" / "shop").iterdir()):
        for c in table(warehouse, f"tables/src/shop/{p.name}").history():
            if c["operation"] in ("WRITE", "MERGE"):
                notes[(p.name, c["version"])] = json.loads(c["userMetadata"])["binlake"]
    assert notes and len({n["run"] for n in notes.values()}) == 1, notes
    assert {(n["source"], n["start"], n["end"]) for n in notes.values()} == {
        ("src", parse_time(RANGE[0]), parse_time(RANGE[1]))}


def test_the_command_without_a_source_applies_every_source_of_the_archive(applied, spark, tmp_path):
    # `binlake tables` with no --source: every source the archive holds (this module archived one,
    # src). The range is the last of three pieces, as an hourly run's: its apply reads and merges
    # into tables the pieces before left deletion vectors in. The watermark is the range's end; the
    # versions, the whole range's; the log, a user's: no error of Spark's or Delta's
    points = applied["points"]
    lake = tmp_path / "lake"
    cuts = [RANGE[0], points[1]["time"], points[3]["time"]]
    _pieces(applied, spark, lake, cuts)
    proc = run_cli("tables", "--store", applied["store"], "--warehouse", str(lake), "--start", cuts[-1],
                   "--end", RANGE[1], "--master", "local[2]")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [(r["source"], r["status"], r["watermark"]["time"]) for r in ndjson(proc.stdout)]
    assert lines == [("src", "applied", "2100-01-01T00:00:00.000000Z")], proc.stdout
    assert _versions(lake) == _versions(applied["warehouse"])
    assert [line for line in proc.stderr.splitlines() if " ERROR " in line] == []


def test_pieces_and_a_backfill_equal_the_whole_range(applied, spark, tmp_path):
    from binlake.spark.warehouse import warehouse_uri
    from binlake.tables import state as states

    points = applied["points"]
    # cut where x1 is prepared, not committed (its XA COMMIT in the next piece), and after the TRUNCATE
    cuts = [RANGE[0], points[1]["time"], points[3]["time"], RANGE[1]]
    whole = _versions(applied["warehouse"])
    # in order, in three pieces: the same versions as the range applied whole
    forward = tmp_path / "forward"
    shutil.copytree(applied["assembled"], forward)
    # and a microsecond with no transaction after checkpoint 1: its watermark is the one it continues
    after_1 = (dt.datetime.fromisoformat(parse_time(cuts[1])) + dt.timedelta(microseconds=1)).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ")
    pieces = [cuts[0], cuts[1], after_1, *cuts[2:]]
    for a, b in zip(pieces, pieces[1:], strict=False):
        assert _apply(spark, applied["store"], forward, a, b).status == "applied"
        # at a checkpoint, the watermark's last transaction is the server's last GTID there
        at = {cuts[1]: points[1], after_1: points[1], cuts[2]: points[3]}.get(b)
        if at is not None:
            assert states.load(warehouse_uri(str(forward)), "src").watermark["txn_id"] == at["gtid"], b
    assert _versions(forward) == whole
    # the last piece first, then the first: the backfill rebuilds from its start to the span's end
    back = tmp_path / "back"
    shutil.copytree(applied["assembled"], back)
    assert _apply(spark, applied["store"], back, cuts[2], cuts[3]).status == "applied"
    assert _apply(spark, applied["store"], back, cuts[0], cuts[1]).rebuilt_from == RANGE[0] + "T00:00:00.000000Z"
    assert _versions(back) == whole
    # the watermark's last transaction: a piece that continues the one before takes the later of
    # that one's and its own; the whole range's apply read it from every transaction before its end
    mark = states.load(warehouse_uri(str(applied["warehouse"])), "src").watermark
    assert mark["order"] is not None
    for lake in (forward, back):
        assert states.load(warehouse_uri(str(lake)), "src").watermark == mark, lake.name
    # the versions each table holds, as the state counts them through appends, merges and the
    # backfill's rollback (what an apply judges a small table by): the Delta table's rows
    for lake in (applied["warehouse"], forward, back):
        for ts in states.load(warehouse_uri(str(lake)), "src").tables.values():
            if ts.version is not None:
                held = spark.read.format("delta").option("versionAsOf", ts.version).load(f"{lake}/{ts.path}")
                assert ts.rows == held.count(), (lake.name, ts.name)


def test_upkeep_compacts_the_row_versions_and_asof_reads_them_after(applied, spark, tmp_path, capsys):
    # `binlake upkeep` compacts the row versions' small files as it does the changelog's, and with
    # no time travel kept (0 days) removes the files the compacted versions do not name. The
    # applies here are three ranges, as hourly runs, each leaving its files in the tables it
    # changes; one table then gets a commit its source's state does not name (an apply that did
    # not finish) and is kept out. `binlake asof` reads the versions the state names: at each
    # checkpoint, by GTID and by time, it still gives the server's SELECT then.
    from binlake.cli import build_parser
    from binlake.spark import run_upkeep
    from binlake.spark.warehouse import warehouse_uri
    from binlake.tables import state as states
    from tests.support.lake import table

    points = applied["points"]
    lake = tmp_path / "lake"
    _pieces(applied, spark, lake, [RANGE[0], points[1]["time"], points[3]["time"], RANGE[1]])
    assert _versions(lake) == _versions(applied["warehouse"])  # the pieces' versions are the whole range's (above)
    state = states.load(warehouse_uri(str(lake)), "src")
    tables = {ts.name: ts for ts in state.tables.values() if ts.version is not None}
    files = {name: len(table(lake, ts.path).file_uris()) for name, ts in tables.items()}
    out = sorted(name for name, n in files.items() if n > 1)
    assert len(out) >= 2, files  # tables the ranges left several files in: one kept out, one compacted
    kept_out = out[0]
    path = f"{lake}/{tables[kept_out].path}"
    spark.read.format("delta").load(path).limit(1).write.format("delta").mode("append").save(path)
    assert table(lake, tables[kept_out].path).history(1)[0]["operation"] == "WRITE"
    whole = _versions(lake)  # the newest versions, that commit's row too

    def data(ts) -> set[Path]:  # a table's data and deletion vector files (not its log, not Hadoop's .crc files)
        return {p for p in (lake / ts.path).rglob("*") if p.is_file() and "_delta_log" not in p.parts
                and not p.name.endswith(".crc")}

    disk = {name: data(ts) for name, ts in tables.items()}

    def versions_of(line: dict) -> dict[str, dict]:
        return {name.removeprefix("src/"): v for name, v in line["row_versions"].items()}

    def upkeep() -> dict[str, dict]:
        args = build_parser().parse_args(["upkeep", "--warehouse", str(lake), "--retain-days", "0"])
        assert run_upkeep(args, spark) == 0
        (line,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith('{"record":"upkeep"')]
        return versions_of(line)

    # the command as a user runs it: its output is its one JSON record (Delta's console lines go to stderr)
    proc = run_cli("upkeep", "--warehouse", str(lake), "--retain-days", "0", "--master", "local[2]")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (line,) = ndjson(proc.stdout)
    assert line["record"] == "upkeep" and "Deleted " in proc.stderr
    done = versions_of(line)
    assert set(done) == set(tables) and "kept_out" in done[kept_out], done
    after = states.load(warehouse_uri(str(lake)), "src").tables
    for name, ts in tables.items():
        now = table(lake, ts.path)
        if name == kept_out:  # its files and the state's version as they were
            assert len(now.file_uris()) == files[name] + 1 and after[name].version == ts.version, name
            continue
        # compacted into one file; the state names the compacted version, the table's newest but VACUUM's
        assert done[name]["compacted"] == files[name] or files[name] == 1, (name, done[name])
        assert len(now.file_uris()) == 1 and after[name].version == now.version() - 2, name
        # what left the disk: the files no version of the table names now (the file system's listing)
        assert done[name]["vacuumed"] == len(disk[name] - data(ts)), name
    assert sum(d.get("vacuumed", 0) for d in done.values()) > 0
    assert _versions(lake) == whole  # the same versions
    for i, point in enumerate(points):
        for at in (point["gtid"], point["time"]):
            # the server's SELECT at that checkpoint
            assert _asof_here(lake, at, "mysql") == {t: r for t, r in point["tables"].items() if r}, (i, at)
    # the next day's upkeep: the commits of today's (OPTIMIZE, VACUUM) keep no table out, and
    # there is nothing left to compact
    again = upkeep()
    assert {n for n, d in again.items() if "kept_out" in d} == {kept_out}, again
    assert all(d["compacted"] == 0 for n, d in again.items() if n != kept_out), again


def test_the_drivers_fold_and_sparks_give_the_same_versions(applied, spark, tmp_path, monkeypatch, caplog):
    # A range of at most DRIVER_ROWS transactions and row changes is read with delta-rs into the
    # driver (binlake.spark.short_range) and folded there, a bigger one read by Spark and folded in
    # its tasks (binlake.spark.range_fold): the same rules either way; and a short range the driver
    # may not fold (a big table's key updated) hands its rows to Spark's fold. The whole workload,
    # every rule of the apply in it, applied each way into a lake of its own, gives each the versions
    # of the module's lake (held to the server's SELECTs above).
    import logging

    from binlake.spark import range_fold, tables

    whole = _versions(applied["warehouse"])
    folded = {}
    for name, most, foldable in (("driver", tables.DRIVER_ROWS, True), ("spark", 0, True),
                                 ("driver's reads, Spark's fold", tables.DRIVER_ROWS, False)):  # the last
        lake = tmp_path / name
        shutil.copytree(applied["assembled"], lake)
        monkeypatch.setattr(tables, "DRIVER_ROWS", most)
        if not foldable:
            monkeypatch.setattr(range_fold.RangeFold, "foldable_here", lambda self: False)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="binlake"):  # range_fold logs the driver's fold
            assert _apply(spark, applied["store"], lake, *RANGE).status == "applied"
        folded[name] = any("folded in the driver" in r.getMessage() for r in caplog.records)
        assert _versions(lake) == whole, name
    assert folded == {"driver": True, "spark": False, "driver's reads, Spark's fold": False}


def test_a_range_after_a_gap_is_refused_naming_the_range_to_apply_first(applied, spark, tmp_path):
    gap = tmp_path / "gap"
    shutil.copytree(applied["assembled"], gap)
    middle = applied["points"][1]["time"]
    assert _apply(spark, applied["store"], gap, RANGE[0], applied["points"][0]["time"]).status == "applied"
    refused = _apply(spark, applied["store"], gap, middle, RANGE[1])
    # the applied span ends at checkpoint 0's time: the range from there is named
    assert refused.status == "refused" and f"--start {parse_time(applied['points'][0]['time'])}" in refused.reason


def test_spark_as_of_and_plain_sql_at_each_checkpoint_are_the_servers_select(applied, spark):
    from binlake.spark.tables import as_of

    bag = f"delta.`{applied['warehouse']}/tables/src/shop/bag`"
    for i, point in enumerate(applied["points"]):
        at = point["time"]
        views = as_of(spark, str(applied["warehouse"]), "src", at)
        # the multiset without a key, through the view as_of registers: the server's SELECT then
        got = Counter(json.dumps([["x", str(r["x"])], ["y", r["y"]]]) for r in spark.sql("SELECT x, y FROM shop__bag")
                      .collect())
        assert got == point["tables"]["bag"], i
        # acct: its columns as named then (ADD, RENAME, DROP, DROP and CREATE again), its keys
        server = [dict(json.loads(t)) for t in point["tables"]["acct"]]
        assert views["shop.acct"].columns == list(server[0]), i
        assert sorted(r["id"] for r in views["shop.acct"].collect()) == sorted(int(r["id"]) for r in server), i
        # the plain SQL of docs/tables.md on the Delta table, by time
        plain = spark.sql(f"SELECT x, y FROM {bag} WHERE _valid_from <= TIMESTAMP'{at}' "
                          f"AND (_valid_to IS NULL OR _valid_to > TIMESTAMP'{at}')").collect()
        assert Counter(json.dumps([["x", str(r["x"])], ["y", r["y"]]]) for r in plain) == got, i


def test_tables_from_a_baseline_taken_under_writes_then_the_changelog_are_the_servers_select(
        mysql_factory, spark, tmp_path):
    """Tables that existed before archiving began (their binary logs purged) reach the row versions
    through a baseline, taken while three threads write (tests.support.snapshots.Writers, seeded),
    then the changelog from the baseline's point on."""
    from tests.support import snapshots

    server = mysql_factory()
    snapshots.create_workload(server, "shop", rows=300, bag=40)
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("SHOW BINARY LOGS")
        cur.execute(f"PURGE BINARY LOGS TO '{cur.fetchall()[-1][0]}'")  # the history before it: gone
        cur.execute("SELECT DATE_FORMAT(UTC_TIMESTAMP(6), '%Y-%m-%dT%H:%i:%s.%fZ')")
        (before,) = cur.fetchone()
    store = f"file://{tmp_path}/store"

    _archive(server, store)
    with snapshots.Writers(server, "shop", 300) as writers:
        snapshots.take(server, store, "src")
        taken = writers.committed
        until(lambda: writers.committed >= taken + 60, "60 transactions after the snapshot", 60, every=0.05)
    columns = {t: [n for n in names] for t, (_, names) in snapshots.WORKLOAD_SELECT.items()}
    with server.connect() as conn, conn.cursor() as cur:
        point = {"tables": {}}
        for table in columns:  # the server's rows once the writers stopped, each value its text
            rows = Counter()
            for row in snapshots.rows_of(server, "shop", table):
                rows[json.dumps([[n, None if v is None else str(v)] for n, v in row.items()])] += 1
            point["tables"][table] = rows
        cur.execute("SELECT @@global.gtid_executed, DATE_FORMAT(UTC_TIMESTAMP(6), '%Y-%m-%dT%H:%i:%s.%fZ')")
        executed, point["time"] = cur.fetchone()
        uuid, ranges = executed.replace("\n", "").split(":", 1)
        point["gtid"] = f"{uuid}:{ranges.split('-')[-1]}"
        cur.execute("FLUSH BINARY LOGS")
    _archive(server, store)

    warehouse = tmp_path / "lake"
    _assemble_validate_apply(spark, store, warehouse)
    for at in (point["gtid"], point["time"]):
        for table, expected in point["tables"].items():
            got = _asof(warehouse, at, table)
            assert sum(got.values()) == sum(expected.values()) > 0, (at, table)
            assert got == expected, (at, table)  # the server's SELECT once the writes stopped
    # before the baseline's point the tables are partial: never presented as complete, and the
    # state says the baseline made them so (_binlake.json as written)
    state = json.loads((warehouse / "tables" / "src" / "_binlake.json").read_text())
    assert {t["complete_from"]["by"] for t in state["tables"].values()} == {"baseline"}
    proc = run_cli("asof", "--warehouse", str(warehouse), "--source", "src", "--at", before, "--table", "shop.acct")
    assert proc.returncode == 1 and "partial" in proc.stderr and "shop.acct" in proc.stderr, proc.stderr


def test_the_generations_after_a_reset_apply_in_commit_order(mysql_factory, spark, tmp_path):
    """A reset in the middle (RESET BINARY LOGS AND GTIDS: file names and GTIDs start again, the
    archive keeps the earlier files as a generation of their own): as of each checkpoint, before
    and after it, the server's SELECT; a GTID written in both generations is refused by GTID and
    answered by time."""
    server = mysql_factory()  # the test's own: its binary logs are reset
    store = f"file://{tmp_path}/store"
    cols = {"acct": ["id", "note"]}

    _archive(server, store)  # the schema history before the workload
    points = []
    with server.connect() as conn, conn.cursor() as cur, server.connect() as other, other.cursor() as look:
        cur.execute("CREATE DATABASE shop")
        cur.execute("CREATE TABLE shop.acct (id INT PRIMARY KEY, note VARCHAR(20))")
        for i in range(1, 5):
            cur.execute(f"INSERT INTO shop.acct VALUES ({i}, 'first {i}')")
        points.append(_checkpoint(look, cols, "mysql"))
        cur.execute("FLUSH BINARY LOGS")
    _archive(server, store)
    with server.connect() as conn, conn.cursor() as cur, server.connect() as other, other.cursor() as look:
        cur.execute("RESET BINARY LOGS AND GTIDS")
        cur.execute("UPDATE shop.acct SET note = 'second' WHERE id = 2")  # :1 again
        cur.execute("DELETE FROM shop.acct WHERE id = 3")
        cur.execute("INSERT INTO shop.acct VALUES (9, 'nine')")
        points.append(_checkpoint(look, cols, "mysql"))
        cur.execute("UPDATE shop.acct SET note = 'last' WHERE id = 9")
        cur.execute("INSERT INTO shop.acct VALUES (10, 'ten')")
        cur.execute("INSERT INTO shop.acct VALUES (11, 'eleven')")
        points.append(_checkpoint(look, cols, "mysql"))
        first = int(points[0]["gtid"].rsplit(":", 1)[1])  # the first generation's last GTID
        for i in range(12, 12 + first):  # on past it: the last checkpoint's GTID is this generation's only
            cur.execute(f"INSERT INTO shop.acct VALUES ({i}, 'more')")
        points.append(_checkpoint(look, cols, "mysql"))
        cur.execute("FLUSH BINARY LOGS")
    _archive(server, store)

    warehouse = tmp_path / "lake"
    _assemble_validate_apply(spark, store, warehouse)
    for i, point in enumerate(points):
        # the server's SELECT at the checkpoint, by time; by GTID where no other transaction has it
        assert _asof(warehouse, point["time"], "acct") == point["tables"]["acct"], (i, point["time"])
        if i == 3:  # past the first generation's numbers: the others' GTIDs were issued in both
            assert _asof(warehouse, point["gtid"], "acct") == point["tables"]["acct"], (i, point["gtid"])
        else:
            proc = run_cli("asof", "--warehouse", str(warehouse), "--source", "src", "--at", point["gtid"])
            assert proc.returncode == 1 and "2 times" in proc.stderr and "give a time" in proc.stderr, proc.stderr


def _logged_both_ways(cur, statement: str, table: str) -> None:
    """The server's own listing (SHOW BINLOG EVENTS of its last file): the transaction holding
    `statement` as a QUERY event has a rows event of `table` ("db.table") too, before its end (a
    Table_map naming it, then Write_rows)."""
    cur.execute("SHOW BINARY LOGS")
    last = cur.fetchall()[-1][0]
    cur.execute(f"SHOW BINLOG EVENTS IN '{last}'")
    events = [(row[2], row[5]) for row in cur.fetchall()]  # Event_type, Info
    at = next(i for i, (kind, info) in enumerate(events) if kind == "Query" and statement in info)
    rest = events[at + 1:]
    rest = rest[:next(i for i, (kind, _) in enumerate(rest) if kind == "Xid")]
    assert any(kind == "Table_map" and f"({table})" in info and nxt.startswith("Write_rows")
               for (kind, info), (nxt, _) in itertools.pairwise(rest)), events[at:]


def _partial(warehouse: Path, at: str, table: str) -> str:
    """`binlake asof` of a table it must refuse as partial at `at`: its stderr."""
    proc = cli_here("asof", "--warehouse", str(warehouse), "--source", "src", "--at", at, "--table", f"shop.{table}")
    assert proc.returncode == 1 and f"shop.{table} is partial" in proc.stderr, (at, table, proc.stdout, proc.stderr)
    return proc.stderr


@pytest.mark.parametrize("flavor", ["mysql", "mariadb"])
def test_a_table_written_by_statement_is_partial_from_there_on(request, spark, tmp_path, flavor):
    """A session logging `binlog_format=STATEMENT` writes `stmt` (INSERT, UPDATE, a multi-table
    UPDATE naming `joined` too, DELETE) while another logs rows into `kept`, and a `MIXED`
    transaction writes `mixed` by statement (a safe UPDATE) and by rows (an unsafe INSERT, UUID()),
    as the server's own SHOW BINLOG EVENTS shows: `stmt`, `joined` and `mixed` are
    partial from their first statement on, asof refuses them there and after (later, rows logged
    again: an UPDATE of a row a statement inserted, an INSERT of a key a statement deleted), `kept`
    equals the server's SELECT throughout, and the row versions' suites pass (_apply). Then a
    baseline of the two (`binlake snapshot`), more row-logged writes and a second apply: from the
    baseline's point on both are complete again and equal SELECT (by time at checkpoint 4 too: no
    transaction came between it and the point); before it they stay partial, the window before the
    first statement included (docs/tables.md, "Written by statement"). MySQL 9
    accepts the session's binlog_format (it warns that it is deprecated)."""
    from tests.support import snapshots

    server = request.getfixturevalue(f"{flavor}_factory")()  # the test's own: its binary log is read whole
    store = f"file://{tmp_path}/store"
    cols = {"kept": ["id", "v"], "stmt": ["id", "v"], "joined": ["id", "v"], "mixed": ["id", "v"]}
    _archive(server, store)  # the schema history before the workload
    with server.connect() as conn, conn.cursor() as cur, server.connect() as rows, rows.cursor() as rcur, \
            server.connect() as other, other.cursor() as look:
        cur.execute("CREATE DATABASE shop")
        for name in cols:
            cur.execute(f"CREATE TABLE shop.{name} (id INT PRIMARY KEY, v VARCHAR(20))")
            cur.execute(f"INSERT INTO shop.{name} VALUES (1, '{name} 1'), (2, '{name} 2')")
        points = [_checkpoint(look, cols, flavor)]  # 0: every table complete
        cur.execute("SET SESSION binlog_format = 'STATEMENT'")
        cur.execute("USE shop")
        cur.execute("INSERT INTO stmt VALUES (3, 'stmt 3')")  # unqualified: the session's database
        points.append(_checkpoint(look, cols, flavor))  # 1: stmt written by statement
        cur.execute("UPDATE /* a comment */ `stmt` SET v = 'updated' WHERE id = 1")
        rcur.execute("UPDATE shop.kept SET v = 'row logged' WHERE id = 1")
        points.append(_checkpoint(look, cols, flavor))  # 2: joined not written yet
        cur.execute("UPDATE stmt s JOIN shop.joined j ON s.id = j.id SET s.v = j.v")  # names joined too
        points.append(_checkpoint(look, cols, flavor))  # 3: joined partial
        cur.execute("DELETE FROM shop.stmt WHERE id = 2")
        cur.execute("SET SESSION binlog_format = 'MIXED'")
        cur.execute("BEGIN")
        cur.execute("UPDATE shop.mixed SET v = 'by statement' WHERE id = 1")  # safe: logged as its text
        cur.execute("INSERT INTO shop.mixed VALUES (3, LEFT(UUID(), 8))")  # unsafe: logged as rows
        cur.execute("COMMIT")
        _logged_both_ways(cur, "UPDATE shop.mixed", "shop.mixed")
        cur.execute("SET SESSION binlog_format = 'ROW'")
        cur.execute("UPDATE shop.stmt SET v = 'rows again' WHERE id = 3")  # a row no version holds
        cur.execute("INSERT INTO shop.stmt VALUES (2, 'back')")  # its version the statement's DELETE never closed
        rcur.execute("INSERT INTO shop.kept VALUES (3, 'kept 3')")
        rcur.execute("DELETE FROM shop.kept WHERE id = 2")
        points.append(_checkpoint(look, cols, flavor))  # 4
        cut = _checkpoint(look, cols, flavor)["time"]  # after checkpoint 4, before every write after it
        cur.execute("FLUSH BINARY LOGS")
    _archive(server, store)
    warehouse = tmp_path / "lake"
    first = (RANGE[0], cut)
    _assemble_validate_apply(spark, store, warehouse, first)  # the row versions' suites pass (_apply)

    # partial from the workload's first statement-logged write of each: stmt at 1, joined at 3
    partial_at = {"kept": None, "stmt": 1, "joined": 3, "mixed": 4}
    for i, point in enumerate(points):
        for at in (point["gtid"], point["time"]):
            for table, since in partial_at.items():
                if since is not None and i >= since:
                    assert "a DML logged as a statement wrote it" in _partial(warehouse, at, table)
                else:  # the server's SELECT at that checkpoint
                    assert _asof(warehouse, at, table, flavor) == point["tables"][table], (i, at, table)
    state = json.loads((warehouse / "tables" / "src" / "_binlake.json").read_text())["tables"]
    assert {k: (t.get("partial_from") or {}).get("by") for k, t in state.items()} == \
        {"shop/kept": None, "shop/stmt": "statement", "shop/joined": "statement", "shop/mixed": "statement"}

    # a baseline of the two makes them complete again from its point on
    snapshots.take(server, store, "src", ["shop.stmt", "shop.joined"])
    with server.connect() as conn, conn.cursor() as cur, server.connect() as other, other.cursor() as look:
        cur.execute("UPDATE shop.stmt SET v = 'after the baseline' WHERE id = 1")
        cur.execute("INSERT INTO shop.stmt VALUES (4, 'stmt 4')")
        cur.execute("DELETE FROM shop.joined WHERE id = 1")
        cur.execute("UPDATE shop.kept SET v = 'kept again' WHERE id = 3")
        points.append(_checkpoint(look, cols, flavor))  # 5
        cur.execute("FLUSH BINARY LOGS")
    _archive(server, store)
    _assemble_validate_apply(spark, store, warehouse, (first[1], RANGE[1]))
    for at in (points[5]["gtid"], points[5]["time"]):
        _partial(warehouse, at, "mixed")  # no baseline of it
        for table in ("kept", "stmt", "joined"):  # the server's SELECT at checkpoint 5
            assert _asof(warehouse, at, table, flavor) == points[5]["tables"][table], (at, table)
    for i, point in enumerate(points[:5]):
        for at in (point["gtid"], point["time"]):
            assert _asof(warehouse, at, "kept", flavor) == point["tables"]["kept"], (i, at)
            if i < 4:
                assert _asof(warehouse, at, "mixed", flavor) == point["tables"]["mixed"], (i, at)
            else:
                _partial(warehouse, at, "mixed")
            for table in ("stmt", "joined"):
                if i == 4 and at == point["time"]:  # by time, complete from the commit of the
                    # transaction at the baseline's point (none came between): the baseline's rows
                    assert _asof(warehouse, at, table, flavor) == point["tables"][table], (i, at, table)
                else:  # before the point in commit order: partial, the window before the first statement too
                    _partial(warehouse, at, table)
    state = json.loads((warehouse / "tables" / "src" / "_binlake.json").read_text())["tables"]
    assert {k: ((t.get("partial_from") or {}).get("by"), (t.get("complete_from") or {}).get("by"))
            for k, t in state.items()} == {"shop/kept": (None, "create"), "shop/stmt": (None, "baseline"),
                                           "shop/joined": (None, "baseline"), "shop/mixed": ("statement", "create")}
