"""The archive stage as Airflow tasks: list each source's newly rotated files, archive each file
in its own mapped task, and record one Asset event per source and file."""

from __future__ import annotations

import contextlib
import logging

from airflow.sdk import Asset, AssetAlias, get_current_context, task

from binlake_airflow import resources, settings

log = logging.getLogger(__name__)

@contextlib.contextmanager
def _source_errors(source: str):
    """Errors no retry can mend fail the task at once, naming the source: a refused file, wrong
    credentials or privileges, a file whose bytes are damaged (the same bytes are read again)."""
    from airflow.sdk.exceptions import AirflowFailException

    from binlake.archive.sources import RefusedFile, SourceError
    from binlake.errors import BinlogError

    try:
        yield
    except RefusedFile as e:  # recorded in the store with the remedy; a retry would be refused again
        raise AirflowFailException(str(e)) from None
    except BinlogError as e:  # names the file and the offset; nothing of the file was archived
        raise AirflowFailException(f"source {source}: {e} (the file is damaged: it is not archived, and a "
                                   "retry would read the same bytes)") from None
    except SourceError as e:
        if e.lasting:  # wrong credentials, a missing privilege, binary logging off
            raise AirflowFailException(str(e)) from None
        raise

ARCHIVE_ALIAS = AssetAlias("binlake_archive")


# The archive as a whole: each run's summary is an event of it, and binlake_transactions' assemble
# task reads it (an inlet), so the Assets view shows the archive feeding the tables. Its name is
# outside the sources' `binlake_archive_{source}`, which any source name may take.
ARCHIVE = Asset(name="binlake_archives", uri="binlake://archive", group="binlake")


def archive_asset(source: str) -> Asset:
    """The Asset of one source's archive: its events say which file arrived, and up to when."""
    return Asset(name=f"binlake_archive_{source}", uri=f"binlake://archive/{source}", group="binlake")


@task(doc_md="""
### Find rotated binlog files
For every source of the `binlake` Variable: rotate the active file first when the source says
`flush_binary_logs` (so quiet servers still reach the archive), then list the server's closed
files that have no manifest in the store yet. One item per file, in binlog order. A live
source's tables are snapshotted into the store's schema history on every run (docs/schema.md).
""")
def list_new_files() -> list[dict]:
    cfg = settings.load()
    store = resources.open_store(cfg)
    from binlake.archive.run import capture_schema, pending
    from binlake.schema.capture import into_history

    store.check(writable=True)  # before any server is flushed: with the store down a retry rotates nothing
    items = []
    for spec in cfg.sources:
        with _source_errors(spec.name):
            source = resources.open_source(spec)
            if spec.flush_binary_logs and spec.mysql_conn_id:
                source.files()  # credentials and privileges first, with binlake's own clear errors
                resources.flush_binary_logs(spec)
            new = pending(source, store, spec.name)
        _, schema_error = capture_schema(source, store, spec.name, into_history)  # the schema history (docs/schema.md)
        if schema_error:
            log.warning("%s", schema_error)
        log.info("%s: %d rotated files to archive%s", spec.name, len(new),
                 f" ({new[0].name}..{new[-1].name})" if new else "")
        items += [{"source": spec.name, "file": f.name} for f in new]
    return items


@task(map_index_template="{{ binlake_file }}", retries=3, doc_md="""
### Archive one binlog file
Copies the file over the replication protocol (or from its directory), verifying CRC32,
positions, size and sha256 while it streams; the object is committed whole, then its manifest
(with the transaction index) is written. A rerun finds the manifest of this very file (same
name, server and head) and does nothing. A same-named file of another history (a reset, a
failover) is a new generation, archived beside the old one: a warning in the log, nothing lost.
A file purged from the server before it was copied is skipped here; the next file's manifest
records the gap, and the validation of its range reports it. A file the server refuses to send,
or whose bytes are damaged (named with the source, the offset and why), fails this task at once,
without retries; the other files' tasks go on (docs/archive.md).
""")
def archive_file(item: dict) -> dict | None:
    from airflow.sdk.exceptions import AirflowSkipException

    from binlake.archive.run import archive_file as archive_one
    from binlake.archive.run import file_number

    context = get_current_context()
    context["binlake_file"] = f"{item['source']}/{item['file']}"
    cfg = settings.load()
    spec = cfg.source(item["source"])
    source = resources.open_source(spec)
    with _source_errors(spec.name):
        listing = sorted(source.files(), key=lambda f: file_number(f.name))
    f = next((f for f in listing if f.name == item["file"]), None)
    if f is None:
        raise AirflowSkipException(f"{spec.name}: {item['file']} is no longer on the server (purged)")
    with _source_errors(spec.name):
        manifest = archive_one(source, resources.open_store(cfg), spec.name, f, listing=listing)
    if manifest is None:
        raise AirflowSkipException(f"{spec.name}: {f.name} is already archived")
    return {"source": spec.name, "file": f.name, "name": manifest["name"], "generation": manifest["generation"],
            "size": manifest["size"], "sha256": manifest["sha256"],
            "transactions": manifest["transaction_count"], "max_commit_ts": manifest["max_commit_ts"],
            "last_event_ts": manifest["last_event_ts"], "gap": (manifest.get("gap") or {}).get("detail"),
            "notice": (manifest.get("notice") or {}).get("detail")}


@task(outlets=[ARCHIVE_ALIAS, ARCHIVE], trigger_rule="all_done", doc_md="""
### Summary
Adds an event to each source's Asset per file archived by this run (the file's facts in its
extra), counts what was archived per source, and names any purge gap (files removed from the
server before they could be copied). It runs once every file's task has ended, whatever they
ended with: the files archived beside a failed one get their events (`all_archived` fails the
run for the failed one). The archive as a whole (`binlake_archives`, which binlake_transactions
reads) gets one event with the files and transactions per source.
""")
def summarize(results: list[dict | None]) -> dict:
    # The events are added here, by one task: mapped tasks adding the first events of a new
    # source's Asset at once each create the Asset, and all but one fail on its unique name.
    context = get_current_context()
    done = [r for r in results or [] if r]
    for r in done:
        context["outlet_events"][ARCHIVE_ALIAS].add(archive_asset(r["source"]), extra=r)
    by_source: dict[str, dict] = {}
    for r in done:
        s = by_source.setdefault(r["source"], {"files": 0, "bytes": 0, "transactions": 0, "gaps": []})
        s["files"] += 1
        s["bytes"] += r["size"]
        s["transactions"] += r["transactions"]
        if r["gap"]:
            s["gaps"].append(r["gap"])
        if r.get("notice"):
            s.setdefault("notices", []).append(r["notice"])
    for name, s in sorted(by_source.items()):
        log.info("%s: archived %d files, %d bytes, %d transactions", name, s["files"], s["bytes"], s["transactions"])
        for gap in s["gaps"]:
            log.error("%s: %s", name, gap)
        for notice in s.get("notices", []):  # a reset or another server: archived, nothing lost
            log.warning("%s: %s", name, notice)
    if not done:
        log.info("nothing new to archive")
    context["outlet_events"][ARCHIVE].extra = {name: {k: s[k] for k in ("files", "transactions")}
                                               for name, s in by_source.items()}
    return by_source
