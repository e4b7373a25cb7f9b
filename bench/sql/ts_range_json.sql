\set p random(0, :partitions - 1)
\set r random(0, :rows - 100)
\set r2 :r + 100
SELECT e FROM tablestore.query_entities_json('Employees', format('PartitionKey eq %L and RowKey ge %L and RowKey lt %L',
	'tenant' || lpad(:p::text, 4, '0'), lpad(:r::text, 8, '0'), lpad(:r2::text, 8, '0'))) e;
