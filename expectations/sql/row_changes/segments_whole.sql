-- Segments run 1..k, k the transaction's segment_count, and exactly the last one has end_segment.
-- Unexpected: per transaction with row changes, its segments against its segment_count.
SELECT t.source, t.binlog_file, t.start_pos AS txn_start_pos, t.txn_id, t.segment_count,
       s.min_segment, s.max_segment, s.segments, s.ended, s.last_ended
FROM (
    SELECT txn_id, binlog_file,
           min(segment_id) AS min_segment,
           max(segment_id) AS max_segment,
           count(DISTINCT segment_id) AS segments,
           count(DISTINCT CASE WHEN end_segment THEN segment_id END) AS ended,
           max(CASE WHEN end_segment THEN segment_id END) AS last_ended
    FROM {batch}
    GROUP BY txn_id, binlog_file
) s
JOIN bl_transactions t ON s.txn_id = t.txn_id AND s.binlog_file = t.binlog_file
WHERE s.min_segment <> 1
   OR s.max_segment <> s.segments
   OR s.ended <> 1
   OR s.last_ended <> s.max_segment
   OR s.max_segment <> t.segment_count
