\set p random(0, :partitions - 1)
\set r random(1, 999999999999)
SELECT tablestore.insert_entity('Employees', jsonb_build_object('PartitionKey', 'tenant' || lpad(:p::text, 4, '0'),
	'RowKey', 'n' || :client_id || '-' || :r, 'FirstName', 'New', 'LastName', 'Hire', 'Age', 30,
	'Email', 'new.hire@contoso.com', 'Salary', 4100.5, 'Notes', repeat('n', 120)));
