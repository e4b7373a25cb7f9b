\set p random(0, :partitions - 1)
\set r random(1, 999999999999)
INSERT INTO employees_base VALUES ('tenant' || lpad(:p::text, 4, '0'), 'd' || :client_id || '-' || :r, now(),
	jsonb_build_object('FirstName', 'Short', 'LastName', 'Lived', 'Age', 30));
DELETE FROM employees_base WHERE pk = 'tenant' || lpad(:p::text, 4, '0') AND rk = 'd' || :client_id || '-' || :r;
