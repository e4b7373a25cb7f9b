\set p random(0, :partitions - 1)
\set r random(1, 999999999999)
INSERT INTO employees_base VALUES ('tenant' || lpad(:p::text, 4, '0'), 'n' || :client_id || '-' || :r, now(),
	jsonb_build_object('FirstName', 'New', 'LastName', 'Hire', 'Age', 30,
	'Email', 'new.hire@contoso.com', 'Salary', 4100.5, 'Notes', repeat('n', 120)));
