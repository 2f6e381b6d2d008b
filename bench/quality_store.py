"""What a quality directory's growth costs each validation run, and what `binlake upkeep` takes back.

Every run adds its suites' results to the GX project's validation results store and builds the
data docs, and GX's site builder lists that whole store several times a build: the build grows with
the runs a warehouse has had. One real run (`binlake assemble --validate` over the bundled samples,
2 cores) gives the four results; the store is then filled with copies of them, one run an hour back
in time (the files GX's store writes, each with its run's name and time), to each size below. At
each size: the data docs build of one more run's results, as a validation pays it (GX's build over
its four results and the pages pointed at the offline assets: binlake.spark.validate.write_report);
then the quality directory's upkeep keeping 7 days (binlake.spark.quality_upkeep: 672 runs' results
at most), and the same build after it.

    .venv/bin/python bench/quality_store.py [--runs 5 625 2500]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.results import publish
from binlake.local.quality_files import RESULTS, SITE, result_page

RETAIN_DAYS = 7
GX_TIME = "%Y%m%dT%H%M%S.%fZ"  # a run time as GX names its directory


def _validated(root: Path) -> Path:
    """A quality directory holding one real run's results (the samples, assembled and validated)."""
    from bench.interval import _samples

    store, start, end = _samples(root / "samples")
    lake = root / "lake"
    subprocess.run([sys.executable, "-m", "binlake.cli", "assemble", "--validate", "--store", store, "--warehouse",
                    str(lake), "--master", "local[2]", "--start", start, "--end", end],
                   check=True, stdout=subprocess.DEVNULL)
    return lake / "quality"


def _results(quality: Path) -> list[Path]:
    return sorted((quality / RESULTS).rglob("*.json"))


def _fill(quality: Path, runs: int, now: dt.datetime) -> None:
    """`runs` runs' results, copies of the one run's in the store, an hour apart back from `now`,
    written where GX's store keeps them, each with its data docs page as its run's build left it
    (the site's index lists the pages it finds)."""
    from great_expectations.data_context.types.resource_identifiers import ValidationResultIdentifier

    from binlake.spark.validate import gx_project

    site = quality / SITE
    template = [(key, json.loads(_result(quality, key).read_text()), result_page(site, key).read_bytes())
                for key in gx_project(quality).validation_results_store.list_keys()]
    for i in range(runs):
        at = now - dt.timedelta(hours=i + 1)
        for key, doc, page in template:
            suite, name, _, batch = key.to_tuple()
            copy = ValidationResultIdentifier.from_tuple((suite, f"{name}-copy{i}", at.strftime(GX_TIME), batch))
            doc["meta"]["run_id"] = {"run_name": copy.run_id.run_name, "run_time": at.isoformat()}
            for path, data in ((_result(quality, copy), json.dumps(doc).encode()), (result_page(site, copy), page)):
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)


def _result(quality: Path, key) -> Path:
    """Where GX's file store keeps a validation result: {suite}/{run name}/{run time}/{batch}.json."""
    *dirs, batch = key.to_tuple()
    return quality.joinpath(RESULTS, *dirs, f"{batch}.json")


def _build(quality: Path, keys: list) -> float:
    """A validation's data docs build over `keys` (write_report's: validate.build_docs), timed."""
    import binlake.spark.expectations  # noqa: F401 - its results' pages render binlake's expectation
    from binlake.spark.validate import build_docs, gx_project

    context = gx_project(quality)
    began = time.monotonic()
    build_docs(context, quality, keys)
    return time.monotonic() - began


def _measure(template_dir: Path, runs: int, root: Path) -> dict:
    from binlake.spark.quality_upkeep import upkeep
    from binlake.spark.validate import gx_project

    quality = root / f"quality-{runs}"
    shutil.copytree(template_dir, quality)
    now = dt.datetime.now(dt.UTC)
    _fill(quality, runs, now)
    store = gx_project(quality).validation_results_store
    latest = [k for k in store.list_keys() if "-copy" not in k.run_id.run_name]
    stored = len(_results(quality))
    before = _build(quality, latest)
    began = time.monotonic()
    done = upkeep(quality, RETAIN_DAYS, now=now)
    kept_s = time.monotonic() - began
    after = _build(quality, latest)
    shutil.rmtree(quality)
    return {"runs": runs, "stored": stored, "before": before, "upkeep": kept_s, "removed": done.removed,
            "kept": done.kept, "after": after}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[5, 625, 2500],
                        help="runs' results in the store before the build (one run: its suites' results)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="binlake-quality-"))
    print("one real run …", file=sys.stderr)
    template = _validated(root)
    per_run = len(_results(template))
    size = sum(p.stat().st_size for p in _results(template)) / per_run
    rows = []
    for runs in args.runs:
        print(f"{runs} runs …", file=sys.stderr)
        rows.append(_measure(template, runs, root))
    shutil.rmtree(root, ignore_errors=True)
    lines = [
        f"One real run's {per_run} results (the bundled samples, `binlake assemble --validate`; {size / 1024:.0f} "
        f"KiB each), copied into the store as earlier runs an hour apart. A run's data docs build: GX's build "
        f"over its {per_run} results and the pages pointed at the offline assets, as each validation pays it. "
        f"The upkeep: the quality directory's part of `binlake upkeep --retain-days {RETAIN_DAYS}` (the results "
        f"of runs older than {RETAIN_DAYS} days removed, their pages too, the index built again).",
        "",
        "| runs in the store | results | a run's data docs build | the upkeep | results removed, kept | "
        "the build after it |",
        "|---:|---:|---:|---:|---:|---:|",
        *[f"| {r['runs']:,} | {r['stored']:,} | {r['before']:.2f} s | {r['upkeep']:.2f} s | {r['removed']:,}, "
          f"{r['kept']:,} | {r['after']:.2f} s |" for r in rows],
    ]
    publish("bench/quality_store.py", lines)


if __name__ == "__main__":
    main()
