"""Row images decoded exactly as the servers' own `mysqlbinlog -v` shows them: the mysql-test
results that print them, else what MySQL 9.7's `mysqlbinlog -vv --print-table-metadata` prints for
the file (each test says which)."""

from __future__ import annotations

import pytest

from binlake.binlog.geometry import geometry_text, wkb_to_wkt
from tests.support.scanning import PUBLIC, scan

# mysql-test/suite/binlog/r/binlog_row_mysqlbinlog_verbose.result, as (table, op, before, after)
FULL = [
    ("ndb_apply_status", "insert", None, {"col_1": 4, "col_2": 25769803786, "col_3": "", "col_4": 0, "col_5": 0}),
    ("ba", "insert", None, {"col_1": 3, "col_2": 3, "col_3": 3}),
    ("ba", "insert", None, {"col_1": 1, "col_2": 1, "col_3": 1}),
    ("ba", "insert", None, {"col_1": 2, "col_2": 2, "col_3": 2}),
    ("ba", "insert", None, {"col_1": 4, "col_2": 4, "col_3": 4}),
    ("ba", "update", {"col_1": 4, "col_2": 4, "col_3": 4}, {"col_1": 4, "col_2": 4, "col_3": 40}),
    ("ba", "delete", {"col_1": 2}, None),
]
PARTIAL = [(t, op, b, a) for t, op, b, a in FULL]
PARTIAL[0] = ("ndb_apply_status", "insert", None,
              {"col_1": 3, "col_2": 25769803786, "col_3": "", "col_4": 0, "col_5": 0})
PARTIAL[5] = ("ba", "update", {"col_1": 4, "col_3": 4}, {"col_1": 4, "col_3": 40})  # absent columns stay absent


def rows(name):
    return [(r["table"], r["op"], r["before"], r["after"]) for r in scan(PUBLIC / name)["row_change"]]


@pytest.mark.parametrize("name,expected", [
    ("enhancedformysql__mysql-8.0.40/update-full-row.binlog", FULL),
    ("enhancedformysql__mysql-8.0.40/update-partial-row.binlog", PARTIAL),
])
def test_mysql_test_verbose_results(name, expected):
    assert rows(name) == expected


def test_column_names_from_full_metadata():
    # mysqlbinlog: "# Columns(`c1` BIGINT …" and "(`my_row_id` … INVISIBLE AUTO_INCREMENT, `f1` …,
    # `really_unique_column_name` …)", rows "@1=1 @2='1'" and "@1=1 @2=1 @3=1"
    got = rows("enhancedformysql__mysql-8.0.40/rpl_binlog_with_gipk_info_full_metadata.000001")
    assert got == [("t1", "insert", None, {"c1": 1, "c2": "1"}),
                   ("t2", "insert", None, {"my_row_id": 1, "f1": 1, "really_unique_column_name": 1})]


def test_decimals_exact():
    # mysqlbinlog: "@2=-10.55 /* DECIMAL(4,2)", "@3=-11 /* DECIMAL(5,0)", "@9=-10.5500000000 /* DECIMAL(20,10)"
    got = rows("go-mysql-org__go-mysql/tcb-eval002c-bin.003320")
    first = got[0][3]
    assert (first["col_2"], first["col_3"], first["col_9"]) == ("-10.55", "-11", "-10.5500000000")


def test_vector_columns():
    # mysqlbinlog: "@2=[1.00000e+00,-1.00000e+00,0.00000e+00] /* VECTOR(3)" and
    # "@4=[4.20000e+01,4.30000e+01,4.40000e+01,4.50000e+01] /* VECTOR(4)"
    got = rows("blackbeam__rust_mysql_common/vector.binlog")
    assert got[1][3] == {"id": 2, "vector_column": [1.0, -1.0, 0.0]}
    assert got[3][3]["vector_column2"] == [42.0, 43.0, 44.0, 45.0]


def test_json_and_partial_json_updates():
    # mysqlbinlog: "@2='{"age": 24, "data": "xxxxxxxxxx", "name": "Joe"}' /* JSON", and for the
    # Update_rows_partial event "WHERE @1=1 SET @2=JSON_REPLACE(@2, '$.age', 26) @3='Joe' @4=26"
    got = rows("blackbeam__rust_mysql_common/json.binlog.000001")
    assert got[0][3]["col_2"] == {"age": 24, "data": "xxxxxxxxxx", "name": "Joe"}
    updates = [r for r in got if r[1] == "update"]
    # UPDATE_ROWS with full images
    assert updates[0][2:] == ({"col_1": 1, "col_2": {"age": 24, "data": "xxxxxxxxxx", "name": "Joe"},
                               "col_3": "Joe", "col_4": 24},
                              {"col_1": 1, "col_2": {"age": 25, "data": "xxxxxxxxxx", "name": "Joe"},
                               "col_3": "Joe", "col_4": 25})
    # PARTIAL_UPDATE_ROWS with a minimal before image: no document to apply the diff to,
    # so the diff itself is kept
    assert updates[6][2:] == ({"col_1": 1}, {"col_2": {"$partial": [{"op": "Replace", "path": "$.age",
                                                                       "value": 26}]},
                                             "col_3": "Joe", "col_4": 26})


