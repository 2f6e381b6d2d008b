-- The versions the applied range opened and closed reconcile with its row changes, per table and
-- transaction (bl_version_changes; an XA transaction's at its XA COMMIT, where they apply):
-- versions opened minus versions closed is inserts minus deletes (an update closes a version and
-- opens one, an update of the key too: the old key's version closed, the new key's opened; a
-- row the transaction changed several times is one version of it, one it inserted and deleted
-- none), no more versions opened than inserts and updates, no more closed than updates and
-- deletes. So a transaction that applies no row change of a table (an XA PREPARE, a rollback)
-- opens and closes none of its versions, and a version opened or closed where the range has no
-- transaction is unexpected. Left out: DDL transactions (they close every row, or give each a
-- new version; their own versions are `ddl`), snapshot versions (a baseline's rows), and a
-- table's changes up to the order it is complete from, or all of them while it is partial, and
-- from the order it is partial again on (`partial_from`: a DML logged as a statement wrote rows
-- no version shows) (a change before a baseline chunk's point is in that baseline, not in a
-- version; a partial table's update may find no version).
-- Unexpected: per table and transaction order, the counts that disagree.
WITH sides AS (
    SELECT source, schema, `table`, txn_order, inserts, updates, deletes, 0 AS opened, 0 AS closed
    FROM bl_version_changes
    UNION ALL
    SELECT b.source, b.schema, b.`table`, b._from_order, 0, 0, 0, 1, 0
    FROM {batch} b JOIN bl_version_spans s ON s.source = b.source
    WHERE b._op IN ('insert', 'update') AND b._valid_from >= s.start AND b._valid_from < s.end
    UNION ALL
    SELECT b.source, b.schema, b.`table`, b._to_order, 0, 0, 0, 0, 1
    FROM {batch} b JOIN bl_version_spans s ON s.source = b.source
    WHERE b._valid_to >= s.start AND b._valid_to < s.end
), judged AS (
    SELECT source, schema, `table`, txn_order, sum(inserts) AS inserts, sum(updates) AS updates,
           sum(deletes) AS deletes, sum(opened) AS opened, sum(closed) AS closed
    FROM sides
    GROUP BY source, schema, `table`, txn_order
)
SELECT j.source, j.schema, j.`table`, j.txn_order, t.binlog_file, t.end_pos, t.txn_id, t.kind,
       j.inserts, j.updates, j.deletes, j.opened, j.closed
FROM judged j
LEFT JOIN bl_version_txns t ON t.source = j.source AND t.txn_order = j.txn_order
LEFT JOIN bl_complete_from f ON f.source = j.source AND f.schema = j.schema AND f.`table` = j.`table`
WHERE (t.kind IS NULL OR t.kind <> 'ddl')
  AND (f.`table` IS NULL OR (f.complete_from IS NOT NULL AND j.txn_order > f.complete_from
                             AND (f.partial_from IS NULL OR j.txn_order < f.partial_from)))
  AND (t.txn_order IS NULL
       OR j.opened - j.closed <> j.inserts - j.deletes
       OR j.opened > j.inserts + j.updates
       OR j.closed > j.updates + j.deletes)
