"""The schema at a point of a binlog, advanced by the binlog's own DDL.

A SchemaState starts from a snapshot (or from nothing) and replays each DDL statement the binlog
logs, with the statement's default database, parsed by sqlglot's MySQL dialect: CREATE TABLE
(with columns, LIKE), ALTER TABLE (ADD / DROP / MODIFY / CHANGE / RENAME COLUMN, FIRST / AFTER,
ALTER COLUMN … SET [IN]VISIBLE, RENAME TO, DEFAULT CHARSET), RENAME TABLE, DROP TABLE, CREATE /
DROP DATABASE; generated columns (VIRTUAL, STORED, MariaDB's PERSISTENT). A statement that
touches a table in a way it cannot follow (sqlglot cannot parse it, or a form listed nowhere above,
e.g. CONVERT TO CHARACTER SET) makes that table unknown until it is created again or a snapshot
gives it: its rows get positional names, never a guessed one.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import replace

import sqlglot
from pymysql.charset import charset_by_id
from sqlglot import exp

from binlake.binlog.tablemap import KnownColumn
from binlake.schema.check import BINARY_TYPES, MAXLEN, STRING_TYPES, known_columns
from binlake.schema.model import Column, Snapshot, Table, charset_of

log = logging.getLogger(__name__)

# Statements that may change a table's columns or a database's charset; everything else (DML,
# GRANT, indexes, views, triggers, routines…) is not parsed at all.
_DDL = re.compile(r"^(?:\s|/\*.*?\*/|#[^\n]*\n|--[^\n]*\n)*(?:CREATE|ALTER|DROP|RENAME)\s+"
                  r"(?:OR\s+REPLACE\s+|TEMPORARY\s+|ONLINE\s+|OFFLINE\s+|IGNORE\s+)*(?:TABLES?|DATABASE|SCHEMA)\b",
                  re.I | re.S)
# /*!80023 INVISIBLE */, /*M!100100 … */: comments the server executes (it ran the statement)
_EXECUTABLE = re.compile(r"/\*M?!\d{5,6}\s?(.*?)\*/", re.S)
_IDENT = r"(?:`(?:[^`]|``)+`|[\w$]+)"
_QUALIFIED = re.compile(rf"\s*({_IDENT})(?:\s*\.\s*({_IDENT}))?")
_TABLE_DDL = re.compile(r"^\s*(?:CREATE|ALTER|DROP|RENAME)\s+(?:ONLINE\s+|OFFLINE\s+|IGNORE\s+|TEMPORARY\s+)*"
                        r"TABLES?\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?", re.I)
_PARTITIONING = re.compile(
    rf"^\s*ALTER\s+(?:ONLINE\s+|OFFLINE\s+|IGNORE\s+)*TABLE\s+{_IDENT}(?:\s*\.\s*{_IDENT})?\s+"
    r"(?:(?:ADD|DROP|DISCARD|IMPORT|TRUNCATE|COALESCE|REORGANIZE|EXCHANGE|ANALYZE|CHECK|OPTIMIZE|REBUILD|REPAIR)"
    r"\s+PARTITION\b|REMOVE\s+PARTITIONING\b|PARTITION\s+BY\b)", re.I | re.S)
_DATABASE_CHARSET = re.compile(r"^\s*ALTER\s+(?:DATABASE|SCHEMA)\s+(" + _IDENT + r")?.*?"
                               r"(?:CHARACTER\s+SET|CHARSET|COLLATE)\s*=?\s*(\w+)", re.I | re.S)

# sqlglot's data types -> MySQL's type names (information_schema.COLUMNS.DATA_TYPE)
_TYPES = {
    "TINYINT": "tinyint", "UTINYINT": "tinyint unsigned", "SMALLINT": "smallint", "USMALLINT": "smallint unsigned",
    "MEDIUMINT": "mediumint", "UMEDIUMINT": "mediumint unsigned", "INT": "int", "UINT": "int unsigned",
    "BIGINT": "bigint", "UBIGINT": "bigint unsigned", "FLOAT": "float", "UFLOAT": "float unsigned",
    "DOUBLE": "double", "UDOUBLE": "double unsigned", "DECIMAL": "decimal", "UDECIMAL": "decimal unsigned",
    "BOOLEAN": "tinyint", "SERIAL": "bigint unsigned", "CHAR": "char", "NCHAR": "char", "VARCHAR": "varchar",
    "NVARCHAR": "varchar", "BINARY": "binary", "VARBINARY": "varbinary", "TINYTEXT": "tinytext", "TEXT": "text",
    "MEDIUMTEXT": "mediumtext", "LONGTEXT": "longtext", "TINYBLOB": "tinyblob", "BLOB": "blob",
    "MEDIUMBLOB": "mediumblob", "LONGBLOB": "longblob", "DATE": "date", "DATETIME": "datetime",
    "TIMESTAMP": "timestamp", "TIMESTAMPTZ": "timestamp", "TIME": "time", "YEAR": "year", "ENUM": "enum",
    "SET": "set", "BIT": "bit", "JSON": "json", "GEOMETRY": "geometry", "VECTOR": "vector",
}
# MariaDB's COMPRESSED column attribute (`VARCHAR(n) COMPRESSED[=zlib]`, anywhere among a column's
# attributes), which sqlglot does not read: replayed as a comment of this text, which _column turns
# into the type the server's COLUMN_TYPE gives (`varchar(n) /*m!100301 compressed*/`).
COMPRESSED_MARK = "binlake:compressed"
COMPRESSED_TYPE = " /*m!100301 compressed*/"
_WORDS = re.compile(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.|\"\")*\"|`(?:[^`]|``)*`|[\w$]+|\S", re.S)
# a word is a column's name, not its type or attribute, after these (a definition's start, ADD
# COLUMN, CHANGE a, AFTER, TO), and a table option's value after = and ROW_FORMAT (COMPRESSED)
_NAME_AFTER = frozenset({"(", ",", "ADD", "COLUMN", "CHANGE", "MODIFY", "AFTER", "DROP", "TO", "=", "ROW_FORMAT"})
# and an attribute is followed by the end of the definition or another attribute, never a type
_ATTRIBUTE_BEFORE = frozenset({
    "=", ",", ")", ";", "NOT", "NULL", "DEFAULT", "COMMENT", "CHARACTER", "CHARSET", "COLLATE", "BINARY",
    "ASCII", "UNICODE", "INVISIBLE", "GENERATED", "AS", "PERSISTENT", "STORED", "VIRTUAL", "PRIMARY", "UNIQUE",
    "KEY", "CHECK", "REFERENCES", "AUTO_INCREMENT", "ON", "FIRST", "AFTER", "COLUMN_FORMAT", "STORAGE", "WITH",
    "CONSTRAINT", "SERIAL",
})


# The spatial subtypes, which sqlglot does not read: replayed as GEOMETRY, each column's subtype
# kept aside by its name for _column (information_schema's COLUMN_TYPE: `point`, `multipolygon`, ...).
_SPATIAL = frozenset({"POINT", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING", "MULTIPOLYGON",
                      "GEOMETRYCOLLECTION", "GEOMCOLLECTION"})


def readable(sql: str, mariadb: bool) -> tuple[str, dict[str, str]]:
    """A statement as sqlglot reads it, in one pass over its words: each spatial subtype as
    GEOMETRY, MySQL's `SRID n` attribute dropped (not part of the type), and on MariaDB each
    column's COMPRESSED attribute as a COMMENT and a generated column's PERSISTENT (its word for
    STORED) as STORED; the spatial subtypes by column name. A word is a column's type or attribute
    after its name; after `(`, `,`, ADD and such it is the name."""
    upper = sql.upper()
    compressed = mariadb and "COMPRESSED" in upper
    persistent = mariadb and "PERSISTENT" in upper
    if not compressed and not persistent and not any(t in upper for t in _SPATIAL) and "SRID" not in upper:
        return sql, {}
    words = [(m.start(), m.end(), m[0].upper()) for m in _WORDS.finditer(sql)]
    out, at, skip, subtypes = [], 0, 0, {}
    for i, (start, end, word) in enumerate(words):
        after = words[i + 1][2] if i + 1 < len(words) else ";"
        if i < skip or i == 0 or words[i - 1][2] in _NAME_AFTER or after == "(":
            continue  # a name, or a function (POINT(x, y)): not a type nor an attribute
        if compressed and word == "COMPRESSED" and after in _ATTRIBUTE_BEFORE:
            if after == "=" and i + 2 < len(words):  # COMPRESSED=zlib: the method too
                end, skip = words[i + 2][1], i + 3
            out.append(f"{sql[at:start]}COMMENT '{COMPRESSED_MARK}'")
        elif persistent and word == "PERSISTENT":
            out.append(f"{sql[at:start]}STORED")
        elif word == "SRID" and after.isdigit():
            out.append(sql[at:start].rstrip())
            end = words[i + 1][1]
        elif word in _SPATIAL:
            name = sql[words[i - 1][0]:words[i - 1][1]]
            subtypes[name[1:-1].replace("``", "`") if name.startswith("`") else name] = word.lower()
            out.append(f"{sql[at:start]}GEOMETRY")
        else:
            continue
        at = end
    return "".join(out) + sql[at:], subtypes


_NATIONAL = frozenset({"NCHAR", "NVARCHAR"})  # MySQL's national character set: utf8mb3
_TEXT_BY_BYTES = ((255, "tiny"), (65535, ""), (16777215, "medium"))
_TEXT_BYTES = {"tinytext": 255, "text": 65535, "mediumtext": 16777215, "longtext": 4294967295}
_CONVERT = re.compile(rf"^\s*TABLE\s+({_IDENT}(?:\s*\.\s*{_IDENT})?)\s+CONVERT\s+TO\s+(?:CHARACTER\s+SET|CHARSET)\s+"
                      r"(\w+)(?:\s+COLLATE\s+(\w+))?\s*$", re.I | re.S)


def _unquote(ident: str) -> str:
    return ident[1:-1].replace("``", "`") if ident.startswith("`") else ident


def is_ddl(sql: str) -> bool:
    """Whether a statement may change a table's columns or a database's charset."""
    return bool(_DDL.match(_EXECUTABLE.sub(lambda m: f" {m[1]} ", sql)))


class Unfollowable(Exception):
    """A statement the state cannot replay for a table."""


class SchemaState:
    """Tables by (database, name): a Table, or None for a table the DDL lost track of."""

    def __init__(self, snapshot: Snapshot | None = None, flavor: str | None = None) -> None:
        # the server's flavor: given, or the snapshot's (MariaDB's DDL is read otherwise: COMPRESSED, JSON)
        self.flavor = flavor or (snapshot.point.get("flavor") if snapshot is not None else None) or "mysql"
        self._subtypes: dict[str, str] = {}  # the statement being replayed: its spatial columns' subtypes
        self.tables: dict[tuple[str, str], Table | None] = dict(snapshot.tables) if snapshot else {}
        self.databases: dict[str, str | None] = dict(snapshot.databases) if snapshot else {}
        self.replayed = 0
        self.unfollowed = 0
        self.touched: set[tuple[str, str]] = set()  # every table a replayed statement set or removed
        self.lost_all = False  # a table statement named no table that could be read
        # columns() of each table as it is now: every transaction maps its tables again
        self.known: dict[tuple[str, str, str], tuple[KnownColumn, ...]] = {}

    def copy(self) -> SchemaState:
        """A state to advance on its own (tables are immutable: only the maps are copied)."""
        out = SchemaState(flavor=self.flavor)
        out.tables, out.databases = dict(self.tables), dict(self.databases)
        return out

    def _set(self, key: tuple[str, str], table: Table | None) -> None:
        self.touched.add(key)
        self.tables[key] = table
        self.known.clear()

    def _remove(self, key: tuple[str, str]) -> Table | None:
        self.touched.add(key)
        self.known.clear()
        return self.tables.pop(key, None)

    def table(self, db: str, name: str) -> Table | None:
        return self.tables.get((db, name))

    def columns(self, db: str, name: str) -> tuple[KnownColumn, ...] | None:
        """A table's columns as the codec is given them (check.known_columns); None when the
        history does not know the table."""
        key = (db, name, self.flavor)
        known = self.known.get(key)
        if known is None:
            table = self.tables.get((db, name))
            if table is None:
                return None
            known = self.known[key] = known_columns(table, self.flavor)
        return known

    # -- replay ------------------------------------------------------------------------

    def apply(self, db: str, sql: str, collation_server: int | None = None) -> None:
        """Replay one QUERY event's statement, run with default database db."""
        sql = _EXECUTABLE.sub(lambda m: f" {m[1]} ", sql)
        if not _DDL.match(sql):
            return
        server_charset = None
        if collation_server:
            cs = charset_by_id(collation_server) if collation_server < 256 else None
            server_charset = charset_of(cs.name) if cs else None
        if _PARTITIONING.match(sql):  # partition maintenance: the columns stay as they are
            self.replayed += 1
            return
        try:
            text, self._subtypes = readable(sql, self.flavor == "mariadb")
            statement = parse_statement(text)
            self._statement(db, statement, server_charset)
            self.replayed += 1
        except Unfollowable as e:
            self.unfollowed += 1
            self._lose(db, sql, str(e))

    def _lose(self, db: str, sql: str, why: str) -> None:
        body = _TABLE_DDL.sub("", sql, count=1)
        if body == sql:  # not a table statement: a database or something else, no table to lose
            if re.match(r"^\s*(CREATE|ALTER|DROP)\s+(DATABASE|SCHEMA)\b", sql, re.I):
                self._database_statement(sql)
            return
        m = _QUALIFIED.match(body)
        if not m:
            log.warning("schema history: %s; every table is unknown from here: %.200s", why, sql)
            for key in list(self.tables):
                self._set(key, None)
            self.lost_all = True
            return
        key = (_unquote(m[1]), _unquote(m[2])) if m[2] else (db, _unquote(m[1]))
        log.warning("schema history: %s; %s.%s is unknown from here: %.200s", why, *key, sql)
        self._set(key, None)
        # RENAME TABLE a TO b, c TO d: every table named loses its columns
        if re.match(r"^\s*RENAME\b", sql, re.I):
            for part in re.finditer(rf"({_IDENT})(?:\s*\.\s*({_IDENT}))?", body):
                k = (_unquote(part[1]), _unquote(part[2])) if part[2] else (db, _unquote(part[1]))
                if k[1].upper() != "TO":
                    self._set(k, None)

    def _database_statement(self, sql: str) -> None:
        m = _DATABASE_CHARSET.match(sql)
        if m and m[1]:
            self.databases[_unquote(m[1])] = charset_of(m[2])

    def _statement(self, db: str, st: exp.Expr, server_charset: str | None) -> None:
        if isinstance(st, exp.Create):
            self._create(db, st, server_charset)
        elif isinstance(st, exp.Drop):
            self._drop(db, st)
        elif isinstance(st, exp.Alter):
            self._alter(db, st)
        elif isinstance(st, exp.Command) and st.this.upper() == "RENAME":
            text = st.expression
            self._rename_tables(db, text.name if isinstance(text, exp.Literal) else str(text))
        elif isinstance(st, exp.Command):
            convert = _CONVERT.match(str(st.expression)) if st.this.upper() == "ALTER" else None
            if convert is None:
                raise Unfollowable(f"a statement sqlglot reads only as text ({st.this})")
            self._convert(db, convert)

    def _convert(self, db: str, m: re.Match) -> None:
        """ALTER TABLE … CONVERT TO CHARACTER SET: every character column takes the charset, and a
        TEXT column the smallest TEXT type that still holds as many characters (MySQL's rule)."""
        key = _name(db, m[1])
        table = self.tables.get(key)
        charset = charset_of(m[2])
        if table is None or charset == "binary" or charset not in MAXLEN:
            raise Unfollowable("CONVERT TO CHARACTER SET of a table or to a charset the history does not know")
        columns = []
        for col in table.columns:
            if col.charset in (None, "binary"):
                columns.append(col)
                continue
            text = col.type
            if col.base in _TEXT_BYTES and col.charset in MAXLEN:
                need = _TEXT_BYTES[col.base] // MAXLEN[col.charset] * MAXLEN[charset]
                text = next((p + "text" for limit, p in _TEXT_BY_BYTES if need <= limit), "longtext")
            columns.append(replace(col, type=text, charset=charset, collation=m[3].lower() if m[3] else None))
        self._set(key, replace(table, columns=tuple(columns), charset=charset))

    def _key(self, db: str, t: exp.Table) -> tuple[str, str]:
        return (t.db or db, t.name)

    def _create(self, db: str, st: exp.Create, server_charset: str | None) -> None:
        kind = (st.args.get("kind") or "").upper()
        props = st.args.get("properties")
        if kind in ("DATABASE", "SCHEMA"):
            t = st.this
            name = t.name or t.db
            self.databases[name] = _property_charset(props) or server_charset
            return
        if kind != "TABLE" or (props and props.find(exp.TemporaryProperty)):
            return
        target = st.this.this if isinstance(st.this, exp.Schema) else st.this
        key = self._key(db, target)
        if st.args.get("exists") and self.tables.get(key) is not None:
            return  # CREATE TABLE IF NOT EXISTS of a table that is there: nothing changes
        like = props.find(exp.LikeProperty) if props else None
        if like is not None:
            source = self.tables.get(self._key(db, like.this))
            if source is None:
                raise Unfollowable(f"CREATE TABLE … LIKE a table the history does not know ({like.this.sql()})")
            self._set(key, replace(source, schema=key[0], name=key[1]))
            return
        if not isinstance(st.this, exp.Schema) or st.args.get("expression") is not None:
            raise Unfollowable("CREATE TABLE without its columns (… SELECT)")
        charset = _property_charset(props) or self.databases.get(key[0]) or server_charset
        columns = [self._column(d, charset) for d in st.this.expressions if isinstance(d, exp.ColumnDef)]
        self._set(key, Table(key[0], key[1], tuple(columns), charset))

    def _drop(self, db: str, st: exp.Drop) -> None:
        kind = (st.args.get("kind") or "").upper()
        if kind in ("DATABASE", "SCHEMA"):
            tables = st.args.get("tables") or []
            name = tables[0].name if tables else ""
            for t in [k for k in self.tables if k[0] == name]:
                self._remove(t)
            self.databases.pop(name, None)
        elif kind == "TABLE" and not st.args.get("temporary"):
            for t in st.args.get("tables") or []:
                self._remove(self._key(db, t))

    def _rename_tables(self, db: str, text: str) -> None:
        """RENAME TABLE a TO b [, c TO d]…: applied pair by pair, as the server does."""
        body = re.sub(r"^\s*TABLES?\s+", "", text, flags=re.I)
        for pair in _split_top(body):
            m = re.fullmatch(rf"\s*({_IDENT}(?:\s*\.\s*{_IDENT})?)\s+TO\s+({_IDENT}(?:\s*\.\s*{_IDENT})?)\s*", pair,
                             re.I | re.S)
            if not m:
                raise Unfollowable("RENAME TABLE in a form not read")
            old, new = (_name(db, m[1]), _name(db, m[2]))
            table = self._remove(old)
            self._set(new, replace(table, schema=new[0], name=new[1]) if table is not None else None)

    def _alter(self, db: str, st: exp.Alter) -> None:
        if (st.args.get("kind") or "").upper() != "TABLE":
            return
        key = self._key(db, st.this)
        table = self.tables.get(key)
        if table is None:
            raise Unfollowable("ALTER TABLE of a table the history does not know")
        columns = list(table.columns)
        charset = table.charset
        new_key = key
        for option in st.args.get("options") or []:
            if isinstance(option, exp.CharacterSetProperty | exp.CollateProperty):
                charset = charset_of(option.this.name)
        for action in st.args.get("actions") or []:
            if isinstance(action, exp.ColumnDef):
                if action.args.get("exists") and _find(columns, action.name) is not None:
                    continue
                _place(columns, self._column(action, charset), action.args.get("position"), None)
            elif isinstance(action, exp.ModifyColumn):
                definition = action.this
                old = action.args.get("rename_from")
                at = _find(columns, old.name if old is not None else definition.name)
                if at is None:
                    raise Unfollowable(f"MODIFY/CHANGE of a column the history does not know ({definition.name})")
                _place(columns, self._column(definition, charset), definition.args.get("position"), at)
            elif isinstance(action, exp.Drop) and (action.args.get("kind") or "").upper() == "COLUMN":
                for col in action.args.get("tables") or []:
                    at = _find(columns, col.name)
                    if at is None and not action.args.get("exists"):
                        raise Unfollowable(f"DROP COLUMN of a column the history does not know ({col.name})")
                    if at is not None:
                        del columns[at]
            elif isinstance(action, exp.RenameColumn):
                at = _find(columns, action.this.name)
                if at is None:
                    raise Unfollowable(f"RENAME COLUMN of a column the history does not know ({action.this.name})")
                columns[at] = replace(columns[at], name=action.args["to"].name)
            elif isinstance(action, exp.AlterRename):
                new_key = self._key(db, action.this)
            elif isinstance(action, exp.AlterColumn):
                at = _find(columns, action.this.name)
                if at is None:
                    raise Unfollowable(f"ALTER COLUMN of a column the history does not know ({action.this.name})")
                visible = action.args.get("visible")
                if visible is not None:
                    columns[at] = replace(columns[at], invisible=str(visible).upper() == "INVISIBLE")
            elif isinstance(action, _KEEPS_COLUMNS):
                continue  # keys, indexes and constraints: the columns stay as they are
            else:
                raise Unfollowable(f"ALTER TABLE action {type(action).__name__} is not replayed")
        self._remove(key)
        self._set(new_key, Table(new_key[0], new_key[1], tuple(columns), charset))

    def _column(self, d: exp.ColumnDef, table_charset: str | None) -> Column:
        kind = d.args.get("kind")
        if not isinstance(kind, exp.DataType):
            raise Unfollowable(f"column `{d.name}` has no type")
        dtype = kind.this.name
        base = _TYPES.get(dtype)
        if base is None:
            raise Unfollowable(f"column `{d.name}` of type {kind.sql(dialect='mysql')} is not known")
        params = [p.this if isinstance(p, exp.DataTypeParam) else p for p in kind.expressions]
        charset = collation = generated = None
        invisible = zerofill = binary_attr = compressed = False
        spatial = self._subtypes.get(d.name)
        for constraint in d.constraints:
            k = constraint.args.get("kind")
            if isinstance(k, exp.CommentColumnConstraint) and k.this.name == COMPRESSED_MARK:
                compressed = True
            elif isinstance(k, exp.CharacterSetColumnConstraint):
                charset = charset_of(k.this.name)
            elif isinstance(k, exp.CollateColumnConstraint):
                collation = k.this.name.lower()
            elif isinstance(k, exp.ZeroFillColumnConstraint):
                zerofill = True
            elif isinstance(k, exp.ComputedColumnConstraint):
                generated = "STORED" if k.args.get("persisted") else "VIRTUAL"
            elif isinstance(k, exp.InvisibleColumnConstraint):
                invisible = True
            elif isinstance(k, exp.BinaryColumnConstraint):
                binary_attr = True
        if spatial is not None and dtype == "GEOMETRY":  # as the server's COLUMN_TYPE names it
            collection = spatial in ("geometrycollection", "geomcollection")
            base = ("geomcollection" if self.flavor == "mysql" else "geometrycollection") if collection else spatial
        name = base.split()[0]
        if dtype == "BOOLEAN":
            params = [exp.Literal.number(1)]
        if name in ("text", "blob") and params:  # TEXT(M)/BLOB(M): the smallest type that holds M
            maxlen = 1 if name == "blob" else {"utf8mb4": 4, "utf8mb3": 3}.get(charset or table_charset or "", 1)
            size = int(params[0].name) * maxlen
            name = next((prefix for limit, prefix in _TEXT_BY_BYTES if size <= limit), "long") + name
            base, params = name, []
        if self.flavor == "mariadb" and name == "json":  # MariaDB's JSON is LONGTEXT
            base = name = "longtext"
            charset, collation = charset or "utf8mb4", collation or "utf8mb4_bin"
        if name in BINARY_TYPES:
            charset, collation = "binary", "binary"
        elif name in STRING_TYPES or name in ("enum", "set"):
            if dtype in _NATIONAL:
                charset = "utf8mb3"
            charset = charset or charset_of(collation) or table_charset
            if binary_attr and charset and not collation:
                collation = f"{charset}_bin"
        else:
            charset = collation = None
        if name in ("enum", "set"):
            inner = ",".join("'" + p.name.replace("'", "''") + "'" for p in params)
        else:
            inner = ",".join(p.name for p in params)
        text = name + (f"({inner})" if inner else "") + base[len(name):]
        if zerofill:
            text += " zerofill" if " unsigned" in text else " unsigned zerofill"
        if compressed:
            text += COMPRESSED_TYPE
        return Column(d.name, text, charset, collation, generated, invisible)


