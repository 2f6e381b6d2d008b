"""The type matrix of tests/test_type_matrix.py: each column type, the values written to it, and
how the server's own rendering of each stored value becomes binlake's documented form.

A case is one table `(id INT PRIMARY KEY, v <type>)` and one row per value (an SQL expression,
evaluated by the server). Its oracle is a list of SQL expressions over `v` that the server
answers as text (`CAST(… AS CHAR)`, `HEX()`, `CONVERT(… USING utf8mb4)`, `ST_AsText()`,
`ST_SRID()`), and `form` maps that text into the JSON value docs/row-values.md promises: the
server's text is the truth, the form only changes its spelling (a number's text into the
number, bytes into `base64:`, an SRID and WKT into EWKT). Nothing here calls binlake.
"""

from __future__ import annotations

import base64
import json
import math
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

BOTH = ("mysql", "mariadb")


@dataclass(frozen=True)
class Case:
    name: str  # the table's name
    sql_type: str  # the column's definition
    values: tuple[str, ...]  # SQL expressions, one row each
    oracle: tuple[str, ...]  # SQL expressions over v, the server's text of the stored value
    form: Callable[..., Any]  # the oracle's answers (None for NULL) -> binlake's JSON value
    flavors: tuple[str, ...] = BOTH


# -- forms: the server's text -> docs/row-values.md's JSON value ----------------------------

def number(text: str) -> int | float:
    """An integer's or a double's text as the JSON number (a double's text is the shortest that
    reads back as the same double on both servers, `-0` keeps its sign)."""
    return int(text) if re.fullmatch(r"-?\d+", text) and text != "-0" else float(text)


def double(text: str) -> float:
    """A FLOAT's or DOUBLE's text (the shortest that reads back as the same double on both servers;
    `-0` keeps its sign) as the JSON number, always a float."""
    return float(text)


def as_is(text: str) -> str:
    return text


def b64(hex_text: str) -> str:
    """HEX() of bytes as binlake writes bytes: `base64:` and the standard base64."""
    return "base64:" + base64.b64encode(bytes.fromhex(hex_text)).decode()


def members(text: str) -> list[str]:
    """A SET's text (`a,c`) as the list of its members in definition order (the server's order)."""
    return text.split(",") if text else []


def floats32(hex_text: str) -> list[float]:
    """A VECTOR's HEX(): little-endian float32s, each as its exact value."""
    raw = bytes.fromhex(hex_text)
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def json_document(text: str, kind: str) -> Any:
    """MySQL's JSON text (`CAST(v AS CHAR)`) as the JSON value; a DECIMAL (JSON_TYPE says so) is
    the string of its digits as the server writes them, which a JSON number would round."""
    return text if kind == "DECIMAL" else json.loads(text)


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _coordinate(m: re.Match) -> str:
    x = float(m.group())
    if x == int(x) and abs(x) < 1e15:
        return "-0" if x == 0 and math.copysign(1.0, x) < 0 else str(int(x))
    return repr(x)


def ewkt(srid: str, wkt: str) -> str:
    """ST_SRID() and the WKT of the stored coordinates as EWKT: `SRID=n;` unless 0, each number
    respelt as the shortest text of its double (an integral one without `.0`)."""
    text = _NUMBER.sub(_coordinate, wkt)
    return f"SRID={srid};{text}" if srid != "0" else text


# -- the cases -------------------------------------------------------------------------------

def _ints() -> list[Case]:
    out = []
    for name, bits in (("tinyint", 8), ("smallint", 16), ("mediumint", 24), ("int", 32), ("bigint", 64)):
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        out.append(Case(name, name.upper(), (str(lo), str(hi), "0", "-1", "NULL"), ("CAST(v AS CHAR)",), number))
        out.append(Case(f"{name}_u", f"{name.upper()} UNSIGNED", ("0", str((1 << bits) - 1), str(hi + 1)),
                        ("CAST(v AS CHAR)",), number))
    return out


_D65 = "9" * 35 + "." + "9" * 30
DECIMALS = [
    Case("dec65_30", "DECIMAL(65,30)", (_D65, "-" + _D65, "0", "-0.0", "-0." + "0" * 29 + "1", "1.5"),
         ("CAST(v AS CHAR)",), as_is),
    Case("dec65_0", "DECIMAL(65,0)", ("9" * 65, "-" + "9" * 65, "-0"), ("CAST(v AS CHAR)",), as_is),
    Case("dec30_30", "DECIMAL(30,30)", ("0." + "9" * 30, "-0." + "9" * 30, "-0.000"), ("CAST(v AS CHAR)",), as_is),
    Case("dec10_2", "DECIMAL(10,2)", ("-0.00", "-12345678.91", "0.01", "-0.01"), ("CAST(v AS CHAR)",), as_is),
]

