"""Bad input: truncation at every event boundary and inside events, flipped bytes, wrong
magic, empty files, random bytes. Nothing read before the damage is lost; the damage
is reported as an anomaly naming file and offset, or as one fatal line.

Where the expectations come from: the damage each test makes (the offset it makes it at, the
bytes it leaves) and the intact file's events, read from their raw headers
(tests.support.scanning.headers), never from binlake. What must survive a damage is the intact
file's transactions: for the recorded workloads they are held here to the workload's record of
them (ground_truth.json); for the public files, test_public_fixtures holds them to the corpus.
Event type codes and names are MySQL's (`Log_event_type` in binlog_event.h, as mysqlbinlog names
them, without `_EVENT`).
"""

from __future__ import annotations

import errno
import os
import random
import struct
import zlib

import pytest

from tests.support.scanning import DATA, PUBLIC, headers, ndjson, run_cli, scan
from tests.support.truth import recorded_spans

REAL_FILES = [
    PUBLIC / "Percona-Lab__percona-binlog-server/data_80045_gtid/binlog.000001",  # GTID, CRC32
    PUBLIC / "blackbeam__rust_mysql_common/transaction_compression.000001",      # payload
    PUBLIC / "blackbeam__rust_mysql_common/mariadb-bin.000001",                  # MariaDB
]
FORMAT_DESCRIPTION, XID, INCIDENT, WRITE_ROWS, PREVIOUS_GTIDS = 15, 16, 26, 30, 35
MAGIC = "fe 62 69 6e"  # a binlog file's first four bytes


