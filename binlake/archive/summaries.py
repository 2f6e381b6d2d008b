"""A source's manifests without their transaction indexes, kept in one object beside them.

A manifest holds its file's transaction index, a share of the file's size that grows as its
transactions shrink (bench/RESULTS.md, bench/manifests.py). Archiving the next file,
planning a range and the suites' continuity checks look at every manifest of a source, but need
the index only of the files they touch. Reading every manifest whole made each run read that
share of everything ever archived, more every hour the server ages.

`{source}/summaries.json` holds every manifest without its index (`transactions`, `incomplete`),
with its first transaction's commit time, and the version of the manifest's object it was made
of (the store's listing gives it: size and time of a file, S3's ETag). The archive rewrites it at
the end of a run that archived files, or that found it behind. It is derived, never the record:
- a manifest it lacks, or whose object is not the version it was made of, is read whole (a store
  archived by an older binlake, a run stopped between a manifest and this object, a manifest
  written over): the continuity suites judge the manifests, not this object;
- one it names that is gone is left out.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import orjson

from binlake.archive.chain import name_of
from binlake.archive.keys import manifest_key, manifests_prefix, summaries_key
from binlake.archive.manifest import first_commit_ts

log = logging.getLogger(__name__)

INDEX = ("transactions", "incomplete")  # what a summary leaves out


def summary(manifest: dict) -> dict:
    """A manifest without its index; `first_commit_ts`, its first transaction's commit time."""
    out = {k: v for k, v in manifest.items() if k not in INDEX}
    out["first_commit_ts"] = first_commit_ts(manifest)
    return out


class Manifests:
    """A source's manifests as summaries, in the store's order; `whole` reads one whole."""

    def __init__(self, store, source: str, summaries: dict[str, dict], versions: dict[str, str | None], *,
                 behind: bool) -> None:
        self.store, self.source = store, source
        self.summaries = summaries  # by manifest key
        self.versions = versions  # by manifest key: the object's version a summary was made of
        self.behind = behind  # the stored summaries lacked a manifest, named one gone, or an old version

    def __iter__(self) -> Iterator[dict]:
        return iter(self.summaries.values())

    def __len__(self) -> int:
        return len(self.summaries)

    def whole(self, m: dict) -> dict:
        """The manifest a summary stands for, with its index (read each time: a backfill's
        files' indexes are not all held at once)."""
        return m if "transactions" in m else orjson.loads(self.store.get(manifest_key(self.source, name_of(m))))

    def add(self, manifest: dict) -> None:
        """A manifest being written (the archive's, which its commit may still add to: a purge
        gap): summarised, and its version learnt, when saved."""
        k = manifest_key(self.source, name_of(manifest))
        self.summaries[k] = manifest
        self.versions[k] = None
        self.behind = True

    def save(self) -> None:
        """Write the summaries object, where it is behind the manifests (those written since
        listed again for their versions; one not there is left out)."""
        if not self.behind:
            return
        if None in self.versions.values():
            listed = self.store.versions(manifests_prefix(self.source))
            for k, v in self.versions.items():
                if v is None:
                    self.summaries[k], self.versions[k] = summary(self.summaries[k]), listed.get(k)
        kept = [k for k, v in self.versions.items() if v is not None]
        self.store.put(summaries_key(self.source), orjson.dumps({
            "source": self.source, "manifests": {k: self.summaries[k] for k in kept},
            "versions": {k: self.versions[k] for k in kept}}))
        self.behind = False


def load(store, source: str) -> Manifests:
    """A source's manifests: the summaries object's where it has them as they are now (the same
    object version), and the others read whole."""
    listed = {k: v for k, v in store.versions(manifests_prefix(source)).items() if k.endswith(".json")}
    kept = orjson.loads(store.get(summaries_key(source))) if store.exists(summaries_key(source)) else {}
    summaries, versions = kept.get("manifests") or {}, kept.get("versions") or {}
    out: dict[str, dict] = {}
    lacked = 0
    for k, version in listed.items():
        if versions.get(k) == version and k in summaries:
            out[k] = summaries[k]
        else:
            out[k] = summary(orjson.loads(store.get(k)))
            lacked += 1
    if lacked:
        log.info("%s: %d of %d manifests read whole (not in %s as they are)", source, lacked, len(listed),
                 summaries_key(source))
    return Manifests(store, source, out, dict(listed), behind=lacked > 0 or len(summaries) != len(listed))
