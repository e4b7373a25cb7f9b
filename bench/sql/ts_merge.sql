\set p random(0, :partitions - 1)
\set r random(0, :rows - 1)
\set a random(18, 70)
SELECT tablestore.merge_entity('Employees', jsonb_build_object('PartitionKey', 'tenant' || lpad(:p::text, 4, '0'),
	'RowKey', lpad(:r::text, 8, '0'), 'Age', :a::int));
