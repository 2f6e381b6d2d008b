"""A range the driver reads itself (binlake.spark.settings.in_driver: no bigger than one split, no
big transaction), read on a thread from the moment it is planned: the schema states its splits
start from (binlake.splits.schemas), then its facts pass and its rows pass (binlake.spark.passes),
as Arrow tables. `binlake assemble` starts it before the SparkSession, so that the range is read
while the JVM starts (seconds in which Python waits); the job (binlake.spark.job.Job) takes the
passes from it instead of reading the range again. The job makes one itself where none was
started: every range the driver reads goes this one way.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass

import pyarrow as pa

from binlake.assemble.walk import Options
from binlake.schema.ddl import SchemaState
from binlake.spark import schema
from binlake.spark.passes import Held, facts_task, rows_task, run_here
from binlake.splits import schemas
from binlake.splits.plan import Plan

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DriverPasses:
    """A range's passes as the driver read them."""

    states: list[SchemaState] | None  # the schema states its splits start from; None without a history
    facts: pa.Table  # of binlake.spark.schema.STAGED
    rows: pa.Table  # of binlake.spark.schema.ROW_CHANGES


class ReadAhead:
    """`ReadAhead(plan, opts)` starts reading; `passes()` waits for what it read (or raises what
    stopped it)."""

    def __init__(self, planned: Plan, opts: Options) -> None:
        if planned.bigs:
            raise ValueError("a range with a big transaction is read by Spark's tasks, not ahead by the driver")
        self.plan, self.opts = planned, opts
        self._done: Future[DriverPasses] = Future()
        threading.Thread(target=self._run, name="binlake-read-ahead", daemon=True).start()

    def passes(self) -> DriverPasses:
        return self._done.result()

    def _run(self) -> None:
        try:
            self._done.set_result(self._read())
        except BaseException as e:  # noqa: BLE001 - handed to the job, which raises it where it waits
            self._done.set_exception(e)

    def _read(self) -> DriverPasses:
        began = time.monotonic()
        p, store = self.plan, self.plan.store
        splits = list(p.splits)
        states = schemas.states_for(p, splits, lambda files: {f: schemas.archived_ddl(store, *f) for f in files})
        held = Held(states) if states is not None else None
        facts = run_here(facts_task(self.opts, held), splits, schema.STAGED)
        rows = run_here(rows_task(self.opts, None, held), splits, schema.ROW_CHANGES)
        log.info("read ahead by the driver: %d splits of %d bytes, %d records and %d row changes in %.2f s",
                 len(splits), p.bytes, facts.num_rows, rows.num_rows, time.monotonic() - began)
        return DriverPasses(states, facts, rows)
