"""A snapshot from DDL text: `mysqldump --no-data` output or `SHOW CREATE TABLE` texts, for a
source with no live server to capture (a dir:// archive, an old one).

The statements are replayed in order with the same SchemaState that replays a binlog's DDL, so an
import and a replay agree on every type; `USE db` sets the default database, as in the dump.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from binlake.schema.ddl import SchemaState
from binlake.schema.model import Snapshot

_USE = re.compile(r"^\s*USE\s+(`(?:[^`]|``)+`|\S+)\s*$", re.I)


def statements(text: str) -> Iterator[str]:
    """The statements of a SQL script: split at semicolons outside quotes and comments. Comments
    are dropped, but for executable ones (`/*!40100 DEFAULT CHARACTER SET … */`): the server ran them."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"`":
            j = i + 1
            while j < n and text[j] != ch:
                j += 2 if text[j] == "\\" and ch != "`" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            executable = text.startswith(("/*!", "/*M!"), i)  # run by the server: SchemaState.apply reads it
            out.append(text[i:j] if executable else " ")
            i = j
        elif text.startswith("--", i) and (i + 2 >= n or text[i + 2] in " \t\r\n") or ch == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
            out.append("\n")
        elif ch == ";":
            statement = "".join(out).strip()
            if statement:
                yield statement
            out = []
            i += 1
        else:
            out.append(ch)
            i += 1
    statement = "".join(out).strip()
    if statement:
        yield statement


def import_ddl(text: str, database: str = "", flavor: str = "mysql", *, point: dict | None = None,
               source: str | None = None) -> Snapshot:
    """The tables the text's CREATE statements define (later ALTERs, RENAMEs and DROPs applied)."""
    state = SchemaState(flavor=flavor)
    db = database
    for statement in statements(text):
        m = _USE.match(statement)
        if m:
            db = m[1].strip("`").replace("``", "`")
            continue
        state.apply(db, statement)
    tables = {k: t for k, t in state.tables.items() if t is not None}
    return Snapshot(tables, state.databases, point or {}, source, origin="import")
