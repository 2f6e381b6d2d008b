"""`binlake archive`: rotated files copied byte for byte, verified, with manifests; reruns copy nothing."""

from __future__ import annotations

import contextlib
import json
import shutil

import boto3
import pytest

from binlake.archive.run import archive
from binlake.archive.sources import REPLICA_IDS, DirSource, MySQLSource, RefusedFile, SourceError
from binlake.archive.stores import FileStore, S3Store, StoreError
from binlake.errors import BinlogError
from tests.support.scanning import DATA, ndjson, run_cli, scan


@pytest.fixture(scope="module")
def mysql_server(mysql_factory):
    """This module's own servers: its tests purge, rotate, kill dump threads and set globals."""
    return mysql_factory()


@pytest.fixture(scope="module")
def mariadb_server(mariadb_factory):
    return mariadb_factory()


def manifests(store, source):
    return {k.rsplit("/", 1)[1][:-5]: json.loads(store.get(k)) for k in store.keys(f"{source}/manifests")}


@pytest.mark.parametrize("flavor", ["mysql", "mariadb"])
def test_dir_source_to_file_store(tmp_path, flavor):
    src = DATA / flavor
    store = FileStore(str(tmp_path / "store"))
    result = archive(DirSource(str(src)), store, flavor)
    names = sorted(p.name for p in src.glob("binlog.0*"))
    assert result.archived == names
    for n in names:
        assert store.get(f"{flavor}/binlogs/{n}") == (src / n).read_bytes()
    for n, m in manifests(store, flavor).items():
        txns = scan(src / n)["transaction"]
        assert m["size"] == (src / n).stat().st_size
        assert m["transaction_count"] == len(txns)
        assert m["transactions"] == [[t["start_pos"], t["end_pos"] - t["start_pos"], t["txn_id"], t["commit_ts"]]
                                     for t in txns]
        if txns:
            assert (m["min_commit_ts"], m["max_commit_ts"]) == (min(t["commit_ts"] for t in txns),
                                                                max(t["commit_ts"] for t in txns))
    # a second run copies nothing
    again = archive(DirSource(str(src)), store, flavor)
    assert (again.archived, sorted(again.skipped)) == ([], names)


def test_manifest_gtid_sets(tmp_path):
    mysql = FileStore(str(tmp_path / "m"))
    archive(DirSource(str(DATA / "mysql")), mysql, "m")
    m = manifests(mysql, "m")
    # file 3's PREVIOUS_GTIDS carries tagged GTIDs: printed as mysqlbinlog prints them
    assert m["binlog.000003"]["previous_gtids"].endswith(":1-68:batch_7:1:blue:1-3")
    assert m["binlog.000001"]["gtids"].endswith(":1-58")
    maria = FileStore(str(tmp_path / "d"))
    archive(DirSource(str(DATA / "mariadb")), maria, "d")
    d = manifests(maria, "d")
    assert d["binlog.000002"]["previous_gtids"] == "0-2-58"
    assert d["binlog.000002"]["gtids"] == "0-2-66,1-2-3,2-2-2"


def test_the_last_open_file_of_a_directory_is_not_archived(tmp_path):
    src = tmp_path / "datadir"
    src.mkdir()
    for n in ("binlog.000001", "binlog.000002"):
        shutil.copy(DATA / "mysql" / n, src / n)
    # binlog.000002 is closed (ROTATE at its end, not in use); cut it to look like the active file
    data = (src / "binlog.000002").read_bytes()
    (src / "binlog.000002").write_bytes(data[:-44])
    assert [f.name for f in DirSource(str(src)).files()] == ["binlog.000001"]


def test_a_corrupt_file_is_never_archived(tmp_path):
    src = tmp_path / "datadir"
    src.mkdir()
    for n in ("binlog.000001", "binlog.000002"):
        shutil.copy(DATA / "mysql" / n, src / n)
    data = bytearray((src / "binlog.000001").read_bytes())
    data[500] ^= 0x01
    (src / "binlog.000001").write_bytes(bytes(data))
    store = FileStore(str(tmp_path / "store"))
    with pytest.raises(BinlogError, match=r"binlog.000001:\d+: CRC32 mismatch"):
        archive(DirSource(str(src)), store, "s")
    assert store.keys("s") == []  # neither a binlog object nor a manifest


