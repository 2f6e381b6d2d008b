"""What a range's row images say of each table (binlake/tables/images.py), on hand-made images.

The images are those a server logs for the statements in the comments: a FULL image names every
column, a MINIMAL before image only the key's (MySQL's binlog_row_image=MINIMAL with a primary
key), a MINIMAL after image only the columns the statement set.
"""

from __future__ import annotations

import json

import pyarrow as pa

from binlake.tables import images

NAMES = ["schema", "table", "op", "before", "after"]


def _batch(rows: list[tuple]) -> pa.RecordBatch:
    cols = list(zip(*rows, strict=True))
    return pa.RecordBatch.from_arrays([pa.array(c, pa.string()) for c in cols], names=NAMES)


def _j(**values) -> str:
    return json.dumps(values)


ROWS = [
    # db.full, FULL images: INSERT (id 1, a 'x', b 2), UPDATE SET a = 'y', DELETE
    ("db", "full", "insert", None, _j(id=1, a="x", b=2)),
    ("db", "full", "update", _j(id=1, a="x", b=2), _j(id=1, a="y", b=2)),
    ("db", "full", "delete", _j(id=1, a="y", b=2), None),
    # db.min, MINIMAL: INSERT logs every column; UPDATE SET a = 'y' WHERE id = 1 logs the key
    # before and the set column after; DELETE the key
    ("db", "min", "insert", None, _j(id=1, a="x", b=2)),
    ("db", "min", "update", _j(id=1), _j(a="y")),
    ("db", "min", "delete", _j(id=1), None),
]


def _of(partials) -> tuple:
    return images.merged(p for b in partials for p in b.to_pylist())


def test_columns_key_and_count_per_table():
    touched, keys, n = _of(images.partial([_batch(ROWS)]))
    assert touched == {("db", "full"): ["id", "a", "b"], ("db", "min"): ["id", "a", "b"]}
    # every before image of db.min holds `id` alone, fewer columns than its images name: its key;
    # db.full's before images hold every column, which says nothing of a key
    assert keys == {("db", "min"): ["id"]}
    assert n == 6


def test_partials_of_any_split_merge_to_the_whole():
    # Spark's tasks each make a partial of their rows; merged, they say what one partial of all says
    whole = _of(images.partial([_batch(ROWS)]))
    for cut in range(1, len(ROWS)):
        parts = [*images.partial([_batch(ROWS[:cut])]), *images.partial([_batch(ROWS[cut:])])]
        assert _of(parts) == whole, cut


def test_a_table_whose_before_images_differ_shows_no_key():
    # a session logs FULL, another MINIMAL: DELETE WHERE id = 1 under each, then an INSERT
    rows = [("db", "t", "delete", _j(id=1, a="x"), None), ("db", "t", "delete", _j(id=2), None),
            ("db", "t", "insert", None, _j(id=3, a="z"))]
    touched, keys, n = _of(images.partial([_batch(rows)]))
    assert (touched, keys, n) == ({("db", "t"): ["id", "a"]}, {}, 3)