FLOATS = [  # `v * 1e0`: the stored float32 as the double it is exactly (`+ 0e0` would lose -0's sign)
    Case("float", "FLOAT", ("-0e0", "0", "1.401298464324817e-45", "1.1754942106924411e-38",
                            "3.4028234663852886e38", "-3.4028234663852886e38", "0.1", "NULL"),
         ("CAST(v * 1e0 AS CHAR)",), double),
    Case("double", "DOUBLE", ("-0e0", "4.9406564584124654e-324", "2.2250738585072009e-308",
                              "1.7976931348623157e308", "-1.7976931348623157e308", "0.1", "1e-300"),
         ("CAST(v AS CHAR)",), double),
]

BITS = [Case(f"bit{n}", f"BIT({n})", ("0", str((1 << n) - 1), str(0x5555555555555555 & ((1 << n) - 1))),
             ("CAST(v + 0 AS CHAR)",), number) for n in (1, 7, 8, 9, 16, 31, 33, 63, 64)]


def _fraction(digits: str, fsp: int) -> str:
    return "." + digits[:fsp] if fsp else ""


TEMPORALS = [
    Case("date", "DATE", ("'0000-00-00'", "'1000-01-01'", "'9999-12-31'", "'0001-01-01'", "'2024-02-29'"),
         ("CAST(v AS CHAR)",), as_is),
    *[Case(f"datetime{n}", f"DATETIME({n})",
           ("'0000-00-00 00:00:00'", "'1000-01-01 00:00:00'", f"'9999-12-31 23:59:59{_fraction('999999', n)}'",
            f"'0001-01-01 00:00:00{_fraction('000001', n)}'", f"'2026-02-03 04:05:06{_fraction('123456', n)}'"),
           ("CAST(v AS CHAR)",), as_is) for n in range(7)],
    *[Case(f"timestamp{n}", f"TIMESTAMP({n}) NULL",
           ("'0000-00-00 00:00:00'", "'1970-01-01 00:00:01'", f"'2038-01-19 03:14:07{_fraction('999999', n)}'",
            f"'2001-02-03 04:05:06{_fraction('000001', n)}'", "NULL"),
           ("CAST(v AS CHAR)",), as_is) for n in range(7)],
    *[Case(f"time{n}", f"TIME({n})",
           ("'00:00:00'", "'-838:59:59'", "'838:59:59'", f"'-00:00:00{_fraction('000001', n)}'",
            f"'-01:02:03{_fraction('999999', n)}'", f"'-00:00:01{_fraction('500000', n)}'",
            f"'12:34:56{_fraction('123456', n)}'"),
           ("CAST(v AS CHAR)",), as_is) for n in range(7)],
    Case("year", "YEAR", ("0", "1901", "2155", "2000"), ("CAST(v + 0 AS CHAR)",), number),
]

# A text each charset holds, besides ASCII with trailing spaces (CHAR drops them, as the server's
# SELECT shows; VARCHAR and TEXT keep them).
SAMPLES = {
    "utf8mb4": "b🚀ü漢", "utf8mb3": "ü漢€", "latin1": "é€ÿŠ", "latin2": "łśćŽ", "cp1251": "Жизнь",
    "ucs2": "Ωж漢", "utf16": "😀漢ü", "utf16le": "😀漢ü", "utf32": "😀漢ü", "sjis": "日本語ｱ",
    "cp932": "日本語①", "gb18030": "中文😀", "big5": "中文字", "euckr": "한국어",
}

RAW = {"latin1": ("x'818d8f909d80'",)}  # bytes cp1252 leaves undefined: MySQL's latin1 reads them


def _texts() -> list[Case]:
    out = []
    for cs, sample in SAMPLES.items():
        flavors = ("mysql",) if cs == "gb18030" else BOTH  # MariaDB has no gb18030
        values = (f"_utf8mb4'{sample}'", "_utf8mb4'a b  '", "''", "_utf8mb4' x'", "NULL", *RAW.get(cs, ()))
        for kind, sql in (("char", "CHAR(10)"), ("varchar", "VARCHAR(20)"), ("text", "TEXT")):
            out.append(Case(f"{kind}_{cs}", f"{sql} CHARACTER SET {cs}", values,
                            ("CONVERT(v USING utf8mb4)",), as_is, flavors))
    return out


