"""The binlog layer: framing, event bodies, GTIDs, compressed payloads and row images."""
