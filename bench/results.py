"""bench/RESULTS.md: each benchmark owns one `## ` section and replaces only that one."""

from __future__ import annotations

import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PATH = REPO / "bench" / "RESULTS.md"


def write_section(title: str, text: str) -> None:
    """Replace (or append) the section headed `## {title}`; the other sections stay as they are."""
    old = PATH.read_text() if PATH.exists() else "# Benchmark results\n"
    head = f"## {title}\n"
    if head in old:
        before, rest = old.split(head, 1)
        after = rest[rest.find("\n## "):] if "\n## " in rest else ""
        old = before.rstrip() + "\n\n" + after.lstrip("\n")
    path_text = old.rstrip() + f"\n\n{head}\n{text}\n"
    PATH.write_text(path_text)


def publish(title: str, lines: list[str]) -> None:
    """Print a benchmark's report and write it as its section, saying which script made it and when."""
    text = "\n".join(lines)
    print(text)
    command = " ".join([str(Path(sys.argv[0]).resolve().relative_to(REPO)), *sys.argv[1:]])
    write_section(title, f"Made by `.venv/bin/python {command}` ({time.strftime('%Y-%m-%d')}).\n\n{text}")
