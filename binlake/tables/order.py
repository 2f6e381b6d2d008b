"""The source's commit order, as sortable text: `GGGG-NNNNNNNNNN-PPPPPPPPPPPPPPPP`.

Commit times tie (whole seconds on MariaDB, a group commit on MySQL) and file names start again
after a reset or a failover, so versions are ordered by where their transaction ends in the
archive: its generation (`binlog.000007@g0002` is generation 2, binlake/archive/identity.py), the
file's number, and the transaction's end offset. A snapshot's point `file:position` has the order
of the transaction that ends there. Fixed width, so that text comparison is the order in any engine
(and 32 characters, the prefix Delta keeps of a string's min/max statistics).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TypeVar

from binlake.errors import BinlakeError

T = TypeVar("T")

_NAME = re.compile(r"\.(\d+)(?:@g(\d+))?$")
WIDTH = 32

# A transaction's order from the `transactions` table's columns, in Spark SQL (docs/tables.md).
SQL = ("format_string('%04d-%010d-%016d', "
       "coalesce(cast(nullif(regexp_extract(binlog_file, '@g([0-9]+)$', 1), '') AS INT), 1), "
       "cast(regexp_extract(binlog_file, '\\\\.([0-9]+)(@g[0-9]+)?$', 1) AS BIGINT), end_pos)")


def place(name: str) -> tuple[int, int]:
    """(generation, number) of an archived file's name."""
    m = _NAME.search(name)
    if not m:
        raise BinlakeError(f"{name!r}: not a binlog file's archive name (basename.NNNNNN[@gNNNN])")
    return int(m[2] or 1), int(m[1])


def order(name: str, end_pos: int) -> str:
    """The order of the transaction of archived file `name` that ends at `end_pos` (or of the
    point `name:end_pos`)."""
    generation, number = place(name)
    return f"{generation:04d}-{number:010d}-{end_pos:016d}"


def prepare_of(commit: str, prepares: Iterable[tuple[str, T]]) -> T | None:
    """An XA COMMIT's prepare, whose rows it applies: of the XA PREPAREs of its xid (their order, a
    value), the last before the commit (order `commit`), of any date; None where there is none."""
    before = [(o, v) for o, v in prepares if o < commit]
    return max(before, key=lambda ov: ov[0])[1] if before else None
