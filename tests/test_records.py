"""Timestamps as the records carry them: RFC 3339 UTC with microseconds."""

from __future__ import annotations

import datetime as dt
import random

from binlake.records import ts_from_micros, ts_from_seconds


def test_timestamps_are_datetimes_text():
    rnd = random.Random(7)
    for m in [0, 1, 999_999, 1_000_000, 253_402_300_799_999_999] + [rnd.randrange(253_402_300_800_000_000)
                                                                    for _ in range(20_000)]:
        s, us = divmod(m, 1_000_000)
        when = dt.datetime.fromtimestamp(s, dt.UTC).replace(microsecond=us)
        assert ts_from_micros(m) == when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        assert ts_from_seconds(s) == when.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
