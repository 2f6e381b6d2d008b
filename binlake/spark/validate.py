"""Prove a commit-time range of the warehouse: the Great Expectations suites of expectations/.

Each suite runs through a GX Checkpoint over a Spark DataFrame batch of its table for the
range (transactions, row_changes, anomalies; `continuity` over transactions). Checks that
need more than one row are `expect_query_to_return_no_rows` (binlake.spark.expectations: GX's
`UnexpectedRowsExpectation`, counted alone when judged brief): Spark SQL over the batch and a
few views made here from the warehouse and the archive's manifests:

  bl_transactions      the transactions of the range
  bl_archive_files     per archived file (archive name): how many transactions its manifest
                       puts in the range (first archived copies: not a failover's repeats),
                       and its GTID epoch (a reset starts the next)
  bl_chain_breaks      where the server's GTID chain breaks before a file of the range, within
                       its generation: files and GTIDs missing (binlake/archive/chain.py)
  bl_xa_completions    XA COMMIT / ROLLBACK of any date, by source and xid
  bl_params            xa_cutoff: the range's end minus the configured age

The tables are read through Delta (binlake/spark/warehouse.py): at the versions the assemble job
wrote, when it validates in its own session (`--validate`, `--validate-as`), else their newest. The GX project lives in
the quality directory ({warehouse}/quality for a local warehouse, else the one given) under gx/ (a
file data context): its data docs site collects every run. Each run also writes
runs/<run>/results.json and summary.txt there.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import re
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from binlake.archive import summaries
from binlake.archive.chain import breaks, epochs, generation_of, name_of, repeats
from binlake.archive.manifest import index_of
from binlake.archive.run import refusals
from binlake.archive.stores import open_store
from binlake.errors import BinlakeError
from binlake.local import offline_docs, quality_files
from binlake.spark import schema, verdicts
from binlake.spark.pools import each
from binlake.spark.settings import SESSION, local_warehouse, quality_dir, quiet_gx_logs, session_settings
from binlake.spark.warehouse import TABLES, RunRange, Warehouse, warehouse_uri
from binlake.splits.plan import covered, meets
from binlake.splits.times import check_quality_run, parse_time, quality_run

quiet_gx_logs()  # before GX is first imported (in the functions below): its import logs ~200 INFO lines

log = logging.getLogger(__name__)
SUITES = ("transactions", "row_changes", "anomalies", "continuity")
BATCH_TABLE = {"transactions": "transactions", "row_changes": "row_changes", "anomalies": "anomalies",
               "continuity": "transactions"}
# Columns that say where an unexpected row is, for built-in expectations' results.
WHERE = {"transactions": ["source", "binlog_file", "start_pos"], "row_changes": ["binlog_file", "event_pos", "seq"],
         "anomalies": ["source", "binlog_file", "start_pos"]}
EXPECTATIONS_DIR = Path(os.environ.get("BINLAKE_EXPECTATIONS", Path(__file__).resolve().parents[2] / "expectations"))
SHOWN = 5  # unexpected rows per failed expectation in the summary
# Each suite is judged with GX's fewest metrics; a suite that fails is evaluated again with its
# unexpected rows (the custom expectations return theirs, at most 200, only with COMPLETE).
BRIEF = {"result_format": "BOOLEAN_ONLY"}
DETAILED = {"result_format": "COMPLETE", "partial_unexpected_count": SHOWN}
READ = "binlake: validate: the range's rows"  # the Spark jobs' description while the batches are read
ROWS_PER_TASK = 200_000  # rows of a cached batch per task of the suites' Spark jobs
SMALL_ROWS = 2_000_000  # rows of the batches up to which small_range_settings plans the suites' queries once


@dataclass
class Config:
    warn_only: set[str] = field(default_factory=set)  # suites whose failure is reported, not fatal
    allowed_severities: list[str] = field(default_factory=list)  # anomalies allowed in the range
    xa_max_age: dt.timedelta = dt.timedelta(hours=1)

    @classmethod
    def of(cls, warn_only, allowed_severities, xa_max_age_seconds: float) -> Config:
        """From the settings as the command line and the Airflow Variable spell them."""
        return cls(set(warn_only), list(allowed_severities), dt.timedelta(seconds=xa_max_age_seconds))


@dataclass
class SuiteResult:
    suite: str
    success: bool
    warn_only: bool
    evaluated: int
    passed: int
    failed: list[dict]  # {expectation, description, unexpected: [...]}


@dataclass
class Report:
    warehouse: str
    start: str
    end: str
    run: str
    success: bool
    suites: list[SuiteResult]
    counts: dict[str, int]
    docs: str
    results: str
    versions: dict[str, int] = field(default_factory=dict)  # the Delta version of each table validated

    def text(self) -> str:
        lines = [f"binlake validate {self.start}..{self.end}: {'PASSED' if self.success else 'FAILED'} "
                 f"({', '.join(f'{k} {v}' for k, v in self.counts.items())})"]
        for s in self.suites:
            state = "passed" if s.success else ("failed (warn only)" if s.warn_only else "FAILED")
            lines.append(f"  {s.suite:12} {state:20} {s.passed}/{s.evaluated} expectations")
            for f in s.failed:
                lines.append(f"    ✗ {f['expectation']}: {f['description']}")
                for row in f["unexpected"][:SHOWN]:
                    lines.append(f"        {json.dumps(row, default=str, ensure_ascii=False)}")
        lines += [f"  data docs: {self.docs}", f"  results:   {self.results}"]
        return "\n".join(lines)

    def brief(self) -> dict:
        """The report in a few fields, for a job's summary record: its run, verdict, file and text."""
        return {"run": self.run, "success": self.success, "results": self.results, "text": self.text()}


