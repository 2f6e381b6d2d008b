"""The archive stage: copy rotated binlog files to object storage, byte for byte, with manifests."""

from __future__ import annotations

from types import ModuleType

from binlake.binlog.builds import extension, pure_python

# None: built without a C compiler, the reference path takes every packet and event
_eventruns = extension("binlake.archive._eventruns")


def loop() -> ModuleType | None:
    """The compiled copy loop (`_eventruns.c`), or None: not built, or `BINLAKE_PURE_PYTHON=1`."""
    return None if pure_python() else _eventruns
