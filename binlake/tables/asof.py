"""`binlake asof`: a source's tables as of a time or a GTID, read with delta-rs (no JVM), in the
forms of docs/row-values.md (docs/tables.md, "Querying").

The source's state (`_binlake.json`) names each table's Delta version at the watermark: every
table is read at exactly that version, so all of them show one instant even while an apply runs.
A table's rows at the instant are its versions open then (`_valid_from`/`_valid_to` for a time,
`_from_order`/`_to_order` for a GTID's transaction); their values are turned back into row-values
form by the table's shape at that instant (binlake.tables.stream.VersionValues).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from binlake.errors import BinlakeError
from binlake.splits.times import parse_time
from binlake.tables import order as orders
from binlake.tables import state as states
from binlake.tables.delta_reads import query, storage
from binlake.tables.shapes import Shape
from binlake.tables.state import BY_CREATE, SourceState, TableState
from binlake.tables.stream import VersionValues

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_GTID = re.compile(r"^([0-9a-fA-F-]{36}(:[A-Za-z_][A-Za-z0-9_]{0,31})?:\d+|\d+-\d+-\d+)$")
FORMATS = ("jsonl", "csv", "parquet")
_ARCHIVED = "only the rows changed since archiving began"


@dataclass(frozen=True)
class Instant:
    """Where `--at` points: a time (every transaction committed at or before it), or the place of
    one transaction in the commit order (its GTID's)."""

    text: str  # as given
    time: str | None = None  # parse_time's form
    order: str | None = None

    def sql(self) -> str:
        """The versions open at this instant (docs/tables.md, "As of an instant")."""
        if self.order is not None:
            o = _literal(self.order)
            return f"_from_order <= {o} AND (_to_order IS NULL OR _to_order > {o})"
        t = f"TIMESTAMP {_literal(self.time or '')}"
        return f"_valid_from <= {t} AND (_valid_to IS NULL OR _valid_to > {t})"

    def reached(self, point: states.Point | None) -> bool:
        """Whether a table complete from `point` is complete at this instant."""
        if point is None:
            return False
        return point.order <= self.order if self.order is not None else point.time <= (self.time or "")

    def complete(self, ts: TableState) -> bool:
        """Whether a table is complete at this instant: from the point it is complete from, until
        the one it is partial again from (written by statement), if any."""
        return self.reached(ts.complete_from) and not self.reached(ts.partial_from)

    def shape(self, ts: TableState) -> Shape | None:
        """The table's columns at this instant (None: no such table then)."""
        found = None
        for s in ts.shapes:
            if (s.order <= self.order) if self.order is not None else (s.time <= (self.time or "")):
                found = s
        return found


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def instant(warehouse: str, state: SourceState, at: str) -> Instant:
    """`--at` as an instant of the source, refused past its watermark (named)."""
    mark = state.watermark or {}
    if not mark.get("time"):
        raise BinlakeError(f"source {state.source}: no range applied yet (binlake tables)")
    if _GTID.match(at) and not _DATE.match(at):
        uri, options = storage(warehouse)
        found = query(f"{uri}/transactions", options, None,
                       f"SELECT binlog_file, end_pos FROM t WHERE source = {_literal(state.source)} "
                       f"AND gtid = {_literal(at)}").to_pylist()
        if not found:
            raise BinlakeError(f"--at {at}: no transaction of source {state.source} has that GTID")
        if len(found) > 1:
            raise BinlakeError(f"--at {at}: source {state.source} wrote that GTID {len(found)} times (a reset "
                               "reissued it): give a time instead")
        point = Instant(at, order=orders.order(found[0]["binlog_file"], found[0]["end_pos"]))
        if mark.get("order") is None or (point.order or "") > mark["order"]:
            raise BinlakeError(f"--at {at}: past the watermark of source {state.source}: applied up to "
                               f"{mark['time']} (last transaction {mark.get('txn_id')})")
        return point
    try:
        when = parse_time(at)
    except (ValueError, BinlakeError):
        raise BinlakeError(f"--at {at}: neither a time (ISO 8601) nor a GTID") from None
    if when >= mark["time"]:
        raise BinlakeError(f"--at {at}: past the watermark of source {state.source}: applied up to "
                           f"{mark['time']} (exclusive; last transaction {mark.get('txn_id')})")
    return Instant(at, time=when)


@dataclass
class TableAt:
    """One table's rows at an instant: Arrow, its Delta columns (and `_unknown`, `_raw`)."""

    ts: TableState
    shape: Shape
    rows: Any  # pyarrow.Table

    def values(self) -> Iterator[dict[str, Any]]:
        """Each row in row-values form (an unknown value absent), the columns in the table's order."""
        values_of = VersionValues(self.ts.shapes, self.shape)
        for batch in self.rows.to_batches():
            for row in batch.to_pylist():
                yield values_of(row)


def tables_at(warehouse: str, source: str, at: str, *, names: list[str] | None = None, partial: bool = False
              ) -> tuple[list[TableAt], list[tuple[str, str]]]:
    """The source's tables (or `names`, "db.table") at `at`, and the partial tables' names, each with
    why it is partial (left out unless `partial`)."""
    state = states.load(warehouse, source)
    if state is None:
        raise BinlakeError(f"source {source}: no row versions in {warehouse} (binlake tables)")
    point = instant(warehouse, state, at)
    chosen = list(state.tables.values())
    if names:
        wanted = {tuple(n.split(".", 1)) for n in names}
        if bad := [n for n in names if "." not in n]:
            raise BinlakeError(f"--table {bad[0]}: give DB.TABLE")
        chosen = [ts for ts in chosen if (ts.schema, ts.table) in wanted]
        if missing := sorted(wanted - {(ts.schema, ts.table) for ts in chosen}):
            raise BinlakeError(f"--table {'.'.join(missing[0])}: source {source} has no such table")
    uri, options = storage(warehouse)
    out, partials = [], []
    for ts in sorted(chosen, key=lambda t: (t.schema, t.table)):
        shape = point.shape(ts)
        if shape is None and (ts.complete_from is None or ts.complete_from.by != BY_CREATE):
            # before binlake first knew the table (the archive's start, a baseline's point): what it
            # held is unknown, not nothing; before the CREATE it first knew it by, no such table
            partials.append((f"{ts.schema}.{ts.table}", _ARCHIVED))
            continue
        if shape is None or shape.columns is None or ts.version is None:
            if names:
                print(f"binlake: {ts.schema}.{ts.table} did not exist at {at}", file=sys.stderr)
            continue  # no such table at that instant
        if not point.complete(ts):
            written = ts.partial_from if point.reached(ts.partial_from) else None
            partials.append((f"{ts.schema}.{ts.table}", f"a DML logged as a statement wrote it at {written.time}"
                             if written else _ARCHIVED))
            if not partial:
                continue
        columns = [c.column for c in shape.columns]
        select = ", ".join(_ident(c) for c in columns + ["_from_order", "_unknown", "_raw"])
        rows = query(f"{uri}/{ts.path}", options, ts.version,
                      f"SELECT {select} FROM t WHERE {point.sql()}")
        out.append(TableAt(ts, shape, rows))
    return out, partials


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# -- the formats ----------------------------------------------------------------------------------

def write_jsonl(tables: list[TableAt], out: IO[bytes]) -> int:
    n = 0
    for t in tables:
        head = {"schema": t.ts.schema, "table": t.ts.table}
        for row in t.values():
            out.write(orjson.dumps({**head, "row": row}) + b"\n")
            n += 1
    return n


def _csv_field(v: Any) -> str:
    if v is None:
        return ""
    text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    return '"' + text.replace('"', '""') + '"'


def write_csv(t: TableAt, out: IO[bytes]) -> int:
    """A header of the column names and `_unknown`, then each row's row-values text: NULL an empty
    unquoted field, every other field quoted; `_unknown` the unknown columns as a JSON list."""
    names = [c.name for c in t.shape.columns or []]
    out.write((",".join(_csv_field(n) for n in names + ["_unknown"]) + "\r\n").encode())
    n = 0
    for row in t.values():
        unknown = [c for c in names if c not in row]
        fields = [_csv_field(row.get(c)) for c in names] + [_csv_field(json.dumps(unknown))]
        out.write((",".join(fields) + "\r\n").encode())
        n += 1
    return n


def write_parquet(t: TableAt, path: str | IO[bytes]) -> int:
    """The Delta columns as typed, named as at the instant, with `_unknown` and `_raw`."""
    import pyarrow.parquet as pq

    names = [c.name for c in t.shape.columns or []]
    table = t.rows.drop_columns(["_from_order"]).rename_columns(names + ["_unknown", "_raw"])
    pq.write_table(table, path)
    return table.num_rows


def run(warehouse: str, source: str, at: str, *, names: list[str] | None, fmt: str, out: str | None,
        partial: bool) -> int:
    """`binlake asof`: prints (or writes) the tables; exit 1 when a table asked for by name is partial."""
    found, partials = tables_at(warehouse, source, at, names=names, partial=partial)
    for name, why in partials:
        print(f"binlake: {name} is partial at {at}: {why}"
              f"{' (printed: --partial)' if partial else ' (left out; --partial prints it)'}", file=sys.stderr)
    if fmt == "jsonl" or (fmt == "csv" and out is None and len(found) <= 1):
        stream = open(out, "wb") if out else sys.stdout.buffer  # noqa: SIM115 (stdout is not closed)
        try:
            for t in found:
                write_csv(t, stream) if fmt == "csv" else write_jsonl([t], stream)
        finally:
            stream.close() if out else stream.flush()
    elif out is None:
        raise BinlakeError(f"--format {fmt}: give --out (a file for one table, a directory for several)")
    elif len(found) == 1 and names and not Path(out).is_dir():
        with open(out, "wb") as f:
            write_csv(found[0], f) if fmt == "csv" else write_parquet(found[0], f)
    else:
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        for t in found:
            with (folder / f"{t.ts.schema}.{t.ts.table}.{fmt}").open("wb") as f:
                write_csv(t, f) if fmt == "csv" else write_parquet(t, f)
    return 1 if names and partials and not partial else 0


