"""A recorded, seeded workload for the server-history scenarios, and the server's own answers
(its GTID sets, its table, its closed binlog files) that the tests hold binlake to."""

from __future__ import annotations

import random


def traffic(server, phase: str, transactions: int, seed: int, rotate_every: int = 4) -> None:
    """A recorded, seeded workload: `transactions` transactions of 1-3 inserts each into h.t,
    rotating the binary log every few; the server's SELECT and GTID sets are the oracle."""
    rng = random.Random(seed)
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE DATABASE IF NOT EXISTS h")
        cur.execute("CREATE TABLE IF NOT EXISTS h.t (id INT PRIMARY KEY, phase VARCHAR(16), v VARCHAR(40))")
        cur.execute("SELECT COALESCE(MAX(id), 0) FROM h.t")
        next_id = cur.fetchone()[0] + 1
        for i in range(transactions):
            cur.execute("BEGIN")
            for _ in range(rng.randint(1, 3)):
                cur.execute("INSERT INTO h.t VALUES (%s, %s, %s)", (next_id, phase, f"{rng.getrandbits(64):016x}"))
                next_id += 1
            cur.execute("COMMIT")
            if i % rotate_every == rotate_every - 1:
                cur.execute("FLUSH BINARY LOGS")
        cur.execute("FLUSH BINARY LOGS")  # every transaction in a rotated (closed) file


def gtid_executed(server) -> str:
    with server.connect() as conn, conn.cursor() as cur:
        if server.flavor == "mysql":
            cur.execute("SELECT @@global.gtid_executed")
        else:
            cur.execute("SELECT @@global.gtid_binlog_pos")
        return cur.fetchone()[0].replace("\n", "")


def table(server) -> list[dict]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT id, phase, v FROM h.t ORDER BY id")
        return [{"id": i, "phase": p, "v": v} for i, p, v in cur.fetchall()]


def rotated(server) -> dict[str, bytes]:
    """The server's closed binlog files, read from its data directory."""
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        names = [r[0] for r in cur.fetchall()][:-1]
    return {n: (server.binlog_dir / n).read_bytes() for n in names}
