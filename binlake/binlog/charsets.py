"""MySQL character sets whose text Python's codec of the same name reads differently.

mysql-replication names each column's Python codec after pymysql's charset table, and for five
of MySQL's charsets that codec gives other text than the server's: `ucs2` has no codec, Python's
`utf16` and `utf32` read little-endian without a byte-order mark where MySQL stores big-endian,
`utf16le` is read big-endian, and MySQL's `latin1` is cp1252 with its five undefined bytes
(0x81, 0x8D, 0x8F, 0x90, 0x9D) read as the C1 controls of the same number, where Python's
cp1252 refuses them. `codec()` gives the codec to read each with; both decoding paths use it.
"""

from __future__ import annotations

import codecs

from pymysql.charset import charset_by_name

LATIN1 = "binlake-mysql-latin1"
# the codec mysql-replication names (pymysql's `encoding`) -> the one that reads the server's bytes
_CODECS = {"ucs2": "utf-16-be", "utf16": "utf-16-be", "utf16le": "utf-16-le", "utf32": "utf-32-be",
           "cp1252": LATIN1}

_TABLE = "".join(bytes([b]).decode("cp1252", errors="ignore") or chr(b) for b in range(256))
_ENCODING = codecs.charmap_build(_TABLE)


def _latin1(name: str) -> codecs.CodecInfo | None:
    if name.replace("_", "-") != LATIN1:
        return None
    return codecs.CodecInfo(name=LATIN1, encode=lambda s, errors="strict": codecs.charmap_encode(s, errors, _ENCODING),
                            decode=lambda b, errors="strict": codecs.charmap_decode(b, errors, _TABLE))


codecs.register(_latin1)


def codec(name: str | None) -> str | None:
    """The Python codec that reads a column whose codec mysql-replication calls `name`."""
    return _CODECS.get(name, name) if name else name


def of_charset(charset: str) -> str | None:
    """The Python codec that reads a column of a MySQL charset (`latin1`, `ucs2`, as
    information_schema names it); None for `binary`."""
    if charset == "binary":
        return None
    found = charset_by_name(charset)
    return codec(found.encoding if found else charset)
