"""Plan a commit-time range of an archive into splits, and run one split.

This is what the Spark job distributes (binlake/spark/); nothing here imports Spark, so
the same plan can be run in one process and compared with `binlake scan`.

Planning reads only manifests. A file is chosen when its min/max commit timestamps meet
the range. It is cut into splits of about `split_bytes` at transaction starts, so every
byte of the file belongs to exactly one split and each split starts with the boundary
parser at rest, as a whole-file reader would be there. Two rules keep that true:
- no cut right after an incomplete transaction: the event that broke it must be seen by
  the task that holds it, to report the same anomaly;
- a complete transaction longer than a split gets a split of its own, which a survey
  (binlake/assemble/pieces.py) may cut further into pieces.

A split is run when one of its transactions commits inside the range, or when an anomaly
in it would be dated inside the range. An anomaly is dated by the commit time of the last
transaction starting at or before it (of the file's first transaction when none does, of
the file's first event when the file holds none): it lands with the data it concerns, and
hourly runs and a daily run date it alike.
"""

from __future__ import annotations

import bisect
import contextlib
import datetime as dt
import hashlib
import itertools
import json
import logging
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import orjson

from binlake.archive import summaries
from binlake.archive.chain import archived_after, repeats
from binlake.archive.identity import name_of
from binlake.archive.run import binlog_key, refusals
from binlake.archive.stores import MissingObject, open_store
from binlake.assemble.lane import RecordRun
from binlake.assemble.pieces import Finished, Piece, PieceRecord, Survey, finish, place_record, survey
from binlake.assemble.sinks import BlockSink
from binlake.assemble.walk import FileAssembler, Options
from binlake.binlog.framing import BinlogReader, FormatDescription
from binlake.errors import BinlakeError
from binlake.records import anomaly, ts_from_micros

log = logging.getLogger(__name__)
DEFAULT_SPLIT_BYTES = 64 << 20
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


@dataclass(frozen=True)
class BigTxn:
    """A transaction longer than a split, as the manifest's index gives it."""

    start: int
    length: int
    txn_id: str
    commit_ts: str


@dataclass
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
    schema: int | None = None  # the schema state it starts from, of the job's (binlake.schema.plan)

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


@dataclass(frozen=True)
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
    anomalies: list[dict] = field(default_factory=list)  # from manifests (GTID_GAP), dated
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
    return [n for n in store.names("") if store.exists(summaries.key(n))
            or any(k.endswith(".json") for k in store.keys(f"{n}/manifests/"))]


def archived_until(store, source: str) -> str | None:
    """How far the archive of a source reaches: the newest event time of its archived files.
    Every transaction committed before it is archived, since a server writes in commit order."""
    ends = [m["last_event_ts"] for m in summaries.load(store, source) if m.get("last_event_ts")]
    return max(ends) if ends else None


def plan(store_url: str, source_names: list[str] | None, start: str, end: str,
         split_bytes: int = DEFAULT_SPLIT_BYTES) -> Plan:
    store = open_store(store_url)
    store.check()
    names = source_names or sources(store)
    p = Plan(store_url, parse_time(start), parse_time(end), split_bytes, list(names))
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
    entries = m.get("transactions") or []
    first = entries[0][3] if entries else m.get("first_commit_ts")
    return first or m.get("first_event_ts") or EPOCH


def _plan_repeats(p: Plan, store_url: str, source: str, found: summaries.Manifests) -> None:
    """The transactions of the range an earlier generation archived first (a failover's repeats)."""
    planned = {f.file for f in p.files if f.source == source}
    again = repeats(found, found.whole, planned)
    by_name = {name_of(m): m for m in found}
    index: dict[str, dict[str, list]] = {}  # a first copy's manifest index, by txn_id

    def at(m: dict, entry: list) -> Split:
        return Split(store_url, source, name_of(m), m["size"], m["format_description"], p.split_bytes, entry[0],
                     entry[0] + entry[1], fallback_ts=entry[3])

    for name, firsts in again.items():
        if name not in planned:
            continue
        m = found.whole(by_name[name])
        for e in m.get("transactions") or []:
            if e[2] in firsts and p.start <= e[3] < p.end:
                first = by_name[firsts[e[2]]]
                if name_of(first) not in index:
                    index[name_of(first)] = {x[2]: x for x in found.whole(first).get("transactions") or []}
                where = index[name_of(first)]
                p.repeats.append(Repeat(source, name, e[2], e[3], at(m, e), at(first, where[e[2]])))


def _plan_refusals(p: Plan, source: str, found: list[dict], refused: list[dict]) -> None:
    """A file the server refused to send, not archived since, is a gap: an anomaly dated and
    named like the archived file after it (the newest generation's), when that one is planned."""
    planned = {f.file for f in p.files if f.source == source}
    for r in refused:
        m = archived_after(found, r["file"])
        if m is not None and name_of(m) in planned:
            p.anomalies.append({**anomaly(source, name_of(m), 0, 0, "REFUSED_FILE", r["detail"]),
                                "commit_ts": _first_ts(m)})