def test_binary_without_charset_metadata_is_base64():
    got = rows("shyiko__mysql-binlog-connector-java/mysql-bin.sakila")
    pictures = [a["col_5"] for t, _, _, a in got if t == "staff"]
    assert pictures and pictures[0].startswith("base64:iVBORw0KGgo")  # a PNG: its signature 89 50 4e 47 0d 0a 1a 0a
    names = [a["col_2"] for t, _, _, a in got if t == "staff"]
    assert all(isinstance(n, str) and not n.startswith("base64:") for n in names)


def test_wkb_to_wkt():
    """WKB built here by its OGC layout (byte order, type, coordinates): WKT as MySQL's ST_AsText writes it."""
    import struct

    point = b"\x01" + struct.pack("<Idd", 1, 1.5, -2)
    assert wkb_to_wkt(point) == "POINT(1.5 -2)"
    line = b"\x01" + struct.pack("<II", 2, 2) + struct.pack("<dddd", 0, 0, 1, 1)
    assert wkb_to_wkt(line) == "LINESTRING(0 0,1 1)"
    multi = b"\x01" + struct.pack("<II", 4, 2) + point + point
    assert wkb_to_wkt(multi) == "MULTIPOINT((1.5 -2),(1.5 -2))"
    # a stored value: the SRID (little-endian) before the WKB; 0 leaves it out, as PostGIS's EWKT does
    assert geometry_text(struct.pack("<I", 4326) + point) == "SRID=4326;POINT(1.5 -2)"
    assert geometry_text(struct.pack("<I", 0) + point) == "POINT(1.5 -2)"
    # empty geometries as standard WKT; every double exact, negative zero with its sign
    for kind, name in ((7, "GEOMETRYCOLLECTION"), (4, "MULTIPOINT"), (2, "LINESTRING"), (3, "POLYGON")):
        assert wkb_to_wkt(b"\x01" + struct.pack("<II", kind, 0)) == f"{name} EMPTY"
    odd = b"\x01" + struct.pack("<Idd", 1, -0.0, 0.1 + 0.2)
    assert wkb_to_wkt(odd) == "POINT(-0 0.30000000000000004)"
    assert float(wkb_to_wkt(odd)[8:-1]) == 0.1 + 0.2


def test_pre_ga_rows_are_read_as_the_server_wrote_them():
    # MySQL 5.1.15-ndb's two PRE_GA_WRITE_ROWS events (at 242 and 315) insert one row each, a = 1:
    # binlog_base64_flag.result (beside the file in the corpus) shows `select * from t1` after
    # replaying bug32407.001 give `1`, `1`. A row is the record's null byte (its filler bit set),
    # then the INT.
    out = scan([PUBLIC / "Longhui__mysql-5.5.30" / "bug32407.001"], rows=True)
    assert [(r["event_pos"], r["op"], r["after"]) for r in out["row_change"]] == \
        [(242, "insert", {"col_1": 1}), (315, "insert", {"col_1": 1})]
    assert out["anomaly"] == []


def test_a_row_image_past_the_events_end_is_a_decode_error():
    # the same event read as v1 (what binlake did): its third "row" reads a 4-byte INT from 2
    # bytes; any row image running past the event is an error, never a value made up
    from binlake.binlog import constants as c
    from binlake.binlog.rows import decode_rows
    from binlake.binlog.tablemap import decode_table_map
    from binlake.errors import RowDecodeError

    tm = decode_table_map(bytes.fromhex("1100000000000000047465737400027431000103"), 8, "mysql")
    body = bytes.fromhex("110000000000010001fffd01000000")
    with pytest.raises(RowDecodeError, match="past the event's end"):
        decode_rows(c.WRITE_ROWS_EVENT_V1, body, 8, tm, "mysql")
    assert decode_rows(c.PRE_GA_WRITE_ROWS_EVENT, body, 8, tm, "mysql").rows == [(None, {"col_1": 1})]
