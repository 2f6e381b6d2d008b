"""bench/RESULTS.md: each benchmark owns one `## ` section and replaces only that one."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PATH = REPO / "bench" / "RESULTS.md"


# A section's hand-written findings go under this heading, which a run of its benchmark keeps.
NOTES = "### Notes\n"


def write_section(title: str, text: str) -> None:
    """Replace (or append) the section headed `## {title}`, but for its NOTES; the other sections
    stay as they are."""
    old = PATH.read_text() if PATH.exists() else "# Benchmark results\n"
    head = f"## {title}\n"
    notes = ""
    if head in old:
        before, rest = old.split(head, 1)
        end = rest.find("\n## ") if "\n## " in rest else len(rest)
        section, after = rest[:end], rest[end:]
        if NOTES in section:
            notes = "\n" + NOTES + section.split(NOTES, 1)[1].rstrip() + "\n"
        old = before.rstrip() + "\n\n" + after.lstrip("\n")
    PATH.write_text(old.rstrip() + f"\n\n{head}\n{text}\n{notes}")


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
