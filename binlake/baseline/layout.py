"""A snapshot's objects in the archive store, and the state of one under way (docs/snapshots.md;
their keys: binlake.archive.keys): `snapshot.json`, written last, its presence = complete;
`progress.json`, the state of a snapshot under way (never the record); chunk n of a table,
`{db}/{table}/{n:06d}.jsonl.zst`, rows in key order.

A chunk object is whole or absent (the store's writer: a temporary file renamed, an S3 multipart
upload completed at the end), and is listed in progress.json only once it is committed; a chunk
left unlisted by a run that died is written over by the run that resumes, and every object the
record does not list is removed before snapshot.json is written.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import secrets
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson
import zstandard

from binlake.archive.keys import baseline_chunk_key, baseline_progress_key, baseline_record_key, baselines_prefix
from binlake.archive.leases import Lease
from binlake.errors import BinlakeError
from binlake.schema.model import Table

FORMAT = 1  # snapshot.json's and progress.json's: readers refuse another
LINES_BUFFER = 256 << 10  # JSON lines compressed at once: one call per line costs more than the compression


def chunk_file(table: tuple[str, str], n: int) -> str:
    """A chunk's name inside its snapshot, as the record's `file` gives it."""
    return f"{table[0]}/{table[1]}/{n:06d}.jsonl.zst"


def new_id(now: dt.datetime) -> str:
    """A snapshot's id: its start, so that ids sort in time, and a few random hex digits."""
    return f"{now.strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(3)}"


def now_text() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass
class Chunk:
    file: str
    rows: int
    bytes: int  # of the object, compressed
    sha256: str  # of the object's bytes
    first: list[Any] | None  # the key of its first and last rows (null without a key)
    last: list[Any] | None
    session: int
    unexact: list[dict] = field(default_factory=list)  # {"row", "column"} of values flagged

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        if not self.unexact:
            del d["unexact"]
        return d


class ChunkWriter:
    """One chunk object: JSON lines in, compressed (zstd) and hashed as they go, written whole on
    commit(). `lease` lists the write while it is open, so that a run that finds it unfinished
    (this one killed) discards it (binlake.archive.leases)."""

    def __init__(self, store, key: str, file: str, *, session: int, lease: Lease) -> None:
        self.writer = store.writer(key)
        self.lease = lease
        lease.hold(self.writer.id, key)
        self.file, self.session = file, session
        self.compress = zstandard.ZstdCompressor(level=3).compressobj()
        self.sha, self.size, self.rows, self.text = hashlib.sha256(), 0, 0, 0
        self.lines = bytearray()  # lines not yet handed to the compressor
        self.first: list[Any] | None = None
        self.last: list[Any] | None = None
        self.unexact: list[dict] = []

    def _out(self, data: bytes) -> None:
        if data:
            self.sha.update(data)
            self.size += len(data)
            self.writer.write(data)

    def add(self, values: dict[str, Any], key: list[Any] | None, unexact: list[str]) -> None:
        line = orjson.dumps(values, option=orjson.OPT_APPEND_NEWLINE)
        self.text += len(line)
        self.lines += line
        if len(self.lines) >= LINES_BUFFER:
            self._out(self.compress.compress(bytes(self.lines)))
            self.lines.clear()
        if self.rows == 0:
            self.first = key
        self.last = key
        self.unexact += [{"row": self.rows, "column": c} for c in unexact]
        self.rows += 1

    def commit(self) -> Chunk:
        self._out(self.compress.compress(bytes(self.lines)) + self.compress.flush())
        self.writer.commit()
        self.lease.finished(self.writer.id)
        return Chunk(self.file, self.rows, self.size, self.sha.hexdigest(), self.first, self.last, self.session,
                     self.unexact)

    def abort(self) -> None:
        self.writer.abort()
        self.lease.finished(self.writer.id)


