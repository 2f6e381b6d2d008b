-- Each archived file's transaction count in the range (its manifest's index, bl_archive_files)
-- equals the transactions rows of that file: nothing archived is missing, nothing is extra.
-- Unexpected: files whose counts differ, either side missing counting as 0.
SELECT coalesce(f.source, t.source) AS source,
       coalesce(f.binlog_file, t.binlog_file) AS binlog_file,
       coalesce(f.transactions, 0) AS in_manifest,
       coalesce(t.n, 0) AS in_table
FROM bl_archive_files f
FULL OUTER JOIN (
    SELECT source, binlog_file, count(*) AS n
    FROM {batch}
    GROUP BY source, binlog_file
) t ON f.source = t.source AND f.binlog_file = t.binlog_file
WHERE coalesce(f.transactions, 0) <> coalesce(t.n, 0)
