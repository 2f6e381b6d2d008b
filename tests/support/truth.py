"""Compare `binlake scan --rows` output with a workload's ground truth and with mysqlbinlog."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

OPS = ("insert", "update", "delete")


def rows_by_table(row_changes: list[dict]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for r in row_changes:
        ops = out.setdefault(f"{r['schema']}.{r['table']}", dict.fromkeys(OPS, 0))
        ops[r["op"]] += 1
    return out


def compare(scanned: dict[str, list[dict]], truth: dict) -> list[str]:
    """Every difference between the scan and the ground truth, as readable lines."""
    problems: list[str] = []
    txns = scanned["transaction"]
    by_place = {(t["binlog_file"], t["start_pos"]): t for t in txns}
    rows_of: dict[str, list[dict]] = {}
    for r in scanned["row_change"]:
        rows_of.setdefault(r["txn_id"], []).append(r)
    if scanned["anomaly"]:
        problems += [f"anomaly: {a['detail']}" for a in scanned["anomaly"]]
    expected = truth["transactions"]
    if len(txns) != len(expected):
        problems.append(f"{len(txns)} transactions scanned, ground truth has {len(expected)}")
    for e in expected:
        where = f"{e['binlog_file']}:{e['start_pos']} ({e['label']})"
        t = by_place.get((e["binlog_file"], e["start_pos"]))
        if t is None:
            problems.append(f"{where}: no transaction starts there")
            continue
        for key in ("gtid", "kind", "outcome", "end_event", "xa_xid", "compressed", "end_pos"):
            if t[key] != e[key]:
                problems.append(f"{where}: {key} {t[key]!r}, expected {e[key]!r}")
        if (t["xid"] is not None) != e["has_xid"]:
            problems.append(f"{where}: xid {t['xid']!r}, expected has_xid={e['has_xid']}")
        if e["kind"] == "ddl" and e.get("statement") and t["statement"] != e["statement"]:
            problems.append(f"{where}: statement {t['statement']!r}, expected {e['statement']!r}")
        got_rows = rows_by_table(rows_of.get(t["txn_id"], []))
        want_rows = {k: v for k, v in e["rows"].items() if any(v.values())}
        if got_rows != want_rows:
            problems.append(f"{where}: rows {got_rows}, expected {want_rows}")
        counts = {op: sum(v[op] for v in want_rows.values()) for op in OPS}
        if (t["rows_inserted"], t["rows_updated"], t["rows_deleted"]) != tuple(counts.values()):
            problems.append(f"{where}: row counts {t['rows_inserted'], t['rows_updated'], t['rows_deleted']}")
        for i, want in enumerate(e.get("row_values", [])):
            got = [r for r in rows_of.get(t["txn_id"], []) if f"{r['schema']}.{r['table']}" == want["table"]]
            if i >= len(got):
                problems.append(f"{where}: row value {i} missing")
                continue
            g = got[i]
            for key in ("op", "before", "after"):
                if g[key] != want[key]:
                    problems.append(f"{where}: row {i} {key} {g[key]!r}, expected {want[key]!r}")
    return problems


_ROW_RE = re.compile(r"^### (INSERT INTO|UPDATE|DELETE FROM) `([^`]+)`\.`([^`]+)`", re.M)
_OP = {"INSERT INTO": "insert", "UPDATE": "update", "DELETE FROM": "delete"}


def mysqlbinlog_rows(text: str) -> Counter:
    """(db.table, op) -> rows, from `mysqlbinlog -vv --base64-output=DECODE-ROWS` output."""
    return Counter((f"{m[2]}.{m[3]}", _OP[m[1]]) for m in _ROW_RE.finditer(text))


def mysqlbinlog_transactions(text: str, flavor: str) -> int:
    """Transactions mysqlbinlog shows: one GTID (or ANONYMOUS) event each."""
    if flavor == "mysql":
        return len(re.findall(r"^SET @@SESSION\.GTID_NEXT= '(?!AUTOMATIC)", text, re.M))
    return len(re.findall(r"^#\d{6} [ \d:]+ server id \d+ +end_log_pos \d+ .*\bGTID \d+-\d+-\d+",
                          text, re.M))


def scanned_rows(row_changes: list[dict]) -> Counter:
    return Counter((f"{r['schema']}.{r['table']}", r["op"]) for r in row_changes)


def samples_truth(*flavors: str) -> Counter:
    """What the bundled samples hold (of the flavors named, or both), from the workload's ground
    truth: binlake/samples/ are copies of tests/data/ (binlake/samples/README.md; checked here
    byte for byte). Counts of transactions, row changes and transactions per kind ("kind:ddl", ...)."""
    import json

    from tests.support.scanning import DATA, REPO

    out: Counter = Counter()
    for flavor, sample in (("mysql", "mysql-9.7"), ("mariadb", "mariadb-10.11")):
        if flavors and flavor not in flavors:
            continue
        for f in (REPO / "binlake" / "samples" / sample).glob("binlog.*"):
            assert f.read_bytes() == (DATA / flavor / f.name).read_bytes(), f
        for t in json.loads((DATA / flavor / "ground_truth.json").read_text())["transactions"]:
            out["transactions"] += 1
            out[f"kind:{t['kind']}"] += 1
            out["row_changes"] += sum(sum(ops.values()) for ops in t.get("rows", {}).values())
    return out


def recorded_spans(path: Path) -> list[tuple[int, int]]:
    """(start_pos, end_pos) of each transaction of a tests/data binlog file, as the workload that
    wrote it recorded them (the server's positions before and after each one)."""
    truth = json.loads((path.parent / "ground_truth.json").read_text(encoding="utf-8"))
    return [(t["start_pos"], t["end_pos"]) for t in truth["transactions"] if t["binlog_file"] == path.name]
