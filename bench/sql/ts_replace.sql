\set p random(0, :partitions - 1)
\set r random(0, :rows - 1)
\set a random(18, 70)
SELECT tablestore.update_entity('Employees', jsonb_build_object('PartitionKey', 'tenant' || lpad(:p::text, 4, '0'),
	'RowKey', lpad(:r::text, 8, '0'), 'FirstName', 'Re', 'LastName', 'Placed', 'Age', :a::int,
	'Email', 'replaced@contoso.com', 'Salary', 4100.5, 'Notes', repeat('r', 120)));
