\set p random(0, :paged_partitions - 2)
\set r random(0, :rows - 1)
SELECT pk, rk, ts, props FROM paged_base
	WHERE (pk, rk) >= ('tenant' || lpad(:p::text, 4, '0'), lpad(:r::text, 8, '0'))
	ORDER BY pk, rk LIMIT 1001;