BINARIES = [
    Case(f"{kind}_bin", sql, ("x''", "x'00'", "x'610000'", "x'00ff00'", "x'0000000000'", "NULL"), ("HEX(v)",), b64)
    for kind, sql in (("char", "CHAR(5) CHARACTER SET binary"), ("varchar", "VARCHAR(8) CHARACTER SET binary"),
                      ("binary", "BINARY(5)"), ("varbinary", "VARBINARY(8)"), ("tinyblob", "TINYBLOB"),
                      ("blob", "BLOB"), ("mediumblob", "MEDIUMBLOB"), ("longblob", "LONGBLOB"),
                      ("text", "TEXT CHARACTER SET binary"))
] + [Case("binary255", "BINARY(255)", ("x'00'", "x'" + "ab" * 254 + "00'"), ("HEX(v)",), b64)]

_ENUM = ",".join(f"'m{i}'" for i in range(300))
_SET = ",".join(f"'s{i}'" for i in range(64))
MEMBERS = [
    Case("enum300", f"ENUM({_ENUM})", ("'m0'", "'m254'", "'m255'", "'m299'", "''", "NULL"),
         ("CAST(v AS CHAR)",), as_is),
    Case("set64", f"SET({_SET})", ("''", "'s0'", "'s63'", "'s63,s0,s31,s32'", _SET.replace("','", ",")),
         ("CAST(v AS CHAR)",), members),
]

_DEEP = "[" * 99 + "1" + "]" * 99  # MySQL's deepest document is 100 levels
_DEEP31 = "[" * 31 + "1" + "]" * 31  # MariaDB's JSON_VALID takes fewer than 32
_LARGE = "'{" + ", ".join(f'"k{i}": [{i}, "v{i}", {{"n": {i}.5}}]' for i in range(3000)) + "}'"  # over 64 KiB
JSONS = [
    Case("json", "JSON", (
        "'null'", "'true'", "'false'", "'0'", "'-1'", "'9223372036854775807'", "'-9223372036854775808'",
        "'18446744073709551615'", "'1.5e300'", "'-0.0'", "'0.1'", "'\"text ü😀\\\\n\\\\\"\"'", "'\"\"'", "'[]'",
        "'{}'", "'{\"a\": [1, 2.5, {\"b\": null}], \"\": true}'", f"'{_DEEP}'",
        "CAST(CAST(12.50 AS DECIMAL(5,2)) AS JSON)", "CAST(CAST(-0.000001 AS DECIMAL(20,6)) AS JSON)",
        "CAST(CAST(0 AS DECIMAL(65,30)) AS JSON)", "CAST(CAST('-0.0000001' AS DECIMAL(65,30)) AS JSON)",
        f"CAST(CAST('-{_D65}' AS DECIMAL(65,30)) AS JSON)",
        "CAST(DATE'2026-01-02' AS JSON)", "CAST(TIME'12:34:56.789' AS JSON)", "CAST(TIME'-838:59:59' AS JSON)",
        "CAST(TIMESTAMP'2026-01-02 03:04:05.678901' AS JSON)", "CAST(CAST('2026-01-02 03:04:05' AS DATETIME) AS JSON)",
        "JSON_ARRAY(REPEAT('y', 70000), JSON_OBJECT('k', REPEAT('z', 70000)))", _LARGE, "NULL"),
        ("CAST(v AS CHAR)", "JSON_TYPE(v)"), json_document, ("mysql",)),
    # MariaDB's JSON is LONGTEXT with a check: the text as written
    Case("json_text", "JSON", ("'{\"a\": [1, 2.50]}'", "'\"ü😀\"'", "'  [ ]  '", f"'{_DEEP31}'", "NULL"),
         ("CONVERT(v USING utf8mb4)",), as_is, ("mariadb",)),
]

GEOMETRY_WKT = [
    "POINT(1 2)", "POINT(-0.5 1e-7)", "LINESTRING(0 0,-10.125 2.5,3 4)",
    "POLYGON((0 0,10 0,10 10,0 10,0 0),(1 1,2 1,2 2,1 1))", "MULTIPOINT((1 2),(3 4))",
    "MULTILINESTRING((0 0,1 1),(2 2,3 3))", "MULTIPOLYGON(((0 0,1 0,1 1,0 0)),((5 5,6 5,6 6,5 5)))",
    "GEOMETRYCOLLECTION(POINT(1 2),LINESTRING(0 0,1 1),GEOMETRYCOLLECTION(POINT(3 4)))",
    "GEOMETRYCOLLECTION EMPTY", "GEOMETRYCOLLECTION(GEOMETRYCOLLECTION EMPTY)",
]


