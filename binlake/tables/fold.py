"""A key's changes, in commit order, folded into row versions (docs/tables.md, "Applying a range").

The Spark job hands each group — the rows of one table's lineage that share a key, or all of a
table without a key — to a `Fold`, sorted by their place (`Event.place`): the current versions
the table holds (candidates), then the range's row changes and the baseline's rows in commit
order. Between them the lineage's table-wide events (`TableEvent`: a baseline's start, DDL that
changes every row, TRUNCATE, DROP, RENAME) apply at their own places. Out come the versions to
write: existing ones closed (or completed), new ones opened (and maybe closed again in the range).

Rows are matched as the server matches them: by the key, or by every column the before image
holds (a multiset: the oldest current version of equal rows). A change never applies to a version
written at or after its own place (the DBLog rule: the baseline's rows hold every change before
their chunk's point). Values are in docs/row-values.md's forms throughout; a column absent from a
version's values is unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
from pymysqlreplication.json_binary import JsonDiffOperation

from binlake.binlog import partial_json

# Phases of one place in the order: what a transaction does to a table's shape comes before its
# rows (CREATE … SELECT), its rows, then a baseline whose point is that transaction's end.
SHAPE, ROWS, BASELINE = 0, 1, 2


@dataclass
class Version:
    values: dict[str, Any]  # column -> value; a column not here is unknown
    order: str
    seq: int
    txn: str
    at: str  # _valid_from
    op: str
    table: str  # the Delta table ("db/table") it is written to
    shape: int  # the index of the shape its values are in, of its table's shapes
    existing: bool = False  # read from the table, not opened by this apply
    changed: bool = False  # an existing version this apply closes or completes
    to: tuple[str, str, str] | None = None  # (order, txn, at) that closed it


@dataclass(frozen=True)
class Change:
    """A row change (or one half of a key-changing update split between two groups)."""

    order: str
    seq: int
    txn: str
    at: str
    op: str  # insert | update | delete
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    table: str  # the Delta table the lineage writes to at this place
    shape: int  # that table's shape then
    opens: str | None = None  # the op of the version it opens, when not `op` (a split update's insert half)


@dataclass(frozen=True)
class Snapshot:
    """A baseline's row, opened at the baseline's start with its chunk's point (`order`)."""

    order: str
    seq: int  # minus its number in the baseline
    at: str
    values: dict[str, Any]
    table: str
    shape: int


@dataclass(frozen=True)
class TableEvent:
    """What happens to every current version of a lineage at one place.

    kind: `baseline` (close them all: a baseline starts; its rows follow as Snapshots),
    `end` (TRUNCATE, DROP TABLE: close them all), `reshape` (DDL: each row's values through
    `convert`, a new `ddl` version where they change, in Delta table `table`: a RENAME TABLE moves
    every row there)."""

    order: str
    phase: int
    txn: str
    at: str
    kind: str
    table: str = ""
    shape: int = 0  # a reshape's: the new shape of `table`
    convert: Callable[[dict[str, Any]], tuple[dict[str, Any], bool]] | None = None  # shapes.Reshape

    @property
    def place(self) -> tuple[str, int, int]:
        return (self.order, self.phase, -1)


Event = Version | Change | Snapshot


def place(e: Event) -> tuple[str, int, int]:
    """Where an event of a group's stream sorts: the candidates first, then by commit order."""
    if isinstance(e, Version):
        return ("", 0, 0)
    if isinstance(e, Snapshot):
        return (e.order, BASELINE, -e.seq)
    return (e.order, ROWS, e.seq)


def canonical(v: Any) -> bytes:
    """A value's text for comparisons (a JSON document's keys in one order)."""
    return orjson.dumps(v, option=orjson.OPT_SORT_KEYS)


def key_text(values: dict[str, Any], key: Iterable[str]) -> bytes | None:
    """A row's key as text, None when a key column is unknown."""
    out = []
    for k in key:
        if k not in values:
            return None
        out.append(values[k])
    return canonical(out)


