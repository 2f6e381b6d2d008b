"""The apply's first cut of a table's current versions (binlake.spark.range_fold.changed_integer_keys):
in the JVM, the versions whose integer key one of the range's changes holds, and those only Python
can key (a value in `_raw`, one unknown), before the exact match on the key's text
(tests/test_held_keys.py). It may keep more than that match, never less. A change's key is the
JSON of its values (key_text); the expectations are read by hand from the rows below."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
from pyspark.sql import DataFrame

from binlake.spark import versions
from binlake.spark.range_fold import changed_integer_keys
from binlake.spark.versions import Versions
from binlake.tables.key_ranges import INTERVALS, changed_ranges, intervals
from binlake.tables.shapes import Col, Shape
from binlake.tables.state import TableState

SCHEMA = "`c.id` DECIMAL(20,0), c_k INT, _raw MAP<STRING, STRING>, _unknown ARRAY<STRING>, name STRING"


def test_the_versions_of_changed_keys_and_those_python_must_key(spark):
    current = spark.createDataFrame([
        (Decimal(18446744073709551615), 1, None, None, "unsigned max, changed"),
        (Decimal(0), -5, None, None, "negative, changed"),
        (Decimal(0), 5, None, None, "one column of a changed key"),
        (Decimal(2), 2, None, None, "unchanged"),
        (Decimal(3), 3, {"c_v": "x"}, None, "a value in _raw"),
        (Decimal(4), 4, None, ["c_k"], "an unknown column"),
        (Decimal(6), 6, {}, [], "_raw and _unknown empty, unchanged"),
        (Decimal(7), 7, {}, [], "_raw and _unknown empty, changed"),
    ], SCHEMA)
    changes = spark.createDataFrame(
        [(b"[18446744073709551615,1]",), (b"[0,-5]",), (b"[0,-5]",), (b"[7,7]",), (b"[9,9]",), (b"",)], "grp BINARY")

    kept = changed_integer_keys(current, changes, ["c.id", "c_k"])

    assert kept.columns == current.columns
    assert sorted(r["name"] for r in kept.collect()) == sorted([
        "unsigned max, changed", "negative, changed", "a value in _raw", "an unknown column",
        "_raw and _unknown empty, changed"])


def test_the_key_predicate_stays_small_and_holds_every_changed_key():
    # 30,000 keys over ten million, as bench/tables.py's hour changes them: the predicate Spark also
    # evaluates per row must stay within INTERVALS (binlake.tables.key_ranges says why), and no key may
    # fall outside it (its versions would be missed).
    import random

    keys = random.Random(7).sample(range(10_000_000), 30_000)
    got = intervals(keys)
    assert len(got) == INTERVALS
    assert all(a <= b < c for (a, b), (c, _) in zip(got, got[1:], strict=False))
    assert all(any(a <= k <= b for a, b in got) for k in keys)
    assert got[0][0] == min(keys) and got[-1][1] == max(keys)
    assert intervals([5, 1, 5]) == [(1, 1), (5, 5)]  # few keys: each its own



def _ranges(type_: str, grps: list[bytes]) -> str | None:
    shape = Shape("", "2026-01-01 00:00:00", [Col("id", "c.id", type_)])
    found = changed_ranges(shape, ["id"], grps)
    return found.sql(lambda c: f"<{c}>", repr) if found else None


def test_the_key_predicate_is_said_where_the_keys_sort_as_the_column():
    assert _ranges("int", [b"[3]", b"[1]", b""]) == "(<c.id> = 1) OR (<c.id> = 3) OR (<c.id> IS NULL)"
    # DECIMAL's row values are texts, sorted as numbers (as text "10.00" < "9.50")
    assert _ranges("decimal(6,2)", [b'["9.50"]', b'["10.00"]', b'["-1.25"]']) == \
        "(<c.id> = Decimal('-1.25')) OR (<c.id> = Decimal('9.50')) OR (<c.id> = Decimal('10.00')) OR (<c.id> IS NULL)"
    assert _ranges("varchar(8)", [b'["b"]', b'["a"]']) == "(<c.id> = 'a') OR (<c.id> = 'b') OR (<c.id> IS NULL)"
    # a NULL key is the IS NULL term's alone
    assert _ranges("int", [b"[null]"]) == "(<c.id> IS NULL)"
    # an integer column's changed keys mixing numbers and a text (a value in _raw) do not sort
    assert _ranges("int", [b"[1]", b'["zero"]']) is None
    # TIME's row values are texts, its Delta column microseconds; a DECIMAL beyond Spark's, text
    assert _ranges("time(6)", [b'["12:00:00.000000"]']) is None
    assert _ranges("decimal(65,30)", [b'["1.5"]']) is None
    # changes whose images lack the key match the versions whose key is unknown (null in its column)
    assert _ranges("int", [b""]) == "(<c.id> IS NULL)"


def test_delta_rs_reads_the_changed_keys_versions_and_those_of_a_null_key(spark, tmp_path):
    # A row versions' table as binlake writes it (column mapping, deletion vectors: a version closed),
    # its versions read back by delta-rs through the key predicate and the cut. The versions whose
    # key column is null (a value in _raw, one unknown, a NULL) pass the predicate's IS NULL term and
    # are kept or not by their key's text; the expectations are read by hand from the rows.
    from binlake.tables.delta_reads import changed_current
    from binlake.tables.stream import Lineage, Routes

    shape = Shape("", "2026-01-01 00:00:00", [Col("id", "id", "int"), Col("n", "n", "varchar(10)")])
    ts = TableState("db", "t", "tables/src/db/t", key=["id"], shapes=[shape])
    v = Versions(spark, str(tmp_path))
    v.create(ts, [("add", "id", "INT", "int"), ("add", "n", "STRING", "varchar(10)")])
    schema = spark.read.format("delta").load(v.path(ts)).schema.add("_existing", "boolean")

    def rows(*values: tuple, first: int = 0) -> DataFrame:
        full = [(*r, *(None,) * (6 - len(r))) for r in values]  # (key, n, to, unknown, raw, existing)
        return spark.createDataFrame([(k, n, at("o1"), at(to), "x", to, "o1", to, "insert", seq, unknown, raw,
                                       bool(existing)) for seq, (k, n, to, unknown, raw, existing)
                                      in enumerate(full, first)], schema)

    v.merge(ts, rows((1, "one"), (2, "two"), (50, "fifty"), (None, "zero in _raw", None, None, {"id": '"zero"'}),
                     (None, "unknown key", None, ["id"]), (None, "NULL key"), (51, "closed")), closes=0)
    v.merge(ts, rows((51, "closed", "o2", None, None, True), first=6), closes=1)  # its row deleted (a vector)
    routes = Routes({0: Lineage(0, ["id"])}, {}, {ts.name: [shape]})

    def kept(grps: list[bytes]) -> list[str]:
        found = changed_current(v.warehouse, ts, routes=routes, lineage=0, grps=pa.array(grps, pa.binary()))
        return sorted(n for b in found for n in b.column("n").to_pylist())

    assert kept([b"[1]", b"[50]", b"[51]", b"", b"[null]"]) == ["NULL key", "fifty", "one", "unknown key"]
    assert kept([b"[2]", b'["zero"]']) == ["two", "zero in _raw"]  # no predicate: the keys mix types


def test_the_merge_closes_the_versions_of_the_listed_keys(spark, tmp_path, monkeypatch):
    # The MERGE's condition lists the closed versions' keys (binlake.spark.versions.closed_keys): a
    # text key with a quote and a backslash must be listed as itself, an unsigned BIGINT's (DECIMAL
    # (20,0)) up to its greatest value, and the outcome must be the condition's without the list
    # (not listed: LISTED_BYTES_PER_KEY). Expected rows: written out below.
    real = versions.closed_keys
    big = Decimal(18446744073709551615)
    cases = [("STRING", ["a'b", "c\\d", "e"], ["(t.`k` IN ('a\\'b'))"]),
             ("DECIMAL(20,0)", [big, Decimal(0), Decimal(7)], ["(t.`k` IN (18446744073709551615))"])]
    for spark_type, (k1, k2, k3), listed_as in cases:
        expected = sorted([(k1, 1, "o1", "o2"), (k1, 10, "o2", None), (k2, 2, "o1", "o2"), (k3, 3, "o1", None)])
        for listed in (True, False):
            # a table of a few KiB: listed where any size is enough, not where none is
            monkeypatch.setattr(versions, "LISTED_BYTES_PER_KEY", 0 if listed else 1 << 40)
            monkeypatch.setattr(versions, "SMALL_ROWS", -1)  # its size read, not taken small by its count
            calls = []
            monkeypatch.setattr(versions, "closed_keys", lambda *a, calls=calls: calls.append(a) or real(*a))
            where = f"{spark_type[:3]}{listed}"
            assert _merged(spark, str(tmp_path), where, spark_type, (k1, k2, k3), listed_as) == expected, \
                (spark_type, listed)
            assert len(calls) == (2 if listed else 1)  # _merged's own call, and the MERGE's where it lists


def _merged(spark, warehouse: str, where: str, spark_type: str, keys: tuple, listed_as: list[str]) -> list[tuple]:
    """Three current versions of keys `keys`; a MERGE closing the first two, opening the first again."""
    ts = TableState("db", "t", f"tables/src/db/{where}", key=["k"])
    v = Versions(spark, warehouse)
    v.create(ts, [("add", "k", spark_type, "key"), ("add", "n", "INT", "int")])
    schema = spark.read.format("delta").load(v.path(ts)).schema.add("_existing", "boolean")

    def rows(*values: tuple) -> DataFrame:
        return spark.createDataFrame([(k, n, at(f), at(t), "x" + f, "x" + t if t else None, f, t, "insert",
                                       seq, None, None, existing) for k, n, f, t, seq, existing in values], schema)

    k1, k2, k3 = keys
    v.merge(ts, rows((k1, 1, "o1", None, 1, False), (k2, 2, "o1", None, 2, False), (k3, 3, "o1", None, 3, False)),
            closes=0)
    assert versions.closed_keys(rows((k1, 1, "o1", "o2", 1, True)), schema["k"]) == listed_as
    v.merge(ts, rows((k1, 1, "o1", "o2", 1, True), (k1, 10, "o2", None, 1, False), (k2, 2, "o1", "o2", 2, True)),
            closes=2)
    got = spark.read.format("delta").load(v.path(ts)).select("k", "n", "_from_order", "_to_order").collect()
    return sorted(tuple(r) for r in got)


def at(order: str | None):
    from datetime import datetime

    return datetime(2026, 1, 1, int(order[1:])) if order else None
