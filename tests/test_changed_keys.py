"""The apply's first cut of a table's current versions (binlake.spark.tables._changed_integer_keys):
in the JVM, the versions whose integer key one of the range's changes holds, and those only Python
can key (a value in `_raw`, one unknown), before the exact match on the key's text
(tests/test_held_keys.py). It may keep more than that match, never less. A change's key is the
JSON of its values (key_text); the expectations are read by hand from the rows below."""

from __future__ import annotations

from decimal import Decimal

from binlake.spark.tables import _changed_integer_keys

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

    kept = _changed_integer_keys(current, changes, ["c.id", "c_k"])

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
