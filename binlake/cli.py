"""The `binlake` command line."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import NoReturn

from binlake import __version__
from binlake.errors import BinlakeError, BinlogError
from binlake.exits import leave


def _dump(rec: dict) -> str:
    return json.dumps(rec, ensure_ascii=False, separators=(",", ":"), sort_keys=False)


def cmd_scan(args: argparse.Namespace) -> int:
    # Imported here, as each command's own modules are, so that `binlake archive` does not load
    # the row decoder and mysql-replication at every start.
    from binlake.assemble.outputs import Lines
    from binlake.assemble.scan import scan_files
    from binlake.assemble.walk import Options
    from binlake.malloc import keep_freed_memory

    keep_freed_memory()
    sys.stdout.flush()
    opts = Options(source=args.source, segment_rows=args.segment_rows, segment_bytes=args.segment_bytes,
                   rows=args.rows)
    # Every record as a JSON line (binlake.assemble.outputs.Lines), the lane's whole transactions among them
    summary = scan_files(args.files, opts, Lines(sys.stdout.buffer.write, anomalies=args.anomalies),
                         schema=_schema_state(args))
    if args.summary:
        print(_dump({"record": "summary", **vars(summary)}), file=sys.stderr)
    return 0


def _schema_state(args: argparse.Namespace):
    """The schema a scan starts from: a snapshot file (`binlake schema capture|import`), or the
    history of a source in an archive store (docs/schema.md); None for the binlog's own metadata."""
    from binlake.schema.model import Snapshot
    from binlake.schema.replay import state_for

    if args.schema and args.store:
        raise BinlakeError("--schema and --store: give one history")
    if args.store:
        from binlake.archive.stores import open_store
        from binlake.schema.history import choose, loaded, of_archived_file, snapshots

        if not args.source_name:
            raise BinlakeError("--store needs --source-name: the source whose schema history to use")
        store = open_store(args.store)
        try:
            history = snapshots(store, args.source_name)
            found = choose(history, Path(args.files[0]).name, lambda s: of_archived_file(store, args.source_name, s))
            snapshot = loaded(store, found) if found else Snapshot({})
        except ValueError as e:
            raise BinlakeError(f"{args.store}: schema history of {args.source_name}: {e}") from None
        return state_for(snapshot, args.files)
    if args.schema is None:
        return None
    try:
        snapshot = Snapshot.from_json(json.loads(Path(args.schema).read_text()))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise BinlakeError(f"{args.schema}: not a schema snapshot: {e}") from None
    return state_for(snapshot, args.files)


def cmd_schema_capture(args: argparse.Namespace) -> int:
    from binlake.archive.sources import MySQLSource
    from binlake.schema.capture import capture

    source = MySQLSource(args.source)
    conn = source.connect()
    try:
        snapshot = capture(conn, args.source_name)
    finally:
        conn.close()
    return _write_snapshot(snapshot, args)


def cmd_schema_import(args: argparse.Namespace) -> int:
    from binlake.schema.importing import import_ddl

    text = "".join(sys.stdin.read() if f == "-" else Path(f).read_text() for f in args.files)
    point: dict = {}
    if args.at:
        point["at"] = args.at
    if args.position:
        file, _, pos = args.position.rpartition(":")
        if not file or not pos.isdigit():
            raise BinlakeError(f"--position {args.position}: expected FILE:OFFSET")
        point["before"] = point["after"] = {"file": file, "position": int(pos)}
    snapshot = import_ddl(text, args.database or "", args.flavor, point=point, source=args.source_name)
    return _write_snapshot(snapshot, args)


