"""The times of a range as binlake compares and names them: the records' own text, UTC."""

from __future__ import annotations

import datetime as dt
import re

from binlake.errors import BinlakeError

EPOCH = "1970-01-01T00:00:00.000000Z"


def parse_time(text: str) -> str:
    """An ISO 8601 date or time (naive = UTC) in the records' own form, for comparisons."""
    try:
        t = dt.datetime.fromisoformat(text.strip().replace(" ", "T"))
    except ValueError:
        raise BinlakeError(f"{text!r}: not a date or time (use ISO 8601, e.g. 2026-11-22T10:00:00Z)") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.UTC)
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def compact_ts(ts: str) -> str:
    """A timestamp (parse_time's form) for file names: 20261122T100000Z."""
    return ts.replace(":", "").replace("-", "").replace(".000000", "")


def quality_run(start: str, end: str) -> str:
    """The name of a validation run of a range, under the warehouse's quality/runs/: the range and now."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{compact_ts(parse_time(start))}_{compact_ts(parse_time(end))}_{stamp}"


def check_quality_run(name: str) -> str:
    """A validation run's name as given: one directory's name, nothing that could leave quality/runs/."""
    if not re.fullmatch(r"[\w][\w.-]*", name):
        raise BinlakeError(f"{name!r}: a validation run's name is letters, digits, '_', '.' and '-'")
    return name
