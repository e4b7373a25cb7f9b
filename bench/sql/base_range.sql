\set p random(0, :partitions - 1)
\set r random(0, :rows - 100)
\set r2 :r + 100
SELECT pk, rk, ts, props FROM employees_base
	WHERE pk = 'tenant' || lpad(:p::text, 4, '0') AND rk >= lpad(:r::text, 8, '0') AND rk < lpad(:r2::text, 8, '0')
	ORDER BY rk;
