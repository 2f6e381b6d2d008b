"""The private PostgreSQL of a local Airflow's metadata (binlake.local.postgres), run for real.

As root the cluster lives in /var/tmp, named for the home's path, so a home deleted and made again
at the same path (a test run's numbered temporary directories, a user's `rm -rf` of a home) finds
the cluster the earlier one left, with no password to log in to it. The oracle is the server's
own catalog: a table made in the earlier home's database is there or not.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from binlake.errors import BinlakeError
from binlake.local.postgres import Postgres, bindir
from tests.conftest import require


@pytest.fixture
def clusters() -> Iterator[list[tuple[Postgres, Path]]]:
    """Every cluster a test starts, with its data directory: stopped and removed after it."""
    require(bindir() is not None, "PostgreSQL's server programs (Debian's postgresql)")
    made: list[tuple[Postgres, Path]] = []
    yield made
    for pg, data in made:
        pg.stop()
        shutil.rmtree(data, ignore_errors=True)


def _started(clusters: list[tuple[Postgres, Path]], home: Path) -> Postgres:
    home.mkdir(exist_ok=True)
    pg = Postgres(home)
    pg.start()  # before it asks for its data directory: as root, that makes the home's link to it
    clusters.append((pg, pg.datadir))
    return pg


def _sql(pg: Postgres, statement: str) -> tuple | None:
    """One statement in the cluster's `airflow` database, committed; its first row, if any."""
    with contextlib.closing(pg.connect()) as conn:
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(statement)
            return cur.fetchone() if cur.description else None


def _has_marker(pg: Postgres) -> bool:
    return _sql(pg, "SELECT to_regclass('public.marker') IS NOT NULL")[0]


def test_a_home_made_again_at_the_same_path_gets_a_new_cluster(clusters, tmp_path):
    home = tmp_path / "home"
    first = _started(clusters, home)
    data = first.datadir
    _sql(first, "CREATE TABLE marker (id int)")
    assert _has_marker(first)
    first.stop()
    shutil.rmtree(home)  # the home goes; as root its cluster in /var/tmp stays behind

    second = _started(clusters, home)
    assert not _has_marker(second)  # a new cluster: the earlier home's database is not this one's
    assert second.datadir == data


def test_an_earlier_homes_server_still_running_is_named(clusters, tmp_path):
    home = tmp_path / "home"
    first = _started(clusters, home)
    pid = first.proc.pid
    shutil.rmtree(home)
    home.mkdir()
    if first.user is None:  # not root: the cluster was in the home and went with it; a new one starts
        second = _started(clusters, home)
        assert not _has_marker(second)
        return
    with pytest.raises(BinlakeError, match=rf"still runs \(pid {pid}\).*kill -INT {pid}"):
        Postgres(home).start()
    assert first.proc.poll() is None  # left alone: not this home's to stop


def test_a_password_removed_from_its_own_home_is_a_clear_error(clusters, tmp_path):
    home = tmp_path / "home"
    first = _started(clusters, home)
    first.stop()
    (home / "postgres.password").unlink()
    again = Postgres(home)
    with pytest.raises(BinlakeError, match=r"postgres\.password is missing: without it nothing can log in"):
        again.start()
    assert again.proc is None  # no server started
    assert (first.datadir / "PG_VERSION").exists()  # the cluster kept: its data is the home's
