"""The archive stage: copy rotated binlog files to object storage, byte for byte, with manifests."""

from __future__ import annotations

import importlib
from types import ModuleType

from binlake import pure_python


def _built() -> ModuleType | None:
    try:
        return importlib.import_module("binlake.archive._eventruns")
    except ImportError:  # built without a C compiler: the reference path takes every packet and event
        return None


_eventruns = _built()


def loop() -> ModuleType | None:
    """The compiled copy loop (`_eventruns.c`), or None: not built, or `BINLAKE_PURE_PYTHON=1`."""
    return None if pure_python() else _eventruns
