"""The Spark-facing part of binlake: the only package that imports pyspark.

`add_arguments` / `run` are shared by `binlake assemble` and
`spark_jobs/assemble_transactions.py`; they import pyspark only when run. With `--validate`
the suites of `binlake validate` run after the job in its Spark session: one JVM, warmed by
the job, for both steps.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable
from typing import Any, NoReturn

log = logging.getLogger(__name__)


def submitted(run: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> NoReturn:
    """The body of a spark-submit entry point (spark_jobs/): INFO logs on stderr, `run(args)`'s
    exit status, and a binlake error as one line `binlake: …` and exit 1; out at once
    (binlake.exits)."""
    from binlake.errors import BinlakeError
    from binlake.exits import leave

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr, force=True)
    try:
        status = run(args)
    except BinlakeError as e:
        print(f"binlake: {e}", file=sys.stderr)
        status = 1
    leave(status)


def _range_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", required=True, help="the archive: file:///path or s3://bucket/prefix")
    p.add_argument("--warehouse", required=True, help="where the tables go: a path, file:///path or s3a://bucket/prefix")
    p.add_argument("--start", required=True, help="range start, inclusive (ISO 8601; UTC when no zone)")
    p.add_argument("--end", required=True, help="range end, exclusive")


def add_arguments(p: argparse.ArgumentParser) -> None:
    _range_arguments(p)
    p.add_argument("--source", action="append", dest="sources", metavar="NAME",
                   help="source name in the store (repeatable; default: every source)")
    p.add_argument("--split-bytes", type=int, default=64 << 20, help="bytes per split (default 64 MiB)")
    p.add_argument("--segment-rows", type=int, default=100_000, help="row changes per segment (default 100000)")
    p.add_argument("--segment-bytes", type=int, default=64 << 20, help="rows-event bytes per segment (default 64 MiB)")
    p.add_argument("--fail-on-anomaly", action="store_true",
                   help="exit 1 (after writing) when the range has anomalies")
    p.add_argument("--validate", action="store_true",
                   help="then run binlake validate's suites over the range, at the versions the job wrote, in the "
                        "same Spark session; exit 1 when a suite fails")
    p.add_argument("--validate-as", metavar="RUN",
                   help="validate as --validate does, the report under quality/runs/RUN, and leave a failing "
                        "suite to the caller that reads it (exit 0): binlake_transactions' validate task")
    add_suite_arguments(p)


def run(args: argparse.Namespace, spark=None) -> int:
    """Run the job with parsed arguments; prints the summary as one JSON line. The arguments go one
    way: checked, planned into splits (binlake.splits.plan), a session made for the plan, the job
    run over it (binlake.spark.job.Job), then the suites."""
    from dataclasses import asdict

    from binlake import __version__
    from binlake.assemble.walk import Options
    from binlake.compiled import compiled_paths
    from binlake.spark.job import Job, session
    from binlake.spark.read_ahead import ReadAhead
    from binlake.spark.settings import in_driver
    from binlake.splits.plan import plan

    log.info("binlake %s: %s", __version__, compiled_paths())
    validating = args.validate or args.validate_as
    if validating:
        _can_validate(args)
    # Planned once, before the session: a local session's JVM depends on the range's size; a range
    # the driver reads itself is read from now on, while the JVM starts (binlake.spark.read_ahead).
    planned = plan(args.store, args.sources, args.start, args.end, args.split_bytes)
    opts = Options(segment_rows=args.segment_rows, segment_bytes=args.segment_bytes)
    ahead = ReadAhead(planned, opts) if in_driver(planned, planned.split_bytes) else None
    spark = spark or session(getattr(args, "master", None), conf=_session_conf(args, planned))
    summary = Job(spark, planned, warehouse=args.warehouse, opts=opts, ahead=ahead).run()
    print(json.dumps({"record": "assemble", **asdict(summary)}, separators=(",", ":")), flush=True)
    status = 0
    if args.fail_on_anomaly and summary.anomalies:
        print(f"binlake: {summary.anomaly_text()}", file=sys.stderr)
        status = 1
    if validating:
        report = _suites(spark, args, run_name=args.validate_as, versions=summary.versions)
        print(report.text())
        if args.validate and not report.success:
            status = 1
    return status



def add_tables_arguments(p: argparse.ArgumentParser) -> None:
    _range_arguments(p)
    p.add_argument("--source", action="append", dest="sources", metavar="NAME",
                   help="source to apply (repeatable; default: every source of the archive)")
    p.add_argument("--quality", help="where the validation reports are (default {warehouse}/quality)")
    p.add_argument("--unvalidated", action="store_true",
                   help="apply without a passing validation (development only: the commits say so)")


def run_tables(args: argparse.Namespace, spark=None) -> int:
    """`binlake tables`: one JSON line per source; exit 1 when a source's range is refused or the
    row versions' suites fail over what it applied."""
    from binlake.spark.job import session
    from binlake.spark.tables import TablesJob

    _import_behind("great_expectations")  # for the row versions' suites after the apply
    spark = spark or session(getattr(args, "master", None), app="binlake-tables",
                             conf=_apply_conf(args))
    job = TablesJob(spark, args.store, args.warehouse, (args.start, args.end), quality=args.quality,
                    unvalidated=args.unvalidated)
    status = 0
    for summary in job.run(args.sources):
        print(summary.line(), flush=True)
        if summary.status == "refused":
            print(f"binlake: tables of {summary.source}: {summary.reason}", file=sys.stderr)
            status = 1
    for report in job.reports:  # the row versions' suites, in the range's validation reports
        if not report.success:
            print(f"binlake: the row versions' suites failed:\n{report.text()}", file=sys.stderr)
            status = 1
    return status

