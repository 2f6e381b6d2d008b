"""Airflow as users run it: api-server, scheduler and dag-processor on 127.0.0.1 (LocalExecutor,
PostgreSQL, as `binlake airflow` runs them). A backfill over minute intervals, made while they run,
equals one run over the whole range and reruns change nothing; the UI, driven in headless Chromium,
shows both DAGs and runs binlake_transactions."""

from __future__ import annotations

import json
import re

import pytest

from tests.support.lake import lake
from tests.support.scanning import run_cli
from tests.support.truth import samples_truth
from tests.test_airflow import ARTIFACTS

# The bundled samples were written on 2026-11-22 between 11:47:59 and 11:48:04 (UTC): minute
# intervals cut through them (11:47 and 11:48). No scheduled runs after END: only the backfills run.
FROM, TO, END = "2026-11-22T11:47:00+00:00", "2026-11-22T11:48:00+00:00", "2026-11-22T11:50:00"


@pytest.fixture(scope="module")
def stack(airflow):
    af = airflow({"BINLAKE_TRANSACTIONS_SCHEDULE": "* * * * *", "BINLAKE_TRANSACTIONS_END_DATE": END},
                 database="postgres")
    run = af.dags_test("binlake_archive")  # the samples into the default local archive
    assert run["state"] == "success", run["output"][-3000:]
    return af, af.start()


def test_backfill_equals_one_run_and_reruns_change_nothing(stack, spark_submit, tmp_path):
    af, _ = stack
    warehouse = af.home / "binlake" / "warehouse"
    # what the module's other test may have run before this one is not this test's
    before = {r["run_id"] for r in af.runs("binlake_transactions")}
    reported = set((warehouse / "quality" / "runs").glob("*/results.json"))
    # the CLI beside the running services, as a user with the home's environment makes a backfill
    af.cli("dags", "reserialize")
    af.cli("dags", "unpause", "binlake_transactions")
    out = af.cli("backfill", "create", "--dag-id", "binlake_transactions", "--from-date", FROM, "--to-date",
                 TO, "--max-active-runs", "1")
    assert out.returncode == 0
    runs = [r for r in af.wait_runs("binlake_transactions", count=len(before) + 2) if r["run_id"] not in before]
    assert sorted(r["logical_date"][:16] for r in runs) == ["2026-11-22T11:47", "2026-11-22T11:48"]
    assert {r["state"] for r in runs} == {"success"}, runs
    got = lake(warehouse)

    # one run over the whole range (the job itself, outside Airflow) gives the same rows
    store = f"file://{af.home / 'binlake' / 'archive'}"
    proc = run_cli("assemble", "--store", store, "--warehouse", str(tmp_path / "whole"), "--start", FROM,
                   "--end", "2026-11-22T11:49:00+00:00", "--master", "local[2]")
    assert proc.returncode == 0, proc.stderr[-3000:]
    whole = lake(tmp_path / "whole")
    assert sum(whole["transactions"].values()) == samples_truth()["transactions"] and got == whole

    # each interval was validated and has its own quality run
    reports = [json.loads(p.read_text())["report"] for p in (warehouse / "quality" / "runs").glob("*/results.json")
               if p not in reported]
    assert sorted((r["start"][11:16], r["success"]) for r in reports) == [("11:47", True), ("11:48", True)]

    # the source tables the backfill applied, at the last instant it applied (binlake asof)
    applied = _source_tables(warehouse)
    assert sum(len(rows) for rows in applied.values()) > 0

    # rerun the middle interval (it cuts through the data): the backfill queues its run again
    (middle,) = [r for r in runs if r["logical_date"].startswith("2026-11-22T11:47")]
    af.wait_backfills("binlake_transactions")  # one backfill at a time
    af.cli("backfill", "create", "--dag-id", "binlake_transactions", "--from-date",
           "2026-11-22T11:47:00+00:00", "--to-date", "2026-11-22T11:47:00+00:00", "--reprocess-behavior", "completed")
    again = af.wait_rerun("binlake_transactions", middle["run_id"], middle["end_date"])
    assert again["state"] == "success"
    assert lake(warehouse) == got and _source_tables(warehouse) == applied  # rebuilt from 11:47 to the same rows


def _source_tables(warehouse) -> dict[str, list[str]]:
    """Each sample source's tables at the backfill's last applied instant, as `binlake asof` prints them."""
    out = {}
    for source in ("sample-mariadb-10.11", "sample-mysql-9.7"):
        proc = run_cli("asof", "--warehouse", str(warehouse), "--source", source, "--at", "2026-11-22T11:48:59Z")
        assert proc.returncode == 0, proc.stderr[-3000:]
        out[source] = sorted(proc.stdout.splitlines())
    return out