@pytest.mark.parametrize("name", ["mysql_server", "mariadb_server"])
def test_server_to_s3_byte_identical(request, name, s3_endpoint):
    server = request.getfixturevalue(name)
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE DATABASE IF NOT EXISTS arch")
        cur.execute("CREATE TABLE IF NOT EXISTS arch.t (id INT PRIMARY KEY, v VARCHAR(200))")
        for i in range(30):
            cur.execute("REPLACE INTO arch.t VALUES (%s, REPEAT('x', 150))", (i,))
            if i % 10 == 9:
                cur.execute("FLUSH BINARY LOGS")
        cur.execute("SHOW BINARY LOGS")
        listed = [(r[0], int(r[1])) for r in cur.fetchall()]
        # a least-privileged replication user
        cur.execute("CREATE USER IF NOT EXISTS 'arch'@'127.0.0.1' IDENTIFIED BY 'S3cret-pw'")
        cur.execute("GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'arch'@'127.0.0.1'")
    boto3.client("s3").create_bucket(Bucket=f"lake-{server.flavor}")
    url = f"s3://lake-{server.flavor}/archive"
    proc = run_cli("-v", "archive", "--source", f"mysql://arch:S3cret-pw@127.0.0.1:{server.port}",
                   "--store", url, "--source-name", "db1")
    assert proc.returncode == 0, proc.stderr
    assert "S3cret-pw" not in proc.stdout + proc.stderr
    (report,) = ndjson(proc.stdout)
    assert report["archived"] == [n for n, _ in listed[:-1]]  # every rotated file, not the active one
    store = S3Store(url)
    for n, size in listed[:-1]:
        copied = store.get(f"db1/binlogs/{n}")
        assert len(copied) == size
        assert copied == (server.binlog_dir / n).read_bytes()
    for n, m in manifests(store, "db1").items():
        assert m["transactions"] == [[t["start_pos"], t["end_pos"] - t["start_pos"], t["txn_id"], t["commit_ts"]]
                                     for t in scan(server.binlog_dir / n)["transaction"]]
    rerun = run_cli("archive", "--source", f"mysql://arch:S3cret-pw@127.0.0.1:{server.port}", "--store", url,
                    "--source-name", "db1")
    assert ndjson(rerun.stdout)[0]["archived"] == []


def test_wrong_password(mysql_server, tmp_path):
    src = MySQLSource(f"mysql://root:nope-wrong@127.0.0.1:{mysql_server.port}")
    with pytest.raises(SourceError) as e:
        src.files()
    assert "access denied" in str(e.value) and "nope-wrong" not in str(e.value)


def test_missing_bucket(s3_endpoint):
    with pytest.raises(StoreError, match="bucket 'no-such-bucket' does not exist"):
        S3Store("s3://no-such-bucket/x").check()


def test_unreachable_server():
    with pytest.raises(SourceError, match=r"mysql://root@127.0.0.1:1: cannot connect"):
        MySQLSource("mysql://root@127.0.0.1:1").files()


@pytest.mark.parametrize("name", ["mysql_server", "mariadb_server"])
def test_purge_gap_is_loud(request, name, tmp_path):
    server = request.getfixturevalue(name)
    store_url = f"file://{tmp_path / 'store'}"
    src = f"mysql://root@127.0.0.1:{server.port}"
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE DATABASE IF NOT EXISTS gap")
        cur.execute("CREATE TABLE IF NOT EXISTS gap.t (id INT PRIMARY KEY)")
        cur.execute("REPLACE INTO gap.t VALUES (1)")
        cur.execute("FLUSH BINARY LOGS")
    first = run_cli("archive", "--source", src, "--store", store_url, "--source-name", "g")
    assert first.returncode == 0, first.stderr
    with server.connect() as conn, conn.cursor() as cur:
        for i in range(2, 5):  # transactions in files that will be purged unarchived
            cur.execute("REPLACE INTO gap.t VALUES (%s)", (i,))
            cur.execute("FLUSH BINARY LOGS")
        cur.execute("SHOW BINARY LOGS")
        names = [r[0] for r in cur.fetchall()]
        cur.execute(f"PURGE BINARY LOGS TO '{names[-2]}'")
    proc = run_cli("archive", "--source", src, "--store", store_url, "--source-name", "g")
    assert proc.returncode == 1
    gaps = [r for r in ndjson(proc.stdout) if r["record"] == "anomaly"]
    assert [g["code"] for g in gaps] == ["GTID_GAP"]
    assert "were purged before they were archived" in gaps[0]["detail"]
    assert "GTIDs" in gaps[0]["detail"]
    assert "binlake: 1 gap(s) in the archive of g" in proc.stderr
    # the file after the hole is archived anyway, its manifest records the gap
    store = FileStore(str(tmp_path / "store"))
    m = json.loads(store.get(f"g/manifests/{names[-2]}.json"))
    assert m["gap"]["missing_files"] and m["gap"]["missing_gtids"]
    again = run_cli("archive", "--source", src, "--store", store_url, "--source-name", "g", "--allow-gaps")
    assert again.returncode == 0


