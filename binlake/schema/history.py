"""A source's schema history in the archive store:
`{source}/schema/snapshots/{time}-{id}@{file}@{position}.json`, `{file}:{position}` the point of
the binlog the snapshot is taken before (none where it has no point; histories written before have
`{time}-{id}@{file}.json` or `{time}-{id}.json`, read to learn their point).

`binlake archive` of a live source captures one snapshot per run (binlake.schema.capture), before
it copies files: one an hour of hourly runs. A capture whose tables are those of the newest whole
snapshot is recorded as a reference to it (`"kind": "unchanged"`, its own time and point, the
tables by the whole one's key), so the history's bytes grow with the schema's changes, not with its
age; `{source}/schema/latest.json` names that whole snapshot and the digest of its tables (derived,
never the record: without it, or with it wrong, a whole snapshot is written).

A scan picks, for the files it reads, the first snapshot at or after the start of the first of
them, else the last before it, in the order of their points in the binlog (replay.state_for moves
it to the first file and the files' DDL advances it): never by time, which ties (captures a second
apart are written with the same whole-second time) nor by the random id. The keys say when and
where each snapshot was taken, so the choice reads the chosen snapshot only (and its whole one;
and those whose keys do not say it, to learn their point), not the whole history: a snapshot that
cannot be read fails only the ranges that choose it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import re
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from binlake.archive.keys import latest_key, manifest_key, snapshots_prefix
from binlake.schema.model import Snapshot, file_order

log = logging.getLogger(__name__)


def snapshot_key(source: str, snapshot: Snapshot) -> str:
    stamp = (snapshot.taken_at or "").replace("-", "").replace(":", "")
    before = snapshot.point.get("before") or {}
    file, position = before.get("file"), before.get("position")
    where = f"@{file}@{int(position)}" if file and isinstance(position, int) else f"@{file}" if file else ""
    return f"{snapshots_prefix(source)}/{stamp}-{secrets.token_hex(4)}{where}.json"


_STAMP = re.compile(r"(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)(\.\d+)?Z")


@dataclass(frozen=True)
class Listed:
    """A snapshot known by its key (or, for a key written before keys said it, by its document's
    head): what choose() and of_archived_file() ask of it, its time and point; read when chosen
    (loaded)."""

    key: str
    taken_at: str
    point: dict[str, Any]

    @classmethod
    def of(cls, key: str) -> Listed | None:
        """From a key that says when and where (snapshot_key's), else None."""
        name = key.rsplit("/", 1)[-1].removesuffix(".json")
        head, *where = name.split("@")
        m = _STAMP.fullmatch(head.rsplit("-", 1)[0])
        if m is None or len(where) != 2 or not where[0] or not where[1].isdigit():
            return None
        taken = f"{m[1]}-{m[2]}-{m[3]}T{m[4]}:{m[5]}:{m[6]}{m[7] or ''}Z"  # as the snapshot says it
        return cls(key, taken, {"before": {"file": where[0], "position": int(where[1])}})


def point_order(snapshot: Snapshot | Listed) -> tuple:
    """Where a snapshot's point is in the binlog (file number, position), then its time: the order
    of one server's snapshots, ties in time included."""
    before = snapshot.point.get("before") or {}
    number = (file_order(before.get("file") or "") or ("", -1))[1]
    return number, before.get("position") or 0, snapshot.taken_at or ""


S = TypeVar("S", Snapshot, Listed)  # what choose() chooses among: snapshots read, or listed


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


def snapshots(store, source: str) -> list[Listed]:
    """The source's snapshots in capture order (time, then point: captures of one second are in
    the binlog's order), each known by its key; where the key does not say its point (written
    before keys did), by its document's head. loaded() reads one."""
    out = []
    for key in store.keys(snapshots_prefix(source)):
        if key.endswith(".json"):
            out.append(Listed.of(key) or _head(store, key))
    return sorted(out, key=lambda s: (s.taken_at, point_order(s), s.key))


def loaded(store, snapshot: Listed) -> Snapshot:
    """A snapshot of snapshots(), read (a reference's tables from the whole snapshot it names)."""
    return _read(store, snapshot.key)


def _head(store, key: str) -> Listed:
    """A snapshot's time and point from its document, its tables left for loaded()."""
    try:
        doc = json.loads(store.get(key))
        return Listed(key, doc.get("taken_at") or "", doc.get("point") or {})
    except (ValueError, AttributeError) as e:
        raise ValueError(f"{key}: {e}") from None


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


def choose(history: Sequence[S], first_file: str, usable: Callable[[S], bool] = lambda s: True) -> S | None:
    """The snapshot to scan from first_file (a server file name) on: the first at or after its
    start, else the last before it, by their points in the binlog (replay.state_for moves either
    to the file); None when no snapshot can be placed against it. Only the `usable` ones are
    candidates."""
    start = file_order(first_file)
    if start is None:
        return None
    placed = sorted((s for s in history
                     if (point := file_order((s.point.get("before") or {}).get("file") or "")) and point[0] == start[0]
                     and usable(s)), key=point_order)
    after = [s for s in placed if point_order(s)[0] >= start[1]]
    before = [s for s in placed if point_order(s)[0] < start[1]]
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
