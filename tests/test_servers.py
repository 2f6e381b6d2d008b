"""The real servers the tests run against are what the tests assume."""

from __future__ import annotations

import subprocess

import pytest


@pytest.mark.parametrize("name", ["mysql_server", "mariadb_server"])
def test_server_settings(request, name):
    server = request.getfixturevalue(name)
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT @@log_bin, @@binlog_format, @@bind_address, @@binlog_checksum, "
                    "@@binlog_row_metadata, @@max_binlog_size")
        assert cur.fetchone() == (1, "ROW", "127.0.0.1", "CRC32", "FULL", 1048576)
        if server.flavor == "mysql":
            cur.execute("SELECT @@gtid_mode, @@binlog_rows_query_log_events")
            assert cur.fetchone() == ("ON", 1)
            assert int(server.version.split(".")[0]) >= 9
        else:
            cur.execute("SELECT @@binlog_annotate_row_events")
            assert cur.fetchone() == (1,)
            assert server.version.startswith("10.11.")
        # its own tmpdir: a server starting deletes the `#sql*` files of its tmpdir, which would be
        # the temporary tables of the servers beside it in a shared /tmp (the server's SELECT @@tmpdir)
        cur.execute("SELECT @@tmpdir")
        assert cur.fetchone()[0] == str(server.workdir / "tmp")
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("SHOW BINARY LOGS")
        names = [r[0] for r in cur.fetchall()]
    assert len(names) >= 2 and all((server.binlog_dir / n).exists() for n in names)
    out = subprocess.run([*server.mysqlbinlog, str(server.binlog_dir / names[0])], capture_output=True,
                         timeout=60)
    # the dump quotes row images and statements as logged: bytes, not necessarily UTF-8
    stdout, stderr = out.stdout.decode("utf-8", "replace"), out.stderr.decode("utf-8", "replace")
    assert out.returncode == 0, stderr
    assert "Start: binlog v 4" in stdout or "Format_desc" in stdout
