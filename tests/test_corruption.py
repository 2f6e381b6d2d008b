"""Bad input: truncation at every event boundary and inside events, flipped bytes, wrong
magic, empty files, random bytes. Nothing read before the damage is lost; the damage
is reported as an anomaly naming file and offset, or as one fatal line."""

from __future__ import annotations

import random

import pytest

from binlake.binlog import constants as c
from binlake.binlog.framing import BinlogReader
from tests.support.scanning import DATA, PUBLIC, ndjson, run_cli, scan

REAL_FILES = [
    PUBLIC / "Percona-Lab__percona-binlog-server/data_80045_gtid/binlog.000001",  # GTID, CRC32
    PUBLIC / "blackbeam__rust_mysql_common/transaction_compression.000001",      # payload
    PUBLIC / "blackbeam__rust_mysql_common/mariadb-bin.000001",                  # MariaDB
]


def generated_files() -> list:
    return sorted(p for p in DATA.glob("*/binlog.0*") if p.stat().st_size < 300_000)[:4]


def cut_points(path):
    with BinlogReader.open(path) as r:
        frames = list(r.frames())
        first = r.first_event_pos
    fde_end = frames[0].end
    bounds = [f.pos for f in frames] + [frames[-1].end]
    inside = [f.pos + max(1, f.size // 2) for f in frames] + [f.pos + 5 for f in frames]
    return first, fde_end, sorted(set(bounds + inside))


def copy_as(tmp_path, path, data: bytes, tag: str):
    """A damaged copy under the original name, so records compare field for field."""
    out = tmp_path / tag / path.name
    out.parent.mkdir()
    out.write_bytes(data)
    return out


def truncated_copy(tmp_path, path, n):
    return copy_as(tmp_path, path, path.read_bytes()[:n], f"cut{n}")


@pytest.mark.parametrize("path", REAL_FILES + generated_files(), ids=lambda p: p.name)
def test_truncation_everywhere(tmp_path, path):
    full = scan(path)["transaction"]
    _, fde_end, cuts = cut_points(path)
    with BinlogReader.open(path) as r:
        frames = list(r.frames())
    first_event_end = {f.pos: f.end for f in frames}
    for n in cuts:
        if n < fde_end:
            continue
        out = scan(truncated_copy(tmp_path, path, n))
        txns = out["transaction"]
        whole = [t for t in full if t["end_pos"] <= n]
        assert [t for t in txns if t["outcome"] != "incomplete"] == whole, n
        open_txn = [t for t in full if t["start_pos"] < n < t["end_pos"]]
        incomplete = [t for t in txns if t["outcome"] == "incomplete"]
        # A transaction is open once its first event was read whole.
        started = [t for t in open_txn if first_event_end[t["start_pos"]] <= n]
        assert [t["start_pos"] for t in incomplete] == [t["start_pos"] for t in started], n
        # Where the cut falls says what the reader must report (the intact file's events and
        # transactions): inside a transaction, one TRUNCATED from its start; inside an event
        # outside any, one TRUNCATED from that event; between events outside any, nothing.
        cut_event = [f for f in frames if f.pos < n < f.end]
        anomalies = [(a["code"], a["start_pos"], a["end_pos"]) for a in out["anomaly"]]
        if open_txn:
            assert anomalies == [("TRUNCATED", open_txn[0]["start_pos"], n)], n
        elif cut_event:
            assert anomalies == [("TRUNCATED", cut_event[0].pos, n)], n
        else:
            assert anomalies == [], n
        # row changes of the incomplete transaction are not presented
        ids = {t["txn_id"] for t in incomplete}
        assert not [r for r in out["row_change"] if r["txn_id"] in ids]


@pytest.mark.parametrize("path", REAL_FILES[:1], ids=lambda p: p.name)
def test_truncated_inside_format_description_is_fatal(tmp_path, path):
    cut = truncated_copy(tmp_path, path, 40)
    proc = run_cli("scan", str(cut))
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"{cut}:4: truncated FORMAT_DESCRIPTION event: 122 bytes announced, 36 in file"


def test_flipped_byte_in_a_row_event(tmp_path):
    path = REAL_FILES[0]
    full = scan(path)
    with BinlogReader.open(path) as r:
        rows_event = next(f for f in r.frames() if f.type == 30)
    data = bytearray(path.read_bytes())
    data[rows_event.pos + 25] ^= 0x40
    out = scan(copy_as(tmp_path, path, bytes(data), "flipped"))
    (mismatch,) = out["anomaly"]
    assert mismatch["code"] == "CHECKSUM_MISMATCH"
    assert (mismatch["start_pos"], mismatch["end_pos"]) == (rows_event.pos, rows_event.end)
    hit = [t for t in out["transaction"] if t["start_pos"] < rows_event.pos < t["end_pos"]]
    assert [t["outcome"] for t in hit] == ["incomplete"]
    others = [t for t in out["transaction"] if t not in hit]
    assert others == [t for t in full["transaction"] if not t["start_pos"] < rows_event.pos < t["end_pos"]]


def test_flipped_byte_in_an_event_size(tmp_path):
    path = REAL_FILES[0]
    with BinlogReader.open(path) as r:
        frames = list(r.frames())
    victim = frames[len(frames) // 2]
    data = bytearray(path.read_bytes())
    data[victim.pos + 11] ^= 0x10  # event_size (bytes 9-12, little-endian) grows by 1 MiB: runs past the end
    bad = copy_as(tmp_path, path, bytes(data), "size")
    proc = run_cli("scan", "--anomalies", str(bad))
    assert proc.returncode == 0
    records = ndjson(proc.stdout)
    # The intact file says which transaction holds the victim; the damage made, what is wrong with it.
    (holder,) = [t for t in scan(path)["transaction"] if t["start_pos"] <= victim.pos < t["end_pos"]]
    (anomaly,) = [r for r in records if r["record"] == "anomaly"]
    assert (anomaly["code"], anomaly["start_pos"], anomaly["end_pos"]) == ("TRUNCATED", holder["start_pos"], len(data))
    assert anomaly["detail"] == (f"{bad}:{victim.pos}: truncated {c.event_name(victim.type)} event: "
                                 f"{victim.size + (1 << 20)} bytes announced, {len(data) - victim.pos} in file")
    last = [r for r in records if r["record"] == "transaction"][-1]
    assert (last["start_pos"], last["outcome"]) == (holder["start_pos"], "incomplete")


@pytest.mark.parametrize("content,reason", [
    (b"", ":0: empty file: not a binlog"),
    (b"\xfebim" + b"\0" * 200, ":0: not a binlog file: magic fe 62 69 6d"),
    (b"GIF89a" + b"\0" * 100, ":0: not a binlog file: magic 47 49 46 38"),
])
def test_not_a_binlog(tmp_path, content, reason):
    f = tmp_path / "bad.bin"
    f.write_bytes(content)
    proc = run_cli("scan", str(f))
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.strip().startswith(f"{f}{reason}")


def test_random_bytes(tmp_path):
    rnd = random.Random(7)
    for i in range(20):
        f = tmp_path / f"random{i}"
        f.write_bytes(bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 4000))))
        proc = run_cli("scan", str(f))
        assert proc.returncode == 1
        assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"{f}:0: ")


