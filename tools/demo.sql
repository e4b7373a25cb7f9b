-- The employee example: departments are PartitionKeys, zero-padded employee
-- ids are RowKeys.  Errors are part of the demo, so keep going after them.
\set ON_ERROR_STOP 0
\pset pager off
\x auto

SELECT tablestore.create_table('Employees');
SELECT * FROM tablestore.list_tables();

-- Inserts; every property keeps its type (Int64, DateTime, Guid need an annotation).
SELECT tablestore.insert_entity('Employees', '{
  "PartitionKey": "Sales", "RowKey": "00001",
  "FirstName": "Ann", "LastName": "Jones", "Age": 34, "IsActive": true,
  "HireDate": "2019-03-01T09:00:00Z", "HireDate@odata.type": "Edm.DateTime",
  "EmployeeId": "c9da6455-213d-42c9-9a79-3e9149a57833", "EmployeeId@odata.type": "Edm.Guid",
  "Points": "9007199254740993", "Points@odata.type": "Edm.Int64"}');
SELECT tablestore.insert_entity('Employees',
  '{"PartitionKey": "Sales", "RowKey": "00002", "FirstName": "Bo", "Age": 51}');
SELECT tablestore.insert_entity('Employees',
  '{"PartitionKey": "Engineering", "RowKey": "00003", "FirstName": "Cy", "Age": 28}');

-- A point query, then the same with a $select list.
SELECT tablestore.get_entity('Employees', 'Sales', '00001');
SELECT tablestore.get_entity('Employees', 'Sales', '00001', 'FirstName,Age');

-- Replace: the entity becomes exactly what is sent (LastName etc. are gone).
SELECT tablestore.update_entity('Employees',
  '{"PartitionKey": "Sales", "RowKey": "00001", "FirstName": "Ann", "Age": 35}');

-- Merge: only the given properties change.
SELECT tablestore.merge_entity('Employees',
  '{"PartitionKey": "Sales", "RowKey": "00002", "Title": "Team lead"}');

-- Insert-or-merge: inserts when missing, merges when present.
SELECT tablestore.insert_or_merge_entity('Employees',
  '{"PartitionKey": "Engineering", "RowKey": "00004", "FirstName": "Di"}');
SELECT tablestore.insert_or_merge_entity('Employees',
  '{"PartitionKey": "Engineering", "RowKey": "00004", "Age": 41}');

-- Optimistic concurrency: remember an ETag, let someone else write, then
-- delete with the stale ETag: UpdateConditionNotSatisfied.
SELECT tablestore.get_entity('Employees', 'Sales', '00002')->>'odata.etag' AS etag \gset
SELECT tablestore.merge_entity('Employees', '{"PartitionKey": "Sales", "RowKey": "00002", "Age": 52}');
SELECT tablestore.delete_entity('Employees', 'Sales', '00002', :'etag');
-- With the current ETag it works.
SELECT tablestore.delete_entity('Employees', 'Sales', '00002',
  tablestore.get_entity('Employees', 'Sales', '00002')->>'odata.etag');

-- Queries: a $filter, a $select list, key order; and how each is executed.
SELECT e->>'PartitionKey' AS department, e->>'RowKey' AS id, e->>'FirstName' AS name, e->>'Age' AS age
FROM tablestore.query_entities('Employees', 'Age ge 30 or IsActive', 'PartitionKey,RowKey,FirstName,Age') e;
SELECT tablestore.explain_query('Employees', 'PartitionKey eq ''Sales'' and Age ge 30');
SELECT tablestore.explain_query('Employees', 'PartitionKey eq ''Sales'' and (RowKey eq ''00001'' or RowKey eq ''00003'')');
-- One page at a time, with the continuation of the previous one.
SELECT jsonb_array_length(entities) AS entities, next_partition_key, next_row_key
FROM tablestore.query_entities_page('Employees', NULL, 'FirstName', 2);

-- Errors a user meets (each has its own SQLSTATE; see tablestore.error_codes()).
\set VERBOSITY default
SELECT * FROM tablestore.query_entities('Employees', 'startswith(FirstName, ''A'')');
SELECT * FROM tablestore.query_entities('Employees', 'Age gt');
SELECT tablestore.insert_entity('Employees', '{"PartitionKey": "Sales", "RowKey": "00001"}');
SELECT tablestore.get_entity('Employees', 'Sales', '99999');
SELECT tablestore.insert_entity('Employees', '{"PartitionKey": "Sales"}');
SELECT tablestore.insert_entity('Employees', '{"PartitionKey": "Sales/EU", "RowKey": "1"}');
SELECT tablestore.insert_entity('Employees', '{"PartitionKey": "Sales", "RowKey": "9", "Age": "x", "Age@odata.type": "Edm.Int64"}');
SELECT tablestore.insert_entity('Employees', '{"PartitionKey": "Sales", "RowKey": "9", "first-name": "x"}');
SELECT tablestore.insert_entity('Payroll', '{"PartitionKey": "Sales", "RowKey": "1"}');
SELECT tablestore.create_table('employees');
SELECT tablestore.create_table('my_table');

-- The stored form is plain SQL too.
SELECT pk, rk, ts, props FROM tablestore_data.employees ORDER BY pk, rk;
SELECT code, sqlstate, http_status FROM tablestore.error_codes() ORDER BY code;
