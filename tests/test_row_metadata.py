"""Servers as they ship: TABLE_MAPs without column names.

MySQL's default `binlog_row_metadata` is MINIMAL and MariaDB's is NO_LOG (MariaDB has MINIMAL too).
MINIMAL logs each column's signedness and charset but no names and no ENUM/SET members; NO_LOG
logs neither. The random rows of every column type of tests/test_rowdecode.py are written to a
server of each setting, and each decoded image is held to the row the test wrote and to the row
the server returned for it, in the forms docs/row-values.md gives without names
(tests.support.workload.unnamed_value): positional names, an ENUM its index, a SET its bitmask,
and under NO_LOG integers read as signed and strings as UTF-8 text when they decode.
"""

from __future__ import annotations

import pytest

from tests.support.workload import unnamed_value
from tests.test_rowdecode import COLUMNS, NAMES, assert_images, decoded_alike, written_range

CASES = [("mysql_factory", "MINIMAL"), ("mariadb_factory", "MINIMAL"), ("mariadb_factory", "NO_LOG")]


def _unnamed(row: dict | None, metadata: str) -> dict | None:
    if row is None:
        return None
    return {f"col_{i + 1}": unnamed_value(t, row[n], metadata) for i, (n, t) in enumerate(COLUMNS) if n in row}


@pytest.mark.parametrize(("factory", "metadata"), CASES)
def test_every_column_type_without_column_names(factory, metadata, request, monkeypatch, tmp_path):
    flavor = factory.removesuffix("_factory")
    server = request.getfixturevalue(factory)(binlog_row_metadata=metadata)
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT @@binlog_row_metadata")
        assert cur.fetchone()[0] == metadata
    files, wrote, held = written_range(server, flavor, tmp_path)
    fast, used = decoded_alike(files, monkeypatch)
    assert_images(fast["row_change"], {
        source: [(t, op, _unnamed(b, metadata), _unnamed(a, metadata)) for t, op, b, a in rows]
        for source, rows in (("the test wrote", wrote), ("the server held", held))})
    # the compiled path took the plain table's statements, as with FULL metadata
    assert used["compiled"] >= 6 + 100 + 1, used
    assert used["laned"] == len(fast["transaction"]) > 100, used  # and the lane wrote each transaction
    assert {k for r in fast["row_change"] for k in (r["after"] or {})} == {f"col_{i + 1}" for i in range(len(NAMES))}