def _can_validate(args: argparse.Namespace) -> None:
    """What validation after the job cannot write, said before the job rather than after it; and
    GX imported meanwhile."""
    from binlake.spark.settings import quality_dir
    from binlake.splits.times import check_quality_run

    quality_dir(args.warehouse, args.quality)
    if args.validate_as:
        check_quality_run(args.validate_as)
    _import_behind("great_expectations")


def _session_conf(args: argparse.Namespace, planned) -> dict[str, str]:
    """The session's settings: --conf's, over a short run's JVM where the master is local and the
    driver will read the planned range itself."""
    from binlake.spark.settings import for_range, is_local

    conf = _conf(getattr(args, "conf", None))
    return for_range(conf, planned, args.split_bytes) if is_local(getattr(args, "master", None)) else conf


def _validate_conf(args: argparse.Namespace) -> dict[str, str]:
    """The session's settings for the suites alone: --conf's, over a short run's JVM where the
    master is local and the range is one the driver would assemble itself (its tables are then
    small and the suites' Spark jobs short: C2's warm-up would be most of what they cost)."""
    from binlake.spark.settings import for_range
    from binlake.spark.validate import store_of
    from binlake.splits.plan import DEFAULT_SPLIT_BYTES

    return _planned_conf(args, lambda: store_of(args.warehouse, args.store), DEFAULT_SPLIT_BYTES,
                         lambda conf, planned: for_range(conf, planned, DEFAULT_SPLIT_BYTES))


def _apply_conf(args: argparse.Namespace) -> dict[str, str]:
    """The session's settings for `binlake tables`: --conf's, over a short run's JVM where the
    master is local and the range's transactions are few (binlake.spark.settings.for_apply)."""
    from binlake.spark.settings import APPLY_SPLIT_BYTES, for_apply

    return _planned_conf(args, lambda: args.store, APPLY_SPLIT_BYTES, for_apply)


