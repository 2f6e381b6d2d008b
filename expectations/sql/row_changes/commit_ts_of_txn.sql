-- Each row change carries its transaction's commit_ts.
-- Unexpected: row changes stamped with another time than their transaction's.
SELECT r.txn_id, r.binlog_file, r.event_pos, r.seq, r.commit_ts, t.commit_ts AS txn_commit_ts
FROM {batch} r
JOIN bl_transactions t ON r.txn_id = t.txn_id AND r.binlog_file = t.binlog_file
WHERE r.commit_ts <> t.commit_ts
