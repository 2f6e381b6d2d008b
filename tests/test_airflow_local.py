"""`binlake airflow` (make airflow): a local Airflow for binlake, driven as a user would, through
its REST API: the DAGs listed and unpaused, an archive run, an interval's run with its quality
report, then Ctrl-C, after which nothing it started is left. The demo's defaults (the bundled
samples as sources) are its Variable."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

import pytest

from binlake.airflow_local import free_port
from binlake.demo import commit_range
from tests.support.airflow import api_token
from tests.support.truth import samples_truth

pytestmark = pytest.mark.airflow  # it runs Airflow's services itself, not through the fixture


def _api(url: str, path: str, token: str, body: dict | None = None) -> dict:
    req = urllib.request.Request(url + path, method="POST" if body is not None else "GET",
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    # SQLite serialises the services' writes: on a busy machine an answer can take a while
    # (up to the database's lock wait, binlake.demo.airflow_env)
    with urllib.request.urlopen(req, timeout=330) as r:
        return json.loads(r.read())



def _run(url: str, token: str, dag: str, conf: dict | None = None, timeout: float = 600) -> dict:
    run = _api(url, f"/api/v2/dags/{dag}/dagRuns", token, {"logical_date": None, "conf": conf or {}})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            run = _api(url, f"/api/v2/dags/{dag}/dagRuns/{run['dag_run_id']}", token)
        except TimeoutError:  # a slow answer (see _api): ask again
            continue
        if run["state"] in ("success", "failed"):
            return run
        time.sleep(3)
    raise AssertionError(f"{dag}: {run['dag_run_id']} not ended after {timeout:.0f} s")


def test_make_airflow_starts_serves_runs_and_stops(tmp_path, spark_submit):
    home = tmp_path / "home"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "AWS_"))}
    proc = subprocess.Popen([sys.executable, "-m", "binlake.cli", "airflow", "--home", str(home), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    try:
        lines = []
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.append(line)
            if line.startswith("Airflow for binlake: http"):
                break
        assert lines and lines[-1].startswith(f"Airflow for binlake: http://127.0.0.1:{port} "), "".join(lines)
        password = lines[-1].rsplit("password ", 1)[1].rstrip(")\n")
        url = f"http://127.0.0.1:{port}"
        token = api_token(url, password)
        dags = {d["dag_id"]: d for d in _api(url, "/api/v2/dags", token)["dags"]}
        assert {"binlake_archive", "binlake_transactions"} <= set(dags)
        assert not dags["binlake_archive"]["is_paused"] and not dags["binlake_transactions"]["is_paused"]

        assert _run(url, token, "binlake_archive")["state"] == "success"
        start, end = commit_range(home / "binlake" / "archive")
        run = _run(url, token, "binlake_transactions", {"start": start, "end": end})
        assert run["state"] == "success", run
        # the run's own report (the 5-minute schedule may have run an interval of its own beside it)
        reports = [r for p in (home / "binlake" / "warehouse" / "quality" / "runs").glob("*/results.json")
                   if (r := json.loads(p.read_text())["report"])["start"][:19] == start[:19]]
        assert [(r["success"], r["counts"]["transactions"]) for r in reports] == \
            [(True, samples_truth()["transactions"])]  # the samples' own count (tests.support.truth)
        assert Path(reports[0]["docs"]).is_file()
        # the run's Quality report tab's page, served by this Airflow's API server
        req = urllib.request.Request(f"{url}/binlake/runs/binlake_transactions/{quote(run['dag_run_id'], safe='')}",
                                     headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, timeout=180) as r:
            page = r.read().decode()
        assert "<b>PASSED</b>" in page and f"transactions {samples_truth()['transactions']}," in page
        assert (home / "env.sh").read_text().count(f"AIRFLOW_HOME={home}") == 1
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out[-3000:]
    assert "Airflow for binlake: stopped" in out
    left = subprocess.run(["pgrep", "-f", str(home)], capture_output=True, text=True).stdout.split()
    assert left == [], left  # no service, task or JVM of its home outlives it
