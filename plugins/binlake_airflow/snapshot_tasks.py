"""The baseline of the source tables as Airflow tasks (docs/snapshots.md): after each archive run,
find the tables of the live sources that need a baseline and have none; take snapshots, on
demand (a source, and tables or all of them) or of the tables found missing."""

from __future__ import annotations

import contextlib
import logging

from airflow.sdk import Asset, AssetAlias, get_current_context, task

from binlake_airflow import resources, settings

log = logging.getLogger(__name__)

# An event when an archive run found tables without a baseline: binlake_snapshot is scheduled on it.
BASELINES_NEEDED = Asset(name="binlake_baselines_needed", uri="binlake://baselines/needed", group="binlake")
BASELINES_ALIAS = AssetAlias("binlake_baselines")


def live(cfg: settings.Settings) -> list[settings.SourceSpec]:
    """The sources a snapshot can read (a server, not a directory) whose baselines are wanted."""
    return [s for s in cfg.sources if s.baselines and (s.mysql_conn_id or (s.url or "").startswith("mysql://"))]


@contextlib.contextmanager
def _snapshot_errors():
    from airflow.sdk.exceptions import AirflowFailException

    from binlake.errors import BinlakeError

    try:
        yield
    except BinlakeError as e:
        if e.lasting:  # a missing privilege or table, wrong credentials, binary logging off
            raise AirflowFailException(str(e)) from None
        raise  # a lost connection, a store down: the retry resumes the snapshot


@task(outlets=[BASELINES_ALIAS], doc_md="""
### Tables without a baseline
For each live source of the `binlake` Variable (not `"baselines": false`), the tables its schema
history (captured by this run) had when archiving began and no baseline holds
(`binlake snapshot --missing`, docs/snapshots.md): a table created since is complete from its
CREATE in the archive. When there are some, an event of the Asset `binlake_baselines_needed`
(their names in its extra) schedules `binlake_snapshot`.
""")
def find_missing_baselines() -> dict[str, list[str]]:
    from binlake.baseline.coverage import missing

    cfg = settings.load()
    store = resources.open_store(cfg)
    found = {}
    for spec in live(cfg):
        with _snapshot_errors():
            tables = missing(store, spec.name)
        if tables:
            found[spec.name] = tables
            log.info("%s: %d table(s) need a baseline: %s", spec.name, len(tables), ", ".join(tables[:20]))
    if found:
        get_current_context()["outlet_events"][BASELINES_ALIAS].add(BASELINES_NEEDED, extra={"missing": found})
    else:
        log.info("every table of the live sources has its baseline")
    return found


@task(retries=3, doc_md="""
### Take snapshots
On demand, with the run's params: `source` (a source of the `binlake` Variable) and `tables`
(`db.table` names; none: every table the source's user may read). Scheduled (by the Asset
`binlake_baselines_needed`), or without a `source`: the tables each live source needs a baseline
for. Each snapshot is consistent at exact points of the binlog, chunked, into the archive store
(docs/snapshots.md); a retry resumes it where it stopped. A missing privilege or table fails the
task at once, naming it.
""")
def take_snapshots() -> dict[str, dict]:
    from binlake.baseline.coverage import missing
    from binlake.baseline.run import snapshot

    params = get_current_context()["params"]
    cfg = settings.load()
    store = resources.open_store(cfg)
    asked = params.get("source") or None
    specs = [cfg.source(asked)] if asked else live(cfg)
    done: dict[str, dict] = {}
    for spec in specs:
        if asked and spec not in live(cfg):
            from airflow.sdk.exceptions import AirflowFailException

            raise AirflowFailException(f"source {spec.name}: a snapshot reads a live server (a mysql_conn_id or a "
                                       "mysql:// url), with baselines not turned off")
        with _snapshot_errors():
            tables = (params.get("tables") or None) if asked else missing(store, spec.name)
            if not asked and not tables:
                log.info("%s: no table needs a baseline", spec.name)
                continue
            result = snapshot(resources.open_source(spec), store, spec.name, tables)
        done[spec.name] = {"id": result.id, "resumed": result.resumed, "tables": result.tables, "rows": result.rows,
                           "chunks": result.chunks, "sessions": result.sessions,
                           "skipped": [f"{s['schema']}.{s['table']}: {s['reason']}" for s in result.skipped]}
        log.info("%s: snapshot %s: %d tables, %d rows in %d chunks", spec.name, result.id, result.tables,
                 result.rows, result.chunks)
    return done