class _Faulty:
    """A real source whose copy hits a real fault (`fault()` does it) once `at` bytes of one of
    the files named `victims` have come (the big ones _fresh_files made: what other tests left on
    the server does not matter); other files copy whole."""

    def __init__(self, source, at, fault, victims):
        self.source, self.at, self.fault, self.url = source, at, fault, source.url
        self.victims = set(victims)
        self.done = False

    def files(self):
        return self.source.files()

    def __getattr__(self, name):
        return getattr(self.source, name)

    def stream(self, f):
        got = 0
        for run in self.source.stream(f):
            got += len(run)
            if got >= self.at and not self.done and f.name in self.victims:
                self.done = True
                self.fault()
            yield run


def _kill_dump_threads(server):
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW PROCESSLIST")
        for row in cur.fetchall():
            if str(row[4]).startswith("Binlog Dump"):
                cur.execute(f"KILL {row[0]}")


def _no_dump_threads(server, within: float = 30) -> bool:
    """Whether the server's binlog dump threads are all gone (within some seconds: a closed
    connection's thread ends on the server's own time)."""
    import time

    deadline = time.monotonic() + within
    with server.connect() as conn, conn.cursor() as cur:
        while True:
            cur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'")
            if cur.fetchone()[0] == 0:
                return True
            if time.monotonic() > deadline:
                return False
            cur.execute("DO SLEEP(0.05)")  # the server's own pause between two looks


def _fresh_files(server, n=2, mib=24) -> list[str]:
    """Rotated files each holding one transaction of `mib` MiB: more than socket buffers hold,
    so a fault during the copy really cuts it. Their names (the server's, as it wrote them)."""
    names = []
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE DATABASE IF NOT EXISTS fault")
        cur.execute("CREATE TABLE IF NOT EXISTS fault.t (id INT PRIMARY KEY, v TEXT)")
        cur.execute("DELETE FROM fault.t")
        cur.execute("FLUSH BINARY LOGS")
        for i in range(n):
            rows = mib * 1024
            cur.execute("SHOW BINARY LOG STATUS" if server.flavor == "mysql" else "SHOW MASTER STATUS")
            names.append(cur.fetchone()[0])  # the file the transaction goes into
            cur.execute("SET SESSION cte_max_recursion_depth = 1000000" if server.flavor == "mysql"
                        else "SET SESSION max_recursive_iterations = 1000000")
            cur.execute(f"INSERT INTO fault.t WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s "
                        f"WHERE x < {rows}) SELECT x + {i * rows}, REPEAT('y', 1000) FROM s")
            cur.execute("FLUSH BINARY LOGS")
    return names


def _assert_whole(store, source_name, server):
    src = MySQLSource(f"mysql://root@127.0.0.1:{server.port}")
    for f in src.files():
        if store.exists(f"{source_name}/manifests/{f.name}.json"):
            assert store.get(f"{source_name}/binlogs/{f.name}") == (server.binlog_dir / f.name).read_bytes()


