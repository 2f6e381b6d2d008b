"""Where a snapshot holds in a scan, and the DDL statements of binlog files.

A snapshot is taken at a point of the binlog (`point.before`: file and position). Forward of
that point the SchemaState replays the DDL as the scan meets it. Backward of it the snapshot holds
only for the tables no DDL touched between the scan's start and the point: before a scan that
starts earlier, the files up to the point are read once for their DDL statements, and every table
those statements create, alter, rename or drop starts unknown (positional names) until the
forward replay defines it again. A snapshot without a point (an import without --position) is
taken to hold at the start of the first file scanned.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from binlake.binlog import constants as c
from binlake.binlog.events import decode_query
from binlake.binlog.framing import BinlogReader
from binlake.schema.ddl import SchemaState, is_ddl
from binlake.schema.model import Snapshot

log = logging.getLogger(__name__)


def ddl_statements(path: str | os.PathLike, until: int | None = None) -> Iterator[tuple[int, str, str, int | None]]:
    """(offset, default database, statement, server collation) of each DDL QUERY event of a
    binlog file that ran without error, up to offset `until`."""
    with BinlogReader.open(path) as reader:
        fde = reader.fde
        for f in reader.frames(end=until):
            if f.type not in (c.QUERY_EVENT, c.QUERY_COMPRESSED_EVENT) or not f.crc_ok:
                continue
            phl = fde.post_header_len(f.type) or fde.post_header_len(c.QUERY_EVENT)
            q = decode_query(f.body, phl, f.type == c.QUERY_COMPRESSED_EVENT)
            if not q.error_code and is_ddl(q.text):
                yield f.pos, q.db, q.text, q.collation_server


def _number(name: str) -> tuple[str, int] | None:
    base, _, num = name.rpartition(".")
    return (base, int(num)) if num.isdigit() else None


def state_for(snapshot: Snapshot, files: Sequence[str | os.PathLike]) -> SchemaState:
    """A SchemaState to scan `files` (in order) with: the snapshot, less the tables DDL touched between
    the first file and the snapshot's point."""
    state = SchemaState(snapshot)
    point = snapshot.point.get("before") or {}
    at = _number(point.get("file") or "")
    if at is None or not files:
        return state
    earlier: list[tuple[str | os.PathLike, int | None]] = []
    for f in files:
        n = _number(Path(f).name)
        if n is None or n[0] != at[0] or n[1] > at[1]:
            continue  # after the point (or of another name: read forward only)
        earlier.append((f, point.get("position") if n[1] == at[1] else None))
    if not earlier:
        return state
    tracer = SchemaState(flavor=snapshot.point.get("flavor") or "mysql")
    for f, until in earlier:
        for _, db, sql, collation in ddl_statements(f, until):
            tracer.apply(db, sql, collation)
    lost = tracer.touched if not tracer.lost_all else set(state.tables)
    for key in lost:
        state.tables[key] = None
    if lost:
        log.info("schema snapshot of %s:%s: %d table(s) changed by DDL before it start unknown: %s",
                 point.get("file"), point.get("position"), len(lost),
                 ", ".join(sorted(".".join(k) for k in lost))[:500])
    return state
