"""The compiled extensions: whether they are built and on (`BINLAKE_PURE_PYTHON=1` turns them
off), and loading one, checked against the event numbers of constants.py it was compiled with."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

from binlake.binlog import constants


def pure_python() -> bool:
    """`BINLAKE_PURE_PYTHON=1`: the compiled loops are off and the reference paths do all."""
    return os.environ.get("BINLAKE_PURE_PYTHON", "") not in ("", "0")


def extension(name: str) -> ModuleType | None:
    """A compiled extension (`binlake.binlog._frames`, …), or None where it is not built (installed
    without a C compiler: the reference paths do its work). One compiled with other event numbers
    than constants.py's (a stale build) is refused, naming them: it would misread every file."""
    try:
        module = importlib.import_module(name)
    except ImportError:
        return None
    compiled: dict[str, int] = getattr(module, "EVENT_CONSTANTS", {})
    wrong = {k: v for k, v in compiled.items() if getattr(constants, k, None) != v}
    if wrong or not compiled:
        said = ", ".join(f"{k}={v} (constants.py: {getattr(constants, k, None)})" for k, v in sorted(wrong.items()))
        raise ImportError(f"{name} was built with other event numbers than binlake/binlog/constants.py "
                          f"({said or 'none exported'}): rebuild it (pip install -e .)")
    return module
