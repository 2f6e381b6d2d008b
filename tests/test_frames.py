"""The compiled frame walk (binlake/binlog/_frames.c) cuts exactly the reference loop's frames.

Every file of the real-server recordings (tests/data, both flavors), the bundled samples and the
public corpus is walked twice, the compiled walk on and off (BINLAKE_PURE_PYTHON=1), and each
frame compared field for field; both are held to the files' own bytes, read here with no binlake
code (each event's place, type and size from its header, its CRC32 with zlib). Damaged copies
(a flipped byte, a cut, a header that cannot be one) give the same frames and then the same
error, naming the same file and offset.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from binlake.binlog import framing
from binlake.binlog.framing import BinlogReader, Frame
from binlake.errors import BinlogError
from tests.support.scanning import DATA, PUBLIC, REPO, headers
from tests.test_public_fixtures import READABLE

SAMPLES = REPO / "binlake" / "samples"
REAL = sorted([*DATA.glob("mysql/binlog.0*"), *DATA.glob("mariadb/binlog.0*"),
               *SAMPLES.glob("*/binlog.0*")])


def _walk(data: bytes, name: str, pure: bool, monkeypatch, **kw) -> tuple[list[tuple], str | None]:
    """Every frame's fields, and the error that ended the walk (None: it read to the end)."""
    out: list[tuple] = []
    with monkeypatch.context() as m:
        m.setenv("BINLAKE_PURE_PYTHON", "1" if pure else "0")
        try:
            reader = BinlogReader(data, name)
            for f in reader.frames(**kw):
                out.append(_fields(f))
        except BinlogError as exc:
            return out, str(exc)
    return out, None


def _fields(f: Frame) -> tuple:
    return (f.pos, f.type, f.timestamp, f.server_id, f.size, f.log_pos, f.flags, f.body_start,
            f.body_end, f.crc_ok, bytes(f.body))


def _both(data: bytes, name: str, monkeypatch, **kw) -> tuple[list[tuple], str | None]:
    fast = _walk(data, name, False, monkeypatch, **kw)
    assert fast == _walk(data, name, True, monkeypatch, **kw)
    return fast


def test_the_compiled_walk_is_built():
    assert framing.compiled(), "binlake.binlog._frames is missing: pip install -e . did not compile it"


@pytest.mark.parametrize("path", REAL, ids=lambda p: str(p.relative_to(REPO)))
def test_same_frames_on_real_server_files(path: Path, monkeypatch):
    data = path.read_bytes()
    frames, error = _both(data, path.name, monkeypatch)
    assert error is None
    # as the file's headers say, every checksum right (zlib over all but the last 4 bytes)
    assert [(f[0], f[1], f[4]) for f in frames] == headers(data)
    for pos, _type, *_, crc_ok, _body in frames[1:]:  # the FORMAT_DESCRIPTION's is checked apart
        end = pos + int.from_bytes(data[pos + 9:pos + 13], "little")
        assert crc_ok and zlib.crc32(data[pos:end - 4]) == int.from_bytes(data[end - 4:end], "little")


@pytest.mark.parametrize("name", sorted(READABLE))
def test_same_frames_on_the_public_corpus(name: str, monkeypatch):
    path = PUBLIC / name
    if not path.exists():
        pytest.fail(f"missing from the public corpus: {path}")
    data = path.read_bytes()
    _both(data, name, monkeypatch)
    _both(data, name, monkeypatch, verify=False)


def _sample() -> bytes:
    return (DATA / "mysql" / "binlog.000002").read_bytes()


def test_a_flipped_byte_fails_that_frame_alone(monkeypatch):
    data = bytearray(_sample())
    pos, _, size = headers(bytes(data))[10]
    data[pos + size - 8] ^= 0xFF
    frames, error = _both(bytes(data), "flipped", monkeypatch)
    assert error is None
    assert [f[0] for f in frames if not f[9]] == [pos]
    assert all(f[9] for f in _both(bytes(data), "flipped", monkeypatch, verify=False)[0])


def test_a_cut_file_gives_the_same_frames_then_the_same_error(monkeypatch):
    data = _sample()
    pos, _, size = headers(data)[20]
    for cut in (pos + 5, pos + size - 1):
        frames, error = _both(data[:cut], "binlog.000002", monkeypatch)
        assert frames[-1][0] + frames[-1][4] == pos
        assert error is not None and error.startswith(f"binlog.000002:{pos}: truncated")


def test_an_impossible_header_gives_the_same_error(monkeypatch):
    data = bytearray(_sample())
    pos, _, _ = headers(bytes(data))[15]
    data[pos + 9:pos + 13] = (7).to_bytes(4, "little")
    frames, error = _both(bytes(data), "binlog.000002", monkeypatch)
    assert frames[-1][0] + frames[-1][4] == pos
    assert error is not None and error.startswith(f"binlog.000002:{pos}: corrupt event header")


def test_a_range_stops_before_the_event_it_cuts(monkeypatch):
    data = _sample()
    at = headers(data)
    start, end = at[3][0], at[12][0] + at[12][2] - 1  # ends inside the 13th event: the walk stops before it
    frames, error = _both(data, "binlog.000002", monkeypatch, start=start, end=end)
    assert error is None and [f[0] for f in frames] == [p for p, _, _ in at[3:12]]


def test_pages_released_every_event_change_nothing(monkeypatch):
    """A walk that releases its pages after every event (each compiled run then one event long)."""
    monkeypatch.setattr(framing, "RELEASE_BYTES", 1)
    path = DATA / "mysql" / "binlog.000002"
    with BinlogReader.open(path) as reader:
        released = [_fields(f)[:10] for f in reader.frames()]
    assert [(f[0], f[1], f[4]) for f in released] == headers(path.read_bytes())