def _planned_conf(args: argparse.Namespace, store: Callable[[], str], split_bytes: int,
                  rule: Callable[[dict[str, str], Any], dict[str, str]]) -> dict[str, str]:
    """--conf's settings, and `rule`'s for the range planned at `split_bytes` where the master is
    local; --conf's alone where the range cannot be planned (the job then says why)."""
    from binlake.errors import BinlakeError
    from binlake.spark.settings import is_local
    from binlake.splits.plan import plan

    conf = _conf(getattr(args, "conf", None))
    if not is_local(getattr(args, "master", None)):
        return conf
    try:
        planned = plan(store(), args.sources, args.start, args.end, split_bytes)
    except BinlakeError:
        return conf
    return rule(conf, planned)


def _import_behind(module: str) -> None:
    """Import a module on a thread of its own while the session starts and the job runs: GX's
    import takes seconds of one core the JVM leaves idle. The suites' own import then waits for
    it (Python's import lock) instead of starting again."""
    import importlib
    import threading

    threading.Thread(target=importlib.import_module, args=(module,), name=f"import {module}", daemon=True).start()


def _conf(pairs: list[str] | None) -> dict[str, str]:
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"binlake: --conf {pair!r}: expected KEY=VALUE")
        out[key] = value
    return out


def add_validate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--warehouse", required=True, help="the warehouse: a path, file:///path or s3a://bucket/prefix")
    p.add_argument("--start", required=True, help="range start, inclusive (ISO 8601; UTC when no zone)")
    p.add_argument("--end", required=True, help="range end, exclusive")
    p.add_argument("--store", help="the archive, for the manifest checks (default: the one the warehouse's "
                                   "assemble summaries name)")
    p.add_argument("--source", action="append", dest="sources", metavar="NAME",
                   help="validate these sources only (repeatable; default every source)")
    add_suite_arguments(p)


def add_suite_arguments(p: argparse.ArgumentParser) -> None:
    """How the suites judge the range, and where their reports go: `binlake validate`'s, and
    `assemble --validate`'s."""
    p.add_argument("--quality", metavar="DIR",
                   help="where the GX project, data docs and reports go (default {warehouse}/quality; a local "
                        "directory is needed for an s3a:// warehouse)")
    p.add_argument("--warn-only", action="append", default=[], metavar="SUITE",
                   choices=["transactions", "row_changes", "anomalies", "continuity"],
                   help="a failure of this suite is reported but does not fail the run (repeatable)")
    p.add_argument("--allow-severity", action="append", default=[], metavar="SEVERITY",
                   help="anomalies of this severity do not fail the anomalies suite (repeatable; e.g. warning)")
    p.add_argument("--xa-max-age", type=float, default=3600.0, metavar="SECONDS",
                   help="an XA transaction prepared longer than this before the range's end must have ended "
                        "(default 3600)")


def run_validate(args: argparse.Namespace, spark=None) -> int:
    """Run the suites with parsed arguments; prints the report; 1 when a (non warn-only) suite failed."""
    from binlake.spark.job import session
    _import_behind("great_expectations")
    spark = spark or session(getattr(args, "master", None), app="binlake-validate", conf=_validate_conf(args))
    report = _suites(spark, args)
    print(report.text())
    return 0 if report.success else 1


def _suites(spark, args: argparse.Namespace, run_name: str | None = None, versions: dict[str, int] | None = None):
    """The suites over the arguments' range and sources (the tables at `versions`, default those the
    range's run wrote), judged as they say; their report under the quality directory's
    runs/<run_name> (default: the range and the time)."""
    from binlake.spark.validate import Config, validate

    config = Config.of(args.warn_only, args.allow_severity, args.xa_max_age)
    return validate(spark, args.warehouse, args.start, args.end, store=args.store, sources=args.sources,
                    config=config, run_name=run_name, quality=args.quality, versions=versions)


def add_warehouse_arguments(p: argparse.ArgumentParser) -> None:
    """The warehouse and the Spark session of `binlake upkeep`, `upgrade` and `history`."""
    p.add_argument("--warehouse", required=True, help="the warehouse: a path, file:///path or s3a://bucket/prefix")
    p.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE", help="a Spark setting (repeatable)")


