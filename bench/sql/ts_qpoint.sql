\set p random(0, :partitions - 1)
\set r random(0, :rows - 1)
SELECT e FROM tablestore.query_entities('Employees', format('PartitionKey eq %L and RowKey eq %L',
	'tenant' || lpad(:p::text, 4, '0'), lpad(:r::text, 8, '0'))) e;
