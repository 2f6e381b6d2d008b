-- seq runs 0..n-1 without holes in each transaction, n its row_count; an incomplete
-- transaction has no row changes at all.
-- Unexpected: per transaction, what its row changes' seq numbers are against its row_count.
SELECT t.source, t.binlog_file, t.start_pos AS txn_start_pos, t.txn_id, t.outcome, t.row_count,
       r.n, r.min_seq, r.max_seq, r.distinct_seq
FROM bl_transactions t
LEFT JOIN (
    SELECT txn_id, binlog_file, count(*) AS n, min(seq) AS min_seq, max(seq) AS max_seq, count(DISTINCT seq) AS distinct_seq
    FROM {batch}
    GROUP BY txn_id, binlog_file
) r ON r.txn_id = t.txn_id AND r.binlog_file = t.binlog_file
WHERE (t.outcome = 'incomplete' AND r.n IS NOT NULL)
   OR (t.outcome <> 'incomplete' AND coalesce(r.n, 0) <> t.row_count)
   OR r.min_seq <> 0
   OR r.max_seq <> r.n - 1
   OR r.distinct_seq <> r.n
