-- row_count = rows_inserted + rows_updated + rows_deleted.
-- Unexpected: transactions whose counts do not add up.
SELECT source, binlog_file, start_pos, txn_id, row_count, rows_inserted, rows_updated, rows_deleted
FROM {batch}
WHERE row_count <> rows_inserted + rows_updated + rows_deleted
