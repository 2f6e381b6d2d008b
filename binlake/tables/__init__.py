"""The source tables as they were: row versions of every table of a source, and any table as of an
instant (docs/tables.md). What needs no Spark lives here: the source's commit order, the type
mapping and the values' forms, the fold of a key's changes into versions, DDL's effect on them, the
source's state (`_binlake.json`) and `binlake asof`, which reads the Delta tables with delta-rs.
binlake.spark.tables applies a range with Spark.
"""
