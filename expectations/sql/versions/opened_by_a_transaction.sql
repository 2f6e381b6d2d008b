-- Every version that a transaction opened names it (`_from_txn`): all but a baseline's rows
-- (`snapshot`: the snapshot read them, no transaction wrote them; their `_from_order` is their
-- chunk's point).
-- Unexpected: the versions without their transaction.
SELECT source, schema, `table`, key, _op, _from_order, _from_txn, _valid_from
FROM {batch}
WHERE _from_txn IS NULL AND (_op IS NULL OR _op <> 'snapshot')
