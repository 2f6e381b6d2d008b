"""What `binlake demo` prints of the source tables: one table as of two instants, read as `binlake
asof` reads it (binlake.tables.asof: delta-rs, no JVM).

The table is chosen from what the run applied: a complete table of a handful of rows and few
columns whose rows changed after they were first written, the one with the most row versions.
The instants are the transaction that first wrote its rows and the last one that changed them,
each named by its GTID (asof at that transaction) and its commit time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from binlake.tables import state as states
from binlake.tables.asof import tables_at
from binlake.tables.delta_reads import query, storage
from binlake.tables.state import TableState

MAX_ROWS = 8  # a handful, printed whole
MAX_COLUMNS = 6
MAX_WIDTH = 40  # a value wider than this makes a table a poor example


@dataclass(frozen=True)
class Instant:
    gtid: str
    time: str  # its commit time, as the versions hold it


@dataclass(frozen=True)
class Choice:
    source: str
    table: TableState
    versions: int
    first: Instant
    last: Instant


def lines(warehouse: str, sources: list[str]) -> list[str]:
    """The printout: the table at both instants, its columns aligned; a line saying why when no
    table of the sources fits."""
    if all(states.load(warehouse, source) is None for source in sources):
        return ["  source tables: none applied (the run's apply_tables task says why)"]
    choice = choose(warehouse, sources)
    if choice is None:
        return ["  source tables: no table of a handful of rows changed in this range"]
    name = f"{choice.table.schema}.{choice.table.table}"
    out = [f"  source tables: {warehouse.rstrip('/')}/tables/ (binlake asof)",
           f"  {name} of {choice.source} as of two instants ({choice.versions} row versions):"]
    for at in (choice.first, choice.last):
        (found,), _ = tables_at(warehouse, choice.source, at.gtid, names=[name])
        header = [c.name for c in found.shape.columns or []]
        rows = sorted([[_text(row, c) for c in header] for row in found.values()], key=_sortable)
        out.append(f"    after {at.gtid}, committed {at.time}:")
        out += ["      " + line for line in _aligned([header, *rows])]
    return out


def choose(warehouse: str, sources: list[str]) -> Choice | None:
    """The most changed small table of the sources, with its two instants; None when none fits."""
    found: list[Choice] = []
    uri, options = storage(warehouse)
    for source in sorted(sources):
        state = states.load(warehouse, source)
        for ts in sorted(state.tables.values(), key=lambda t: t.name) if state is not None else []:
            shape = ts.shape()
            if ts.version is None or ts.complete_from is None or ts.partial_from is not None or shape is None \
                    or shape.columns is None or len(shape.columns) > MAX_COLUMNS:  # complete, small tables only
                continue
            versions = query(f"{uri}/{ts.path}", options, ts.version,
                             "SELECT _from_txn, _from_order, _valid_from, _to_txn, _to_order, _valid_to, _unknown "
                             "FROM t").to_pylist()
            current = [v for v in versions if v["_to_order"] is None]
            if not 0 < len(current) <= MAX_ROWS or len(versions) <= len(current) or \
                    any(v["_unknown"] for v in versions):
                continue  # too big, unchanged since its rows were written, or values unknown
            ends = [(v["_from_order"], v["_from_txn"], v["_valid_from"]) for v in versions] + \
                [(v["_to_order"], v["_to_txn"], v["_valid_to"]) for v in versions if v["_to_order"] is not None]
            first, last = min(ends), max(ends)
            if _gtid(first[1]) and _gtid(last[1]):
                found.append(Choice(source, ts, len(versions), Instant(first[1], _iso(first[2])),
                                    Instant(last[1], _iso(last[2]))))
    found.sort(key=lambda c: -c.versions)  # stable: sources and tables in name order among equals
    return next((c for c in found if _narrow(warehouse, c)), None)


def _narrow(warehouse: str, choice: Choice) -> bool:
    """Whether every value of the table at both instants prints in MAX_WIDTH characters."""
    name = f"{choice.table.schema}.{choice.table.table}"
    for at in (choice.first, choice.last):
        (found,), _ = tables_at(warehouse, choice.source, at.gtid, names=[name])
        for row in found.values():
            if any(len(_text(row, c)) > MAX_WIDTH for c in row):
                return False
    return True


def _gtid(txn_id: str) -> bool:
    """Whether a transaction's id is its GTID (`uuid:n`, `uuid:tag:n`, MariaDB's `d-s-n`), not the
    id binlake derives for a transaction without one."""
    parts = txn_id.split(":")
    return (len(parts) >= 2 and parts[-1].isdigit()) or (txn_id.count("-") == 2 and txn_id.replace("-", "").isdigit())


def _iso(ts: Any) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _text(row: dict[str, Any], column: str) -> str:
    """A value as printed: text as itself, NULL, any other value its row-values JSON."""
    v = row.get(column)
    if v is None:
        return "NULL"
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def _sortable(cells: list[str]) -> list[Any]:
    """Rows in the order of their first column, numbers as numbers."""
    return [(0, int(c), "") if c.lstrip("-").isdigit() else (1, 0, c) for c in cells]


def _aligned(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
