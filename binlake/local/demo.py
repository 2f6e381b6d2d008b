"""`binlake demo`: the whole pipeline on the bundled sample binlogs, through the real Airflow DAGs.

A fresh AIRFLOW_HOME (SQLite metadata DB) gets the repository's dags/ and plugins/; with no
`binlake` Variable the DAGs run on their embedded defaults: the samples as `dir://` sources, a
local archive and warehouse under that home, Spark `local[*]`. `airflow dags test` runs
binlake_archive, then binlake_transactions over the samples' commit range. The library never
imports Airflow: it drives the `airflow` command installed beside it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from binlake.errors import BinlakeError
from binlake.local.quality_files import INDEX

REPO = Path(__file__).resolve().parents[2]  # binlake/local/ -> the checkout


def sample_files() -> list[str]:
    """The bundled binlogs (binlake/samples/, package data), one directory per server, each file
    in binlog order: the demo's sources."""
    root = Path(__file__).resolve().parents[1] / "samples"  # binlake/samples, package data
    return sorted(str(f) for d in root.iterdir() if d.is_dir() for f in d.iterdir() if f.name.startswith("binlog."))


def airflow_env(home: Path, users: bool = False) -> dict[str, str]:
    """The environment of an embedded Airflow: this checkout's DAGs, SQLite, local Spark, loopback.
    Airflow's own settings of the caller's environment (AIRFLOW__*) are left out; so are its
    connections and variables (AIRFLOW_CONN_*, AIRFLOW_VAR_*), unless `users`: `binlake airflow`
    runs the user's pipeline with them, the demo runs on its own."""
    bindir = str(Path(sys.executable).parent)
    dropped = ("AIRFLOW__",) if users else ("AIRFLOW__", "AIRFLOW_CONN_", "AIRFLOW_VAR_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env.update({
        "AIRFLOW_HOME": str(home),
        # SQLite's 5 s lock wait is short for `airflow dags test` beside CLI commands on a busy
        # machine. Running services get PostgreSQL (binlake.local.postgres): on SQLite the
        # api-server waits for this lock on its event loop, and all of it stalls meanwhile.
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db?timeout=60",
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
        "PATH": bindir + os.pathsep + env.get("PATH", ""),  # spark-submit and airflow of this install
    })
    env.setdefault("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[*]"}))
    return env


