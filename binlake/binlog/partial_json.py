"""MySQL's partial JSON updates (PARTIAL_UPDATE_ROWS events, `binlog_row_value_options=PARTIAL_JSON`):
a JSON column's diffs applied to its before image."""

from __future__ import annotations

import copy
from typing import Any

from pymysqlreplication.json_binary import JsonDiffOperation


def _parse_path(path: str) -> list:
    """'$.a[2]."b c"' -> ['a', 2, 'b c']."""
    out: list = []
    i = 1
    while i < len(path):
        ch = path[i]
        if ch == ".":
            i += 1
            if i < len(path) and path[i] == '"':
                j = path.index('"', i + 1)
                out.append(path[i + 1:j])
                i = j + 1
            else:
                j = i
                while j < len(path) and path[j] not in ".[":
                    j += 1
                out.append(path[i:j])
                i = j
        elif ch == "[":
            j = path.index("]", i)
            out.append(int(path[i + 1:j]))
            i = j + 1
        else:
            raise ValueError(f"unsupported JSON path {path!r}")
    return out


def apply(doc, diffs: list[tuple[JsonDiffOperation, str, Any]]):
    """MySQL's binary JSON diffs, each (operation, path, value) with its path and value JSON-typed
    already, applied to the before image; without it, the diffs kept."""
    if doc is None:
        return {"$partial": [{"op": op.name, "path": path, "value": value} for op, path, value in diffs]}
    doc = copy.deepcopy(doc)
    for op, text, value in diffs:
        path = _parse_path(text)
        if not path:
            doc = value
            continue
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        last = path[-1]
        if op == JsonDiffOperation.Remove:
            del parent[last]
        elif op == JsonDiffOperation.Insert and isinstance(parent, list):
            parent.insert(last, value)
        else:
            parent[last] = value
    return doc
