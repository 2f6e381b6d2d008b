-- Every row change's txn_id is a transaction of the range.
-- Unexpected: row changes whose transaction is not in bl_transactions.
SELECT r.txn_id, r.binlog_file, r.event_pos, r.seq
FROM {batch} r
LEFT ANTI JOIN bl_transactions t ON r.txn_id = t.txn_id AND r.binlog_file = t.binlog_file
