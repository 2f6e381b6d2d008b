"""Archive the rotated binlog files of a source into a store: binlog object, then manifest."""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import orjson

from binlake.archive.stores import Writer
from binlake.archive.verify import Verifier
from binlake.binlog.gtid import maria_range, parse_gtid_set, subtract, union
from binlake.errors import BinlogError

log = logging.getLogger(__name__)


@dataclass
class ArchiveResult:
    archived: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    bytes: int = 0
    gaps: list[dict] = field(default_factory=list)  # GTID_GAP anomalies: files purged before archiving


def binlog_key(source: str, name: str) -> str:
    return f"{source}/binlogs/{name}"


def manifest_key(source: str, name: str) -> str:
    return f"{source}/manifests/{name}.json"


def pending(source, store, source_name: str) -> list:
    """The rotated files of a source that have no manifest yet, in binlog order."""
    store.check()
    files = sorted(source.files(), key=lambda f: file_number(f.name))
    log.info("%s: %d rotated files", source.url, len(files))
    return [f for f in files if not store.exists(manifest_key(source_name, f.name))]


def archive(source, store, source_name: str) -> ArchiveResult:
    """Copy every rotated file without a manifest; a manifest's presence means "safely archived".

    The object is verified while it streams (CRC32, positions, size against the source's
    listing, sha256) and committed only whole; the manifest is written after it. A file's
    commit (its fsync or upload's completion, then its manifest) runs while the next file
    copies; commits stay in file order.
    """
    store.check()
    result = ArchiveResult()
    files = sorted(source.files(), key=lambda f: file_number(f.name))
    log.info("%s: %d rotated files", source.url, len(files))

    def done(manifest: dict, f) -> None:
        if "gap" in manifest:
            result.gaps.append(gap_anomaly(source_name, manifest))
        result.archived.append(f.name)
        result.bytes += f.size

    with ThreadPoolExecutor(1, thread_name_prefix="binlake-commit") as committer:
        waiting: tuple[Future, object] | None = None
        for f in files:
            if store.exists(manifest_key(source_name, f.name)):
                result.skipped.append(f.name)
                continue
            copied = _copy(source, store, source_name, f)
            if waiting is not None:
                try:
                    done(waiting[0].result(), waiting[1])
                except BaseException:
                    copied.writer.abort()  # the file before failed to commit: this one is not committed either
                    raise
            waiting = (committer.submit(_commit, source, store, source_name, f, files, copied), f)
        if waiting is not None:
            done(waiting[0].result(), waiting[1])
    return result


def archive_file(source, store, source_name: str, f, listing: list) -> dict | None:
    """Archive one rotated file (None when it already is). Files of one source may be archived
    concurrently (one Airflow task each): a purge gap is looked for only where the file before
    this one is gone from the server, since the server's own files follow each other."""
    if store.exists(manifest_key(source_name, f.name)):
        return None
    return _commit(source, store, source_name, f, listing, _copy(source, store, source_name, f))


def _commit(source, store, source_name: str, f, listing: list, copied: Copied) -> dict:
    """Commit a copied file's object, then write its manifest."""
    try:
        copied.writer.commit()
    except BaseException:
        copied.writer.abort()
        raise
    manifest = copied.manifest
    key = manifest_key(source_name, f.name)
    previous = _previous_manifest(store, source_name, f.name)
    if previous is not None:
        after = file_number(previous["file"])
        on_server = any(after < file_number(g.name) < file_number(f.name) for g in listing)
        gap = None if on_server else _gap(previous, manifest)
        if gap:
            manifest["gap"] = gap
            log.error("%s: %s", source.url, gap["detail"])
    # orjson: json's encoder falls back to pure Python when it indents (bench/RESULTS.md, archive)
    store.put(key, orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    log.info("%s: archived %s (%d bytes, %d transactions)", source.url, f.name, f.size,
             manifest["transaction_count"])
    return manifest


def gap_anomaly(source_name: str, manifest: dict) -> dict:
    """The GTID_GAP anomaly of a manifest that records files purged before they were archived."""
    return {"source": source_name, "binlog_file": manifest["file"], "start_pos": 0, "end_pos": 0,
            "code": "GTID_GAP", "detail": manifest["gap"]["detail"], "severity": "error"}


@dataclass
class Copied:
    """A file copied whole and verified, its object not yet committed."""

    manifest: dict
    writer: Writer


AHEAD = 4  # runs of events received while earlier ones are checked, hashed and written (a few MiB)


def _copy(source, store, source_name: str, f) -> Copied:
    """Copy and verify one file. While this thread receives a run of events, one thread checks
    and indexes the runs before it and another hashes and writes them: the socket's reads,
    CRC32, sha256 and the writes all let go of the GIL, so they overlap. Nothing is committed
    before every run is checked."""
    verifier = Verifier(f.name)
    writer = store.writer(binlog_key(source_name, f.name))
    checker = ThreadPoolExecutor(1, thread_name_prefix="binlake-check")
    keeper = ThreadPoolExecutor(1, thread_name_prefix="binlake-write")
    ahead: deque[tuple[Future, Future]] = deque()
    # closed whatever happens: a failed copy must not keep its dump connection (and the server's
    # dump thread, which holds the file against PURGE) alive until the garbage collector runs
    stream = source.stream(f)
    try:
        magic = next(stream, b"")
        verifier.magic(magic)
        writer.write(magic)
        try:
            for run in _batched(stream):
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
    return Copied(verifier.manifest(source=source_name, source_url=source.url, server_uuid=source.server_uuid,
                                    archived_at=dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")), writer)


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


def file_number(name: str) -> int:
    return int(name.rsplit(".", 1)[1])


def _previous_manifest(store, source_name: str, name: str) -> dict | None:
    """The manifest of the archived file just before `name` in binlog order."""
    names = [k.rsplit("/", 1)[1][:-len(".json")] for k in store.keys(f"{source_name}/manifests")]
    names = [n for n in names if n.rsplit(".", 1)[-1].isdigit() and file_number(n) < file_number(name)]
    if not names:
        return None
    return json.loads(store.get(manifest_key(source_name, max(names, key=file_number))))


def _gap(last: dict, new: dict) -> dict | None:
    """What was lost between the last archived file and this one: purged files and their GTIDs."""
    base, digits = new["file"].rsplit(".", 1)
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
