"""How a binlake process ends: at once, past the interpreter's teardown.

After a Spark command, Python's own teardown (the objects of Spark's, GX's and pandas's modules
freed one by one) took a second before the process ended (bench/RESULTS.md, bench/interval.py's
notes). Nothing a command leaves needs it: its output and logs are flushed here; the JVM of a
local session ends when its pipe closes, and spark-submit's when its Python driver has ended,
as either would anyway.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import NoReturn


def leave(status: int) -> NoReturn:
    """The process ended with `status`, its output and logs flushed first."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BrokenPipeError, ValueError):  # a reader gone, or the stream closed: nothing to say
            stream.flush()
    os._exit(status)
