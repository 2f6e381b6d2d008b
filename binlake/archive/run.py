"""Archive the rotated binlog files of a source into a store: binlog object, then manifest."""

from __future__ import annotations

import datetime as dt
import json
import logging
from dataclasses import dataclass, field

from binlake.archive.verify import Verifier
from binlake.binlog.gtid import parse_gtid_set, subtract, union
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


def archive(source, store, source_name: str) -> ArchiveResult:
    """Copy every rotated file without a manifest; a manifest's presence means "safely archived".

    The object is verified while it streams (CRC32, positions, size against the source's
    listing, sha256) and committed only whole; the manifest is written after it.
    """
    store.check()
    result = ArchiveResult()
    files = sorted(source.files(), key=lambda f: file_number(f.name))
    log.info("%s: %d rotated files", source.url, len(files))
    last = _last_manifest(store, source_name)
    for f in files:
        if store.exists(manifest_key(source_name, f.name)):
            result.skipped.append(f.name)
            continue
        manifest = _copy(source, store, source_name, f)
        if last is not None and file_number(f.name) > file_number(last["file"]):
            gap = _gap(last, manifest)
            if gap:
                manifest["gap"] = gap
                result.gaps.append({"source": source_name, "binlog_file": f.name, "start_pos": 0,
                                    "end_pos": 0, "code": "GTID_GAP", "detail": gap["detail"],
                                    "severity": "error"})
                log.error("%s: %s", source.url, gap["detail"])
        store.put(manifest_key(source_name, f.name), json.dumps(manifest, indent=1).encode())
        if last is None or file_number(f.name) > file_number(last["file"]):
            last = manifest
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
    return verifier.manifest(source=source_name, source_url=source.url, server_uuid=source.server_uuid,
                             archived_at=dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))


def file_number(name: str) -> int:
    return int(name.rsplit(".", 1)[1])


def _last_manifest(store, source_name: str) -> dict | None:
    names = [k.rsplit("/", 1)[1][:-len(".json")] for k in store.keys(f"{source_name}/manifests")]
    names = [n for n in names if n.rsplit(".", 1)[-1].isdigit()]
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
            out.append(f"{d}-{server}-{seen.get(d, 0) + 1}..{n}")
    return ",".join(out)
