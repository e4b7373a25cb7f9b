\set r random(1, 999999999999)
SELECT count(*) FROM tablestore.execute_batch('Employees', (SELECT jsonb_agg(jsonb_build_object('op', 'insert',
	'entity', jsonb_build_object('PartitionKey', 'b' || :client_id || '-' || :r, 'RowKey', lpad(i::text, 8, '0'),
	'FirstName', 'Batch', 'Age', i, 'Notes', repeat('b', 120)))) FROM generate_series(1, 100) i));
