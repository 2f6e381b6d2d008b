"""Which tables a DML statement logged as a statement writes (binlog_format STATEMENT, or MIXED),
for its transaction's `tables` (docs/transactions.md).

A row-logged change names its table in its TABLE_MAP; a statement-logged one only in its text. The
QUERY events the boundary parser gives the role "statement" (binlake.boundaries.parser.query_role)
are DML here when they are inside a transaction's group (after its BEGIN, or an autocommit's
pre-statement events) and are not DDL (binlake.schema.ddl.is_ddl), a savepoint or an XA step; a
statement standing alone (a DDL's place: after a GTID, or no GTID at all) is DML only when it
starts as one (DML_RE, the record's `kind` rule). Its targets are read from its text: INSERT and
REPLACE [INTO], UPDATE (single and multi-table: every table its table references name), DELETE
(single and both multi-table forms: every table named), LOAD DATA|XML … INTO TABLE; comments,
executable comments and backquoted names as the server reads them, an unqualified name in the
statement's default database. A statement whose targets cannot be read (a CTE, a stored
function's SELECT, anything else) writes ANY: "*.*", every table.
"""

from __future__ import annotations

import re

ANY = "*.*"  # the targets could not be read: every table of the source
# A statement that changes rows (MySQL's DML commands), past any leading comments.
DML_RE = re.compile(r"\s*(?:/\*.*?\*/\s*)*(INSERT|REPLACE|UPDATE|DELETE|LOAD\s+(DATA|XML))\b", re.I | re.S)
# Statements inside a transaction that change no row: savepoints and XA's steps (XA END).
_NOT_DML = re.compile(r"\s*(?:/\*.*?\*/\s*)*(SAVEPOINT|RELEASE\s+SAVEPOINT|ROLLBACK\s+(WORK\s+)?TO|XA)\b",
                      re.I | re.S)
_TOKEN = re.compile(r"""\s+|/\*M?!\d*|\*/|/\*.*?\*/|--(?:\s[^\n]*)?(?:\n|$)|\#[^\n]*"""  # skipped
                    r"""|(`(?:[^`]|``)*`)|('(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")|([\w$]+)|(.)""", re.S)
_MODIFIERS = frozenset({"LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE", "INTO", "QUICK"})
_JOINS = frozenset({"JOIN", "STRAIGHT_JOIN"})
_SUBQUERY = frozenset({"SELECT", "WITH", "VALUES", "TABLE"})


def written_tables(db: str | None, sql: str, *, grouped: bool) -> list[str]:
    """The tables ("db.table", sorted) a QUERY event of role "statement" writes as DML; [] when it
    is not DML, [ANY] when its targets cannot be read. `grouped`: the event is inside its
    transaction's group (boundary INSIDE or START), not standing alone."""
    from binlake.schema.ddl import is_ddl

    if grouped:
        if is_ddl(sql) or _NOT_DML.match(sql):
            return []
    elif not DML_RE.match(sql):
        return []
    found = targets(db, sql)
    return sorted(set(found)) if found else [ANY]


def targets(db: str | None, sql: str) -> list[str] | None:
    """The tables a DML statement names as written (conservatively, every table of an UPDATE's or
    a multi-table DELETE's references); None when they cannot be read."""
    toks = _tokens(sql)
    words = [t.upper() if k == "word" else "" for k, t in toks]
    if not words:
        return None
    verb = words[0]
    i = 1
    if verb == "LOAD":
        for j in range(1, len(toks) - 1):
            if words[j] == "INTO" and words[j + 1] == "TABLE":
                name, _ = _name(toks, j + 2, db)
                return [name] if name else None
        return None
    while i < len(toks) and words[i] in _MODIFIERS:
        i += 1
    if verb in ("INSERT", "REPLACE"):
        name, _ = _name(toks, i, db)
        return [name] if name else None
    if verb == "UPDATE":
        return _references(toks, words, i, db=db, stop={"SET"})
    if verb != "DELETE":
        return None
    if words[i:i + 1] == ["FROM"]:  # DELETE FROM t …, or DELETE FROM t1, t2 USING refs
        named = _references(toks, words, i + 1, db=db, stop={"USING", "WHERE", "ORDER", "LIMIT"})
        using = words.index("USING", i) if "USING" in words[i:] else None  # the first: the join's come later
        if named is None or using is None:
            return named
        more = _references(toks, words, using + 1, db=db, stop={"WHERE"})
        return None if more is None else named + more
    if "FROM" not in words[i:]:  # DELETE t1, t2 FROM refs
        return None
    at = words.index("FROM", i)
    named = _references(toks, words, i, db=db, stop={"FROM"})
    more = _references(toks, words, at + 1, db=db, stop={"WHERE"})
    return None if named is None or more is None else named + more


def _tokens(sql: str) -> list[tuple[str, str]]:
    out = []
    for m in _TOKEN.finditer(sql):
        quoted, string, word, other = m.groups()
        if quoted is not None:
            out.append(("name", quoted[1:-1].replace("``", "`")))
        elif string is not None:
            out.append(("string", string))
        elif word is not None:
            out.append(("word", word))
        elif other is not None:
            out.append(("punct", other))
    return out


def _name(toks: list[tuple[str, str]], i: int, db: str | None) -> tuple[str | None, int]:
    """The table name at `i` ("db.table"; unqualified, in `db`) and the index after it."""
    if i >= len(toks) or toks[i][0] not in ("name", "word"):
        return None, i
    first = toks[i][1]
    if i + 2 < len(toks) and toks[i + 1] == ("punct", ".") and toks[i + 2][0] in ("name", "word"):
        return f"{first}.{toks[i + 2][1]}", i + 3
    return (f"{db}.{first}" if db else None), i + 1


def _skip(toks: list[tuple[str, str]], i: int) -> int:
    """The index after the parenthesis opened at `i` closes (len(toks) when it never does)."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j] == ("punct", "("):
            depth += 1
        elif toks[j] == ("punct", ")"):
            depth -= 1
            if depth == 0:
                return j + 1
    return len(toks)


def _references(toks: list[tuple[str, str]], words: list[str], i: int, *, db: str | None, stop: set[str]
                ) -> list[str] | None:
    """Every table a list of table references names, from `i` to a `stop` word outside parentheses
    (a derived table's own tables left out: none of them is written)."""
    names: list[str] = []
    expect, depth = True, 0
    while i < len(toks):
        kind, text = toks[i]
        if depth == 0 and words[i] in stop:
            break
        if expect:
            if text == "(" and kind == "punct":
                if i + 1 < len(toks) and words[i + 1] in _SUBQUERY:
                    i, expect = _skip(toks, i), False
                else:
                    i, depth = i + 1, depth + 1  # a nested join
                continue
            name, i = _name(toks, i, db)
            if name is None:
                return None
            names.append(name)
            expect = False
            continue
        if text == "," and kind == "punct" or words[i] in _JOINS:
            expect = True
        elif text == "(" and kind == "punct":
            i = _skip(toks, i)
            continue
        elif text == ")" and kind == "punct":
            depth -= 1
        i += 1
    return names if names and depth == 0 else None
