"""Which tables of a source have no baseline and need one (`binlake snapshot --missing`, and the
archive DAG after each run).

The source's schema history (docs/schema.md: a snapshot of its tables at every archive run)
says which tables exist now (its newest snapshot) and which existed when archiving began (its
oldest). A table created since archiving began is complete from its CREATE in the archived
changelog: it needs no baseline. A table of the oldest snapshot needs one unless a complete
baseline of the source holds it, or left it out for good (an engine that takes no part in a
consistent snapshot). A name counts: a table dropped and created again after its baseline is
complete from that CREATE too.
"""

from __future__ import annotations

from binlake.baseline import layout
from binlake.errors import BinlakeError
from binlake.schema.history import loaded, snapshots


def covered(store, source: str) -> set[tuple[str, str]]:
    """The tables the source's complete baselines hold or left out for good."""
    out: set[tuple[str, str]] = set()
    for record in layout.baselines(store, source):
        out |= {(t["schema"], t["table"]) for t in record["tables"]}
        out |= {(s["schema"], s["table"]) for s in record["skipped"] if s["kind"] == "engine"}
    return out


def missing(store, source: str) -> list[str]:
    """`db.t` of every table of the source that needs a baseline and has none; [] without a
    schema history (nothing says which tables there are)."""
    try:
        history = snapshots(store, source)
        if not history:
            return []
        first, latest = loaded(store, history[0]), loaded(store, history[-1])
    except ValueError as e:
        raise BinlakeError(f"{store.url}: schema history of {source}: {e}") from None
    have = covered(store, source)
    return [f"{db}.{t}" for db, t in sorted(latest.tables) if (db, t) in first.tables and (db, t) not in have]
