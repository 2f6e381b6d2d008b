"""Process trees, read from /proc: the benchmarks' CPU accounting and the stuck-test report walk them."""

from __future__ import annotations

from pathlib import Path


def tree(pid: int) -> list[int]:
    """`pid` and every process under it (children's children too)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out
