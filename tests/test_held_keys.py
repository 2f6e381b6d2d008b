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
