"""Split planning and split tasks without Spark: cutting an archive anywhere the planner
may cut it gives exactly the records of one reader over whole files (`binlake scan`)."""

from __future__ import annotations

import mmap
import shutil
from pathlib import Path

import pytest

from binlake.assemble.lane import RowRun
from binlake.assemble.outputs import Anomaly, RowBlocks, RowChanges, Transaction
from binlake.assemble.walk import Options
from binlake.binlog import framing
from binlake.binlog.framing import BinlogReader
from binlake.errors import BinlakeError
from binlake.splits.local import assemble_locally
from binlake.splits.plan import plan
from binlake.splits.tasks import run_split
from binlake.splits.times import parse_time
from tests.support.lake import differences, scanned
from tests.support.scanning import DATA, archived_data, headers, scan

EVERYTHING = ("2000-01-01", "2100-01-01")


@pytest.fixture(params=["mysql", "mariadb"])
def archived(request, tmp_path):
    return archived_data(request.param, tmp_path)


def run_local(store, split_bytes, start=EVERYTHING[0], end=EVERYTHING[1], **opts):
    out = {"transaction": [], "row_change": [], "anomaly": []}
    for item in assemble_locally(plan(store, None, start, end, split_bytes), Options(**opts)):
        match item:
            case Transaction(record=rec):
                out["transaction"].append(rec)
            case Anomaly(record=rec):
                out["anomaly"].append(rec)
            case RowChanges(records=recs):
                out["row_change"] += recs
    return out


def reference(flavor, files, **opts):
    return scanned(scan(sorted(files.glob("binlog.*")), rows=True, source=flavor, **opts))


@pytest.mark.parametrize("split_bytes", [1, 300, 2_000, 10_000, 1 << 30])
def test_any_split_size_gives_the_scan(archived, split_bytes):
    flavor, store, files = archived
    got = scanned(run_local(store, split_bytes))
    assert differences(got, reference(flavor, files)) == {}


@pytest.mark.parametrize("split_bytes", [300, 1 << 30])
def test_the_facts_pass_reads_the_lanes_records_as_the_walks(archived, split_bytes):
    """Without rows, the records of the compiled skim equal the reference walk's (skim off), and the
    scan's. (The lane's records, which no longer come back as lines, reach the facts pass as columns:
    test_the_facts_task_gives_the_walks_records_and_dates.)"""
    flavor, store, files = archived
    laned = run_local(store, split_bytes, rows=False)
    assert laned == run_local(store, split_bytes, rows=False, skim=False)
    got, want = scanned(laned), reference(flavor, files)
    assert got["transactions"] == want["transactions"] and got["anomalies"] == want["anomalies"]