def generated_files() -> list:
    return sorted(p for p in DATA.glob("*/binlog.0*") if p.stat().st_size < 300_000)[:4]


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
    if path.is_relative_to(DATA):
        assert [(t["start_pos"], t["end_pos"]) for t in full] == recorded_spans(path)
    events = headers(path.read_bytes())
    fde_end = events[0][0] + events[0][2]
    # every event's start and end, its middle, and 5 bytes into its header
    cuts = sorted({p for pos, _, size in events for p in (pos, pos + size, pos + max(1, size // 2), pos + 5)})
    event_end = {pos: pos + size for pos, _, size in events}
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
        started = [t for t in open_txn if event_end[t["start_pos"]] <= n]
        assert [t["start_pos"] for t in incomplete] == [t["start_pos"] for t in started], n
        # Where the cut falls says what the reader must report (the intact file's events and
        # transactions): inside a transaction, one TRUNCATED from its start; inside an event
        # outside any, one TRUNCATED from that event; between events outside any, nothing.
        cut_event = [pos for pos, _, size in events if pos < n < pos + size]
        anomalies = [(a["code"], a["start_pos"], a["end_pos"]) for a in out["anomaly"]]
        if open_txn:
            assert anomalies == [("TRUNCATED", open_txn[0]["start_pos"], n)], n
        elif cut_event:
            assert anomalies == [("TRUNCATED", cut_event[0], n)], n
        else:
            assert anomalies == [], n
        # row changes of the incomplete transaction are not presented
        ids = {t["txn_id"] for t in incomplete}
        assert not [r for r in out["row_change"] if r["txn_id"] in ids]


@pytest.mark.parametrize("path", REAL_FILES[:1], ids=lambda p: p.name)
def test_truncated_inside_format_description_is_fatal(tmp_path, path):
    (pos, type_code, size), *_ = headers(path.read_bytes())
    assert (pos, type_code) == (4, FORMAT_DESCRIPTION)
    cut = truncated_copy(tmp_path, path, 40)
    proc = run_cli("scan", str(cut))
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"{cut}:4: truncated FORMAT_DESCRIPTION event: {size} bytes announced, " \
                                  f"{40 - pos} in file"


def test_flipped_byte_in_a_row_event(tmp_path):
    path = REAL_FILES[0]
    full = scan(path)
    data = bytearray(path.read_bytes())
    pos, _, size = next(e for e in headers(data) if e[1] == WRITE_ROWS)
    data[pos + 25] ^= 0x40
    out = scan(copy_as(tmp_path, path, bytes(data), "flipped"))
    (mismatch,) = out["anomaly"]
    assert (mismatch["code"], mismatch["start_pos"], mismatch["end_pos"], mismatch["detail"]) == \
        ("CHECKSUM_MISMATCH", pos, pos + size, f"{path.name}:{pos}: CRC32 mismatch in WRITE_ROWS event")
    hit = [t for t in out["transaction"] if t["start_pos"] < pos < t["end_pos"]]
    assert [t["outcome"] for t in hit] == ["incomplete"]
    others = [t for t in out["transaction"] if t not in hit]
    assert others == [t for t in full["transaction"] if not t["start_pos"] < pos < t["end_pos"]]


def test_flipped_byte_in_an_event_size(tmp_path):
    path = REAL_FILES[0]
    events = headers(path.read_bytes())
    pos, type_code, size = events[len(events) // 2]
    assert type_code == XID
    data = bytearray(path.read_bytes())
    data[pos + 11] ^= 0x10  # event_size (bytes 9-12, little-endian) grows by 1 MiB: runs past the end
    bad = copy_as(tmp_path, path, bytes(data), "size")
    proc = run_cli("scan", "--anomalies", str(bad))
    assert proc.returncode == 0
    records = ndjson(proc.stdout)
    # The intact file says which transaction holds the victim; the damage made, what is wrong with it.
    (holder,) = [t for t in scan(path)["transaction"] if t["start_pos"] <= pos < t["end_pos"]]
    (anomaly,) = [r for r in records if r["record"] == "anomaly"]
    assert (anomaly["code"], anomaly["start_pos"], anomaly["end_pos"]) == ("TRUNCATED", holder["start_pos"], len(data))
    assert anomaly["detail"] == (f"{bad}:{pos}: truncated XID event: "
                                 f"{size + (1 << 20)} bytes announced, {len(data) - pos} in file")
    last = [r for r in records if r["record"] == "transaction"][-1]
    assert (last["start_pos"], last["outcome"]) == (holder["start_pos"], "incomplete")


@pytest.mark.parametrize("content,reason", [
    (b"", ":0: empty file: not a binlog"),
    (b"\xfebim" + b"\0" * 200, f":0: not a binlog file: magic fe 62 69 6d, expected {MAGIC}"),
    (b"GIF89a" + b"\0" * 100, f":0: not a binlog file: magic 47 49 46 38, expected {MAGIC}"),
])
def test_not_a_binlog(tmp_path, content, reason):
    f = tmp_path / "bad.bin"
    f.write_bytes(content)
    proc = run_cli("scan", str(f))
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", f"{f}{reason}\n")


def test_random_bytes(tmp_path):
    rnd = random.Random(7)
    for i in range(20):
        f = tmp_path / f"random{i}"
        data = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 4000)))
        f.write_bytes(data)
        proc = run_cli("scan", str(f))
        # the seeded files are all of 4 bytes or more, none starting with the magic
        magic = " ".join(f"{b:02x}" for b in data[:4])
        assert (proc.returncode, proc.stderr) == (1, f"{f}:0: not a binlog file: magic {magic}, expected {MAGIC}\n")


def test_random_bytes_after_a_valid_header(tmp_path):
    """Garbage after a real FORMAT_DESCRIPTION: one anomaly from where the garbage starts, never a
    crash. The garbage's first event header announces a size (its bytes 9-12) that runs past the
    file's end, in every seeded case: the reader must say so and stop there."""
    path = REAL_FILES[0]
    (pos, _, size), *_ = headers(path.read_bytes())
    head = path.read_bytes()[:pos + size]
    rnd = random.Random(11)
    for i in range(30):
        f = tmp_path / f"garbage{i}"
        garbage = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 3000)))
        f.write_bytes(head + garbage)
        announced = int.from_bytes(garbage[9:13], "little")
        assert len(garbage) >= 19 and announced > len(garbage), "the seeded garbage no longer runs past the end"
        proc = run_cli("scan", "--rows", "--anomalies", str(f))
        assert proc.returncode == 0, proc.stderr
        (anomaly,) = ndjson(proc.stdout)
        assert (anomaly["record"], anomaly["code"], anomaly["start_pos"], anomaly["end_pos"]) == \
            ("anomaly", "TRUNCATED", len(head), len(head) + len(garbage))
        assert anomaly["detail"].startswith(f"{f}:{len(head)}: truncated ")
        assert anomaly["detail"].endswith(f" event: {announced} bytes announced, {len(garbage)} in file")


