"""The compiled extensions are built with the event numbers of binlake/binlog/constants.py, their
one definition (binlake/binlog/_events.h), and one built with others is refused when it loads."""

from __future__ import annotations

import sys
import types

import pytest

from binlake.binlog import constants
from binlake.binlog.builds import extension

EXTENSIONS = ("binlake.binlog._frames", "binlake.binlog._rowdecode", "binlake.archive._eventruns")


@pytest.mark.parametrize("name", EXTENSIONS)
def test_each_extension_knows_the_numbers_of_constants_py(name):
    module = extension(name)
    assert module is not None, f"{name} is not built"
    # the oracle: constants.py, the numbers' definition (the servers' own, binlog_event.h)
    assert {k: getattr(constants, k) for k in module.EVENT_CONSTANTS} == module.EVENT_CONSTANTS
    assert {"QUERY_EVENT", "XID_EVENT", "GTID_LOG_EVENT", "MARIA_GTID_EVENT"} <= set(module.EVENT_CONSTANTS)


def test_an_extension_built_with_other_numbers_is_refused(monkeypatch):
    stale = types.ModuleType("binlake.binlog._stale")
    stale.EVENT_CONSTANTS = {"QUERY_EVENT": 2, "XID_EVENT": 17}  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "binlake.binlog._stale", stale)
    with pytest.raises(ImportError, match=r"XID_EVENT=17 \(constants.py: 16\)"):
        extension("binlake.binlog._stale")
    assert extension("binlake.binlog._not_built") is None  # no compiler at install: the reference paths
