"""Where a quality directory (binlake.spark.settings.quality_dir) keeps GX's files: the project
validation writes, its validation results store, its data docs site and a result's page there,
as GX 1.x's file context lays them out. Validation, upkeep, the demo and the Airflow plugin's
report pages read these names from here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

PROJECT = Path("gx")
RESULTS = PROJECT / "uncommitted" / "validations"  # the validation results store
SITE = PROJECT / "uncommitted" / "data_docs" / "local_site"  # the data docs site
INDEX = SITE / "index.html"
PAGES = Path("validations")  # the site's results' pages


def result_page(site: Path, key: Any) -> Path:
    """A validation result's page in a data docs site, by its key (GX's ValidationResultIdentifier):
    validations/{suite}/{run name}/{run time}/{batch}.html."""
    *dirs, batch = key.to_tuple()
    return site.joinpath(PAGES, *dirs, f"{batch}.html")
