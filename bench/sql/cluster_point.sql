-- bench/cluster.sh: one entity by its keys (get_entity), a random one of
-- the 'Bench' table's partitions x rows.
\set p random(0, :partitions - 1)
\set r random(0, :rows - 1)
SELECT tablestore.get_entity('Bench', 'p' || lpad(:p::text, 4, '0'), lpad(:r::text, 5, '0'));
