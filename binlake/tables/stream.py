"""What the tasks of `binlake tables` run, over Arrow batches (binlake.spark.tables wires them).

A range's plan (binlake.tables.plan.RangePlan) says, for every table the range touches, which
lineage its rows belong to at each place (a RENAME TABLE continues one lineage under another
name), that lineage's key and table events, and each Delta table's shapes. Then:

- `route`: each row change gets its lineage and its group (the key's text; one group for a table
  matched by whole rows, or whose key an update changes), and the place it sorts at;
- `held`: a Delta table's current versions (typed) as fold input, their values in row-values form;
- `fold`: each group's stream, sorted, through a binlake.tables.fold.Fold; the versions out staged
  for the typed columns (`stage`): the text each column's cast reads, `_raw`, `_unknown`.

Every stage speaks one Arrow schema (`STREAM`, `OUT`), whatever the tables' own columns.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from binlake.tables.fold import BASELINE, ROWS, Change, Fold, Snapshot, TableEvent, Version, canonical, key_text
from binlake.tables.shapes import Shape
from binlake.tables.types import Staged

CANDIDATE, CHANGE, SNAPSHOT = 0, 1, 2
# The fold's input: one row per candidate, row change or baseline row (the fields its kind uses).
STREAM = pa.schema([
    ("lineage", pa.int32()), ("grp", pa.binary()), ("kind", pa.int8()), ("s_order", pa.string()),
    ("s_phase", pa.int8()), ("s_seq", pa.int64()), ("order", pa.string()), ("seq", pa.int64()),
    ("txn", pa.string()), ("at", pa.string()), ("op", pa.string()), ("before", pa.string()),
    ("after", pa.string()), ("table", pa.string()), ("shape", pa.int32()), ("key_changed", pa.bool_()),
])
# The fold's output: one row per version to write, its values staged (`values`: {Delta column: text}).
OUT = pa.schema([
    ("table", pa.string()), ("values", pa.string()), ("raw", pa.map_(pa.string(), pa.string())),
    ("unknown", pa.list_(pa.string())), ("from_order", pa.string()), ("from_seq", pa.int64()),
    ("from_txn", pa.string()), ("valid_from", pa.string()), ("op", pa.string()), ("to_order", pa.string()),
    ("to_txn", pa.string()), ("valid_to", pa.string()), ("existing", pa.bool_()),
])
SORT = ["lineage", "grp", "s_order", "s_phase", "s_seq"]


@dataclass
class Segment:
    """A table name's rows from `start` (inclusive) to `end` (exclusive, None: the range's end)
    belong to a lineage, written to Delta table `table` (its "db/table")."""

    start: str
    end: str | None
    lineage: int
    table: str


@dataclass
class Lineage:
    id: int
    key: list[str] | None  # None: rows matched whole (a multiset)
    events: list[TableEvent] = field(default_factory=list)
    single: bool = False  # every row in one group (no key, or an update changes the key)


@dataclass
class Routes:
    """What the tasks need of a range's plan: the lineages, where each name's rows go, and each
    Delta table's shapes (with the place each starts at)."""

    lineages: dict[int, Lineage]
    segments: dict[tuple[str, str], list[Segment]]
    shapes: dict[str, list[Shape]]
    held: dict[str, int] = field(default_factory=dict)  # each table's shape at the range's start
    # made once per task, not per row: each table's shapes' orders, and how each shape stages
    _orders: dict[str, list[str]] = field(default_factory=dict, repr=False, compare=False)
    _staging: dict[tuple[str, int, int], list[tuple[str, str, str, Callable[[Any], Staged]]]] = field(
        default_factory=dict, repr=False, compare=False)

    def segment(self, schema: str, table: str, order: str) -> Segment | None:
        for s in self.segments.get((schema, table), ()):
            if s.start <= order and (s.end is None or order < s.end):
                return s
        return None

    def shape_index(self, table: str, order: str) -> int:
        """The index of a Delta table's shape in effect at a place (its DDL comes before its rows)."""
        orders = self._orders.get(table)
        if orders is None:
            orders = self._orders[table] = [s.order for s in self.shapes[table]]
        return max(0, bisect.bisect_right(orders, order) - 1)

    def staging(self, table: str, shape: int, order: str) -> list[tuple[str, str, str, Callable[[Any], Staged]]]:
        """How a version of `table` in shape `shape`, first made at `order`, is staged: per column of
        the shape, its Delta column, the name `_unknown` and `_raw` give it (the version's first
        shape's), its name now and its Kind's `stage`."""
        first = self.shape_index(table, order)
        found = self._staging.get((table, shape, first))
        if found is None:
            shapes = self.shapes[table]
            named = {c.column: c.name for c in shapes[first].columns or []}
            found = [(c.column, named.get(c.column, c.name), c.name, c.kind().stage)
                     for c in shapes[shape].columns or []]
            self._staging[(table, shape, first)] = found
        return found


