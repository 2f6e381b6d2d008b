-- before is present exactly for updates and deletes, after exactly for inserts and updates.
-- Unexpected: row changes with an image their operation does not have, or without one it has.
SELECT txn_id, binlog_file, event_pos, seq, op, before IS NOT NULL AS has_before, after IS NOT NULL AS has_after
FROM {batch}
WHERE (before IS NOT NULL) <> (op IN ('update', 'delete'))
   OR (after IS NOT NULL) <> (op IN ('insert', 'update'))
