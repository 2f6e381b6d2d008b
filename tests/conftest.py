"""Shared fixtures. In CI (CI=true) a missing server or data set fails the run, never skips it."""

from __future__ import annotations

import os

import pytest

from tests.support.scanning import PUBLIC


def require(condition: bool, what: str) -> None:
    if condition:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is missing in CI")
    pytest.skip(f"{what} is missing")


@pytest.fixture(scope="session")
def public_binlogs():
    require(PUBLIC.is_dir(), f"the public binlog corpus ({PUBLIC})")
    return PUBLIC
