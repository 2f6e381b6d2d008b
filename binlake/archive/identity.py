"""A binlog file's identity, and the generation of the archive it belongs to.

Servers reuse file names: RESET BINARY LOGS AND GTIDS (MariaDB: RESET MASTER) starts again at
`.000001`, and a source name pointed at another server (a failover, a restore, a rebuilt
server) meets that server's names. So a file is known by its server and its **head**: the
FORMAT_DESCRIPTION event (its header's timestamp is when the server opened the file) and the
PREVIOUS_GTIDS or GTID_LIST event after it, hashed without the in-use flag and checksums.

A **generation** is one server history of a source: files that follow each other in name, in
time and in the server's own GTID chain. Generation 1 keeps the plain keys every manifest had
before generations existed; generation N > 1 archives `{file}@gNNNN` (docs/archive.md):

    {source}/binlogs/binlog.000001          generation 1
    {source}/binlogs/binlog.000001@g0002    generation 2: the same name after a reset

A file that fits no generation starts the next one, with a notice saying why.
"""

from __future__ import annotations

import hashlib
import logging
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from binlake.archive.chain import covers, follows, generation_of, name_of
from binlake.archive.keys import binlog_key
from binlake.archive.stores import MissingObject
from binlake.binlog import constants as c
from binlake.binlog.framing import parse_fde_body
from binlake.binlog.gtid import decode_gtid_list, decode_previous_gtids
from binlake.records import ts_from_seconds

if TYPE_CHECKING:
    from binlake.archive.summaries import Manifests

log = logging.getLogger(__name__)

_HEADER = struct.Struct("<IBIIIH")
HEAD_EVENTS = 4  # PREVIOUS_GTIDS / GTID_LIST come right after FORMAT_DESCRIPTION (or START_ENCRYPTION)
HEAD_BYTES = 1 << 16  # read from an archived object whose manifest predates head fingerprints
_GTID_SETS = (c.PREVIOUS_GTIDS_LOG_EVENT, c.GTID_LIST_EVENT)


def archive_name(file: str, generation: int) -> str:
    """The name a file is archived under: its own in generation 1, `{file}@gNNNN` after."""
    return file if generation <= 1 else f"{file}@g{generation:04d}"


def server_file(name: str) -> str:
    """The server's name of an archived file (`binlog.000001@g0002` -> `binlog.000001`)."""
    return name.split("@", 1)[0]


def file_number(name: str) -> int:
    """The number of a server's or an archived file's name (`binlog.000007@g0002` -> 7)."""
    return int(server_file(name).rsplit(".", 1)[1])


@dataclass(frozen=True)
class Head:
    """What identifies a file, read from its first events."""

    fingerprint: str  # sha256 of the head events, in-use flag and checksums left out
    server_id: int
    created: str  # the FORMAT_DESCRIPTION's time: when the server opened the file
    previous_gtids: str  # the GTIDs before the file (MySQL set, MariaDB GTID_LIST), "" when none
    flavor: str


def parse_head(data: bytes | memoryview, complete: bool = False) -> Head | None:
    """The head of a file from its first bytes (magic included); None while more bytes are
    needed, or (`complete`: the bytes are all there are) when they hold no FORMAT_DESCRIPTION."""
    if bytes(data[:4]) != c.MAGIC:
        return None
    sha = hashlib.sha256()
    off, n, seen = 4, len(data), 0
    fde = None
    previous = ""
    server_id, created = 0, 0
    while off + 19 <= n and seen < HEAD_EVENTS:
        ts, type_code, sid, size, _, _ = _HEADER.unpack_from(data, off)
        if size < 19 or off + size > n:
            break
        event = bytearray(data[off:off + size])
        event[17:19] = b"\0\0"  # LOG_EVENT_BINLOG_IN_USE_F is cleared when the file is closed
        if seen == 0:
            if type_code != c.FORMAT_DESCRIPTION_EVENT:
                return None
            try:
                fde = parse_fde_body(memoryview(data)[off + 19:off + size])
            except (ValueError, struct.error, IndexError, UnicodeDecodeError):
                return None
            server_id, created = sid, ts
        body_end = size - 4 if fde is not None and fde.has_checksum else size
        if seen == 0 or type_code in _GTID_SETS:
            sha.update(event[:body_end])
        if type_code in _GTID_SETS:
            body = memoryview(data)[off + 19:off + body_end]
            try:
                previous = (str(decode_previous_gtids(body)) if type_code == c.PREVIOUS_GTIDS_LOG_EVENT
                            else ",".join(decode_gtid_list(body)))
            except (ValueError, struct.error, IndexError):
                return None  # the copy's verifier names the corrupt event
            seen = HEAD_EVENTS
            break
        seen += 1
        off += size
    if fde is None or (seen < HEAD_EVENTS and not complete):
        return None
    return Head(sha.hexdigest(), server_id, ts_from_seconds(created), previous, fde.flavor)


def read_head(stream: Iterator[bytes]) -> tuple[Head | None, list[bytes]]:
    """Take a file's stream (see sources.py) until its head is read: the head (None when the
    bytes are no binlog: the verifier says why) and the chunks taken, to be written first."""
    taken: list[bytes] = []
    data = b""
    for chunk in stream:
        taken.append(chunk)
        data += chunk
        head = parse_head(data)
        if head is not None or len(data) > HEAD_BYTES:
            return head, taken
    return parse_head(data, complete=True), taken