def load_suite(name: str):
    """A suite from expectations/<name>.json, as GX's ExpectationSuite. An expectation whose
    `meta.sql` names a file of expectations/sql/ gets that file's query (its `--` comments are
    for reviewers and dropped) as its `unexpected_rows_query`."""
    import great_expectations as gx

    import binlake.spark.expectations  # noqa: F401 - registers expect_query_to_return_no_rows

    path = EXPECTATIONS_DIR / f"{name}.json"
    try:
        suite = json.loads(path.read_text())
        for e in suite["expectations"]:
            if "sql" in e.get("meta", {}):
                e["kwargs"]["unexpected_rows_query"] = _query(EXPECTATIONS_DIR / "sql" / e["meta"]["sql"])
    except OSError as e:
        raise BinlakeError(f"{e.filename}: cannot read the suite {name}: {e.strerror}") from None
    return gx.ExpectationSuite(**suite)


def _query(path: Path) -> str:
    lines = (re.sub(r"--.*", "", line).rstrip() for line in path.read_text().splitlines())
    return "\n".join(line for line in lines if line)


def store_of(warehouse: str, store: str | None = None) -> str:
    """`store`, else the archive the (local) warehouse was assembled from, as its job summaries
    record it."""
    if store:
        return store
    root = Path(warehouse_uri(warehouse).removeprefix("file://"))
    found = sorted((root / "_summaries").glob("assemble_*.json"), key=lambda p: p.stat().st_mtime) \
        if local_warehouse(warehouse) else []
    if not found:
        raise BinlakeError(f"{warehouse}: no assemble summary here; give the archive with --store")
    return json.loads(found[-1].read_text())["store"]


