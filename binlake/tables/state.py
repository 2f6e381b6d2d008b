"""A source's row versions in the warehouse: where its tables are, and `_binlake.json`, its state
(docs/tables.md, "Layout" and "`_binlake.json`").

`{warehouse}/tables/{source}/{db}/{table}` is each table's Delta table, names escaped (`path`);
`{warehouse}/tables/{source}/_binlake.json` the source's watermark, applied span and tables: each
table's Delta version at the watermark, key, completeness, baseline and shapes. An apply writes it
last, whole (the store's atomic put), so a reader that reads it sees every table at one watermark.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, replace
from typing import Any

from binlake.archive.stores import open_store
from binlake.errors import BinlakeError
from binlake.tables.shapes import Shape

FORMAT = 1
STATE = "_binlake.json"
_PLAIN = re.compile(rb"[A-Za-z0-9_$-]")


def warehouse_store(warehouse: str):
    """The warehouse as a binlake store (boto3 for s3a:// and s3://, the file system for a path)."""
    if warehouse.startswith(("s3a://", "s3://")):
        return open_store("s3://" + warehouse.split("://", 1)[1])
    return open_store(warehouse if "://" in warehouse else "file://" + os.path.abspath(warehouse))


def escape(name: str) -> str:
    """A server's database or table name as a path segment: every UTF-8 byte outside
    [A-Za-z0-9_$-] written @xx."""
    return "".join(chr(b) if _PLAIN.fullmatch(bytes([b])) else f"@{b:02x}" for b in name.encode())


def table_path(source: str, schema: str, table: str) -> str:
    """A table's Delta table, relative to the warehouse."""
    return f"tables/{escape(source)}/{escape(schema)}/{escape(table)}"


def state_key(source: str) -> str:
    return f"tables/{escape(source)}/{STATE}"


# How a table became complete (`complete_from.by`): its CREATE in the changelog, binlake's first
# sight of it (before, no such table); a CREATE again of a name binlake knew only partially (before
# its first shape, unknown); or a baseline (before its point, unknown).
BY_CREATE, BY_RECREATE, BY_BASELINE = "create", "recreate", "baseline"
# How a complete table became partial again (`partial_from.by`): a DML statement logged as a
# statement wrote it (binlog_format STATEMENT or MIXED), which no row version can follow.
BY_STATEMENT = "statement"


@dataclass(frozen=True)
class Point:
    """A place in the source's commit order and its commit time; as a table's `complete_from`,
    how it became complete (`by`)."""

    order: str
    time: str
    by: str | None = None

    def to_json(self) -> dict[str, str]:
        return {"order": self.order, "time": self.time, **({"by": self.by} if self.by else {})}

    @classmethod
    def of(cls, d: dict[str, Any] | None) -> Point | None:
        return cls(d["order"], d["time"], d.get("by")) if d else None


@dataclass
class TableState:
    schema: str
    table: str
    path: str  # under the warehouse (table_path)
    version: int | None = None  # the Delta version at the watermark; None before the first commit
    key: list[str] | None = None  # the columns rows are matched by; None: the whole row
    complete_from: Point | None = None  # None: partial
    partial_from: Point | None = None  # partial again from there on (None: not)
    baseline: dict[str, Any] | None = None  # {"id", "rows"} of the snapshot its rows came from
    shapes: list[Shape] = field(default_factory=list)
    columns: dict[str, str] = field(default_factory=dict)  # the Delta table's source columns: name -> Spark type
    rows: int | None = None  # the versions it holds, as binlake's commits counted them; None: not known

    @property
    def name(self) -> str:
        return f"{self.schema}/{self.table}"

    @property
    def held(self) -> int | None:
        """The versions the Delta table holds: none before its first commit; None: not known."""
        return 0 if self.version is None else self.rows

    def shape(self) -> Shape | None:
        return self.shapes[-1] if self.shapes else None

    def shape_at(self, order: str) -> Shape | None:
        """The shape in effect after the transaction of that order."""
        found = None
        for s in self.shapes:
            if s.order <= order:
                found = s
        return found

    def to_json(self) -> dict[str, Any]:
        return {"schema": self.schema, "table": self.table, "path": self.path, "version": self.version,
                "key": self.key, "complete_from": self.complete_from.to_json() if self.complete_from else None,
                **({"partial_from": self.partial_from.to_json()} if self.partial_from else {}),
                "baseline": self.baseline, "shapes": [s.to_json() for s in self.shapes], "columns": self.columns,
                "rows": self.rows}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TableState:
        ts = cls(d["schema"], d["table"], d["path"], d.get("version"), d.get("key"), Point.of(d.get("complete_from")),
                 Point.of(d.get("partial_from")), d.get("baseline"),
                 [Shape.from_json(s) for s in d.get("shapes") or []], dict(d.get("columns") or {}), d.get("rows"))
        done = ts.complete_from
        if done is not None and done.by is None:  # written before `by` was: what its other fields imply
            by = (BY_BASELINE if ts.baseline else BY_CREATE if ts.shapes and ts.shapes[0].order == done.order
                  else BY_RECREATE)
            ts.complete_from = replace(done, by=by)
        return ts


@dataclass
class SourceState:
    source: str
    watermark: dict[str, Any] | None = None  # {"time", "order", "txn_id"}: applied up to time (exclusive)
    span: dict[str, str] | None = None  # {"start", "end"}: the applied commit-time range
    assembled_version: int | None = None  # the `transactions` table's version the last apply read
    tables: dict[str, TableState] = field(default_factory=dict)  # by "db/table"

    def table(self, schema: str, name: str) -> TableState:
        """A table's state, made when the source first has it."""
        key = f"{schema}/{name}"
        if key not in self.tables:
            self.tables[key] = TableState(schema, name, table_path(self.source, schema, name))
        return self.tables[key]

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "source": self.source, "watermark": self.watermark, "span": self.span,
                "assembled_version": self.assembled_version,
                "tables": {k: t.to_json() for k, t in sorted(self.tables.items())}}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SourceState:
        if d.get("format") != FORMAT:
            raise BinlakeError(f"{STATE} of source {d.get('source')!r}: format {d.get('format')!r}, this binlake "
                               f"reads format {FORMAT}")
        return cls(d["source"], d.get("watermark"), d.get("span"), d.get("assembled_version"),
                   {k: TableState.from_json(t) for k, t in (d.get("tables") or {}).items()})


def load(warehouse: str, source: str) -> SourceState | None:
    """The source's state, or None when nothing was applied yet."""
    store = warehouse_store(warehouse)
    key = state_key(source)
    return _read(store, key) if store.exists(key) else None


def load_all(warehouse: str) -> list[SourceState]:
    """The state of every source with row versions in the warehouse, by source directory."""
    store = warehouse_store(warehouse)
    keys = (f"tables/{name}/{STATE}" for name in store.names("tables"))
    return [_read(store, key) for key in keys if store.exists(key)]


def _read(store, key: str) -> SourceState:
    try:
        return SourceState.from_json(json.loads(store.get(key)))
    except (ValueError, KeyError) as e:
        raise BinlakeError(f"{store.url}/{key}: not a row versions' state ({e})") from None


def save(warehouse: str, state: SourceState) -> None:
    warehouse_store(warehouse).put(state_key(state.source), json.dumps(state.to_json(), indent=1).encode())
