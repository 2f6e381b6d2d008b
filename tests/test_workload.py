"""The recorded test data is right: ground_truth.json against the servers' own mysqlbinlog output.

No binlake code is used here. `tests/data/<flavor>/mysqlbinlog.txt` (the server's own
`mysqlbinlog -vv --base64-output=DECODE-ROWS`) is split into transactions at each GTID event;
each ground-truth transaction must match the next one on file and positions, GTID, row counts
per table and operation, ending event, xid, XA xid, compression and DDL text; and the ground
truth must cover every feature the workload promises.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import require

DATA = Path(__file__).resolve().parent / "data"
FLAVORS = ("mysql", "mariadb")

_HEADER = re.compile(r"^#\d{6} +\d+:\d\d:\d\d server id \d+ +end_log_pos (\d+)"
                     r"(?: CRC32 0x[0-9a-f]+)?\s+(.*)$")
_ROW = re.compile(r"^### (INSERT INTO|UPDATE|DELETE FROM) `([^`]+)`\.`([^`]+)`")
_OPS = {"INSERT INTO": "insert", "UPDATE": "update", "DELETE FROM": "delete"}
_GTID = ("GTID", "Anonymous_GTID", "Gtid_tagged")
_OUTSIDE = ("Start:", "Previous-GTIDs", "Rotate to", "Stop", "Gtid list", "Binlog checkpoint")
_COMPRESSED = re.compile(r"^(Transaction_Payload|Query_compressed|\w+_compressed_rows)")
_XID = re.compile(r"(X'[0-9a-f]*',X'[0-9a-f]*',\d+)")


def load(flavor: str) -> tuple[dict, str, list[str]]:
    d = DATA / flavor
    require((d / "ground_truth.json").is_file(), f"test data for {flavor} ({d})")
    truth = json.loads((d / "ground_truth.json").read_text(encoding="utf-8"))
    text = (d / "mysqlbinlog.txt").read_text(encoding="utf-8", errors="replace")
    files = sorted(p.name for p in d.glob("binlog.[0-9]*"))
    return truth, text, files


# ---------------------------------------------------------------- reading mysqlbinlog output

def events(text: str, files: list[str]) -> list[dict]:
    """The events mysqlbinlog printed, with the file they are in and their start/end offsets.

    An event starts where the previous one of its file ended (mysqlbinlog's `# at` lines are not
    always next to their header); events inside a TRANSACTION_PAYLOAD are marked `inner`.
    """
    out: list[dict] = []
    file_no, prev_end, inner = -1, 4, False
    for line in text.splitlines():
        h = _HEADER.match(line)
        if h:
            end, head = int(h.group(1)), h.group(2)
            if head.startswith("Start:"):
                file_no, prev_end = file_no + 1, 4
            ev = {"file": files[file_no], "start": prev_end, "end": end, "head": head,
                  "body": [], "inner": inner}
            if not inner:
                prev_end = end
            out.append(ev)
        elif line.startswith("# Start of compressed events"):
            inner = True
        elif line.startswith("# End of compressed events"):
            inner = False
        elif out and not line.startswith("# at "):
            out[-1]["body"].append(line)
    return out


def statement(ev: dict) -> str:
    """The SQL text of a QUERY event: its body after the SET preamble, up to the delimiter."""
    stmt: list[str] = []
    for ln in ev["body"]:
        if not stmt and (ln.startswith(("SET ", "/*!", "/*M!", "use ", "#")) or not ln):
            continue
        if ln.endswith("/*!*/;"):
            stmt.append(ln.removesuffix("/*!*/;"))
            break
        stmt.append(ln)
    return "\n".join(stmt).strip()


def transactions(evs: list[dict]) -> list[dict]:
    """Group events into transactions (each opens at a GTID event) and sum each one up."""
    groups: list[list[dict]] = []
    open_ = False
    for ev in evs:
        if ev["head"].startswith(_GTID) and not ev["inner"]:
            groups.append([ev])
            open_ = True
        elif ev["head"].startswith(_OUTSIDE):
            open_ = False
        elif open_:
            groups[-1].append(ev)
        else:
            raise AssertionError(f"event outside any transaction: {ev['file']}:{ev['start']} "
                                 f"{ev['head']}")
    return [summary(g) for g in groups]


def summary(evs: list[dict]) -> dict:
    g, last = evs[0], evs[-1]
    rows: dict[str, Counter] = {}
    for ev in evs:
        printed = [m for m in map(_ROW.match, ev["body"]) if m]
        # MySQL 9.7's mysqlbinlog stops printing a rows event at a GEOMETRY value: the workload
        # writes such rows one per event, so the count stays exact.
        if any(ln.startswith("###   @") and "!! Don't know how to handle" in ln
               for ln in ev["body"]):
            assert len(printed) == 1, f"{ev['file']}:{ev['start']}: cut-off event of several rows"
        for m in printed:
            rows.setdefault(f"{m.group(2)}.{m.group(3)}", Counter())[_OPS[m.group(1)]] += 1
    gtid = None
    m = re.match(r"GTID (\d+-\d+-\d+)", g["head"])
    if m:
        gtid = m.group(1)
    for ln in g["body"]:
        m = re.match(r"SET @@SESSION.GTID_NEXT= '([^']+)'", ln)
        if m and m.group(1) != "ANONYMOUS":
            gtid = m.group(1)
    head = last["head"]
    sql = statement(last) if head.startswith(("Query", "XA PREPARE", "XID =")) else ""
    if head.startswith("Xid ="):
        end_event = "XID"
    elif head.startswith(("XA PREPARE", "XID =")):
        end_event = "XA_PREPARE"
    elif sql == "COMMIT":
        end_event = "QUERY_COMMIT"
    elif sql == "ROLLBACK":
        end_event = "QUERY_ROLLBACK"
    elif sql.startswith("XA COMMIT"):
        end_event = "QUERY_XA_COMMIT"
    elif sql.startswith("XA ROLLBACK"):
        end_event = "QUERY_XA_ROLLBACK"
    else:
        end_event = "SELF_CONTAINED"
    m = _XID.search(sql)
    has_xid = any(e["head"].startswith("Xid =") for e in evs) or (
        end_event == "SELF_CONTAINED" and bool(re.search(r"\b[Xx]id ?= ?[1-9]", head)))
    return {
        "binlog_file": g["file"], "start_pos": g["start"],
        "end_pos": max(e["end"] for e in evs if not e["inner"]),
        "gtid": gtid, "end_event": end_event, "has_xid": has_xid,
        "xa_xid": m.group(1) if m else None,
        "compressed": any(_COMPRESSED.match(e["head"]) for e in evs),
        "statement": sql if end_event == "SELF_CONTAINED" else None,
        "rows": {t: dict(c) for t, c in rows.items()},
    }


def _nonzero(rows: dict) -> dict:
    return {t: {op: n for op, n in ops.items() if n} for t, ops in rows.items() if any(ops.values())}


# ---------------------------------------------------------------- the tests

@pytest.mark.parametrize("flavor", FLAVORS)
def test_ground_truth_matches_mysqlbinlog(flavor):
    truth, text, files = load(flavor)
    seen = transactions(events(text, files))
    want = truth["transactions"]
    assert len(seen) == len(want)
    for s, w in zip(seen, want, strict=True):
        where = f"{w['binlog_file']}:{w['start_pos']} {w['label']}"
        for key in ("binlog_file", "start_pos", "end_pos", "gtid", "end_event", "has_xid",
                    "xa_xid", "compressed", "statement"):
            assert s[key] == w[key], f"{where}: {key} is {s[key]!r} in mysqlbinlog, " \
                                     f"{w[key]!r} in the ground truth"
        assert s["rows"] == _nonzero(w["rows"]), where


@pytest.mark.parametrize("flavor", FLAVORS)
def test_gtid_and_row_totals_agree(flavor):
    """The same check as a reader would make it: GTID events and row lines, counted whole."""
    truth, text, _ = load(flavor)
    txns = truth["transactions"]
    if flavor == "mysql":
        gtid_events = len(re.findall(r"^SET @@SESSION\.GTID_NEXT= '(?!AUTOMATIC)", text, re.M))
    else:
        gtid_events = len(re.findall(r"^#\d{6} .* end_log_pos \d+ .*\tGTID \d+-\d+-\d+", text,
                                     re.M))
    assert gtid_events == len(txns)
    seen = Counter()
    for m in re.finditer(r"^### (INSERT INTO|UPDATE|DELETE FROM) `([^`]+)`\.`([^`]+)`", text,
                         re.M):
        seen[(f"{m.group(2)}.{m.group(3)}", _OPS[m.group(1)])] += 1
    want = Counter()
    for t in txns:
        for table, ops in t["rows"].items():
            for op, n in ops.items():
                want[(table, op)] += n
    assert seen == +want


@pytest.mark.parametrize("flavor", FLAVORS)
def test_ground_truth_covers_the_workload(flavor):
    truth, _, _ = load(flavor)
    txns = truth["transactions"]
    kinds = Counter(t["kind"] for t in txns)
    ends = Counter(t["end_event"] for t in txns)
    for kind in ("dml", "ddl", "xa_prepare", "xa_commit", "xa_rollback"):
        assert kinds[kind], kind
    for end in ("XID", "QUERY_COMMIT", "XA_PREPARE", "QUERY_XA_COMMIT", "QUERY_XA_ROLLBACK",
                "SELF_CONTAINED"):
        assert ends[end], end
    assert any(t["compressed"] for t in txns)
    assert any(not t["has_xid"] and t["end_event"] == "QUERY_COMMIT" for t in txns)
    ops = {op for t in txns for o in t["rows"].values() for op, n in o.items() if n}
    assert ops == {"insert", "update", "delete"}
    # statement-format transactions: committed, with no row events
    assert any(t["kind"] == "dml" and not t["rows"] and t["end_event"] == "XID" for t in txns)
    # the all-types table: inserts, updates and deletes with typed values, NULLs included
    values = [v for t in txns for v in t.get("row_values", [])]
    assert {v["op"] for v in values} == {"insert", "update", "delete"}
    assert any(v["after"] and v["after"]["ti"] is None for v in values)
    # CREATE TABLE ... SELECT is a dml transaction with rows
    assert any(t["kind"] == "dml" and "kv_copy" in json.dumps(t["rows"]) for t in txns)
    if flavor == "mysql":
        assert any(t["gtid"] and t["gtid"].count(":") == 2 for t in txns), "tagged GTID"
        assert any(t["gtid"] is None for t in txns), "ANONYMOUS transaction"
        one_phase = [t for t in txns if t["kind"] == "dml" and t["end_event"] == "XA_PREPARE"]
        assert one_phase and all(t["xa_xid"] and t["outcome"] == "committed" for t in one_phase)
    else:
        domains = {t["gtid"].split("-")[0] for t in txns}
        assert len(domains) >= 3
        assert ends["QUERY_ROLLBACK"]
        assert any(t["outcome"] == "rolled_back" and t["end_event"] == "QUERY_ROLLBACK"
                   for t in txns)
        assert any(t["compressed"] and t["kind"] == "ddl" for t in txns)
    outcomes = {(t["kind"], t["outcome"]) for t in txns}
    assert ("xa_prepare", "prepared") in outcomes and ("xa_rollback", "rolled_back") in outcomes
