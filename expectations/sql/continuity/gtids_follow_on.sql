-- GTIDs follow on without holes per sequence (MySQL server uuid and tag, MariaDB domain), within
-- the range and from the last GTID before it; a hole is allowed where bl_known_gtids covers it
-- (before the range, archived outside it, or recorded as purged).
-- Unexpected: each hole not covered, with the transaction after it.
WITH g AS (
    SELECT source,
           CASE WHEN gtid LIKE '%:%' THEN regexp_extract(gtid, '^(.*):([0-9]+)$', 1)  -- uuid[:tag]:gno
                ELSE regexp_extract(gtid, '^([0-9]+)-', 1)                              -- domain-server-seq
           END AS sid,
           CAST(regexp_extract(gtid, '([0-9]+)$', 1) AS BIGINT) AS gno,
           binlog_file, start_pos
    FROM {batch}
    WHERE gtid IS NOT NULL
),
s AS (
    SELECT *, lag(gno) OVER (PARTITION BY source, sid ORDER BY gno) AS prev
    FROM g
),
h AS (
    SELECT source, sid, coalesce(prev, 0) + 1 AS missing_from, gno - 1 AS missing_to, binlog_file, start_pos
    FROM s
    WHERE gno > coalesce(prev, 0) + 1
)
SELECT h.*
FROM h
WHERE NOT EXISTS (
    SELECT 1
    FROM bl_known_gtids k
    WHERE k.source = h.source AND k.sid = h.sid AND k.lo <= h.missing_from AND k.hi >= h.missing_to
)
