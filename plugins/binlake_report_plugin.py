"""binlake's Airflow plugin: the quality report view (binlake_airflow/report_app.py) mounted on the
API server under /binlake, and a "Quality report" tab on every DAG run's page that opens the
run's report there."""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin
from binlake_airflow.report_app import app
from binlake_airflow.reports import PREFIX


class BinlakeReportPlugin(AirflowPlugin):
    name = "binlake"
    fastapi_apps = [{"app": app, "url_prefix": PREFIX, "name": "binlake quality reports"}]
    # The UI fills in {DAG_ID} and {RUN_ID}; a relative href keeps working behind a base path.
    external_views = [{"name": "Quality report", "href": f"{PREFIX.lstrip('/')}/runs/{{DAG_ID}}/{{RUN_ID}}",
                       "destination": "dag_run", "url_route": "binlake_quality_report"}]