def _write_snapshot(snapshot, args: argparse.Namespace) -> int:
    """To --out, and/or into the schema history of --source-name in --store (docs/schema.md)."""
    if not args.out and not args.store:
        raise BinlakeError("give --out FILE or --store URL (with --source-name)")
    where = {}
    if args.store:
        from binlake.archive.stores import open_store
        from binlake.schema.history import record

        if not args.source_name:
            raise BinlakeError("--store needs --source-name: whose schema history to add to")
        store = open_store(args.store)
        store.check(writable=True)
        where["key"] = record(store, args.source_name, snapshot)
    if args.out:
        text = json.dumps(snapshot.to_json(), ensure_ascii=False, indent=1) + "\n"
        if args.out == "-":
            sys.stdout.write(text)
        else:
            Path(args.out).write_text(text)
        where["out"] = args.out
    print(_dump({"record": "schema", "tables": len(snapshot.tables), "databases": len(snapshot.databases),
                 **where}), file=sys.stderr)
    return 0


def cmd_airflow(args: argparse.Namespace) -> int:
    from binlake.local.airflow import default_home, run

    config = Path(args.config) if args.config else None
    return run(Path(args.home) if args.home else default_home(config), config, port=args.port, schedule=args.schedule,
               database=args.database)


def cmd_demo(args: argparse.Namespace) -> int:
    from binlake.local.demo import run

    return run(args.home, args.warehouse)


def cmd_archive(args: argparse.Namespace) -> int:
    from binlake.archive.run import archive
    from binlake.archive.sources import open_source
    from binlake.archive.stores import open_store
    from binlake.schema.capture import into_history

    source = open_source(args.source, server_id=args.server_id)
    name = args.source_name or _default_source_name(args.source)
    result = archive(source, open_store(args.store), name, capture=into_history)
    for gap in result.gaps:
        print(_dump({"record": "anomaly", **gap}))
    for notice in result.notices:
        print(_dump({"record": "notice", "source": name, **notice}))
        print(f"binlake: notice: {notice['detail']}", file=sys.stderr)
    if result.schema_error:
        print(_dump({"record": "notice", "kind": "schema_not_captured", "source": name, "detail": result.schema_error}))
        print(f"binlake: notice: {result.schema_error}", file=sys.stderr)
    for r in result.refused:
        print(_dump({"record": "refused", **{k: r[k] for k in ("source", "file", "reason", "remedy")}}))
        print(f"binlake: {r['detail']}", file=sys.stderr)
    print(_dump({"record": "archive", "source": name, "archived": result.archived,
                 "already_archived": len(result.skipped), "bytes": result.bytes, "gaps": len(result.gaps),
                 "new_generations": len(result.notices), "refused": [r["file"] for r in result.refused],
                 "schema_snapshot": result.schema}))
    if (result.gaps or result.refused) and not args.allow_gaps:
        if result.gaps:
            print(f"binlake: {len(result.gaps)} gap(s) in the archive of {name}: {result.gaps[0]['detail']}",
                  file=sys.stderr)
        return 1
    return 0


def cmd_snapshot(args: argparse.Namespace) -> int:
    from binlake.archive.sources import MySQLSource
    from binlake.archive.stores import open_store
    from binlake.baseline.run import Options, snapshot

    if not args.source.startswith("mysql://"):
        raise BinlakeError(f"--source {args.source}: a snapshot reads a live server (mysql://user@host:port)")
    if args.missing and args.table:
        raise BinlakeError("--missing and --table: give one")
    name = args.source_name or _default_source_name(args.source)
    store = open_store(args.store)
    tables = args.table
    if args.missing:
        from binlake.baseline.coverage import missing

        store.check()
        tables = missing(store, name)
        if not tables:
            print(_dump({"record": "snapshot", "source": name, "id": None, "missing": []}))
            return 0
    result = snapshot(MySQLSource(args.source), store, name, tables,
                      options=Options(args.chunk_rows, args.chunk_bytes))
    for skipped in result.skipped:
        print(f"binlake: notice: {skipped['schema']}.{skipped['table']} not in the snapshot: {skipped['reason']}",
              file=sys.stderr)
    print(_dump({"record": "snapshot", "source": name, "id": result.id, "resumed": result.resumed,
                 "tables": result.tables, "rows": result.rows, "chunks": result.chunks, "sessions": result.sessions,
                 "skipped": [f"{s['schema']}.{s['table']}" for s in result.skipped]}))
    return 0


