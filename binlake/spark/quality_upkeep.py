"""The quality directory's upkeep (`binlake upkeep --quality`): the GX project's validation
results older than the retention removed, their data docs pages with them, and the site's index
built again over what remains.

Every validation run adds its suites' results to the project's validation results store
(`gx/uncommitted/validations/`) and builds the data docs, and GX's site builder lists that whole
store several times a build, whatever results it is given (what that costs: bench/quality_store.py).
Only GX's copies go: binlake's own reports
(`runs/<run>/results.json`, which hold GX's results whole, and `summary.txt`), the verdicts
`binlake tables` reads (`verdicts/`) and the Airflow plugin's records (`airflow/`) are the record,
and stay.

The project is opened as it is (nothing of its configuration written: a validation may be running
beside), and a directory without one is left alone, not made.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from pathlib import Path

from binlake.errors import BinlakeError
from binlake.local import offline_docs
from binlake.local.quality_files import INDEX, PAGES, PROJECT, RESULTS, SITE
from binlake.spark.settings import quiet_gx_logs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class QualityUpkeep:
    """What an upkeep of a quality directory did: validation results removed (each with its data
    docs page) and kept."""

    directory: str
    removed: int
    kept: int


def upkeep(quality: Path, retain_days: int, *, now: dt.datetime | None = None) -> QualityUpkeep:
    """Remove from the GX project of `quality` the validation results whose run time (GX's, in the
    result's key) is more than `retain_days` days before `now`, and their data docs pages; the
    index then lists the rest. 0 days removes every result of a run before `now`."""
    if retain_days < 0:
        raise BinlakeError(f"--retain-days {retain_days}: a number of days, 0 or more")
    if not (quality / PROJECT / "great_expectations.yml").is_file():
        log.info("quality %s: no GX project, no validation results to remove", quality)
        return QualityUpkeep(str(quality), 0, 0)
    quiet_gx_logs()  # before GX's import: it logs ~200 INFO lines
    import great_expectations as gx

    cutoff = (now or dt.datetime.now(dt.UTC)) - dt.timedelta(days=retain_days)
    context = gx.get_context(mode="file", project_root_dir=str(quality))
    store = context.validation_results_store
    keys = store.list_keys()
    old = {key for key in keys if _older(key, cutoff)}
    for key in old:
        store.remove_key(key)
    if old:
        # The index built once: GX's index builder drops the pages of results no longer stored,
        # and the sections render only the results named, which are gone. A set, not GX's list:
        # each stored key is looked up in it.
        context.build_data_docs(resource_identifiers=old)  # type: ignore[arg-type]
        # the index, GX's again, pointed at the site's assets (the other pages were when written)
        offline_docs.localize(quality / SITE, pages=[quality / INDEX])
        # GX's own removal means to remove the directories it empties (each result's run name and
        # run time), but never does (it tests `not Path.iterdir()`, always false): every GX listing
        # would walk them still.
        for base in (quality / RESULTS, quality / SITE / PAGES):
            for key in old:
                _prune(base, key.to_tuple()[:-1])
    done = QualityUpkeep(str(quality), len(old), len(keys) - len(old))
    log.info("quality %s: %d validation results removed (run before %s) with their data docs pages, %d kept",
             quality, done.removed, cutoff.isoformat(), done.kept)
    return done


def _older(key, cutoff: dt.datetime) -> bool:
    """Whether a result's run time is before `cutoff`; one without a run time is kept."""
    t = key.run_id.run_time
    return t is not None and (t if t.tzinfo else t.replace(tzinfo=dt.UTC)) < cutoff


def _prune(base: Path, parts: tuple[str, ...]) -> None:
    """The directories of `parts` under `base`, deepest first, while they are empty (the suite's
    own, the first part, stays)."""
    for depth in range(len(parts), 1, -1):
        try:
            base.joinpath(*parts[:depth]).rmdir()
        except FileNotFoundError:
            continue
        except OSError:  # not empty: another result of the run
            return
