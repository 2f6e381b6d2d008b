"""A manifest's transaction index, read and written in one place: one typed entry per transaction.

A manifest (docs/archive.md) keeps its file's index as JSON lists, `[start, length, txn_id,
commit_ts]`, compact for files of a million transactions; everything that reads or writes them
goes through Indexed.
"""

from __future__ import annotations

from typing import NamedTuple


class Indexed(NamedTuple):
    """One transaction of a manifest's index: where it lies, its id and its commit time."""

    start: int
    length: int
    txn_id: str
    commit_ts: str

    def stored(self) -> list:
        """As a manifest stores it."""
        return list(self)


def index_of(manifest: dict) -> list[Indexed]:
    """A manifest's transaction index (none in a summary: binlake.archive.summaries)."""
    return [Indexed(*e) for e in manifest.get("transactions") or []]


def first_commit_ts(manifest: dict) -> str | None:
    """Its first transaction's commit time: a manifest's index's, else its summary's."""
    entries = manifest.get("transactions")
    if entries:
        return Indexed(*entries[0]).commit_ts
    return None if entries is not None else manifest.get("first_commit_ts")