@pytest.mark.parametrize("name", ["mysql_server", "mariadb_server"])
def test_connection_dropped_mid_copy(request, name, tmp_path):
    server = request.getfixturevalue(name)
    big = _fresh_files(server)
    store = FileStore(str(tmp_path / "store"))
    src = MySQLSource(f"mysql://root@127.0.0.1:{server.port}")
    with pytest.raises((SourceError, BinlogError)) as cut:
        archive(_Faulty(src, 4 << 20, lambda: _kill_dump_threads(server), big), store, "f")
    # Small files may have been sent whole before the kill; the big one was cut: it has
    # neither manifest nor object, and every manifest stands beside its whole object.
    names = [f.name for f in src.files()]
    archived = [k.rsplit("/", 1)[1][:-5] for k in store.keys("f/manifests")]
    assert archived == [k.rsplit("/", 1)[1] for k in store.keys("f/binlogs")]
    assert len(archived) < len(names), cut.value
    _assert_whole(store, "f", server)
    result = archive(src, store, "f")  # the next run completes it
    assert sorted(result.archived + archived) == sorted(names)
    _assert_whole(store, "f", server)


def test_s3_endpoint_gone_mid_copy(mysql_server, s3_endpoint):

    from moto.server import ThreadedMotoServer

    big = _fresh_files(mysql_server)
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    port = moto.get_host_and_port()[1]  # the endpoint comes back at this address
    client = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}")
    client.create_bucket(Bucket="flaky")
    store = S3Store("s3://flaky/x", client=client)
    src = MySQLSource(f"mysql://root@127.0.0.1:{mysql_server.port}")
    import binlake.archive.stores as stores

    old = stores.PART_SIZE
    stores.PART_SIZE = 5 << 20
    try:
        # the file being copied when the endpoint went is named, with what could not be done
        with pytest.raises(StoreError, match=r"^s3://flaky/x/s/binlogs/binlog\.\d+: cannot (upload part \d+|"
                                             r"complete the multipart upload): Could not connect to the endpoint"):
            archive(_Faulty(src, 4 << 20, moto.stop, big), store, "s")
        # the failed copy closed its dump connection (the server's dump thread would hold the file)
        assert _no_dump_threads(mysql_server)
        moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        moto.start()  # the endpoint is back, with what it held
        # the files before the big one may be in (the last of them maybe without its manifest, so
        # not archived); the big one was cut: no object, no manifest
        archived = [k.rsplit("/", 1)[1][:-5] for k in store.keys("s/manifests")]
        objects = [k.rsplit("/", 1)[1] for k in store.keys("s/binlogs")]
        assert objects[:len(archived)] == archived and len(objects) <= len(archived) + 1
        names = [f.name for f in src.files()]
        assert set(objects) < set(names)
        assert archived == names[:len(archived)] and len(archived) < len(names)
        assert archive(src, store, "s").archived == names[len(archived):]
        _assert_whole(store, "s", mysql_server)
    finally:
        stores.PART_SIZE = old
        moto.stop()