def _airflow(env: dict, *args: str, what: str) -> None:
    argv = [str(Path(sys.executable).parent / "airflow"), *args]
    print(f"  $ airflow {' '.join(args)}", flush=True)
    log = Path(env["AIRFLOW_HOME"]) / "demo.log"
    with log.open("a") as out:
        proc = subprocess.run(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise BinlakeError(f"{what} failed (exit {proc.returncode}); its output is in {log}")


def _run_state(env: dict, dag_id: str) -> str:
    argv = [str(Path(sys.executable).parent / "airflow"), "dags", "list-runs", dag_id, "-o", "json"]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    listing = [ln for ln in out.splitlines() if ln.startswith("[")]  # Airflow may print warnings first
    runs = json.loads(listing[-1]) if listing else []
    if not runs:
        raise BinlakeError(f"{dag_id}: no run recorded")
    return max(runs, key=lambda r: r.get("start_date") or "")["state"]


def commit_range(store: Path) -> tuple[str, str]:
    """Whole hours around every archived transaction's commit time."""
    commits = []
    for m in store.glob("*/manifests/*.json"):
        facts = json.loads(m.read_text())
        commits += [facts[k] for k in ("min_commit_ts", "max_commit_ts") if facts.get(k)]
    if not commits:
        raise BinlakeError(f"{store}: nothing was archived")
    first = dt.datetime.fromisoformat(min(commits)).replace(minute=0, second=0, microsecond=0)
    last = dt.datetime.fromisoformat(max(commits)).replace(minute=0, second=0, microsecond=0) + dt.timedelta(hours=1)
    return first.strftime("%Y-%m-%dT%H:%M:%SZ"), last.strftime("%Y-%m-%dT%H:%M:%SZ")


def settings(home: Path) -> dict:
    """The demo's `binlake` Variable (the DAGs' defaults): the bundled sample binlogs (one
    directory per server) into a local archive and warehouse under the Airflow home."""
    dirs = sorted({str(Path(f).parent) for f in sample_files()})
    return {
        "store": f"file://{home / 'binlake' / 'archive'}",
        "warehouse": str(home / "binlake" / "warehouse"),
        "sources": [{"name": f"sample-{Path(d).name}", "url": f"dir://{d}", "final": True} for d in dirs],
    }


def _elsewhere(home: Path, warehouse: str) -> dict[str, str]:
    """The environment of a demo whose warehouse is given: the Variable with it, the reports under
    the home, and for s3a:// the AWS connection made from the usual AWS environment (endpoint,
    keys, region), which Airflow hands to Spark as environment: never printed."""
    variable = {**settings(home), "warehouse": warehouse, "quality": str(home / "binlake" / "quality")}
    env = {}
    if warehouse.startswith("s3a://"):
        aws = os.environ
        if not aws.get("AWS_ACCESS_KEY_ID"):
            raise BinlakeError(f"{warehouse}: the demo reads S3's keys from the AWS environment (AWS_ACCESS_KEY_ID, "
                               "AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL for another S3 than AWS)")
        extra = {"region_name": aws.get("AWS_DEFAULT_REGION") or aws.get("AWS_REGION") or "us-east-1"}
        if aws.get("AWS_ENDPOINT_URL"):
            extra["endpoint_url"] = aws["AWS_ENDPOINT_URL"]
        env["AIRFLOW_CONN_BINLAKE_S3"] = json.dumps({"conn_type": "aws", "login": aws["AWS_ACCESS_KEY_ID"],
                                                     "password": aws.get("AWS_SECRET_ACCESS_KEY", ""),
                                                     "extra": extra})
        variable["aws_conn_id"] = "binlake_s3"
    env["AIRFLOW_VAR_BINLAKE"] = json.dumps(variable)
    return env


def run(home: str | None = None, warehouse: str | None = None) -> int:
    if not (REPO / "dags" / "binlake_transactions.py").exists():
        raise BinlakeError(f"binlake demo runs the DAGs of a source checkout; {REPO / 'dags'} is missing")
    root = Path(home) if home else Path(tempfile.mkdtemp(prefix="binlake-demo-"))
    root.mkdir(parents=True, exist_ok=True)
    env = airflow_env(root)
    if warehouse:
        env.update(_elsewhere(root, warehouse))
    print(f"binlake demo: Airflow home {root} (SQLite), the bundled sample binlogs, Spark local[*]"
          + (f", the warehouse {warehouse}" if warehouse else ""))
    _airflow(env, "db", "migrate", what="airflow db migrate")
    _airflow(env, "dags", "test", "binlake_archive", what="the binlake_archive run")
    if (state := _run_state(env, "binlake_archive")) != "success":
        raise BinlakeError(f"binlake_archive run ended {state}; see {root / 'demo.log'}")
    start, end = commit_range(root / "binlake" / "archive")
    conf = json.dumps({"start": start, "end": end})
    _airflow(env, "dags", "test", "binlake_transactions", "-c", conf, what="the binlake_transactions run")
    state = _run_state(env, "binlake_transactions")
    quality = root / "binlake" / "quality" if warehouse else root / "binlake" / "warehouse" / "quality"
    sources = [s["name"] for s in settings(root)["sources"]]
    print(summary(warehouse or str(root / "binlake" / "warehouse"), quality, start, end, state=state,
                  sources=sources))
    return 0 if state == "success" else 1


def summary(warehouse: str, quality: Path, start: str, end: str, *, state: str, sources: list[str]) -> str:
    """What the run produced, read back from the Delta tables (with delta-rs: no JVM to start) and
    the validation results, then one of the sources' tables as of two instants."""
    from deltalake import DeltaTable

    from binlake.local.showcase import lines as showcase
    from binlake.tables.delta_reads import storage

    uri, options = storage(warehouse)  # delta-rs names S3 s3://, with the AWS environment's endpoint and keys

    def table(name: str):
        path = f"{uri}/{name}"
        return DeltaTable(path, storage_options=options).to_pyarrow_table() \
            if DeltaTable.is_deltatable(path, options) else None

    txns, rows, anomalies = table("transactions"), table("row_changes"), table("anomalies")
    lines = [f"binlake_transactions {start} .. {end}: {state}"]
    kinds = Counter(txns.column("kind").to_pylist()) if txns is not None else Counter()
    lines.append(f"  transactions: {sum(kinds.values())}")
    lines += [f"    {k:12} {n}" for k, n in sorted(kinds.items())]
    lines.append(f"  row changes:  {rows.num_rows if rows is not None else 0}")
    lines.append(f"  anomalies:    {anomalies.num_rows if anomalies is not None else 0}")
    runs = sorted((quality / "runs").glob("*/results.json"))
    if runs:
        report = json.loads(runs[-1].read_text())["report"]
        verdict = "PASSED" if report["success"] else "FAILED"
        lines.append(f"  validation:   {verdict} ({runs[-1].parent / 'summary.txt'})")
    docs = quality / INDEX
    lines.append(f"  report:       {docs}")
    lines.append(f"  tables:       {warehouse}/{{transactions,row_changes,anomalies}}")
    lines += showcase(warehouse, sources)
    return "\n".join(lines)
