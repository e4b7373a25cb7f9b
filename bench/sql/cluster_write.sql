-- bench/cluster.sh: insert_or_replace_entity of a random existing entity of
-- 'Bench' with the properties it was loaded with, so that the data (and the
-- fan-out queries' results) stay the same however many writes ran.
\set p random(0, :partitions - 1)
\set r random(0, :rows - 1)
SELECT tablestore.insert_or_replace_entity('Bench', jsonb_build_object('PartitionKey', 'p' || lpad(:p::text, 4, '0'),
  'RowKey', lpad(:r::text, 5, '0'), 'Name', 'Name' || :r, 'Tag', (:p::int + :r::int) % 100, 'Age', 18 + :r::int % 50,
  'Email', 'user' || :r || '@example.com', 'Notes', repeat('x', 100)));
