"""The Spark provider's SparkSubmitOperator as binlake's jobs need it: the `binlake` Variable's
Spark connection, Delta Lake's jars and SQL, S3A pointed at the AWS connection's endpoint, the
AWS connection's keys as environment (never as settings, which Airflow logs with the command),
and a local master's driver and executors on this interpreter."""

from __future__ import annotations

import sys
from collections.abc import Callable

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from binlake.spark import settings as spark_settings
from binlake_airflow import resources, settings


class BinlakeSubmitOperator(SparkSubmitOperator):
    """A binlake job through spark-submit; one writer of the warehouse at a time
    (`max_active_tis_per_dag=1`: Delta on S3 takes one, docs/warehouse.md "Several writers")."""

    # The base class keeps conn_id as _conn_id: rendered, the Variable's Spark connection is the one used.
    template_fields = (*SparkSubmitOperator.template_fields, "_conn_id")

    def __init__(self, *, conn_id: str = settings.template("spark_conn_id"), **kwargs) -> None:
        kwargs.setdefault("max_active_tis_per_dag", 1)
        super().__init__(conn_id=conn_id, **kwargs)

    def prepare(self, cfg: settings.Settings, conn, plan: Callable[[dict[str, str]], object] | None = None) -> None:
        """The job's environment and settings; `plan(aws)`: the range as the job will plan it, for a
        local JVM's settings (None where it cannot be planned)."""
        aws = resources.aws_environment(cfg)
        # The driver runs here, with this interpreter (it has binlake); executors find theirs.
        env = {**aws, "PYSPARK_DRIVER_PYTHON": sys.executable}
        conf = {**spark_settings.LOGS, **spark_settings.delta(aws), **(self.conf or {})}
        if spark_settings.is_local(conn.host):
            env["PYSPARK_PYTHON"] = sys.executable
            conf = spark_settings.local({**conf, **cfg.spark_conf})
            planned = plan(aws) if plan is not None else None
            if planned is not None:
                conf = spark_settings.for_range(conf, planned, cfg.split_bytes)
        else:
            conf = {**conf, **{f"spark.executorEnv.{k}": v for k, v in aws.items()}, **cfg.spark_conf}
        self.conf = conf
        self.env_vars = {**(self.env_vars or {}), **env}
