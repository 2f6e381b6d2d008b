"""One source's range, planned on the driver: which lineage each table's rows belong to, what
happens to every row of a table at each DDL statement, TRUNCATE and baseline, and the shapes and
Delta columns that follow (docs/tables.md, "DDL" and "The baseline").

The columns' names and types are the schema state the assemble job named the row changes with: the
source's schema history moved to the range's first file (binlake.splits.schemas), advanced by the
range's own statements; for a source without a history, the shapes the row versions already hold.
A table the state does not know gets columns named as its row images name them, untyped. Where
the state at the range's start differs from a table's last shape (the history learnt the table,
or lost it), every row is reshaped at the range's first transaction.

A lineage is one table's life through the range: its rows, whatever the table's name (RENAME TABLE
hands them on), until it is dropped. Each has a key (the rows are grouped and matched by it) or
none, and its table events in order (binlake.tables.fold.TableEvent).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from binlake.assemble.statement_dml import ANY
from binlake.schema.ddl import SchemaState, is_ddl
from binlake.schema.model import Snapshot, Table
from binlake.tables.baselines import Baseline
from binlake.tables.fold import BASELINE, SHAPE, TableEvent
from binlake.tables.shapes import Effects, Reshape, Shape, next_shape, statement_effects
from binlake.tables.state import BY_BASELINE, BY_CREATE, BY_RECREATE, BY_STATEMENT, Point, SourceState, TableState
from binlake.tables.stream import BaselineLoad, Lineage, Routes, Segment

log = logging.getLogger(__name__)
_TRUNCATE = re.compile(r"^\s*TRUNCATE\b", re.I)
VERSION_COLUMNS = ("_valid_from", "_valid_to", "_from_txn", "_to_txn", "_from_order", "_to_order", "_op",
                   "_from_seq", "_unknown", "_raw")


def table_statement(sql: str) -> bool:
    """A statement the row versions follow: DDL (binlake.schema.ddl.is_ddl) or TRUNCATE."""
    return is_ddl(sql) or bool(_TRUNCATE.match(sql))


@dataclass(frozen=True)
class Statement:
    """A table statement of the range, placed at its transaction."""

    order: str
    time: str
    txn: str
    db: str
    sql: str
    collation: int | None = None


@dataclass(frozen=True)
class Written:
    """A table a transaction of the range wrote by statement ("db.table", or ANY: every table):
    named in its `tables` without a row change of its own there (binlake.assemble.statement_dml)."""

    order: str
    time: str
    table: str


@dataclass
class RangePlan:
    routes: Routes
    delta_ops: dict[str, list[tuple]] = field(default_factory=dict)  # Delta table -> ("rename"|"add", …)
    candidates: dict[str, tuple[int, bool]] = field(default_factory=dict)  # Delta table -> (lineage, all rows)
    loads: list[BaselineLoad] = field(default_factory=list)
    touched: set[str] = field(default_factory=set)  # Delta tables this range may change


class Planner:
    """Builds a RangePlan over `state` (updated in place: shapes, keys, completeness, baselines)."""

    def __init__(self, state: SourceState, start: Point, history: SchemaState | None) -> None:
        self.state = state
        self.start = start  # the range's first transaction's place (time: the range's start)
        self.history = history  # the schema state at the range's start; None: the source has no history
        self.lineages: dict[int, Lineage] = {}
        self.segments: dict[tuple[str, str], list[Segment]] = {}
        self.live: dict[tuple[str, str], int] = {}  # a name's lineage now
        self.ops: dict[str, list[tuple]] = {}
        self.candidates: dict[str, tuple[int, bool]] = {}
        self.loads: list[BaselineLoad] = []
        self.images: dict[tuple[str, str], list[str]] = {}  # untyped tables' columns, as their images name them

    # -- names and lineages -----------------------------------------------------------

    def _new_lineage(self, name: tuple[str, str], at: str, key: list[str] | None) -> Lineage:
        lineage = Lineage(len(self.lineages), key, single=key is None)
        self.lineages[lineage.id] = lineage
        self.segments.setdefault(name, []).append(Segment(at, None, lineage.id, "/".join(name)))
        self.live[name] = lineage.id
        return lineage

    def _end(self, name: tuple[str, str], at: str) -> None:
        segs = self.segments.get(name) or []
        if segs and segs[-1].end is None:
            segs[-1].end = at
        self.live.pop(name, None)

    def _ts(self, name: tuple[str, str]) -> TableState:
        return self.state.table(*name)

    def _definition(self, name: tuple[str, str], state: SchemaState | None) -> Table | None:
        if state is not None:
            return state.tables.get(name)
        shape = self._ts(name).shape()
        return _table_of(name, shape) if shape and shape.columns and all(c.type for c in shape.columns) else None

    def _reshape(self, name: tuple[str, str], order: str, time: str, table: Table | None, *,
                 effects: Effects | None = None, txn: str = "", to: tuple[str, str] | None = None) -> TableEvent:
        """The shape `to` (default: the same name) gets at `order`, and the event that moves every
        row of `name`'s lineage there."""
        target = to or name
        ts, old = self._ts(target), self._ts(name).shape()
        if to is not None and to != name:  # another table: its own Delta columns, the rows carried over
            mine = ts.shape()
            shape, _, renames, adds = next_shape(mine if mine is not None and mine.columns is not None else None,
                                                 table, at=(order, time), effects=Effects(), delta=ts.columns,
                                                 untyped=self._untyped(name))
            reshape = carry(old, shape)
        else:
            shape, reshape, renames, adds = next_shape(old, table, at=(order, time), effects=effects or Effects(),
                                                       delta=ts.columns, untyped=self._untyped(name))
        self._delta(ts, renames, adds)
        ts.shapes.append(shape)
        return TableEvent(order, SHAPE, txn, time, "reshape", ts.name, len(ts.shapes) - 1, reshape)

    def _delta(self, ts: TableState, renames: list[tuple[str, str]], adds: list[tuple[str, str, str]]) -> None:
        ops = self.ops.setdefault(ts.name, [])
        ops += [("rename", a, b) for a, b in renames] + [("add", n, t, c) for n, t, c in adds]
        for shape in ts.shapes:  # earlier shapes name the Delta columns as they are now
            for c in shape.columns or []:
                for a, b in renames:
                    if c.column == a:
                        c.column = b
                        break

    def _untyped(self, name: tuple[str, str]) -> list[str]:
        return self.images.get(name) or [c.name for c in (self._ts(name).shape() or Shape("", "", [])).columns or []]

    # -- the plan ---------------------------------------------------------------------

    def plan(self, statements: list[Statement], touched: dict[tuple[str, str], list[str]],
             keys: dict[tuple[str, str], list[str]], baselines: list[Baseline], *,
             written: list[Written] | None = None) -> RangePlan:
        """`touched`: the tables with row changes in the range and their images' columns; `keys`: a
        key the images show (MINIMAL before images); `baselines`: those whose start is in the range;
        `written`: the tables its transactions wrote by statement (partial from there on)."""
        self.images = dict(touched)
        held = {ts.name: len(ts.shapes) - 1 for ts in self.state.tables.values() if ts.shapes}  # before the range's
        start = self.history.copy() if self.history is not None else SchemaState(_snapshot(self.state))
        if self.history is not None:  # a table the history lost (a capture after its DDL): as the versions have it
            for name, known in _snapshot(self.state).tables.items():
                start.tables.setdefault(name, known)
        placed = [(s, statement_effects(s.db, s.sql)) for s in statements]
        names = set(touched) | {k for b in baselines for k in b.tables}
        for _, effects in placed:
            names |= set(effects) | {e.moved_from for e in effects.values() if e.moved_from}
        created = _created(start, placed)
        for name in sorted(names):  # the tables as they are at the range's start
            ts = self._ts(name)
            shape = ts.shape()
            live = shape is not None and shape.columns is not None
            if shape is None or not live and (name in created or (name not in start.tables and name not in touched)):
                continue  # made in the range (CREATE, RENAME) or by a baseline
            lineage = self._new_lineage(name, "", ts.key or keys.get(name))
            if live:
                self.candidates[ts.name] = (lineage.id, False)
            definition = start.tables.get(name)
            if shape is None or not live or _differs(shape, definition, self.images.get(name)):
                lineage.events.append(self._reshape(name, self.start.order, self.start.time, definition))
        cur = start.copy()
        writes = sorted(written or [], key=lambda w: w.order, reverse=True)
        for s, effects in placed:
            while writes and writes[-1].order < s.order:  # in commit order: a CREATE after it completes it again
                self._written(writes.pop())
            before = cur.copy()
            cur.apply(s.db, s.sql, s.collation)
            self._statement(s, effects, before, cur)
        while writes:
            self._written(writes.pop())
        for b in baselines:
            self._baseline(b)
        for lineage in self.lineages.values():
            lineage.events.sort(key=lambda e: e.place)
            if lineage.events:  # every row of the table goes through them: all its current versions
                for table, (lid, _) in list(self.candidates.items()):
                    if lid == lineage.id:
                        self.candidates[table] = (lid, True)
        shapes = {ts.name: ts.shapes for ts in self.state.tables.values() if ts.shapes}
        routes = Routes(self.lineages, self.segments, shapes, held)
        return RangePlan(routes, self.ops, self.candidates, self.loads,
                         {s.table for segs in self.segments.values() for s in segs})

    def _statement(self, s: Statement, effects: dict[tuple[str, str], Effects], before: SchemaState,
                   after: SchemaState) -> None:
        moved = {e.moved_from for e in effects.values() if e.moved_from}
        changed = {k for k in set(before.tables) | set(after.tables) if before.tables.get(k) != after.tables.get(k)}
        for name in sorted(changed | set(effects)):
            e = effects.get(name, Effects())
            now = after.tables.get(name)
            if e.moved_from is not None and e.moved_from in self.live:  # RENAME TABLE: the rows go on under `name`
                old = e.moved_from
                lineage = self.lineages[self.live[old]]
                event = self._reshape(old, s.order, s.time, now, effects=e, txn=s.txn, to=name)
                self._end(old, s.order)
                self._ts(old).shapes.append(Shape(s.order, s.time, None))
                self.segments.setdefault(name, []).append(Segment(s.order, None, lineage.id, "/".join(name)))
                self.live[name] = lineage.id
                lineage.events.append(event)
                self._keyed(name, lineage, e)
            elif name in moved:
                continue  # handed on
            elif name in self.live and name not in after.tables:  # DROP TABLE, DROP DATABASE
                self._drop(name, s)
            elif e.truncate and name in self.live:
                self.lineages[self.live[name]].events.append(TableEvent(s.order, SHAPE, s.txn, s.time, "end"))
            elif name not in self.live and name in after.tables:  # CREATE
                ts = self._ts(name)
                if e.key_set:
                    ts.key = e.key
                lineage = self._new_lineage(name, s.order, ts.key)
                lineage.events.append(self._reshape(name, s.order, s.time, now, effects=e, txn=s.txn))
                if ts.complete_from is None or ts.partial_from is not None:
                    # complete from here; a name complete before stays so (DROP, CREATE). This CREATE
                    # its first shape: before it, no such table; else it was there, partial
                    ts.complete_from = Point(s.order, s.time, BY_CREATE if len(ts.shapes) == 1 else BY_RECREATE)
                    ts.baseline = ts.partial_from = None
            elif name in self.live:  # ALTER (or a statement the history could not follow: untyped)
                lineage = self.lineages[self.live[name]]
                if before.tables.get(name) != now:
                    lineage.events.append(self._reshape(name, s.order, s.time, now, effects=e, txn=s.txn))
                self._keyed(name, lineage, e)

    def _written(self, w: Written) -> None:
        """A table written by statement is partial from there on; ANY: every table the source has then."""
        names = [ts.name for ts in self.state.tables.values()] if w.table == ANY else ["/".join(w.table.split(".", 1))]
        for name in names:
            ts = self.state.tables.get(name)
            shape = ts.shape() if ts is not None else None
            if ts is None or shape is None or shape.columns is None or shape.order > w.order:
                continue  # a table binlake does not hold (at that point): nothing to mark
            if ts.partial_from is None:
                ts.partial_from = Point(w.order, w.time, BY_STATEMENT)

    def _keyed(self, name: tuple[str, str], lineage: Lineage, e: Effects) -> None:
        if e.key_set:  # the key changes within the range: its rows matched whole (as the server may) until its end
            self._ts(name).key = e.key
            lineage.key, lineage.single = None, True

    def _drop(self, name: tuple[str, str], s: Statement) -> None:
        lineage = self.lineages[self.live[name]]
        lineage.events.append(TableEvent(s.order, SHAPE, s.txn, s.time, "end"))
        self._end(name, s.order)
        ts = self._ts(name)
        ts.shapes.append(Shape(s.order, s.time, None))

    def _baseline(self, b: Baseline) -> None:
        # In the changelog's clock (a MariaDB log's whole seconds too), not the snapshot's client's:
        # its rows are the tables as the transaction at its point left them (Baseline.at).
        at = b.at
        for name, bt in sorted(b.tables.items()):
            ts = self._ts(name)
            stale = ts.partial_from is not None and ts.partial_from.order < bt.complete  # written by statement before
            if (ts.complete_from is not None or ts.baseline is not None) and not stale:
                continue  # complete from its CREATE, or from an earlier baseline
            lineage_id = self._lineage_at(name, b.start)
            if lineage_id is None:
                lineage = self._new_lineage(name, "", bt.key)
                lineage_id = lineage.id
                lineage.events.append(self._reshape(name, b.start, at, bt.definition))
            lineage = self.lineages[lineage_id]
            if lineage.key is None and not lineage.single and bt.key:
                lineage.key = bt.key
            lineage.single = lineage.key is None
            ts.key = ts.key or bt.key
            lineage.events.append(TableEvent(b.start, BASELINE, "", at, "baseline"))
            ts.complete_from = Point(bt.complete, at, BY_BASELINE)
            ts.baseline = {"id": b.id, "rows": bt.rows}
            if stale:
                ts.partial_from = None
            shape = len(ts.shapes) - 1
            self.loads.append(BaselineLoad(lineage_id, ts.name, shape, b.start, at,
                                           [(c.key, c.order, c.first_seq) for c in bt.chunks if c.key]))

    def _lineage_at(self, name: tuple[str, str], order: str) -> int | None:
        for s in self.segments.get(name, []):
            if s.start <= order and (s.end is None or order < s.end):
                return s.lineage
        return None


