"""`binlake upkeep`'s part in the quality directory (binlake.spark.quality_upkeep): the GX
project's validation results older than the retention go, with their data docs pages, and the
site's index lists the rest; binlake's own reports stay. The results are GX's own, of real
checkpoint runs at chosen run times, written up as a validation writes them (its data docs and
report: binlake.spark.validate.write_report)."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pytest

NOW = dt.datetime.now(dt.UTC)
# Runs and their suites' results, days before NOW. `old` got its `versions` result again a day ago,
# as a later apply adds the row versions' suites to a run's report (the same run name in GX).
RUNS = {"old": [("transactions", 9), ("versions", 9), ("versions", 1)],
           "middle": [("transactions", 4), ("versions", 4)],
           "new": [("transactions", 1), ("versions", 1)]}
RETAIN_DAYS = 3


def _validated(quality: Path) -> set[str]:
    """A GX project in `quality` holding the results of RUNS, each run's written up as a validation
    does; the results' keys (as GX's store paths)."""
    import great_expectations as gx
    import pandas as pd

    from binlake.spark.validate import Report, SuiteResult, gx_project, write_report

    context = gx_project(quality)
    batch = context.data_sources.add_pandas("rows").add_dataframe_asset("rows").add_batch_definition_whole_dataframe(
        "all")
    checkpoints = {}
    for name in ("transactions", "versions"):
        suite = context.suites.add(gx.ExpectationSuite(
            name=name, expectations=[gx.expectations.ExpectColumnValuesToNotBeNull(column="txn_id")]))
        definition = context.validation_definitions.add(gx.ValidationDefinition(name=name, data=batch, suite=suite))
        checkpoints[name] = context.checkpoints.add(gx.Checkpoint(name=name, validation_definitions=[definition],
                                                                  actions=[]))
    rows = pd.DataFrame({"txn_id": ["a", "b"]})
    keys = set()
    for run, results in RUNS.items():
        for suite, days in results:
            run_id = gx.RunIdentifier(run_name=f"{run}_{suite}", run_time=NOW - dt.timedelta(days=days))
            stored = list(checkpoints[suite].run(batch_parameters={"dataframe": rows}, run_id=run_id).run_results)
            report = Report("w", "s", "e", run, True, [SuiteResult(suite, True, False, 1, 1, [])], {}, "", "")
            write_report(context, quality, stored, report, raw={suite: {"days": days}})
            keys |= {"/".join(key.to_tuple()) for key in stored}
    return keys


def _recent(keys: set[str]) -> set[str]:
    """The keys of the results run within RETAIN_DAYS."""
    return {k for k in keys if dt.datetime.strptime(k.split("/")[2], "%Y%m%dT%H%M%S.%fZ").replace(
        tzinfo=dt.UTC) >= NOW - dt.timedelta(days=RETAIN_DAYS)}


def _files(root: Path, suffix: str) -> set[str]:
    return {str(p.relative_to(root).with_suffix("")) for p in root.rglob(f"*{suffix}")}


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def project(tmp_path) -> tuple[Path, set[str]]:
    """A local warehouse's quality directory (`_validated`) and its results' keys."""
    quality = tmp_path / "lake" / "quality"
    return quality, _validated(quality)


def test_the_older_results_go_with_their_pages_and_the_index_lists_the_rest(project):
    import great_expectations as gx

    from binlake.local import offline_docs
    from binlake.spark.quality_upkeep import RESULTS, SITE, QualityUpkeep, upkeep

    quality, keys = project
    site, results = quality / SITE, quality / RESULTS
    newer = _recent(keys)
    assert len(keys) == 7 and len(newer) == 3  # `old`'s later `versions`, and `new`'s two
    assert _files(results, ".json") == keys and _files(site / "validations", ".html") == keys
    runs = _snapshot(quality / "runs")
    assert set(runs) == {f"{run}/{name}" for run in RUNS for name in ("results.json", "summary.txt")}

    assert upkeep(quality, RETAIN_DAYS) == QualityUpkeep(str(quality), 4, 3)
    # GX's store holds the newer results alone: as GX lists them, and on disk
    stored = gx.get_context(mode="file", project_root_dir=str(quality)).validation_results_store.list_keys()
    assert {"/".join(key.to_tuple()) for key in stored} == newer
    assert _files(results, ".json") == newer
    # their pages alone, and the index links exactly those
    index = (site / "index.html").read_text()
    assert _files(site / "validations", ".html") == newer
    assert {link.removeprefix("validations/") for link in re.findall(r'validations/[^"]+(?=\.html)', index)} == newer
    if offline_docs.available():  # the index GX wrote again, pointed at the site's own assets
        assert not [url for url in offline_docs.ASSETS if url in index]
    # no directory left empty, in the store or the site: `old`'s run name keeps its newer result
    for root in (results, site / "validations"):
        assert all(any(d.iterdir()) for d in root.rglob("*") if d.is_dir()), root
    assert {p.name for p in (results / "versions").iterdir()} == {"old_versions", "new_versions"}
    # binlake's reports are the record: every run's, as it was
    assert _snapshot(quality / "runs") == runs

    # the next day's upkeep: nothing older, nothing written
    pages = _snapshot(site)
    assert upkeep(quality, RETAIN_DAYS) == QualityUpkeep(str(quality), 0, 3)
    assert _snapshot(site) == pages


def test_no_quality_project_is_nothing_to_do(tmp_path):
    from binlake.spark.quality_upkeep import QualityUpkeep, upkeep

    missing = tmp_path / "lake" / "quality"
    assert upkeep(missing, 7) == QualityUpkeep(str(missing), 0, 0)
    assert not missing.exists()  # nothing made
    reports = tmp_path / "reports"
    (reports / "runs" / "r").mkdir(parents=True)  # binlake's reports, without a GX project beside them
    assert upkeep(reports, 0) == QualityUpkeep(str(reports), 0, 0)
    assert [p.name for p in reports.iterdir()] == ["runs"]


def test_upkeeps_line_counts_the_results(project, spark, s3_endpoint, tmp_path, capsys):
    # `binlake upkeep` as the command line parses it: a local warehouse's quality directory by
    # default, counted in its JSON line; an s3a:// warehouse's only where --quality names it
    import boto3

    from binlake.cli import build_parser
    from binlake.spark import run_upkeep
    from binlake.spark.quality_upkeep import RESULTS

    quality, keys = project
    lake = quality.parent

    def line(*argv: str) -> dict:
        assert run_upkeep(build_parser().parse_args(["upkeep", *argv]), spark) == 0
        (out,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]  # its one line on stdout
        return out

    boto3.client("s3").create_bucket(Bucket="quality-upkeep")
    assert line("--warehouse", "s3a://quality-upkeep/lake", "--retain-days", "0")["quality"] is None
    assert _files(quality / RESULTS, ".json") == keys  # not named: left alone
    got = line("--warehouse", str(lake), "--retain-days", str(RETAIN_DAYS))
    assert got["quality"] == {"directory": str(quality), "removed": 4, "kept": 3}
    got = line("--warehouse", "s3a://quality-upkeep/lake", "--retain-days", "0", "--quality", str(quality))
    assert got["quality"] == {"directory": str(quality), "removed": 3, "kept": 0}
    assert _files(quality / RESULTS, ".json") == set()
