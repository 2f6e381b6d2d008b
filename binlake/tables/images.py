"""What a range's row images say of each table it changes, before the range is planned
(binlake.tables.plan): the columns its images name, a key its before images show, its row changes.

One home for the rule, whoever holds the rows: `partial` over some of them (a Spark task's, or all
of a short range in the driver), `merged` over the partials.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import orjson
import pyarrow as pa

from binlake.tables.stream import rows_batch

# A partial: per table, its widest image's columns, every column any image names (first seen
# first), each distinct set of columns an update's or delete's before image holds, its row changes.
PARTIAL = pa.schema([
    ("schema", pa.string()), ("table", pa.string()), ("widest", pa.list_(pa.string())),
    ("all", pa.list_(pa.string())), ("befores", pa.list_(pa.list_(pa.string()))), ("n", pa.int64()),
])


@dataclass
class _Table:
    widest: list[str] = field(default_factory=list)
    all: dict[str, None] = field(default_factory=dict)  # ordered, distinct
    befores: dict[tuple[str, ...], None] = field(default_factory=dict)
    n: int = 0

    def add(self, widest: list[str], names: Iterable[str], befores: Iterable[tuple[str, ...]], n: int) -> None:
        if len(widest) > len(self.widest):
            self.widest = widest
        self.all.update(dict.fromkeys(names))
        self.befores.update(dict.fromkeys(befores))
        self.n += n


def partial(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Row changes (schema, table, op, before, after) as one PARTIAL row per table."""
    tables: dict[tuple[str, str], _Table] = {}
    for b in batches:
        cols = {n: b.column(n).to_pylist() for n in ("schema", "table", "op", "before", "after")}
        for i in range(b.num_rows):
            t = tables.setdefault((cols["schema"][i], cols["table"][i]), _Table())
            before, after = cols["before"][i], cols["after"][i]
            image = after if after is not None else before
            names = list(orjson.loads(image)) if image is not None else []
            befores = [tuple(orjson.loads(before))] if before is not None and cols["op"][i] != "insert" else []
            t.add(names, names, befores, 1)
    if tables:
        rows = [(s, n, t.widest, list(t.all), [list(b) for b in t.befores], t.n) for (s, n), t in tables.items()]
        yield rows_batch(rows, PARTIAL)


def merged(partials: Iterable[dict]) -> tuple[dict[tuple[str, str], list[str]], dict[tuple[str, str], list[str]], int]:
    """Per table with row changes: its images' columns (the widest image's, then any other), and a
    key its before images show (every update and delete image holding the same columns, fewer than
    the table has: MINIMAL's key); and how many row changes there are."""
    tables: dict[tuple[str, str], _Table] = {}
    for p in partials:
        tables.setdefault((p["schema"], p["table"]), _Table()).add(
            list(p["widest"] or []), p["all"] or [], [tuple(b) for b in p["befores"] or []], p["n"])
    touched, keys = {}, {}
    for name, t in tables.items():
        touched[name] = t.widest + [k for k in t.all if k not in t.widest]
        if len(t.befores) == 1 and len(next(iter(t.befores))) < len(touched[name]):
            keys[name] = list(next(iter(t.befores)))
    return touched, keys, sum(t.n for t in tables.values())
