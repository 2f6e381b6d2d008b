"""`binlake snapshot`: a consistent snapshot of a live server's tables into the archive store, in
sessions, tables and chunks, resumed where a run died (docs/snapshots.md).

A run holds a lease on the source's store prefix (binlake.archive.leases: the unfinished writes
of runs that died are discarded) and resumes the newest unfinished snapshot of the same server
and the same tables, unless the run that writes it is alive; else it begins a new one. A session
reads the tables not done yet, one after the other, each under its metadata lock (on MariaDB a
session reads one table: Session.releases_tables); then:

- a table with a key goes on from the last committed chunk's key, under the definition its
  earlier chunks were read with; a table whose definition is no longer that one is read again
  from its start;
- a table without a key is read whole in one session: one a dead session left half read is read
  again from its start;
- a table altered (or truncated, recreated) after the session's point is left to the next
  session, whose point is after the DDL;
- a table gone before it was read (dropped, renamed) is recorded as skipped, as is a table of an
  engine that takes no part in a consistent snapshot (MyISAM, MEMORY, Aria).

Chunks end at `chunk_rows` rows or `chunk_bytes` bytes of JSON lines. progress.json is written
after each committed chunk; snapshot.json when every table is done, after the objects it does
not list are removed.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from binlake.archive.keys import baseline_chunk_key, baseline_progress_key, baseline_record_key
from binlake.archive.leases import Lease, alive, clean, lease_key
from binlake.archive.sources import MySQLSource
from binlake.baseline import CHUNK_BYTES, CHUNK_ROWS, layout
from binlake.baseline.keys import choose
from binlake.baseline.layout import ChunkWriter, Progress, TableState
from binlake.baseline.reading import TableRead
from binlake.baseline.session import TRANSACTIONAL, DefinitionChanged, Session, SnapshotError, name_of
from binlake.baseline.values import RowRead
from binlake.schema.model import Snapshot

log = logging.getLogger(__name__)

MAX_RETRIES = 10  # a table whose reading began again this often (DDL on it again and again) ends the run


@dataclass(frozen=True)
class Options:
    chunk_rows: int = CHUNK_ROWS
    chunk_bytes: int = CHUNK_BYTES


@dataclass
class Result:
    id: str
    resumed: bool
    tables: int = 0
    rows: int = 0
    chunks: int = 0
    sessions: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)


Observer = Callable[[str, dict[str, Any]], None]  # ("session" | "table" | "chunk", what)


def parse_tables(names: list[str] | None) -> list[str] | None:
    """`db.t` names, sorted and once each; None for every table."""
    if not names:
        return None
    for n in names:
        if "." not in n.strip("."):
            raise SnapshotError(f"--table {n}: expected DATABASE.TABLE", lasting=True)
    return sorted(set(names))


def _split(name: str) -> tuple[str, str]:
    db, _, table = name.partition(".")
    return db, table


def snapshot(source: MySQLSource, store, source_name: str, tables: list[str] | None = None, *,
             options: Options = Options(), observe: Observer | None = None) -> Result:
    """Take (or resume) a snapshot of `tables` (`db.t`; None: every table) of the server behind
    `source` into `store` under `source_name`."""
    request = parse_tables(tables)
    wanted_names = {_split(n) for n in request} if request else None

    def wanted(t: tuple[str, str]) -> bool:
        return wanted_names is None or t in wanted_names

    import pymysql

    store.check(writable=True)
    try:
        with Lease(store, source_name) as lease:
            clean(store, source_name, lease)
            run = _Run(source, store, source_name, lease, options=options, observe=observe or (lambda kind, what: None))
            return run.take(request, wanted)
    except pymysql.err.MySQLError as e:  # a lost connection, a server gone: what is committed stays
        raise SnapshotError(f"{source.url}: {e.args[-1] if e.args else e} (a rerun resumes the snapshot)") from None


class _Run:
    def __init__(self, source: MySQLSource, store, source_name: str, lease: Lease, *, options: Options,
                 observe: Observer) -> None:
        self.source, self.store, self.name, self.lease, self.options = source, store, source_name, lease, options
        self.observe = observe
        self.progress: Progress | None = None

    def take(self, request: list[str] | None, wanted: Callable[[tuple[str, str]], bool]) -> Result:
        first = Session.open(self.source, wanted)
        try:
            p, resumed = self._begin(first, request, wanted)
        except BaseException:
            first.close()
            raise
        self.progress = p
        session: Session | None = first
        recorded, k = None, -1  # the session last recorded, and its index in the record
        try:
            while pending := [t for t in p.tables if not t.done]:
                for table in pending:
                    if session is None:
                        session = self._open(table.name if not first.releases_tables else None, wanted)
                    if session is not recorded:
                        recorded, k = session, len(p.sessions)
                        p.sessions.append({"point": session.point, "started_at": session.started_at})
                        self._save()
                        self.observe("session", {"session": k, "point": session.point})
                    self._table(session, k, table)
                    if not session.releases_tables:  # its metadata locks go with the transaction only
                        session.close()
                        session = None
                if session is not None:  # a table left to a later session needs one after its DDL
                    session.close()
                    session = None
        finally:
            if session is not None:
                session.close()
        return self._finish(resumed)

    def _open(self, table: tuple[str, str] | None, wanted: Callable[[tuple[str, str]], bool]) -> Session:
        """A further session of the snapshot: for one table, or for every table `wanted`."""
        assert self.progress is not None
        session = Session.open(self.source, wanted, only=table)
        if (session.server.server_uuid, session.server.server_id) != (self.progress.server["server_uuid"],
                                                                       self.progress.server["server_id"]):
            session.close()
            raise SnapshotError(f"{self.source.url}: the server changed while the snapshot {self.progress.id} "
                                "was taken")
        return session

    def _begin(self, session: Session, request: list[str] | None,
               wanted: Callable[[tuple[str, str]], bool]) -> tuple[Progress, bool]:
        """The unfinished snapshot to resume, else a new one of the tables the session sees."""
        server = {"flavor": session.server.flavor, "server_uuid": session.server.server_uuid,
                  "server_id": session.server.server_id, "version": session.server.version}
        for p in reversed(layout.unfinished(self.store, self.name)):
            if p.request != request or (p.server["server_uuid"], p.server["server_id"]) != (
                    server["server_uuid"], server["server_id"]):
                continue
            holder = layout.read_json(self.store, lease_key(self.name, p.run)) if p.run else None
            if holder is not None and alive(holder, dt.datetime.now(dt.UTC)):
                raise SnapshotError(f"{self.store.url}: snapshot {p.id} of {self.name} is being taken by the run "
                                    f"{p.run} (host {holder.get('host')}, pid {holder.get('pid')})")
            p.run = self.lease.run
            done = sum(t.rows for t in p.tables)
            log.info("%s: resuming snapshot %s: %d of %d tables done, %d rows in %d chunks kept", self.name, p.id,
                     sum(t.done for t in p.tables), len(p.tables), done, sum(len(t.chunks) for t in p.tables))
            return p, True
        catalog = session.catalog
        for name in [n for n in (request or []) if _split(n) not in catalog.tables]:
            raise SnapshotError(f"{self.source.url}: table {name}: no such table, or no SELECT privilege on it",
                                lasting=True)
        p = Progress(layout.new_id(dt.datetime.now(dt.UTC)), self.name, request, layout.now_text(), server,
                     self.lease.run, databases=dict(catalog.databases))
        for t in sorted(k for k in catalog.tables if wanted(k)):
            engine = catalog.engines.get(t)
            if engine not in TRANSACTIONAL:
                p.skipped.append({"schema": t[0], "table": t[1], "kind": "engine",
                                  "reason": f"engine {engine} takes no part in a consistent snapshot"})
                log.warning("%s: %s skipped: its engine %s takes no part in a consistent snapshot", self.name,
                            name_of(t), engine)
            else:
                p.tables.append(TableState(*t))
        log.info("%s: snapshot %s of %d tables (%d skipped)", self.name, p.id, len(p.tables), len(p.skipped))
        return p, False

    def _save(self) -> None:
        assert self.progress is not None
        layout.put_json(self.store, baseline_progress_key(self.name, self.progress.id), self.progress.to_json())

    def _table(self, session: Session, k: int, table: TableState) -> None:
        """Read what this session can of a table: all of it, or nothing when it must wait for a
        later session."""
        assert self.progress is not None
        self.observe("table", {"session": k, "table": table.name})
        try:
            definition, indexes = session.hold(table.name)
            if definition is None:
                self.progress.tables.remove(table)
                self.progress.skipped.append({"schema": table.schema, "table": table.table, "kind": "gone",
                                              "reason": "dropped or renamed after the snapshot began, before it "
                                                        "was read"})
                log.warning("%s: %s is gone: skipped", self.name, name_of(table.name))
                self._save()
                return
            if definition != session.catalog.tables.get(table.name):
                self._again(table, "its definition changed after the session's point: left to the next session")
                return
            key = choose(definition, indexes)
            names = key.names if key else None
            if table.chunks and (table.definition != definition or table.key != names or key is None):
                self._again(table, "its chunks were read under another definition or key, or without a key by "
                                   "a session that died: read again from its start", whole=True)
            table.definition, table.key = definition, names
            self._chunks(TableRead(session, table.name, RowRead(definition, session.server.flavor), key), table, k)
        except DefinitionChanged:
            self._again(table, "it was altered, truncated or recreated after the session's point: left to the "
                               "next session", whole=table.key is None or any(c.session == k for c in table.chunks))
            return
        finally:
            session.release()
        table.done = True
        self._save()
        log.info("%s: %s done: %d rows in %d chunks", self.name, name_of(table.name), table.rows, len(table.chunks))

    def _again(self, table: TableState, why: str, whole: bool = False) -> None:
        """A table's reading begun again: in the next session, or (`whole`) from its start."""
        log.info("%s: %s: %s", self.name, name_of(table.name), why)
        if whole:
            table.restart()
        table.retries += 1
        if table.retries > MAX_RETRIES:
            raise SnapshotError(f"{self.source.url}: {name_of(table.name)} changed {MAX_RETRIES} times while it was "
                                "to be read: try again later")

    def _chunks(self, reader: TableRead, table: TableState, k: int) -> None:
        assert self.progress is not None
        opts = self.options

        id = self.progress.id

        def writer() -> ChunkWriter:
            file = layout.chunk_file(table.name, len(table.chunks))
            return ChunkWriter(self.store, baseline_chunk_key(self.name, id, file), file, session=k, lease=self.lease)

        w = writer()
        try:
            for row in reader.rows(table.after):
                w.add(row.values, row.key, row.unexact)
                if w.rows >= opts.chunk_rows or w.text >= opts.chunk_bytes:
                    self._commit(w, table, row.literals())
                    w = writer()
            if w.rows:
                self._commit(w, table, table.after)
            else:
                w.abort()
        except BaseException:
            w.abort()
            raise

    def _commit(self, w: ChunkWriter, table: TableState, after: list[str] | None) -> None:
        assert self.progress is not None
        chunk = w.commit()
        table.chunks.append(chunk)
        table.after = after
        self._save()
        log.info("%s: %s chunk %d: %d rows (%d so far)", self.name, name_of(table.name), len(table.chunks) - 1,
                 chunk.rows, table.rows)
        self.observe("chunk", {"table": table.name, "chunk": chunk.to_json()})

    def _finish(self, resumed: bool) -> Result:
        p = self.progress
        assert p is not None
        keep = {c.file for t in p.tables for c in t.chunks}
        removed = layout.remove_strays(self.store, self.name, p.id, keep)
        if removed:
            log.info("%s: removed %d chunk objects no session kept", self.name, removed)
        schema = Snapshot({t.name: t.definition for t in p.tables if t.definition is not None},
                          {db: cs for db, cs in p.databases.items() if any(t.schema == db for t in p.tables)},
                          {"server_uuid": p.server["server_uuid"], "server_id": p.server["server_id"],
                           "flavor": p.server["flavor"], "before": p.sessions[0]["point"],
                           "after": p.sessions[-1]["point"]},
                          self.name, p.started_at)
        record = {"format": layout.FORMAT, "kind": "baseline", "id": p.id, "source": self.name, **p.server,
                  "started_at": p.started_at, "completed_at": layout.now_text(), "schema": schema.to_json(),
                  "tables": [{"schema": t.schema, "table": t.table, "key": t.key, "rows": t.rows,
                              "chunks": [c.to_json() for c in t.chunks]} for t in p.tables],
                  "sessions": p.sessions, "skipped": p.skipped}
        layout.put_json(self.store, baseline_record_key(self.name, p.id), record)
        self.store.delete(baseline_progress_key(self.name, p.id))
        result = Result(p.id, resumed, len(p.tables), sum(t.rows for t in p.tables),
                        sum(len(t.chunks) for t in p.tables), len(p.sessions), p.skipped)
        log.info("%s: snapshot %s complete: %d tables, %d rows in %d chunks, %d sessions", self.name, p.id,
                 result.tables, result.rows, result.chunks, result.sessions)
        return result