class Validation:
    def __init__(self, spark: SparkSession, warehouse: str, start: str, end: str, *, store: str | None = None,
                 source_names: list[str] | None = None, config: Config | None = None,
                 run_name: str | None = None, quality: str | None = None,
                 versions: dict[str, int] | None = None) -> None:
        self.spark = spark
        for key, value in SESSION.items():
            spark.conf.set(key, value)
        self.warehouse = warehouse_uri(warehouse)
        self.tables = Warehouse(spark, self.warehouse)
        self.quality = quality_dir(self.warehouse, quality)
        self.start, self.end = parse_time(start), parse_time(end)
        if self.start >= self.end:
            raise BinlakeError(f"empty range: start {self.start} is not before end {self.end}")
        self.versions = versions or {name: self.tables.version(name) for name in TABLES}
        self.config = config or Config()
        self.store = store_of(self.warehouse, store)
        self.source_names = source_names
        self.run_name = check_quality_run(run_name) if run_name else quality_run(self.start, self.end)

    # -- the data ----------------------------------------------------------------------

    def table(self, name: str) -> DataFrame:
        return self.tables.read(name, version=self.versions[name]).select(*schema.STORED[name].names)

    def in_range(self, df: DataFrame) -> DataFrame:
        # The range's rows as a run replaces them (RunRange), and the rows without commit_ts: they
        # belong to no day and no range, so every range shows them and fails.
        df = df.where(f"({RunRange(self.start, self.end).condition()}) OR commit_ts IS NULL")
        if self.source_names:
            df = df.where(F.col("source").isin(self.source_names))
        return df.drop("commit_date")

    def views(self, txns: DataFrame) -> None:
        """The views the multi-row expectations query."""
        sp = self.spark
        txns.createOrReplaceTempView("bl_transactions")
        files, chain = self._archive_facts()
        sp.createDataFrame(files, "source string, binlog_file string, transactions long, epoch int") \
            .createOrReplaceTempView("bl_archive_files")
        sp.createDataFrame(chain, "source string, generation int, binlog_file string, previous_file string, "
                                  "missing_files string, missing_gtids string, detail string") \
            .createOrReplaceTempView("bl_chain_breaks")
        completions = (self.table("transactions").where(F.col("kind").isin("xa_commit", "xa_rollback"))
                       .select("source", "xa_xid").distinct())
        completions.createOrReplaceTempView("bl_xa_completions")
        cutoff = dt.datetime.fromisoformat(self.end) - self.config.xa_max_age
        sp.createDataFrame([(cutoff,)], "xa_cutoff timestamp").createOrReplaceTempView("bl_params")

    def _archive_facts(self) -> tuple[list[tuple], list[tuple]]:
        """Per archived file of the range, its transactions in the range and GTID epoch; the
        breaks of the server's chain before those files."""
        store = open_store(self.store)
        store.check()
        files: list[tuple] = []
        chain: list[tuple] = []
        for source in covered(store, self.source_names):
            found = summaries.load(store, source)  # a file's index is read only where it is in the range
            listed = list(found)
            chosen = [m for m in listed if meets(m, self.start, self.end)]
            epoch, again = epochs(listed), repeats(listed, found.whole, {name_of(m) for m in chosen})
            for m in chosen:
                first = [e for e in index_of(found.whole(m)) if e.txn_id not in again.get(name_of(m), ())]
                files.append((source, name_of(m), sum(self.start <= e.commit_ts < self.end for e in first),
                              epoch[generation_of(m)]))
            chain += [tuple(b.values()) for b in breaks(source, listed, refusals(store, source),
                                                       {name_of(m) for m in chosen})]
        return files, chain

    # -- the suites ----------------------------------------------------------------------

    def _cached(self, name: str) -> DataFrame:
        self.spark.sparkContext.setJobDescription(READ)
        return self.in_range(self.table(name)).cache()

    def run(self) -> Report:
        # Cached, each read once: GX computes its metrics and runs each query as Spark jobs of
        # their own over the batch, and counting fills the caches. A table's read is planned on a
        # thread of its own: much of it is the driver's (Delta's log, the files its range keeps).
        # GX's project and checkpoints are made meanwhile, on a thread of their own.
        names = ("transactions", "row_changes", "anomalies")
        suites = [Suite(name, BATCH_TABLE[name], WHERE[BATCH_TABLE[name]], name in self.config.warn_only)
                  for name in SUITES]
        with ThreadPoolExecutor(1, thread_name_prefix="binlake-gx") as pool:
            project = pool.submit(Checkpoints.of, self.quality, suites)
            cached = dict(zip(names, each(self.spark.sparkContext, names, self._cached, threads=len(names),
                                          name="validate"), strict=True))
            self.spark.sparkContext.setJobDescription(READ)
            counts, batches = counted(cached)
            log.info("validating %s..%s: %s", self.start, self.end, counts)
            self.views(batches["transactions"])
            checkpoints = project.result()
        with small_range_settings(self.spark, counts):
            results, raw, stored = judge(checkpoints, self.spark, batches, run_name=self.run_name,
                                         parameters={"allowed_severities": self.config.allowed_severities})
        report = Report(self.warehouse, self.start, self.end, self.run_name, False, results, counts, "", "",
                        self.versions)
        write_report(checkpoints.context, self.quality, stored, report, raw=raw)
        # What binlake tables asks before it applies the range (binlake.spark.verdicts)
        verdicts.record(self.quality, self.run_name, self.start, self.end, sources=self.source_names,
                        success=report.success, versions=self.versions)
        for df in cached.values():
            df.unpersist()
        return report


