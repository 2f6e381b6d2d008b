"""bench/RESULTS.md: each benchmark owns one `## ` section and replaces only that one."""

from __future__ import annotations

import os
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


def machine() -> str:
    """The machine as a run ended: its load and its speed on a fixed Python loop. The same machine
    runs at different speeds on different days, so only figures of one run compare."""
    began = time.perf_counter()
    sum(i * i for i in range(10_000_000))
    loop = time.perf_counter() - began
    return (f"The machine when the run ended: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, "
            f"a Python loop of 10 million squares in {loop:.2f} s.")


def publish(title: str, lines: list[str]) -> None:
    """Print a benchmark's report and write it as its section, saying which script made it and when
    and how fast the machine was then."""
    text = "\n".join([*lines, "", machine()])
    print(text)
    command = " ".join([str(Path(sys.argv[0]).resolve().relative_to(REPO)), *sys.argv[1:]])
    write_section(title, f"Made by `.venv/bin/python {command}` ({time.strftime('%Y-%m-%d')}).\n\n{text}")
