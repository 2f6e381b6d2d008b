-- One current version per key: of a table with a key, at most one version of each key has no
-- end (`_to_order` null). A table without a key is a multiset: equal rows are current together.
-- Unexpected: the keys with several current versions.
SELECT source, schema, `table`, key, count(*) AS current_versions, min(_from_order) AS first_from_order,
       max(_from_order) AS last_from_order
FROM {batch}
WHERE key IS NOT NULL AND _to_order IS NULL
GROUP BY source, schema, `table`, key
HAVING count(*) > 1