def carry(old: Shape | None, new: Shape) -> Reshape:
    """A row's values from one table's shape into another's (RENAME TABLE): by column name."""
    before = old.by_name() if old else {}
    return Reshape([(c.name, c.name if c.name in before else None,
                     before[c.name].model() if c.name in before else None, c.model(), None)
                    for c in new.columns or []], moved=True)


def _created(start: SchemaState, placed: list[tuple[Statement, dict[tuple[str, str], Effects]]]
             ) -> set[tuple[str, str]]:
    """The names whose first statement in the range makes them (CREATE, RENAME … TO): they were not
    there before it."""
    cur, seen, made = start.copy(), set(start.tables), set()
    for s, effects in placed:
        before = set(cur.tables)
        cur.apply(s.db, s.sql, s.collation)
        new = (set(cur.tables) - before) | {k for k, e in effects.items() if e.moved_from}
        made |= new - seen
        seen |= set(cur.tables) | set(effects)
    return made


def _differs(shape: Shape, table: Table | None, images: list[str] | None) -> bool:
    if table is None:  # untyped: a change when it was typed, or the images name columns it lacks
        return any(c.type for c in shape.columns or []) or bool(set(images or []) - {c.name for c in shape.columns
                                                                                      or []})
    return [(c.name, c.type, c.charset) for c in shape.columns or []] != \
        [(c.name, c.type, c.charset) for c in table.columns]


def _table_of(name: tuple[str, str], shape: Shape) -> Table:
    from binlake.schema.model import Column

    return Table(name[0], name[1], tuple(Column(c.name, c.type, c.charset) for c in shape.columns or []))


def _snapshot(state: SourceState) -> Snapshot:
    """The typed tables the row versions hold now, as a schema snapshot (a source without a history
    starts its range's DDL from them)."""
    tables = {}
    for ts in state.tables.values():
        shape = ts.shape()
        if shape and shape.columns and all(c.type for c in shape.columns):
            tables[(ts.schema, ts.table)] = _table_of((ts.schema, ts.table), shape)
    return Snapshot(tables)


def check_names(tables: Iterable[TableState]) -> None:
    """A source column named like a version column cannot be held (docs/tables.md, "Limits")."""
    from binlake.errors import BinlakeError

    for ts in tables:
        for c in (ts.shape() or Shape("", "", [])).columns or []:
            if c.name.lower() in VERSION_COLUMNS:
                raise BinlakeError(f"table {ts.schema}.{ts.table}: its column {c.name} is named like a row "
                                   "version's column; such a table cannot be held (docs/tables.md, \"Limits\")")

