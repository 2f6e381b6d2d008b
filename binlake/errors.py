"""Errors binlake raises; each one says where (file and byte offset) or what resource."""

from __future__ import annotations


class BinlakeError(Exception):
    """Base of every error binlake reports to a user. `lasting`: the same call would fail the
    same way (wrong credentials, a missing privilege or table, binary logging off): a retry
    cannot mend it, so a scheduler's task fails at once (plugins/binlake_airflow)."""

    def __init__(self, *args: object, lasting: bool = False) -> None:
        super().__init__(*args)
        self.lasting = lasting


class BinlogError(BinlakeError):
    """A binlog cannot be read on: names the file and the byte offset."""

    def __init__(self, file: str, offset: int, reason: str) -> None:
        super().__init__(f"{file}:{offset}: {reason}")
        self.file = file
        self.offset = offset
        self.reason = reason


class FatalBinlogError(BinlogError):
    """A binlog that cannot be read at all (encrypted, not a binlog): scanning stops."""


class RowDecodeError(BinlakeError):
    """A TABLE_MAP or rows event body could not be decoded."""
