"""The order in which pytest-xdist's workers take the test modules, and the clock that measures them.

Under `--dist loadfile` a module runs whole on one worker, which takes the next module of the
queue when it has two tests or fewer left. The queue is the collection's order, so the longest
modules go first and the last to start are short. A module's length is its seconds measured by the
last full run recorded in tests/module_durations.json (`make test TEST_ARGS=--record-module-durations`),
else an estimate from what its tests need.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

MEASURED = Path(__file__).parents[1] / "module_durations.json"

# A test's rough seconds by the heaviest thing it needs, for a module not measured yet.
COST = {"airflow": 90, "browser": 60, "spark": 15, "mysql": 0.5, "mariadb": 0.5, "s3": 0.5}
UNMARKED = 0.1


def module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def measured() -> dict[str, float]:
    if not MEASURED.is_file():
        return {}
    return json.loads(MEASURED.read_text())["seconds"]


def longest_first(items: list[pytest.Item]) -> None:
    """Sorts the items by their module's length, longest first; stable, so pytest-randomly's order
    stays within a module and between modules of one length. Every worker computes the same order."""
    estimate: dict[str, float] = defaultdict(float)
    for item in items:
        marks = {m.name for m in item.iter_markers()}
        estimate[module(item.nodeid)] += max([COST.get(m, 0) for m in marks] + [UNMARKED])
    known = measured()
    length = {m: known.get(m, e) for m, e in estimate.items()}
    items.sort(key=lambda item: -length[module(item.nodeid)])


class Clock:
    """In the controller (or a run without workers): each module's seconds, the sum of its tests'
    setup, call and teardown, module and session fixtures included; and each worker's busy time
    against the time its last test ended, which shows how well the order balanced the workers."""

    def __init__(self, record: bool) -> None:
        self.record = record
        self.seconds: dict[str, float] = defaultdict(float)
        self.busy: dict[str, float] = defaultdict(float)
        self.ended: dict[str, float] = {}
        self.began = float("inf")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        worker = getattr(getattr(report, "node", None), "gateway", None)
        name = worker.id if worker is not None else "main"
        self.seconds[module(report.nodeid)] += report.duration
        self.busy[name] += report.duration
        self.began = min(self.began, report.start)
        self.ended[name] = max(self.ended.get(name, 0.0), report.stop)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if set(self.busy) <= {"main"}:  # no workers: nothing to balance
            return
        for name in sorted(self.busy):
            terminalreporter.write_line(
                f"worker {name}: {self.busy[name] / 60:.1f} min in tests, "
                f"its last test ended {(self.ended[name] - self.began) / 60:.1f} min in")

    def pytest_sessionfinish(self) -> None:
        if not self.record or not self.seconds:
            return
        seconds = measured() | {m: round(s, 1) for m, s in self.seconds.items()}
        MEASURED.write_text(json.dumps({
            "about": "each test module's seconds in the last full `make test` that recorded them "
                     "(tests/support/module_order.py); the longest start first",
            "seconds": dict(sorted(seconds.items(), key=lambda kv: (-kv[1], kv[0]))),
        }, indent=1) + "\n")
