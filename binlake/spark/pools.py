"""Spark jobs from several threads of one session. Much of a small Delta write is the driver's (the
log read, planning, the commit), which one table at a time leaves the cores idle for; each thread's
jobs go to a FAIR scheduler pool of its own (settings.SCHEDULER), beside the other threads', not
queued behind them."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from pyspark import SparkContext

T = TypeVar("T")
K = TypeVar("K")
# The tables read or written at once: each table's Delta work is mostly the driver's and waits (its
# log, planning; on S3, requests), not the cores'.
TABLE_THREADS = 4


def in_pool(sc: SparkContext, pool: str, fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` with this thread's Spark jobs in scheduler pool `binlake-{pool}`."""
    sc.setLocalProperty("spark.scheduler.pool", f"binlake-{pool}")
    return fn(*args)


def each(sc: SparkContext, items: Iterable[K], fn: Callable[[K], T], *, threads: int, name: str) -> list[T]:
    """`fn(item)` for every item, on `threads` threads; their results in the items' order once all
    have ended (none is left running when one fails: the first failure in that order is raised then)."""
    def run(item: K) -> T:  # a scheduler pool per thread: no two of its jobs queue in one
        return in_pool(sc, threading.current_thread().name, fn, item)

    items = list(items)
    with ThreadPoolExecutor(max(1, min(threads, len(items))), thread_name_prefix=name) as pool:
        futures = [pool.submit(run, item) for item in items]
    return [f.result() for f in futures]
