"""Archive the rotated binlog files of a source into a store: binlog object, then manifest."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import logging
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import orjson

from binlake.archive.identity import Catalog, file_number, name_of, read_head
from binlake.archive.keys import binlog_key, manifest_key, refused_key, refused_prefix
from binlake.archive.leases import Lease, clean
from binlake.archive.sources import RefusedFile
from binlake.archive.stores import Writer
from binlake.archive.verify import Verifier
from binlake.binlog.gtid import maria_range, parse_gtid_set, subtract, union
from binlake.errors import BinlogError

log = logging.getLogger(__name__)


# What snapshots a live source's tables into the store's schema history, handed in by the caller
# (binlake.schema.capture.into_history): (a connection to the source, the store, the source's name)
# -> the snapshot's key. The archive keeps no schema history of its own.
Capture = Callable[[Any, Any, str], str]


@dataclass
class ArchiveResult:
    archived: list[str] = field(default_factory=list)  # archive names (binlog.000001, binlog.000001@g0002)
    skipped: list[str] = field(default_factory=list)
    bytes: int = 0
    gaps: list[dict] = field(default_factory=list)  # GTID_GAP anomalies: files purged before archiving
    notices: list[dict] = field(default_factory=list)  # new generations: a reset, another server
    refused: list[dict] = field(default_factory=list)  # files the server would not send, with the remedy
    schema: str | None = None  # the key of the schema snapshot this run captured (docs/schema.md)
    schema_error: str | None = None  # why it captured none


def refusals(store, source: str) -> list[dict]:
    """The files of a source its server refused to send and that are not archived since."""
    return [json.loads(store.get(k)) for k in store.keys(refused_prefix(source)) if k.endswith(".json")]


def pending(source, store, source_name: str) -> list:
    """The rotated files of a source not archived yet (by identity, not by name), in binlog order."""
    store.check()
    files = sorted(source.files(), key=lambda f: file_number(f.name))
    log.info("%s: %d rotated files", source.url, len(files))
    catalog = Catalog.load(store, source_name)
    return [f for f in files if not catalog.named(f.name) or _archived_copy(source, catalog, f) is None]


def _archived_copy(source, catalog: Catalog, f):
    """The archived copy of a file whose name is in the archive: read its head from the source."""
    stream = source.stream(f)
    try:
        head, _ = read_head(stream)
    finally:
        stream.close()
    return catalog.find(f.name, f.size, head, source.server_uuid) if head else None


def archive(source, store, source_name: str, *, capture: Capture | None = None) -> ArchiveResult:
    """Copy every rotated file not archived yet; a manifest's presence means "safely archived".

    A file is archived when a manifest of its name has its server and head (identity.py); a
    same-named file of another identity is a new generation, archived beside the old one. The
    object is verified while it streams (CRC32, positions, size against the source's listing,
    sha256) and committed only whole; the manifest is written after it. A file's commit (its
    fsync or upload's completion, then its manifest) runs while the next file copies; commits
    stay in file order. A file the server refuses to send is recorded with the remedy, and the
    run goes on with the next. `capture`: what snapshots a live source's tables into the store's
    schema history first (binlake.schema.capture.into_history); None: no snapshot.
    """
    store.check(writable=True)
    with Lease(store, source_name) as lease:
        clean(store, source_name, lease, objects=[binlog_key(source_name, f.name) for f in source.files()])
        schema, error = capture_schema(source, store, source_name, capture) if capture else (None, None)
        result = _archive(source, store, source_name, lease)
    result.schema, result.schema_error = schema, error
    return result


def capture_schema(source, store, source_name: str, capture: Capture) -> tuple[str | None, str | None]:
    """A snapshot of a live source's tables into the store's schema history, by `capture`: (its
    key, None), or (None, why not). The archive goes on either way: the files come first."""
    connect = getattr(source, "connect", None)
    if connect is None:  # dir:// sources: `binlake schema import` records what a live one would
        return None, None
    try:
        conn = connect()
        try:
            return capture(conn, store, source_name), None
        finally:
            conn.close()
    except Exception as e:  # noqa: BLE001 - any failure is reported, and the files still archived
        detail = f"{source.url}: no schema snapshot this run ({type(e).__name__}: {e})"
        log.warning("%s", detail)
        return None, detail


def _archive(source, store, source_name: str, lease: Lease) -> ArchiveResult:
    result = ArchiveResult()
    files = sorted(source.files(), key=lambda f: file_number(f.name))
    log.info("%s: %d rotated files", source.url, len(files))
    catalog = Catalog.load(store, source_name)

    def done(manifest: dict) -> None:
        if "gap" in manifest:
            result.gaps.append(gap_anomaly(source_name, manifest))
        result.archived.append(name_of(manifest))
        result.bytes += manifest["size"]

    with ThreadPoolExecutor(1, thread_name_prefix="binlake-commit") as committer:
        waiting: Future | None = None
        for f in files:
            try:
                copied = _copy(source, store, source_name, f, catalog=catalog, lease=lease)
            except RefusedFile as e:
                result.refused.append(_refuse(source, store, source_name, f, refused=e))
                continue
            if copied is None:
                result.skipped.append(f.name)
                continue
            catalog.add(copied.manifest)  # the next file is placed after this one
            if "notice" in copied.manifest:
                result.notices.append(copied.manifest["notice"])
            if waiting is not None:
                try:
                    done(waiting.result())
                except BaseException:
                    copied.writer.abort()  # the file before failed to commit: this one is not committed either
                    raise
            waiting = committer.submit(_commit, source, store, source_name, f, listing=files, copied=copied,
                                       catalog=catalog)
        if waiting is not None:
            done(waiting.result())
    catalog.save()
    return result


def archive_file(source, store, source_name: str, f, *, listing: list) -> dict | None:
    """Archive one rotated file (None when it already is). Files of one source may be archived
    concurrently (one Airflow task each): a purge gap is looked for only where the file before
    this one is gone from the server, since the server's own files follow each other. A file
    the server refuses to send is recorded, then RefusedFile is raised with the remedy."""
    with Lease(store, source_name) as lease:
        clean(store, source_name, lease, objects=[binlog_key(source_name, g.name) for g in listing])
        catalog = Catalog.load(store, source_name)
        try:
            copied = _copy(source, store, source_name, f, catalog=catalog, lease=lease)
        except RefusedFile as e:
            raise RefusedFile(_refuse(source, store, source_name, f, refused=e)["detail"], e.file, e.reason) from None
        if copied is None:
            return None
        catalog.add(copied.manifest)
        manifest = _commit(source, store, source_name, f, listing=listing, copied=copied, catalog=catalog)
        catalog.save()
        return manifest


def _refuse(source, store, source_name: str, f, *, refused: RefusedFile) -> dict:
    """Record a file the server refused to send, like a gap: with the server's reason and the remedy."""
    where = source.binlog_dir or "/path/to/the/server/binlog/directory"
    named = getattr(source, "binlog_basename", None)
    where += f"?basename={named}" if named else ""
    remedy = (f"archive it from the server's own files: binlake archive --source 'dir://{where}' "
              f"--store {store.url} --source-name {source_name} (files archived already are skipped)")
    record = {"source": source_name, "file": f.name, "size": f.size, "server_uuid": source.server_uuid,
              "source_url": source.url, "reason": refused.reason, "remedy": remedy,
              "refused_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
              "detail": f"{f.name}: the server refuses to send it ({refused.reason}); {remedy}"}
    store.put(refused_key(source_name, f.name), orjson.dumps(record, option=orjson.OPT_INDENT_2))
    log.error("%s: %s", source.url, record["detail"])
    return record


