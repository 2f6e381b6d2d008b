-- No GTID appears twice within a GTID epoch of a source (bl_archive_files.epoch: a reset of the
-- server's binary log reissues its GTIDs and starts the next epoch; a failover does not).
-- Unexpected: each repeated GTID with its count and epoch.
SELECT t.source, f.epoch, t.gtid, count(*) AS n
FROM {batch} t
JOIN bl_archive_files f ON f.source = t.source AND f.binlog_file = t.binlog_file
WHERE t.gtid IS NOT NULL
GROUP BY t.source, f.epoch, t.gtid
HAVING count(*) > 1
