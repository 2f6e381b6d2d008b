"""`scan --rows` keeps freed memory for reuse instead of having the kernel fault in fresh pages."""

from __future__ import annotations

import subprocess
import sys

FAULTS = """
import resource, sys
from binlake.malloc import keep_freed_memory
if sys.argv[1] == "on":
    assert keep_freed_memory()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):  # a segment's chunks of JSON lines (1-1.1 MiB each) made, written, freed; then the next
    chunks = [b"x" * ((1 << 20) + 4096 * k) for k in range(16)]
    del chunks
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    proc = subprocess.run([sys.executable, "-c", FAULTS, mode], capture_output=True, text=True, check=True)
    return int(proc.stdout)


def test_freed_chunks_are_reused_not_faulted_in_again():
    # 20 rounds of 16 MiB: by default most rounds fault every page in again (~4,000 a round)
    off, on = _faults("off"), _faults("on")
    assert off > 20_000 and on * 5 < off, (off, on)