@dataclass
class TableState:
    """A table of a snapshot: what its committed chunks hold and where reading goes on."""

    schema: str
    table: str
    key: list[str] | None = None
    definition: Table | None = None  # the definition its chunks were read under
    chunks: list[Chunk] = field(default_factory=list)
    after: list[str] | None = None  # the SQL literals of the last chunk's last key: where the next begins
    done: bool = False
    retries: int = 0  # times its reading began again (binlake.baseline.run)

    @property
    def name(self) -> tuple[str, str]:
        return (self.schema, self.table)

    @property
    def rows(self) -> int:
        return sum(c.rows for c in self.chunks)

    def restart(self) -> None:
        """Its chunks dropped: to be read from its start (the objects are written over or removed)."""
        self.key, self.definition, self.chunks, self.after, self.done = None, None, [], None, False

    def to_json(self) -> dict[str, Any]:
        return {"schema": self.schema, "table": self.table, "key": self.key,
                "definition": self.definition.to_json() if self.definition else None,
                "chunks": [c.to_json() for c in self.chunks], "after": self.after, "done": self.done,
                "retries": self.retries}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TableState:
        return cls(d["schema"], d["table"], d["key"], Table.from_json(d["definition"]) if d["definition"] else None,
                   [Chunk(**c) for c in d["chunks"]], d["after"], d["done"], d["retries"])


@dataclass
class Progress:
    """progress.json: a snapshot under way, as far as its committed chunks go."""

    id: str
    source: str
    request: list[str] | None  # the tables asked for (`db.t`), None for every table
    started_at: str
    server: dict[str, Any]  # flavor, server_uuid, server_id, version
    run: str = ""  # the lease of the run writing it (binlake.archive.leases)
    sessions: list[dict[str, Any]] = field(default_factory=list)
    tables: list[TableState] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    databases: dict[str, str | None] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "kind": "progress", "id": self.id, "source": self.source, "request": self.request,
                "started_at": self.started_at, **self.server, "run": self.run, "sessions": self.sessions,
                "tables": [t.to_json() for t in self.tables], "skipped": self.skipped, "databases": self.databases}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Progress:
        if d.get("format") != FORMAT or d.get("kind") != "progress":
            raise ValueError(f"not a binlake snapshot's progress of format {FORMAT}")
        server = {k: d[k] for k in ("flavor", "server_uuid", "server_id", "version")}
        return cls(d["id"], d["source"], d["request"], d["started_at"], server, d.get("run", ""), d["sessions"],
                   [TableState.from_json(t) for t in d["tables"]], d["skipped"], d.get("databases", {}))


def put_json(store, key: str, doc: dict[str, Any]) -> None:
    store.put(key, json.dumps(doc, ensure_ascii=False, indent=1).encode() + b"\n")


def read_json(store, key: str) -> dict[str, Any] | None:
    """A JSON object of the store, None when there is none; an error naming it when it is not one."""
    if not store.exists(key):
        return None
    try:
        doc = json.loads(store.get(key))
    except ValueError as e:
        raise BinlakeError(f"{store.url}/{key}: not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise BinlakeError(f"{store.url}/{key}: not a JSON object")
    return doc


def ids(store, source: str) -> list[str]:
    """The source's snapshots, complete or not, oldest first."""
    return sorted(store.names(baselines_prefix(source)))


def baselines(store, source: str) -> list[dict[str, Any]]:
    """The source's complete snapshots (their snapshot.json), oldest first."""
    out = []
    for id in ids(store, source):
        doc = read_json(store, baseline_record_key(source, id))
        if doc is not None:
            if doc.get("format") != FORMAT or doc.get("kind") != "baseline":
                raise BinlakeError(f"{store.url}/{baseline_record_key(source, id)}: "
                                   f"not a binlake baseline of format {FORMAT}")
            out.append(doc)
    return out


def unfinished(store, source: str) -> list[Progress]:
    """The source's snapshots under way or left by a run that died: a progress.json, no record."""
    out = []
    for id in ids(store, source):
        if store.exists(baseline_record_key(source, id)):
            continue
        doc = read_json(store, baseline_progress_key(source, id))
        if doc is not None:
            try:
                out.append(Progress.from_json(doc))
            except (ValueError, KeyError, TypeError) as e:
                raise BinlakeError(f"{store.url}/{baseline_progress_key(source, id)}: {e}") from None
    return out


def remove_strays(store, source: str, id: str, keep: set[str]) -> int:
    """Remove the chunk objects of a snapshot that its record does not list (written by a run
    that died before listing them, or by a session whose table was read again)."""
    base = baseline_chunk_key(source, id, "")
    strays = [k for k in store.keys(base) if k.endswith(".jsonl.zst") and k[len(base):] not in keep]
    for k in strays:
        store.delete(k)
    return len(strays)
