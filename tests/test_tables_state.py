"""`_binlake.json` read back (binlake.tables.state): a table's `complete_from.by` as written, and
for a file written before binlake recorded it, what the file's other fields imply (docs/tables.md,
"`_binlake.json`"). How the planner records it is held to real servers in tests/test_tables_servers.py."""

from __future__ import annotations

from binlake.tables.state import SourceState


def _table(complete_from: dict | None, first_shape: str, baseline: dict | None = None) -> dict:
    return {"schema": "shop", "table": "t", "path": "shop/t", "version": 3, "key": ["id"],
            "complete_from": complete_from, "baseline": baseline,
            "shapes": [{"from": {"order": first_shape, "time": "2026-11-22T10:00:00.000000Z"},
                        "columns": [{"name": "id", "column": "id", "type": "int"}]}]}


def test_how_a_table_became_complete_is_read_as_written_and_implied_in_older_files():
    at = {"order": "0001-0000000001-0000000500", "time": "2026-11-22T10:30:00.000000Z"}
    doc = {"format": 1, "source": "db1", "tables": {
        # as written: kept whatever the other fields say
        "shop/written": _table({**at, "by": "recreate"}, at["order"]),
        # written before `by`: a baseline's; the first shape's CREATE; a CREATE after earlier shapes
        "shop/baseline": _table(at, "0001-0000000001-0000000100", {"id": "b1", "rows": 2}),
        "shop/created": _table(at, at["order"]),
        "shop/again": _table(at, "0001-0000000001-0000000100"),
        "shop/partial": _table(None, "0001-0000000001-0000000100"),
    }}
    state = SourceState.from_json(doc)
    by = {k: t.complete_from.by if t.complete_from else None for k, t in state.tables.items()}
    assert by == {"shop/written": "recreate", "shop/baseline": "baseline", "shop/created": "create",
                  "shop/again": "recreate", "shop/partial": None}
    # written back with it, read again the same
    again = SourceState.from_json(state.to_json())
    assert {k: t.complete_from for k, t in again.tables.items()} == \
        {k: t.complete_from for k, t in state.tables.items()}
    assert again.to_json()["tables"]["shop/created"]["complete_from"] == {**at, "by": "create"}
