"""The archive's compiled copy loop (`_eventruns.c`) against the reference path it stands in for.

Archives are made twice, with the loop on and with `BINLAKE_PURE_PYTHON=1`, from files and from
real servers, with reads of every size down to a few bytes: objects and manifests must be the
same, byte for byte, and a damaged file must fail with the same words at the same offset.
"""

from __future__ import annotations

import json
import random
import shutil
import uuid
import zlib

import pytest

import binlake.archive.sources as sources
from binlake.archive import verify
from binlake.archive.index import vouched_entry
from binlake.archive.run import archive
from binlake.archive.sources import DirSource, MySQLSource
from binlake.archive.stores import FileStore
from binlake.binlog import constants as c
from binlake.binlog.framing import BinlogReader
from binlake.errors import BinlogError
from tests.support.scanning import DATA, headers


def _archive(source, root, monkeypatch, pure: bool, read_size: int | None = None) -> tuple[dict, dict, dict]:
    """(objects, manifests, bytes checked per path) of an archive of `source` into a new store."""
    with monkeypatch.context() as m:
        m.setenv("BINLAKE_PURE_PYTHON", "1" if pure else "0")
        if read_size:
            m.setattr(sources, "READ_SIZE", read_size)
        before = dict(verify.checked), dict(sources.dumped)
        store = FileStore(str(root))
        archive(source, store, "s")
        counted = {f"checked_{k}": verify.checked[k] - before[0][k] for k in verify.checked}
        counted |= {f"dumped_{k}": sources.dumped[k] - before[1][k] for k in sources.dumped}
    objects = {k.rsplit("/", 1)[1]: store.get(k) for k in store.keys("s/binlogs")}
    manifests = {}
    for k in store.keys("s/manifests"):
        m = json.loads(store.get(k))
        del m["archived_at"]
        manifests[k.rsplit("/", 1)[1]] = m
    return objects, manifests, counted


@pytest.mark.parametrize("flavor", ["mysql", "mariadb"])
@pytest.mark.parametrize("read_size", [None, 4096, 7])
def test_dir_source_same_as_reference(tmp_path, monkeypatch, flavor, read_size):
    src = DirSource(str(DATA / flavor))
    objects, manifests, counted = _archive(src, tmp_path / "c", monkeypatch, False, read_size)
    ref_objects, ref_manifests, ref_counted = _archive(src, tmp_path / "r", monkeypatch, True)
    assert objects == ref_objects == {p.name: p.read_bytes() for p in (DATA / flavor).glob("binlog.0*")}
    assert manifests == ref_manifests
    assert ref_counted["checked_compiled"] == 0
    total = sum(len(b) - 4 for b in objects.values())
    assert counted["checked_compiled"] + counted["checked_reference"] == ref_counted["checked_reference"] == total
    if flavor == "mysql":  # MySQL 9.7's GTIDs give their transactions' lengths: the loop walks those
        assert counted["checked_compiled"] > total / 3
    else:  # MariaDB's GTID events do not: every event is walked through the boundary parser
        assert counted["checked_compiled"] == 0


def _vouched_events(path, where: str) -> list:
    """(pos, size) of events of the transactions whose GTID events give their lengths: each one's
    GTID event, its last event, or the events strictly between."""
    out = []
    with BinlogReader.open(path) as r:
        frames = list(r.frames(verify=False))
        spans = [(v.start, v.start + v.length) for v in (vouched_entry(f, path.name) for f in frames) if v]
    for start, end in spans:
        inside = [(f.pos, f.size) for f in frames if start <= f.pos and f.end <= end]
        out += {"gtid": inside[:1], "last": inside[-1:], "middle": inside[1:-1]}[where]
    return out