def test_missing_file(tmp_path):
    proc = run_cli("scan", str(tmp_path / "nope"))
    assert (proc.returncode, proc.stderr) == (1, f"{tmp_path / 'nope'}:0: cannot read: {os.strerror(errno.ENOENT)}\n")


def _retype(path, pos, size, new_type, ignorable: bool) -> bytes:
    """A copy of `path` whose event at `pos` has another type, CRC32 recomputed."""
    data = bytearray(path.read_bytes())
    data[pos + 4] = new_type
    flags = struct.unpack_from("<H", data, pos + 17)[0] & ~0x80 | (0x80 if ignorable else 0)
    struct.pack_into("<H", data, pos + 17, flags)
    struct.pack_into("<I", data, pos + size - 4, zlib.crc32(data[pos:pos + size - 4]))
    return bytes(data)


def test_unknown_events(tmp_path):
    path = REAL_FILES[0]
    pos, _, size = next(e for e in headers(path.read_bytes()) if e[1] == PREVIOUS_GTIDS)
    # flagged ignorable (LOG_EVENT_IGNORABLE_F, 0x80): skipped and counted, no anomaly
    ignorable = copy_as(tmp_path, path, _retype(path, pos, size, 200, True), "ign")
    out = scan(ignorable)
    assert out["anomaly"] == [] and out["transaction"] == scan(path)["transaction"]
    # not ignorable: an UNKNOWN_EVENT anomaly naming file and offset, everything else read
    unknown = copy_as(tmp_path, path, _retype(path, pos, size, 201, False), "unk")
    out = scan(unknown)
    (a,) = out["anomaly"]
    assert (a["code"], a["severity"], a["start_pos"], a["end_pos"]) == ("UNKNOWN_EVENT", "warning", pos, pos + size)
    assert a["detail"] == f"{path.name}:{pos}: unknown event type 201 ({size} bytes) carried as opaque"
    assert out["transaction"] == scan(path)["transaction"]


def test_a_damaged_event_typed_start_encryption_is_a_checksum_anomaly(tmp_path):
    """A MariaDB START_ENCRYPTION event (type 164) makes a file unreadable; one whose CRC32 fails is
    damage, not encryption: the reader reports the mismatch and reads on."""
    path = REAL_FILES[0]
    pos, _, size = next(e for e in headers(path.read_bytes()) if e[1] == PREVIOUS_GTIDS)
    data = bytearray(_retype(path, pos, size, 164, False))
    data[pos + size - 1] ^= 0xFF  # its CRC32 no longer matches
    out = scan(copy_as(tmp_path, path, bytes(data), "enc"))
    (a,) = out["anomaly"]
    assert (a["code"], a["start_pos"], a["end_pos"]) == ("CHECKSUM_MISMATCH", pos, pos + size)
    assert a["detail"] == f"{path.name}:{pos}: CRC32 mismatch in START_ENCRYPTION event"
    assert out["transaction"] == scan(path)["transaction"]
    # with its CRC32 intact it is the encryption it says: one fatal line
    whole = copy_as(tmp_path, path, _retype(path, pos, size, 164, False), "enc-ok")
    proc = run_cli("scan", str(whole))
    assert (proc.returncode, proc.stderr.strip()) == (
        1, f"{whole}:{pos}: encrypted binlog: not supported (MariaDB encrypt_binlog)")