def _commit(source, store, source_name: str, f, *, listing: list, copied: Copied, catalog: Catalog) -> dict:
    """Commit a copied file's object, then write its manifest (and close a refusal of the file)."""
    try:
        copied.writer.commit()
    except BaseException:
        copied.writer.abort()
        raise
    manifest = copied.manifest
    name = manifest["name"]
    previous, _ = catalog.neighbours(manifest["generation"], file_number(f.name))
    if previous is not None:
        after = previous.number
        on_server = any(after < file_number(g.name) < file_number(f.name) for g in listing)
        gap = None if on_server else _gap(previous.manifest, manifest)
        if gap:
            manifest["gap"] = gap
            log.error("%s: %s", source.url, gap["detail"])
    # orjson: json's encoder falls back to pure Python when it indents (bench/RESULTS.md, archive)
    store.put(manifest_key(source_name, name), orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    if "notice" in manifest:
        log.warning("%s: %s", source.url, manifest["notice"]["detail"])
    if store.exists(refused_key(source_name, f.name)):
        store.delete(refused_key(source_name, f.name))  # the gap the refusal left is closed
        log.info("%s: %s, refused by the server before, is archived now", source.url, f.name)
    log.info("%s: archived %s (%d bytes, %d transactions)", source.url, name, f.size,
             manifest["transaction_count"])
    return manifest


def gap_anomaly(source_name: str, manifest: dict) -> dict:
    """The GTID_GAP anomaly of a manifest that records files purged before they were archived."""
    return {"source": source_name, "binlog_file": name_of(manifest), "start_pos": 0,
            "end_pos": 0, "code": "GTID_GAP", "detail": manifest["gap"]["detail"], "severity": "error"}


@dataclass
class Copied:
    """A file copied whole and verified, its object not yet committed."""

    manifest: dict
    writer: Writer


AHEAD = 4  # runs of events received while earlier ones are checked, hashed and written (a few MiB)


def _copy(source, store, source_name: str, f, *, catalog: Catalog, lease: Lease) -> Copied | None:
    """Copy and verify one file, None when it is archived already. Its head comes first: it says
    whether the file is archived, and else which generation it joins and under which key.
    While this thread receives a run of events, one thread checks and indexes the runs before
    it and another hashes and writes them: the socket's reads, CRC32, sha256 and the writes all
    let go of the GIL, so they overlap. Nothing is committed before every run is checked."""
    verifier = Verifier(f.name)
    # closed whatever happens: a failed copy must not keep its dump connection (and the server's
    # dump thread, which holds the file against PURGE) alive until the garbage collector runs
    stream = source.stream(f)
    try:
        head, taken = read_head(stream)
        if head is None:
            _refuse_head(verifier, taken)
        assert head is not None
        if catalog.find(f.name, f.size, head, source.server_uuid) is not None:
            stream.close()
            return None
        placed = catalog.place(f.name, head, source.server_uuid)
    except BaseException:
        stream.close()
        raise
    writer = store.writer(binlog_key(source_name, placed.name))
    try:
        # a run killed from here on leaves a write the next run discards
        lease.hold(writer.id, binlog_key(source_name, placed.name))
    except BaseException:
        stream.close()
        writer.abort()
        raise
    checker = ThreadPoolExecutor(1, thread_name_prefix="binlake-check")
    keeper = ThreadPoolExecutor(1, thread_name_prefix="binlake-write")
    ahead: deque[tuple[Future, Future]] = deque()
    try:
        magic = taken[0]
        verifier.magic(magic)
        writer.write(magic)
        try:
            for run in _batched(itertools.chain(taken[1:], stream)):
                ahead.append((checker.submit(verifier.events, run), keeper.submit(_keep, verifier, writer, run)))
                if len(ahead) > AHEAD:
                    _done(ahead.popleft())
        except BaseException:
            _drain(ahead)  # a run handed over before the source failed was bad: that comes first
            raise
        _drain(ahead)
        verifier.finish()
        if verifier.size != f.size:
            raise BinlogError(f.name, verifier.size, f"copied {verifier.size} bytes but the source lists "
                                                     f"{f.size}: the copy is incomplete")
    except BaseException:
        for pool in (checker, keeper):  # nothing writes while the object is dropped
            pool.shutdown(wait=True, cancel_futures=True)
        writer.abort()
        raise
    finally:
        stream.close()
        checker.shutdown()
        keeper.shutdown()
    extra = {"notice": placed.notice} if placed.notice else {}
    return Copied(verifier.manifest(name=placed.name, generation=placed.generation, head_sha256=head.fingerprint,
                                    source=source_name, source_url=source.url, server_uuid=source.server_uuid,
                                    archived_at=dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                                    **extra), writer)


def _refuse_head(verifier: Verifier, taken: list[bytes]) -> None:
    """A file whose first bytes hold no head: the verifier names what is wrong, where."""
    verifier.magic(taken[0] if taken else b"")
    verifier.events(b"".join(taken[1:]))
    raise BinlogError(verifier.name, verifier.pos, "no FORMAT_DESCRIPTION event at the start of the file")


def _batched(stream: Iterator[bytes], least: int = 1 << 18) -> Iterator[bytes]:
    """Runs of at least `least` bytes (but the last): events that come one by one (the
    reference path's packets) are handed to the threads together."""
    batch: list[bytes] = []
    size = 0
    for run in stream:
        batch.append(run)
        size += len(run)
        if size >= least:
            yield b"".join(batch)  # one run: itself, not a copy
            batch.clear()
            size = 0
    if batch:
        yield b"".join(batch)


def _keep(verifier: Verifier, writer, run: bytes) -> None:
    verifier.hash(run)
    writer.write(run)


def _done(pair: tuple[Future, Future]) -> None:
    """A run's check, then its write: the check's error first, it says what is wrong."""
    pair[0].result()
    pair[1].result()


def _drain(ahead: deque[tuple[Future, Future]]) -> None:
    """Wait for the runs in flight, in order; the first that failed raises."""
    while ahead:
        _done(ahead.popleft())


def _gap(last: dict, new: dict) -> dict | None:
    """What was lost between the last archived file and this one: purged files and their GTIDs."""
    base, digits = new["file"].rsplit(".", 1)  # the server's names, not the archive's
    lost = range(file_number(last["file"]) + 1, file_number(new["file"]))
    missing_files = [f"{base}.{n:0{len(digits)}d}" for n in lost]
    if new.get("flavor") == "mariadb":
        missing_gtids = _maria_missing(last, new)
    else:
        seen = union(parse_gtid_set(last.get("previous_gtids") or ""), parse_gtid_set(last.get("gtids") or ""))
        missing_gtids = str(subtract(parse_gtid_set(new.get("previous_gtids") or ""), seen))
    if not missing_files and not missing_gtids:
        return None
    what = []
    if missing_files:
        what.append(f"files {missing_files[0]}..{missing_files[-1]} were purged before they were archived")
    if missing_gtids:
        what.append(f"GTIDs {missing_gtids} are in no archived file")
    return {"missing_files": missing_files, "missing_gtids": missing_gtids,
            "detail": f"{new['file']}: " + "; ".join(what)}


def _maria_missing(last: dict, new: dict) -> str:
    """MariaDB: per domain, sequence numbers the new file's GTID_LIST has that the archive lacks."""
    seen: dict[str, int] = {}
    for g in filter(None, ",".join(filter(None, [last.get("previous_gtids"), last.get("gtids")])).split(",")):
        d, _, n = g.split("-")
        seen[d] = max(seen.get(d, 0), int(n))
    out = []
    for g in filter(None, (new.get("previous_gtids") or "").split(",")):
        d, server, n = g.split("-")
        if int(n) > seen.get(d, 0):
            out.append(maria_range(d, server, seen.get(d, 0) + 1, int(n)))
    return ",".join(out)
