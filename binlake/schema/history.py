"""A source's schema history in the archive store:
`{source}/schema/snapshots/{time}-{id}@{file}.json`, `{file}` the binlog file the snapshot's point
is before (none where it has no point; histories written before it have `{time}-{id}.json`).

`binlake archive` of a live source captures one snapshot per run (binlake.schema.capture), before
it copies files: one an hour of hourly runs. A capture whose tables are those of the newest whole
snapshot is recorded as a reference to it (`"kind": "unchanged"`, its own time and point, the
tables by the whole one's key), so the history's bytes grow with the schema's changes, not with its
age; `{source}/schema/latest.json` names that whole snapshot and the digest of its tables (derived,
never the record: without it, or with it wrong, a whole snapshot is written).

A scan picks, for the files it reads, the earliest snapshot taken at or after the start of the
first of them, else the newest before it (replay.state_for moves it to the first file and the
files' DDL advances it). The keys say when and where each snapshot was taken, so the choice reads
the chosen snapshot only (and its whole one; and those whose keys do not say it), not the whole
history.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from binlake.archive.keys import latest_key, manifest_key, snapshots_prefix
from binlake.schema.model import Snapshot, file_order

log = logging.getLogger(__name__)


def snapshot_key(source: str, snapshot: Snapshot) -> str:
    stamp = (snapshot.taken_at or "").replace("-", "").replace(":", "")
    file = (snapshot.point.get("before") or {}).get("file")
    return f"{snapshots_prefix(source)}/{stamp}-{secrets.token_hex(4)}{f'@{file}' if file else ''}.json"


@dataclass(frozen=True)
class Listed:
    """A snapshot known by its key: what choose() and of_archived_file() ask of it, its time and
    the file its point is before; read when chosen (loaded)."""

    key: str
    taken_at: str
    point: dict[str, Any]

    @classmethod
    def of(cls, key: str) -> Listed | None:
        """From a key that says both (snapshot_key's), else None."""
        name = key.rsplit("/", 1)[-1].removesuffix(".json")
        head, at, file = name.partition("@")
        stamp = head.rsplit("-", 1)[0]
        try:
            when = dt.datetime.strptime(stamp, "%Y%m%dT%H%M%S.%fZ")
        except ValueError:
            return None
        if not at or not file:
            return None
        return cls(key, when.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), {"before": {"file": file}})


def digest(snapshot: Snapshot) -> str:
    """What a capture is compared by: its databases and tables, not when or where it was taken."""
    tables = [t.to_json() for _, t in sorted(snapshot.tables.items())]
    body = json.dumps({"databases": snapshot.databases, "tables": tables}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(body.encode()).hexdigest()


def record(store, source: str, snapshot: Snapshot) -> str:
    """Write a snapshot into the store's history of source; its key. Its tables are written by
    reference when they are the newest whole snapshot's (the module's docstring)."""
    key = snapshot_key(source, snapshot)
    tables = digest(snapshot)
    same = _whole_with(store, source, tables)
    doc = snapshot.to_json()
    if same is not None:  # its time and point, the tables by the whole one's key
        doc = {**{k: v for k, v in doc.items() if k not in ("databases", "tables")}, "kind": "unchanged",
               "tables_of": same}
    store.put(key, (json.dumps(doc, ensure_ascii=False, indent=1) + "\n").encode())
    if same is None:  # after the snapshot: a latest.json never names what is not written
        store.put(latest_key(source), json.dumps({"key": key, "digest": tables}).encode())
        log.info("%s: schema snapshot of %d tables recorded as %s", source, len(snapshot.tables), key)
    else:
        log.info("%s: schema snapshot recorded as %s, its %d tables unchanged since %s", source, key,
                 len(snapshot.tables), same)
    return key


def _whole_with(store, source: str, tables: str) -> str | None:
    """The key of the newest whole snapshot if its tables' digest is `tables` and it is there."""
    try:
        latest = json.loads(store.get(latest_key(source))) if store.exists(latest_key(source)) else {}
        key = latest.get("key")
        if latest.get("digest") != tables or not isinstance(key, str) or not key.startswith(snapshots_prefix(source)):
            return None
        return key if store.exists(key) else None
    except (ValueError, AttributeError):  # not JSON, not an object: written whole again
        return None


def snapshots(store, source: str) -> list[Snapshot | Listed]:
    """The source's snapshots, oldest first (their keys sort by capture time): read where the key
    does not say when and where it was taken, else Listed (loaded() reads it)."""
    out: list[Snapshot | Listed] = []
    for key in sorted(store.keys(snapshots_prefix(source))):
        if key.endswith(".json"):
            out.append(Listed.of(key) or _read(store, key))
    return out


def loaded(store, snapshot: Snapshot | Listed) -> Snapshot:
    """A snapshot of snapshots(), read if it was only listed."""
    return _read(store, snapshot.key) if isinstance(snapshot, Listed) else snapshot


def _read(store, key: str) -> Snapshot:
    try:
        doc = json.loads(store.get(key))
        if doc.get("kind") != "unchanged":
            return Snapshot.from_json(doc)
        whole = doc["tables_of"]  # a whole snapshot: record() never refers to a reference
        if not store.exists(whole):
            raise ValueError(f"its tables are those of {whole}, which the store lacks")
        tables = Snapshot.from_json(json.loads(store.get(whole)))
        at = Snapshot.from_json({**doc, "kind": "snapshot", "tables": []})  # its own time and point
        return replace(at, tables=tables.tables, databases=tables.databases)
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"{key}: {e}") from None


def choose(history: list[Snapshot | Listed], first_file: str,
           usable: Callable[[Snapshot | Listed], bool] = lambda s: True) -> Snapshot | Listed | None:
    """The snapshot to scan from first_file (a server file name) on: the earliest taken at or after
    its start, else the newest before it (replay.state_for moves either to the file); None when
    no snapshot can be placed against it. Only the `usable` ones are candidates."""
    start = file_order(first_file)
    if start is None:
        return None
    placed = [(point, s) for s in history
              if (point := file_order((s.point.get("before") or {}).get("file") or "")) and point[0] == start[0]
              and usable(s)]
    after = [s for point, s in placed if point[1] >= start[1]]
    before = [s for point, s in placed if point[1] < start[1]]
    return after[0] if after else before[-1] if before else None


def of_archived_file(store, source: str, snapshot: Snapshot | Listed) -> bool:
    """Whether the file archived under the name of the snapshot's point is the one the server was
    writing when the snapshot was taken. A reset makes a server reuse file names (the archive keeps
    the later file as `name@gNNNN`): a snapshot of the later files is not placed against the
    earlier one. True when nothing says otherwise (not archived yet, no times)."""
    name = (snapshot.point.get("before") or {}).get("file")
    if not name or not snapshot.taken_at or not store.exists(manifest_key(source, name)):
        return True
    m = json.loads(store.get(manifest_key(source, name)))
    taken, slack = dt.datetime.fromisoformat(snapshot.taken_at), dt.timedelta(seconds=1)
    first, last = m.get("first_event_ts"), m.get("last_event_ts")
    if first and dt.datetime.fromisoformat(first) > taken + slack:
        return False  # written after the snapshot: a later server's file of that name
    return not (last and dt.datetime.fromisoformat(last) < taken - slack)  # ended before it: an earlier one
