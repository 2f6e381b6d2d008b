"""A commit-time range of an archive planned into splits, from manifests alone.

This is what the Spark job distributes (binlake/spark/); nothing here imports Spark, so
the same plan can be run in one process (binlake.splits.local) and compared with `binlake scan`.

Planning reads only manifests. A file is chosen when its min/max commit timestamps meet
the range. It is cut into splits of about `split_bytes` at transaction starts, so every
byte of the file belongs to exactly one split and each split starts with the boundary
parser at rest, as a whole-file reader would be there. Two rules keep that true:
- no cut right after an incomplete transaction: the event that broke it must be seen by
  the task that holds it, to report the same anomaly;
- a complete transaction longer than a split gets a split of its own, which a survey
  (binlake/assemble/pieces.py) may cut further into pieces.

A split is run when one of its transactions commits inside the range, or when an anomaly
in it would be dated inside the range (binlake.splits.tasks says how an anomaly is dated).
"""

from __future__ import annotations

import itertools
import json
import logging
from dataclasses import asdict, dataclass, field, replace

from binlake.archive import summaries
from binlake.archive.chain import archived_after, name_of, repeats
from binlake.archive.keys import manifests_prefix, summaries_key
from binlake.archive.manifest import Indexed, first_commit_ts, index_of
from binlake.archive.run import refusals
from binlake.archive.stores import open_store
from binlake.assemble.pieces import Survey
from binlake.errors import BinlakeError
from binlake.records import DatedAnomaly, anomaly
from binlake.splits.times import EPOCH, parse_time

log = logging.getLogger(__name__)
DEFAULT_SPLIT_BYTES = 64 << 20


@dataclass(frozen=True)
class BigTxn:
    """A transaction longer than a split, as the manifest's index gives it."""

    start: int
    length: int
    txn_id: str
    commit_ts: str


@dataclass(kw_only=True)
class Split:
    """A byte range of an archived file that one task reads: whole transactions, or a piece of a
    big one. Crosses to Spark's tasks as JSON (to_json / from_json)."""

    store: str
    source: str
    file: str
    size: int  # of the file, as its manifest says
    fde: dict  # its FORMAT_DESCRIPTION (binlake.binlog.framing.FormatDescription.to_dict)
    split_bytes: int
    start: int
    end: int = 0
    fallback_ts: str = EPOCH  # the date of an anomaly before the split's first transaction
    big: BigTxn | None = None  # the transaction longer than a split this split holds alone
    survey: Survey | None = None  # once surveyed and cut: the split is its piece `piece`
    piece: int | None = None
    schema: int | None = None  # the schema state it starts from, of the job's (binlake.splits.schemas)

    @property
    def bytes(self) -> int:
        return self.end - self.start

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Split:
        d = json.loads(text)
        big, s = d.pop("big"), d.pop("survey")
        return cls(**d, big=BigTxn(**big) if big else None, survey=Survey.from_dict(s) if s else None)


@dataclass(frozen=True)
class PlannedFile:
    source: str
    file: str
    size: int
    transaction_count: int


@dataclass(frozen=True, kw_only=True)
class Repeat:
    """A transaction whose GTID an earlier generation archived first (binlake.archive.chain.repeats):
    the byte ranges of the repeat and of its first copy, each a split of its own."""

    source: str
    file: str
    txn_id: str
    commit_ts: str
    at: Split
    first: Split

    @property
    def key(self) -> tuple[str, str, str]:
        return self.source, self.file, self.txn_id


@dataclass
class Plan:
    store: str
    start: str
    end: str
    split_bytes: int
    sources: list[str] = field(default_factory=list)
    files: list[PlannedFile] = field(default_factory=list)
    splits: list[Split] = field(default_factory=list)  # ready to run
    bigs: list[Split] = field(default_factory=list)  # a big transaction each: survey, then pieces
    anomalies: list[DatedAnomaly] = field(default_factory=list)  # from manifests (GTID_GAP), dated
    # transactions of the range an earlier generation archived first (a failover's): left out of
    # the tables, and compared with their first copies
    repeats: list[Repeat] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return sum(s.bytes for s in self.splits + self.bigs)


def sources(store) -> list[str]:
    """Every source with at least one manifest in the store: of the store's top-level names, those
    with manifests' summaries, else a manifest (a listing of names and of a few objects, not of
    every object the store holds)."""
    return [n for n in store.names("") if store.exists(summaries_key(n))
            or any(k.endswith(".json") for k in store.keys(manifests_prefix(n)))]


def covered(store, source_names: list[str] | None) -> list[str]:
    """The sources a range covers: those named, else every source archived in the store. A store
    with none is refused, not read as an empty range: a mistyped store or prefix would otherwise
    assemble and validate nothing and succeed."""
    if source_names:
        return list(source_names)
    found = sources(store)
    if not found:
        raise BinlakeError(f"{store.url}: no archived source in this store (`binlake archive` writes them; "
                           "is the store's path or prefix right?)")
    return found


def archived_until(store, source: str) -> str | None:
    """How far the archive of a source reaches: the newest event time of its archived files.
    Every transaction committed before it is archived, since a server writes in commit order."""
    ends = [m["last_event_ts"] for m in summaries.load(store, source) if m.get("last_event_ts")]
    return max(ends) if ends else None