class Fold:
    """One group's versions through its events. `key`: the lineage's key columns (None: match
    by whole rows, a multiset); `events`: its table-wide events, in order."""

    def __init__(self, key: list[str] | None, events: list[TableEvent]) -> None:
        self.key = key
        self.events = sorted(events, key=lambda e: e.place)
        self.next_event = 0
        self.current: dict[int, Version] = {}  # by id, in the order they were opened (a multiset's FIFO)
        self.by_key: dict[bytes, Version] = {}
        self.by_row: dict[bytes, dict[int, Version]] = {}  # a multiset's, by their whole values
        self.out: list[Version] = []  # versions to write, in the order they were settled
        self.unmatched = 0  # updates and deletes that found no version (a partial table's rows)
        self.ddl_seq = 0  # a multiset's ddl versions, numbered in the order they are made

    # -- the stream --------------------------------------------------------------------

    def run(self, stream: Iterable[Event]) -> list[Version]:
        for e in stream:
            at = place(e)
            while self.next_event < len(self.events) and self.events[self.next_event].place < at:
                self._table_event(self.events[self.next_event])
                self.next_event += 1
            if isinstance(e, Version):
                self._hold(e)
            elif isinstance(e, Snapshot):
                self._snapshot(e)
            else:
                self._change(e)
        for rest in self.events[self.next_event:]:
            self._table_event(rest)
        self.next_event = len(self.events)
        self.out.extend(v for v in self.current.values() if not v.existing or v.changed)
        self.current, self.by_key, self.by_row = {}, {}, {}
        return self.out

    def _hold(self, v: Version) -> None:
        self.current[id(v)] = v
        if self.key is not None:
            k = key_text(v.values, self.key)
            if k is not None:
                self.by_key[k] = v
        else:
            self.by_row.setdefault(canonical(v.values), {})[id(v)] = v

    def _drop(self, v: Version) -> None:
        del self.current[id(v)]
        if self.key is not None:
            k = key_text(v.values, self.key)
            if k is not None and self.by_key.get(k) is v:
                del self.by_key[k]
        else:
            same = self.by_row[canonical(v.values)]
            del same[id(v)]
            if not same:
                del self.by_row[canonical(v.values)]

    def _close(self, v: Version, order: str, txn: str, at: str) -> None:
        self._drop(v)
        if not v.existing and v.order == order:
            return  # opened and ended by the same transaction: never a version
        v.to = (order, txn, at)
        v.changed = True
        self.out.append(v)

    def _find(self, image: dict[str, Any]) -> Version | None:
        if self.key is not None:
            k = key_text(image, self.key)
            return self.by_key.get(k) if k is not None else None
        same = self.by_row.get(canonical(image))
        if same:  # the oldest current version of equal rows
            return next(iter(same.values()))
        wanted = {c: canonical(v) for c, v in image.items()}  # a version that does not know every value
        for v in self.current.values():
            if all(c not in v.values or canonical(v.values[c]) == text for c, text in wanted.items()):
                return v
        return None

    # -- events ------------------------------------------------------------------------

    def _snapshot(self, s: Snapshot) -> None:
        self._hold(Version(dict(s.values), s.order, s.seq, "", s.at, "snapshot", s.table, s.shape))

    def _table_event(self, e: TableEvent) -> None:
        for v in list(self.current.values()):
            if e.kind in ("baseline", "end"):
                self._close(v, e.order, e.txn, e.at)
                continue
            assert e.convert is not None
            values, changed = e.convert(v.values)
            if not changed and e.table == v.table:
                self._drop(v)  # the same row in the new shape (renamed columns): the same version
                v.values, v.shape = values, e.shape
                self._hold(v)
                continue
            self._close(v, e.order, e.txn, e.at)
            seq = -1
            if self.key is None:
                self.ddl_seq += 1
                seq = -self.ddl_seq
            self._hold(Version(values, e.order, seq, e.txn, e.at, "ddl", e.table, e.shape))

    def _change(self, c: Change) -> None:
        old = self._find(c.before) if c.before is not None else None
        if c.op in ("update", "delete"):
            if old is None:
                self.unmatched += 1
            elif _holds(old, c):
                return  # the version holds this change already (DBLog)
            elif old.existing or old.order != c.order:
                self._drop(old)  # held again under its values as they are now known
                _learn(old, c.before or {})
                self._hold(old)
        if c.op == "delete":
            if old is not None:
                self._close(old, c.order, c.txn, c.at)
            return
        values = dict(old.values) if old is not None else {}
        if c.before is not None:
            values.update((k, v) for k, v in c.before.items() if k not in values)
        if c.op == "insert" and c.after is not None and self.key is not None:
            taken = self._find(c.after)
            if taken is not None:
                if _holds(taken, c):
                    return  # the baseline's row of that key is after this insert
                self.unmatched += 1  # a key inserted twice: the server says it was not there
                self._close(taken, c.order, c.txn, c.at)
        for k, v in (c.after or {}).items():
            values[k] = complete_json(values.get(k), v) if _is_partial(v) else v
            if _is_partial(values[k]):
                del values[k]  # the diffs of a document never seen: unknown
        op = c.opens or c.op
        if old is not None and not old.existing and old.order == c.order:
            op = old.op  # the same transaction again: its last state is the version
            self._drop(old)
        elif old is not None:
            self._close(old, c.order, c.txn, c.at)
        self._hold(Version(values, c.order, c.seq, c.txn, c.at, op, c.table, c.shape))


def _holds(v: Version, c: Change) -> bool:
    """Whether a version was written at or after a change (a baseline's row read after it, or a
    version this transaction wrote in an earlier apply): the change is in it already."""
    return v.order > c.order or (v.order == c.order and (v.existing or v.op == "snapshot"))


def _learn(v: Version, before: dict[str, Any]) -> bool:
    """A before image's values the version did not know: they were its values. Whether any."""
    new = {k: x for k, x in before.items() if k not in v.values and not _is_partial(x)}
    if new:
        v.values.update(new)
        v.changed = v.changed or v.existing
    return bool(new)


def _is_partial(v: Any) -> bool:
    return isinstance(v, dict) and len(v) == 1 and "$partial" in v


def complete_json(doc: Any, partial: Any) -> Any:
    """A MINIMAL partial JSON update (`{"$partial": [{"op", "path", "value"}…]}`, row-values.md)
    applied to the previous document; the partial value itself when that is not known."""
    if not _is_partial(partial):
        return partial
    if doc is None:
        return partial
    doc = partial_json.apply(doc, [(JsonDiffOperation[d["op"]], d["path"], d["value"]) for d in partial["$partial"]])
    return mysql_key_order(doc)


def mysql_key_order(doc: Any) -> Any:
    """A document's objects with their keys in the order MySQL's binary JSON keeps them (by
    length, then byte by byte), as a full row image would give it."""
    if isinstance(doc, dict):
        keys = sorted(doc, key=lambda k: (len(k.encode()), k.encode()))
        return {k: mysql_key_order(doc[k]) for k in keys}
    if isinstance(doc, list):
        return [mysql_key_order(x) for x in doc]
    return doc


def fold_groups(groups: Iterable[tuple[list[str] | None, list[TableEvent], list[Event]]]) -> Iterator[Version]:
    """Each group (its key, its lineage's table events, its stream) folded in turn."""
    for key, events, stream in groups:
        yield from Fold(key, events).run(stream)

