"""Validation verdicts: what `binlake tables` asks before it applies a range (docs/tables.md, "Only
validated ranges").

Every validation run (binlake.spark.validate) leaves a small verdict in the quality directory,
`verdicts/{start}_{end}_{run}.json`: its range, sources, success and the Delta versions it read.
A range may be applied where verdicts cover it for the data as it is now — no assemble run committed
after a verdict's version over that part of the range — the newest such verdict deciding each part.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass
from pathlib import Path

from binlake.splits.times import compact_ts, parse_time

DIR = "verdicts"


@dataclass(frozen=True)
class Verdict:
    start: str
    end: str
    sources: list[str] | None  # None: every source
    success: bool
    versions: dict[str, int]
    run: str
    at: str  # when it was given

    def covers(self, source: str, start: str, end: str) -> bool:
        return self.start <= start and end <= self.end and (not self.sources or source in self.sources)


def record(quality: Path, run: str, start: str, end: str, *, sources: list[str] | None, success: bool,
           versions: dict[str, int]) -> Path:
    """A validation run's verdict, written whole (a rename)."""
    folder = quality / DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{compact_ts(parse_time(start))}_{compact_ts(parse_time(end))}_{run}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"start": parse_time(start), "end": parse_time(end), "sources": sources,
                               "success": success, "versions": versions, "run": run,
                               "at": dt.datetime.now(dt.UTC).isoformat()}))
    os.replace(tmp, path)
    return path


def read(quality: Path, start: str, end: str) -> list[Verdict]:
    """The verdicts whose ranges meet [start, end)."""
    folder = quality / DIR
    out = []
    for p in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        d = json.loads(p.read_text())
        if d["start"] < end and start < d["end"]:
            out.append(Verdict(d["start"], d["end"], d.get("sources"), bool(d["success"]), d.get("versions") or {},
                               d["run"], d["at"]))
    return out


def refusal(quality: Path, source: str, span: tuple[str, str], assembled: list[tuple[int, str, str, list[str]]]
            ) -> str | None:
    """Why [start, end) may not be applied for `source`, or None when validation passed over all of
    it. `assembled`: the `transactions` table's binlake commits (version, start, end, sources)."""
    for x, y, newest in _pieces(quality, source, span, assembled):
        if newest is None:
            return (f"no validation of {x}..{y} for source {source} has passed over the data as it is now "
                    f"(binlake validate --warehouse … --start {x} --end {y}; reports in {quality})")
        if not newest.success:
            return (f"the validation of {newest.start}..{newest.end} (run {newest.run}) failed: the tables are not "
                    f"advanced over it; its report: {quality}/runs/{newest.run}")
    return None


def deciding(quality: Path, source: str, span: tuple[str, str], assembled: list[tuple[int, str, str, list[str]]]
             ) -> list[Verdict]:
    """The verdicts that decide [start, end) for `source` (the newest current one over each part):
    the validation runs whose reports an applied range's row versions' suites join."""
    found = {v.run: v for _, _, v in _pieces(quality, source, span, assembled) if v is not None}
    return list(found.values())


def _pieces(quality: Path, source: str, span: tuple[str, str], assembled: list[tuple[int, str, str, list[str]]]
            ) -> list[tuple[str, str, Verdict | None]]:
    """[start, end) cut where verdicts and assemble runs begin or end; each part with the newest
    verdict covering it for the data as it is now (None: none does)."""
    start, end = span
    verdicts = read(quality, start, end)
    cuts = {start, end}
    for v in verdicts:
        cuts |= {t for t in (v.start, v.end) if start < t < end}
    for _, a, b, _ in assembled:
        cuts |= {t for t in (a, b) if start < t < end}
    points = sorted(cuts)
    out: list[tuple[str, str, Verdict | None]] = []
    for x, y in zip(points, points[1:], strict=False):
        def current(v: Verdict, x: str = x, y: str = y) -> bool:
            return not any(version > v.versions.get("transactions", -1) and a < y and x < b and source in sources
                           for version, a, b, sources in assembled)

        found = [v for v in verdicts if v.covers(source, x, y) and current(v)]
        out.append((x, y, max(found, key=lambda v: v.at) if found else None))
    return out
