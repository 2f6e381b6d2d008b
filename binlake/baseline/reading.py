"""A table's rows as one session reads them: in key order, a page at a time (`WHERE key > last
ORDER BY key LIMIT n`), so that memory holds one page; or, without a key, streamed by one
unbuffered query. A page is sized by the bytes its rows take (PAGE_BYTES), so wide rows make
short pages. Each row comes with its key's values and the literals that resume after it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from binlake.baseline.keys import Key
from binlake.baseline.session import Session, name_of
from binlake.baseline.values import Pending, RowRead, quote

PAGE_BYTES = 4 << 20
FIRST_PAGE = 1000  # rows
MAX_PAGE = 10_000


class Row:
    """A row as a chunk holds it: its values, its key's values and the columns flagged
    (binlake.baseline.values.unexact); `literals()` its key as SQL literals, where a next page or
    chunk starts after it, made when asked (most rows never are)."""

    __slots__ = ("_literals", "key", "unexact", "values")

    def __init__(self, values: dict[str, Any], key: list[Any] | None, unexact: list[str],
                 literals: Callable[[], list[str]] | None) -> None:
        self.values, self.key, self.unexact, self._literals = values, key, unexact, literals

    def literals(self) -> list[str] | None:
        return self._literals() if self._literals else None


def _page_bytes(page: list[tuple]) -> int:
    """About how many bytes a page's rows took: every 16th row's, times 16."""
    sample = page[::16]
    return sum(len(v) for raw in sample for v in raw if v is not None) * len(page) // len(sample)


class TableRead:
    def __init__(self, session: Session, table: tuple[str, str], reader: RowRead, key: Key | None) -> None:
        self.session, self.table, self.reader, self.key = session, table, reader, key
        self.name = name_of(table)
        if key is not None:
            self.key_at = [reader.offsets[n] for n in key.names]
            self.select = ", ".join((reader.select, *key.exprs))
        else:
            self.select = reader.select

    def _run(self, cur, sql: str, args: tuple = ()) -> None:
        with self.session.reading(self.table):
            cur.execute(sql, args)

    def rows(self, after: list[str] | None = None) -> Iterator[Row]:
        """The table's rows in key order after the key `after` (literals), or whole without a key."""
        return self._keyed(after) if self.key is not None else self._whole()

    def _keyed(self, after: list[str] | None) -> Iterator[Row]:
        assert self.key is not None
        limit = FIRST_PAGE
        while True:
            where = f"WHERE {self.key.after(after)} " if after else ""
            with self.session.cursor() as cur:
                self._run(cur, f"SELECT {self.select} FROM {self.name} AS t {where}ORDER BY {self.key.order} "
                               f"LIMIT {limit}")
                page = cur.fetchall()
            if not page:
                return
            for raw in page:
                yield self._row(raw)
            after = self._literals(page[-1])
            if len(page) < limit:
                return
            limit = max(1, min(MAX_PAGE, PAGE_BYTES * len(page) // max(_page_bytes(page), 1)))

    def _literals(self, raw: tuple) -> list[str]:
        assert self.key is not None
        return self.key.literals([raw[i] for i in self.key_at], list(raw[self.reader.width:]))

    def _row(self, raw: tuple) -> Row:
        assert self.key is not None
        values, pending, unexact = self.reader.row(raw[:self.reader.width])
        for doc in pending:
            values[doc.column] = doc.value(self._types(doc, self._literals(raw)))
        return Row(values, [values[n] for n in self.key.names], unexact, lambda: self._literals(raw))

    def _types(self, doc: Pending, literals: list[str]) -> dict[str, str]:
        """JSON_TYPE at each of a document's paths, read again by the row's key in the session."""
        assert self.key is not None
        exprs = ", ".join(f"JSON_TYPE(JSON_EXTRACT(t.{quote(doc.column)}, %s))" for _ in doc.paths)
        with self.session.cursor() as cur:
            self._run(cur, f"SELECT {exprs} FROM {self.name} AS t WHERE {self.key.equals(literals)}",
                      tuple(doc.paths))
            found = cur.fetchone()
        return {p: t.decode() for p, t in zip(doc.paths, found, strict=True)}

    def _whole(self) -> Iterator[Row]:
        with self.session.cursor(unbuffered=True) as cur:
            self._run(cur, f"SELECT {self.select} FROM {self.name} AS t")
            for raw in cur:
                values, pending, unexact = self.reader.row(raw)
                for doc in pending:
                    values[doc.column] = doc.flagged()
                    unexact.append(doc.column)
                yield Row(values, None, unexact, None)
