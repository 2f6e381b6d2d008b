"""The keys a range changes as a predicate on a table's first key column, so that the data files
holding none of them are not read: the changed keys' values cut into at most INTERVALS intervals at
their widest gaps, which Delta's min/max statistics prune files by (docs/tables.md, "Cost"). Said
in Spark SQL by binlake.spark.range_fold, in DataFusion's by binlake.tables.delta_reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import orjson

from binlake.tables.shapes import Col, Shape

# Spark evaluates the predicate on every row it reads too, in generated code: at 64 intervals that
# code passes HotSpot's 8000-byte limit of the methods it compiles and runs interpreted, microseconds
# a row (bench/RESULTS.md, bench/tables.py's section).
INTERVALS = 16
# The Kinds whose row values (a Python type) sort as their Delta column does; DECIMALs of Spark too
_SORTED: dict[str, type] = {"integer": int, "text": str}


@dataclass(frozen=True)
class KeyRanges:
    """The first key column (its Delta column and Kind) and the intervals, inclusive and sorted,
    that hold its value in every key a range changes."""

    column: Col
    intervals: list[tuple[Any, Any]]

    def sql(self, name: Callable[[str], str], literal: Callable[[Any], str]) -> str:
        """The predicate, in the dialect of `name` (a quoted column) and `literal` (a value of the
        column's type). It keeps the column's nulls too: a version whose key value sits in `_raw`
        (a value the typed column cannot hold) or is unknown, which only its key's text can match."""
        c = name(self.column.column)
        parts = [f"({c} = {literal(lo)})" if lo == hi else f"({c} BETWEEN {literal(lo)} AND {literal(hi)})"
                 for lo, hi in self.intervals]
        return " OR ".join([*parts, f"({c} IS NULL)"])


def changed_ranges(shape: Shape | None, key: list[str] | None, grps: Iterable[bytes]) -> KeyRanges | None:
    """The ranges of the first key column of `shape` that hold the keys `grps` (their key texts:
    binlake.tables.fold.key_text); None where they cannot be said: no key, no changed key, a column
    whose values do not sort as its Delta column does (only integers, DECIMALs of Spark and text
    do), or keys of another type than the column's (an integer column's value in `_raw`, a text)."""
    col = shape.by_name().get(key[0]) if shape is not None and key else None
    if col is None:
        return None
    kind = col.kind()
    firsts = [v for v in (orjson.loads(g)[0] for g in grps if g) if v is not None]  # null: the IS NULL term's
    values: list[Any] = firsts
    if kind.name in _SORTED:
        if any(type(v) is not _SORTED[kind.name] for v in firsts):
            return None
    elif kind.name.startswith("decimal") and kind.spark.startswith("DECIMAL") and all(isinstance(v, str)
                                                                                      for v in firsts):
        try:
            values = [Decimal(v) for v in firsts]  # row-values' text, sorted as numbers
        except InvalidOperation:
            return None
    else:
        return None
    return KeyRanges(col, intervals(values))


def intervals(values: list[Any], most: int = INTERVALS) -> list[tuple[Any, Any]]:
    """Values (of one type) sorted and cut into at most `most` intervals at their widest gaps."""
    vals = sorted(set(values))
    if len(vals) <= most:
        return [(v, v) for v in vals]
    gaps = sorted(range(1, len(vals)), key=lambda i: _gap(vals[i - 1], vals[i]), reverse=True)[:most - 1]
    out, start = [], 0
    for c in sorted(gaps):
        out.append((vals[start], vals[c - 1]))
        start = c
    out.append((vals[start], vals[-1]))
    return out


def _gap(a: Any, b: Any) -> float:
    if isinstance(a, int | Decimal) and isinstance(b, int | Decimal):
        return float(b - a)
    return 1.0  # text keys: cut anywhere (the first gaps)
