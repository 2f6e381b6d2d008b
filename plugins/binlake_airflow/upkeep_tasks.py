"""The warehouse's upkeep as an Airflow task: `binlake upkeep` through spark-submit."""

from __future__ import annotations

import logging
from pathlib import Path

from binlake_airflow import resources, settings
from binlake_airflow.spark_submit import BinlakeSubmitOperator
from binlake_airflow.transactions_tasks import TABLE_ASSETS

log = logging.getLogger(__name__)
JOB = Path(__file__).resolve().parents[2] / "spark_jobs" / "warehouse_upkeep.py"


class UpkeepOperator(BinlakeSubmitOperator):
    """`spark_jobs/warehouse_upkeep.py`: each table's small files compacted (OPTIMIZE) and the files
    no version of the last `upkeep_retain_days` days needs removed (VACUUM); then the GX project's
    validation results older than that, with their data docs pages, from the Variable's `quality`
    directory (else the local warehouse's `quality`; an s3a:// warehouse without one: none), which
    the job's driver must see (client deploy mode); binlake's own reports stay. It queues with the
    warehouse's other writers in their pool, and takes the writer lease: beside a writer outside
    Airflow it fails, and its retry comes after."""

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("application", str(JOB))
        kwargs.setdefault("name", "binlake-upkeep")
        kwargs.setdefault("inlets", list(TABLE_ASSETS.values()))
        super().__init__(**kwargs)

    def execute(self, context):
        cfg = settings.load()
        self.application_args = self.upkeep_args(cfg)
        self.prepare(cfg, resources.connection(self._conn_id, "the upkeep job's Spark"))
        log.info("upkeep of %s: OPTIMIZE, then VACUUM keeping %d days, and the validation results of as many",
                 cfg.warehouse, cfg.upkeep_retain_days)
        return super().execute(context)

    @staticmethod
    def upkeep_args(cfg: settings.Settings) -> list[str]:
        """The job's arguments: the Variable's warehouse, days and, where it names one, quality
        directory (a local warehouse's default is the job's own)."""
        args = ["--warehouse", cfg.warehouse, "--retain-days", str(cfg.upkeep_retain_days)]
        return [*args, "--quality", str(settings.quality(cfg))] if cfg.quality else args