def test_an_incident_inside_a_transaction_cuts_it(tmp_path):
    """An INCIDENT event (here a WRITE_ROWS event retyped, CRC32 made good) where a transaction is
    open: events were lost there, so that transaction cannot be whole. The incident is one anomaly
    over the transaction's bytes up to it; the parser resets, as at any error, so the transaction's
    events after it belong to none; every other transaction is read as before."""
    path = REAL_FILES[0]
    pos, _, size = next(e for e in headers(path.read_bytes()) if e[1] == WRITE_ROWS)
    number = int.from_bytes(path.read_bytes()[pos + 19:pos + 21], "little")  # what its body reads as
    out = scan(copy_as(tmp_path, path, _retype(path, pos, size, INCIDENT, False), "incident"))
    full = scan(path)["transaction"]
    (holder,) = [t for t in full if t["start_pos"] < pos < t["end_pos"]]
    incident, rest = out["anomaly"]
    assert (incident["code"], incident["start_pos"], incident["end_pos"]) == \
        ("INCIDENT", holder["start_pos"], pos + size)
    assert incident["detail"].startswith(f"{path.name}:{pos}: INCIDENT event, incident {number} ")
    assert incident["detail"].endswith("; the transaction open there cannot be whole")
    assert (rest["code"], rest["start_pos"], rest["end_pos"]) == ("BOUNDARY_TRANSITION", pos + size, holder["end_pos"])
    cut = [t for t in out["transaction"] if t["start_pos"] == holder["start_pos"]]
    assert [(t["outcome"], t["end_pos"]) for t in cut] == [("incomplete", pos)]
    assert [t for t in out["transaction"] if t not in cut] == [t for t in full if t is not holder]


def test_an_invalid_ddl_event_is_replayed_by_no_reader(tmp_path):
    """A CREATE TABLE whose db_len runs past its event (CRC32 recomputed, so only the servers'
    own check finds it, "Found invalid event"): the scan reports it and the schema history's
    reader (the Spark job's DDL pass) skips it too, so both read the tables after it alike."""
    from binlake.binlog.framing import BinlogReader
    from binlake.schema.replay import reader_ddl

    path = DATA / "mysql" / "binlog.000001"
    data = bytearray(path.read_bytes())
    # the workload's second statement (tests/data/mysql/mysqlbinlog.txt: `CREATE TABLE kv` at 414)
    pos, type_code, size = next(e for e in headers(bytes(data)) if e[0] == 414)
    assert type_code == 2 and b"CREATE TABLE kv" in data[pos:pos + size]  # QUERY
    data[pos + 19 + 8] = 250  # db_len: 250 bytes of name where the event has fewer left
    struct.pack_into("<I", data, pos + size - 4, zlib.crc32(data[pos:pos + size - 4]))
    bad = copy_as(tmp_path, path, bytes(data), "ddl")
    intact = [s[:3] for s in reader_ddl(BinlogReader(path.read_bytes(), path.name))]
    damaged = [s[:3] for s in reader_ddl(BinlogReader(bytes(data), path.name))]
    assert damaged == [s for s in intact if s[0] != 414] and len(damaged) == len(intact) - 1
    (a,) = scan(bad)["anomaly"]  # the transaction the statement was (its GTID at 337) cannot be whole
    assert (a["code"], a["start_pos"]) == ("DECODE_ERROR", 337)
    assert a["detail"].startswith(f"{path.name}:414: cannot decode QUERY event: status_vars_len 45 and db_len 250 ")


def test_a_damaged_compressed_query_is_a_decode_error(tmp_path):
    """MariaDB's log_bin_compress: a QUERY_COMPRESSED (165) whose zlib stream is damaged is the
    event's DECODE_ERROR beside its CHECKSUM_MISMATCH, and the scan goes on (it raised zlib.error)."""
    path = DATA / "mariadb" / "binlog.000002"
    data = bytearray(path.read_bytes())
    pos, _, size = next(e for e in headers(data) if e[1] == 165)
    data[pos + size - 10] ^= 0xFF  # inside the zlib stream, before the CRC32
    bad = copy_as(tmp_path, path, bytes(data), "zlib")
    proc = run_cli("scan", "--anomalies", str(bad))
    assert proc.returncode == 0, proc.stderr
    codes = {(r["code"], r["start_pos"]) for r in ndjson(proc.stdout) if r["record"] == "anomaly"}
    assert ("CHECKSUM_MISMATCH", pos) in codes
    assert any(code in ("DECODE_ERROR", "BOUNDARY_TRANSITION") for code, _ in codes), codes
