"""Every column type a binlog can carry has a home on both decoding paths, and the places to
edit when one is added are named here.

Adding a column type:
1. the reference path, binlake/binlog/rows.py: a conversion in CONVERSIONS, or AS_IS when the
   package's value is already binlake's (docs/row-values.md says what each type becomes);
2. the compiled path, binlake/binlog/_rowdecode.c: one case in scan_value (the kind's bytes into
   a tagged value; to_py and to_json write it), its K_ constant, and its plan in
   binlake/binlog/fastrows.py PLANS; or, until then, the type in fastrows.REFERENCE_ONLY, with
   why;
3. tests/test_rowdecode.py compares the two paths value for value on every test file, and holds
   the random rows of its live-server test to the values it wrote and to the server's own SELECT.
"""

from __future__ import annotations

from pathlib import Path

from pymysqlreplication.constants import FIELD_TYPE

from binlake.binlog import constants as c
from binlake.binlog import fastrows
from binlake.binlog import values as rows

# Every column type: mysql-replication's FIELD_TYPE (its names for MySQL's enum_field_types) and
# the ones binlake adds (constants.VECTOR, MySQL 9; MariaDB's COMPRESSED columns).
ADDED = {c.VECTOR, c.BLOB_COMPRESSED, c.VARCHAR_COMPRESSED}
ALL = {getattr(FIELD_TYPE, n) for n in dir(FIELD_TYPE) if n.isupper()} | ADDED


def test_every_type_has_a_reference_conversion():
    # VECTOR and the COMPRESSED columns are read as BLOB / VARCHAR (AS_IS) and turned into floats,
    # or uncompressed, by their column's index
    homes = set(rows.CONVERSIONS) | rows.AS_IS | ADDED
    missing = ALL - homes
    assert not missing, f"column types {sorted(missing)}: add them to rows.CONVERSIONS or rows.AS_IS"
    assert not set(rows.CONVERSIONS) & rows.AS_IS


def test_every_type_is_compiled_or_left_to_the_reference_with_a_reason():
    missing = ALL - set(fastrows.PLANS) - set(fastrows.REFERENCE_ONLY)
    assert not missing, (f"column types {sorted(missing)}: plan them in fastrows.PLANS (and scan_value in "
                         "_rowdecode.c) or list them in fastrows.REFERENCE_ONLY with why")
    assert not set(fastrows.PLANS) & set(fastrows.REFERENCE_ONLY)
    assert all(fastrows.REFERENCE_ONLY.values())


def test_every_compiled_kind_is_planned():
    # each kind the C decoder exports is what some type's plan uses
    from binlake.binlog import _rowdecode

    kinds = {n for n in dir(_rowdecode) if n.startswith("K_")}
    source = Path(fastrows.__file__).read_text()
    assert {k for k in kinds if f'"{k}"' not in source and f"k.{k}" not in source} == set()