def gx_project(quality: Path):
    """The GX file context of a quality directory, without progress bars, and without the config
    variables file GX scaffolds when it holds nothing but GX's instance id (which GX then keeps in
    memory): see `judge`."""
    import great_expectations as gx

    context = gx.get_context(mode="file", project_root_dir=str(quality))
    variables = _variables_file(context)
    with contextlib.suppress(FileNotFoundError):  # none, or another run's process removed it first
        if variables and all(line.startswith("instance_id:") for line in variables.read_text().splitlines()
                             if line.strip() and not line.lstrip().startswith("#")):
            variables.unlink()
    quiet_gx(context)
    return context


def _variables_file(context) -> Path | None:
    path = context.config.config_variables_file_path
    return Path(context.root_directory, path) if path else None


@dataclass(frozen=True)
class Suite:
    """A suite of expectations/ and its batch: the table it reads, the columns that say where an
    unexpected row is, and whether its failure only warns."""

    name: str
    table: str
    where: list[str]
    warn_only: bool = False


@dataclass(frozen=True)
class Checkpoints:
    """A GX project with suites made ready to run: each suite's brief and detailed checkpoints,
    over a data source of its own (its own Spark execution engine, which holds its batch)."""

    context: Any
    suites: list[Suite]
    made: list[tuple]

    @classmethod
    def of(cls, quality: Path, suites: list[Suite]) -> Checkpoints:
        """The quality directory's project (`gx_project`), the suites saved to it one at a time
        (GX's stores are files)."""
        context = gx_project(quality)
        return cls(context, suites, [_checkpoints(context, suite) for suite in suites])


def judge(checkpoints: Checkpoints, spark: SparkSession, batches: dict[str, DataFrame], *, run_name: str,
          parameters: dict | None = None) -> tuple[list[SuiteResult], dict[str, dict], list]:
    """Each suite over its batch through its checkpoints: judged with the fewest metrics, and when
    it fails evaluated again for its unexpected rows, stored over the brief result (the same key)
    so that the data docs show the details. The suites' summaries, GX's results as JSON, and the
    results' keys for the data docs.

    The suites run at once, a thread each. GX reads the project's config variables file again at
    each lookup of a project variable, through one YAML parser every thread shares, which breaks
    when two parse at once: with a file of the user's variables in the project, the suites run one
    after another."""
    suites = checkpoints.suites
    variables = _variables_file(checkpoints.context)
    threads = len(suites)
    if variables and variables.is_file():
        log.info("the suites one after another: %s holds the project's variables", variables)
        threads = 1

    def run(item: tuple[Suite, tuple]) -> tuple[SuiteResult, dict, object]:
        suite, (brief, detailed) = item
        return _judged(suite, brief, detailed, batches[suite.table], run_name=run_name, parameters=parameters)

    judged = each(spark.sparkContext, list(zip(suites, checkpoints.made, strict=True)), run, threads=threads,
                  name="suites")
    return ([summary for summary, _, _ in judged], {s.name: raw for s, (_, raw, _) in zip(suites, judged, strict=True)},
            [key for _, _, key in judged])