def plan(store_url: str, source_names: list[str] | None, start: str, end: str,  # noqa: PLR0917 - a range, its splits' size
         split_bytes: int = DEFAULT_SPLIT_BYTES) -> Plan:
    store = open_store(store_url)
    store.check()
    names = covered(store, source_names)
    p = Plan(store_url, parse_time(start), parse_time(end), split_bytes, sources=list(names))
    if p.start >= p.end:
        raise BinlakeError(f"empty range: start {p.start} is not before end {p.end}")
    for source in names:
        found = summaries.load(store, source)  # a file's index is read only where it is planned
        for m in found:
            if meets(m, p.start, p.end):
                _plan_file(p, store_url, source, found.whole(m))
        _plan_refusals(p, source, list(found), refusals(store, source))
        _plan_repeats(p, store_url, source, found)
        if not found:
            raise BinlakeError(f"{store_url}: no archived files for source {source!r} "
                               f"(sources here: {', '.join(sources(store)) or 'none'})")
    log.info("plan %s..%s: %d files, %d splits, %d big transactions, %d bytes", p.start, p.end,
             len(p.files), len(p.splits), len(p.bigs), p.bytes)
    return p


def meets(manifest: dict, start: str, end: str) -> bool:
    """Whether an archived file has anything in [start, end): a transaction committed there, or,
    for a file with none, its first event."""
    lo, hi = manifest.get("min_commit_ts"), manifest.get("max_commit_ts")
    if lo is None or hi is None:
        lo = hi = manifest.get("first_event_ts") or EPOCH
    return bool(lo < end and hi >= start)


def _first_ts(m: dict) -> str:
    """A manifest's (or its summary's) first commit time, else its first event's."""
    return first_commit_ts(m) or m.get("first_event_ts") or EPOCH


def _plan_repeats(p: Plan, store_url: str, source: str, found: summaries.Manifests) -> None:
    """The transactions of the range an earlier generation archived first (a failover's repeats)."""
    planned = {f.file for f in p.files if f.source == source}
    again = repeats(found, found.whole, planned)
    by_name = {name_of(m): m for m in found}
    index: dict[str, dict[str, Indexed]] = {}  # a first copy's manifest index, by txn_id

    def at(m: dict, entry: Indexed) -> Split:
        return Split(store=store_url, source=source, file=name_of(m), size=m["size"], fde=m["format_description"],
                     split_bytes=p.split_bytes, start=entry.start, end=entry.start + entry.length,
                     fallback_ts=entry.commit_ts)

    for name, firsts in again.items():
        if name not in planned:
            continue
        m = found.whole(by_name[name])
        for e in index_of(m):
            if e.txn_id in firsts and p.start <= e.commit_ts < p.end:
                first = by_name[firsts[e.txn_id]]
                if name_of(first) not in index:
                    index[name_of(first)] = {x.txn_id: x for x in index_of(found.whole(first))}
                where = index[name_of(first)]
                p.repeats.append(Repeat(source=source, file=name, txn_id=e.txn_id, commit_ts=e.commit_ts, at=at(m, e),
                                        first=at(first, where[e.txn_id])))


def _plan_refusals(p: Plan, source: str, found: list[dict], refused: list[dict]) -> None:
    """A file the server refused to send, not archived since, is a gap: an anomaly dated and
    named like the archived file after it (the newest generation's), when that one is planned."""
    planned = {f.file for f in p.files if f.source == source}
    for r in refused:
        m = archived_after(found, r["file"])
        if m is not None and name_of(m) in planned:
            p.anomalies.append(DatedAnomaly(**anomaly(source, name_of(m), 0, 0, code="REFUSED_FILE",
                                                      detail=r["detail"]), commit_ts=_first_ts(m)))


def _plan_file(p: Plan, store_url: str, source: str, m: dict) -> None:
    entries = index_of(m)
    incomplete = set(m.get("incomplete") or [])
    size = m["size"]
    first_ts = _first_ts(m)
    name = name_of(m)
    p.files.append(PlannedFile(source, name, size, len(entries)))
    if m.get("gap"):
        p.anomalies.append(DatedAnomaly(**anomaly(source, name, 0, 0, code="GTID_GAP", detail=m["gap"]["detail"]),
                                        commit_ts=first_ts))

    def new(start: int, fallback_ts: str) -> Split:
        return Split(store=store_url, source=source, file=name, size=size, fde=m["format_description"],
                     split_bytes=p.split_bytes, start=start, fallback_ts=fallback_ts)

    def close(cur: Split, stop: int, dated: list[str]) -> None:
        cur.end = stop
        if not any(p.start <= ts < p.end for ts in dated + [cur.fallback_ts]):
            return
        (p.bigs if cur.big else p.splits).append(cur)

    cur, dated = new(4, first_ts), list[str]()
    prev_complete, last_ts = True, first_ts
    for st, length, txn_id, ts in entries:
        complete = st not in incomplete
        big = complete and length > p.split_bytes
        if prev_complete and st > cur.start and (cur.big or big or st - cur.start >= p.split_bytes):
            close(cur, st, dated)
            cur, dated = new(st, last_ts), []
        if big and cur.start == st:
            cur.big = BigTxn(st, length, txn_id, ts)
        dated.append(ts)
        prev_complete, last_ts = complete, ts
    close(cur, size, dated)


def pieces_of(big_split: Split, surveyed: Survey | None) -> list[Split]:
    """The splits a big transaction's split becomes: one per piece, or itself when it cannot be cut."""
    if surveyed is None:
        return [replace(big_split, big=None)]
    bounds = [big_split.start] + [cut.pos for cut in surveyed.cuts] + [big_split.end]
    dated = big_split.big.commit_ts if big_split.big else big_split.fallback_ts
    return [replace(big_split, survey=surveyed, piece=i, start=a, end=b, fallback_ts=dated)
            for i, (a, b) in enumerate(itertools.pairwise(bounds))]
