"""Which archiver runs of a source are alive, and cleaning up the writes dead ones left.

An archiver killed mid-copy (SIGKILL, an OOM kill, a lost node) leaves its write unfinished:
on S3 an incomplete multipart upload, stored and billed until someone aborts it; in a file
store a temporary file. Nothing half-written is ever presented as complete (a manifest comes
after its object), but it costs. So each run holds a lease, `{source}/leases/{run}.json`: its
host, process id and process start, and the writes it began, renewed every RENEW seconds. A
run begins by discarding the unfinished writes under `{source}/` that no live run owns:

- those a dead run's lease lists: its process is gone (same host), or its lease has not been
  renewed for STALE (another host);
- those no lease lists, when no other run is alive, or when they began more than STALE ago (a
  live run lists a write right after it begins it).

An S3 that lists multipart uploads by an object's exact name only (MinIO) is asked object by
object: the objects the leases name (a lease lists each write with its key) and the source's
binlog objects the run is given.

The bucket's lifecycle rule (AbortIncompleteMultipartUpload, docs/archive.md) is the second
line of defence.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import socket
import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from binlake.archive import keys
from binlake.errors import BinlakeError

log = logging.getLogger(__name__)

RENEW = dt.timedelta(seconds=60)
STALE = dt.timedelta(minutes=10)  # a lease not renewed for this long belongs to a dead run


def lease_key(source: str, run: str) -> str:
    return keys.lease_key(source, run)


def _started(pid: int) -> str | None:
    """When a process started (clock ticks since boot, /proc), or None when there is none. Where
    /proc is missing, "running" for a process that exists: a reused pid then looks alive."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]  # field 22, after the command's parenthesis
    except FileNotFoundError:
        if os.path.isdir("/proc"):
            return None
    except OSError:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return "running"


@dataclass
class Lease:
    """This run's lease on a source's store prefix: `with Lease(store, source) as lease: …`."""

    store: object
    source: str
    run: str = field(default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    writes: set[str] = field(default_factory=set)
    keys: dict[str, str] = field(default_factory=dict)  # each write's object key
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def key(self) -> str:
        return lease_key(self.source, self.run)

    def _record(self) -> None:
        with self._lock:
            body = {"run": self.run, "host": socket.gethostname(), "pid": os.getpid(),
                    "started": _started(os.getpid()), "writes": sorted(self.writes), "keys": dict(self.keys),
                    "renewed": dt.datetime.now(dt.UTC).isoformat()}
            self.store.put(self.key, json.dumps(body).encode())  # type: ignore[attr-defined]

    def hold(self, write: str, key: str) -> None:
        """A write this run began, of the object `key`: listed before anything is sent to it."""
        self.writes.add(write)
        self.keys[write] = key
        self._record()

    def finished(self, write: str) -> None:
        """A write this run committed or aborted: no longer listed from the next renewal on (a run
        of many writes, a snapshot's chunks, does not carry them all in its lease)."""
        with self._lock:
            self.writes.discard(write)
            self.keys.pop(write, None)

    def _renew(self) -> None:
        while not self._stop.wait(RENEW.total_seconds()):
            try:
                self._record()
            except BinlakeError as e:  # the store is gone: the copy itself will say so
                log.warning("%s: cannot renew the lease %s: %s", self.source, self.key, e)

    def __enter__(self) -> Lease:
        self._record()
        threading.Thread(target=self._renew, name="binlake-lease", daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        try:
            self.store.delete(self.key)  # type: ignore[attr-defined]
        except BinlakeError as e:  # left behind, it is a dead run's lease: the next run removes it
            log.warning("%s: cannot remove the lease %s: %s", self.source, self.key, e)


def alive(lease: dict, now: dt.datetime) -> bool:
    """Whether the run holding a lease is alive: its process (same host), or a recent renewal."""
    if lease.get("host") == socket.gethostname():
        return lease.get("started") is not None and _started(int(lease["pid"])) == lease["started"]
    return now - dt.datetime.fromisoformat(lease["renewed"]) < STALE


def clean(store, source: str, own: Lease, objects: Iterable[str] = ()) -> int:
    """Discard the unfinished writes under a source that no live run owns; the number discarded.
    Besides the listing under the source's prefix, the writes of the objects the leases name and
    of `objects` (the keys of the source's binlog objects) are looked up object by object: an S3
    such as MinIO lists multipart uploads by an object's exact name only, and a prefix finds none
    there."""
    now = dt.datetime.now(dt.UTC)
    leases = []
    for key in store.keys(keys.leases_prefix(source)):
        try:
            leases.append((key, json.loads(store.get(key))))
        except (FileNotFoundError, BinlakeError, ValueError):
            continue  # gone meanwhile (its run ended), or unreadable: its writes are judged by age
    live = [body for key, body in leases if body.get("run") != own.run and alive(body, now)]
    dead = [(key, body) for key, body in leases if body.get("run") != own.run and not alive(body, now)]
    owned = own.writes.union(*(body.get("writes", []) for body in live))
    orphaned = set().union(*(body.get("writes", []) for _, body in dead))
    named = set(objects).union(*((body.get("keys") or {}).values() for _, body in leases))
    discarded = 0
    for w in store.unfinished(keys.source_prefix(source), sorted(named)):
        if w.id in owned:
            continue
        stale = now - w.started > STALE
        if w.id.startswith(f"{keys.leases_prefix(source)}/") and not stale:
            continue  # a run's lease being recorded, the first time before any lease lists it
        if w.id in orphaned or not live or stale:
            store.discard(w)
            discarded += 1
    for key, _ in dead:
        store.delete(key)
    if discarded:
        log.warning("%s: discarded %d unfinished write(s) left by archiver runs that died mid-copy",
                    source, discarded)
    return discarded
