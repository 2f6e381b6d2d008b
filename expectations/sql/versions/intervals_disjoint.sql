-- A key's intervals do not overlap: in commit order, each version of a key begins where or after
-- the version before it ended, and that version has ended.
-- Unexpected: each version that begins before the key's previous version ended.
SELECT source, schema, `table`, key, _op, _from_order, _from_txn, previous_from_order, previous_to_order
FROM (
    SELECT *, lag(_from_order) OVER w AS previous_from_order, lag(_to_order) OVER w AS previous_to_order,
           row_number() OVER w AS n
    FROM {batch}
    WHERE key IS NOT NULL
    WINDOW w AS (PARTITION BY source, schema, `table`, key ORDER BY _from_order, _from_seq)
)
WHERE n > 1 AND (previous_to_order IS NULL OR previous_to_order > _from_order)
