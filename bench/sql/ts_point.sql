\set p random(0, :partitions - 1)
\set r random(0, :rows - 1)
SELECT tablestore.get_entity('Employees', 'tenant' || lpad(:p::text, 4, '0'), lpad(:r::text, 8, '0'));
