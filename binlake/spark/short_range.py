"""A short range's reads for `binlake tables` (binlake.spark.range_reads), with delta-rs into the
driver's Arrow instead of Spark's jobs: the source's transactions of the range and its row changes
(an hour's: a few thousand of each) are two small reads, and what Spark computed from them (the
row changes to apply, the range's ends, the tables written by statement) is a pass over them in
the driver. The same rules as Spark's reads of a longer range (RangeReads), which this replaces
only where the range holds at most `most` transactions and as many row changes.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from binlake.spark.warehouse import RunRange
from binlake.tables import delta_reads
from binlake.tables import order as orders
from binlake.tables.baselines import Baseline
from binlake.tables.plan import Statement, Written

_TXNS = "txn_id, binlog_file, start_pos, end_pos, kind, outcome, xa_xid, commit_ts, tables"
_ROWS = 'schema, "table", op, before, after, seq, txn_id, binlog_file'
# The row changes to apply, as RangeReads.changes gives them
CHANGES = ["schema", "table", "op", "before", "after", "seq", "order", "txn", "at"]


@dataclass
class ShortRange:
    """The range's transactions (their places: `order`, and `at`, the commit time as text) and all
    its row changes."""

    warehouse: str
    source: str
    txns: pa.Table
    rows: pa.Table

    @classmethod
    def read(cls, warehouse: str, source: str, span: tuple[str, str], most: int) -> ShortRange | None:
        """The range's reads, or None where it holds more than `most` transactions or row changes."""
        where = RunRange(*span, (source,)).condition()
        txns = delta_reads.read(warehouse, "transactions", f"SELECT {_TXNS} FROM t WHERE {where} LIMIT {most + 1}")
        if txns.num_rows > most:
            return None
        rows = delta_reads.read(warehouse, "row_changes", f"SELECT {_ROWS} FROM t WHERE {where} LIMIT {most + 1}")
        if rows.num_rows > most:
            return None
        places = [orders.order(f, e) for f, e in zip(txns["binlog_file"].to_pylist(), txns["end_pos"].to_pylist(),
                                                      strict=True)]
        txns = txns.append_column("order", pa.array(places, pa.string())).append_column(
            "at", delta_reads.iso(txns["commit_ts"]))
        return cls(warehouse, source, txns, rows)

    def changes(self) -> pa.Table:
        """The row changes to apply, with their transaction's place: committed dml's, and the rows
        of each XA transaction committed in the range (its prepare's, at its XA COMMIT)."""
        t = self.txns
        dml = t.filter(pc.and_(pc.equal(t["kind"], "dml"), pc.equal(t["outcome"], "committed")))
        rows = self.rows.join(dml.select(["txn_id", "binlog_file", "order", "at"]), ["txn_id", "binlog_file"],
                              join_type="inner")
        parts = [rows.rename_columns({"txn_id": "txn"}).select(CHANGES)]
        xa = self._xa()
        if xa is not None:
            parts.append(xa)
        return pa.concat_tables(parts)

    def _xa(self) -> pa.Table | None:
        """The rows of the prepares of the range's XA COMMITs, read where the prepares logged them,
        at their commits' places."""
        t = self.txns
        commits = t.filter(pc.and_(pc.equal(t["kind"], "xa_commit"), pc.equal(t["outcome"], "committed"))).select(
            ["xa_xid", "order", "txn_id", "at"]).to_pylist()
        if not commits:
            return None
        xids = ", ".join(delta_reads.text(x) for x in sorted({c["xa_xid"] for c in commits}))
        prepares = delta_reads.read(
            self.warehouse, "transactions", f"SELECT xa_xid, binlog_file, end_pos, txn_id, commit_ts FROM t WHERE "
            f"source = {delta_reads.text(self.source)} AND kind = 'xa_prepare' AND xa_xid IN ({xids})")
        prepares = prepares.append_column("at", delta_reads.iso(prepares["commit_ts"])).to_pylist()
        chosen = []
        for c in commits:
            p = orders.prepare_of(c["order"], [(orders.order(p["binlog_file"], p["end_pos"]), p) for p in prepares
                                               if p["xa_xid"] == c["xa_xid"]])
            if p is not None:
                chosen.append({"txn_id": p["txn_id"], "binlog_file": p["binlog_file"], "p_at": p["at"],
                               "order": c["order"], "txn": c["txn_id"], "at": c["at"]})
        if not chosen:
            return None
        at = " OR ".join(f"({RunRange.instant(c['p_at'], (self.source,)).condition()})" for c in chosen)
        rows = delta_reads.read(self.warehouse, "row_changes", f"SELECT {_ROWS} FROM t WHERE {at}")
        chosen_rows = pa.Table.from_pylist(chosen).drop_columns(["p_at"])
        return rows.join(chosen_rows, ["txn_id", "binlog_file"], join_type="inner").select(CHANGES)

    def ends(self) -> tuple[str | None, dict[str, Any] | None]:
        """The order of the range's first committed transaction, and its last transaction (order
        and txn_id)."""
        t = self.txns
        committed = t.filter(pc.equal(t["outcome"], "committed"))["order"]
        first = pc.min(committed).as_py() if len(committed) else None
        if not t.num_rows:
            return first, None
        last = pc.index(t["order"], pc.max(t["order"])).as_py()
        return first, {"order": t["order"][last].as_py(), "txn_id": t["txn_id"][last].as_py()}

    def written(self, *, statements: list[Statement], baselines: list[Baseline],
                by_statement: list[tuple[str, int, str]]) -> list[Written]:
        """RangeReads.written over the range's Arrow: the tables its transactions (any but an
        incomplete one) wrote by statement, named in their `tables` with no row change of their own
        there, or by a DML statement they hold (`by_statement`: its file, position, "db.table");
        of each table, the first after each table statement or baseline point."""
        r = self.rows
        names = [f"{s}.{t}" for s, t in zip(r["schema"].to_pylist(), r["table"].to_pylist(), strict=True)]
        own = set(zip(r["txn_id"].to_pylist(), r["binlog_file"].to_pylist(), names, strict=True))
        live = [t for t in self.txns.select(["txn_id", "binlog_file", "start_pos", "end_pos", "outcome", "tables",
                                             "order", "at"]).to_pylist() if t["outcome"] != "incomplete"]
        found = [(name, t) for t in live for name in t["tables"] or ()
                 if (t["txn_id"], t["binlog_file"], name) not in own]
        found += holding(live, by_statement)
        marks = sorted({st.order for st in statements} | {bt.complete for b in baselines for bt in b.tables.values()})
        firsts: dict[tuple[str, int], dict[str, Any]] = {}
        for name, t in found:
            after = bisect.bisect_left(marks, t["order"])  # the marks before it
            if (name, after) not in firsts or t["order"] < firsts[(name, after)]["order"]:
                firsts[(name, after)] = t
        return [Written(t["order"], t["at"], name) for (name, _), t in firsts.items()]


T = TypeVar("T")


def holding(txns: Iterable[dict[str, Any]], statements: Iterable[tuple[str, int, T]]) -> list[tuple[T, dict[str, Any]]]:
    """Each statement (its file, position, a value) with the transaction of `txns` (`binlog_file`,
    `start_pos`, `end_pos`, …) holding it: the last to start at or before it in its file, if it ends
    after it (a file's transactions do not overlap: the one whose bytes hold the position; a
    transaction holds a statement at its own start, a lone Query event). A statement none holds is
    left out."""
    by_file: dict[str, list[dict[str, Any]]] = {}
    for t in sorted(txns, key=lambda t: t["start_pos"]):
        by_file.setdefault(t["binlog_file"], []).append(t)
    starts = {f: [t["start_pos"] for t in ts] for f, ts in by_file.items()}
    out = []
    for file, pos, value in statements:
        i = bisect.bisect_right(starts.get(file, []), pos) - 1
        if i >= 0 and pos < by_file[file][i]["end_pos"]:
            out.append((value, by_file[file][i]))
    return out