@dataclass
class Archived:
    """One archived file, as its manifest tells it."""

    name: str  # archive name
    file: str  # server's name
    generation: int
    server_uuid: str | None
    server_id: int | None
    fingerprint: str | None  # None: a manifest from before fingerprints (read from the object)
    created: str
    previous_gtids: str
    gtids: str
    flavor: str
    manifest: dict = field(repr=False, default_factory=dict)

    @classmethod
    def of(cls, m: dict) -> Archived:
        return cls(name_of(m), m["file"], generation_of(m), m.get("server_uuid"),
                   m.get("server_id"), m.get("head_sha256"), m.get("first_event_ts") or "",
                   m.get("previous_gtids") or "", m.get("gtids") or "", m.get("flavor") or "mysql", m)

    @property
    def number(self) -> int:
        return file_number(self.file)

    def same_server(self, server_uuid: str | None, server_id: int | None) -> bool:
        """Whether a file comes from this one's server: its uuid where both are known (a
        directory gives none), and its server_id."""
        if self.server_uuid and server_uuid and self.server_uuid != server_uuid:
            return False
        return self.server_id is None or server_id is None or self.server_id == server_id


@dataclass(frozen=True)
class Placement:
    """Where a new file goes: its generation, archive name, and the notice of a new generation."""

    generation: int
    name: str
    notice: dict | None = None


class Catalog:
    """What a source has archived, by generation; consulted and added to as a run archives."""

    def __init__(self, store, source: str, manifests: Manifests) -> None:
        self.store, self.source = store, source
        self.manifests = manifests
        self.entries = [Archived.of(m) for m in manifests]

    @classmethod
    def load(cls, store, source: str) -> Catalog:
        """From the manifests' summaries (binlake.archive.summaries): no file's index is read."""
        from binlake.archive import summaries

        return cls(store, source, summaries.load(store, source))

    def add(self, manifest: dict) -> Archived:
        entry = Archived.of(manifest)
        self.entries = [e for e in self.entries if e.name != entry.name] + [entry]
        self.manifests.add(manifest)
        return entry

    def save(self) -> None:
        """The manifests' summaries written, once the manifests added are."""
        self.manifests.save()

    def generation(self, g: int) -> list[Archived]:
        return sorted((e for e in self.entries if e.generation == g), key=lambda e: e.number)

    def latest(self) -> int:
        return max((e.generation for e in self.entries), default=0)

    def fingerprint(self, e: Archived) -> str | None:
        """An archived file's head fingerprint: its manifest's, or read from its object."""
        if e.fingerprint is None:

            try:
                with self.store.open_range(binlog_key(self.source, e.name), 0, HEAD_BYTES) as rng:
                    head = parse_head(rng.data, complete=True)
            except MissingObject:
                return None
            e.fingerprint = head.fingerprint if head else ""
        return e.fingerprint or None

    def find(self, file: str, size: int, head: Head, server_uuid: str | None) -> Archived | None:
        """The archived copy of this very file (same name, size, server and head), if there is
        one. The size tells apart files opened in the same second with the same GTIDs before."""
        for e in self.entries:
            if (e.file == file and e.manifest.get("size") == size and e.same_server(server_uuid, head.server_id)
                    and self.fingerprint(e) == head.fingerprint):
                return e
        return None

    def named(self, file: str) -> list[Archived]:
        return [e for e in self.entries if e.file == file]

    def neighbours(self, g: int, number: int) -> tuple[Archived | None, Archived | None]:
        """The archived files of generation g just before and just after a file number."""
        files = self.generation(g)
        before = [e for e in files if e.number < number]
        after = [e for e in files if e.number > number]
        return (before[-1] if before else None), (after[0] if after else None)

    def _fits(self, g: int, file: str, head: Head, server_uuid: str | None) -> bool:
        """Whether a file continues generation g: its name is free there, it comes from the same
        server, and it sits between its neighbours in time and in the server's GTID chain."""
        if any(e.file == file for e in self.generation(g)):
            return False
        before, after = self.neighbours(g, file_number(file))
        for e in filter(None, (before, after)):
            if not e.same_server(server_uuid, head.server_id) or e.flavor != head.flavor:
                return False
        if before and not (before.created <= head.created
                           and covers(head.previous_gtids, follows(before.previous_gtids, before.gtids,
                                                                   head.flavor), head.flavor)):
            return False
        return not (after and not (head.created <= after.created
                                   and covers(after.previous_gtids, head.previous_gtids, head.flavor)))

    def place(self, file: str, head: Head, server_uuid: str | None) -> Placement:
        """The generation a new file joins, the newest it fits; else a new one, with a notice."""
        latest = self.latest()
        for g in range(latest, 0, -1):
            if self._fits(g, file, head, server_uuid):
                return Placement(g, archive_name(file, g))
        if latest == 0:
            return Placement(1, file)
        g = latest + 1
        last = self.generation(latest)[-1]
        if last.same_server(server_uuid, head.server_id):
            kind, why = "reset", ("the server started its binary log over (RESET BINARY LOGS AND GTIDS, "
                                  "RESET MASTER) or restarted its numbering")
        else:
            kind, why = "new_server", ("another server writes under this source name (a failover, a "
                                       "restore or a rebuilt server)")
        earlier = max((e.generation for e in self.named(file)), default=0)
        clash = f"; an earlier {file} is archived in generation {earlier}" if earlier else ""
        detail = (f"{file}: a new generation {g} of source {self.source}: {why}{clash}; archived as "
                  f"{archive_name(file, g)}, nothing overwritten")
        return Placement(g, archive_name(file, g), {"kind": kind, "generation": g, "file": file,
                                                     "after": last.name, "detail": detail})
