"""Test helpers: scan files in-process or through the real `binlake` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from binlake.assemble import Options
from binlake.scan import scan_files

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("BINLAKE_SHARED", REPO.parent / "shared"))
PUBLIC = SHARED / "fixtures" / "public-binlogs"
DATA = REPO / "tests" / "data"


def scan(paths, **opts) -> dict[str, list[dict]]:
    """Records of an in-process scan, by kind."""
    out: dict[str, list[dict]] = {"transaction": [], "row_change": [], "anomaly": []}
    paths = [paths] if isinstance(paths, str | Path) else paths
    scan_files(paths, Options(**opts), lambda kind, rec: out[kind].append(rec))
    return out


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the installed command line exactly as a user does."""
    return subprocess.run([sys.executable, "-m", "binlake.cli", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=600)


def ndjson(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]