def cmd_assemble(args: argparse.Namespace) -> int:
    try:
        from binlake.spark import run
    except ImportError as e:
        raise BinlakeError(f"assemble needs the Spark extra: pip install 'binlake[spark]' ({e})") from None
    return run(args)


def cmd_validate(args: argparse.Namespace) -> int:
    try:
        from binlake.spark import run_validate
    except ImportError as e:
        raise BinlakeError(f"validate needs the Spark extra: pip install 'binlake[spark]' ({e})") from None
    return run_validate(args)


def cmd_asof(args: argparse.Namespace) -> int:
    from binlake.tables.asof import run

    return run(args.warehouse, args.source, args.at, names=args.table, fmt=args.format, out=args.out,
               partial=args.partial)


def cmd_warehouse(args: argparse.Namespace) -> int:
    """`binlake upkeep`, `upgrade`, `history`, `tables`: the warehouse's Delta tables, with Spark."""
    try:
        from binlake import spark
    except ImportError as e:
        raise BinlakeError(f"{args.command} needs the Spark extra: pip install 'binlake[spark]' ({e})") from None
    return {"upkeep": spark.run_upkeep, "upgrade": spark.run_upgrade, "history": spark.run_history,
            "tables": spark.run_tables}[args.command](args)


def _default_source_name(url: str) -> str:
    from urllib.parse import urlparse

    u = urlparse(url)
    if u.scheme == "dir":
        return Path(u.path).name or "local"
    return f"{u.hostname}_{u.port or 3306}"