def test_two_archivers_at_once(mysql_server, tmp_path):
    import threading

    _fresh_files(mysql_server)
    store = FileStore(str(tmp_path / "store"))
    src = MySQLSource(f"mysql://root@127.0.0.1:{mysql_server.port}")
    errors = []

    def run(server_id: int):
        try:
            archive(MySQLSource(f"mysql://root@127.0.0.1:{mysql_server.port}", server_id=server_id),
                    store, "c")
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    # Each run its own server_id, as the server requires of concurrent dumps (a thread's ident
    # is no such id: two threads' idents may agree modulo any small number).
    threads = [threading.Thread(target=run, args=(0x62000000 + i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    names = [f.name for f in src.files()]
    assert sorted(k.rsplit("/", 1)[1] for k in store.keys("c/binlogs")) == names
    _assert_whole(store, "c", mysql_server)
    for n in names:
        m = json.loads(store.get(f"c/manifests/{n}.json"))
        assert m["size"] == (mysql_server.binlog_dir / n).stat().st_size


def test_a_dump_displaced_under_the_same_server_id_says_so(mysql_server):
    """The server ends a dump when another replica connects under its server_id (MySQL's
    kill_zombie_dump_threads): a retryable SourceError naming the remedy, not a refused file. Runs
    left to their default ids each pick their own."""
    name = _fresh_files(mysql_server, n=1)[0]
    url = f"mysql://root@127.0.0.1:{mysql_server.port}"
    f = next(x for x in MySQLSource(url).files() if x.name == name)
    first = MySQLSource(url, server_id=4243).stream(f)
    second = MySQLSource(url, server_id=4243).stream(f)
    try:
        next(first), next(first)  # the dump has begun: the file is bigger than the socket's buffers
        next(second), next(second)
        with pytest.raises(SourceError, match="another replica connected with this run's server_id 4243") as e:
            for _ in first:
                pass
        assert not isinstance(e.value, RefusedFile)
    finally:
        first.close()
        second.close()
    ids = [MySQLSource(url).server_id for _ in range(3)]
    assert all(i >> 16 == REPLICA_IDS >> 16 for i in ids)


def test_file_name_escaping_the_store_is_refused():
    from binlake.archive.sources import _safe_name

    for bad in ("../etc/passwd", "a/b", "..", "x\\y"):
        with pytest.raises(SourceError, match="not a plain file name"):
            _safe_name(bad)


def test_missing_privileges(mysql_server):
    with mysql_server.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE USER IF NOT EXISTS 'nopriv'@'127.0.0.1' IDENTIFIED BY 'pw'")
    src = MySQLSource(f"mysql://nopriv:pw@127.0.0.1:{mysql_server.port}")
    with pytest.raises(SourceError, match="missing privilege: grant REPLICATION CLIENT and REPLICATION SLAVE"):
        src.files()


def test_binary_logging_off(mysql_factory):
    server = mysql_factory(log_bin=None, binlog_rows_query_log_events=None, binlog_format=None,
                           binlog_checksum=None, max_binlog_size=None, binlog_row_metadata=None, sync_binlog=None,
                           disable_log_bin=True)
    with pytest.raises(SourceError, match="binary logging is off"):
        MySQLSource(f"mysql://root@127.0.0.1:{server.port}").files()


def test_process_killed_mid_copy(mysql_server, tmp_path):
    import signal
    import subprocess
    import sys

    _fresh_files(mysql_server, n=2, mib=24)
    store_dir = tmp_path / "store"
    argv = [sys.executable, "-m", "binlake.cli", "archive", "--source", f"mysql://root@127.0.0.1:{mysql_server.port}",
            "--store", f"file://{store_dir}", "--source-name", "k"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        flying = _stopped_mid_copy(proc, store_dir / "k" / "binlogs")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    # it was killed with that file's object still temporary: not presented, no manifest
    assert flying.exists()
    name = _final_name(flying, mysql_server)
    store = FileStore(str(store_dir))
    assert not store.exists(f"k/binlogs/{name}") and not store.exists(f"k/manifests/{name}.json")
    # whatever was reached: every visible object is whole and identical (a kill between an
    # object and its manifest leaves the object unlisted as archived), and every manifest has one
    for k in store.keys("k/binlogs"):
        name = k.rsplit("/", 1)[1]
        assert store.get(k) == (mysql_server.binlog_dir / name).read_bytes()
    for k in store.keys("k/manifests"):
        name = k.rsplit("/", 1)[1][:-5]
        assert store.get(f"k/binlogs/{name}") == (mysql_server.binlog_dir / name).read_bytes()
    done = run_cli(*argv[3:])  # the next run completes the archive, and discards the dead run's temporary
    assert done.returncode == 0, done.stderr
    assert not flying.exists() and not list((store_dir / "k").rglob(".tmp-*"))
    _assert_whole(store, "k", mysql_server)
    src = MySQLSource(f"mysql://root@127.0.0.1:{mysql_server.port}")
    assert all(store.exists(f"k/manifests/{f.name}.json") for f in src.files())


def _stopped_mid_copy(proc, binlogs) -> object:
    """Stop (SIGSTOP) the archiver while a copy is in flight: a temporary object holding its first
    writes that is still there once the archiver stands still. Its path."""
    import signal
    import subprocess
    import time

    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        for tmp in binlogs.glob(".tmp-*") if binlogs.exists() else ():
            with contextlib.suppress(FileNotFoundError):
                if tmp.stat().st_size >= 4096:
                    proc.send_signal(signal.SIGSTOP)
                    if tmp.exists():
                        return tmp
                    proc.send_signal(signal.SIGCONT)  # that copy ended meanwhile: wait for the next
        with contextlib.suppress(subprocess.TimeoutExpired):  # look again in 10 ms, unless it has ended
            proc.wait(timeout=0.01)
        assert proc.returncode is None, "the archiver ended before a copy was seen in flight"
    raise AssertionError("no copy in flight within 300 s")


def _final_name(tmp, server) -> str:
    """The binlog a temporary object is the copy of: the server's file whose first bytes it holds."""
    head = tmp.read_bytes()[:4096]
    (name,) = [p.name for p in server.binlog_dir.glob("binlog.[0-9]*") if p.read_bytes()[:len(head)] == head]
    return name


def test_server_killed_mid_copy(mysql_factory, tmp_path):
    server = mysql_factory()
    big = _fresh_files(server, n=2, mib=24)
    store = FileStore(str(tmp_path / "store"))
    src = MySQLSource(f"mysql://root@127.0.0.1:{server.port}")
    names = [f.name for f in src.files()]
    with pytest.raises(SourceError):
        archive(_Faulty(src, 4 << 20, server.kill, big), store, "v")
    archived = [k.rsplit("/", 1)[1][:-5] for k in store.keys("v/manifests")]
    assert archived == [k.rsplit("/", 1)[1] for k in store.keys("v/binlogs")]
    assert len(archived) < len(names)
    server.restart()  # crash recovery; the rotated files are all still there
    result = archive(src, store, "v")
    assert set(names) <= set(archived) | set(result.archived)
    _assert_whole(store, "v", server)


@pytest.mark.parametrize("name", ["mysql_server", "mariadb_server"])
def test_an_event_bigger_than_a_protocol_packet(request, name, tmp_path):
    """Over 16 MiB an event comes in several packets of the protocol: the copy joins them."""
    from binlake.binlog.framing import BinlogReader

    server = request.getfixturevalue(name)
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SET GLOBAL max_allowed_packet = 67108864")  # REPEAT gives NULL beyond it
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE DATABASE IF NOT EXISTS huge")
        cur.execute("CREATE TABLE IF NOT EXISTS huge.t (id INT PRIMARY KEY, v LONGBLOB)")
        cur.execute("REPLACE INTO huge.t VALUES (1, REPEAT('z', 20 * 1024 * 1024))")
        cur.execute("FLUSH BINARY LOGS")
    store = FileStore(str(tmp_path / "store"))
    result = archive(MySQLSource(f"mysql://root@127.0.0.1:{server.port}"), store, "huge")
    _assert_whole(store, "huge", server)
    biggest = 0
    for n in result.archived:
        with BinlogReader.open(server.binlog_dir / n) as r:
            biggest = max([biggest, *(f.size for f in r.frames(verify=False))])
    assert biggest > 20 << 20


class _CommitFails(FileStore):
    """A file store whose commit of one object fails (a full disk, say)."""

    def __init__(self, root: str, key_end: str) -> None:
        super().__init__(root)
        self.key_end = key_end

    def writer(self, key: str):
        w = super().writer(key)
        if key.endswith(self.key_end):
            def fail() -> None:
                raise StoreError(f"{key}: no space left on device")
            w.commit = fail
        return w


def test_a_failed_commit_stops_the_copy_behind_it(tmp_path):
    # a file's commit runs while the next file copies: when it fails, the next is not committed
    src = DATA / "mysql"
    names = sorted(p.name for p in src.glob("binlog.0*"))
    root = tmp_path / "store"
    with pytest.raises(StoreError, match="no space left"):
        archive(DirSource(str(src)), _CommitFails(str(root), f"binlogs/{names[1]}"), "m")
    store = FileStore(str(root))
    assert [k.rsplit("/", 1)[1] for k in store.keys("m/binlogs")] == names[:1]
    assert [k.rsplit("/", 1)[1] for k in store.keys("m/manifests")] == [f"{names[0]}.json"]
    assert not [p for p in root.rglob("*") if p.name.startswith(".tmp-")]  # no half-written copy left
    assert archive(DirSource(str(src)), store, "m").archived == names[1:]
    for n in names:
        assert store.get(f"m/binlogs/{n}") == (src / n).read_bytes()


def _s3_archiver(server, bucket: str):
    import subprocess
    import sys

    argv = [sys.executable, "-m", "binlake.cli", "archive", "--source", f"mysql://root@127.0.0.1:{server.port}",
            "--store", f"s3://{bucket}/a", "--source-name", "k"]
    return argv, lambda: subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _listed_in_a_lease(client, bucket: str) -> bool:
    """Whether every open upload is listed in an archiver run's lease."""
    uploads = {u["UploadId"] for u in _open_uploads(client, bucket)}
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=bucket).get("Contents", []) if "/leases/" in o["Key"]]
    listed: set[str] = set()
    for k in keys:
        with contextlib.suppress(client.exceptions.NoSuchKey):
            listed |= set(json.loads(client.get_object(Bucket=bucket, Key=k)["Body"].read())["writes"])
    return bool(uploads) and uploads <= listed


def _open_uploads(client, bucket: str) -> list[dict]:
    return client.list_multipart_uploads(Bucket=bucket).get("Uploads", [])


def _when_uploading(proc, client, bucket: str) -> bool:
    """Wait until the archiver has a multipart upload open (False: it ended first)."""
    import subprocess

    while not _open_uploads(client, bucket):
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.01)
        if proc.returncode is not None:
            return False
    return True


@pytest.mark.parametrize("listing", ["by prefix", "by exact key"])
def test_archiver_killed_mid_upload_leaves_nothing_to_pay_for(mysql_factory, s3_endpoint, listing, monkeypatch):
    """SIGKILLed 15 times at random moments while its uploads are open, then run to the end:
    every file byte-identical, no manifest without its object, and no incomplete multipart
    upload left (each run discards what dead runs of the source left). Also on an S3 that lists
    multipart uploads by an object's exact name only, as MinIO does (tests.support.s3_exact); the
    oracle is the endpoint behind it, listing every upload of the bucket."""
    from tests.support.s3_exact import ExactKeyUploads

    server = mysql_factory()
    _fresh_files(server, n=4, mib=24)
    client = boto3.client("s3", endpoint_url=s3_endpoint)
    bucket = "killed" if listing == "by prefix" else "killed-exact"
    client.create_bucket(Bucket=bucket)
    with contextlib.ExitStack() as stack:
        if listing == "by exact key":
            monkeypatch.setenv("AWS_ENDPOINT_URL", stack.enter_context(ExactKeyUploads(s3_endpoint)))
        _killed_then_run(server, client, bucket)


def _killed_then_run(server, client, bucket: str) -> None:
    import random
    import subprocess

    argv, start = _s3_archiver(server, bucket)
    rng = random.Random(15)
    left = []
    for _ in range(15):
        proc = start()
        if not _when_uploading(proc, client, bucket):
            break  # nothing left to copy
        with contextlib.suppress(subprocess.TimeoutExpired):  # a random moment of the copy
            proc.wait(timeout=rng.uniform(0, 0.3))
        proc.kill()
        proc.wait()
        left.append(len(_open_uploads(client, bucket)))
    assert max(left) >= 1, left  # the kills did leave uploads open
    done = run_cli(*argv[3:])
    assert done.returncode == 0, done.stderr
    assert _open_uploads(client, bucket) == []
    store = S3Store(f"s3://{bucket}/a")
    assert store.keys("k/leases") == []
    names = [f.name for f in MySQLSource(f"mysql://root@127.0.0.1:{server.port}").files()]
    assert [k.rsplit("/", 1)[1][:-5] for k in store.keys("k/manifests")] == names
    for n in names:
        assert store.get(f"k/binlogs/{n}") == (server.binlog_dir / n).read_bytes()


def test_a_live_archivers_upload_is_not_discarded(mysql_factory, s3_endpoint):
    """A run stopped (SIGSTOP) mid-upload is alive: another run of the source leaves its upload
    alone, and the stopped run, continued, completes it."""
    import signal
    import subprocess

    server = mysql_factory()
    _fresh_files(server, n=2, mib=24)
    client = boto3.client("s3")
    client.create_bucket(Bucket="shared")
    argv, start = _s3_archiver(server, "shared")
    slow = start()
    try:
        assert _when_uploading(slow, client, "shared")
        # stopped where its lease lists every open upload (Lease.hold, right after an upload
        # begins), checked while it is stopped: moto gives every upload the Initiated time
        # 2010-11-10, so one no lease lists yet looks abandoned
        while True:
            slow.send_signal(signal.SIGSTOP)
            if _listed_in_a_lease(client, "shared"):
                break
            slow.send_signal(signal.SIGCONT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                assert slow.wait(timeout=0.01) is None, "the archiver ended before its lease listed the upload"
        held = {u["UploadId"] for u in _open_uploads(client, "shared")}
        # its own replica server_id: a dump under the stopped run's id would end the stopped run's dump
        other = run_cli(*argv[3:], "--server-id", "4242")
        assert other.returncode == 0, other.stderr
        assert held <= {u["UploadId"] for u in _open_uploads(client, "shared")}
    finally:
        slow.send_signal(signal.SIGCONT)
    assert slow.wait(timeout=300) == 0
    assert _open_uploads(client, "shared") == []
    store = S3Store("s3://shared/a")
    for f in MySQLSource(f"mysql://root@127.0.0.1:{server.port}").files():
        assert store.get(f"k/binlogs/{f.name}") == (server.binlog_dir / f.name).read_bytes()


def test_manifests_from_before_generations_still_read(tmp_path):
    """A store written before generations: manifests without `name`, `generation` or
    `head_sha256`. A rerun finds every file archived (each identity read from its object's
    head); another server's files under the same names are generation 2, beside them."""
    src = DATA / "mysql"
    names = sorted(p.name for p in src.glob("binlog.0*"))
    store = FileStore(str(tmp_path / "store"))
    archive(DirSource(str(src)), store, "s")
    for k in store.keys("s/manifests"):
        m = json.loads(store.get(k))
        for new in ("name", "generation", "head_sha256"):
            del m[new]
        store.put(k, json.dumps(m).encode())
    again = archive(DirSource(str(src)), store, "s")
    assert (again.archived, sorted(again.skipped), again.notices) == ([], names, [])

    other = tmp_path / "other"  # the MariaDB server's files, named as the MySQL server's are
    other.mkdir()
    theirs = sorted(p.name for p in (DATA / "mariadb").glob("binlog.0*"))
    for n in theirs:
        shutil.copy(DATA / "mariadb" / n, other / n)
    assert set(theirs) & set(names)
    moved = archive(DirSource(str(other)), store, "s")
    assert moved.archived == [f"{n}@g0002" for n in theirs]
    assert [(n["kind"], n["generation"], n["file"]) for n in moved.notices] == [("new_server", 2, theirs[0])]
    for n in theirs:
        assert store.get(f"s/binlogs/{n}@g0002") == (other / n).read_bytes()
        m = json.loads(store.get(f"s/manifests/{n}@g0002.json"))
        assert (m["file"], m["name"], m["generation"]) == (n, f"{n}@g0002", 2)
    for n in names:  # generation 1 untouched
        assert store.get(f"s/binlogs/{n}") == (src / n).read_bytes()
    assert archive(DirSource(str(other)), store, "s").archived == []


def test_a_datadir_with_relay_logs_and_other_numbered_files(tmp_path):
    """`?basename=` takes the server's binlog files only: a datadir also holds relay logs (a
    replica's copy of its source's events) and MariaDB's `aria_log.NNNNNNNN`."""
    from binlake.archive.sources import open_source

    names = sorted(p.name for p in (DATA / "mysql").glob("binlog.0*"))
    for n in names:
        shutil.copy(DATA / "mysql" / n, tmp_path / n)
    shutil.copy(DATA / "mysql" / names[0], tmp_path / "replica-relay-bin.000001")
    (tmp_path / "aria_log.00000001").write_bytes(b"\xfe\xfe\x0c\x01" + bytes(60))
    src = open_source(f"dir://{tmp_path}?basename=binlog")
    assert [f.name for f in src.files()] == names and src.url == f"dir://{tmp_path}?basename=binlog"
    assert "replica-relay-bin.000001" in [f.name for f in DirSource(str(tmp_path)).files()]  # without it
