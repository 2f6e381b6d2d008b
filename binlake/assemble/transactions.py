"""A transaction's record, made from what the walk (binlake.assemble.walk) learnt of it: the event
that opened it, its commit facts (Facts, learnt ahead of its rows) and its counts (Txn)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from binlake.assemble.statement_dml import DML_RE
from binlake.binlog import constants as c
from binlake.binlog.events import parse_xa_xid
from binlake.records import AnomalyRecord, TransactionRecord, anomaly, derived_txn_id, ts_from_micros, ts_from_seconds

if TYPE_CHECKING:
    from binlake.boundaries.describe import Event



@dataclass
class Facts:
    """What the light pass learns of a transaction before its rows are read."""

    complete: bool = False
    end: Event | None = None
    end_pos: int = 0
    last_ts: int = 0
    broken: bool = False  # a CRC mismatch or an undecodable event inside


@dataclass
class Txn:
    """A transaction as the walk learns it: what its record says, counted as its events come."""

    start: Event
    facts: Facts
    txn_id: str
    commit_ts: str
    xid: int | None
    first_ts: int
    event_count: int = 0
    rows: dict[str, int] = field(default_factory=lambda: {"insert": 0, "update": 0, "delete": 0})
    tables: set[str] = field(default_factory=set)
    compressed: bool = False
    broken: bool = False
    rows_query: str | None = None  # the statement whose rows are being read (ROWS_QUERY, ANNOTATE_ROWS)
    segment_count: int = 1

    @property
    def presentable(self) -> bool:
        """Whether its row changes may be presented: it committed whole."""
        return self.facts.complete and not (self.broken or self.facts.broken)

    def count(self, schema: str, table: str, op: str, n: int) -> None:
        self.tables.add(f"{schema}.{table}")
        self.rows[op] += n


def open_txn(start: Event, facts: Facts, binlog_file: str) -> Txn:
    """A transaction opened by `start`, stamped with its commit facts."""
    g = start.gtid
    txn_id = (g.gtid if g else None) or derived_txn_id(start.frame.server_id, binlog_file, start.frame.pos)
    end = facts.end
    if g and g.immediate_commit_ts:
        commit_ts = ts_from_micros(g.immediate_commit_ts)
    elif end is not None:
        commit_ts = ts_from_seconds(end.frame.timestamp)
    else:
        commit_ts = ts_from_seconds(facts.last_ts or start.frame.timestamp)
    xid = None
    if end is not None:
        xid = end.xid if end.xid is not None else (end.query.ddl_xid if end.query else None)
    return Txn(start, facts, txn_id, commit_ts, xid, first_ts=start.frame.timestamp)


def transaction_record(txn: Txn, *, end_pos: int, source: str, binlog_file: str, cut_short: bool = False
                       ) -> tuple[TransactionRecord, AnomalyRecord | None]:
    """The transaction's record, and its LENGTH_MISMATCH anomaly if any. `cut_short`: the walk
    could not follow it to its end (an invalid transition, a truncated file)."""
    if cut_short:
        kind, outcome, end_event = "dml", "incomplete", None
    else:
        kind, outcome, end_event = classify_end(txn.start, txn.facts.end)
        if txn.broken or txn.facts.broken:
            outcome = "incomplete"
    synthetic = end_event == "SELF_CONTAINED"
    g = txn.start.gtid
    start_pos = txn.start.frame.pos
    length = g.transaction_length if g and g.transaction_length else None
    end = txn.facts.end
    xa_xid = None
    if end is not None and end.xa is not None:
        xa_xid = end.xa.xid
    elif end is not None and end.query is not None and kind in ("xa_commit", "xa_rollback"):
        xa_xid = parse_xa_xid(end.query.text)
    elif g is not None and g.xa_xid:
        xa_xid = g.xa_xid
    rows = txn.rows
    rec: TransactionRecord = {
        "record": "transaction", "txn_id": txn.txn_id, "gtid": g.gtid if g else None,
        "source": source, "server_id": txn.start.frame.server_id,
        "binlog_file": binlog_file, "start_pos": start_pos, "end_pos": end_pos,
        "transaction_length": length, "kind": kind, "outcome": outcome,
        "end_event": end_event, "synthetic_boundary": synthetic, "xid": txn.xid,
        "xa_xid": xa_xid, "commit_ts": txn.commit_ts,
        "original_commit_ts": _original_ts(g, txn.commit_ts),
        "first_event_ts": ts_from_seconds(txn.first_ts),
        "last_committed": g.last_committed if g else None,
        "sequence_number": g.sequence_number if g else None,
        "compressed": txn.compressed, "event_count": txn.event_count,
        "row_count": rows["insert"] + rows["update"] + rows["delete"],
        "rows_inserted": rows["insert"], "rows_updated": rows["update"],
        "rows_deleted": rows["delete"], "tables": sorted(txn.tables),
        "statement": end.query.text if synthetic and end and end.query else None,
        "segment_count": txn.segment_count,
    }
    mismatch = None
    if length and outcome != "incomplete" and length != end_pos - start_pos:
        mismatch = anomaly(source, binlog_file, start_pos, end_pos, code="LENGTH_MISMATCH",
                           detail=f"{binlog_file}:{start_pos}: transaction_length {length} but the "
                                  f"transaction spans {end_pos - start_pos} bytes")
    return rec, mismatch


def _original_ts(g, commit_ts: str) -> str | None:
    """The original commit time's text; the commit time's own where they are the same instant
    (a transaction the server itself committed: most)."""
    if not (g and g.original_commit_ts):
        return None
    return commit_ts if g.original_commit_ts == g.immediate_commit_ts else ts_from_micros(g.original_commit_ts)


def classify_end(start: Event, end: Event | None) -> tuple[str, str, str | None]:
    """kind, outcome, end_event of a transaction from the event that ended it."""
    if end is None:
        return "dml", "incomplete", None
    t = end.frame.type
    if t == c.XID_EVENT:
        return "dml", "committed", "XID"
    if t == c.XA_PREPARE_LOG_EVENT:
        if end.xa is not None and end.xa.one_phase:
            return "dml", "committed", "XA_PREPARE"
        return "xa_prepare", "prepared", "XA_PREPARE"
    if t in c.ROWS_EVENTS:  # rows with no BEGIN around them (MySQL 5.1 NDB / pre-GA)
        return "dml", "committed", "SELF_CONTAINED"
    if end.query is None:  # a LOAD DATA's last event, or an opaque one
        return "dml" if t in c.LOAD_DATA_EVENTS else "ddl", "committed", "SELF_CONTAINED"
    text = end.query.text.lstrip().upper()
    if end.role == "xa_complete":
        if text[2:].lstrip().startswith("COMMIT"):
            return "xa_commit", "committed", "QUERY_XA_COMMIT"
        return "xa_rollback", "rolled_back", "QUERY_XA_ROLLBACK"
    if end.role == "end":
        if text.startswith("COMMIT"):
            return "dml", "committed", "QUERY_COMMIT"
        if text.startswith("ROLLBACK"):
            return "dml", "rolled_back", "QUERY_ROLLBACK"
        return "xa_prepare", "prepared", "XA_PREPARE"  # MariaDB's QUERY 'XA PREPARE'
    # a statement that changes rows logged with no BEGIN around it (a non-transactional table's,
    # MySQL 5.0's autocommit ones) is still `dml`
    return "dml" if DML_RE.match(end.query.text) else "ddl", "committed", "SELF_CONTAINED"