def _spark_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE", help="a Spark setting (repeatable)")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="binlake", description=__doc__)
    p.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("scan", help="print one JSON line per transaction of binlog files")
    s.add_argument("files", nargs="+", metavar="FILE")
    s.add_argument("--rows", action="store_true", help="also print row changes")
    s.add_argument("--anomalies", action="store_true", help="also print anomalies")
    s.add_argument("--source", default="local", help="source name put in the records")
    s.add_argument("--segment-rows", type=int, default=100_000,
                   help="row changes per segment of a big transaction (default 100000)")
    s.add_argument("--segment-bytes", type=int, default=64 << 20,
                   help="row event bytes per segment (default 64 MiB)")
    s.add_argument("--summary", action="store_true", help="print a summary line on stderr")
    s.add_argument("--schema", metavar="SNAPSHOT",
                   help="a schema snapshot (binlake schema capture|import) to name and check columns by, "
                        "advanced by the DDL the files log (docs/schema.md)")
    s.add_argument("--store", help="an archive store (file:///path, s3://bucket/prefix): use the schema "
                                   "history `binlake archive` recorded there for --source-name")
    s.add_argument("--source-name", help="the source whose schema history --store holds")
    s.set_defaults(func=cmd_scan)

    h = sub.add_parser("schema", help="schema snapshots: column names for binlogs without full metadata")
    hs = h.add_subparsers(dest="schema_command", required=True)
    hc = hs.add_parser("capture", help="snapshot a live server's tables from information_schema")
    hc.add_argument("--source", required=True, help="mysql://user[:password]@host:port")
    hc.add_argument("--source-name", help="the source's name, recorded in the snapshot")
    hc.add_argument("--out", help="the snapshot file to write (- for stdout)")
    hc.add_argument("--store", help="also (or instead) record it in this archive store's schema history")
    hc.set_defaults(func=cmd_schema_capture)
    hi = hs.add_parser("import", help="a snapshot from mysqldump --no-data output or SHOW CREATE TABLE texts")
    hi.add_argument("files", nargs="+", metavar="FILE", help="SQL files (- for stdin)")
    hi.add_argument("--database", help="the default database of statements before any USE")
    hi.add_argument("--flavor", choices=("mysql", "mariadb"), default="mysql", help="the server's flavor")
    hi.add_argument("--at", help="the time the DDL held (ISO 8601), recorded in the snapshot")
    hi.add_argument("--position", metavar="FILE:OFFSET", help="the binlog position the DDL held at")
    hi.add_argument("--source-name", help="the source's name, recorded in the snapshot")
    hi.add_argument("--out", help="the snapshot file to write (- for stdout)")
    hi.add_argument("--store", help="also (or instead) record it in this archive store's schema history "
                                    "(a dir:// archive's; --position places it in the binlog)")
    hi.set_defaults(func=cmd_schema_import)

    a = sub.add_parser("archive", help="copy rotated binlog files and their manifests to a store")
    a.add_argument("--source", required=True, help="mysql://user[:password]@host:port or dir:///path")
    a.add_argument("--store", required=True, help="file:///path or s3://bucket/prefix")
    a.add_argument("--source-name", help="name of the source in the store (default: host_port or dir name)")
    a.add_argument("--server-id", type=int, help="replica server_id for the binlog dump (default: random per "
                   "run, so concurrent runs do not end each other's dumps)")
    a.add_argument("--allow-gaps", action="store_true",
                   help="exit 0 even when files were purged before they were archived (GTID_GAP) "
                        "or the server refused to send some (see docs/archive.md)")
    a.set_defaults(func=cmd_archive)

    n = sub.add_parser("snapshot", help="a consistent snapshot of a live server's tables into the archive store "
                                        "(the baseline of the source tables)")
    n.add_argument("--source", required=True, help="mysql://user[:password]@host:port")
    n.add_argument("--store", required=True, help="file:///path or s3://bucket/prefix")
    n.add_argument("--source-name", help="name of the source in the store (default: host_port)")
    n.add_argument("--table", action="append", metavar="DB.TABLE",
                   help="a table to snapshot (repeatable; default: every table the user may read)")
    n.add_argument("--missing", action="store_true",
                   help="only the tables the store's schema history of the source has and no baseline holds, "
                        "created before archiving began (docs/snapshots.md)")
    from binlake.baseline import CHUNK_BYTES, CHUNK_ROWS

    n.add_argument("--chunk-rows", type=int, default=CHUNK_ROWS, help=f"rows per chunk (default {CHUNK_ROWS})")
    n.add_argument("--chunk-bytes", type=int, default=CHUNK_BYTES,
                   help=f"bytes of JSON lines per chunk, before compression (default {CHUNK_BYTES >> 20} MiB)")
    n.set_defaults(func=cmd_snapshot)

    from binlake.spark import add_arguments as add_assemble_arguments

    j = sub.add_parser("assemble", help="assemble a commit-time range of an archive into the Delta tables (Spark)")
    add_assemble_arguments(j)
    j.add_argument("--master", default="local[*]", help="Spark master (default local[*]; spark://host:7077)")
    j.add_argument("--conf", action="append", metavar="KEY=VALUE", help="a Spark setting (repeatable)")
    j.set_defaults(func=cmd_assemble)

    from binlake.spark import add_validate_arguments

    v = sub.add_parser("validate", help="run the Great Expectations suites over a range of the warehouse")
    add_validate_arguments(v)
    _spark_options(v)
    v.set_defaults(func=cmd_validate)

    from binlake.spark import add_tables_arguments

    t = sub.add_parser("tables", help="apply a range's changelog to the source tables' row versions (Spark)")
    add_tables_arguments(t)
    _spark_options(t)
    t.set_defaults(func=cmd_warehouse)

    from binlake.tables.asof import FORMATS

    o = sub.add_parser("asof", help="a source's tables as of a time or a GTID (delta-rs: no JVM)")
    o.add_argument("--warehouse", required=True, help="the warehouse: a path, file:///path, s3a:// or s3://")
    o.add_argument("--source", required=True, help="the source's name")
    o.add_argument("--at", required=True, metavar="TIME|GTID",
                   help="an ISO 8601 time (UTC when no zone), or a GTID (uuid:n, uuid:tag:n, MariaDB d-s-n)")
    o.add_argument("--table", action="append", metavar="DB.TABLE", help="that table only (repeatable)")
    o.add_argument("--format", choices=FORMATS, default="jsonl", help="jsonl (default), csv or parquet")
    o.add_argument("--out", help="a file, or a directory for several tables' csv or parquet files "
                                 "(default stdout for jsonl and csv)")
    o.add_argument("--partial", action="store_true", help="print partial tables too (stderr names them)")
    o.set_defaults(func=cmd_asof)

    from binlake.spark import add_upkeep_arguments, add_warehouse_arguments
    from binlake.spark.settings import TABLES

    u = sub.add_parser("upkeep", help="compact the small files of the changelog's tables and the row versions' "
                                      "(OPTIMIZE), remove the files time travel no longer needs (VACUUM) and "
                                      "the GX project's older validation results")
    add_warehouse_arguments(u)
    add_upkeep_arguments(u)
    u.set_defaults(func=cmd_warehouse)
    g = sub.add_parser("upgrade", help="convert a warehouse of plain Parquet (an earlier release) to Delta in place")
    add_warehouse_arguments(g)
    g.set_defaults(func=cmd_warehouse)
    y = sub.add_parser("history", help="a table's commits, newest first: the runs, their ranges and status")
    add_warehouse_arguments(y)
    y.add_argument("--table", default="transactions", choices=TABLES)
    y.add_argument("--failed", action="store_true", help="only the runs whose range is marked failed")
    y.set_defaults(func=cmd_warehouse)

    from binlake.local.airflow import DEFAULT_HOME, DEFAULT_SCHEDULE, DEMO_HOME

    af = sub.add_parser("airflow", help="a local Airflow for binlake (no Docker), until Ctrl-C")
    af.add_argument("--home", help=f"AIRFLOW_HOME (default {DEFAULT_HOME} with --config, {DEMO_HOME} without)")
    af.add_argument("--config", metavar="JSON", help="the binlake Variable (docs/airflow.md); default: the demo's "
                    "sample binlogs")
    af.add_argument("--port", type=int, default=8080, help="the UI's port on 127.0.0.1 (default 8080; 0: any free)")
    af.add_argument("--schedule", default=DEFAULT_SCHEDULE,
                    help=f"binlake_transactions' cron schedule (default '{DEFAULT_SCHEDULE}')")
    af.add_argument("--database", choices=("postgres", "sqlite"), default="postgres",
                    help="the metadata database: a private PostgreSQL cluster in the home (default; the machine's "
                    "PostgreSQL server programs) or SQLite (no server; its one write lock can stall the UI)")
    af.set_defaults(func=cmd_airflow)
    d = sub.add_parser("demo", help="run the pipeline on the bundled sample binlogs")
    d.add_argument("--home", help="the Airflow home to run in (default: a new temporary directory)")
    d.add_argument("--warehouse", help="where the tables go (default: under the home; s3a://bucket/prefix with "
                   "the AWS environment's endpoint and keys)")
    d.set_defaults(func=cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if logging.getLogger("binlake").isEnabledFor(logging.INFO):
        from binlake.compiled import compiled_paths  # loads the decoders: only when it is said

        logging.getLogger("binlake").info("binlake %s: %s", __version__, compiled_paths())
    try:
        return args.func(args)
    except BinlogError as e:
        print(str(e), file=sys.stderr)
    except BinlakeError as e:
        print(f"binlake: {e}", file=sys.stderr)
    except BrokenPipeError:
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("binlake: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - a bug: still one line, never a traceback
        where = getattr(e, "binlake_where", "binlake")
        print(f"{where}: internal error: {type(e).__name__}: {e}", file=sys.stderr)
    return 1


def entry() -> NoReturn:
    """The `binlake` command (and `python -m binlake.cli`): `main`, then out at once
    (binlake.exits)."""
    leave(main())


if __name__ == "__main__":
    entry()
