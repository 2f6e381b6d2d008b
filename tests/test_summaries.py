"""The manifests' summaries: a run reads the transaction indexes of the files it touches only,
and plans alike whether the summaries are there, missing or behind."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from binlake.archive import summaries
from binlake.archive.keys import summaries_key
from binlake.archive.run import archive
from binlake.archive.sources import DirSource
from binlake.archive.stores import open_store
from binlake.splits import plan as splits
from binlake.splits.plan import archived_until, plan
from tests.support.scanning import DATA, archived_data

EVERYTHING = ("2000-01-01", "2100-01-01")


@pytest.fixture(params=["mysql", "mariadb"])
def archived(request, tmp_path):
    """tests/data's binlogs of a flavor archived: (flavor, store URL, the source's directory)."""
    flavor, store, binlogs = archived_data(request.param, tmp_path)
    return flavor, store, binlogs.parent


def _manifests(root) -> dict[str, dict]:
    """The manifests as the archive wrote them, by key: the oracle of their summaries."""
    return {f"{root.name}/manifests/{p.name}": json.loads(p.read_text())
            for p in sorted((root / "manifests").glob("*.json"))}


def test_the_archive_keeps_every_manifest_without_its_index(archived):
    flavor, _, root = archived
    written = _manifests(root)
    kept = json.loads((root / "summaries.json").read_text())["manifests"]
    assert len(written) >= 2 and sorted(kept) == sorted(written)  # mariadb 2 files, mysql 8 (tests/data)
    for key, m in written.items():
        s = dict(kept[key])
        first = s.pop("first_commit_ts")
        assert first == (m["transactions"][0][3] if m["transactions"] else None)
        assert s == {k: v for k, v in m.items() if k not in ("transactions", "incomplete")}


def test_a_plan_reads_the_index_of_its_files_only(archived, monkeypatch):
    # one file's commit times (its manifest's) make the range: the other manifests are not read
    flavor, store, root = archived
    written = _manifests(root)
    key, m = next((k, m) for k, m in written.items() if m["transactions"])
    read: list[str] = []

    class Counting:
        def __init__(self, inner) -> None:
            self.inner = inner

        def get(self, k: str) -> bytes:
            read.append(k)
            return self.inner.get(k)

        def __getattr__(self, name: str):
            return getattr(self.inner, name)

    monkeypatch.setattr(splits, "open_store", lambda url: Counting(open_store(url)))
    end = dt.datetime.fromisoformat(m["max_commit_ts"]) + dt.timedelta(microseconds=1)  # just past its last
    p = plan(store, None, m["min_commit_ts"], end.isoformat())
    chosen = {f.file for f in p.files}
    assert m["name"] in chosen
    assert [k for k in read if "/manifests/" in k] == [f"{flavor}/manifests/{n}.json" for n in sorted(chosen)]
    assert sum(f.transaction_count for f in p.files if f.file == m["name"]) == len(m["transactions"])


def test_plans_alike_with_the_summaries_missing_or_behind(archived):
    flavor, store, root = archived
    whole = plan(store, None, *EVERYTHING, 2_000)
    path = root / "summaries.json"
    kept = json.loads(path.read_text())
    lacking = dict(kept["manifests"])
    lacking.pop(sorted(lacking)[1])  # a run stopped between a manifest and the summaries
    path.write_text(json.dumps({**kept, "manifests": lacking}))
    assert plan(store, None, *EVERYTHING, 2_000) == whole
    path.unlink()  # a store archived by an older binlake
    assert plan(store, None, *EVERYTHING, 2_000) == whole
    assert summaries.load(open_store(store), flavor).behind
    # the next archive run (nothing new to copy) writes them again, whole
    archive(DirSource(str(DATA / flavor)), open_store(store), flavor)
    assert json.loads(path.read_text()) == kept
    assert not summaries.load(open_store(store), flavor).behind


def test_a_manifest_gone_is_left_out(archived):
    flavor, store, root = archived

    def newest() -> str:  # the oracle: the manifests in the store
        return max(json.loads(p.read_text())["last_event_ts"] for p in (root / "manifests").glob("*.json"))

    assert archived_until(open_store(store), flavor) == newest()
    gone = max((root / "manifests").glob("*.json"), key=lambda p: json.loads(p.read_text())["last_event_ts"])
    gone.unlink()
    found = summaries.load(open_store(store), flavor)
    assert found.behind and len(found) == len(list((root / "manifests").glob("*.json")))
    assert archived_until(open_store(store), flavor) == newest()


def test_an_s3_store_plans_alike_with_or_without_summaries(s3_endpoint, tmp_path):
    # S3 says a missing object otherwise than a directory: the summaries' absence is asked first
    import boto3

    boto3.client("s3").create_bucket(Bucket="summaries")
    s3, local = "s3://summaries/archive", f"file://{tmp_path}/store"
    for url in (s3, local):
        archive(DirSource(str(DATA / "mysql")), open_store(url), "mysql")
    want = plan(local, None, *EVERYTHING, 2_000)
    got = plan(s3, None, *EVERYTHING, 2_000)
    assert [(f.file, f.size, f.transaction_count) for f in got.files] == \
        [(f.file, f.size, f.transaction_count) for f in want.files]
    assert [(s.file, s.start, s.end) for s in got.splits] == [(s.file, s.start, s.end) for s in want.splits]
    open_store(s3).delete(summaries_key("mysql"))
    again = plan(s3, None, *EVERYTHING, 2_000)
    assert [(s.file, s.start, s.end) for s in again.splits] == [(s.file, s.start, s.end) for s in got.splits]


def _file(name: str, generation: int, sid: str, first: int, last: int, flavor: str = "mysql") -> dict:
    """A manifest of a file holding GTIDs sid:first..last, a transaction each (as the archive
    writes it: `gtids` the file's set, entries (offset, length, txn_id, commit_ts))."""
    return {"file": name.split("@")[0], "name": name, "generation": generation, "flavor": flavor,
            "gtids": f"{sid}:{first}-{last}",
            "transactions": [[100 * n, 50, f"{sid}:{n}", f"2026-11-26T00:00:{n:02d}Z"] for n in range(first, last + 1)]}


@pytest.mark.parametrize("flavor", ["mysql", "mariadb"])
def test_repeats_read_the_indexes_that_may_hold_the_files_gtids(flavor):
    # a failover's new server (generation 2, the same epoch) repeats the GTIDs 15..20 of b.2
    from binlake.archive.chain import repeats

    sid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    files = [_file("b.1", 1, sid, 1, 10, flavor), _file("b.2", 1, sid, 11, 20, flavor),
             _file("b.1@g0002", 2, sid, 15, 25, flavor), _file("b.2@g0002", 2, sid, 26, 30, flavor)]
    every = repeats(files)
    assert every == {"b.1@g0002": {f"{sid}:{n}": "b.2" for n in range(15, 21)}}
    asked: list[str] = []

    def whole(m: dict) -> dict:
        asked.append(m["name"])
        return m

    for wanted, read in (({"b.1@g0002"}, {"b.1@g0002", "b.2"}), ({"b.2@g0002"}, {"b.2@g0002"}),
                         ({"b.1"}, {"b.1"})):
        asked.clear()
        got = repeats(files, whole, wanted)
        assert got == {k: v for k, v in every.items() if k in wanted}
        # a MariaDB file's GTIDs (the last of each domain) cannot say which files meet: all earlier ones
        earlier = {"b.1", "b.2"} if flavor == "mariadb" and wanted != {"b.1"} else set()
        assert set(asked) == read | earlier, wanted


def test_a_manifest_written_over_is_read_again(archived):
    # the summaries name the version of each manifest they were made of: another one is read whole
    flavor, store, root = archived
    path = max((root / "manifests").glob("*.json"), key=lambda p: json.loads(p.read_text())["last_event_ts"])
    m = json.loads(path.read_text())
    m["last_event_ts"] = "2099-01-01T00:00:00.000000Z"
    path.write_text(json.dumps(m))
    found = summaries.load(open_store(store), flavor)
    assert found.behind
    assert archived_until(open_store(store), flavor) == "2099-01-01T00:00:00.000000Z"


def test_sources_are_named_without_listing_every_object(s3_endpoint, tmp_path):
    # the store's top-level names with summaries or a manifest; another name holding objects is none
    import boto3

    from binlake.splits.plan import sources

    boto3.client("s3").create_bucket(Bucket="named")
    for url in ("s3://named/deep/archive", f"file://{tmp_path}/store"):
        store = open_store(url)
        for flavor in ("mysql", "mariadb"):
            archive(DirSource(str(DATA / flavor)), store, flavor)
        store.put("notes/readme.txt", b"not a source")
        assert store.names("") == ["mariadb", "mysql", "notes"]
        assert sources(store) == ["mariadb", "mysql"]
        store.delete(summaries_key("mysql"))  # archived by an older binlake: its manifests say it
        assert sources(store) == ["mariadb", "mysql"]
