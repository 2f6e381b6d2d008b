"""The apply's first cut of a table's current versions (binlake.spark.range_fold.changed_integer_keys):
in the JVM, the versions whose integer key one of the range's changes holds, and those only Python
can key (a value in `_raw`, one unknown), before the exact match on the key's text
(tests/test_held_keys.py). It may keep more than that match, never less. A change's key is the
JSON of its values (key_text); the expectations are read by hand from the rows below."""

from __future__ import annotations

from decimal import Decimal

from pyspark.sql import DataFrame

from binlake.spark import versions
from binlake.spark.range_fold import changed_integer_keys
from binlake.spark.versions import Versions
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
    # evaluates per row must stay within INTERVALS (binlake.tables.stream says why), and no key may
    # fall outside it (its versions would be missed).
    import random

    from binlake.tables.stream import INTERVALS, interval_predicate

    keys = random.Random(7).sample(range(10_000_000), 30_000)
    got = interval_predicate("id", keys)
    assert len(got) == INTERVALS
    assert all(a <= b < c for (a, b), (c, _) in zip(got, got[1:], strict=False))
    assert all(any(a <= k <= b for a, b in got) for k in keys)
    assert got[0][0] == min(keys) and got[-1][1] == max(keys)
    assert interval_predicate("id", [5, 1, 5]) == [(1, 1), (5, 5)]  # few keys: each its own


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
