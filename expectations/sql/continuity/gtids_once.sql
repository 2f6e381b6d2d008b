-- No GTID appears twice.
-- Unexpected: each repeated GTID with its count.
SELECT source, gtid, count(*) AS n
FROM {batch}
WHERE gtid IS NOT NULL
GROUP BY source, gtid
HAVING count(*) > 1
