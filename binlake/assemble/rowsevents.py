"""A walk's TABLE_MAP and rows events.

The table maps in effect, each decoded once (binlake.binlog.tablemap.TableMapCache) and named by
the schema history where the walk has one, a disagreement with it or a table it does not know
said once per file (binlake.schema.check.unknown_table); each rows event decoded into the
output's row sink (binlake.assemble.sinks: by the compiled path where the sink takes it so) at the
place its transaction's numbering gives it (binlake.assemble.segments), and counted into its
transaction.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from binlake.assemble.sinks import RowsAt, RowSink
from binlake.assemble.transactions import Txn
from binlake.binlog import constants as c
from binlake.binlog import events as ev_codec
from binlake.binlog import rows as rows_codec
from binlake.binlog.framing import FormatDescription, Frame
from binlake.binlog.tablemap import TableMap, TableMapCache, table_map_name
from binlake.errors import RowDecodeError
from binlake.records import ts_from_seconds
from binlake.schema.check import unknown_table

if TYPE_CHECKING:  # sqlglot, behind it, is imported only where a schema history is followed
    from binlake.schema.ddl import SchemaState

DECODE_ERRORS = (RowDecodeError, ValueError, struct.error, IndexError, KeyError, UnicodeDecodeError)


class Placing(Protocol):
    """How a transaction's row changes are numbered and when its sink hands them on
    (binlake.assemble.segments: Segmenter, Unplaced). Each call returns the row changes handed on."""

    @property
    def segment_id(self) -> int | None: ...
    @property
    def seq(self) -> int: ...
    @property
    def piece(self) -> int | None: ...
    @property
    def ordinal(self) -> int | None: ...

    def before(self, sink: RowSink | None, presentable: bool) -> int: ...
    def after(self, rows: int, size: int, sink: RowSink | None) -> int: ...
    def close(self, sink: RowSink | None, presentable: bool) -> int: ...
    def surely_last(self, size: int, end: int) -> bool: ...
    def likely_last(self, rows: int, size: int, end: int) -> bool: ...


class Said(Protocol):
    """Where the walk files an anomaly."""

    def __call__(self, start: int, end: int, code: str, detail: str, *, severity: str = "error") -> None: ...


class RowsEvents:
    """The TABLE_MAP and rows events of one walk (its file's), into the row sink given (None: its
    rows are decoded for their counts only)."""

    def __init__(self, *, fde: FormatDescription, binlog_file: str, sink: RowSink | None,
                 schema: SchemaState | None, said: Said, table_maps: Iterable[TableMap] = ()) -> None:
        self.fde = fde
        self.file = binlog_file
        self.sink = sink
        self.schema = schema
        self.said = said
        self.table_maps: dict[int, TableMap] = {tm.table_id: tm for tm in table_maps}  # by table id: those in effect
        self.decoded = TableMapCache(fde.flavor)
        self.mismatches: set[tuple[str, str, str]] = set()  # SCHEMA_MISMATCH/UNKNOWN said once per file

    def table_map(self, txn: Txn, f: Frame) -> None:
        phl = self.fde.post_header_len(f.type)
        try:
            known = self.schema.columns(*table_map_name(f.body, phl)) if self.schema is not None else None
            tm = self.decoded.decode(f.body, phl, known)
        except DECODE_ERRORS as exc:
            self.failed(txn, f, exc)
            return
        self.table_maps[tm.table_id] = tm
        key = (tm.schema, tm.table, tm.mismatch or "")
        if key in self.mismatches:
            return
        if tm.mismatch:
            self.mismatches.add(key)
            detail = (f"{self.file}:{f.pos}: TABLE_MAP of {tm.schema}.{tm.table} disagrees with the schema history: "
                      f"{tm.mismatch}; its rows have positional names (said once per file)")
            self.said(f.pos, f.end, "SCHEMA_MISMATCH", detail, severity="warning")
        elif unknown_table(self.schema, known, tm):
            self.mismatches.add(key)
            detail = (f"{self.file}:{f.pos}: TABLE_MAP of {tm.schema}.{tm.table}: the schema history does not know "
                      "the table (created before its snapshot and not in it, or changed by DDL it could not follow; "
                      "docs/schema.md); its rows have positional names (said once per file)")
            self.said(f.pos, f.end, "SCHEMA_UNKNOWN", detail, severity="warning")

    def failed(self, txn: Txn, f: Frame, exc: Exception) -> None:
        """An event that cannot be decoded: an anomaly, its transaction broken (its rows not presented)."""
        txn.broken = True
        self.said(f.pos, f.end, "DECODE_ERROR",
                  f"{self.file}:{f.pos}: cannot decode {c.event_name(f.type)} event: {exc}")
        if f.type == c.TABLE_MAP_EVENT:
            self.table_maps.pop(rows_codec.rows_table_id(f.type, f.body, self.fde.post_header_len(f.type)), None)

    def rows(self, txn: Txn, f: Frame, placing: Placing) -> int:
        """Decode a rows event, count it, and give its row changes their place in the sink; the
        row changes handed on."""
        phl = self.fde.post_header_len(f.type)
        sink = self.sink
        handed = 0
        try:
            op = rows_codec.ROWS_EVENT_TYPES[f.type]
            table_id = rows_codec.rows_table_id(f.type, f.body, phl)
            tm = self.table_maps.get(table_id)
            if tm is None:
                raise ValueError(f"no TABLE_MAP for table id {table_id}")
            handed += placing.before(sink, txn.presentable)
            done: tuple[int, int] | None = None
            if sink is not None:
                at = RowsAt(txn_id=txn.txn_id, segment_id=placing.segment_id, seq=placing.seq, binlog_file=self.file,
                            event_pos=f.pos, commit_ts=txn.commit_ts, event_ts=ts_from_seconds(f.timestamp),
                            schema=tm.schema, table=tm.table, op=op, rows_query=txn.rows_query, xid=txn.xid,
                            piece=placing.piece, ev_ord=placing.ordinal)
                done = sink.take(at, f, tm, phl, numbering=placing)
            if done is None:
                ev = rows_codec.decode_rows(f.type, f.body, phl, tm, self.fde.flavor)
                if sink is not None:
                    sink.hold(at, f, ev.rows, placing)
                done = ev.flags, len(ev.rows)
        except DECODE_ERRORS as exc:
            self.failed(txn, f, exc)
            return handed
        flags, n = done
        txn.count(tm.schema, tm.table, op, n)
        handed += placing.after(n, f.size, sink)
        if flags & c.STMT_END_F:
            txn.rows_query = None
        return handed


def rows_query(f: Frame) -> str | None:
    """The statement text of a ROWS_QUERY (MySQL) or ANNOTATE_ROWS (MariaDB) event; None when
    it cannot be read (the rows are still decoded)."""
    try:
        if f.type == c.ROWS_QUERY_LOG_EVENT:
            return ev_codec.decode_rows_query(f.body)
        return ev_codec.decode_annotate_rows(f.body)
    except (ValueError, IndexError):
        return None
