\set p random(0, :partitions - 1)
SELECT e FROM tablestore.query_entities_json('Employees', format('PartitionKey eq %L and Age gt 42',
	'tenant' || lpad(:p::text, 4, '0'))) e;
