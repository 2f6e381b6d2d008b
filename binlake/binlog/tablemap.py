"""TABLE_MAP events: a table's columns as the binlog maps them, decoded with mysql-replication.

What the package lacks is added here: 4-byte table ids (MySQL 5.1), VECTOR columns (read as the
BLOBs they are laid out as), MariaDB COMPRESSED columns, optional metadata of newer servers.
Where the TABLE_MAP does not name its columns (MySQL's default MINIMAL row metadata), whoever
knows the table (a schema history: binlake.schema.check.known_columns) may give its columns
(KnownColumn): they are checked against what the TABLE_MAP logs, and where they agree they name
the columns; where they do not, the columns keep positional names and the map says why
(`mismatch`). A TableMap is immutable: one decoded map serves every transaction of its table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pymysqlreplication.constants import FIELD_TYPE

from binlake.binlog import charsets, fastrows
from binlake.binlog import constants as c
from binlake.binlog.replication import apply_unnamed_metadata, decode_event
from binlake.binlog.varlen import read_packed
from binlake.errors import RowDecodeError


class _Unnamed:
    """The members of an ENUM or SET whose names the TABLE_MAP does not carry: member i is i, so the
    package reads an ENUM's index and a SET's bits (its set_values are iterated: 64 at most)."""

    def __getitem__(self, i: int) -> int:
        return i

    def __iter__(self):
        return iter(range(64))

    def __bool__(self) -> bool:
        return True


UNNAMED = _Unnamed()


@dataclass(frozen=True, slots=True)
class KnownColumn:
    """What the codec is told of a column by whoever knows its table: its name and declared type,
    the shape the server logs for it (its type code and metadata, binlake.schema.check), and what a
    TABLE_MAP may leave out (signedness, charset, ENUM/SET members)."""

    name: str
    type: str  # as declared (information_schema's COLUMN_TYPE): the words of a disagreement
    shape: tuple | None  # (type code, metadata...) the server logs; None: not checkable (an unknown charset)
    charset: str | None = None  # MySQL's name of it
    string: bool = False  # a string type: a disagreement names its charset
    unsigned: bool = False
    members: tuple[str, ...] = ()  # of an ENUM or SET
    text: str | None = None  # MariaDB's UUID / INET6 / INET4: its value is the server's text


@dataclass(frozen=True, slots=True, eq=False)  # one decoded map per table: known by identity
class TableMap:
    table_id: int
    schema: str
    table: str
    column_names: tuple[str, ...]
    column_types: tuple[int, ...]
    table_obj: Any = field(repr=False, default=None)  # the package's Table, as decoded and named here
    vectors: frozenset[int] = frozenset()
    charset_unknown: frozenset[int] = frozenset()  # string columns without charset metadata
    fast: tuple | None = field(repr=False, default=None)  # the compiled decoder's plan (fastrows)
    json_keys: tuple | None = field(repr=False, default=None)  # its columns' JSON keys (fastrows.render)
    mismatch: str | None = None  # how it disagrees with the known columns (positional names)
    logged_names: bool = False  # the binlog names its columns (binlog_row_metadata=FULL)
    nullable: tuple[bool, ...] = ()  # per column, as the TABLE_MAP's null bitmap says
    # MariaDB COMPRESSED columns: their codec (None: bytes)
    compressed: Mapping[int, str | None] = field(default_factory=lambda: MappingProxyType({}))


def normalise_table_id(body: bytes, post_header_len: int) -> bytes:
    """MySQL 5.1.x wrote 4-byte table ids (post-header 6): widen to today's 6 bytes."""
    if post_header_len == 6:
        return body[:4] + b"\0\0" + body[4:]
    return body


def table_map_name(body, post_header_len: int) -> tuple[str, str]:
    """A TABLE_MAP's database and table names, without decoding its columns."""
    b = normalise_table_id(bytes(body), post_header_len)
    slen = b[8]
    tlen = b[9 + slen + 1]
    return (b[9:9 + slen].decode("utf-8", "replace"), b[9 + slen + 2:9 + slen + 2 + tlen].decode("utf-8", "replace"))


class TableMapCache:
    """TABLE_MAP events decoded once each: every transaction maps its tables again with the same
    bytes, and gets the same (immutable) TableMap. Owned by a walk: its lifetime is the file's."""

    def __init__(self, flavor: str, most: int = 1024) -> None:
        self.flavor = flavor
        self.most = most
        self.decoded: dict[tuple[bytes, int, tuple[KnownColumn, ...] | None], TableMap] = {}

    def decode(self, body, post_header_len: int, known: tuple[KnownColumn, ...] | None = None) -> TableMap:
        key = (bytes(body), post_header_len, known)
        tm = self.decoded.get(key)
        if tm is None:
            if len(self.decoded) >= self.most:
                self.decoded.clear()
            tm = self.decoded[key] = decode_table_map(key[0], post_header_len, self.flavor, known)
        return tm


