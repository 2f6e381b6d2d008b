"""The pipeline's settings: one Airflow Variable, `binlake` (JSON), with embedded defaults.

    {
      "store": "s3://binlake/archive",          # the archive (file:///… or s3://bucket/prefix)
      "aws_conn_id": "binlake_s3",              # for s3:// stores: an AWS connection, endpoint_url in extra
      "warehouse": "/opt/binlake/warehouse",    # the Delta tables (a path or s3a://bucket/prefix)
      "quality": "/opt/binlake/quality",        # the quality reports (default: {warehouse}/quality)
      "spark_conn_id": "spark_default",
      "sources": [
        {"name": "db1", "mysql_conn_id": "binlake_db1", "flush_binary_logs": true, "baselines": true},
        {"name": "old", "url": "dir:///srv/binlogs", "final": true}
      ],
      "split_bytes": 67108864, "warn_only": [], "allowed_severities": [],
      "xa_max_age_seconds": 3600, "archive_wait_seconds": 1800, "spark_conf": {}
    }

Without the Variable the defaults run the bundled sample binlogs into $AIRFLOW_HOME/binlake: the demo.
Set it in the UI (Admin → Variables), with `airflow variables set`, or as AIRFLOW_VAR_BINLAKE.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from binlake.spark.settings import RETAIN_DAYS

VARIABLE = "binlake"


@dataclass(frozen=True)
class SourceSpec:
    name: str
    mysql_conn_id: str | None = None  # an Airflow MySQL connection: host, port, login, password
    url: str | None = None  # or a binlake source URL (dir:///path; mysql:// without a password)
    flush_binary_logs: bool = False  # rotate the active file at every archive run (needs RELOAD)
    final: bool = False  # no more files will come (a directory of old binlogs): always complete
    baselines: bool = True  # a live source: snapshot the tables that need a baseline (binlake_snapshot)

    def __post_init__(self) -> None:
        if bool(self.mysql_conn_id) == bool(self.url):
            raise ValueError(f"source {self.name!r}: give exactly one of mysql_conn_id or url")


@dataclass(frozen=True)
class Settings:
    store: str
    warehouse: str
    sources: tuple[SourceSpec, ...]
    aws_conn_id: str | None = None
    spark_conn_id: str = "spark_default"
    split_bytes: int = 64 << 20
    warn_only: tuple[str, ...] = ()
    allowed_severities: tuple[str, ...] = ()
    xa_max_age_seconds: float = 3600.0
    archive_wait_seconds: float = 1800.0  # after an interval's end: then waiting fails
    spark_conf: dict = field(default_factory=dict)
    quality: str | None = None  # where validation's reports go: a local or shared path (s3a:// warehouses need one)
    upkeep_retain_days: int = RETAIN_DAYS  # binlake_upkeep: days of time travel kept

    def source(self, name: str) -> SourceSpec:
        for s in self.sources:
            if s.name == name:
                return s
        raise KeyError(f"no source {name!r} in the {VARIABLE} Variable")


def template(key: str) -> str:
    """A Jinja template of one of the Variable's keys, its default when the Variable or the key is
    not set: for operator arguments Airflow renders at run time (never when a DAG file is parsed)."""
    default = Settings.__dataclass_fields__[key].default
    return f"{{{{ var.json.get('{VARIABLE}', {{}}).get('{key}', {default!r}) }}}}"


def quality(settings: Settings) -> Path:
    """The directory of the quality reports: the Variable's `quality`, else {warehouse}/quality."""
    from binlake.spark.settings import quality_dir

    return quality_dir(settings.warehouse, settings.quality)


def home() -> Path:
    return Path(os.environ.get("AIRFLOW_HOME", Path.home() / "airflow"))


def defaults() -> dict:
    """The demo: the bundled sample binlogs (one directory per server) into a local archive."""
    from binlake.local.demo import settings as demo_settings

    return demo_settings(home())


def parse(raw: dict) -> Settings:
    known = set(Settings.__dataclass_fields__)
    unknown = set(raw) - known
    if unknown:
        raise ValueError(f"the {VARIABLE} Variable has unknown keys: {', '.join(sorted(unknown))}")
    values = dict(raw)
    values["sources"] = tuple(SourceSpec(**s) for s in raw.get("sources", ()))
    if not values["sources"]:
        raise ValueError(f"the {VARIABLE} Variable names no sources")
    names = [s.name for s in values["sources"]]
    if len(set(names)) != len(names):
        raise ValueError(f"the {VARIABLE} Variable names a source twice: {names}")
    for key in ("warn_only", "allowed_severities"):
        values[key] = tuple(raw.get(key, ()))
    return Settings(**values)


def load() -> Settings:
    """The settings a task runs with (read at run time, never when a DAG file is parsed)."""
    from airflow.sdk import Variable

    raw = Variable.get(VARIABLE, default=None, deserialize_json=True)
    return parse(raw if raw is not None else defaults())
