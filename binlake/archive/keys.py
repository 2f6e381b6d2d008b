"""The archive's key layout: the key of every object binlake keeps in a store, made here and
nowhere else (DESIGN.md, "Object storage layout"; docs/archive.md, docs/schema.md):

    {source}/binlogs/{name}                a binlog file, byte-identical ({file}@gNNNN after generation 1)
    {source}/manifests/{name}.json          its manifest, written once the object is whole
    {source}/summaries.json                 every manifest without its index (derived)
    {source}/refused/{file}.json            a file the server refused to send, with the remedy
    {source}/leases/{run}.json              an archive run's lease
    {source}/schema/snapshots/{name}.json   the schema history's snapshots (their names: binlake.schema.history)
    {source}/schema/latest.json             the newest whole snapshot and its tables' digest (derived)
    {source}/snapshots/{id}/snapshot.json   a table baseline's record, written last (docs/snapshots.md)
    {source}/snapshots/{id}/progress.json   the state of a baseline under way
    {source}/snapshots/{id}/{file}          its chunks ({db}/{table}/{n:06d}.jsonl.zst: binlake.baseline.layout)
"""

from __future__ import annotations

_BINLOGS, _MANIFESTS, _REFUSED, _LEASES, _SCHEMA, _BASELINES = \
    "binlogs", "manifests", "refused", "leases", "schema", "snapshots"


def source_prefix(source: str) -> str:
    return f"{source}/"


def prefix(source: str, kind: str) -> str:
    """The folder of a kind of object (_BINLOGS, _MANIFESTS, _REFUSED, _LEASES) of a source."""
    return f"{source}/{kind}"


def binlog_key(source: str, name: str) -> str:
    return f"{prefix(source, _BINLOGS)}/{name}"


def manifests_prefix(source: str) -> str:
    return f"{prefix(source, _MANIFESTS)}/"


def manifest_key(source: str, name: str) -> str:
    return f"{manifests_prefix(source)}{name}.json"


def summaries_key(source: str) -> str:
    return f"{source}/summaries.json"


def refused_prefix(source: str) -> str:
    return prefix(source, _REFUSED)


def refused_key(source: str, file: str) -> str:
    return f"{refused_prefix(source)}/{file}.json"


def leases_prefix(source: str) -> str:
    return prefix(source, _LEASES)


def lease_key(source: str, run: str) -> str:
    return f"{leases_prefix(source)}/{run}.json"


def snapshots_prefix(source: str) -> str:
    return f"{prefix(source, _SCHEMA)}/snapshots"


def latest_key(source: str) -> str:
    return f"{prefix(source, _SCHEMA)}/latest.json"


def baselines_prefix(source: str) -> str:
    """The folder of a source's table baselines (`binlake snapshot`), one folder an id."""
    return prefix(source, _BASELINES)


def baseline_record_key(source: str, id: str) -> str:
    return f"{baselines_prefix(source)}/{id}/snapshot.json"


def baseline_progress_key(source: str, id: str) -> str:
    return f"{baselines_prefix(source)}/{id}/progress.json"


def baseline_chunk_key(source: str, id: str, file: str) -> str:
    return f"{baselines_prefix(source)}/{id}/{file}"
