"""Continuity by the server's own GTID chain, judged from the archive's manifests.

MySQL writes at the head of each file the GTIDs of every file before it (PREVIOUS_GTIDS), so a
file's set is its predecessor's set plus the predecessor's own GTIDs; MariaDB's GTID_LIST keeps
the last sequence number per domain the same way. Within a generation (archive/identity.py)
that chain shows what is missing between two archived files: whole files, and the GTIDs they
held. A hole in GTID numbering the chain does not claim (an explicit `gtid_next`, a second
server's numbers) is no defect. A new generation starts its own chain, linked to the ones before
by what they hold: GTIDs a restored server was told were purged are no break where an earlier
generation archived them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from binlake.archive.manifest import index_of
from binlake.binlog.gtid import parse_gtid_set, subtract, union


def covers(have: str, need: str, flavor: str) -> bool:
    """Whether a GTID text holds another: MySQL sets; MariaDB per domain, the last sequence number."""
    if flavor == "mariadb":
        h, n = _maria_last(have), _maria_last(need)
        return all(h.get(d, 0) >= seq for d, seq in n.items())
    return not subtract(parse_gtid_set(need), parse_gtid_set(have)).intervals


def follows(previous: str, gtids: str, flavor: str) -> str:
    """The GTIDs before the next file, by the server's chain: a file's previous GTIDs and its own."""
    if flavor == "mariadb":
        last = _maria_last(previous)
        for d, seq in _maria_last(gtids).items():
            last[d] = max(last.get(d, 0), seq)
        return ",".join(f"{d}:{seq}" for d, seq in sorted(last.items()))
    return str(union(parse_gtid_set(previous), parse_gtid_set(gtids)))


def same_gtids(x: str, y: str, flavor: str) -> bool:
    return covers(x, y, flavor) and covers(y, x, flavor)


def missing(have: str, need: str, flavor: str) -> str:
    """The GTIDs of `need` that `have` lacks, as text (MariaDB: `domain-seq..seq` per domain)."""
    if flavor == "mariadb":
        h = _maria_last(have)
        return ",".join(f"{d}-{h.get(d, 0) + 1}..{seq}" for d, seq in sorted(_maria_last(need).items())
                        if seq > h.get(d, 0))
    return str(subtract(parse_gtid_set(need), parse_gtid_set(have)))


def _maria_last(text: str) -> dict[str, int]:
    """MariaDB: per domain, the last sequence number of a GTID_LIST or a file's GTIDs (`d-s-n`),
    or of `follows`' own `d:n` form."""
    out: dict[str, int] = {}
    for g in filter(None, (text or "").split(",")):
        d, *_, n = g.replace(":", "-").split("-")
        out[d] = max(out.get(d, 0), int(n))
    return out


def _number(name: str) -> int:
    return int(name.split("@", 1)[0].rsplit(".", 1)[1])


def breaks(source: str, manifests: list[dict], refused: list[dict], chosen: set[str]) -> list[dict]:
    """Where the chain of a source breaks before a chosen file (archive name): the file, the one
    before it in its generation, the files and GTIDs missing between them, and why if known.
    Files recorded as purged before they were archived (a manifest's `gap`) are reported as
    GTID_GAP anomalies instead."""
    why = {r["file"]: r for r in refused}
    out = []
    for r in refused:  # not archived since: a hole before the archived file after it
        after = archived_after(manifests, r["file"])
        if after is not None and (after.get("name") or after["file"]) in chosen:
            out.append({"source": source, "generation": generation_of(after),
                        "binlog_file": r["file"], "previous_file": "", "missing_files": r["file"],
                        "missing_gtids": "", "detail": r["detail"]})
    by_gen: dict[int, list[dict]] = {}
    for m in manifests:
        by_gen.setdefault(generation_of(m), []).append(m)
    epoch = epochs(manifests)
    earlier, current = "", 0  # what the generations before claim: a restored server's purged GTIDs
    for g, files in sorted(by_gen.items()):
        if epoch[g] != current:  # a reset reissues the GTIDs: what came before says nothing of them
            earlier, current = "", epoch[g]
        files.sort(key=lambda m: _number(m["file"]))
        for a, b in zip(files, files[1:], strict=False):
            name = b.get("name") or b["file"]
            if name not in chosen or b.get("gap"):
                continue
            flavor = b.get("flavor") or "mysql"
            expected = follows(a.get("previous_gtids") or "", a.get("gtids") or "", flavor)
            have = b.get("previous_gtids") or ""
            base, digits = b["file"].rsplit(".", 1)
            lost = [f"{base}.{n:0{len(digits)}d}" for n in range(_number(a["file"]) + 1, _number(b["file"]))]
            if not lost and same_gtids(have, expected, flavor):
                continue
            gtids = missing(follows(expected, earlier, flavor), have, flavor)
            extra = missing(have, expected, flavor)
            if not (lost or gtids or extra):
                continue
            what = []
            if lost:
                what.append(f"files {lost[0]}..{lost[-1]} are not archived" if len(lost) > 1
                            else f"file {lost[0]} is not archived")
                what += [f"{n} was refused by the server" for n in lost if n in why]  # its own row says more
            if gtids:
                what.append(f"GTIDs {gtids} are in no archived file")
            if extra:
                what.append(f"GTIDs {extra} of {a.get('name') or a['file']} are not in the previous GTIDs "
                            f"of {name}")
            out.append({"source": source, "generation": g, "binlog_file": name,
                        "previous_file": a.get("name") or a["file"], "missing_files": ",".join(lost),
                        "missing_gtids": gtids, "detail": f"{name}: " + "; ".join(what)})
        for m in files:
            flavor = m.get("flavor") or "mysql"
            earlier = follows(earlier, follows(m.get("previous_gtids") or "", m.get("gtids") or "", flavor), flavor)
    return out


