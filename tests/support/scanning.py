"""Test helpers: scan files in-process or through the real `binlake` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson

from binlake.assemble import Options
from binlake.scan import scan_files
from binlake.sinks import BlockSink, LineSink, RecordSink

REPO = Path(__file__).resolve().parents[2]


def _shared() -> Path:
    """`../shared` (the fixtures): $BINLAKE_SHARED, else beside this checkout, else beside the
    local repository it was cloned from (a clean clone made elsewhere, as CI does)."""
    if os.environ.get("BINLAKE_SHARED"):
        return Path(os.environ["BINLAKE_SHARED"])
    beside = REPO.parent / "shared"
    if beside.is_dir():
        return beside
    origin = subprocess.run(["git", "-C", str(REPO), "config", "--get", "remote.origin.url"],
                            capture_output=True, text=True).stdout.strip()
    if origin.startswith("/") and (Path(origin).parent / "shared").is_dir():
        return Path(origin).parent / "shared"
    return beside


SHARED = _shared()
PUBLIC = SHARED / "fixtures" / "public-binlogs"
DATA = REPO / "tests" / "data"


def scan(paths, **opts) -> dict[str, list[dict]]:
    """Records of an in-process scan, by kind."""
    out: dict[str, list[dict]] = {"transaction": [], "row_change": [], "anomaly": []}
    paths = [paths] if isinstance(paths, str | Path) else paths
    scan_files(paths, Options(**opts), lambda kind, rec: out[kind].append(rec))
    return out


def lines_path(paths, **opts) -> bytes:
    """The row changes as `binlake scan --rows` writes them."""
    chunks: list[bytes] = []
    scan_files(paths, Options(**opts), lambda kind, rec: None, LineSink(chunks.extend))
    return b"".join(chunks)


def blocks_path(paths, **opts) -> list:
    """The row changes as the Spark job's parse tasks take them: RowBlocks."""
    out: list = []
    scan_files(paths, Options(**opts), lambda kind, rec: None, BlockSink(out.extend))
    return out


def records_list(paths, **opts) -> list[dict]:
    """The row changes as records."""
    out: list[dict] = []
    scan_files(paths, Options(**opts), lambda kind, rec: None, RecordSink(out.extend))
    return out


def records_path(paths, **opts) -> bytes:
    """The row changes as records, each written by orjson."""
    out: list[bytes] = []
    scan_files(paths, Options(**opts), lambda kind, rec: None,
               RecordSink(lambda recs: out.extend(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in recs)))
    return b"".join(out)


def assert_same_items(got: list, want: list, what: str) -> None:
    """Two sequences equal item by item; the first difference is named by its place."""
    assert len(got) == len(want)
    for n, (a, b) in enumerate(zip(got, want, strict=True)):
        assert a == b, f"{what} {n + 1}"


def headers(data: bytes) -> list[tuple[int, int, int]]:
    """(offset, type code, size) of each event of a binlog file's bytes, read from the v4 event
    headers alone (type at byte 4, size at bytes 9-12) with no binlake code: where a test that
    damages a file finds what it damages."""
    out, pos = [], 4
    while pos + 19 <= len(data):
        size = int.from_bytes(data[pos + 9:pos + 13], "little")
        assert size >= 19, f"event at {pos}: size {size}, not a v4 header"
        out.append((pos, data[pos + 4], size))
        pos += size
    return out


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the installed command line exactly as a user does."""
    return subprocess.run([sys.executable, "-m", "binlake.cli", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=600)


def ndjson(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]
