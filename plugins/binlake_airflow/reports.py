"""Where a DAG run's quality report is: the validate task records its binlake run name beside the
reports, under `{quality}/airflow/{dag_id}/{run_id}.json` (the quality directory: settings.quality); the report view
(report_app.py) finds it there. A file, not an XCom: a failed validation has no return value, and
its report is the one a user most wants to open."""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import quote

# The report view's address under the API server (report_plugin.py mounts it there).
PREFIX = "/binlake"


def _pointer(quality: Path, dag_id: str, run_id: str) -> Path:
    return quality / "airflow" / quote(dag_id, safe="") / f"{quote(run_id, safe='')}.json"


def record(quality: Path, dag_id: str, run_id: str, run: str) -> None:
    """Say that `run` (binlake's report under {quality}/runs/) is this DAG run's report."""
    path = _pointer(quality, dag_id, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"run": run}))
    os.replace(tmp, path)  # a reader sees the old pointer or the new, never half of one


def find(quality: Path, dag_id: str, run_id: str) -> str | None:
    """The binlake run name of this DAG run's last validation, or None before one."""
    try:
        return json.loads(_pointer(quality, dag_id, run_id).read_text())["run"]
    except FileNotFoundError:
        return None


def url(base_url: str, dag_id: str, run_id: str) -> str:
    """The report view's page of a DAG run (base_url: the API server's, as users reach it)."""
    return f"{base_url.rstrip('/')}{PREFIX}/runs/{quote(dag_id, safe='')}/{quote(run_id, safe='')}"
