"""Transaction boundaries: MySQL's WL#4162 parser, and what it needs decoded of each event."""
