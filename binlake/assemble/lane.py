"""The lane: runs of ordinary transactions written straight as `binlake scan`'s JSON lines.

The transactions production writes most — a GTID, BEGIN, table maps and rows of tables the
compiled decoder takes, an XID — cost the walk of binlake.assemble.walk its Python per event,
most of their time (bench/RESULTS.md). The lane hands a run of them to compiled code
(`_rowdecode.lane`): framing, CRC32s, commit facts, row images and the transaction's record, each
transaction's row changes then its record, byte for byte the lines the walk writes for them
(tests/test_lane.py), in the records' shapes (binlake.records), which this module holds the
compiled writers to when it loads (lane_layouts). Python is called once per run, and once per table map not seen before
(`learn`). Their statements (ROWS_QUERY, MariaDB's ANNOTATE_ROWS) are carried as the walk carries
them, and a transaction without GTID (an ANONYMOUS_GTID: a server at its shipped gtid_mode) gets
the id records.derived_txn_id gives it (a statement that is not UTF-8 is written as
bytes.decode("utf-8", "replace") gives it). Anything else — another kind of transaction, a table
the compiled decoder leaves to the reference path, a tagged GTID, a length that disagrees, a
segment that fills, damage — stops the run, and the walk takes that transaction.

It writes to the walk's output (binlake.assemble.outputs), in the form the output takes. One that
takes LINES (`binlake scan`) gets a transaction's row changes and its record as one stream, in the
walk's order (LaneLines). One that takes COLUMNS (the Spark job) gets columns instead, each made
into one Arrow batch: the run's records (RecordRun, binlake.spark.schema.records_run_batch) and,
where the walk's options ask for row changes, the run's row changes (RowRun,
binlake.spark.schema.run_batch); without them the rows are counted, not written.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import orjson

from binlake.binlog import constants as c
from binlake.binlog import fastrows
from binlake.binlog.framing import BinlogReader
from binlake.binlog.tablemap import TableMap, TableMapCache, table_map_name
from binlake.errors import RowDecodeError
from binlake.records import ROW_CHANGE_FIELDS, TRANSACTION_FIELDS, TXN_NAMESPACE
from binlake.schema.check import unknown_table

if TYPE_CHECKING:
    from binlake.schema.ddl import SchemaState

# A RecordRun's fields per transaction, in `fields` (_lane.h's RECORD_COLUMNS)
RECORD_FIELDS = ("start_pos", "end_pos", "transaction_length", "server_id", "xid", "commit_us", "original_us",
                 "first_us", "last_committed", "sequence_number", "event_count", "row_count", "rows_inserted",
                 "rows_updated", "rows_deleted", "tables", "nulls")
# R_NULLS's bits: the fields that are null
NULL_GTID, NULL_LENGTH, NULL_ORIGINAL, NULL_LOGICAL = 1, 2, 4, 8
# What every record of a RecordRun says, the fields its columns leave out: _lane.h writes the same
# into each record line (tests/test_row_blocks.py holds the two in step).
RUN_RECORD = {"kind": "dml", "outcome": "committed", "end_event": "XID", "synthetic_boundary": False,
              "xa_xid": None, "compressed": False, "statement": None, "segment_count": 1}
# A RowRun's fields per rows event, in `blocks` (_lane.h's BLOCK_COLUMNS)
BLOCK_FIELDS = ("seq", "event_pos", "commit_us", "event_us", "xid", "rows", "op", "txn", "table", "statement")


@dataclass(frozen=True, slots=True)
class LaneLines:
    """Whole transactions the lane wrote as JSON lines, each one's row changes then its record:
    every one a committed dml transaction."""

    text: bytes
    transactions: int


@dataclass(frozen=True)
class RecordRun:
    """The records of a run of transactions the lane took, as columns: per transaction its
    RECORD_FIELDS (`fields`, int64s) and its id (`ids`, an Arrow string column's (offsets, data)),
    and its tables in its record's order (`named`: int32 indexes into `tables`, `fields`' "tables"
    of them per transaction). Every one a committed dml transaction of one file, whole (one
    segment), of no statement: what the lines would say of it."""

    binlog_file: str
    fields: bytes
    ids: tuple[bytes, bytes]
    named: bytes
    tables: list[TableMap]

    @property
    def transactions(self) -> int:
        return len(self.fields) // (8 * len(RECORD_FIELDS))

    def last(self) -> tuple[int, int]:
        """The last transaction's start_pos and commit time (microseconds since the epoch)."""
        row = memoryview(self.fields).cast("q")[-len(RECORD_FIELDS):]
        return row[RECORD_FIELDS.index("start_pos")], row[RECORD_FIELDS.index("commit_us")]


@dataclass(frozen=True)
class RowRun:
    """The row changes of a run of whole transactions the lane decoded, as columns: per rows event
    its fields (`blocks`: BLOCK_FIELDS int64s each, indexing `txn_ids`, `tables` and `statements`),
    per row its images' JSON texts as Arrow string columns' (offsets, data) and whether it has each
    (`valid`: a byte per row, 1 before, 2 after). Each transaction is its only segment's (segment 1,
    end_segment true)."""

    binlog_file: str
    blocks: bytes
    txn_ids: list[str]
    tables: list[TableMap]
    statements: list[str]
    before: tuple[bytes, bytes]
    after: tuple[bytes, bytes]
    valid: bytes

    @property
    def rows(self) -> int:
        return len(self.valid)


