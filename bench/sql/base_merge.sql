\set p random(0, :partitions - 1)
\set r random(0, :rows - 1)
\set a random(18, 70)
UPDATE employees_base SET props = props || jsonb_build_object('Age', :a::int), ts = now()
	WHERE pk = 'tenant' || lpad(:p::text, 4, '0') AND rk = lpad(:r::text, 8, '0');
