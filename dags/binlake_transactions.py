"""binlake_transactions: per data interval, assemble the archived binlogs into the warehouse's
transactions, row_changes and anomalies tables with Spark, prove them with the GX suites, then
apply them to the source tables' row versions."""

import datetime as dt
import os

from airflow.sdk import Param, dag
from airflow.timetables.interval import CronDataIntervalTimetable
from binlake_airflow.spark_submit import END, START
from binlake_airflow.tables_tasks import TablesOperator
from binlake_airflow.transactions_tasks import AssembleOperator, publish_report, validate, wait_for_archive

SCHEDULE = os.environ.get("BINLAKE_TRANSACTIONS_SCHEDULE", "0 * * * *")
# No scheduled runs after this date (a source retired, or a test): backfills before it still run.
END_DATE = os.environ.get("BINLAKE_TRANSACTIONS_END_DATE")


@dag(
    dag_id="binlake_transactions",
    schedule=CronDataIntervalTimetable(SCHEDULE, timezone="UTC"),
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    end_date=dt.datetime.fromisoformat(END_DATE).replace(tzinfo=dt.UTC) if END_DATE else None,
    catchup=False,  # history is filled by backfills: airflow backfill create --dag-id binlake_transactions …
    max_active_runs=4,
    default_args={"retries": 2, "retry_delay": dt.timedelta(minutes=2), "retry_exponential_backoff": True,
                  "max_retry_delay": dt.timedelta(minutes=30)},
    params={
        "start": Param(None, type=["null", "string"], title="Start (optional)",
                       description="Range start (ISO 8601, UTC). Empty: the run's data interval."),
        "end": Param(None, type=["null", "string"], title="End (optional)",
                     description="Range end, exclusive. Empty: the run's data interval."),
    },
    tags=["binlake"],
    doc_md="""
## binlake_transactions
For each data interval (`BINLAKE_TRANSACTIONS_SCHEDULE`, hourly by default) — or the `start`/`end`
params of a manual run:

1. **wait_for_archive** until every source's archive reaches the interval's end;
2. **assemble**: `spark-submit spark_jobs/assemble_transactions.py` on the `spark_default`
   connection; the interval's rows are replaced in one Delta commit per table, which names the run,
   so reruns and backfills are idempotent. One assemble at a time (one writer of the warehouse:
   concurrent runs queue here); each table's Asset gets an event with the range, status and counts;
3. **validate** with the Great Expectations suites (run by the assemble job in its own Spark
   session, at the versions it wrote, when its driver runs on the worker); a failing suite fails the run;
4. **apply_tables**, once validated: `spark-submit spark_jobs/apply_tables.py` (`binlake tables`)
   applies the range to each source table's row versions (`binlake asof` reads them); each source's
   Asset `binlake_tables_<source>` gets an event with the range, status and counts. A range the
   tables cannot take (after a hole no run applied) fails the task at once, naming the range to run first;
5. **publish_report**: the data docs path, as an event of the `binlake_quality_report` Asset.

Assemble and apply_tables write the warehouse: they queue in the one-slot pool `binlake_warehouse`.
Backfill a range: `airflow backfill create --dag-id binlake_transactions --from-date 2026-11-01 --to-date 2026-11-08`.
""",
)
def binlake_transactions():
    assemble = AssembleOperator(task_id="assemble", doc_md=AssembleOperator.__doc__)
    checked = validate(start=START, end=END, assembled=assemble.output)
    wait_for_archive(end=END) >> assemble >> checked
    checked >> TablesOperator(task_id="apply_tables", doc_md=TablesOperator.__doc__)
    publish_report(checked)


binlake_transactions()