def add_upkeep_arguments(p: argparse.ArgumentParser) -> None:
    """What `binlake upkeep` and spark_jobs/warehouse_upkeep.py keep, besides the warehouse."""
    from binlake.spark.settings import RETAIN_DAYS

    p.add_argument("--retain-days", type=int, default=RETAIN_DAYS,
                   help=f"days of time travel, and of the GX project's validation results, to keep "
                        f"(default {RETAIN_DAYS})")
    p.add_argument("--quality", metavar="DIR",
                   help="the quality directory whose GX validation results (and data docs pages) older than "
                        "that go (default {warehouse}/quality; an s3a:// warehouse without it: left alone)")


def run_upkeep(args: argparse.Namespace, spark=None) -> int:
    """OPTIMIZE and VACUUM every table, the changelog's and the row versions', holding the
    warehouse's writer lease; then the quality directory's GX validation results older than the
    same days removed; one JSON line."""
    from binlake.spark.job import session
    from binlake.spark.versions import Versions
    from binlake.spark.warehouse import Warehouse
    from binlake.spark.writer import WriterLease

    spark = spark or session(args.master, app="binlake-upkeep", conf=_conf(args.conf))
    warehouse = Warehouse(spark, args.warehouse)
    with WriterLease(warehouse.url, f"upkeep-{_run_id()}", f"upkeep, {args.retain_days} days retained"):
        done = warehouse.upkeep(args.retain_days)
        versions = Versions(spark, warehouse.url).upkeep(args.retain_days)
    quality = _quality_upkeep(args.warehouse, args.quality, args.retain_days)
    print(json.dumps({"record": "upkeep", "warehouse": warehouse.url, "retain_days": args.retain_days,
                      "tables": done, "row_versions": versions, "quality": quality}, separators=(",", ":")),
          flush=True)
    return 0


def _quality_upkeep(warehouse: str, quality: str | None, retain_days: int) -> dict | None:
    """The quality directory's upkeep (binlake.spark.quality_upkeep): `quality`, else the local
    warehouse's. None for an s3a:// warehouse that names none: its tables' upkeep needs no quality
    directory, and validation's has to be named to be found."""
    from dataclasses import asdict

    from binlake.spark.quality_upkeep import upkeep
    from binlake.spark.settings import local_warehouse, quality_dir

    if not quality and not local_warehouse(warehouse):
        log.info("no --quality for %s: the GX project's validation results are left as they are", warehouse)
        return None
    return asdict(upkeep(quality_dir(warehouse, quality), retain_days))


def run_upgrade(args: argparse.Namespace, spark=None) -> int:
    """Convert a plain Parquet warehouse of an earlier release to Delta in place; one JSON line."""
    from binlake.spark.job import session
    from binlake.spark.warehouse import Warehouse
    from binlake.spark.writer import WriterLease

    spark = spark or session(args.master, app="binlake-upgrade", conf=_conf(args.conf))
    warehouse = Warehouse(spark, args.warehouse)
    with WriterLease(warehouse.url, f"upgrade-{_run_id()}", "upgrade to Delta"):
        converted = warehouse.upgrade()
    print(json.dumps({"record": "upgrade", "warehouse": warehouse.url, "converted": converted},
                     separators=(",", ":")), flush=True)
    return 0


def run_history(args: argparse.Namespace, spark=None) -> int:
    """A table's commits, newest first, one JSON line each: what each run did (its note)."""
    from dataclasses import asdict

    from binlake.spark.job import session
    from binlake.spark.warehouse import Warehouse

    spark = spark or session(args.master, app="binlake-history", conf=_conf(args.conf))
    for c in Warehouse(spark, args.warehouse).history(args.table):
        if args.failed and (c.note is None or c.note.status != "failed"):
            continue
        print(json.dumps({"version": c.version, "timestamp": c.timestamp.isoformat(), "operation": c.operation,
                          "run": asdict(c.note) if c.note else None, "metrics": c.metrics},
                         separators=(",", ":")), flush=True)
    return 0


def _run_id() -> str:
    import uuid

    return uuid.uuid4().hex[:12]