def _plan_file(p: Plan, store_url: str, source: str, m: dict) -> None:
    entries = m.get("transactions") or []
    incomplete = set(m.get("incomplete") or [])
    size = m["size"]
    first_ts = _first_ts(m)
    name = name_of(m)
    p.files.append(PlannedFile(source, name, size, len(entries)))
    if m.get("gap"):
        p.anomalies.append({**anomaly(source, name, 0, 0, "GTID_GAP", m["gap"]["detail"]), "commit_ts": first_ts})

    def new(start: int, fallback_ts: str) -> Split:
        return Split(store_url, source, name, size, m["format_description"], p.split_bytes, start,
                     fallback_ts=fallback_ts)

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


def run_survey(split: Split, store=None) -> Survey | None:
    """The survey of a big split's transaction, read from the store."""
    store = store or open_store(split.store)
    fde = FormatDescription.from_dict(split.fde)
    big = split.big
    assert big is not None
    start, end = big.start, big.start + big.length
    try:
        with store.open_range(binlog_key(split.source, split.file), start, end) as rng:
            reader = BinlogReader(rng.data, split.file, base=start, fde=fde, pages=rng.pages)
            return survey(reader, start, end, split.split_bytes or DEFAULT_SPLIT_BYTES, big.txn_id)
    except MissingObject:
        return None  # the split's own task reports it


def run_split(split: Split, opts: Options, store=None, blocks: bool = False,
              columns: bool = False) -> Iterator[tuple[str, Any]]:
    """Records of one split as ("transaction" | "row_change" | "anomaly", record) and, for a piece
    of a big transaction, ("piece", PieceRecord). With `blocks`, the row changes come as
    ("row_blocks", [RowBlock, ...]) instead (a big transaction's pieces' unplaced: see
    binlake.spark.job's rows pass), and those of the transactions the lane takes as ("row_run",
    RowRun). With `columns`, the records of the transactions the lane takes (binlake.assemble.lane) come
    as columns, ("transaction_run", RecordRun).

    Row changes stream out as they are decoded; the split's bytes are memory-mapped (or
    spooled to a temporary file from S3), never read into memory whole. Anomalies carry
    `commit_ts`, their date (see the module's doc).
    """
    store = store or open_store(split.store)
    key = binlog_key(split.source, split.file)
    opts = replace(opts, source=split.source)
    start, end, size, name = split.start, split.end, split.size, split.file
    pending: list[dict] = []
    starts: list[tuple[int, str]] = []
    with contextlib.ExitStack() as stack:
        try:
            rng = stack.enter_context(store.open_range(key, start, end))
        except MissingObject as e:
            yield "anomaly", {**anomaly(split.source, name, start, end, "MISSING_OBJECT",
                                        f"{e}: its manifest says {size} bytes"), "commit_ts": split.fallback_ts}
            return
        held = min(rng.total, size)
        if rng.total != size and (start <= held < end or held == end == size):
            pending.append(anomaly(split.source, name, held, max(size, rng.total),
                                   "TRUNCATED" if rng.total < size else "CORRUPT",
                                   f"{store.url}/{key}: the object holds {rng.total} bytes but its manifest "
                                   f"says {size}"))
        out: list[tuple[str, Any]] = []
        sink = BlockSink(lambda b: out.append(("row_blocks", b)), lambda r: out.append(("row_run", r))) \
            if blocks else None
        reader = BinlogReader(rng.data, f"{store.url}/{key}", base=start,
                              fde=FormatDescription.from_dict(split.fde), pages=rng.pages)
        piece = None
        if split.survey is not None and split.piece is not None:
            piece = Piece(reader, opts, lambda k, r: out.append((k, r)), name, split.survey, split.piece, sink)
            asm = piece.asm
        else:
            # The lane (binlake.assemble.lane) writes the records of the transactions it takes as JSON
            # lines, each read back as the walk's own, or hands them on as columns; and hands their
            # rows to the BlockSink.
            def laned(text: bytes, _txns: int) -> None:
                out.extend(("transaction", orjson.loads(line)) for line in text.splitlines())

            def records(run: RecordRun) -> None:
                out.append(("transaction_run", run))
                # an anomaly is dated by the last transaction before it, never inside a run: its last
                start_pos, commit_us = run.last()
                starts.append((start_pos, ts_from_micros(commit_us)))

            asm = FileAssembler(reader, opts, lambda k, r: out.append((k, r)), sink, binlog_file=name,
                                lines=laned if not opts.rows or blocks else None, records=records if columns else None)
        for _ in itertools.chain(asm.steps(), [None]):  # the last records come after the last step
            for kind, rec in out:
                if kind == "anomaly":
                    pending.append(rec)
                    continue
                if kind == "transaction":
                    starts.append((rec["start_pos"], rec["commit_ts"]))
                yield kind, rec
            out.clear()
        if piece is not None:
            yield "piece", piece.record()
    starts.sort()
    for rec in pending:
        rec["commit_ts"] = _date(starts, rec["start_pos"], split.fallback_ts)
        yield "anomaly", rec
    log.info("%s %s [%d, %d): %d events, %d transactions, %d row changes, %d anomalies", split.source, name,
             start, end, asm.counts.events, asm.counts.transactions, asm.counts.row_changes, len(pending))


