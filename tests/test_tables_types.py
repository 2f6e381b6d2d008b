"""Every column type through the row versions: typed Delta columns and back, without loss.

For each flavor, a server of this module's own writes one wide table, a column per case of
tests/support/type_matrix.py (every type at its limits), created in the changelog (its types from
the schema history's replay of the CREATE), one row per value index, each value set by an UPDATE
of its own (so each row's versions close and open as often as it has values). Then: archive,
assemble, validate, `binlake tables`, and `binlake asof` after the last write. The oracle is the
server: each column's value is its answer to the case's oracle expressions (`CAST(v AS CHAR)`,
`HEX(v)`, `ST_AsText(v)`, ...) spelt in docs/row-values.md's form by the case's `form`, exactly as
tests/test_type_matrix.py holds the row images to it.
"""

from __future__ import annotations

import json

import pytest

from tests.support.scanning import ndjson, run_cli
from tests.support.type_matrix import CASES, server_text

RANGE = ("2000-01-01", "2100-01-01")
FLAVORS = ("mysql", "mariadb")


def _cases(flavor: str) -> list:
    return [c for c in CASES if flavor in c.flavors]


def _json(v) -> str:
    """A value as JSON text: an integer and a float differ, -0.0 and 0.0 differ."""
    return json.dumps(v, ensure_ascii=False, sort_keys=True)


class Wide:
    """One flavor's wide table written, the server's form of each value, and the lake applied."""

    def __init__(self, server, flavor: str, spark, root) -> None:
        from binlake.spark.job import assemble
        from binlake.spark.tables import TablesJob
        from binlake.spark.validate import validate

        cases = _cases(flavor)
        rows = max(len(c.values) for c in cases)
        store = f"file://{root}/store"
        self.warehouse = root / "lake"
        self._archive(server, store)  # the schema history before the table: its CREATE is in the changelog
        self.errors: dict[str, str] = {}
        self.want: dict[int, dict[str, object]] = {}
        with server.connect() as conn, conn.cursor() as cur:
            cur.execute("SET SESSION sql_mode = '', time_zone = '+00:00'")
            cur.execute("CREATE DATABASE wide CHARACTER SET utf8mb4")
            cur.execute("CREATE TABLE wide.t (id INT PRIMARY KEY, "
                        + ", ".join(f"`{c.name}` {c.sql_type}" for c in cases) + ")")
            cur.execute("INSERT INTO wide.t (id) VALUES " + ", ".join(f"({i})" for i in range(rows)))
            for c in cases:
                for i, value in enumerate(c.values):
                    try:
                        cur.execute(f"UPDATE wide.t SET `{c.name}` = {value} WHERE id = {i}")
                    except Exception as e:  # noqa: BLE001 - that case fails with it, the others run
                        self.errors[c.name] = f"the server took no value {value}: {e}"
            for c in cases:  # the server's own rendering of what it stored
                cur.execute(f"SELECT id, {', '.join(c.oracle)} FROM (SELECT id, `{c.name}` AS v FROM wide.t) AS x "
                            "ORDER BY id")
                for r in cur.fetchall():
                    self.want.setdefault(r[0], {})[c.name] = None if r[1] is None else c.form(*map(server_text, r[1:]))
            cur.execute("FLUSH BINARY LOGS")
        self._archive(server, store)
        assert assemble(spark, store, str(self.warehouse), *RANGE).status == "ok"
        report = validate(spark, str(self.warehouse), *RANGE, store=store)
        assert report.success, report.text()
        (summary,) = TablesJob(spark, store, str(self.warehouse), RANGE).run(["src"])
        assert summary.status == "applied", summary.reason
        proc = run_cli("asof", "--warehouse", str(self.warehouse), "--source", "src", "--at", "2099-12-31",
                       "--table", "wide.t")
        assert proc.returncode == 0, proc.stderr
        self.got = {line["row"]["id"]: line["row"] for line in ndjson(proc.stdout)}

    @staticmethod
    def _archive(server, store: str) -> None:
        proc = run_cli("archive", "--source", f"mysql://root@127.0.0.1:{server.port}", "--store", store,
                       "--source-name", "src")
        assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def wide(request, spark, tmp_path_factory):
    made: dict[str, Wide] = {}

    def get(flavor: str) -> Wide:
        if flavor not in made:
            server = request.getfixturevalue(f"{flavor}_factory")()
            made[flavor] = Wide(server, flavor, spark, tmp_path_factory.mktemp(f"tables-types-{flavor}"))
        return made[flavor]

    return get


@pytest.mark.parametrize("flavor", FLAVORS)
def test_every_type_as_of_the_end_is_the_servers_own(flavor: str, wide):
    w = wide(flavor)
    assert not w.errors, w.errors
    assert sorted(w.got) == sorted(w.want)  # every row the server holds
    wrong = [f"{c.name} id {i}: got {_json(w.got[i].get(c.name, '<unknown>'))}, server {_json(w.want[i][c.name])}"
             for c in _cases(flavor) for i in sorted(w.want) if _json(w.got[i].get(c.name)) != _json(w.want[i][c.name])]
    assert not wrong, f"{len(wrong)} values differ:\n" + "\n".join(wrong)


@pytest.mark.parametrize("flavor", FLAVORS)
def test_delta_rs_gives_the_fold_the_values_spark_reads(flavor: str, wide, spark):
    # The driver's fold reads a table's current versions with delta-rs (binlake.tables.delta_reads),
    # Spark's tasks with Spark (binlake.spark.versions): every type must reach the fold (`held`: its
    # values in row-values form, its versions' places and times) alike from both, whole and cut to
    # the changed keys (every other key). By `id`, the table's
    # primary key (the apply matches wide.t's rows whole: its CREATE's key is not read, sqlglot
    # parsing no spatial subtype nor COMPRESSED column), so that the cut keys every row.
    import dataclasses

    import pyarrow as pa

    from binlake.spark.versions import Versions
    from binlake.spark.warehouse import warehouse_uri
    from binlake.tables import delta_reads
    from binlake.tables import state as states
    from binlake.tables.stream import Lineage, Routes, held

    w = wide(flavor)
    warehouse = warehouse_uri(str(w.warehouse))
    ts = dataclasses.replace(states.load(warehouse, "src").tables["wide/t"], key=["id"])
    routes = Routes({0: Lineage(0, ts.key)}, {}, {ts.name: ts.shapes})

    def fold_input(batches) -> list[dict]:
        return sorted((r for b in held(routes, 0, ts.name, batches) for r in b.to_pylist()), key=lambda r: r["grp"])

    by_spark = fold_input(Versions(spark, warehouse).current(ts).toArrow().to_batches())
    assert len(by_spark) == len(w.want)  # a current version per row the server holds
    assert fold_input(delta_reads.current(warehouse, ts)) == by_spark
    some = [r["grp"] for r in by_spark][::2]
    cut = delta_reads.changed_current(warehouse, ts, routes=routes, lineage=0, grps=pa.array(some, pa.binary()))
    assert fold_input(cut) == [r for r in by_spark if r["grp"] in set(some)]
