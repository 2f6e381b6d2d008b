"""A source's baselines as the row versions use them (docs/snapshots.md, "Applying a baseline").

A complete baseline (`{store}/{source}/snapshots/{id}/snapshot.json`) holds tables whose chunks
were read in sessions at exact binlog points. Each point is placed in the source's commit order
(binlake.tables.order) through the archive's manifests: the generation of its file name is the one
the snapshot's server was writing when the session began. A table's baseline starts at its first
session's point (every earlier version of it ends there) and is complete from its last.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import zstandard

from binlake.archive import keys, summaries
from binlake.archive.chain import generation_of, name_of
from binlake.errors import BinlakeError
from binlake.schema.model import Snapshot as SchemaSnapshot
from binlake.schema.model import Table
from binlake.tables.order import order

log = logging.getLogger(__name__)
FORMAT = 1


@dataclass
class Chunk:
    key: str  # the object's key in the store
    rows: int
    order: str  # its session's point
    first_seq: int  # the number of its first row in the table's baseline (1, …)


@dataclass
class BaselineTable:
    schema: str
    table: str
    key: list[str] | None
    rows: int
    definition: Table | None
    chunks: list[Chunk] = field(default_factory=list)

    @property
    def start(self) -> str:
        return min(c.order for c in self.chunks) if self.chunks else ""

    @property
    def complete(self) -> str:
        return max(c.order for c in self.chunks) if self.chunks else ""


@dataclass
class Baseline:
    id: str
    start: str  # the order of its first session's point
    started_at: str  # that session's start (UTC)
    tables: dict[tuple[str, str], BaselineTable]
    points: list[str]  # each session's point's order
    at: str = ""  # the commit time of the transaction at its start, else started_at (binlake.spark.tables sets it)


def complete(store, source: str) -> list[dict[str, Any]]:
    """The source's complete snapshots (their snapshot.json documents), oldest first."""
    out = []
    for id in sorted(store.names(keys.baselines_prefix(source))):
        key = keys.baseline_record_key(source, id)
        if not store.exists(key):
            continue
        doc = json.loads(store.get(key))
        if doc.get("format") != FORMAT or doc.get("kind") != "baseline":
            raise BinlakeError(f"{store.url}/{key}: not a binlake baseline of format {FORMAT}")
        out.append(doc)
    return out


def placed(store, source: str, doc: dict[str, Any]) -> Baseline | None:
    """A baseline with its points in the commit order; None while a point's file is not archived."""
    manifests = list(summaries.load(store, source))
    points = []
    for s in doc["sessions"]:
        p = s["point"]
        candidates = [m for m in manifests if m.get("file") == p["file"] and m.get("server_id") == doc.get("server_id")
                      and (not doc.get("server_uuid") or not m.get("server_uuid")
                           or m.get("server_uuid") == doc.get("server_uuid"))
                      and (m.get("first_event_ts") or "") <= s["started_at"]]
        if not candidates:
            log.info("baseline %s: %s is not archived yet", doc["id"], p["file"])
            return None
        m = max(candidates, key=generation_of)
        points.append(order(name_of(m), int(p["position"])))
    schema = SchemaSnapshot.from_json(doc["schema"]) if doc.get("schema") else None
    tables: dict[tuple[str, str], BaselineTable] = {}
    for t in doc["tables"]:
        name = (t["schema"], t["table"])
        bt = BaselineTable(t["schema"], t["table"], t.get("key"), int(t.get("rows") or 0),
                           schema.tables.get(name) if schema else None)
        seq = 1
        for c in t.get("chunks") or []:
            bt.chunks.append(Chunk(keys.baseline_chunk_key(source, doc["id"], c["file"]), int(c["rows"]),
                                   points[int(c["session"])], seq))
            seq += int(c["rows"])
        if not bt.chunks:  # a table with no rows: complete from the first session's point
            bt.chunks.append(Chunk("", 0, points[0], 1))
        tables[name] = bt
    return Baseline(doc["id"], min(points), doc["sessions"][0]["started_at"], tables, points)


def lines(store, key: str) -> Iterator[bytes]:
    """A chunk's JSON lines."""
    if not key:
        return
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(store.get(key)))
    yield from io.BufferedReader(reader)