def _property_charset(props: exp.Properties | None) -> str | None:
    if props is None:
        return None
    cs = props.find(exp.CharacterSetProperty)
    if cs is not None:
        return charset_of(cs.this.name)
    coll = props.find(exp.CollateProperty)
    return charset_of(coll.this.name) if coll is not None else None


def _name(db: str, text: str) -> tuple[str, str]:
    parts = [_unquote(p.strip()) for p in re.findall(rf"{_IDENT}", text)]
    return (parts[0], parts[1]) if len(parts) == 2 else (db, parts[0])


def _split_top(text: str) -> Iterable[str]:
    """Comma-separated parts outside backquotes."""
    part: list[str] = []
    quoted = False
    for ch in text:
        if ch == "`":
            quoted = not quoted
        if ch == "," and not quoted:
            yield "".join(part)
            part = []
        else:
            part.append(ch)
    yield "".join(part)


def _find(columns: list[Column], name: str) -> int | None:
    """A column's index by name; MySQL's column names are case-insensitive."""
    name = name.lower()
    return next((i for i, col in enumerate(columns) if col.name.lower() == name), None)


def _place(columns: list[Column], col: Column, position: exp.Expression | None, at: int | None) -> None:
    """Put col in place of columns[at] (or at the end), or where FIRST / AFTER says."""
    if position is None:
        if at is None:
            columns.append(col)
        else:
            columns[at] = col
        return
    if at is not None:
        del columns[at]
    where = position.args.get("position")
    if str(where).upper() == "FIRST":
        columns.insert(0, col)
        return
    after = _find(columns, position.this.name)
    if after is None:
        raise Unfollowable(f"AFTER a column the history does not know ({position.this.name})")
    columns.insert(after + 1, col)


# ALTER TABLE actions on keys, indexes and constraints (a DROP that is not of a COLUMN included)
_KEEPS_COLUMNS = (exp.AddConstraint, exp.DropPrimaryKey, exp.RenameIndex, exp.AlterIndex, exp.ForceProperty,
                  exp.Drop)
_QUIET = logging.getLogger("sqlglot")


def parse_statement(sql: str) -> exp.Expr:
    """One statement, parsed by sqlglot's MySQL dialect without its warnings; Unfollowable when it
    cannot be."""
    level = _QUIET.level
    _QUIET.setLevel(logging.ERROR)  # its "falling back to Command" warnings: we report our own
    try:
        statements = [s for s in sqlglot.parse(sql, read="mysql") if s is not None]
    except sqlglot.errors.SqlglotError as e:
        raise Unfollowable(f"sqlglot cannot parse it ({str(e).splitlines()[0]})") from None
    finally:
        _QUIET.setLevel(level)
    if len(statements) != 1:
        raise Unfollowable(f"{len(statements)} statements in one event")
    return statements[0]
