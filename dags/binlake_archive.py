"""binlake_archive: every 10 minutes, copy each source's newly rotated binlog files to the archive."""

import datetime as dt

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import dag
from binlake_airflow.archive_tasks import archive_file, list_new_files, summarize
from binlake_airflow.snapshot_tasks import find_missing_baselines


@dag(
    dag_id="binlake_archive",
    schedule=dt.timedelta(minutes=10),
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,  # a run archives everything not yet archived: past runs have nothing to add
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": dt.timedelta(minutes=1), "retry_exponential_backoff": True},
    tags=["binlake"],
    doc_md="""
## binlake_archive
Copies every **rotated** binlog file of each source in the `binlake` Variable to the archive
store, byte for byte, with a manifest holding its transaction index (the server's active file is
never copied). One mapped task per file, labelled `source/file`; `summarize` adds an event per
archived file to the source's `binlake_archive_<source>` Asset; `all_archived` fails the run when
a file could not be archived. Then `find_missing_baselines` names the live sources' tables that
need a baseline and have none, and schedules `binlake_snapshot` for them (an event of the Asset
`binlake_baselines_needed`). Sources and store are set in the `binlake` Variable (see
`plugins/binlake_airflow/settings.py`); MySQL credentials come from each source's MySQL
connection, S3 from the AWS connection.
""",
)
def binlake_archive():
    archived = archive_file.expand(item=list_new_files())
    summarize(archived) >> find_missing_baselines()
    # The run's verdict: summarize adds the archived files' events whatever the others ended with.
    archived >> EmptyOperator(task_id="all_archived", doc_md="Fails (upstream failed) when a file's task failed.")


binlake_archive()
