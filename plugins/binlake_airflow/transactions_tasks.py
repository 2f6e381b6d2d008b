"""The transactions stage as Airflow tasks: wait until the archive covers the interval, assemble it
with spark-submit (the Spark provider's operator), validate it with the suites, publish the report."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from airflow.sdk import Asset, PokeReturnValue, get_current_context, task

from binlake.spark import settings as spark_settings
from binlake_airflow import reports, resources, settings
from binlake_airflow.archive_tasks import ARCHIVE
from binlake_airflow.spark_submit import RangeSubmitOperator

log = logging.getLogger(__name__)

JOB = Path(__file__).resolve().parents[2] / "spark_jobs" / "assemble_transactions.py"
REPORT_ASSET = Asset(name="binlake_quality_report", uri="binlake://warehouse/quality", group="binlake")
# The warehouse's tables: each run's assemble task adds an event to each, with its range and counts.
TABLE_ASSETS = {name: Asset(name=f"binlake_{name}", uri=f"binlake://warehouse/{name}", group="binlake")
                for name in spark_settings.TABLES}


@task.sensor(poke_interval=60, timeout=24 * 3600, mode="reschedule", doc_md="""
### Wait for the archive
An interval can be assembled once every transaction committed in it is archived: once each
source's archive holds a file with an event at or after the interval's end (servers write in
commit order). Sources marked `final` (old binlogs that get no more files) are complete once
every file they list is archived (a first archive run may still be copying them).
Sources with `flush_binary_logs` reach this point at every archive run even when quiet.

Fails (no retry) once `archive_wait_seconds` (1800 by default) have passed since the interval
ended, or since this run began when it began later (the first run of a new deployment, a backfill)
and a source's archive is still behind it: the message names each source, how far its archive
got, and the failed runs of `binlake_archive`.
""")
def wait_for_archive(end: str) -> PokeReturnValue:
    import datetime as dt

    from binlake.splits.plan import archived_until
    from binlake.splits.times import parse_time

    cfg = settings.load()
    store = resources.open_store(cfg)
    target = parse_time(end)
    behind = []
    for spec in cfg.sources:
        if spec.final:
            waiting = _not_archived(spec, store)
            if waiting:
                behind.append(f"{spec.name} ({len(waiting)} of its files not archived yet: {waiting[0]}…)")
            continue
        until = archived_until(store, spec.name)
        if until is None or until < target:
            behind.append(f"{spec.name} (archived up to {until or 'nothing yet'})")
    if not behind:
        return PokeReturnValue(is_done=True)
    now = dt.datetime.now(dt.UTC)
    # Counted from the interval's end, or from the run's start when it started later: the first
    # run of a new stack is for an interval that ended before the archive's first run could begin.
    began = get_current_context()["dag_run"].start_date or now
    since = max(dt.datetime.fromisoformat(target), began)
    if (now - since).total_seconds() > cfg.archive_wait_seconds:
        from airflow.sdk.exceptions import AirflowFailException

        # Waiting longer cannot help: the archive stopped (a source down, wrong credentials, a
        # refused file). Said here, not as a run that shows "running" for hours.
        raise AirflowFailException(
            f"the archive has not reached the interval's end {target} {(now - since).total_seconds():.0f} s after "
            f"{'it' if since > began else 'this run began'} (archive_wait_seconds {cfg.archive_wait_seconds:.0f}): "
            f"{', '.join(behind)}; {_archive_failures()}")
    log.info("waiting for the archive to reach %s: %s", target, ", ".join(behind))
    return PokeReturnValue(is_done=False)


def _not_archived(spec: settings.SourceSpec, store) -> list[str]:
    """The files a final source lists that its archive lacks (by name); none when the source
    cannot be listed any more (its old binlogs removed once archived)."""
    from binlake.archive.identity import Catalog
    from binlake.errors import BinlakeError

    try:
        files = resources.open_source(spec).files()
    except BinlakeError as e:
        log.warning("%s: cannot list its files (%s): taken as archived whole", spec.name, e)
        return []
    catalog = Catalog.load(store, spec.name)
    return [f.name for f in files if not catalog.named(f.name)]


def _archive_failures() -> str:
    """What Airflow knows of the archive DAG's failures, for the message of a stalled interval."""
    try:
        failed = get_current_context()["ti"].get_dr_count(dag_id="binlake_archive", states=["failed"])
    except Exception as e:  # noqa: BLE001 - the message is still worth sending without the count
        return f"binlake_archive's runs could not be counted ({type(e).__name__}): look at its last runs"
    return (f"binlake_archive has {failed} failed run(s): its last failed task's log says why" if failed
            else "binlake_archive has no failed run: is it scheduled and unpaused?")