def _date(starts: list[tuple[int, str]], pos: int, fallback: str) -> str:
    i = bisect.bisect_right(starts, (pos, "\uffff"))
    return starts[i - 1][1] if i else fallback


def in_range(p: Plan, rec: dict) -> bool:
    """Transactions and row changes by commit time, anomalies by their date."""
    return p.start <= rec["commit_ts"] < p.end


def put_together(parts: list[Split], pieces: list[PieceRecord], opts: Options) -> Finished:
    """A big transaction from its pieces (binlake.assemble.pieces.finish): its record, its dated
    LENGTH_MISMATCH if any, and where each piece's rows go."""
    first = parts[0]
    assert first.survey is not None
    return finish(first.survey, pieces, replace(opts, source=first.source), first.file,
                  FormatDescription.from_dict(first.fde))


def assemble_locally(p: Plan, opts: Options) -> Iterator[tuple[str, dict]]:
    """The Spark job's work in one process, in plan order: the reference the job is tested against.

    Holds a big transaction's row changes until its pieces are put together, so it is for
    tests and small archives; the Spark job does the same with a join instead.
    """
    splits = list(p.splits)
    bigs: list[list[Split]] = []
    for big in p.bigs:
        surveyed = run_survey(big)
        parts = pieces_of(big, surveyed)
        if surveyed:
            bigs.append(parts)
        else:
            splits += parts
    again = {r.key for r in p.repeats}

    def first_copy(split: Split, kind: str, rec: dict) -> bool:
        return (kind not in ("transaction", "row_change")
                or (split.source, rec["binlog_file"], rec["txn_id"]) not in again)

    for split in splits:
        for kind, rec in run_split(split, opts):
            if in_range(p, rec) and first_copy(split, kind, rec):
                yield kind, rec
    for parts in bigs:
        held, pieces = [], []
        for split in parts:
            for kind, rec in run_split(split, opts):
                if kind == "piece":
                    pieces.append(rec)
                elif kind == "row_change" and rec.get("piece") is not None:
                    held.append(rec)
                elif in_range(p, rec) and first_copy(split, kind, rec):
                    yield kind, rec
        done = put_together(parts, pieces, opts)
        if in_range(p, done.transaction) and first_copy(parts[0], "transaction", done.transaction):
            yield "transaction", done.transaction
            if done.anomaly:
                yield "anomaly", done.anomaly
            for rec in held:
                if place_record(rec, done.fixes):
                    yield "row_change", rec
    for rec in p.anomalies:
        if in_range(p, rec):
            yield "anomaly", rec
    for r in p.repeats:
        differs = check_repeat(r)
        if differs:
            yield "anomaly", differs


def _content(split: Split, store) -> tuple[str, int]:
    """A transaction's content, digested as it streams: its kind and outcome, then each row
    change's table, operation and images in order (not where or when a server logged it); and
    its row count."""
    sha = hashlib.sha256()
    rows = 0
    for kind, rec in run_split(split, Options(), store):
        if kind == "transaction":
            sha.update(json.dumps([rec["kind"], rec["outcome"]]).encode())
        elif kind == "row_change":
            rows += 1
            sha.update(json.dumps([rec["schema"], rec["table"], rec["op"], rec["before"], rec["after"]],
                                  sort_keys=True, default=str).encode())
    return sha.hexdigest(), rows


def check_repeat(r: Repeat, store=None) -> dict | None:
    """The REPEAT_DIFFERS anomaly of a repeat whose content is not its first copy's, else None."""
    store = store or open_store(r.at.store)
    (mine, rows), (first, first_rows) = _content(r.at, store), _content(r.first, store)
    if mine == first:
        return None
    return {**anomaly(r.source, r.file, r.at.start, r.at.end, "REPEAT_DIFFERS",
                      f"{r.file}: the transaction at {r.at.start} repeats GTID {r.txn_id} of {r.first.file} "
                      f"at {r.first.start} with other content ({rows} row changes against {first_rows}, "
                      "or other tables, operations or images): the first copy is kept"), "commit_ts": r.commit_ts}
