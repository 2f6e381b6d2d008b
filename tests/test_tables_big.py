"""A big transaction in the row versions (issue 39): one transaction longer than a split, cut
into pieces by the job and into segments of row changes, applied whole at its commit.

A MySQL server of this module's own writes, in one transaction, over a megabyte of row changes
to tables that hold rows already: inserts, updates of rows it inserted and of older ones, key
updates, deletes, and equal rows in a table without a key. The job runs with small splits and
segments so that this transaction spans both; the row versions are applied in three ranges, as
hourly runs do: the tables' first rows, the big transaction, the one after it. `binlake asof`
just before the big transaction, at it and after the next one, by GTID and by time, is the
server's SELECT then.
"""

from __future__ import annotations

from tests.test_tables_servers import RANGE, _apply, _archive, _asof, _checkpoint

BIG = ["id", "v", "n"]
BAG = ["x", "y"]


def test_a_big_transactions_segments_apply_as_one_commit(mysql_factory, spark, tmp_path):
    from binlake.assemble.walk import Options
    from binlake.spark.job import assemble
    from binlake.spark.validate import validate

    server = mysql_factory()
    store = f"file://{tmp_path}/store"
    _archive(server, store)  # the schema history before the workload
    points = []
    with server.connect() as conn, conn.cursor() as cur, server.connect() as other, other.cursor() as look:
        cur.execute("CREATE DATABASE shop")
        cur.execute("CREATE TABLE shop.big (id INT PRIMARY KEY, v VARCHAR(400), n INT)")
        cur.execute("CREATE TABLE shop.bag (x INT, y VARCHAR(10))")  # no key: a multiset
        cur.execute("INSERT INTO shop.big VALUES " + ", ".join(f"({i}, 'old{i}', 0)" for i in range(1, 201)))
        cur.execute("INSERT INTO shop.bag VALUES (1, 'a'), (1, 'a'), (2, 'b')")
        points.append(_checkpoint(look, {"big": BIG, "bag": BAG}, "mysql"))
        cur.execute("BEGIN")
        for start in range(201, 2201, 100):  # 2000 new rows of ~300 bytes each
            cur.execute("INSERT INTO shop.big VALUES " +
                        ", ".join(f"({i}, REPEAT('{i % 10}', 300), {i})" for i in range(start, start + 100)))
        cur.execute("UPDATE shop.big SET n = n + 1, v = CONCAT('u', v) WHERE id % 3 = 0")  # old rows and new
        cur.execute("UPDATE shop.big SET id = id + 10000 WHERE id % 7 = 0")  # the key changes: rows move
        cur.execute("DELETE FROM shop.big WHERE id % 5 = 0")
        cur.execute("INSERT INTO shop.bag VALUES (1, 'a'), (3, 'c')")
        cur.execute("DELETE FROM shop.bag WHERE x = 1 LIMIT 2")  # two of three equal rows
        cur.execute("COMMIT")
        points.append(_checkpoint(look, {"big": BIG, "bag": BAG}, "mysql"))
        cur.execute("UPDATE shop.big SET n = -1 WHERE id IN (1, 10003, 2200)")
        points.append(_checkpoint(look, {"big": BIG, "bag": BAG}, "mysql"))
        cur.execute("FLUSH BINARY LOGS")
    _archive(server, store)
    warehouse = tmp_path / "lake"
    # splits of 256 KiB, segments of 500 row changes: the big transaction (about 1.5 MB) spans both
    summary = assemble(spark, store, str(warehouse), *RANGE, split_bytes=256 << 10, opts=Options(segment_rows=500))
    assert summary.status == "ok"
    report = validate(spark, str(warehouse), *RANGE, store=store)
    assert report.success, report.text()
    # what this test means to exercise (the job's record, a precondition, not the oracle)
    segments, length = spark.read.format("delta").load(str(warehouse / "transactions")) \
        .where(f"gtid = '{points[1]['gtid']}'").select("segment_count", "transaction_length").first()
    assert segments > 1 and length > 256 << 10  # the server's transaction_length: longer than a split
    # applied in three ranges, as hourly runs do, each changing rows the ones before made. The
    # last changes no key: only the versions of the keys it changes go on to the fold
    cuts = [RANGE[0], points[0]["time"], points[1]["time"], RANGE[1]]
    for start, end in zip(cuts, cuts[1:], strict=False):
        out = _apply(spark, store, warehouse, start, end)
        assert out.status == "applied", out.reason
    for i, point in enumerate(points):
        for at in (point["gtid"], point["time"]):
            for table, expected in point["tables"].items():
                assert _asof(warehouse, at, table) == expected, (i, at, table)  # the server's SELECT then
