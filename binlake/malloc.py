"""glibc's allocator tuned for a process that makes and frees big buffers by the thousand.

`scan --rows` writes its JSON lines in chunks of up to a few MiB each (with Rows_query events
on, every row carries its statement: a transaction's lines are MBs). By default glibc gives
such chunks their own mappings, or trims the heap as soon as they are freed, and the kernel
then faults in and zeroes fresh pages for the next ones: that took two thirds of such a scan.
Raising the two thresholds keeps freed memory in the heap for reuse; the peak stays what the
biggest segment needs.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1  # glibc's malloc.h
M_MMAP_THRESHOLD = -3


@functools.cache  # the thresholds are the process's: set once (a Spark worker asks at every task)
def keep_freed_memory(mmap_threshold: int = 64 << 20, trim_threshold: int = 256 << 20) -> bool:
    """Allocations under `mmap_threshold` come from the heap, and up to `trim_threshold` of
    free heap stays there; False (and nothing changed) where the C library is not glibc."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    done = bool(mallopt(M_MMAP_THRESHOLD, mmap_threshold)) and bool(mallopt(M_TRIM_THRESHOLD, trim_threshold))
    log.debug("malloc thresholds raised: %s", done)
    return done
