"""binlake_upkeep: daily, compact the warehouse's small files and remove those time travel no longer needs."""

import datetime as dt

from airflow.sdk import dag
from binlake_airflow.upkeep_tasks import UpkeepOperator


@dag(
    dag_id="binlake_upkeep",
    schedule="30 3 * * *",
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 3, "retry_delay": dt.timedelta(minutes=10)},
    tags=["binlake"],
    doc_md="""
## binlake_upkeep
Daily at 03:30 UTC: `binlake upkeep` on the `binlake` Variable's warehouse. OPTIMIZE compacts the
small files hourly runs leave in each day of `transactions`, `row_changes` and `anomalies`, and in
the source tables' row versions; VACUUM then removes the files no version of the last
`upkeep_retain_days` days (7 by default) needs, so time travel (`VERSION AS OF`, `TIMESTAMP AS OF`)
reaches that far back. The GX project's validation results older than that go too, with their data
docs pages, from the Variable's `quality` directory (binlake's own reports, `runs/`, stay). It queues
with the other writers of the warehouse (assemble, apply_tables) in the pool `binlake_warehouse`,
and takes the writer lease: beside a writer outside Airflow it fails and is retried ten minutes later.
""",
)
def binlake_upkeep():
    UpkeepOperator(task_id="upkeep", doc_md=UpkeepOperator.__doc__)


binlake_upkeep()
