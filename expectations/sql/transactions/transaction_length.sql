-- transaction_length, where the GTID event gives it, equals end_pos - start_pos.
-- Unexpected: transactions whose bytes differ from what their GTID event announced.
SELECT source, binlog_file, start_pos, end_pos, txn_id, transaction_length
FROM {batch}
WHERE transaction_length IS NOT NULL
  AND transaction_length <> end_pos - start_pos