class AssembleOperator(RangeSubmitOperator):
    """`spark_jobs/assemble_transactions.py` through spark-submit, on the `binlake` Variable's
    store, warehouse, sources and Spark connection. The job replaces exactly the interval's
    rows in one Delta commit per table, so a retry or rerun is safe. One at a time
    (`max_active_tis_per_dag=1`): Delta on S3 takes one writer (docs/warehouse.md, "Several
    writers"), and the job refuses to start beside another anyway. Its inlet is the archive, its
    outlets the three tables' Assets, each event with the run's range, status and counts.

    Where the driver runs here (client deploy mode) and the reports have a local directory (a
    local warehouse, or the Variable's `quality`), the job then runs the validate task's suites
    in its own Spark session (`--validate-as`: one JVM for both steps, the tables at the versions
    it wrote) and returns the report's name, which the validate task reads instead of validating
    again."""

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("application", str(JOB))
        kwargs.setdefault("name", "binlake-assemble")
        kwargs.setdefault("inlets", [ARCHIVE])
        kwargs.setdefault("outlets", list(TABLE_ASSETS.values()))
        super().__init__(**kwargs)

    def execute(self, context):
        cfg = settings.load()
        conn = resources.connection(self._conn_id, "the assemble job's Spark")
        args = ["--split-bytes", str(cfg.split_bytes)]
        quality_run = None
        deploy_mode = self._deploy_mode or conn.extra_dejson.get("deploy-mode") or "client"
        if deploy_mode == "client" and (spark_settings.local_warehouse(cfg.warehouse) or cfg.quality):
            from binlake.splits.times import quality_run as quality_run_name  # not at DAG parse time

            quality_run = quality_run_name(self.start, self.end)
            args += ["--validate-as", quality_run, "--xa-max-age", str(cfg.xa_max_age_seconds),
                     "--quality", str(settings.quality(cfg))]
            args += [a for suite in cfg.warn_only for a in ("--warn-only", suite)]
            args += [a for severity in cfg.allowed_severities for a in ("--allow-severity", severity)]
        self.prepare_range(cfg, conn, args)
        log.info("assembling %s .. %s of %s into %s (%s)%s", self.start, self.end,
                 ", ".join(s.name for s in cfg.sources), cfg.warehouse, conn.host,
                 f", then validating as {quality_run}" if quality_run else "")
        super().execute(context)
        self._record(cfg, context["outlet_events"])
        return {"quality_run": quality_run}

    def get_openlineage_facets_on_complete(self, task_instance):
        """Lineage for Airflow's OpenLineage provider (sent where a transport is configured): each
        source's archive in, the three tables out, named by where they are (s3://bucket + key, or
        file + path: OpenLineage's naming), which the binlake:// Assets cannot say at parse time."""
        from airflow.providers.openlineage.extractors import OperatorLineage

        cfg = settings.load()
        return OperatorLineage(inputs=[dataset(f"{cfg.store.rstrip('/')}/{s.name}") for s in cfg.sources],
                               outputs=[dataset(f"{cfg.warehouse.rstrip('/')}/{name}") for name in TABLE_ASSETS])

    def _record(self, cfg: settings.Settings, outlet_events) -> None:
        """The run's range, status and counts as an event of each table's Asset, from the summary the
        job wrote beside the tables."""
        import json

        from binlake.spark.writer import warehouse_store
        from binlake.splits.times import compact_ts, parse_time

        key = f"_summaries/assemble_{compact_ts(parse_time(self.start))}_{compact_ts(parse_time(self.end))}.json"
        summary = json.loads(warehouse_store(cfg.warehouse).get(key))
        counts = {"transactions": summary["transactions"], "row_changes": summary["row_changes"],
                  "anomalies": summary["anomalies"]}
        for name, asset in TABLE_ASSETS.items():
            outlet_events[asset].extra = {
                "warehouse": cfg.warehouse, "start": summary["start"], "end": summary["end"],
                "sources": summary["sources"], "run": summary["run"], "status": summary["status"],
                "rows": counts[name], "version": summary["versions"].get(name)}
        log.info("%s: %s", summary["status"], ", ".join(f"{k} {v}" for k, v in counts.items()))