def _checkpoints(context, suite: Suite) -> tuple:
    """A suite's brief and detailed checkpoints, over a data source of its own."""
    import great_expectations as gx

    source = context.data_sources.add_or_update_spark(name=f"binlake_{suite.name}", persist=False)
    vd = context.validation_definitions.add_or_update(gx.ValidationDefinition(
        name=f"binlake_{suite.name}", data=_batch_definition(_asset(source, suite.table), suite.table),
        suite=context.suites.add_or_update(load_suite(suite.name))))
    return (_checkpoint(context, suite.name, vd, BRIEF),
            _checkpoint(context, suite.name, vd, {**DETAILED, "unexpected_index_column_names": suite.where}))


def _judged(suite: Suite, brief, detailed, batch: DataFrame, *, run_name: str, parameters):
    import great_expectations as gx

    batch.sparkSession.sparkContext.setJobDescription(f"binlake: validate: the {suite.name} suite")
    run_id = gx.RunIdentifier(run_name=f"{run_name}_{suite.name}", run_time=dt.datetime.now(dt.UTC))
    params = {"batch_parameters": {"dataframe": batch}, "run_id": run_id, "expectation_parameters": parameters or {}}
    result = brief.run(**params)
    if not result.success:
        result = detailed.run(**params)
    key, vr = next(iter(result.run_results.items()))
    summary = _summarise(suite.name, vr, suite.warn_only)
    log.info("suite %s: %s", suite.name, "passed" if summary.success else "failed")
    return summary, vr.to_json_dict(), key


def write_report(context, quality: Path, stored: list, report: Report, *, raw: dict[str, dict]) -> None:
    """The data docs of the suites' results (one build for them all, not one per checkpoint: each
    build renders the index again), then the report's summary.txt and results.json under
    runs/<run> of the quality directory; its verdict is its suites'."""
    docs = build_docs(context, quality, stored)
    run_dir = quality / "runs" / report.run
    run_dir.mkdir(parents=True, exist_ok=True)
    report.success = all(r.success or r.warn_only for r in report.suites)
    report.docs, report.results = str(docs), str(run_dir / "results.json")
    (run_dir / "summary.txt").write_text(report.text() + "\n")
    # Last, and whole or not at all: its presence says the run finished (load_report).
    tmp = run_dir / "results.json.tmp"
    tmp.write_text(json.dumps({"report": asdict(report), "gx": raw}, indent=1, default=str))
    os.replace(tmp, run_dir / "results.json")


def build_docs(context, quality: Path, stored: list) -> Path:
    """The data docs of the results `stored` (their pages and the index), pointed at the site's
    own assets so that they open without a network; the index's path."""
    context.build_data_docs(resource_identifiers=stored)
    docs = quality / quality_files.INDEX
    offline_docs.localize(docs.parent, pages=_pages(docs.parent, stored))
    return docs


def _pages(site: Path, stored: list) -> list[Path] | None:
    """The pages a build over the results `stored` writes: the index and each result's
    (validations/{suite}/{run name}/{run time}/{batch}.html, GX's site layout); None, every page of
    the site, where one is not there (a layout of another GX)."""
    pages = [site / "index.html", *(quality_files.result_page(site, key) for key in stored)]
    if all(page.is_file() for page in pages):
        return pages
    log.warning("data docs: the pages of %d results are not where GX 1.x writes them: every page pointed at the "
                "site's assets", len(stored))
    return None


def _checkpoint(context, name: str, vd, result_format: dict):
    import great_expectations as gx

    suffix = "" if result_format is BRIEF else "_details"
    return context.checkpoints.add_or_update(gx.Checkpoint(
        name=f"binlake_{name}{suffix}", validation_definitions=[vd], actions=[], result_format=result_format))


