\set p random(0, :partitions - 1)
\set r random(1, 999999999999)
SELECT tablestore.insert_entity('Employees', jsonb_build_object('PartitionKey', 'tenant' || lpad(:p::text, 4, '0'),
	'RowKey', 'd' || :client_id || '-' || :r, 'FirstName', 'Short', 'LastName', 'Lived', 'Age', 30));
SELECT tablestore.delete_entity('Employees', 'tenant' || lpad(:p::text, 4, '0'), 'd' || :client_id || '-' || :r);
