\set p random(0, :partitions - 1)
SELECT pk, rk, ts, props FROM employees_base
	WHERE pk = 'tenant' || lpad(:p::text, 4, '0') AND (props->>'Age')::int > 50
	ORDER BY rk;