def counted(cached: dict[str, DataFrame]) -> tuple[dict[str, int], dict[str, DataFrame]]:
    """Each cached batch's rows (counting fills the caches; a batch a thread, binlake.spark.pools),
    and the batches as a task per ROWS_PER_TASK rows: a small range's as one task each (a job's
    cost is then its planning, not a task per cached block); the cached blocks are not moved."""
    sc = next(iter(cached.values())).sparkSession.sparkContext
    description = sc.getLocalProperty("spark.job.description")

    def count(name: str) -> int:
        if description:  # the caller's, on each thread
            sc.setJobDescription(description)
        return cached[name].count()

    counts = dict(zip(cached, each(sc, cached, count, threads=len(cached), name="count"), strict=True))
    return counts, {name: df.coalesce(max(1, -(-counts[name] // ROWS_PER_TASK))) for name, df in cached.items()}


def small_range_settings(spark: SparkSession, counts: dict[str, int]) -> AbstractContextManager[None]:
    """For small batches (`counts`: their rows), the suites' queries' shuffles in one partition (up
    to ROWS_PER_TASK rows; a partition a core up to SMALL_ROWS) and without adaptive re-planning:
    at a few thousand rows a query's cost is its planning and its tasks, not its data, and an
    hour's 200 thousand rows still shuffle in a fraction of what each stage's re-planning costs
    (bench/RESULTS.md, bench/interval.py's notes). The session's own settings are restored after."""
    rows = sum(counts.values())
    if rows > SMALL_ROWS:
        return session_settings(spark, {})
    parts = 1 if rows <= ROWS_PER_TASK else spark.sparkContext.defaultParallelism
    return session_settings(spark, {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": str(parts)})


def quiet_gx(context) -> None:
    """GX without progress bars: the bars it draws on stderr (which a task log shows as errors)
    bury the report's own lines (its logs are at WARNING from this module's import on)."""
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    context.variables.save()


def _asset(source, table: str):
    try:
        return source.get_asset(table)
    except LookupError:
        return source.add_dataframe_asset(name=table)


def _batch_definition(asset, table: str):
    try:
        return asset.get_batch_definition(f"{table}_range")
    except KeyError:
        return asset.add_batch_definition_whole_dataframe(f"{table}_range")


def _summarise(name: str, vr, warn_only: bool) -> SuiteResult:
    failed = []
    for r in vr.results:
        if r.success:
            continue
        cfg = r.expectation_config
        res = r.result or {}
        details = (res.get("details") or {}) if isinstance(res, dict) else {}
        unexpected = details.get("unexpected_rows") or res.get("partial_unexpected_index_list") \
            or res.get("partial_unexpected_list") or []
        if r.exception_info and r.exception_info.get("raised_exception"):
            unexpected = [{"error": r.exception_info.get("exception_message")}]
        failed.append({"expectation": cfg.type, "description": cfg.description or _describe(cfg),
                       "unexpected": [dict(u) if isinstance(u, dict) else u for u in unexpected][:SHOWN]})
    stats = vr.statistics
    return SuiteResult(name, bool(vr.success), warn_only, int(stats["evaluated_expectations"]),
                       int(stats["successful_expectations"]), failed)


def _describe(cfg) -> str:
    """A built-in expectation, as a person reads it: `kind: expect_column_values_to_be_in_set`."""
    kw = cfg.kwargs
    if "column_A" in kw:
        return f"{kw['column_A']} {'>=' if kw.get('or_equal') else '>'} {kw['column_B']}"
    if "column" in kw:
        return f"{kw['column']}: {cfg.type}"
    return cfg.type


def validate(spark: SparkSession, warehouse: str, start: str, end: str, *, store: str | None = None,
             sources: list[str] | None = None, config: Config | None = None, run_name: str | None = None,
             quality: str | None = None, versions: dict[str, int] | None = None) -> Report:
    """Run the suites over the tables at `versions` (default: those the range's run wrote); the
    report says whether the range can be trusted (see Report.success). It is written under
    runs/<run_name> of the quality directory (default name: the range and the time)."""
    return Validation(spark, warehouse, start, end, store=store, source_names=sources, config=config,
                      run_name=run_name, quality=quality, versions=versions).run()


def load_report(warehouse: str, run_name: str, quality: str | None = None) -> Report:
    """The report a finished run wrote (`assemble --validate-as`, read by the Airflow task)."""
    path = quality_dir(warehouse, quality) / "runs" / check_quality_run(run_name) / "results.json"
    try:
        data = json.loads(path.read_text())["report"]
    except FileNotFoundError:
        raise BinlakeError(f"{path}: no such report: the validation run {run_name} did not finish") from None
    return Report(**{**data, "suites": [SuiteResult(**s) for s in data["suites"]]})
