"""The source tables as an Airflow task: `binlake tables` over the run's range through spark-submit
(the Spark provider's operator), after the range's validation passed, with an Asset per source."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from airflow.sdk import Asset, AssetAlias

from binlake_airflow import resources, settings
from binlake_airflow.spark_submit import RangeSubmitOperator, planned_range
from binlake_airflow.transactions_tasks import TABLE_ASSETS, dataset

log = logging.getLogger(__name__)

JOB = Path(__file__).resolve().parents[2] / "spark_jobs" / "apply_tables.py"
# Each source's tables: an event per run (through the alias: the sources are the Variable's, known
# at run time), named apart from the changelog's Assets (binlake_transactions, …) by `tables_`.
TABLES_ALIAS = AssetAlias("binlake_tables")


def tables_asset(source: str) -> Asset:
    return Asset(name=f"binlake_tables_{source}", uri=f"binlake://warehouse/tables/{source}", group="binlake")


class TablesOperator(RangeSubmitOperator):
    """`spark_jobs/apply_tables.py` (`binlake tables`) over the run's range, for every source of the
    `binlake` Variable: the range's changelog, in commit order, on top of what the ranges before
    left, into each source table's row versions (docs/tables.md). It runs once `validate` passed,
    and the job itself applies only a range the suites passed over, for the data as it is now
    (their verdicts in the quality directory, which its driver must see: client deploy mode).

    A rerun changes nothing; a range before the applied ones (a backfill) rebuilds the tables from
    its start on. A refused range — after a hole no run has applied, or one whose validation
    failed or is missing — fails this task at once (a retry cannot mend it), naming the range to
    run first. The row versions' suites run over what it applied (docs/quality.md, "Row
    versions"), in the range's validation reports; their failure fails this task at once too (the
    range is applied: a retry finds it so), the report's summary in the task's error. Each
    source's Asset `binlake_tables_<source>` gets an event with the range, the status (`applied`
    or `unchanged`) and the versions opened and closed. It queues with the
    other writers of the warehouse (the pool `binlake_warehouse`)."""

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("application", str(JOB))
        kwargs.setdefault("name", "binlake-tables")
        kwargs.setdefault("inlets", [TABLE_ASSETS["transactions"], TABLE_ASSETS["row_changes"]])
        kwargs.setdefault("outlets", [TABLES_ALIAS])
        super().__init__(**kwargs)

    def short_jvm(self, conf: dict[str, str], cfg: settings.Settings, span: tuple[str, str]) -> dict[str, str]:
        """An apply's rule, the CLI's too (binlake.spark.settings.for_apply): the range planned finely."""
        from binlake.spark.settings import APPLY_SPLIT_BYTES, for_apply

        planned = planned_range(cfg, span, APPLY_SPLIT_BYTES)
        return conf if planned is None else for_apply(conf, planned)

    def execute(self, context):
        from airflow.sdk.exceptions import AirflowException, AirflowFailException

        from binlake.spark.tables import summary_key
        from binlake.tables.state import warehouse_store

        cfg = settings.load()
        conn = resources.connection(self._conn_id, "the tables job's Spark")
        self.prepare_range(cfg, conn, ["--quality", str(settings.quality(cfg))])
        store, key = warehouse_store(cfg.warehouse), summary_key(self.start, self.end)
        store.delete(key)  # an earlier try's: what is read below is this job's
        log.info("applying %s .. %s of %s to the source tables in %s (%s)", self.start, self.end,
                 ", ".join(s.name for s in cfg.sources), cfg.warehouse, conn.host)
        try:
            super().execute(context)
        except AirflowException:
            found = json.loads(store.get(key)) if store.exists(key) else {"sources": []}
            refused = [s for s in found["sources"] if s["status"] == "refused"]
            if refused:  # the job said why: the data must change first, not this task
                raise AirflowFailException("; ".join(f"tables of source {s['source']}: {s['start']} .. {s['end']} "
                                                     f"refused: {s['reason']}" for s in refused)) from None
            failed = [r for r in found.get("reports", []) if not r["success"]]
            if failed:  # applied, and its row versions' suites failed: a retry would find it applied
                raise AirflowFailException("the row versions' suites failed over the applied range:\n"
                                           + "\n".join(r["text"] for r in failed)) from None
            raise  # the job failed otherwise (a lost executor, the store down): retried
        summary = json.loads(store.get(key))
        events = {}
        for s in summary["sources"]:
            events[s["source"]] = _event(cfg.warehouse, summary["run"], s)
            context["outlet_events"][TABLES_ALIAS].add(tables_asset(s["source"]), extra=events[s["source"]])
            log.info("%s: %s", s["source"], events[s["source"]])
        return events

    def get_openlineage_facets_on_complete(self, task_instance):
        """Lineage for Airflow's OpenLineage provider: the changelog in, each source's tables out,
        named by where they are (as the assemble task names its own)."""
        from airflow.providers.openlineage.extractors import OperatorLineage

        cfg = settings.load()
        root = cfg.warehouse.rstrip("/")
        return OperatorLineage(inputs=[dataset(f"{root}/{name}") for name in ("transactions", "row_changes")],
                               outputs=[dataset(f"{root}/tables/{s.name}") for s in cfg.sources])


def _event(warehouse: str, run: str, s: dict) -> dict:
    """A source's Asset event: the range, what the run did, and its counts (the job's summary)."""
    tables = s["tables"].values()
    return {"warehouse": warehouse, "start": s["start"], "end": s["end"], "run": run, "status": s["status"],
            "rebuilt_from": s["rebuilt_from"], "watermark": s["watermark"],
            "tables_changed": sum(1 for t in tables if t["opened"] or t["closed"]),
            "versions_opened": sum(t["opened"] for t in tables), "versions_closed": sum(t["closed"] for t in tables),
            "row_changes": s["row_changes"], "unmatched": s["unmatched"]}