def _loads(text: str | None) -> dict[str, Any] | None:
    return orjson.loads(text) if text is not None else None


def route(routes: Routes, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Row changes (schema, table, op, before, after, seq, order, txn, at) as STREAM rows."""
    for b in batches:
        cols = {n: b.column(n).to_pylist() for n in ("schema", "table", "op", "before", "after", "seq", "order", "txn",
                                                     "at")}
        out: list[tuple] = []
        for i in range(b.num_rows):
            seg = routes.segment(cols["schema"][i], cols["table"][i], cols["order"][i])
            if seg is None:
                continue  # a table the range does not apply (a name the plan left out: none is)
            lineage = routes.lineages[seg.lineage]
            op, before, after = cols["op"][i], _loads(cols["before"][i]), _loads(cols["after"][i])
            image = before if before is not None else after
            grp = b""
            changed = False
            if lineage.key is not None and image is not None:
                grp = key_text(image, lineage.key) or b""
                if op == "update" and before is not None and after is not None:
                    moved = {k: after.get(k, before.get(k)) for k in lineage.key}
                    changed = key_text(moved, lineage.key) != grp
            order = cols["order"][i]
            out.append((seg.lineage, grp, CHANGE, order, ROWS, cols["seq"][i], order, cols["seq"][i], cols["txn"][i],
                        cols["at"][i], op, cols["before"][i], cols["after"][i], seg.table,
                        routes.shape_index(seg.table, order), changed))
        if out:
            yield rows_batch(out, STREAM)


def rows_batch(rows: list[tuple], schema: pa.Schema) -> pa.RecordBatch:
    """Rows (tuples in the schema's order) as one record batch."""
    columns = zip(*rows, strict=True)  # every row as long as the schema
    return pa.RecordBatch.from_arrays([pa.array(c, type=t) for c, t in zip(columns, schema.types, strict=True)],
                                      schema=schema)


def held(routes: Routes, lineage: int, table: str, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A Delta table's current versions (its Delta columns, the version columns, `_valid_from` as
    text) as STREAM rows of `lineage`, their values in row-values form by the current shape."""
    key = routes.lineages[lineage].key
    shapes = routes.shapes[table]
    shape = routes.held.get(table, len(shapes) - 1)
    values_of = VersionValues(shapes, shapes[shape])
    for b in batches:
        out: list[tuple] = []
        for row in b.to_pylist():
            values = values_of(row)
            grp = (key_text(values, key) or b"") if key is not None else b""
            out.append((lineage, grp, CANDIDATE, "", 0, 0, row["_from_order"], row["_from_seq"], row["_from_txn"],
                        row["_valid_from"], row["_op"], None, orjson.dumps(values).decode(), table, shape, False))
        if out:
            yield rows_batch(out, STREAM)


def held_keys(routes: Routes, lineage: int, table: str, batches: Iterable[pa.RecordBatch]
              ) -> Iterator[pa.RecordBatch]:
    """A Delta table's current versions as they are, with `_grp`: the group `held` gives each. Only
    the key's columns are read, so that the versions of keys a range does not change can be left
    out (a join on `_grp`) before `held` turns every value of the rest into row-values form."""
    key = routes.lineages[lineage].key or []
    names = frozenset(key)
    shapes = routes.shapes[table]
    now = _held_shape(routes, table)
    columns = {c.name: c for c in now.columns or [] if c.name in names}
    needed = [c.column for c in columns.values()] + ["_from_order", "_raw", "_unknown"]
    # An integer key's text is its numbers' (key_text: JSON), made by Arrow for every row that
    # keeps all its values typed; the others (a value in _raw, one unknown) go through Python.
    integers = integer_key(routes, lineage, table)

    values_of = VersionValues(shapes, now, names)

    def one(data: dict[str, list], i: int) -> bytes:
        return key_text(values_of({n: data[n][i] for n in needed}), key) or b""

    for b in batches:
        if integers is None:
            data = b.select(needed).to_pydict()
            yield b.append_column("_grp", pa.array([one(data, i) for i in range(b.num_rows)], pa.binary()))
            continue
        texts = [pc.fill_null(pc.cast(b.column(c), pa.string()), "null") for c in integers]
        grps = pc.binary_join_element_wise("[", pc.binary_join_element_wise(*texts, ","), "]", "").cast(pa.binary())
        odd = [i for i, ok in enumerate(typed(b).to_pylist()) if not ok]
        if odd:
            data, values = b.select(needed).to_pydict(), grps.to_pylist()
            for i in odd:
                values[i] = one(data, i)
            grps = pa.array(values, pa.binary())
        yield b.append_column("_grp", grps)


def integer_key(routes: Routes, lineage: int, table: str) -> list[str] | None:
    """The Delta columns of the lineage's key where every one is an integer (TINYINT…BIGINT,
    unsigned too), in the key's order; else None."""
    key = routes.lineages[lineage].key or []
    columns = {c.name: c for c in _held_shape(routes, table).columns or [] if c.name in key}
    if not key or not all(k in columns and columns[k].kind().name == "integer" for k in key):
        return None
    return [columns[k].column for k in key]


def _held_shape(routes: Routes, table: str) -> Shape:
    shapes = routes.shapes[table]
    return shapes[routes.held.get(table, len(shapes) - 1)]


def typed(versions: pa.RecordBatch) -> pa.Array:
    """Whether each version holds every value typed and known (none in `_raw`, none unknown): the
    versions whose integer key held_keys makes in Arrow; the others' it makes in Python."""
    return pc.and_(_empty(versions.column("_raw")), _empty(versions.column("_unknown")))


def _empty(lists: pa.Array) -> pa.Array:
    """Whether each list (or map: Arrow's list_value_length has no kernel for maps) is null or empty."""
    offsets = lists.offsets
    return pc.or_(lists.is_null(), pc.equal(pc.subtract(offsets[1:], offsets[:-1]), 0))


class VersionValues:
    """Delta rows of one table (their columns as Arrow gives them) in row-values form, by the
    columns of shape `now` (or those of them named `only`) and as it names them: a value the
    version did not know left out, a value its typed column cannot hold taken from `_raw` (both of
    which name columns as the version's first shape did). The shapes' lookups are made once, not
    per row."""

    def __init__(self, shapes: list[Shape], now: Shape, only: Container[str] | None = None) -> None:
        self.shapes = shapes
        self.orders = [s.order for s in shapes]
        self.columns = [(c.name, c.column, c.kind().value) for c in now.columns or []
                        if only is None or c.name in only]
        self.firsts: dict[int, dict[str, str]] = {}  # a first shape's Delta column by name

    def __call__(self, row: dict[str, Any]) -> dict[str, Any]:
        if not row["_raw"] and not row["_unknown"]:  # every value typed and known: most rows
            return {name: value(row[column], None) for name, column, value in self.columns}
        i = max(0, bisect.bisect_right(self.orders, row["_from_order"]) - 1)
        first = self.firsts.get(i)
        if first is None:
            first = self.firsts[i] = {c.name: c.column for c in self.shapes[i].columns or []}
        raw = {first.get(k, k): x for k, x in (row["_raw"] or [])}  # by Delta column
        unknown = {first.get(k, k) for k in row["_unknown"] or ()}
        return {name: value(row[column], raw.get(column)) for name, column, value in self.columns
                if column not in unknown}


@dataclass
class BaselineLoad:
    """A baseline table's rows to read into a lineage: its chunks (key, point's order, first row's
    number), the baseline's start and time, the Delta table and its shape."""

    lineage: int
    table: str
    shape: int
    start: str
    at: str
    chunks: list[tuple[str, str, int]]


def snapshot_rows(load: BaselineLoad, key: list[str] | None, chunk: tuple[str, str, int],
                  lines: Iterable[bytes]) -> Iterator[pa.RecordBatch]:
    """A baseline chunk's rows (JSON lines, docs/snapshots.md) as STREAM rows at the baseline's
    start, with the chunk's own point and their numbers in the table's baseline (negative)."""
    _, point, seq = chunk
    out: list[tuple] = []
    for line in lines:
        if not line.strip():
            continue
        values = orjson.loads(line)
        grp = (key_text(values, key) or b"") if key is not None else b""
        out.append((load.lineage, grp, SNAPSHOT, load.start, BASELINE, seq, point, -seq, None, load.at, "snapshot",
                    None, line.decode() if isinstance(line, bytes) else line, load.table, load.shape, False))
        seq += 1
        if len(out) >= 4096:
            yield rows_batch(out, STREAM)
            out = []
    if out:
        yield rows_batch(out, STREAM)


def _event(r: dict[str, Any]) -> Version | Change | Snapshot:
    kind = r["kind"]
    if kind == CANDIDATE:
        return Version(orjson.loads(r["after"]), r["order"], r["seq"], r["txn"] or "", r["at"], r["op"], r["table"],
                       r["shape"], existing=True)
    if kind == SNAPSHOT:
        return Snapshot(r["order"], r["seq"], r["at"], orjson.loads(r["after"]), r["table"], r["shape"])
    return Change(r["order"], r["seq"], r["txn"], r["at"], r["op"], _loads(r["before"]), _loads(r["after"]),
                  r["table"], r["shape"])


def fold(routes: Routes, batches: Iterable[pa.RecordBatch], counts: dict[str, int] | None = None
         ) -> Iterator[pa.RecordBatch]:
    """STREAM rows sorted by SORT, each group folded; the versions to write as OUT rows."""
    group: list[Version | Change | Snapshot] = []
    at: tuple[int, bytes] | None = None
    out: list[tuple] = []  # OUT rows

    def flush() -> Iterator[pa.RecordBatch]:
        nonlocal out
        if at is not None and group:
            lineage = routes.lineages[at[0]]
            f = Fold(lineage.key, lineage.events)
            for v in f.run(group):
                stage(routes, v, out)
            if counts is not None:
                counts["unmatched"] = counts.get("unmatched", 0) + f.unmatched
        if len(out) >= 4096:
            yield rows_batch(out, OUT)
            out = []

    for b in batches:
        for r in b.to_pylist():
            here = (r["lineage"], r["grp"])
            if here != at:
                yield from flush()
                group, at = [], here
            group.append(_event(r))
    yield from flush()
    if out:
        yield rows_batch(out, OUT)


def stage(routes: Routes, v: Version, out: list[tuple]) -> None:
    """A version as an OUT row: each value staged into its Delta column (the version's shape), the
    names in `_unknown` and `_raw` as the version's first shape had them."""
    values = v.values
    staged: dict[str, str | None] = {}
    raw: list[tuple[str, str]] = []
    unknown: list[str] = []
    for column, name, own, stage_of in routes.staging(v.table, v.shape, v.order):
        if own not in values:
            unknown.append(name)
            continue
        text, whole = stage_of(values[own])
        staged[column] = text
        if whole is not None:
            raw.append((name, whole))
    to = v.to or (None, None, None)
    out.append((v.table, orjson.dumps(staged).decode(), raw or None, unknown or None, v.order, v.seq,
                v.txn or None, v.at, v.op, to[0], to[1] or None, to[2], v.existing))


__all__ = ["CANDIDATE", "CHANGE", "OUT", "SNAPSHOT", "SORT", "STREAM", "canonical"]
