\set p random(0, :partitions - 1)
\set r random(0, :rows - 1)
\set a random(18, 70)
UPDATE employees_base SET ts = now(), props = jsonb_build_object('FirstName', 'Re', 'LastName', 'Placed', 'Age', :a::int,
	'Email', 'replaced@contoso.com', 'Salary', 4100.5, 'Notes', repeat('r', 120))
	WHERE pk = 'tenant' || lpad(:p::text, 4, '0') AND rk = lpad(:r::text, 8, '0');