def archived_after(manifests: list[dict], file: str) -> dict | None:
    """The archived file that follows a server's file name: the next number, newest generation."""
    after = [m for m in manifests if _number(m["file"]) > _number(file)]
    return min(after, key=lambda m: (_number(m["file"]), -generation_of(m)), default=None)


def epochs(manifests: list[dict]) -> dict[int, int]:
    """Per generation, its GTID epoch: a reset of the same server reissues its GTIDs, so a
    GTID names one transaction only within an epoch; another server's generation (a failover)
    repeats the same transactions under the same GTIDs and stays in the epoch."""
    resets = {int(m["generation"]) for m in manifests if (m.get("notice") or {}).get("kind") == "reset"}
    gens = sorted({generation_of(m) for m in manifests})
    out, epoch = {}, 0
    for g in gens:
        epoch += g in resets
        out[g] = epoch
    return out


def repeats(manifests: Iterable[dict], whole: Callable[[dict], dict] = lambda m: m,
            wanted: set[str] | None = None) -> dict[str, dict[str, str]]:
    """Per archived file (archive name), the GTIDs of its transactions that a generation before
    it in its GTID epoch archived already, each with the file of that first copy: a failover's
    new server repeats what it replicated from the old one. The first archived copy wins; the
    repeats are left out of the warehouse, and compared with their first copies.

    `whole`: a manifest with its index, from its summary (binlake.archive.summaries). `wanted`:
    the files whose repeats are asked (default all). Only their indexes are read, and those of
    the earlier generations' files that may hold their GTIDs (by the manifests' GTID sets; a
    MariaDB file's cannot tell, so all of them): a source's old failover does not make every run
    read every index."""
    manifests = list(manifests)
    epoch = epochs(manifests)
    shared = {e for e in epoch.values() if sum(x == e for x in epoch.values()) > 1}
    by_gen: dict[int, list[dict]] = {}
    for m in manifests:
        g = generation_of(m)
        if epoch[g] in shared:
            by_gen.setdefault(g, []).append(m)
    if wanted is not None:  # the files asked, and those of earlier generations of their epoch that may share a GTID
        asked = [m for files in by_gen.values() for m in files if name_of(m) in wanted]

        def needed(m: dict, g: int) -> bool:
            later = (w for w in asked if generation_of(w) > g and epoch[generation_of(w)] == epoch[g])
            return name_of(m) in wanted or any(_may_share(m, w) for w in later)

        by_gen = {g: [m for m in files if needed(m, g)] for g, files in by_gen.items()}
    seen: dict[int, dict[str, str]] = {}
    out: dict[str, dict[str, str]] = {}
    for g, files in sorted(by_gen.items()):
        earlier = seen.setdefault(epoch[g], {})
        mine: dict[str, str] = {}
        for m in files:
            name = name_of(m)
            for e in index_of(whole(m)):  # a txn_id is the GTID where there is one
                if e.txn_id in earlier:
                    out.setdefault(name, {})[e.txn_id] = earlier[e.txn_id]
                else:
                    mine.setdefault(e.txn_id, name)
        earlier.update(mine)
    return out


def name_of(m: dict) -> str:
    """A manifest's archive name (manifests from before generations have only `file`)."""
    return m.get("name") or m["file"]


def generation_of(m: dict) -> int:
    """A manifest's generation (1 for manifests from before generations)."""
    return int(m.get("generation") or 1)


def _may_share(a: dict, b: dict) -> bool:
    """Whether two archived files may hold a transaction of the same GTID: their MySQL GTID sets
    meet; a MariaDB file's `gtids` (the last of each domain) cannot say, so yes."""
    if a.get("flavor") == "mariadb" or b.get("flavor") == "mariadb":
        return True
    x, y = parse_gtid_set(a.get("gtids") or ""), parse_gtid_set(b.get("gtids") or "")
    return subtract(x, y) != x