def dataset(url: str):
    """An OpenLineage dataset of a location: namespace s3://bucket and the key, or file and the path."""
    from urllib.parse import urlparse

    from openlineage.client.event_v2 import Dataset

    u = urlparse(url if "://" in url else "file://" + os.path.abspath(url))
    if u.scheme in ("s3", "s3a"):
        return Dataset(namespace=f"s3://{u.netloc}", name=u.path.lstrip("/"))
    return Dataset(namespace="file", name=u.path)


@task(retries=1, doc_md="""
### Validate the interval
Runs the Great Expectations suites of `expectations/` (transactions, row_changes, anomalies,
continuity) on the interval's rows; results and data docs go under `{warehouse}/quality/`, and
the run's **Quality report** tab shows them (a failed run's too). A failed suite fails this task,
unless the Variable's `warn_only` names it. When the assemble job ran the suites in its own Spark
session (its driver here, a local warehouse), this task reads their report; otherwise it runs
them in a local SparkSession.
""")
def validate(start: str, end: str, assembled: dict | None = None, *, ti=None) -> dict:
    cfg = settings.load()
    quality_run = (assembled or {}).get("quality_run")
    if quality_run:
        from binlake.spark.validate import load_report

        report = load_report(cfg.warehouse, quality_run, str(settings.quality(cfg)))
        log.info("the suites ran in the assemble job's Spark session: report %s", quality_run)
    else:
        report = _run_suites(cfg, start, end)
    if ti is not None:  # the run's "Quality report" tab opens it, passed or failed
        reports.record(settings.quality(cfg), ti.dag_id, ti.run_id, report.run)
    text = report.text()
    for line in text.splitlines():
        log.info("%s", line)
    result = {"success": report.success, "start": report.start, "end": report.end, "run": report.run,
              "counts": report.counts, "docs": report.docs, "results": report.results,
              "suites": {s.suite: "passed" if s.success else ("warned" if s.warn_only else "failed")
                         for s in report.suites}}
    if not report.success:
        from airflow.sdk.exceptions import AirflowFailException

        # A failed suite is a fact about the data: retrying cannot change it.
        raise AirflowFailException(f"validation failed for {start} .. {end}; report: {report.docs}")
    return result


def _run_suites(cfg: settings.Settings, start: str, end: str):
    """The suites over the range, here, in a local SparkSession."""
    from binlake.spark.job import session
    from binlake.spark.validate import Config
    from binlake.spark.validate import validate as run_suites

    os.environ.update(resources.aws_environment(cfg))  # the manifest checks read the archive with boto3
    spark = session("local[*]", app="binlake-validate")
    config = Config.of(cfg.warn_only, cfg.allowed_severities, cfg.xa_max_age_seconds)
    return run_suites(spark, cfg.warehouse, start, end, store=cfg.store, sources=[s.name for s in cfg.sources],
                      config=config, quality=str(settings.quality(cfg)))


@task(outlets=[REPORT_ASSET], doc_md="""
### Publish the report
Records where the interval's quality report is: an event of the `binlake_quality_report` Asset
(visible under Assets, with the report's page and the data docs path in its extra), this task's
return value, and the log. The run's **Quality report** tab opens the same page.
""")
def publish_report(result: dict, *, outlet_events=None, ti=None) -> dict:
    from airflow.configuration import conf

    page = reports.url(conf.get("api", "base_url", fallback=""), ti.dag_id, ti.run_id) if ti is not None else None
    log.info("quality report for %s .. %s: %s, %s (the run's Quality report tab; data docs %s)", result["start"],
             result["end"], "PASSED" if result["success"] else "FAILED", page, result["docs"])
    if outlet_events is not None:
        outlet_events[REPORT_ASSET].extra = {**{k: result[k] for k in ("start", "end", "success", "docs", "results")},
                                             "report": page}
    return {**result, "report": page}
