"""What a run reads of an aged archive: planning one hour, and how far the archive reaches.

A real MySQL server started for the run writes 16 MiB of one-row autocommit transactions
(bench/shapes.py's); `binlake archive` copies the file into a file store. The archive is then
aged: its manifest copied as the manifests of the files of an hour each before it (names and
commit times moved on, the binlog objects not copied: planning reads manifests only) to a day, a
week and a month of such hours. On each: `plan` of the last hour (what every hourly Airflow run
and `binlake assemble` do first) and `archived_until` (what the Airflow sensor asks at each poke),
with the manifests' summaries (binlake.archive.summaries) and without them (every manifest read
whole, as before the summaries; and as a store archived by an older binlake until its next
archive run). The best of 3 runs each.

    .venv/bin/python bench/manifests.py
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.results import publish
from bench.shapes import corpus

AGES = {"a day": 24, "a week": 24 * 7, "a month": 24 * 30}  # hourly files
MIB = 16


def _shifted(m: dict, k: int, hours: int) -> dict:
    """The manifest of the file `hours` hours before, numbered k."""
    from binlake.archive.manifest import index_of

    def at(ts: str | None) -> str | None:
        if ts is None:
            return None
        t = dt.datetime.fromisoformat(ts) - dt.timedelta(hours=hours)
        return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    name = f"binlog.{k:06d}"
    entries = [e._replace(commit_ts=at(e.commit_ts)).stored() for e in index_of(m)]
    out = {**m, "file": name, "name": name, "transactions": entries}
    for f in ("first_event_ts", "last_event_ts", "min_commit_ts", "max_commit_ts"):
        out[f] = at(m.get(f))
    return out


def _best(fn, repeat: int = 3) -> tuple[float, object]:
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        runs.append((time.perf_counter() - t0, out))
    return min(runs, key=lambda r: r[0])


def main() -> None:
    from binlake.archive import summaries
    from binlake.archive.keys import summaries_key
    from binlake.archive.run import archive
    from binlake.archive.sources import DirSource
    from binlake.archive.stores import open_store
    from binlake.splits.plan import archived_until, plan

    work = Path(tempfile.mkdtemp(prefix="binlake-bench-manifests-"))
    version, [first] = corpus(work, MIB, "one-row")
    binlogs = first.parent
    store_url = f"file://{work}/store"
    store = open_store(store_url)
    archive(DirSource(str(binlogs)), store, "src")
    [key] = [k for k in store.keys("src/manifests/") if k.endswith(".json")]
    newest = orjson.loads(store.get(key))
    manifest_mib = len(store.get(key)) / (1 << 20)
    last = dt.datetime.fromisoformat(newest["max_commit_ts"])
    hour = (last - dt.timedelta(hours=1)).isoformat(), (last + dt.timedelta(microseconds=1)).isoformat()
    store.delete(key)
    store.delete(summaries_key("src"))
    made = 0
    rows = []
    for age, files in AGES.items():
        for k in range(made, files):  # the newest file stays newest: the others are the hours before it
            m = _shifted(newest, 900_000 - k, k)
            store.put(f"src/manifests/{m['name']}.json", orjson.dumps(m))
        made = files
        store.delete(summaries_key("src"))
        whole_plan, p = _best(lambda: plan(store_url, ["src"], *hour))
        whole_until, _ = _best(lambda: archived_until(store, "src"))
        summaries.load(store, "src").save()  # as the next archive run writes them
        summed = (work / "store" / "src" / "summaries.json").stat().st_size / (1 << 20)
        kept_plan, q = _best(lambda: plan(store_url, ["src"], *hour))
        kept_until, _ = _best(lambda: archived_until(store, "src"))
        assert p == q and len(q.files) >= 1, (p.files, q.files)
        rows.append((age, files, files * manifest_mib, summed, whole_plan, kept_plan, whole_until, kept_until,
                     len(q.files)))
        print(json.dumps(rows[-1]), file=sys.stderr)
    lines = [
        f"MySQL {version}; one file of {MIB} MiB of one-row transactions, its manifest {manifest_mib:.1f} MiB "
        f"({len(newest['transactions']):,} transactions), copied as the manifests of the hourly files before it; "
        "a file store on local disk; the best of 3 runs. `plan` of the last hour, and `archived_until`, with "
        "the manifests' summaries and with every manifest read whole:",
        "",
        "| archive | files | manifests | summaries | plan, whole | plan, summaries | archived_until, whole "
        "| archived_until, summaries | files planned |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(f"| {age} | {n} | {mib:,.0f} MiB | {s * 1024:.0f} KiB | {a:.2f} s | {b:.2f} s | {c:.2f} s | {d:.3f} s | {f} |"
          for age, n, mib, s, a, b, c, d, f in rows),
        "",
        "With the summaries a run reads one object per source and the indexes of the files it plans; "
        "without them, every manifest of the source whole, more each hour the server ages.",
    ]
    publish("bench/manifests.py", lines)
    shutil.rmtree(work, ignore_errors=True)  # gigabytes of manifests


if __name__ == "__main__":
    main()
