-- A version is closed wholly or not at all: `_valid_to`, `_to_txn` and `_to_order` are all set or
-- all null; and a closed version ends after it began, in commit order and not earlier in time.
-- Unexpected: the versions that break it.
SELECT source, schema, `table`, key, _op, _from_order, _to_order, _from_txn, _to_txn, _valid_from, _valid_to
FROM {batch}
WHERE (_valid_to IS NULL) <> (_to_order IS NULL)
   OR (_to_txn IS NULL) <> (_to_order IS NULL)
   OR _to_order <= _from_order
   OR _valid_to < _valid_from
