"""One writer at a time per warehouse: Delta's rule on S3, enforced by binlake.

Delta commits a version by creating its log file only if it does not exist. A local or HDFS file
system does that atomically; S3 does not through Delta 4's S3 log store (S3SingleDriverLogStore:
"concurrent writes must originate from a single Spark driver"), so two drivers committing the same
version at once would lose one commit. binlake follows the rule by allowing one writing job per
warehouse, local or not (one rule, tested both ways): before it writes, a job records its lease
under `{warehouse}/_binlake/writers/{run}.json` (host, process, its start, renewed every minute)
and lists the others; when another live one is there, it withdraws its own and fails at once,
naming the holder, and a retry after the holder ends succeeds. Whichever of two jobs lists last
sees the other, so two never both write; both may fail (the rarer race), and both retries then
succeed one after the other. A lease whose process is gone (same host) or that was not renewed
for ten minutes (another host) is a dead job's (a SIGKILL, a lost node) and is removed.

In Airflow the writers (assemble, apply_tables, upkeep) share a one-slot pool: their runs queue
instead of failing here.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import socket
import threading

from binlake.archive.leases import RENEW, _started, alive
from binlake.errors import BinlakeError
from binlake.tables.state import warehouse_store

log = logging.getLogger(__name__)
PREFIX = "_binlake/writers"


class Busy(BinlakeError):
    """Another live job writes the warehouse."""


class WriterLease:
    """`with WriterLease(warehouse, run, what): …` — this job's right to write the warehouse."""

    def __init__(self, warehouse: str, run: str, what: str) -> None:
        self.warehouse = warehouse
        self.run = run
        self.what = what  # said to a job that finds this one writing: its range
        self.store = warehouse_store(warehouse)
        self.key = f"{PREFIX}/{run}.json"
        self._stop = threading.Event()
        self._renewer = threading.Thread(target=self._renew, name="binlake-writer-lease", daemon=True)

    def _record(self) -> None:
        pid = os.getpid()
        self.store.put(self.key, json.dumps({
            "run": self.run, "host": socket.gethostname(), "pid": pid, "started": _started(pid),
            "what": self.what, "renewed": dt.datetime.now(dt.UTC).isoformat()}).encode())

    def _others(self) -> list[dict]:
        """The other jobs' live leases; dead ones removed."""
        now = dt.datetime.now(dt.UTC)
        live = []
        for key in self.store.keys(PREFIX):
            if key == self.key:
                continue
            try:
                body = json.loads(self.store.get(key))
            except (FileNotFoundError, BinlakeError, ValueError):
                continue  # gone meanwhile, or being written
            if alive(body, now):
                live.append(body)
            else:
                log.warning("%s: removing the lease of a writer that died (%s, host %s, pid %s)", self.warehouse,
                            body.get("what"), body.get("host"), body.get("pid"))
                self.store.delete(key)
        return live

    def _renew(self) -> None:
        while not self._stop.wait(RENEW.total_seconds()):
            try:
                self._record()
            except BinlakeError as e:
                log.warning("%s: cannot renew the writer's lease: %s", self.warehouse, e)

    def __enter__(self) -> WriterLease:
        self._record()
        others = self._others()
        if others:
            self.store.delete(self.key)
            holder = others[0]
            raise Busy(f"{self.warehouse}: another job is writing it ({holder.get('what')}, host {holder.get('host')} "
                       f"pid {holder.get('pid')}, lease renewed {holder.get('renewed')}): one writer at a time "
                       "(docs/warehouse.md, \"Several writers\"); run again when it has ended")
        self._renewer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._renewer.join()  # no renewal after the removal
        try:
            self.store.delete(self.key)
        except BinlakeError as e:  # left behind, it is a dead job's lease: the next writer removes it
            log.warning("%s: cannot remove the writer's lease: %s", self.warehouse, e)
