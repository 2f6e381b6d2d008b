"""A schema history: the columns of a source's tables at each point of its binlog (docs/schema.md)."""
