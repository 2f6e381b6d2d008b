"""`held_keys`: the key text of a Delta table's current versions, which the apply matches with the
range's changed keys (binlake.spark.tables). The text must be the one the fold gives a row image's
key (key_text: the key's values as a JSON list), so each expectation below is the JSON of the
values as the server's row images give them, written out by hand."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa

from binlake.tables.shapes import Col, Shape
from binlake.tables.stream import Lineage, Routes, held_keys

RAW = pa.map_(pa.string(), pa.string())


def _keys(columns: list[Col], key: list[str], data: dict[str, pa.Array]) -> list[bytes]:
    routes = Routes({0: Lineage(0, key)}, {}, {"t": [Shape("", "2026-01-01 00:00:00", columns)]})
    batch = pa.RecordBatch.from_pydict(data)
    (out,) = list(held_keys(routes, 0, "t", [batch]))
    assert out.num_columns == batch.num_columns + 1  # the versions as they are, and _grp
    return out.column("_grp").to_pylist()


def test_an_integer_key_is_its_numbers_whatever_their_type():
    columns = [Col("id", "c_id", "bigint unsigned"), Col("k", "c_k", "int"), Col("v", "c_v", "varchar(10)")]
    got = _keys(columns, ["id", "k"], {
        "c_id": pa.array([Decimal(18446744073709551615), Decimal(0), Decimal(1), None], pa.decimal128(20, 0)),
        "c_k": pa.array([-5, 7, 2, 3], pa.int32()),
        "c_v": pa.array(["a", "b", "c", "d"]),
        "_from_order": pa.array(["o1"] * 4),
        # a non-key value the typed column could not hold; a key value unknown (partial image); a key
        # value that is no number (a value in _raw: the typed column is null)
        "_raw": pa.array([None, [("v", '"x"')], [], [("id", '"zero"')]], RAW),
        "_unknown": pa.array([None, [], ["k"], None], pa.list_(pa.string())),
    })
    assert got == [b"[18446744073709551615,-5]", b"[0,7]", b"", b'["zero",3]']


def test_a_text_key_goes_through_its_values():
    columns = [Col("name", "c_name", "varchar(10)"), Col("n", "c_n", "tinyint")]
    got = _keys(columns, ["name", "n"], {
        "c_name": pa.array(["é", "a\"b"]), "c_n": pa.array([1, -128], pa.int8()),
        "_from_order": pa.array(["o1"] * 2), "_raw": pa.array([None, None], RAW),
        "_unknown": pa.array([None, None], pa.list_(pa.string())),
    })
    assert got == ['["é",1]'.encode(), b'["a\\"b",-128]']


def test_an_empty_batch_gives_an_empty_batch():
    columns = [Col("id", "c_id", "int")]
    got = _keys(columns, ["id"], {"c_id": pa.array([], pa.int32()), "_from_order": pa.array([], pa.string()),
                                  "_raw": pa.array([], RAW), "_unknown": pa.array([], pa.list_(pa.string()))})
    assert got == []


def _cut(columns: list[Col], key: list[str], rows: list[dict], grps: list[bytes]) -> list[str]:
    """The names of the versions `rows` (two batches) that delta_reads.changed keeps for the changed
    keys `grps`, each batch cut as it comes."""
    from binlake.tables.delta_reads import changed

    routes = Routes({0: Lineage(0, key)}, {}, {"t": [Shape("", "2026-01-01 00:00:00", columns)]})
    types = {"c.id": pa.decimal128(20, 0), "c_k": pa.int32(), "c_name": pa.string()}
    schema = pa.schema([*((c.column, types[c.column]) for c in columns), ("name", pa.string()),
                        ("_from_order", pa.string()), ("_raw", RAW), ("_unknown", pa.list_(pa.string()))])
    full = [{"_from_order": "o1", "_raw": None, "_unknown": None, **r} for r in rows]
    half = len(full) // 2
    batches = [pa.RecordBatch.from_pylist(part, schema) for part in (full[:half], full[half:])]
    out = list(changed(routes, 0, "t", batches, grps=pa.array(grps, pa.binary())))
    assert all(b.schema == schema for b in out)  # the versions as they are
    return sorted(n for b in out for n in b.column("name").to_pylist())


def test_the_cut_keeps_the_versions_of_the_changed_integer_keys():
    columns = [Col("id", "c.id", "bigint unsigned"), Col("k", "c_k", "int")]
    rows = [
        {"c.id": Decimal(18446744073709551615), "c_k": 1, "name": "unsigned max, changed"},
        {"c.id": Decimal(0), "c_k": -5, "name": "negative, changed"},
        {"c.id": Decimal(0), "c_k": 5, "name": "its first column changed, not its key"},
        {"c.id": Decimal(2), "c_k": 2, "name": "unchanged"},
        {"c.id": None, "c_k": 3, "_raw": [("id", '"zero"')], "name": "a key value in _raw, changed"},
        {"c.id": None, "c_k": 3, "_raw": [("id", '"one"')], "name": "a key value in _raw, unchanged"},
        {"c.id": Decimal(4), "c_k": None, "_unknown": ["k"], "name": "a key value unknown, a change's too"},
        {"c.id": Decimal(7), "c_k": 7, "_raw": [("v", '"x"')], "name": "another value in _raw, changed"},
        {"c.id": None, "c_k": 9, "name": "a NULL key value, changed"},
        {"c.id": Decimal(6), "c_k": 6, "_raw": [], "_unknown": [], "name": "_raw and _unknown empty, unchanged"},
    ]
    # the changed keys as the range's row images give them (key_text); b"": an image without its key
    grps = [b"[18446744073709551615,1]", b"[0,-5]", b'["zero",3]', b"", b"[7,7]", b"[null,9]", b"[9,9]"]
    assert _cut(columns, ["id", "k"], rows, grps) == sorted([
        "unsigned max, changed", "negative, changed", "a key value in _raw, changed",
        "a key value unknown, a change's too", "another value in _raw, changed", "a NULL key value, changed"])


def test_the_cut_matches_a_text_key_by_its_text():
    columns = [Col("name", "c_name", "varchar(10)")]
    rows = [{"c_name": "é", "name": "é"}, {"c_name": "a'b", "name": "a'b"}, {"c_name": "E", "name": "E"},
            {"c_name": "x", "name": "x"}]
    assert _cut(columns, ["name"], rows, ['["é"]'.encode(), b'["a\'b"]', b'["e"]']) == sorted(["é", "a'b"])
