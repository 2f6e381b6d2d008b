"""Waiting for a service in the tests: ask until a deadline, and take any not-ready answer (a
refused or reset connection, a timeout, an HTTP error such as 503, an empty body, JSON that does
not parse) as "not yet", never as the test's failure. Only the deadline fails the wait, saying
what was awaited and the last answer."""

from __future__ import annotations

import http.client
import json
import time
import urllib.request
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
# URLError, HTTPError (a 503) and socket errors are OSErrors; an empty body or a half-written
# page is a ValueError (JSONDecodeError); a connection closed mid-answer an HTTPException.
NOT_READY: tuple[type[BaseException], ...] = (OSError, ValueError, http.client.HTTPException)


def until(check: Callable[[], T], what: str, timeout: float, every: float = 0.5,
          not_ready: tuple[type[BaseException], ...] = NOT_READY) -> T:
    """check()'s first true answer, asked every `every` s; AssertionError at the deadline."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            got = check()
            if got:
                return got
            last = got
        except not_ready as e:
            last = e
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {timeout:.0f} s (last answer: {last!r})")
        time.sleep(every)


def json_at(request: str | urllib.request.Request, timeout: float = 10) -> dict:
    """A JSON answer of an HTTP endpoint (any not-ready answer raises one of NOT_READY)."""
    with urllib.request.urlopen(request, timeout=timeout) as r:
        return json.loads(r.read())
