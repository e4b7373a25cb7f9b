\set p random(0, :partitions - 1)
\set r random(0, 2 * :rows - 1)
\set a random(18, 70)
INSERT INTO employees_base VALUES ('tenant' || lpad(:p::text, 4, '0'), lpad(:r::text, 8, '0'), now(), jsonb_build_object('Age', :a::int))
	ON CONFLICT (pk, rk) DO UPDATE SET props = employees_base.props || EXCLUDED.props, ts = EXCLUDED.ts;