@pytest.mark.parametrize("split_bytes", [2_000, 1 << 30])
def test_the_facts_task_gives_the_walks_records_and_dates(archived, split_bytes):
    """The Spark job's facts task (spark.passes.facts_task, run here without Spark: the lane's
    records as columns, schema.records_run_batch) gives, row for row, what the records of the
    reference walk make (skim off: no lane), anomalies and their dates included (a byte flipped in
    the middle rows event of a file: the lane's run stops before it, the walk says what it is)."""
    import pyarrow as pa

    from binlake.spark import schema
    from binlake.spark.passes import arrow_schema, facts_task

    flavor, store, files = archived
    obj = files / "binlog.000001"
    data = bytearray(obj.read_bytes())
    rows = [h for h in headers(bytes(data)) if h[1] in (23, 24, 25, 30, 31, 32)]
    pos, _, size = rows[len(rows) // 2]
    data[pos + size - 8] ^= 0x5A  # in its row images: the CRC32 no longer matches
    obj.write_bytes(bytes(data))
    p = plan(store, None, *EVERYTHING, split_bytes)
    arrow = arrow_schema(schema.STAGED)
    splits = pa.RecordBatch.from_pylist([{"split": s.to_json()} for s in p.splits])
    got = [row for b in facts_task(Options(), None)(iter([splits])) for row in b.to_pylist()]
    want = []
    for split in p.splits:
        for item in run_split(split, Options(rows=False, skim=False)):
            kind, rec = schema.staged(item)
            want += schema.arrow_batch(arrow, kind, [schema.arrow_record(kind, rec, split.source)[kind]]).to_pylist()

    def key(row: dict) -> tuple:
        rec = row[row["kind"]]
        return row["kind"], rec.get("binlog_file") or "", rec.get("start_pos") or 0, rec.get("code") or ""

    assert sorted(got, key=key) == sorted(want, key=key)
    assert any(r["kind"] == "anomaly" for r in got) and sum(r["kind"] == "transaction" for r in got) > 20


@pytest.mark.parametrize("split_bytes", [2_000, 1 << 30])
def test_the_rows_pass_gets_the_walks_rows_from_the_lane(archived, split_bytes):
    """The Spark job's rows pass (run_split with blocks): the rows of the lane's runs, made into
    Arrow batches (schema.run_batch), are row for row the ones the reference walk's blocks make
    (skim off: no lane; schema.blocks_batch)."""
    from binlake.spark import schema
    from binlake.spark.passes import arrow_schema

    _flavor, store, _files = archived
    p = plan(store, None, *EVERYTHING, split_bytes)
    arrow = arrow_schema(schema.ROW_CHANGES)

    def rows(**opts) -> tuple[list[dict], int]:
        out, laned = [], 0
        for split in p.splits:
            for got in run_split(split, Options(**opts), columns=True):
                if isinstance(got, RowBlocks):
                    out += schema.blocks_batch(arrow, got.blocks, split.source).to_pylist()
                elif isinstance(got, RowRun):
                    out += schema.run_batch(arrow, got, split.source).to_pylist()
                    laned += got.rows
        return out, laned

    got, laned = rows()
    want, none = rows(skim=False)
    assert got == want and none == 0 and laned > 20


def test_pieces_of_big_transactions_number_rows_as_one_reader(archived):
    flavor, store, files = archived
    p = plan(store, None, *EVERYTHING, split_bytes=200)
    assert p.bigs, "the test data has transactions bigger than 200 bytes"
    # tiny segments make segment boundaries fall inside and across pieces
    got = scanned(run_local(store, 200, segment_rows=2, segment_bytes=150))
    assert differences(got, reference(flavor, files, segment_rows=2, segment_bytes=150)) == {}


def test_pages_released_behind_the_walk_change_nothing(archived, monkeypatch):
    """Readers of mapped files give the kernel back the pages they have passed (bounded RSS);
    released after every event, both the scan and the split tasks read the same records, and
    between them the releases cover each file but its first event."""
    flavor, store, files = archived
    want, whole = reference(flavor, files), scanned(run_local(store, 2_000))
    released: dict[str, list[tuple[int, int]]] = {}
    original = BinlogReader.release

    def release(self, start, end):
        released.setdefault(Path(self.name).name, []).append((start, end))
        original(self, start, end)

    monkeypatch.setattr(framing, "RELEASE_BYTES", 1)
    monkeypatch.setattr(BinlogReader, "release", release)
    for read, expected in ((lambda: reference(flavor, files), want),
                           (lambda: scanned(run_local(store, 2_000)), whole)):
        assert differences(read(), expected) == {}
        for f in files.glob("binlog.*"):
            covered = set().union(*(range(s, e) for s, e in released.pop(f.name)))
            assert min(covered) < 200 and covered == set(range(min(covered), f.stat().st_size)), f.name


def test_a_release_gives_the_pages_back(tmp_path):
    """What the process holds of a mapped file (its smaps Rss) drops to at most the last, partial
    page once a reader releases what it walked."""
    copy = tmp_path / "binlog.000001"
    shutil.copy(DATA / "mysql" / "binlog.000001", copy)
    with BinlogReader.open(copy) as reader:
        assert sum(1 for _ in reader.frames()) > 100  # 41 KiB: less than RELEASE_BYTES, nothing released yet
        assert mapped_kib(copy) >= copy.stat().st_size // 1024
        reader.release(0, reader.end)
        assert mapped_kib(copy) <= mmap.PAGESIZE // 1024


def mapped_kib(path: Path) -> int:
    """Rss of the mappings of `path` in this process, from /proc/self/smaps."""
    kib, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if line[:1].isalnum() and "-" in line.split(" ", 1)[0]:  # a mapping's header line
            inside = line.endswith(str(path))
        elif inside and line.startswith("Rss:"):
            kib += int(line.split()[1])
    return kib


@pytest.mark.parametrize("damage", ["flip", "cut"])
def test_damaged_objects_give_the_scans_anomalies(archived, damage):
    """Objects damaged after archiving: every split reports what one reader reports."""
    flavor, store, files = archived
    obj = files / "binlog.000001"
    original = obj.read_bytes()
    size = len(original)
    for at in range(size // 7, size, size // 7):
        data = bytearray(original)
        if damage == "flip":
            data[at] ^= 0x5A
        else:
            data = data[:at]
        obj.write_bytes(bytes(data))
        for split_bytes in (500, 1 << 30):
            got = run_local(store, split_bytes)
            want = scan(sorted(files.glob("binlog.*")), rows=True, source=flavor)
            assert got["anomaly"], f"{damage} at {at}: no anomaly"
            if damage == "cut":  # the job also knows the size the manifest promised
                extra = [a for a in got["anomaly"] if "its manifest says" in a["detail"]]
                assert [(a["code"], a["start_pos"], a["end_pos"]) for a in extra] == [("TRUNCATED", at, size)]
                got["anomaly"] = [a for a in got["anomaly"] if a not in extra]
            assert differences(scanned(got), scanned(want)) == {}, f"{damage} at {at}, splits of {split_bytes}"
    obj.write_bytes(original)


def test_missing_object_is_an_anomaly(archived):
    flavor, store, files = archived
    shutil.move(files / "binlog.000002", files.parent / "elsewhere")
    got = run_local(store, 1 << 30)
    missing = [a for a in got["anomaly"] if a["code"] == "MISSING_OBJECT"]
    # the whole file is missing: from its first event, right after the 4-byte magic
    assert [(a["binlog_file"], a["start_pos"]) for a in missing] == [("binlog.000002", 4)]
    assert "no such object" in missing[0]["detail"]
    assert all(t["binlog_file"] != "binlog.000002" for t in got["transaction"])
    assert any(t["binlog_file"] == "binlog.000001" for t in got["transaction"])


def test_ranges_partition_the_transactions(archived):
    """Adjacent commit-time ranges hold each transaction exactly once."""
    flavor, store, files = archived
    whole = run_local(store, 2_000)
    times = sorted({t["commit_ts"] for t in whole["transaction"]})
    assert len(times) >= 2
    cuts = [EVERYTHING[0], *sorted({times[1], times[len(times) // 2], times[-1]}), EVERYTHING[1]]
    parts = {"transaction": [], "row_change": [], "anomaly": []}
    for lo, hi in zip(cuts, cuts[1:], strict=False):
        for kind, recs in run_local(store, 2_000, lo, hi).items():
            assert all(lo <= parse_time(r["commit_ts"]) < parse_time(hi) for r in recs if kind != "anomaly")
            parts[kind] += recs
    assert differences(scanned(parts), scanned(whole)) == {}
    assert len(parts["transaction"]) == len(whole["transaction"])


def test_files_are_chosen_by_commit_time(archived):
    flavor, store, files = archived
    whole = run_local(store, 1 << 30)
    last = max(whole["transaction"], key=lambda t: t["commit_ts"])
    p = plan(store, None, last["commit_ts"], "2100-01-01")
    assert last["binlog_file"] in {f.file for f in p.files}
    assert len(p.files) < len({t["binlog_file"] for t in whole["transaction"]})
    assert plan(store, None, "2001-01-01", "2001-01-02").files == []


def test_bad_ranges_and_sources_are_refused(archived):
    flavor, store, files = archived
    with pytest.raises(BinlakeError) as e:
        plan(store, None, "2026-11-23", "2026-11-22")
    assert str(e.value) == ("empty range: start 2026-11-23T00:00:00.000000Z is not before "
                            "end 2026-11-22T00:00:00.000000Z")
    with pytest.raises(BinlakeError) as e:
        plan(store, None, "yesterday", "2026-11-22")
    assert str(e.value) == "'yesterday': not a date or time (use ISO 8601, e.g. 2026-11-22T10:00:00Z)"
    with pytest.raises(BinlakeError) as e:
        plan(store, ["nope"], *EVERYTHING)
    assert str(e.value) == f"{store}: no archived files for source 'nope' (sources here: {flavor})"


def test_a_store_without_sources_is_refused_not_read_as_empty(tmp_path):
    """A mistyped store (no directory there) or prefix (a directory with no archive in it) would
    plan nothing and the run succeed: both are refused, by name, and the reader makes nothing."""
    typo = tmp_path / "arhcive"
    with pytest.raises(BinlakeError) as e:
        plan(f"file://{typo}", None, *EVERYTHING)
    assert str(e.value) == f"file://{typo}: no such store directory"
    assert not typo.exists()
    (tmp_path / "empty").mkdir()
    with pytest.raises(BinlakeError) as e:
        plan(f"file://{tmp_path / 'empty'}", None, *EVERYTHING)
    assert str(e.value) == (f"file://{tmp_path / 'empty'}: no archived source in this store (`binlake archive` "
                            "writes them; is the store's path or prefix right?)")


def test_the_driver_keeps_its_heap_collectable(spark):
    """A range run in the driver (Job.in_driver) runs the task functions there: they tune a
    Python worker's heap (frozen for PySpark's per-task collections), never the driver's, whose
    garbage must stay collectable. The oracle is gc's own count of frozen objects, in a real
    Spark task (which must freeze) and in the driver (which must not)."""
    import gc

    from binlake.spark.passes import tune_worker_heap

    def in_a_task(_):
        import gc

        from binlake.spark.passes import tune_worker_heap

        gc.unfreeze()  # what an earlier task of a reused worker froze does not count
        tune_worker_heap()
        return gc.get_freeze_count()

    assert spark.sparkContext.parallelize([0], 1).map(in_a_task).collect()[0] > 0
    before = gc.get_freeze_count()
    tune_worker_heap()
    assert gc.get_freeze_count() == before
