"""The quality report of a `binlake_transactions` run, served by Airflow's API server (a FastAPI
app of report_plugin.py, under /binlake): the run's summary and suites, and the GX data docs of
the quality directory, so that the report is a tab of the run's page instead of a file on a worker.

Every page asks Airflow's auth manager first: reading a run's report takes the right to read
the DAG's runs (the data docs show rows of the data).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Annotated

from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
from airflow.api_fastapi.core_api.security import requires_access_dag
from fastapi import Depends, FastAPI, HTTPException
from fastapi.responses import FileResponse, HTMLResponse

from binlake.local import quality_files
from binlake_airflow import reports, settings

TRANSACTIONS_DAG = "binlake_transactions"
SUITES_DIR = quality_files.SITE  # GX's site, under quality/

app = FastAPI(title="binlake quality reports", docs_url=None, redoc_url=None, openapi_url=None)
can_read_run = requires_access_dag("GET", DagAccessEntity.RUN)
can_read_reports = requires_access_dag("GET", DagAccessEntity.RUN, param_dag_id=TRANSACTIONS_DAG)


def quality() -> Path:
    """Where the tasks keep the quality reports, from the `binlake` Variable (read in the API server)."""
    from airflow.models import Variable

    raw = Variable.get(settings.VARIABLE, default_var=None, deserialize_json=True)
    return settings.quality(settings.parse(raw if raw is not None else settings.defaults()))


Quality = Annotated[Path, Depends(quality)]


@app.get("/runs/{dag_id}/{run_id}", response_class=HTMLResponse, dependencies=[Depends(can_read_run)])
def run_report(dag_id: str, run_id: str, quality: Quality) -> HTMLResponse:
    run = reports.find(quality, dag_id, run_id)
    if run is None:
        why = ("its validate task has not run yet (or stopped before the suites ran)" if dag_id == TRANSACTIONS_DAG
               else f"only {TRANSACTIONS_DAG} runs validate the warehouse")
        return HTMLResponse(_page(f"No quality report for {run_id}", f"<p>No report: {html.escape(why)}.</p>"))
    try:
        report = json.loads((quality / "runs" / run / "results.json").read_text())["report"]
    except FileNotFoundError:
        raise HTTPException(404, f"the report {run} is no longer in {quality / 'runs'}") from None
    return HTMLResponse(_page(f"Quality report {report['start']} .. {report['end']}", _body(quality, run, report)))


def _body(quality: Path, run: str, report: dict) -> str:
    rows = []
    for s in report["suites"]:
        state = "passed" if s["success"] else ("failed (warn only)" if s["warn_only"] else "FAILED")
        page = next((quality / SUITES_DIR / "validations" / s["suite"]).glob(f"{run}_{s['suite']}/*/*.html"), None)
        link = (f'<a href="../../docs/{page.relative_to(quality / SUITES_DIR).as_posix()}">data docs</a>'
                if page else "no data docs page")
        rows.append(f"<tr><td>{html.escape(s['suite'])}</td><td class='{'ok' if s['success'] else 'bad'}'>{state}"
                    f"</td><td>{s['passed']}/{s['evaluated']}</td><td>{link}</td></tr>")
    counts = ", ".join(f"{k} {v}" for k, v in report["counts"].items())
    summary = (quality / "runs" / run / "summary.txt").read_text()
    return (f"<p class='{'ok' if report['success'] else 'bad'}'><b>{'PASSED' if report['success'] else 'FAILED'}"
            f"</b> · {html.escape(counts)}</p>"
            "<table><tr><th>suite</th><th>result</th><th>expectations met</th><th></th></tr>"
            f"{''.join(rows)}</table>"
            f'<p><a href="../../docs/index.html">All validations (data docs)</a> · '
            f'<a href="../../results/{run}/results.json">results.json</a></p>'
            f"<pre>{html.escape(summary)}</pre>")


def _page(title: str, body: str) -> str:
    return ("<!doctype html><html><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title><style>"
            "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}"
            "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .8em;text-align:left}"
            ".ok{color:#1a7f37}.bad{color:#cf222e}pre{background:#f6f8fa;padding:1em;overflow:auto}"
            f"</style></head><body><h2>{html.escape(title)}</h2>{body}</body></html>")


@app.get("/docs/{path:path}", dependencies=[Depends(can_read_reports)])
def data_docs(path: str, quality: Quality) -> FileResponse:
    return FileResponse(_inside(quality / SUITES_DIR, path))


@app.get("/results/{run}/{name}", dependencies=[Depends(can_read_reports)])
def results(run: str, name: str, quality: Quality) -> FileResponse:
    if name not in ("results.json", "summary.txt"):
        raise HTTPException(404, name)
    return FileResponse(_inside(quality / "runs", f"{run}/{name}"))


def _inside(root: Path, path: str) -> Path:
    """`root / path`, refused when it is not a file under root (`..`, links out of it)."""
    target = (root / path).resolve()
    if not target.is_relative_to(root.resolve()) or not target.is_file():
        raise HTTPException(404, f"no {path} in the quality reports")
    return target