def _geometries() -> list[Case]:
    out = []
    for flavor in BOTH:
        # the stored coordinates: MySQL's ST_AsText swaps a geographic SRS's axes unless its SRID is 0
        stored = "ST_AsText(ST_SRID(v, 0))" if flavor == "mysql" else "ST_AsText(v)"
        for srid in (0, 4326, 3857):
            values = tuple(f"ST_GeomFromText('{w}', {srid})" for w in GEOMETRY_WKT) + ("NULL",)
            out.append(Case(f"geometry_{srid}_{flavor}", "GEOMETRY", values, ("CAST(ST_SRID(v) AS CHAR)", stored),
                            ewkt, (flavor,)))
        for kind, wkt in (("point", "POINT(7 8)"), ("linestring", "LINESTRING(1 1,2 2)"),
                          ("polygon", "POLYGON((0 0,1 0,1 1,0 0))"), ("multipoint", "MULTIPOINT((1 1))"),
                          ("multilinestring", "MULTILINESTRING((1 1,2 2))"),
                          ("multipolygon", "MULTIPOLYGON(((0 0,1 0,1 1,0 0)))"),
                          ("geometrycollection", "GEOMETRYCOLLECTION(POINT(1 1))")):
            out.append(Case(f"{kind}_{flavor}", kind.upper(), (f"ST_GeomFromText('{wkt}')", "NULL"),
                            ("CAST(ST_SRID(v) AS CHAR)", stored), ewkt, (flavor,)))
    return out


VECTORS = [Case("vector", "VECTOR(4)", ("STRING_TO_VECTOR('[1, -1, 0, 3.4028234e38]')",  # no subnormals
                                        "STRING_TO_VECTOR('[1.1754944e-38, -0, 0.1, 2]')", "NULL"),
                ("HEX(v)",), floats32, ("mysql",))]

MARIADB_ONLY = [  # COMPRESSED columns: logged compressed, their value the server's text or bytes
    Case("varchar_compressed", "VARCHAR(1000) COMPRESSED", ("REPEAT('ab ü', 100)", "''", "'x'", "NULL"),
         ("CONVERT(v USING utf8mb4)",), as_is, ("mariadb",)),
    Case("text_compressed", "TEXT COMPRESSED", ("REPEAT('ab ü', 100)", "''", "'short'", "NULL"),
         ("CONVERT(v USING utf8mb4)",), as_is, ("mariadb",)),
    Case("blob_compressed", "BLOB COMPRESSED", ("REPEAT(x'00ff', 200)", "x''", "x'00'", "NULL"),
         ("HEX(v)",), b64, ("mariadb",)),
    Case("varbinary_compressed", "VARBINARY(1000) COMPRESSED", ("REPEAT(x'0001', 300)", "x'00'", "NULL"),
         ("HEX(v)",), b64, ("mariadb",)),
]

CASES: list[Case] = [*_ints(), *DECIMALS, *FLOATS, *BITS, *TEMPORALS, *_texts(), *BINARIES, *MEMBERS, *JSONS,
                     *_geometries(), *VECTORS, *MARIADB_ONLY]


def server_text(v):
    """A value as a cursor without conversions hands it over: bytes as their text."""
    return v.decode() if isinstance(v, bytes) else v


class _Number(str):
    """A number's text in the server's JSON text, as the server wrote it."""


def _numbers(v, path: str = "$"):
    """(path, text) of every number in a document read with _Number leaves."""
    if isinstance(v, dict):
        for k, x in v.items():
            yield from _numbers(x, f"{path}.{json.dumps(k)}")
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from _numbers(x, f"{path}[{i}]")
    elif isinstance(v, _Number):
        yield path, v


def typed_document(cur, table: str, row: int, text: str):
    """The server's JSON text of a document as binlake documents it: each number typed by the
    server's JSON_TYPE at its path, a DECIMAL the string of the digits the server wrote, an
    INTEGER the integer, a DOUBLE the float."""
    doc = json.loads(text, parse_float=_Number, parse_int=_Number)
    kinds = {}
    for path, _ in _numbers(doc):
        cur.execute(f"SELECT JSON_TYPE(JSON_EXTRACT(v, %s)) FROM {table} WHERE id = %s", (path, row))
        kinds[path] = cur.fetchone()[0]

    def typed(v, path: str = "$"):
        if isinstance(v, dict):
            return {k: typed(x, f"{path}.{json.dumps(k)}") for k, x in v.items()}
        if isinstance(v, list):
            return [typed(x, f"{path}[{i}]") for i, x in enumerate(v)]
        if isinstance(v, _Number):
            return {"DECIMAL": str, "INTEGER": int, "UNSIGNED INTEGER": int, "DOUBLE": float}[kinds[path]](v)
        return v

    return typed(doc)
