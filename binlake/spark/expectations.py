"""binlake's one GX expectation of its own, for the suites' multi-row checks, and its two metrics.

`expect_query_to_return_no_rows` is GX's `UnexpectedRowsExpectation` (Spark SQL over the
batch; it passes when the query returns no row), except:

- judged BOOLEAN_ONLY it only counts the query's rows. GX's own runs every query twice, a count
  and then up to 200 of its rows, and drops those rows in that format: for a small range, that
  second Spark query is much of the whole validation (bench/RESULTS.md). The suites are judged
  BOOLEAN_ONLY first and a failing suite again with its rows (binlake.spark.validate), so no
  detail is lost.
- its query's `{batch}` is a temporary view of that batch alone. GX's metrics name every batch's
  view `tmp_view` in the session, and the suites run at once: another suite's batch could
  replace the view between its creation and the query that reads it.

Importing this module registers the type and its metrics with GX.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from great_expectations.core.metric_domain_types import MetricDomainTypes
from great_expectations.core.result_format import ResultFormat
from great_expectations.execution_engine import SparkDFExecutionEngine
from great_expectations.expectations import UnexpectedRowsExpectation
from great_expectations.expectations.metrics.metric_provider import metric_value
from great_expectations.expectations.metrics.query_metric_provider import QueryMetricProvider
from pyspark.sql import DataFrame

ROWS = "binlake_unexpected_rows.table"
COUNT = "binlake_unexpected_rows.row_count"
SHOWN_ROWS = 200  # as GX's own metric: a failure's rows in the report, not all of them


@contextmanager
def _rows(engine: SparkDFExecutionEngine, domain: dict, query: str) -> Iterator[DataFrame]:
    """The query's rows, `{batch}` a view of the batch's own while they are read."""
    batch, _, _ = engine.get_compute_domain(domain, domain_type=MetricDomainTypes.TABLE)
    view = f"binlake_batch_{uuid.uuid4().hex}"
    batch.createTempView(view)
    try:
        yield batch.sparkSession.sql(QueryMetricProvider._format_query(query, batch=view))  # noqa: SLF001 - GX's substitution
    finally:
        batch.sparkSession.catalog.dropTempView(view)


class UnexpectedRowCount(QueryMetricProvider):
    metric_name = COUNT
    value_keys = ("unexpected_rows_query",)
    query_param_name = "unexpected_rows_query"

    @metric_value(engine=SparkDFExecutionEngine)
    def _spark(cls, execution_engine: SparkDFExecutionEngine, metric_domain_kwargs: dict,  # noqa: PLR0917 - GX calls it so
               metric_value_kwargs: dict, metrics: dict[str, Any], runtime_configuration: dict) -> int:
        with _rows(execution_engine, metric_domain_kwargs,
                   cls._get_query_from_metric_value_kwargs(metric_value_kwargs)) as rows:
            return rows.count()


class UnexpectedRows(QueryMetricProvider):
    metric_name = ROWS
    value_keys = ("unexpected_rows_query",)
    query_param_name = "unexpected_rows_query"

    @metric_value(engine=SparkDFExecutionEngine)
    def _spark(cls, execution_engine: SparkDFExecutionEngine, metric_domain_kwargs: dict,  # noqa: PLR0917 - GX calls it so
               metric_value_kwargs: dict, metrics: dict[str, Any], runtime_configuration: dict) -> list[dict]:
        with _rows(execution_engine, metric_domain_kwargs,
                   cls._get_query_from_metric_value_kwargs(metric_value_kwargs)) as rows:
            return [row.asDict() for row in rows.limit(SHOWN_ROWS).collect()]


class ExpectQueryToReturnNoRows(UnexpectedRowsExpectation):
    metric_dependencies = (ROWS, COUNT)

    def get_validation_dependencies(self, execution_engine=None, runtime_configuration=None):
        deps = super().get_validation_dependencies(execution_engine, runtime_configuration)
        if deps.result_format.get("result_format") == "BOOLEAN_ONLY":
            deps.remove_metric_configuration(ROWS)
        return deps

    def _validate(self, metrics: dict, runtime_configuration: dict | None = None, execution_engine=None):
        count = metrics[COUNT]
        given = self._get_result_format(runtime_configuration=runtime_configuration)
        fmt = given.get("result_format", ResultFormat.SUMMARY) if isinstance(given, dict) else given
        if fmt == ResultFormat.BOOLEAN_ONLY:
            return {"success": count == 0}
        result: dict[str, Any] = {"observed_value": count}
        if fmt == ResultFormat.COMPLETE:  # as GX's: the rows only in the complete format
            result["details"] = {"unexpected_rows": metrics[ROWS]}
        return {"success": count == 0, "result": result}
