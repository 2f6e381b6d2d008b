"""Where a snapshot holds in a scan, and the DDL statements of binlog files.

A snapshot is taken at a point of the binlog (`point.before`: file and position). Forward of
that point the SchemaState replays the DDL as the scan meets it (and as it reads the files between
the point and the scan's start, when the snapshot is older). Backward of it the snapshot holds
only for the tables no DDL touched between the scan's start and the point: the files up to the
point are read once for their DDL statements, and every table those statements create, alter,
rename or drop starts unknown (positional names) until the forward replay defines it again. A
snapshot without a point (an import without --position) is taken to hold at the start of the
first file scanned.
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


def file_order(name: str) -> tuple[str, int] | None:
    """(basename, number) of a server's binlog file name; None for any other (an archive name
    of a later generation, `binlog.000001@g0002`)."""
    base, _, num = name.rpartition(".")
    return (base, int(num)) if num.isdigit() else None


def state_for(snapshot: Snapshot, files: Sequence[str | os.PathLike]) -> SchemaState:
    """A SchemaState to scan `files` (in order) with: the snapshot moved to the start of the first
    file. A snapshot taken before it is advanced by the DDL of the files between; one taken after
    it loses the tables DDL touched between. The files between are the scanned ones or their
    neighbours in the first file's directory; when one is missing, or the first file cannot be
    placed against the snapshot's point (another basename, an archive name of a later
    generation), the scan starts from no tables: only the files' own DDL names tables then."""
    point = snapshot.point.get("before") or {}
    if not files or not point:
        return SchemaState(snapshot)  # an import without a position: it holds at the start (docs/schema.md)
    flavor = snapshot.point.get("flavor") or "mysql"
    at, first = file_order(point.get("file") or ""), file_order(Path(files[0]).name)
    if at is None or first is None or first[0] != at[0]:
        log.warning("schema snapshot of %s cannot be placed before %s: the scan names only the tables "
                    "its files' DDL creates", point.get("file"), Path(files[0]).name)
        return SchemaState(flavor=flavor)
    scanned = {Path(f).name: f for f in files}
    lo, hi = sorted((first[1], at[1]))
    between: list[tuple[str | os.PathLike, int | None, int | None]] = []  # (file, from, until)
    width = len(Path(files[0]).name) - len(first[0]) - 1
    for n in range(lo, hi + 1):
        name = f"{at[0]}.{n:0{width}d}"
        path = scanned.get(name) or Path(files[0]).parent / name
        if not Path(path).is_file():
            log.warning("schema snapshot of %s: %s (between it and the scan's start) is not at hand: the scan "
                        "names only the tables its files' DDL creates", point.get("file"), name)
            return SchemaState(flavor=flavor)
        at_point = n == at[1]
        if first[1] > at[1]:  # the snapshot is older: its tables move forward to the first file
            if n < first[1]:
                between.append((path, point.get("position") if at_point else None, None))
        else:  # the snapshot is newer: tables touched between lose their columns
            between.append((path, None, point.get("position") if at_point else None))
    if first[1] > at[1]:
        state = SchemaState(snapshot)
        for path, start, _ in between:
            for pos, db, sql, collation in ddl_statements(path):
                if start is None or pos >= start:
                    state.apply(db, sql, collation)
        return state
    state = SchemaState(snapshot)
    tracer = SchemaState(flavor=flavor)
    for path, _, until in between:
        for _, db, sql, collation in ddl_statements(path, until):
            tracer.apply(db, sql, collation)
    lost = set(state.tables) | tracer.touched if tracer.lost_all else tracer.touched
    for key in lost:
        state.tables[key] = None
    if lost:
        log.info("schema snapshot of %s:%s: %d table(s) changed by DDL before it start unknown: %s",
                 point.get("file"), point.get("position"), len(lost),
                 ", ".join(sorted(".".join(k) for k in lost))[:500])
    return state