def test_random_bytes_after_a_valid_header(tmp_path):
    """Garbage after a real FORMAT_DESCRIPTION: anomalies, never a crash."""
    head = REAL_FILES[0].read_bytes()[:126]
    rnd = random.Random(11)
    for i in range(30):
        f = tmp_path / f"garbage{i}"
        f.write_bytes(head + bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 3000))))
        proc = run_cli("scan", "--rows", "--anomalies", str(f))
        assert "Traceback" not in proc.stderr
        assert proc.returncode == 0, proc.stderr
        assert '"record":"anomaly"' in proc.stdout


def test_missing_file(tmp_path):
    proc = run_cli("scan", str(tmp_path / "nope"))
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"{tmp_path / 'nope'}:0: cannot read: No such file")


def _retype(path, pos, size, new_type, ignorable: bool) -> bytes:
    """A copy of `path` whose event at `pos` has another type, CRC32 recomputed."""
    import struct
    import zlib

    data = bytearray(path.read_bytes())
    data[pos + 4] = new_type
    flags = struct.unpack_from("<H", data, pos + 17)[0] & ~0x80 | (0x80 if ignorable else 0)
    struct.pack_into("<H", data, pos + 17, flags)
    struct.pack_into("<I", data, pos + size - 4, zlib.crc32(data[pos:pos + size - 4]))
    return bytes(data)


def test_unknown_events(tmp_path):
    path = REAL_FILES[0]
    with BinlogReader.open(path) as r:
        prev = next((f for f in r.frames() if f.type == 35), None)  # PREVIOUS_GTIDS
    assert prev is not None
    # flagged ignorable: skipped and counted, no anomaly
    ignorable = copy_as(tmp_path, path, _retype(path, prev.pos, prev.size, 200, True), "ign")
    out = scan(ignorable)
    assert out["anomaly"] == [] and out["transaction"] == scan(path)["transaction"]
    # not ignorable: an UNKNOWN_EVENT anomaly naming file and offset, everything else read
    unknown = copy_as(tmp_path, path, _retype(path, prev.pos, prev.size, 201, False), "unk")
    out = scan(unknown)
    (a,) = out["anomaly"]
    assert (a["code"], a["severity"], a["start_pos"]) == ("UNKNOWN_EVENT", "warning", prev.pos)
    assert a["detail"].startswith(f"{path.name}:{prev.pos}: unknown event type 201")
    assert out["transaction"] == scan(path)["transaction"]
