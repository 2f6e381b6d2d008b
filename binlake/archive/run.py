"""Archive the rotated binlog files of a source into a store: binlog object, then manifest."""

from __future__ import annotations

import datetime as dt
import json
import logging
from dataclasses import dataclass, field

from binlake.archive.verify import Verifier
from binlake.errors import BinlogError

log = logging.getLogger(__name__)


@dataclass
class ArchiveResult:
    archived: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    bytes: int = 0


def binlog_key(source: str, name: str) -> str:
    return f"{source}/binlogs/{name}"


def manifest_key(source: str, name: str) -> str:
    return f"{source}/manifests/{name}.json"


def archive(source, store, source_name: str) -> ArchiveResult:
    """Copy every rotated file without a manifest; a manifest's presence means "safely archived".

    The object is verified while it streams (CRC32, positions, size against the source's
    listing, sha256) and committed only whole; the manifest is written after it.
    """
    store.check()
    result = ArchiveResult()
    files = source.files()
    log.info("%s: %d rotated files", source.url, len(files))
    for f in files:
        if store.exists(manifest_key(source_name, f.name)):
            result.skipped.append(f.name)
            continue
        manifest = _copy(source, store, source_name, f)
        store.put(manifest_key(source_name, f.name), json.dumps(manifest, indent=1).encode())
        result.archived.append(f.name)
        result.bytes += f.size
        log.info("%s: archived %s (%d bytes, %d transactions)", source.url, f.name, f.size,
                 manifest["transaction_count"])
    return result


def _copy(source, store, source_name: str, f) -> dict:
    verifier = Verifier(f.name)
    writer = store.writer(binlog_key(source_name, f.name))
    try:
        stream = source.stream(f)
        magic = next(stream, b"")
        verifier.magic(magic)
        writer.write(magic)
        for event in stream:
            verifier.event(event)
            writer.write(event)
        verifier.finish()
        if verifier.size != f.size:
            raise BinlogError(f.name, verifier.size, f"copied {verifier.size} bytes but the source lists "
                                                     f"{f.size}: the copy is incomplete")
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    return verifier.manifest(source=source_name, source_url=source.url,
                             archived_at=dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
