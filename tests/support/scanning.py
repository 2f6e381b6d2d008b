"""Test helpers: scan files in-process or through the real `binlake` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson

from binlake.assemble.outputs import Lines, Records
from binlake.assemble.scan import ScanSummary, scan_files
from binlake.assemble.sinks import BlockSink, LineSink, RecordSink
from binlake.assemble.walk import Options

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
    scan_files(paths, Options(**opts), Records(out["transaction"].append, out["anomaly"].append,
                                               RecordSink(out["row_change"].extend)))
    return out


def lines_path(paths, **opts) -> bytes:
    """The row changes as `binlake scan --rows` writes them."""
    chunks: list[bytes] = []
    scan_files(paths, Options(**opts), Records(rows=LineSink(chunks.extend)))
    return b"".join(chunks)


def scan_lines(paths, **opts) -> tuple[bytes, ScanSummary]:
    """What `binlake scan --rows --anomalies` prints, made in-process the same way (the lane
    included, binlake.assemble.lane), and its summary."""
    chunks: list[bytes] = []
    summary = scan_files(paths, Options(**opts), Lines(chunks.append))
    return b"".join(chunks), summary


def lines_records(lines: bytes) -> dict[str, list[dict]]:
    """JSON lines read back as records, by kind."""
    out: dict[str, list[dict]] = {"transaction": [], "row_change": [], "anomaly": []}
    for line in lines.splitlines():
        rec = orjson.loads(line)
        out[rec["record"]].append(rec)
    return out


def blocks_path(paths, **opts) -> list:
    """The row changes as the Spark job's parse tasks take them: RowBlocks."""
    out: list = []
    scan_files(paths, Options(**opts), Records(rows=BlockSink(out.extend)))
    return out


def records_list(paths, **opts) -> list[dict]:
    """The row changes as records."""
    out: list[dict] = []
    scan_files(paths, Options(**opts), Records(rows=RecordSink(out.extend)))
    return out


def records_path(paths, **opts) -> bytes:
    """The row changes as records, each written by orjson."""
    out: list[bytes] = []
    scan_files(paths, Options(**opts), Records(rows=RecordSink(
        lambda recs: out.extend(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in recs))))
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


QUERY, XID, MARIA_GTID = 2, 16, 162  # the servers' type codes


def ordinary_count(data: bytes, gtids: set[int], inside: set[int], maria_not: int) -> int:
    """Transactions of a binlog file's bytes of one shape, from the event headers and the BEGIN's
    text with no binlake code: an event of `gtids` then a QUERY "BEGIN" (or MariaDB's GTID with no
    flag of `maria_not`: it is its own BEGIN), only events of `inside`, then an XID."""
    n = 0
    at = headers(data)
    crc = _checksummed(data, at[0])
    for k, (pos, t, _size) in enumerate(at):
        j = k + 1
        if t == MARIA_GTID and not data[pos + 19 + 12] & maria_not:
            pass
        elif t in gtids and j < len(at) and at[j][1] == QUERY and _query_text(data, at[j], crc) == b"BEGIN":
            j += 1
        else:
            continue
        while j < len(at) and at[j][1] in inside:
            j += 1
        n += j < len(at) and at[j][1] == XID
    return n


def _checksummed(data: bytes, fde: tuple[int, int, int]) -> bool:
    """Whether the file's events end with a CRC32: its FORMAT_DESCRIPTION's checksum algorithm,
    the byte before the event's own last four (MySQL 5.6.1+), is 1."""
    pos, _, size = fde
    return data[pos + size - 5] == 1


def _query_text(data: bytes, header: tuple[int, int, int], crc: bool) -> bytes:
    """A QUERY event's statement (a CRC32 after it where the file has them, status variables and
    schema name before it)."""
    pos, _, size = header
    body = data[pos + 19:pos + size - (4 if crc else 0)]
    return body[13 + int.from_bytes(body[11:13], "little") + body[8] + 1:]


def damaged_rows(src: Path, into: Path, how: str, where: float = 0.5) -> Path:
    """A copy of src (in into) with the v2 rows event `where` along its rows events damaged: one
    byte of its body flipped ("flipped"), or the file cut in its middle ("cut")."""
    data = bytearray(src.read_bytes())
    rows = [h for h in headers(bytes(data)) if h[1] in (30, 31, 32)]
    pos, _, size = rows[int(len(rows) * where)]
    if how == "flipped":
        data[pos + size - 8] ^= 0xFF
    else:
        data = data[:pos + size // 2]
    out = into / f"{how}{src.suffix}"
    out.write_bytes(bytes(data))
    return out


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the installed command line exactly as a user does."""
    return subprocess.run([sys.executable, "-m", "binlake.cli", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=600)


def cli_here(*args: str) -> subprocess.CompletedProcess:
    """The command line's own `main` in this process, read as run_cli's result (exit code, stdout,
    stderr): for the tests that ask `binlake asof` hundreds of times, where each process's start
    would cost a second or more of a busy core. run_cli stays the user's way for the rest."""
    import contextlib
    import io

    from binlake.cli import main

    out, err = io.BytesIO(), io.StringIO()
    text = io.TextIOWrapper(out, encoding="utf-8", write_through=True)  # .buffer, as sys.stdout has
    with contextlib.redirect_stdout(text), contextlib.redirect_stderr(err):
        code = main(list(args))
        text.flush()
    return subprocess.CompletedProcess(["binlake", *args], code, out.getvalue().decode(), err.getvalue())


def ndjson(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def archived_data(flavor: str, tmp_path: Path) -> tuple[str, str, Path]:
    """tests/data's binlogs of a flavor archived into a file store under tmp_path: the flavor (its
    source name), the store's URL and the directory of its binlog objects."""
    from binlake.archive.run import archive
    from binlake.archive.sources import DirSource
    from binlake.archive.stores import open_store

    store = f"file://{tmp_path}/store"
    archive(DirSource(str(DATA / flavor)), open_store(store), flavor)
    return flavor, store, tmp_path / "store" / flavor / "binlogs"