_ROWS = {c.WRITE_ROWS_EVENT_V1: 8, c.UPDATE_ROWS_EVENT_V1: 8, c.DELETE_ROWS_EVENT_V1: 8,
         c.WRITE_ROWS_EVENT: 10, c.UPDATE_ROWS_EVENT: 10, c.DELETE_ROWS_EVENT: 10}  # type -> post-header
_STATEMENTS = {c.TABLE_MAP_EVENT, c.ROWS_QUERY_LOG_EVENT, c.ANNOTATE_ROWS_EVENT}
_MOST = 4096  # transactions per call
_LEARN_ERRORS = (RowDecodeError, ValueError, struct.error, IndexError, KeyError, UnicodeError, TypeError)


class Taker(Protocol):
    """What the lane writes to: an output that takes its runs (binlake.assemble.outputs.Output)."""

    def laned(self, run: LaneLines | RecordRun | RowRun) -> None: ...


def _members(schema: str, table: str) -> bytes:
    """A row change line's `"schema":…,"table":…,`, written once per table."""
    return orjson.dumps({"schema": schema, "table": table})[1:-1] + b","


def check_layouts() -> None:
    """The compiled lane writes binlake.records' shapes and this module's columns: its record line,
    row change line and column names, held to them (a build out of step with them is refused)."""
    record, row, record_columns, block_columns = fastrows.lane_layouts(_members("", ""))
    said = {"record line": (tuple(orjson.loads(record)), ("record", *TRANSACTION_FIELDS)),
            "row change line": (tuple(orjson.loads(row)), ("record", *ROW_CHANGE_FIELDS)),
            "record columns": (record_columns, RECORD_FIELDS), "block columns": (block_columns, BLOCK_FIELDS)}
    for what, (compiled, defined) in said.items():
        if compiled != defined:
            raise ImportError(f"the compiled lane's {what} {compiled} is not binlake's {defined}: rebuild it "
                              "(pip install -e .) or make _lane.h write the shape binlake.records defines")


if fastrows.lane_built():
    check_layouts()


class Lane:
    """The lane over one file's reader: `run` from an offset between transactions."""

    def __init__(self, reader: BinlogReader, output: Taker, *, columns: bool, source: str, binlog_file: str,
                 rows: bool, segment_rows: int, segment_bytes: int, table_maps: dict, decoded: TableMapCache,
                 schema: SchemaState | None) -> None:
        """columns: the output takes columns (RecordRun, and RowRun with `rows`), not lines;
        table_maps: the walk's, which the lane keeps as it keeps them; decoded: the walk's too."""
        fde = reader.fde
        self.reader = reader
        self.output = output
        self.columns = columns
        self.rows = rows
        self.file = binlog_file
        self.table_maps = table_maps
        self.decoded = decoded
        self.schema = schema
        self.maps: dict[bytes, tuple | None] = {}  # TABLE_MAP body -> what the lane needs of it
        # what the lane's transactions may hold: table maps, and rows events of the layouts it reads
        inside = bytes(t in _STATEMENTS or fde.post_header_len(t) == _ROWS.get(t) for t in range(256))
        self.fixed = (fde.header_len, fde.has_checksum, fde.post_header_len(c.QUERY_EVENT), inside,
                      orjson.dumps(source), orjson.dumps(binlog_file), rows, segment_rows, segment_bytes,
                      binlog_file.encode("utf-8", "surrogatepass"), TXN_NAMESPACE.bytes)

    @staticmethod
    def fits(reader: BinlogReader) -> bool:
        """Whether the lane reads this file's format: the compiled walk's (BinlogReader.compiled_walk),
        of version 4 with today's headers and table maps."""
        fde = reader.fde
        return (fastrows.lane_built() and reader.compiled_walk and fde.binlog_version == 4 and fde.header_len == 19
                and fde.post_header_len(c.TABLE_MAP_EVENT) == 8)

    def run(self, pos: int) -> tuple[int, int, int, int]:
        """Write the run of transactions the lane takes from `pos` to the output: (the offset after
        them, how many transactions, events, row changes written)."""
        r = self.reader
        got: list[tuple] | None = [] if self.columns and self.rows else None
        said: list[tuple] | None = [] if self.columns else None
        lines, end, txns, events, rows = fastrows.lane(r.data, r.base, pos, r.end, fixed=self.fixed, maps=self.maps,
                                                       learn=self.learn, table_maps=self.table_maps, most=_MOST,
                                                       runs=got, records=said)
        if txns:
            if got:
                self.output.laned(RowRun(self.file, *got[0]))
            if said:
                self.output.laned(RecordRun(self.file, *said[0]))
            if lines:
                self.output.laned(LaneLines(lines, txns))
            if r.pages is not None:
                r.passed(pos, end)
        return end, txns, events, rows

    def forget(self) -> None:
        """The schema history moved on (a DDL): table maps are named afresh."""
        self.maps.clear()

    def learn(self, body: bytes) -> tuple | None:
        """What the lane needs of a TABLE_MAP it has not seen (body: the event's); None where its
        transactions are the walk's: a table the compiled decoder does not take whole, one that
        disagrees with the schema history or that it does not know (the walk says so), a map
        that cannot be read."""
        try:
            known = self.schema.columns(*table_map_name(body, 8)) if self.schema is not None else None
            tm = self.decoded.decode(body, 8, known)
            if tm.mismatch or unknown_table(self.schema, known, tm) or tm.fast is None or tm.json_keys is None:
                return None
            name = f"{tm.schema}.{tm.table}"
            return (fastrows.compiled(tm.fast, tm.json_keys), tm, name.encode("utf-8", "surrogatepass"),
                    orjson.dumps(name), _members(tm.schema, tm.table))
        except _LEARN_ERRORS:
            return None