def decode_table_map(body, post_header_len: int, flavor: str, known: tuple[KnownColumn, ...] | None = None
                     ) -> TableMap:
    """The TABLE_MAP's table, checked against and named by `known` (its columns, in order) when given."""
    b = normalise_table_id(bytes(body), post_header_len)
    try:
        # VECTOR (MySQL 9) is unknown to the package: present it as a BLOB (same
        # metadata and value layout) and turn the bytes into floats afterwards.
        pos = 8
        slen = b[pos]
        pos += 1 + slen + 1
        tlen = b[pos]
        pos += 1 + tlen + 1
        ncols, pos = read_packed(b, pos)
        types = tuple(b[pos:pos + ncols])
        vectors = frozenset(i for i, t in enumerate(types) if t == c.VECTOR)
        squeezed = frozenset(i for i, t in enumerate(types) if t in _COMPRESSED_AS)
        if vectors or squeezed:
            b = b[:pos] + bytes(_COMPRESSED_AS.get(t, FIELD_TYPE.BLOB if t == c.VECTOR else t) for t in types) \
                + b[pos + ncols:]
        if len(b) == pos + ncols:  # MySQL 5.1 before 5.1.16: no column metadata
            needing = [t for t in types if t in _NEEDS_METADATA]
            if needing:
                raise RowDecodeError(
                    f"TABLE_MAP of {b[9:9 + slen].decode(errors='replace')}."
                    f"{b[9 + slen + 2:9 + slen + 2 + tlen].decode(errors='replace')} has no column "
                    "metadata (MySQL 5.1 before 5.1.16): its values need the table definition")
            b += b"\0" + bytes((ncols + 7) // 8)
        b = _known_metadata_only(b, pos + ncols, ncols)
        tables: dict = {}
        ev = decode_event(c.TABLE_MAP_EVENT, b, flavor, tables=tables, post_header_lens=b"")
        named = bool(ev.optional_metadata.column_name_list)
        if not named:
            apply_unnamed_metadata(ev, UNNAMED)
        t = ev.get_table()
    except RowDecodeError:
        raise
    except Exception as e:  # noqa: BLE001 - the package raises whatever its reads hit: say what
        raise RowDecodeError(f"TABLE_MAP: {type(e).__name__}: {e}") from None
    mismatch = None
    if known is not None:
        mismatch = disagreement(known, t.columns, types, [col.name for col in t.columns] if named else None)
        if mismatch is None:
            _name_by(t.columns, known, named)
    names = tuple(col.name or f"col_{i + 1}" for i, col in enumerate(t.columns))
    guessed = set()
    compressed: dict[int, str | None] = {}
    for i, col in enumerate(t.columns):
        col.name = names[i]
        col.character_set_name = charsets.codec(col.character_set_name)
        if i in squeezed:  # the package reads the compressed bytes; values.Converter uncompresses and decodes them
            compressed[i] = None if col.character_set_name in (None, "binary") else col.character_set_name
            if col.character_set_name is None:  # no charset logged: UTF-8 when it decodes, as other strings
                guessed.add(i)
            col.character_set_name = "binary"
        if col.character_set_name is None and col.type in _STRING_TYPES:
            # No charset in the metadata: take the bytes, and decide per value (UTF-8 or base64).
            col.character_set_name = "binary"
            guessed.add(i)
    nullable = tuple(bool(ev.null_bitmask[i // 8] & (1 << (i % 8))) for i in range(len(t.columns)))
    unknown = frozenset(guessed)
    fast = fastrows.plan(t.columns, vectors=vectors, charset_unknown=unknown, compressed=compressed)
    keys = fastrows.json_keys(fast) if fast is not None else None
    return TableMap(ev.table_id, ev.schema, ev.table, names, types, table_obj=t, vectors=vectors,
                    charset_unknown=unknown, fast=fast, json_keys=keys, mismatch=mismatch, logged_names=named,
                    nullable=nullable, compressed=MappingProxyType(compressed))


def _name_by(columns, known: tuple[KnownColumn, ...], named: bool) -> None:
    """What the known columns say and the TABLE_MAP does not log: names, signedness and charsets
    (NO_LOG), ENUM and SET members, MariaDB's typed texts. Only once the two are seen to agree."""
    for col, mine in zip(columns, known, strict=True):
        if mine.text is not None:
            col.typed_text = mine.text  # its value is the server's text (values.typed_text)
        if named:
            continue
        col.name = mine.name
        col.unsigned = col.unsigned or mine.unsigned
        if col.character_set_name is None and mine.charset:
            col.character_set_name = mine.charset if mine.charset == "binary" else charsets.of_charset(mine.charset)
        if col.enum_values is UNNAMED:
            col.enum_values = ["", *mine.members]
        if col.set_values is UNNAMED:
            col.set_values = list(mine.members)


def disagreement(known: tuple[KnownColumn, ...], columns: list, type_codes: tuple[int, ...],
                 logged_names: list[str] | None) -> str | None:
    """Why the TABLE_MAP's columns (the package's, and their logged type codes) are not the known
    ones, or None when they are."""
    if len(columns) != len(known):
        return f"the history has {len(known)} columns, the TABLE_MAP {len(columns)}"
    for i, (mine, col) in enumerate(zip(known, columns, strict=True)):
        if logged_names is not None and logged_names[i].lower() != mine.name.lower():
            return f"column {i + 1} is `{logged_names[i]}` in the binlog, `{mine.name}` in the history"
        got = observed(col, type_codes[i])
        if mine.shape is None:
            return f"column {i + 1} `{mine.name}` {mine.type}: charset {mine.charset!r} unknown, not checkable"
        if mine.shape != got:
            return (f"column {i + 1} `{mine.name}` is {mine.type}"
                    f"{' ' + mine.charset if mine.charset and mine.string else ''} in the history "
                    f"(logged as {_shape_text(mine.shape)}), {_shape_text(got)} in the binlog")
    return None


def observed(col, type_code: int) -> tuple:
    """The shape a TABLE_MAP gives a column: the package's Column and the logged type code."""
    t = col.type
    if type_code in (c.VARCHAR_COMPRESSED, c.BLOB_COMPRESSED):  # read as the VARCHAR or BLOB it holds
        return (type_code, *observed(col, t)[1:])
    if type_code == c.VECTOR:
        return (c.VECTOR,)
    if t in (FIELD_TYPE.FLOAT, FIELD_TYPE.DOUBLE):
        return (t, col.size)
    if t == FIELD_TYPE.NEWDECIMAL:
        return (t, col.precision, col.decimals)
    if t in (FIELD_TYPE.DATETIME2, FIELD_TYPE.TIMESTAMP2, FIELD_TYPE.TIME2):
        return (t, col.fsp)
    if t == FIELD_TYPE.BIT:
        return (t, col.bits)
    if t in (FIELD_TYPE.ENUM, FIELD_TYPE.SET):
        return (t, col.size)
    if t in (FIELD_TYPE.BLOB, FIELD_TYPE.JSON, FIELD_TYPE.GEOMETRY):
        return (t, col.length_size)
    if t in (FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING, FIELD_TYPE.VAR_STRING):
        return (FIELD_TYPE.STRING if t == FIELD_TYPE.VAR_STRING else t, col.max_length)
    return (t,)


_TYPE_NAMES = {v: k for k, v in sorted(vars(FIELD_TYPE).items(), reverse=True) if k.isupper()} | {
    FIELD_TYPE.TINY: "TINY", FIELD_TYPE.ENUM: "ENUM", c.VECTOR: "VECTOR"}


def _shape_text(shape: tuple) -> str:
    return _TYPE_NAMES.get(shape[0], str(shape[0])) + (f" {list(shape[1:])}" if len(shape) > 1 else "")


_NEEDS_METADATA = frozenset({
    FIELD_TYPE.FLOAT, FIELD_TYPE.DOUBLE, FIELD_TYPE.VARCHAR, FIELD_TYPE.VAR_STRING, FIELD_TYPE.STRING,
    FIELD_TYPE.BLOB, FIELD_TYPE.GEOMETRY, FIELD_TYPE.JSON, FIELD_TYPE.NEWDECIMAL, FIELD_TYPE.BIT,
    FIELD_TYPE.TIMESTAMP2, FIELD_TYPE.DATETIME2, FIELD_TYPE.TIME2, FIELD_TYPE.ENUM, FIELD_TYPE.SET})
# MariaDB's compressed column types as the package reads their bytes: same metadata, same layout
_COMPRESSED_AS = {c.BLOB_COMPRESSED: FIELD_TYPE.BLOB, c.VARCHAR_COMPRESSED: FIELD_TYPE.VARCHAR}
_STRING_TYPES = frozenset({FIELD_TYPE.VARCHAR, FIELD_TYPE.VAR_STRING, FIELD_TYPE.STRING, FIELD_TYPE.BLOB})
_KNOWN_METADATA = frozenset(range(1, 13))  # what the package's MetadataFieldType knows


def _known_metadata_only(b: bytes, pos: int, ncols: int) -> bytes:
    """Drop optional-metadata fields of newer servers (e.g. MySQL 9's VECTOR dimensions)."""
    mlen, pos = read_packed(b, pos)
    pos += mlen + (ncols + 7) // 8
    head, fields = b[:pos], b[pos:]
    kept = bytearray()
    i = 0
    while i < len(fields):
        ftype = fields[i]
        flen, j = read_packed(fields, i + 1)
        if ftype in _KNOWN_METADATA:
            kept += fields[i:j + flen]
        i = j + flen
    return head + bytes(kept)
