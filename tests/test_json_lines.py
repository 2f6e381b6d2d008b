"""`scan --rows` writes row changes as JSON lines straight from the row images (the compiled
render); they must be byte for byte what orjson writes for the records the other path builds.

Every file the tests know is scanned both ways, with the default segments and with small ones
(several segments per transaction: the end_segment guess is wrong sometimes and is mended).
"""

from __future__ import annotations

import orjson
import pytest

from binlake.assemble.segments import Segmenter
from binlake.binlog import _rowdecode, fastrows
from tests.support.scanning import PUBLIC, assert_same_items, lines_path, records_path
from tests.test_public_fixtures import READABLE
from tests.test_rowdecode import FILES

SMALL = {"segment_rows": 7, "segment_bytes": 3000}


def _same(paths, **opts) -> bytes:
    got, want = lines_path(paths, **opts), records_path(paths, **opts)
    assert_same_items(got.split(b"\n"), want.split(b"\n"), "line")
    return got


@pytest.mark.parametrize("name", sorted(FILES))
def test_same_lines_on_real_server_files(name):
    before = dict(fastrows.counts)
    out = _same(FILES[name])
    assert fastrows.counts["compiled"] - before["compiled"] > 10  # the render wrote most of them
    small = _same(FILES[name], **SMALL)
    assert small.count(b'"end_segment":false') > 10 and small.count(b'"end_segment":true') > 10
    # the same row changes either way, only cut into more segments
    strip = [orjson.loads(line) for line in small.splitlines()]
    whole = [orjson.loads(line) for line in out.splitlines()]
    keep = ("txn_id", "seq", "before", "after")
    assert [[r[k] for k in keep] for r in strip] == [[r[k] for k in keep] for r in whole]


@pytest.mark.parametrize("name", sorted(READABLE))
def test_same_lines_on_the_public_corpus(name):
    path = PUBLIC / name
    if not path.exists():
        pytest.fail(f"missing from the public corpus: {path}")
    _same([path])
    _same([path], **SMALL)


def test_same_lines_with_the_compiled_decoder_off(monkeypatch):
    # every event then takes the records path inside the lines mode: the lines do not change
    paths = FILES["tests/data/mysql"]
    want = lines_path(paths, **SMALL)
    monkeypatch.setenv("BINLAKE_PURE_PYTHON", "1")
    assert lines_path(paths, **SMALL) == want
    assert records_path(paths, **SMALL) == want


def test_swap_heads_compiled_and_python_agree(monkeypatch):
    lines = b'{"h":false,"a":1}\n{"h":false,"a":"x\\n"}\n'
    want = b'{"h":true,"a":1}\n{"h":true,"a":"x\\n"}\n'
    assert fastrows.swap_heads(lines, len(b'{"h":false'), b'{"h":true') == want
    monkeypatch.setattr(fastrows, "_rowdecode", None)
    assert fastrows.swap_heads(lines, len(b'{"h":false'), b'{"h":true') == want
    with pytest.raises(ValueError, match="^not whole lines$"):
        _rowdecode.swap_heads(b"no newline", 2, b"x")


def test_rows_of_no_bytes_are_declined_not_looped_on():
    # an image with no column present takes no bytes: the compiled paths must not spin on it
    plan = ((("id"), _rowdecode.K_INT32, 0, 0, None),)
    body = b"\x00" * 8
    # Fallback carries no words (the reference path words errors: _rowdecode.c's contract)
    with pytest.raises(_rowdecode.Fallback) as e:
        _rowdecode.decode(body, 0, plan, b"\x00", b"", 0)
    assert e.value.args == ()
    with pytest.raises(_rowdecode.Fallback) as e:
        _rowdecode.render(body, 0, plan, (b'"id":',), b"\x00", b"", 0, b"{", 0, b",", b"}\n")
    assert e.value.args == ()


@pytest.mark.parametrize("guess", [True, False])
def test_wrong_end_segment_guesses_are_mended(monkeypatch, guess):
    # every segment guessed the last (or never): the flush mends each wrong one, and the lines are the same
    monkeypatch.setattr(Segmenter, "likely_last", lambda self, rows, size, end: guess)
    for name in ("tests/data/mysql", "tests/data/mariadb"):
        small = _same(FILES[name], **SMALL)
        assert small.count(b'"end_segment":false') > 10 and small.count(b'"end_segment":true') > 10
