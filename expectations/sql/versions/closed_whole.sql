-- A version is closed wholly or not at all: `_valid_to` and `_to_order` both set or both null,
-- and `_to_txn` set with them, but where a baseline's start closed it (at or before the order its
-- table is complete from: no transaction did); and a closed version ends after it began, in
-- commit order and not earlier in time.
-- Unexpected: the versions that break it.
SELECT b.source, b.schema, b.`table`, b.key, b._op, b._from_order, b._to_order, b._from_txn, b._to_txn,
       b._valid_from, b._valid_to
FROM {batch} b
LEFT JOIN bl_complete_from f ON f.source = b.source AND f.schema = b.schema AND f.`table` = b.`table`
WHERE (b._valid_to IS NULL) <> (b._to_order IS NULL)
   OR (b._to_txn IS NULL AND b._to_order IS NOT NULL
       AND (f.complete_from IS NULL OR b._to_order > f.complete_from))
   OR b._to_order <= b._from_order
   OR b._valid_to < b._valid_from
