"""`binlake airflow` (make airflow): a local Airflow for binlake, driven as a user would, through
its REST API: the DAGs listed and unpaused, an archive run, a backfill made while every service
runs, the run's quality report, then Ctrl-C, after which nothing it started is left, its
PostgreSQL included. The demo's defaults (the bundled samples as sources) are its Variable."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from urllib.parse import quote

import pytest

from binlake.local.airflow import free_port
from binlake.local.demo import sample_files
from tests.support.airflow import api_token
from tests.support.truth import samples_truth
from tests.support.waiting import until

SAMPLES_INTERVAL = "2026-11-22T11:45:00+00:00"  # the 5-minute interval the bundled samples were written in

pytestmark = pytest.mark.airflow  # it runs Airflow's services itself, not through the fixture


def _api(url: str, path: str, token: str, body: dict | None = None) -> dict:
    req = urllib.request.Request(url + path, method="POST" if body is not None else "GET",
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())



def _run(url: str, token: str, dag: str, conf: dict | None = None, timeout: float = 600) -> dict:
    run = _api(url, f"/api/v2/dags/{dag}/dagRuns", token, {"logical_date": None, "conf": conf or {}})
    path = f"/api/v2/dags/{dag}/dagRuns/{run['dag_run_id']}"
    return until(lambda: (r := _api(url, path, token))["state"] in ("success", "failed") and r,
                 f"{dag}: {run['dag_run_id']} ended", timeout, every=3)


def _backfill_run(url: str, token: str, backfill: int, timeout: float = 600) -> dict:
    """The one run of a backfill, when it has ended."""
    def ended() -> dict | None:
        runs = [r for r in _api(url, "/api/v2/dags/binlake_transactions/dagRuns?run_type=backfill", token)["dag_runs"]
                if r.get("backfill_id") in (None, backfill)]
        if runs and all(r["state"] in ("success", "failed") for r in runs):
            (run,) = runs
            return run
        return None

    return until(ended, f"backfill {backfill} ended", timeout, every=3)


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
        # each file's event on its source's Asset, though the files' tasks ran at once and each
        # source's Asset was new (Airflow's REST API; the oracle: the bundled files), whichever run
        # archived them (the scheduler's own first run may have)
        files = {}
        for f in sample_files():
            files[f"binlake_archive_sample-{Path(f).parent.name}"] = files.get(
                f"binlake_archive_sample-{Path(f).parent.name}", 0) + 1
        # (created through the AssetAlias, no DAG names them: Airflow lists them as not active)
        assets = _api(url, "/api/v2/assets?limit=100&only_active=false", token)["assets"]
        assert {a["name"]: _api(url, f"/api/v2/assets/events?asset_id={a['id']}&limit=100", token)["total_entries"]
                for a in assets if a["name"].startswith("binlake_archive_")} == files
        # a backfill, made through the REST API (as the UI's Backfill dialog does) while every
        # service runs: the interval around the samples (written 2026-11-22 11:47:59-11:48:04 UTC)
        backfill = _api(url, "/api/v2/backfills", token, {
            "dag_id": "binlake_transactions", "from_date": SAMPLES_INTERVAL, "to_date": SAMPLES_INTERVAL,
            "max_active_runs": 1, "reprocess_behavior": "none", "run_backwards": False, "dag_run_conf": {}})
        run = _backfill_run(url, token, backfill["id"])
        assert (run["state"], run["logical_date"][:19]) == ("success", SAMPLES_INTERVAL[:19]), run
        # the run's own report (the 5-minute schedule may have run an interval of its own beside it)
        reports = [r for p in (home / "binlake" / "warehouse" / "quality" / "runs").glob("*/results.json")
                   if (r := json.loads(p.read_text())["report"])["start"][:19] == SAMPLES_INTERVAL[:19]]
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
    except BaseException:  # what the services said, beside the failure
        for log in sorted(home.glob("*.log")):
            print(f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}")
        raise
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out[-3000:]
    assert "Airflow for binlake: stopped" in out
    # the home holds the demo's runs and assets: a configured pipeline is refused there, at once
    config = tmp_path / "binlake.json"
    config.write_text(json.dumps({"store": f"file://{tmp_path / 'a'}", "warehouse": str(tmp_path / "w"),
                                  "sources": [{"name": "s", "url": f"dir://{tmp_path}"}]}))
    refused = subprocess.run([sys.executable, "-m", "binlake.cli", "airflow", "--home", str(home), "--config",
                              str(config), "--port", str(port)], capture_output=True, text=True, env=env, timeout=120)
    assert refused.returncode == 1 and f"{home} holds the runs and assets of the demo pipeline" in refused.stderr, \
        refused.stderr
    assert not list(home.glob("*.pid"))
    data = (home / "postgres").resolve()  # as root, a directory the postgres user can reach
    try:
        assert (data / "PG_VERSION").is_file()
        for where in (home, data):
            left = subprocess.run(["pgrep", "-f", str(where)], capture_output=True, text=True).stdout.split()
            assert left == [], left  # no service, task, JVM or database of its home outlives it
    finally:
        shutil.rmtree(data, ignore_errors=True)
