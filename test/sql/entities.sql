-- Tables and single-entity operations on the employee example, with the
-- errors a user meets.  Timestamps and ETags vary from run to run, so the
-- entities are shown without them (see the helper "shown").
CREATE FUNCTION shown(e jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE
	AS $$ SELECT e - 'Timestamp' - 'odata.etag' $$;

-- tables
SELECT tablestore.create_table('Employees');
SELECT tablestore.create_table('employees');   -- same name, other case
SELECT tablestore.create_table('Archive2024');
SELECT tablestore.create_table('ab');
SELECT tablestore.create_table('Tables');
SELECT tablestore.create_table('emp_loyees');
SELECT * FROM tablestore.list_tables();
SELECT relation_name, table_name FROM tablestore.tables ORDER BY 1;

-- inserts: departments as PartitionKey, zero-padded employee ids as RowKey
SELECT shown(tablestore.insert_entity('Employees',
	'{"PartitionKey": "Sales", "RowKey": "00001", "FirstName": "Ann", "LastName": "Jones",
	  "Age": 34, "Salary": 5200.5, "IsActive": true,
	  "HireDate": "2019-03-01T09:00:00Z", "HireDate@odata.type": "Edm.DateTime",
	  "EmployeeId": "c9da6455-213d-42c9-9a79-3e9149a57833", "EmployeeId@odata.type": "Edm.Guid",
	  "Badge": "AQIDBA==", "Badge@odata.type": "Edm.Binary",
	  "Points": "9007199254740993", "Points@odata.type": "Edm.Int64"}'));
SELECT shown(tablestore.insert_entity('Employees',
	'{"PartitionKey": "Sales", "RowKey": "00002", "FirstName": "Bo", "Age": 51, "Rating": 4.0}'));
SELECT shown(tablestore.insert_entity('Employees',
	'{"PartitionKey": "Engineering", "RowKey": "00003", "FirstName": "Cy"}'));
SELECT shown(tablestore.insert_entity('Employees',
	'{"PartitionKey": "Sales", "RowKey": "00001", "FirstName": "Dup"}'));

-- the stored form, as plain SQL sees it
SELECT pk, rk, props FROM tablestore_data.employees ORDER BY pk, rk;
SELECT pk, rk, (props->>'Age')::int AS age FROM tablestore_data.employees
	WHERE props ? 'Age' ORDER BY pk, rk;

-- point query, with and without $select
SELECT shown(tablestore.get_entity('Employees', 'Sales', '00001'));
SELECT shown(tablestore.get_entity('Employees', 'Sales', '00001', 'FirstName, Points, Nickname'));
SELECT tablestore.get_entity('Employees', 'Sales', '99999');
SELECT tablestore.get_entity('Nowhere', 'Sales', '00001');

-- replace: absent properties are removed
SELECT shown(tablestore.update_entity('Employees',
	'{"PartitionKey": "Sales", "RowKey": "00002", "FirstName": "Bo", "Age": 52}'));
SELECT shown(tablestore.update_entity('Employees',
	'{"PartitionKey": "Sales", "RowKey": "00404", "FirstName": "Nobody"}'));

-- merge: given properties overwrite value and type, others stay, null keeps
SELECT shown(tablestore.merge_entity('Employees',
	'{"PartitionKey": "Sales", "RowKey": "00002", "Age": "53", "Age@odata.type": "Edm.Int64",
	  "Title": "Lead", "FirstName": null}'));

-- insert-or-merge and insert-or-replace: insert when missing, else change
SELECT shown(tablestore.insert_or_merge_entity('Employees',
	'{"PartitionKey": "Engineering", "RowKey": "00004", "FirstName": "Di"}'));
SELECT shown(tablestore.insert_or_merge_entity('Employees',
	'{"PartitionKey": "Engineering", "RowKey": "00004", "Age": 29}'));
SELECT shown(tablestore.insert_or_replace_entity('Employees',
	'{"PartitionKey": "Engineering", "RowKey": "00004", "FirstName": "Dee"}'));

-- optimistic concurrency: an ETag is good for one write
CREATE TEMP TABLE seen AS
	SELECT tablestore.get_entity('Employees', 'Sales', '00001')->>'odata.etag' AS etag;
SELECT shown(tablestore.merge_entity('Employees',
	'{"PartitionKey": "Sales", "RowKey": "00001", "Age": 35}', (SELECT etag FROM seen)));
SELECT shown(tablestore.merge_entity('Employees',
	'{"PartitionKey": "Sales", "RowKey": "00001", "Age": 36}', (SELECT etag FROM seen)));
SELECT tablestore.delete_entity('Employees', 'Sales', '00001', (SELECT etag FROM seen));
SELECT tablestore.delete_entity('Employees', 'Sales', '00001', 'not-an-etag');
SELECT (tablestore.get_entity('Employees', 'Sales', '00001')->>'Age')::int AS age_after;
SELECT tablestore.delete_entity('Employees', 'Sales', '00001',
	tablestore.get_entity('Employees', 'Sales', '00001')->>'odata.etag');
SELECT tablestore.delete_entity('Employees', 'Sales', '00001');

-- the ETag is the Timestamp
SELECT e->>'odata.etag' = 'W/"datetime''' || replace(e->>'Timestamp', ':', '%3A') || '''"' AS etag_is_timestamp
	FROM tablestore.get_entity('Employees', 'Sales', '00002') e;

-- validation errors
SELECT tablestore.insert_entity('Employees', '[1, 2]');
SELECT tablestore.insert_entity('Employees', '{"RowKey": "1"}');
SELECT tablestore.insert_entity('Employees', '{"PartitionKey": "a/b", "RowKey": "1"}');
SELECT tablestore.insert_entity('Employees', '{"PartitionKey": "a", "RowKey": "1", "Nested": {"x": 1}}');
SELECT tablestore.insert_entity('Employees', '{"PartitionKey": "a", "RowKey": "1", "List": [1]}');
SELECT tablestore.insert_entity('Employees', '{"PartitionKey": "a", "RowKey": "1", "1st": 1}');
SELECT tablestore.insert_entity('Employees', '{"PartitionKey": "a", "RowKey": "1", "Age": 2147483648}');
SELECT tablestore.insert_entity('Employees', '{"PartitionKey": "a", "RowKey": "1", "N": "x", "N@odata.type": "Edm.Int64"}');
SELECT tablestore.insert_entity('Employees', '{"PartitionKey": "a", "RowKey": "1", "N": "x", "N@odata.type": "Edm.Decimal"}');
SELECT tablestore.insert_entity('Employees', '{"PartitionKey": "a", "RowKey": "1", "D": "1600-12-31T23:59:59Z", "D@odata.type": "Edm.DateTime"}');
SELECT tablestore.insert_entity('Employees', '{"PartitionKey": "a", "RowKey": "1", "D": "2020-02-30T00:00:00Z", "D@odata.type": "Edm.DateTime"}');
SELECT tablestore.insert_entity('Employees', '{"PartitionKey": "a", "RowKey": "1", "G": "not-a-guid", "G@odata.type": "Edm.Guid"}');
SELECT tablestore.insert_entity('Employees', '{"PartitionKey": "a", "RowKey": "1", "B": "AQI", "B@odata.type": "Edm.Binary"}');
SELECT tablestore.insert_entity('Employees', jsonb_build_object('PartitionKey', 'a', 'RowKey', repeat('x', 513)));
-- the longest keys of the service, beyond what a btree could index
SELECT length(e->>'PartitionKey') AS pk_chars, length(e->>'RowKey') AS rk_chars
FROM tablestore.insert_entity('Employees', jsonb_build_object('PartitionKey', repeat('漢', 512), 'RowKey', repeat('字', 512))) e;
SELECT count(*) AS entities FROM tablestore_data.employees;

-- the error code table
SELECT * FROM tablestore.error_codes() ORDER BY code;

-- delete a table
SELECT tablestore.delete_table('EMPLOYEES');
SELECT tablestore.delete_table('Employees');
SELECT tablestore.insert_entity('Employees', '{"PartitionKey": "a", "RowKey": "1"}');
SELECT * FROM tablestore.list_tables();
SELECT tablestore.delete_table('Archive2024');
DROP FUNCTION shown(jsonb);

-- validate_entity: a write's validation without the write; the stored form
SELECT tablestore.validate_entity('{"PartitionKey": "p", "RowKey": "r", "Timestamp": "2020-01-01T00:00:00Z",
	"G": "3F2504E0-4F89-11D3-9A0C-0305E82C3301", "G@odata.type": "Edm.Guid", "L": 5, "L@odata.type": "Edm.Int64",
	"D": 2, "D@odata.type": "Edm.Double", "N": null}') AS stored;
\set VERBOSITY terse
SELECT tablestore.validate_entity('{"PartitionKey": "p", "RowKey": "r", "X": "0x1p3", "X@odata.type": "Edm.Double"}');
SELECT tablestore.validate_entity('{"RowKey": "r"}');
SELECT tablestore.validate_entity(NULL);
\set VERBOSITY default
-- values already canonical are stored as given; others are brought into form
SELECT tablestore.validate_entity('{"PartitionKey": "p", "RowKey": "r",
	"B": "AQJ=", "B@odata.type": "Edm.Binary", "C": "AQI=", "C@odata.type": "Edm.Binary", "E": "", "E@odata.type": "Edm.Binary",
	"G": "3F2504E0-4F89-11D3-9A0C-0305E82C3301", "G@odata.type": "Edm.Guid",
	"H": "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "H@odata.type": "Edm.Guid",
	"I": 100, "J": 1e2, "K": 5.0, "L": -7, "L@odata.type": "Edm.Int32"}') AS canonical;
\set VERBOSITY terse
SELECT tablestore.validate_entity('{"PartitionKey": "p", "RowKey": "r", "L": 5.0, "L@odata.type": "Edm.Int32"}');
SELECT tablestore.validate_entity('{"PartitionKey": "p", "RowKey": "r", "M": 2147483648}');
\set VERBOSITY default
