"""MySQL's column types as the row versions' Delta columns hold them, exactly (docs/tables.md, "Types").

Each column gets a `Kind`: its Spark SQL type, how a value in docs/row-values.md's form becomes
the text the Spark job casts into that type (`stage`: a value the type cannot hold — a zero date —
stays whole in `_raw` instead), and how a value read back from Delta (a Python value of the Arrow
column, as delta-rs and Spark give it) becomes the row-values form again (`value`). The two are
inverses: a row image's value read back through its typed column is the same value.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import orjson

from binlake.schema.model import Column

Staged = tuple[str | None, str | None]  # (the text Spark casts, the value's JSON text for _raw)
_NULL: Staged = (None, None)
_INTEGERS = {  # (signed, unsigned) Spark types; mediumint fits an INT either way
    "tinyint": ("TINYINT", "SMALLINT"), "smallint": ("SMALLINT", "INT"), "mediumint": ("INT", "INT"),
    "int": ("INT", "BIGINT"), "integer": ("INT", "BIGINT"), "bigint": ("BIGINT", "DECIMAL(20,0)"),
}
_TEXT = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "uuid", "inet4", "inet6"}
_BYTES = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}
_SPATIAL = {"geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
            "geometrycollection", "geomcollection"}
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_DATETIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$")
_TIME = re.compile(r"^(-?)(\d+):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$")


@dataclass(frozen=True)
class Kind:
    """How one column's values are held: `spark` its Spark SQL type, `cast` the Spark SQL that
    turns the staged text `{}` into it, `stage` and `value` the two directions (module doc)."""

    name: str  # what it is, for messages and tests
    spark: str
    cast: str
    stage: Callable[[Any], Staged]
    value: Callable[[Any, str | None], Any]  # (the typed value, its _raw text) -> the row value


def _json(v: Any) -> str:
    return orjson.dumps(v).decode()


def _text_stage(v: Any) -> Staged:
    return (v, None) if isinstance(v, str) else (None, _json(v))


def _plain(v: Any, raw: str | None) -> Any:
    return orjson.loads(raw) if raw is not None else v


def _int_stage(v: Any) -> Staged:
    return (str(v), None) if isinstance(v, int) and not isinstance(v, bool) else (None, _json(v))


def _int_value(v: Any, raw: str | None) -> Any:
    if raw is not None:
        return orjson.loads(raw)
    return int(v) if v is not None else None


def _float_stage(v: Any) -> Staged:
    return (repr(float(v)), None) if isinstance(v, int | float) and not isinstance(v, bool) else (None, _json(v))


def _float_value(v: Any, raw: str | None) -> Any:
    return orjson.loads(raw) if raw is not None else (float(v) if v is not None else None)


def _decimal(scale: int) -> tuple[Callable[[Any], Staged], Callable[[Any, str | None], Any]]:
    def stage(v: Any) -> Staged:
        return (v, None) if isinstance(v, str) else (None, _json(v))

    def value(v: Any, raw: str | None) -> Any:
        if raw is not None:
            return orjson.loads(raw)
        if v is None:
            return None
        return f"{Decimal(v):.{scale}f}" if not isinstance(v, str) else v

    return stage, value


def _date_stage(v: Any) -> Staged:
    if isinstance(v, str) and _DATE.match(v):
        try:
            dt.date.fromisoformat(v)
            return v, None
        except ValueError:
            pass
    return None, _json(v)


def _date_value(v: Any, raw: str | None) -> Any:
    if raw is not None:
        return orjson.loads(raw)
    return f"{v.year:04d}-{v.month:02d}-{v.day:02d}" if v is not None else None


def _stamp_stage(v: Any) -> Staged:
    m = _DATETIME.match(v) if isinstance(v, str) else None
    if m:
        try:
            y, mo, d, h, mi, sec = (int(g) for g in m.groups()[:6])
            dt.datetime(y, mo, d, h, mi, sec)
            return v, None
        except ValueError:
            pass
    return None, _json(v)


def _stamp(fsp: int) -> Callable[[Any, str | None], Any]:
    def value(v: Any, raw: str | None) -> Any:
        if raw is not None:
            return orjson.loads(raw)
        if v is None:
            return None
        s = f"{v.year:04d}-{v.month:02d}-{v.day:02d} {v.hour:02d}:{v.minute:02d}:{v.second:02d}"
        return f"{s}.{v.microsecond:06d}"[:20 + fsp] if fsp else s

    return value


def time_micros(text: str) -> int | None:
    """A TIME's row-values text as signed microseconds; None for a text that is not one."""
    m = _TIME.match(text)
    if not m:
        return None
    sign, h, mi, s, frac = m.groups()
    us = ((int(h) * 60 + int(mi)) * 60 + int(s)) * 1_000_000 + int((frac or "").ljust(6, "0") or 0)
    return -us if sign else us


