"""The baseline of the source tables: `binlake snapshot`, a consistent snapshot of a live server's
tables at an exact point of its binlog, chunked by key, resumable, into the archive store
(docs/snapshots.md).

- `session`: one consistent-snapshot transaction and the point its reads hold at;
- `keys`: the key a table is read in order of, and the keyset predicates that resume it;
- `values`: what the server is asked for each column, and its value in docs/row-values.md's forms;
- `reading`: a table's rows in key order, a page at a time (or streamed, without a key);
- `layout`: the snapshot's objects in the store (chunks, progress.json, snapshot.json);
- `run`: the sessions, tables and chunks of one `binlake snapshot`, resumed where a run died;
- `coverage`: which tables of a source need a baseline and have none.
"""

# A chunk's size unless told otherwise (here, so that the command line shows them without the
# package's imports).
CHUNK_ROWS = 100_000
CHUNK_BYTES = 64 << 20  # of JSON lines, before compression
