-- A key's intervals are contiguous where a transaction ended one version and began the key's next
-- (an update that keeps the key, a DDL giving every row a new version): the two meet, the end of
-- the one being the beginning of the other in commit order, transaction and time.
-- Unexpected: each version that meets its key's previous one in commit order but not in
-- transaction or time.
SELECT source, schema, `table`, key, _op, _from_order, _from_txn, _valid_from, previous_to_txn, previous_valid_to
FROM (
    SELECT *, lag(_to_order) OVER w AS previous_to_order, lag(_to_txn) OVER w AS previous_to_txn,
           lag(_valid_to) OVER w AS previous_valid_to, row_number() OVER w AS n
    FROM {batch}
    WHERE key IS NOT NULL
    WINDOW w AS (PARTITION BY source, schema, `table`, key ORDER BY _from_order, _from_seq)
)
WHERE n > 1 AND previous_to_order = _from_order
  AND (previous_to_txn <> _from_txn OR previous_valid_to <> _valid_from)
