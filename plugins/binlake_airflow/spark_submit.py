"""The Spark provider's SparkSubmitOperator as binlake's jobs need it: the `binlake` Variable's
Spark connection, Delta Lake's jars and SQL, S3A pointed at the AWS connection's endpoint, the
AWS connection's keys as environment (never as settings, which Airflow logs with the command),
a local master's driver and executors on this interpreter, and the pool of the warehouse's writers;
and the jobs over a run's range (assemble, apply_tables), their range and sources given one way."""

from __future__ import annotations

import os
import sys

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from binlake.local.airflow import WRITERS_POOL
from binlake.spark import settings as spark_settings
from binlake_airflow import resources, settings

# The interval a run covers: its data interval, unless the run's params name another range
# (a manual run over any range: `airflow dags trigger -c '{"start": …, "end": …}'`).
START = "{{ params.start or data_interval_start.isoformat() }}"
END = "{{ params.end or data_interval_end.isoformat() }}"


class BinlakeSubmitOperator(SparkSubmitOperator):
    """A binlake job through spark-submit: every one writes the warehouse (assemble, apply_tables,
    upkeep), and Delta on S3 takes one writer at a time (docs/warehouse.md, "Several writers"). So
    they all run in the one-slot pool `binlake_warehouse`, where they queue, and each task one at
    a time (`max_active_tis_per_dag=1`); the jobs' own lease refuses any other writer."""

    # The base class keeps conn_id as _conn_id: rendered, the Variable's Spark connection is the one used.
    template_fields = (*SparkSubmitOperator.template_fields, "_conn_id")

    def __init__(self, *, conn_id: str = settings.template("spark_conn_id"), **kwargs) -> None:
        kwargs.setdefault("max_active_tis_per_dag", 1)
        kwargs.setdefault("pool", WRITERS_POOL)
        super().__init__(conn_id=conn_id, **kwargs)

    def prepare(self, cfg: settings.Settings, conn, span: tuple[str, str] | None = None) -> None:
        """The job's environment and settings; `span`: the range the job runs over, planned here
        for a local JVM's settings. This task's own reads (the job's summary) get the AWS
        connection's environment too."""
        aws = resources.aws_environment(cfg)
        os.environ.update(aws)  # boto3's in this task's process: the store and the warehouse as the job has them
        # The driver runs here, with this interpreter (it has binlake); executors find theirs.
        env = {**aws, "PYSPARK_DRIVER_PYTHON": sys.executable}
        conf = {**spark_settings.LOGS, **spark_settings.delta(aws), **(self.conf or {})}
        if spark_settings.is_local(conn.host):
            env["PYSPARK_PYTHON"] = sys.executable
            conf = {**conf, **cfg.spark_conf}
            if span is not None:
                conf = self.short_jvm(conf, cfg, span)
            conf = spark_settings.local(conf)  # last: its java options join the range's
        else:
            conf = {**conf, **{f"spark.executorEnv.{k}": v for k, v in aws.items()}, **cfg.spark_conf}
        self.conf = conf
        self.env_vars = {**(self.env_vars or {}), **env}

    def short_jvm(self, conf: dict[str, str], cfg: settings.Settings, span: tuple[str, str]) -> dict[str, str]:
        """`conf` with a short run's JVM where the job's range is small (an assemble's rule:
        binlake.spark.settings.for_range), planned here as the job will plan it."""
        planned = planned_range(cfg, span, cfg.split_bytes)
        return conf if planned is None else spark_settings.for_range(conf, planned, cfg.split_bytes)


class RangeSubmitOperator(BinlakeSubmitOperator):
    """A job over the run's range (`start`, `end`: templates rendered at run time) for every source
    of the `binlake` Variable, with the arguments DESIGN.md's command line gives every such job:
    `--store --warehouse --start --end`, then `--source` for each source."""

    template_fields = (*BinlakeSubmitOperator.template_fields, "start", "end")

    def __init__(self, *, start: str = START, end: str = END, **kwargs) -> None:
        super().__init__(**kwargs)
        self.start = start
        self.end = end

    def range_args(self, cfg: settings.Settings) -> list[str]:
        args = ["--store", cfg.store, "--warehouse", cfg.warehouse, "--start", self.start, "--end", self.end]
        for spec in cfg.sources:
            args += ["--source", spec.name]
        return args

    def prepare_range(self, cfg: settings.Settings, conn, extra: list[str]) -> None:
        """The job's arguments (the range's, then `extra`: the job's own), environment and settings."""
        self.application_args = [*self.range_args(cfg), *extra]
        self.prepare(cfg, conn, (self.start, self.end))


def planned_range(cfg: settings.Settings, span: tuple[str, str], split_bytes: int):
    """The range planned at `split_bytes` (the job plans again in its own process); None where the
    archive cannot be read: the job says why, not this."""
    from binlake.errors import BinlakeError
    from binlake.splits.plan import plan

    try:
        return plan(cfg.store, [s.name for s in cfg.sources], span[0], span[1], split_bytes)
    except (BinlakeError, OSError):
        return None
