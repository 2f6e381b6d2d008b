"""binlake's one GX expectation of its own, for the suites' multi-row checks.

`expect_query_to_return_no_rows` is GX's `UnexpectedRowsExpectation` (Spark SQL over the
batch; it passes when the query returns no row), except that when it is judged BOOLEAN_ONLY it
only counts the query's rows. GX's own runs every query twice, a count and then up to 200 of
its rows, and drops those rows in that format: for a small range, that second Spark query is
much of the whole validation (bench/RESULTS.md). The suites are judged BOOLEAN_ONLY first
and a failing suite again with its rows (binlake.spark.validate), so no detail is lost.
Importing this module registers the type with GX.
"""

from __future__ import annotations

from great_expectations.expectations import UnexpectedRowsExpectation

ROWS = "unexpected_rows_query.table"
COUNT = "unexpected_rows_query.row_count"


class ExpectQueryToReturnNoRows(UnexpectedRowsExpectation):
    def get_validation_dependencies(self, execution_engine=None, runtime_configuration=None):
        deps = super().get_validation_dependencies(execution_engine, runtime_configuration)
        if deps.result_format.get("result_format") == "BOOLEAN_ONLY":
            deps.remove_metric_configuration(ROWS)
        return deps

    def _validate(self, metrics: dict, runtime_configuration: dict | None = None, execution_engine=None):
        if ROWS not in metrics:
            return {"success": metrics[COUNT] == 0}
        return super()._validate(metrics, runtime_configuration, execution_engine)
