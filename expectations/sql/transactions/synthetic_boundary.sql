-- synthetic_boundary is true exactly for DDL, and for DML logged without BEGIN or XID (rows, or a
-- statement: they end SELF_CONTAINED): the transactions binlake gave a BEGIN and COMMIT the
-- binlog does not hold.
-- Unexpected: whole transactions where the flag says otherwise.
SELECT source, binlog_file, start_pos, txn_id, kind, end_event, synthetic_boundary
FROM {batch}
WHERE outcome <> 'incomplete'
  AND synthetic_boundary <> (kind = 'ddl' OR (kind = 'dml' AND end_event = 'SELF_CONTAINED'))