@pytest.mark.parametrize("where", ["gtid", "middle", "last"])
@pytest.mark.parametrize("damage", ["crc", "log_pos", "truncated"])
def test_damage_inside_a_vouched_transaction(tmp_path, monkeypatch, damage, where):
    """The loop stops before a damaged event, whether it walks a whole transaction or the rest of
    one; the reference path words the error, so it is the same."""
    name = "binlog.000001"
    events = _vouched_events(DATA / "mysql" / name, where)
    assert len(events) > 10
    pos, size = events[len(events) // 2]
    data = bytearray((DATA / "mysql" / name).read_bytes())
    if damage == "crc":
        data[pos + 19 + 3] ^= 0x40
    elif damage == "log_pos":
        data[pos + 13] ^= 0x01
    else:
        data = data[:pos + size // 2]
    if damage == "log_pos" and where == "middle":
        # the CRC covers the header: without it, the position check alone stops the loop
        from binlake.archive import _eventruns

        first = 4 + int.from_bytes(data[4 + 9:4 + 13], "little")
        assert _eventruns.checked(bytes(data), first, len(data), first, False, 1 << 62)[0] == pos
    errors = []
    for pure in (False, True):
        src = tmp_path / f"src-{pure}"
        src.mkdir()
        (src / name).write_bytes(bytes(data))
        shutil.copy(DATA / "mysql" / "binlog.000002", src / "binlog.000002")  # so 000001 counts as rotated
        with pytest.raises(BinlogError) as e:
            _archive(DirSource(str(src)), tmp_path / f"store-{pure}", monkeypatch, pure)
        errors.append(str(e.value))
        assert FileStore(str(tmp_path / f"store-{pure}")).keys("s") == []
    assert errors[0] == errors[1]
    assert errors[0].startswith(f"{name}:{pos}: ")


@pytest.mark.parametrize("name", ["mysql_server", "mariadb_server"])
def test_server_source_same_as_reference(request, tmp_path, monkeypatch, name):
    """From a real server: the runs cut out of the dump's packets (read 1 MiB, 4 KiB or 5 bytes
    at a time) make the same objects and manifests as the packets taken one by one."""
    server = request.getfixturevalue(name)
    db = f"runs_{uuid.uuid4().hex[:12]}"  # of this test alone
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
        cur.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v VARCHAR(200))")
        for txn in range(20):
            cur.execute("BEGIN")
            for i in range(txn + 1):
                cur.execute(f"INSERT INTO {db}.t VALUES (%s, REPEAT('r', %s))", (txn * 100 + i, 10 * i))
            cur.execute("COMMIT")
        cur.execute(f"DROP DATABASE {db}")
        cur.execute("FLUSH BINARY LOGS")
    src = MySQLSource(f"mysql://root@127.0.0.1:{server.port}")
    ref_objects, ref_manifests, ref_counted = _archive(src, tmp_path / "r", monkeypatch, True)
    assert ref_counted["dumped_compiled"] == 0 and ref_counted["checked_compiled"] == 0
    assert ref_objects == {n: (server.binlog_dir / n).read_bytes() for n in ref_objects}
    assert len(ref_objects) == len(src.files())
    for read_size in (None, 4096, 5):
        objects, manifests, counted = _archive(src, tmp_path / f"c{read_size}", monkeypatch, False, read_size)
        assert objects == ref_objects
        assert manifests == ref_manifests
        assert counted["dumped_compiled"] > counted["dumped_reference"]
        if server.flavor == "mysql":
            assert counted["checked_compiled"] > 0


@pytest.mark.parametrize("tables", [True, False])
def test_crc_as_zlib_gives_it(tables):
    """The binlog's CRC32 (binlog/_crc32.h) from the tables alone, or folded with the CPU's
    carry-less multiply (where it has one), is zlib.crc32's for every length and alignment; every
    event of the test files passes, and one flipped bit anywhere in an event stops the walk right
    before it."""
    from binlake.archive import _eventruns

    was = _eventruns.tables()
    _eventruns.tables(tables)
    try:
        assert _eventruns.tables() is tables
        rnd = random.Random(148)
        data = rnd.randbytes(1 << 20)
        for n in [*range(300), *(rnd.randrange(1 << 19) for _ in range(200))]:
            at = rnd.randrange(17)
            piece = memoryview(data)[at:at + n]
            assert _eventruns.crc32(piece) == zlib.crc32(piece), (n, at)
        for path in sorted((DATA / "mysql").glob("binlog.0*")) + sorted((DATA / "mariadb").glob("binlog.0*")):
            data = path.read_bytes()
            with BinlogReader.open(path) as r:
                crc = r.fde.has_checksum
            first = 4 + int.from_bytes(data[4 + 9:4 + 13], "little")  # after the FORMAT_DESCRIPTION
            assert crc
            assert _eventruns.checked(data, first, len(data), first, crc, 1 << 62)[:2] == (len(data), len(data))
            for k in range(first, len(data), 997):  # a bit flipped in the event that holds byte k
                damaged = bytearray(data)
                damaged[k] ^= 0x10
                stop = _eventruns.checked(damaged, first, len(data), first, crc, 1 << 62)[0]
                assert stop <= k < stop + int.from_bytes(data[stop + 9:stop + 13], "little")
    finally:
        _eventruns.tables(was)


class _Counting:
    """The compiled loop, counting the whole transactions `txns` gave by kind (GTID / anonymous)."""

    def __init__(self) -> None:
        from binlake.archive import _eventruns

        self.loop, self.kinds = _eventruns, {"gtid": 0, "anonymous": 0}

    def __getattr__(self, name: str):
        return getattr(self.loop, name)

    def txns(self, *args):
        out = self.loop.txns(*args)
        for entry in out[4]:
            self.kinds["gtid" if entry[2] else "anonymous"] += 1
        return out


def _verified(path, loop, data: bytes | None = None) -> dict | str:
    """The manifest facts of a whole file (or of `data` under its name) verified in one run, or
    the error it raised. Any other exception fails the test."""
    data = path.read_bytes() if data is None else data
    v = verify.Verifier(path.name)
    v._loop = loop  # noqa: SLF001 - None: the reference path alone
    try:
        v.magic(data[:4])
        v.events(data[4:])
        v.finish()
    except BinlogError as e:
        return str(e)
    return v.manifest() | {"last": (v.last_event_ts, v.last_event_type)}


def test_public_corpus_same_as_reference(public_binlogs):
    """Every file of the public corpus, MySQL 5.x to 9.x and MariaDB, damaged ones too: the loop's
    manifest (or error) is the reference path's, and it did count off whole transactions named by
    their GTIDs and anonymous ones (named by where they are)."""
    loop = _Counting()
    files = sorted(p for p in public_binlogs.rglob("*") if p.is_file() and p.suffix != ".md")
    assert len(files) > 30
    for path in files:
        assert _verified(path, loop) == _verified(path, None), path
    assert loop.kinds["gtid"] > 0 and loop.kinds["anonymous"] > 0



def _recrc(data: bytearray, pos: int) -> None:
    """Make the event at pos match its CRC32 again, as a server that wrote it damaged would."""
    size = int.from_bytes(data[pos + 9:pos + 13], "little")
    data[pos + size - 4:pos + size] = zlib.crc32(bytes(data[pos:pos + size - 4])).to_bytes(4, "little")


def _damaged(tmp_path, data: bytearray, pos: int, at: int, value: int, loop: bool) -> dict | str:
    """Verify the file with byte `at` of the event at `pos` set to `value`, its CRC32 made good."""
    data[pos + at] = value
    _recrc(data, pos)
    path = tmp_path / "binlog.000001"
    path.write_bytes(bytes(data))
    return _verified(path, _Counting() if loop else None)


def _size(data: bytes, pos: int) -> int:
    return int.from_bytes(data[pos + 9:pos + 13], "little")


@pytest.mark.parametrize("loop", [True, False])
@pytest.mark.parametrize(("event", "words"), [
    (c.FORMAT_DESCRIPTION_EVENT, "corrupt FORMAT_DESCRIPTION event: unknown checksum algorithm 127"),
    (c.PREVIOUS_GTIDS_LOG_EVENT, "cannot decode PREVIOUS_GTIDS event: "),
])
def test_damage_the_crc_does_not_catch_is_named(tmp_path, loop, event, words):
    """An event the server wrote damaged (its CRC32 matches) that the manifest cannot do without
    fails with the file and the event's offset, not a decoder's bare exception."""
    data = bytearray((DATA / "mysql" / "binlog.000001").read_bytes())
    pos = next(pos for pos, type_code, _ in headers(bytes(data)) if type_code == event)
    # the FORMAT_DESCRIPTION's checksum algorithm (its last byte before the CRC); the number of
    # source ids a PREVIOUS_GTIDS event lists (its first byte): far more than it holds
    at = _size(data, pos) - 5 if event == c.FORMAT_DESCRIPTION_EVENT else 19 + 3
    got = _damaged(tmp_path, data, pos, at, 0x7F, loop)
    assert isinstance(got, str) and got.startswith(f"binlog.000001:{pos}: {words}"), got


@pytest.mark.parametrize("loop", [True, False])
def test_undecodable_gtid_event_is_walked_not_vouched(tmp_path, loop):
    """A GTID event whose transaction_length cannot be read (a bad packed-integer prefix, CRC32
    intact) vouches for nothing: its transaction is walked through the boundary parser, as a
    5.7 server's is, and named by where it is; the others keep their GTIDs."""
    src = DATA / "mysql" / "binlog.000001"
    data = bytearray(src.read_bytes())
    whole = _verified(src, None)
    named = [e[0] for e in whole["transactions"] if ":" in e[2]]
    pos = named[len(named) // 2]
    at = 19 + 42  # after flags, sid, gno and the logical timestamps: the commit time(s), then the length
    at += 14 if data[pos + at + 6] & 0x80 else 7
    got = _damaged(tmp_path, data, pos, at, 0xFB, loop)
    assert isinstance(got, dict), got
    assert got["transaction_count"] == whole["transaction_count"]
    changed = [(a, b) for a, b in zip(whole["transactions"], got["transactions"], strict=True) if a != b]
    assert [a[0] for a, _ in changed] == [pos]
    assert ":" not in changed[0][1][2]


def test_seeded_damage_same_as_reference():
    """Seeded random damage to the events of the MySQL and MariaDB test files, each event's CRC32
    made good again half of the time (so that decoders see it): the loop's manifest or error is
    always the reference path's, and an error is always one naming the file and offset."""
    rnd = random.Random(20261124)
    files = sorted((DATA / "mysql").glob("binlog.0*")) + sorted((DATA / "mariadb").glob("binlog.0*"))
    kinds: dict[str, int] = {"manifest": 0, "error": 0}
    for _ in range(600):
        path = rnd.choice(files)
        data = bytearray(path.read_bytes())
        pos = rnd.choice([pos for pos, _, _ in headers(bytes(data))])
        size = _size(data, pos)
        for _ in range(rnd.randint(1, 3)):
            at = pos + (rnd.randrange(19, size - 4) if size > 23 and rnd.random() < 0.9 else rnd.randrange(19))
            data[at] = rnd.choice([rnd.randrange(256), 0, 0x7F, 0xFB, 0xFC, 0xFE, 0xFF])
        if rnd.random() < 0.5 and 23 <= _size(data, pos) == size:
            _recrc(data, pos)
        got = _verified(path, _Counting(), bytes(data))
        assert got == _verified(path, None, bytes(data))
        kinds["error" if isinstance(got, str) else "manifest"] += 1
        if isinstance(got, str):
            assert got.startswith(f"{path.name}:"), got
    assert kinds["manifest"] > 50 and kinds["error"] > 50, kinds
