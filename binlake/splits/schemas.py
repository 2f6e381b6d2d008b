"""The schema state each split of an assemble job starts from, by the scan's rule.

Per source with a schema history: history.choose picks the snapshot for the first file the plan
reads, replay.moved moves it to that file's start, and the DDL of the planned files, in the
plan's order, advances it; a split (or a big transaction's piece) starts from the state every DDL
statement before its start has advanced. A scan of the same files gives each table map the same
state, so the two outputs are equal. The statements are read from the archived objects
(`archived_ddl`, a task per file in the job); the distinct states are few (one per DDL statement
at most) and are what the tasks receive, each split naming its own by index.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Sequence

from binlake.archive.keys import binlog_key, manifest_key
from binlake.archive.stores import MissingObject, open_store
from binlake.binlog.framing import BinlogReader
from binlake.errors import BinlakeError
from binlake.schema.ddl import SchemaState, is_ddl
from binlake.schema.history import choose, loaded, of_archived_file, snapshots
from binlake.schema.model import Snapshot
from binlake.schema.replay import Statement, between, moved, reader_ddl
from binlake.splits.plan import Plan, Split

log = logging.getLogger(__name__)


def histories(plan: Plan) -> dict[str, Snapshot]:
    """The snapshot each source of the plan starts from, for the sources with a history and files
    in the range (a quiet range of a source reads none: its tables are empty, no state needed)."""
    store = open_store(plan.store)
    out = {}
    for source in plan.sources:
        first = next((f.file for f in plan.files if f.source == source), None)
        if first is None:
            continue
        try:
            found = snapshots(store, source)
            usable = functools.partial(of_archived_file, store, source)
            chosen = choose(found, first, usable) if found else None
            if found:  # none placeable: the tables the files' DDL creates only, as a scan does
                out[source] = loaded(store, chosen) if chosen else Snapshot({})
        except ValueError as e:
            raise BinlakeError(f"{plan.store}: schema history of {source}: {e}") from None
    return out


def states_for(plan: Plan, splits: Sequence[Split],
               read: Callable[[list[tuple[str, str]]], dict[tuple[str, str], list[Statement] | None]]
               ) -> list[SchemaState] | None:
    """The distinct states the splits start from (`assign`), the DDL of the files they need read by
    `read` ((source, name) -> `archived_ddl`'s answer: a Spark task per file in the job, the
    driver itself for a range it reads); None for a plan whose sources have no history."""
    starts = histories(plan)
    if not starts:
        return None
    found = read(files_to_read(plan, starts))
    return assign(plan, splits, starts, lambda source, name: found.get((source, name)))


def files_to_read(plan: Plan, starts: dict[str, Snapshot]) -> list[tuple[str, str]]:
    """(source, archived name) of every file whose DDL the states need: those between each
    source's snapshot and its first planned file, then the planned ones."""
    out: list[tuple[str, str]] = []
    for source, snapshot in starts.items():
        planned = [f.file for f in plan.files if f.source == source]
        before = between(snapshot, planned[0]) or []
        out += [(source, n) for n in dict.fromkeys(before + planned)]
    return out


def archived_ddl(store_url: str, source: str, name: str,
                 wanted: Callable[[str], bool] = is_ddl) -> list[Statement] | None:
    """The DDL statements of an archived file (replay.reader_ddl, `wanted` its choice); None when it
    is not archived."""
    store = open_store(store_url)
    key = manifest_key(source, name)
    if not store.exists(key):
        return None
    size = json.loads(store.get(key))["size"]
    found: list[Statement] = []
    try:
        with store.open_range(binlog_key(source, name), 0, size) as rng:
            found.extend(reader_ddl(BinlogReader(rng.data, name, pages=rng.pages), wanted=wanted))
    except MissingObject:
        return None
    except BinlakeError as e:  # a damaged file: the statements before the damage (the facts pass says what it is)
        log.warning("schema history: DDL of %s/%s read up to the damage only: %s", source, name, e)
    return found


def assign(plan: Plan, splits: Sequence[Split], starts: dict[str, Snapshot],
           ddl: Callable[[str, str], Sequence[Statement] | None]) -> list[SchemaState]:
    """The distinct states the splits start from; each split of a source with a history gets the
    index of its own in `split.schema`."""
    states: list[SchemaState] = []
    by_file: dict[tuple[str, str], list[Split]] = {}
    for s in splits:
        by_file.setdefault((s.source, s.file), []).append(s)
    for source, snapshot in starts.items():
        planned = [f.file for f in plan.files if f.source == source]
        state = moved(snapshot, planned[0], functools.partial(ddl, source))
        for name in planned:
            statements = list(ddl(source, name) or [])
            at, current = 0, None
            for split in sorted(by_file.get((source, name), []), key=lambda s: s.start):
                while at < len(statements) and statements[at][0] < split.start:
                    _, db, sql, collation = statements[at]
                    state.apply(db, sql, collation)
                    at, current = at + 1, None
                if current is None:
                    states.append(state.copy())
                    current = len(states) - 1
                split.schema = current
            for _, db, sql, collation in statements[at:]:
                state.apply(db, sql, collation)
    log.info("schema history: %d source(s), %d distinct states over %d splits", len(starts), len(states),
             sum(s.schema is not None for s in splits))
    return states
