\set p random(0, :paged_partitions - 2)
\set r random(0, :rows - 1)
SELECT entities, next_partition_key, next_row_key FROM tablestore.query_entities_page_json('Paged', NULL, NULL, 1000,
	'tenant' || lpad(:p::text, 4, '0'), lpad(:r::text, 8, '0'));
