"""The committed real-server binlogs (tests/data) scan to exactly their ground truth, and agree
with the servers' own `mysqlbinlog -vv --base64-output=DECODE-ROWS` on transaction and row counts."""

from __future__ import annotations

import json

import pytest

from tests.conftest import require
from tests.support.scanning import DATA, scan
from tests.support.truth import compare, mysqlbinlog_rows, mysqlbinlog_transactions, scanned_rows

FLAVORS = ["mysql", "mariadb"]


def load(flavor):
    d = DATA / flavor
    require((d / "ground_truth.json").is_file(), f"tests/data/{flavor}")
    truth = json.loads((d / "ground_truth.json").read_text())
    files = sorted(d.glob("binlog.[0-9]*"))
    return truth, files, (d / "mysqlbinlog.txt").read_text(errors="replace")


@pytest.mark.parametrize("flavor", FLAVORS)
def test_scan_equals_ground_truth(flavor):
    truth, files, _ = load(flavor)
    assert compare(scan(files, rows=True), truth) == []


@pytest.mark.parametrize("flavor", FLAVORS)
def test_scan_agrees_with_mysqlbinlog(flavor):
    truth, files, decoded = load(flavor)
    out = scan(files, rows=True)
    assert scanned_rows(out["row_change"]) == mysqlbinlog_rows(decoded)
    assert len(out["transaction"]) == mysqlbinlog_transactions(decoded, flavor)


@pytest.mark.parametrize("flavor", FLAVORS)
def test_small_segments_give_the_same_rows(flavor):
    _, files, _ = load(flavor)
    whole = scan(files, rows=True)
    cut = scan(files, rows=True, segment_rows=3)
    strip = ("segment_id", "end_segment")
    assert [{k: v for k, v in r.items() if k not in strip} for r in cut["row_change"]] == \
        [{k: v for k, v in r.items() if k not in strip} for r in whole["row_change"]]
    for t in cut["transaction"]:
        segs = [r for r in cut["row_change"] if r["txn_id"] == t["txn_id"]]
        if not segs:
            continue
        ids = [r["segment_id"] for r in segs]
        assert ids == sorted(ids) and ids[0] == 1 and ids[-1] == t["segment_count"]
        assert [r["end_segment"] for r in segs] == [i == t["segment_count"] for i in ids]
        assert [r["seq"] for r in segs] == list(range(len(segs)))
