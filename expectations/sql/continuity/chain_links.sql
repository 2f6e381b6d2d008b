-- The server's own GTID chain holds before every archived file of the range, within its
-- generation: its PREVIOUS_GTIDS (MariaDB: GTID_LIST) are the file before's and that file's GTIDs
-- (bl_chain_breaks, made from the manifests by binlake/archive/chain.py). Holes in GTID numbering
-- the chain does not claim are no defect; files purged before archiving are GTID_GAP anomalies.
-- Unexpected: each break, with the files and GTIDs missing and why.
-- The batch is joined only for its name: every break of the range counts.
SELECT b.*
FROM bl_chain_breaks b
LEFT JOIN (SELECT DISTINCT source FROM {batch}) t ON t.source = b.source
