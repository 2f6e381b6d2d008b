"""Which compiled loops this process runs, for a command's first log line."""

from __future__ import annotations

from binlake.archive import loop
from binlake.binlog import fastrows, framing
from binlake.binlog.builds import pure_python


def compiled_paths() -> str:
    """A container whose extensions went missing (a bind mount over an editable install) says so
    instead of silently running the reference paths, much slower (bench/RESULTS.md)."""
    if pure_python():
        return "pure Python (BINLAKE_PURE_PYTHON=1)"
    found = {"row decoder _rowdecode": fastrows.enabled(), "copy loop _eventruns": loop() is not None,
             "frame walk _frames": framing.compiled()}
    missing = [name for name, ok in found.items() if not ok]
    return "compiled (row decoder, copy loop, frame walk)" if not missing else \
        f"NOT BUILT: {', '.join(missing)}: the pure-Python reference paths run (pip install binlake builds them)"