def time_text(us: int, fsp: int) -> str:
    """Signed microseconds as a TIME's row-values text with `fsp` fraction digits."""
    sign = "-" if us < 0 else ""
    s, frac = divmod(abs(us), 1_000_000)
    h, rest = divmod(s, 3600)
    text = f"{sign}{h:02d}:{rest // 60:02d}:{rest % 60:02d}"
    return f"{text}.{frac:06d}"[:len(text) + 1 + fsp] if fsp else text


def _time_stage(v: Any) -> Staged:
    us = time_micros(v) if isinstance(v, str) else None
    return (str(us), None) if us is not None else (None, _json(v))


def _time(fsp: int) -> Callable[[Any, str | None], Any]:
    def value(v: Any, raw: str | None) -> Any:
        if raw is not None:
            return orjson.loads(raw)
        return time_text(int(v), fsp) if v is not None else None

    return value


def _bytes_stage(v: Any) -> Staged:
    if isinstance(v, str) and v.startswith("base64:"):
        return v[7:], None
    return None, _json(v)


def _bytes_value(v: Any, raw: str | None) -> Any:
    if raw is not None:
        return orjson.loads(raw)
    return "base64:" + base64.b64encode(bytes(v)).decode("ascii") if v is not None else None


def _list_stage(v: Any) -> Staged:
    return (_json(v), None) if isinstance(v, list) else (None, _json(v))


def _list_value(v: Any, raw: str | None) -> Any:
    if raw is not None:
        return orjson.loads(raw)
    return [float(x) if isinstance(x, float) else x for x in v] if v is not None else None


def _json_stage(v: Any) -> Staged:
    return _json(v), None


def _json_value(v: Any, raw: str | None) -> Any:
    if raw is not None:
        return orjson.loads(raw)
    return orjson.loads(v) if v is not None else None


UNTYPED = Kind("untyped", "STRING", "{}", _json_stage, _json_value)
_STRING = Kind("text", "STRING", "{}", _text_stage, _plain)
_DOUBLE = Kind("double", "DOUBLE", "CAST({} AS DOUBLE)", _float_stage, _float_value)
_FLOAT = Kind("float", "FLOAT", "CAST({} AS FLOAT)", _float_stage, _float_value)
_DATE_KIND = Kind("date", "DATE", "CAST({} AS DATE)", _date_stage, _date_value)
_BINARY = Kind("binary", "BINARY", "unbase64({})", _bytes_stage, _bytes_value)
_SET = Kind("set", "ARRAY<STRING>", "from_json({}, 'array<string>')", _list_stage, _list_value)
_VECTOR = Kind("vector", "ARRAY<FLOAT>", "from_json({}, 'array<float>')", _list_stage, _list_value)
_JSON = Kind("json", "STRING", "{}", _json_stage, _json_value)
_GEOMETRY = Kind("geometry", "STRING", "{}", _text_stage, _plain)


def _integer(spark: str) -> Kind:
    return Kind("integer", spark, f"CAST({{}} AS {spark})", _int_stage, _int_value)


def kind_of(col: Column | None) -> Kind:
    """The Kind of a schema history's column; UNTYPED for a column the history does not type."""
    if col is None:
        return UNTYPED
    base, params = col.base, col.params
    if base in _INTEGERS:
        return _integer(_INTEGERS[base][col.unsigned])
    if base in ("decimal", "numeric", "dec", "fixed"):
        p, s = (list(params) + [10, 0])[:2] if params else (10, 0)
        stage, value = _decimal(s)
        if p > 38:
            return Kind(f"decimal({p},{s})", "STRING", "{}", stage, value)
        return Kind(f"decimal({p},{s})", f"DECIMAL({p},{s})", f"CAST({{}} AS DECIMAL({p},{s}))", stage, value)
    if base in ("double", "real") or (base == "float" and params and params[0] > 24):
        return _DOUBLE
    if base == "float":
        return _FLOAT
    if base in ("bit",):
        return _integer("DECIMAL(20,0)" if (params or (1,))[0] > 63 else "BIGINT")
    if base in ("year",):
        return _integer("SMALLINT")
    if base in ("bool", "boolean"):
        return _integer("TINYINT")
    if base == "date":
        return _DATE_KIND
    fsp = params[0] if params else 0
    if base == "datetime":
        return Kind(f"datetime({fsp})", "TIMESTAMP_NTZ", "CAST({} AS TIMESTAMP_NTZ)", _stamp_stage, _stamp(fsp))
    if base == "timestamp":
        return Kind(f"timestamp({fsp})", "TIMESTAMP", "CAST({} AS TIMESTAMP)", _stamp_stage, _stamp(fsp))
    if base == "time":
        return Kind(f"time({fsp})", "BIGINT", "CAST({} AS BIGINT)", _time_stage, _time(fsp))
    if base in _TEXT:
        return _STRING
    if base in _BYTES:
        return _BINARY
    if base == "set":
        return _SET
    if base == "json":
        return _JSON
    if base in _SPATIAL:
        return _GEOMETRY
    if base == "vector":
        return _VECTOR
    return UNTYPED
