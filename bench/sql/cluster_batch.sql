-- bench/cluster.sh: a batch of 100 inserts into a new partition of 'Batch'
-- (the PartitionKey: the client and the clock in microseconds, so unique).
SELECT count(*) FROM tablestore.execute_batch('Batch', (SELECT jsonb_agg(jsonb_build_object('op', 'insert',
  'entity', jsonb_build_object('PartitionKey', k.pk, 'RowKey', lpad(i::text, 5, '0'), 'Name', 'Name' || i,
  'Tag', i % 100, 'Age', 18 + i % 50, 'Email', 'user' || i || '@example.com', 'Notes', repeat('x', 100))))
  FROM (SELECT 'b' || :client_id || '-' || (extract(epoch FROM clock_timestamp()) * 1000000)::bigint AS pk OFFSET 0) AS k,
       generate_series(0, 99) AS i));
