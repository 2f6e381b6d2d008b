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
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from binlake.binlog import constants as c
from binlake.binlog.events import check_query, decode_query
from binlake.binlog.framing import BinlogReader
from binlake.schema.ddl import SchemaState, is_ddl
from binlake.schema.model import Snapshot, file_order

log = logging.getLogger(__name__)


Statement = tuple[int, str, str, int | None]  # (offset, default database, statement, server collation)
DdlOf = Callable[[str], Sequence[Statement] | None]  # a file's DDL statements by name; None: not at hand


_QUERIES = frozenset((c.QUERY_EVENT, c.QUERY_COMPRESSED_EVENT))


def ddl_statements(path: str | os.PathLike, until: int | None = None) -> Iterator[Statement]:
    """(offset, default database, statement, server collation) of each DDL QUERY event of a
    binlog file that ran without error, up to offset `until`."""
    with BinlogReader.open(path) as reader:
        yield from reader_ddl(reader, until)


def reader_ddl(reader: BinlogReader, until: int | None = None,
               wanted: Callable[[str], bool] = is_ddl) -> Iterator[Statement]:
    """ddl_statements of an open reader (an archived object's range); `wanted`: which statements
    (the row versions also want TRUNCATE)."""
    fde = reader.fde
    for f in reader.frames(end=until, only=_QUERIES):
        if f.type not in _QUERIES or not f.crc_ok or f.body[-5:] == b"BEGIN":  # most: a transaction's start
            continue
        phl = fde.post_header_len(f.type) or fde.post_header_len(c.QUERY_EVENT)
        try:
            check_query(f.body, phl)
        except ValueError:
            continue  # an invalid event: the scan replays none of it either (describe)
        q = decode_query(f.body, phl, f.type == c.QUERY_COMPRESSED_EVENT)
        if not q.error_code and wanted(q.text):
            yield f.pos, q.db, q.text, q.collation_server


def between(snapshot: Snapshot, first: str) -> list[str] | None:
    """The names of the files whose DDL moves `snapshot` to the start of file `first`, in order
    (the snapshot's own file included); None when it cannot be placed against `first` (another
    basename, an archive name of a later generation)."""
    point = snapshot.point.get("before") or {}
    at, start = file_order(point.get("file") or ""), file_order(first)
    if at is None or start is None or start[0] != at[0]:
        return None
    width = len(first) - len(start[0]) - 1
    lo, hi = sorted((start[1], at[1]))
    return [f"{at[0]}.{n:0{width}d}" for n in range(lo, hi + 1) if start[1] <= at[1] or n < start[1]]


def state_for(snapshot: Snapshot, files: Sequence[str | os.PathLike]) -> SchemaState:
    """moved() for a scan of local files: the files between are the scanned ones or their
    neighbours in the first file's directory."""
    if not files:
        return SchemaState(snapshot)
    scanned = {Path(f).name: f for f in files}

    def ddl_of(name: str) -> list[Statement] | None:
        path = scanned.get(name) or Path(files[0]).parent / name
        return list(ddl_statements(path)) if Path(path).is_file() else None

    return moved(snapshot, Path(files[0]).name, ddl_of)


def moved(snapshot: Snapshot, first: str, ddl_of: DdlOf) -> SchemaState:
    """A SchemaState to read from the start of file `first` on: the snapshot moved there. A
    snapshot taken before it is advanced by the DDL of the files between; one taken after it
    loses the tables DDL touched between. When a file between is not at hand, or the snapshot
    cannot be placed against `first`, reading starts from no tables: only the files' own DDL
    names tables then."""
    point = snapshot.point.get("before") or {}
    if not point:
        return SchemaState(snapshot)  # an import without a position: it holds at the start (docs/schema.md)
    flavor = snapshot.point.get("flavor") or "mysql"
    names = between(snapshot, first)
    if names is None:
        log.warning("schema snapshot of %s cannot be placed before %s: only the tables the files' DDL "
                    "creates are named", point.get("file"), first)
        return SchemaState(flavor=flavor)
    found: list[tuple[str, Sequence[Statement]]] = []
    for name in names:
        ddl = ddl_of(name)
        if ddl is None:
            log.warning("schema snapshot of %s: %s (between it and %s) is not at hand: only the tables the "
                        "files' DDL creates are named", point.get("file"), name, first)
            return SchemaState(flavor=flavor)
        found.append((name, ddl))
    position = point.get("position") or 0
    state = SchemaState(snapshot)
    if first not in names:  # older: its tables move forward to the first file
        for name, ddl in found:
            for pos, db, sql, collation in ddl:
                if name != point["file"] or pos >= position:
                    state.apply(db, sql, collation)
        return state
    tracer = SchemaState(flavor=flavor)  # newer: the tables touched between lose their columns
    for name, ddl in found:
        for pos, db, sql, collation in ddl:
            if name != point["file"] or pos < position:
                tracer.apply(db, sql, collation)
    lost = set(state.tables) | tracer.touched if tracer.lost_all else tracer.touched
    for key in lost:
        state.tables[key] = None
    if lost:
        log.info("schema snapshot of %s:%s: %d table(s) changed by DDL before it start unknown: %s",
                 point.get("file"), position, len(lost), ", ".join(sorted(".".join(k) for k in lost))[:500])
    return state
