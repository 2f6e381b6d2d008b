"""binlake_snapshot: consistent snapshots of the live sources' tables into the archive, the baseline
of the source tables: on demand, and when an archive run finds tables that need one."""

import datetime as dt

from airflow.sdk import Param, dag
from binlake_airflow.snapshot_tasks import BASELINES_NEEDED, take_snapshots


@dag(
    dag_id="binlake_snapshot",
    schedule=[BASELINES_NEEDED],
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,  # one snapshot of a source at a time; events meanwhile make one more run
    is_paused_upon_creation=False,  # the archive DAG's events are acted on without a click
    default_args={"retry_delay": dt.timedelta(minutes=1), "retry_exponential_backoff": True},
    params={
        "source": Param("", type="string", title="Source (optional)",
                        description="A source of the binlake Variable. Empty: every live source's tables that "
                                    "need a baseline."),
        "tables": Param([], type="array", items={"type": "string"}, title="Tables (optional)",
                        description="db.table names of the source. Empty: every table its user may read."),
    },
    tags=["binlake"],
    doc_md="""
## binlake_snapshot
Takes a consistent snapshot of a live source's tables at exact points of its binlog, chunked by
key, into the archive store: the baseline the source tables are built on (docs/snapshots.md).

- **On demand**: trigger with `source` and, optionally, `tables`
  (`airflow dags trigger binlake_snapshot -c '{"source": "db1", "tables": ["shop.orders"]}'`).
- **When tables need one**: `binlake_archive` adds an event to the Asset
  `binlake_baselines_needed` when a live source has tables that existed before archiving began
  and no baseline; this DAG then snapshots those tables.

A run killed or failed midway is resumed by the next (its retry, or the next run). MySQL needs
SELECT, FLUSH_TABLES (or RELOAD) and REPLICATION CLIENT; MariaDB SELECT.
""",
)
def binlake_snapshot():
    take_snapshots()


binlake_snapshot()