def test_the_ui_shows_both_dags_and_runs_a_triggered_interval(stack, chromium):
    af, url = stack
    af.cli("dags", "reserialize")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with chromium.page() as page:
        page.goto(url + "/", wait_until="networkidle")
        page.get_by_label("Username").fill("admin")
        page.get_by_label("Password").fill(af.password())
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(re.compile(r"^(?!.*/auth/login)"), timeout=30_000)
        page.goto(url + "/dags", wait_until="networkidle")
        page.get_by_text("binlake_archive").first.wait_for(timeout=60_000)
        page.get_by_text("binlake_transactions").first.wait_for(timeout=60_000)
        assert page.get_by_text(re.compile("import error", re.I)).count() == 0
        page.screenshot(path=str(ARTIFACTS / "airflow-dags.png"), full_page=True)

        before = {r["run_id"] for r in af.runs("binlake_transactions")}
        page.goto(url + "/dags/binlake_transactions", wait_until="networkidle")
        page.get_by_role("button", name="Trigger Dag").click()
        dialog = page.get_by_role("dialog")
        # the DAG's params, as the trigger form shows them (titles and descriptions from the DAG)
        # a logical date before the DAG's end date (later ones get no tasks), then the range as params
        dialog.get_by_test_id("datetime-input").click()
        page.get_by_placeholder("YYYY/MM/DD").fill("2026/11/22")
        page.get_by_placeholder("HH:mm").fill("11:30")
        # Escape closes the picker's popover (not the dialog); clicking elsewhere may land on the popover
        page.get_by_placeholder("HH:mm").press("Escape")
        page.get_by_placeholder("HH:mm").wait_for(state="hidden")
        assert dialog.is_visible()
        dialog.get_by_text("Nov 22, 2026 11:30").wait_for()
        dialog.get_by_text("Start (optional)").wait_for()
        dialog.get_by_text("Range start (ISO 8601, UTC). Empty: the run's data interval.").wait_for()
        dialog.locator("input[name=element_start]").fill("2026-11-22T11:00:00Z")
        dialog.locator("input[name=element_end]").fill("2026-11-22T12:00:00Z")
        page.screenshot(path=str(ARTIFACTS / "airflow-trigger.png"))
        dialog.get_by_role("button", name="Trigger").last.click()
        new = _new_run(af, before)
        runs = af.wait_runs("binlake_transactions", run_ids={new})
        assert runs[0]["state"] == "success" and runs[0]["logical_date"].startswith("2026-11-22T11:30")
        assert af.task_states("binlake_transactions", new) == {
            "wait_for_archive": "success", "assemble": "success", "validate": "success", "apply_tables": "success",
            "publish_report": "success"}
        page.goto(f"{url}/dags/binlake_transactions/runs/{new}", wait_until="networkidle")
        page.get_by_text("5 Task Instances").wait_for(timeout=60_000)
        assert page.get_by_text("Success", exact=True).count() >= 6  # the run and its five tasks
        page.screenshot(path=str(ARTIFACTS / "airflow-run.png"), full_page=True)
        report = next(p for p in (af.home / "binlake" / "warehouse" / "quality" / "runs").glob("*/results.json")
                      if "20261122T110000Z_20261122T120000Z" in p.parent.name)
        assert json.loads(report.read_text())["report"]["counts"]["transactions"] == samples_truth()["transactions"]

        # the report, one click from the run: its tab shows the run's suites (served by the API
        # server from the warehouse), and the data docs behind it list the validations, styled,
        # with nothing fetched from outside this machine
        remote: list[str] = []
        page.route(re.compile(r"^https?://(?!127\.0\.0\.1[:/])"),
                   lambda route: (remote.append(route.request.url), route.abort()))
        page.get_by_role("tab", name="Quality report").or_(page.get_by_text("Quality report", exact=True)).first.click()
        frame = page.frame_locator("iframe").first
        frame.get_by_text("PASSED", exact=True).wait_for(timeout=60_000)
        suites = frame.locator("table tr td:first-child").all_inner_texts()
        # expectations/, in order: the boundary suites, then the row versions' that apply_tables adds
        assert suites == ["transactions", "row_changes", "anomalies", "continuity", "versions", "baselines"]
        assert frame.get_by_text(f"transactions {samples_truth()['transactions']}").count() >= 1
        page.screenshot(path=str(ARTIFACTS / "airflow-report.png"), full_page=True)
        frame.get_by_role("link", name="All validations (data docs)").click()
        frame.get_by_text("Validation Results").first.wait_for(timeout=60_000)
        frame.get_by_text(re.compile(r"Showing 1 to \d+ of \d+ rows")).first.wait_for()  # bootstrap-table drew it
        assert frame.locator("nav.navbar").evaluate("e => getComputedStyle(e).display") == "flex"
        page.screenshot(path=str(ARTIFACTS / "airflow-data-docs.png"), full_page=True)
        assert remote == []


def _new_run(af, before: set[str], timeout: float = 60) -> str:
    from tests.support.waiting import until

    new = until(lambda: [r["run_id"] for r in af.runs("binlake_transactions") if r["run_id"] not in before],
                "a run created by the UI's trigger", timeout, every=2)
    return new[0]


def test_the_report_view_asks_airflow_and_serves_only_the_reports(stack):
    """The report view (plugins/binlake_airflow/report_app.py) on the API server: Airflow's auth
    first, then only files of the warehouse's quality reports."""
    import urllib.error
    import urllib.request

    from tests.support.airflow import api_token

    af, url = stack
    token = api_token(url, af.password())

    def get(path: str, auth: bool = True) -> tuple[int, str]:
        headers = {"Authorization": f"Bearer {token}"} if auth else {}
        try:
            with urllib.request.urlopen(urllib.request.Request(url + path, headers=headers), timeout=180) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    assert get("/binlake/runs/binlake_transactions/any", auth=False)[0] == 401
    assert get("/binlake/docs/index.html", auth=False)[0] == 401
    status, page = get("/binlake/runs/binlake_archive/manual__x")
    assert status == 200 and "only binlake_transactions runs validate the warehouse" in page
    status, page = get("/binlake/runs/binlake_transactions/never_ran")
    assert status == 200 and "its validate task has not run yet" in page
    # out of the reports: refused however the path is spelled
    for path in ("/binlake/docs/%2e%2e/%2e%2e/%2e%2e/%2e%2e/airflow.cfg", "/binlake/docs/..%2f..%2f..%2fairflow.cfg",
                 "/binlake/results/..%2f..%2f..%2f..%2f..%2fairflow.cfg/results.json",
                 "/binlake/results/x/airflow.cfg"):
        status, body = get(path)
        assert status == 404 and "[core]" not in body, path
