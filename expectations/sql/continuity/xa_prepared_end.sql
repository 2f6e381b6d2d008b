-- An XA transaction prepared before the cutoff (the range's end minus the configured age,
-- bl_params) has been committed or rolled back (bl_xa_completions, of any date).
-- Unexpected: prepared transactions left open too long.
SELECT p.source, p.binlog_file, p.start_pos, p.txn_id, p.xa_xid, p.commit_ts
FROM {batch} p
WHERE p.kind = 'xa_prepare'
  AND p.commit_ts < (SELECT xa_cutoff FROM bl_params)
  AND NOT EXISTS (SELECT 1 FROM bl_xa_completions c WHERE c.source = p.source AND c.xa_xid = p.xa_xid)
