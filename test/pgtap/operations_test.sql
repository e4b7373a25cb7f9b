-- Semantics of the operations: replace, merge, upserts, Timestamps, ETags,
-- select lists, table names.
BEGIN;
SELECT plan(22);

CREATE FUNCTION pg_temp.props(e jsonb) RETURNS jsonb LANGUAGE sql
	AS $$ SELECT e - 'PartitionKey' - 'RowKey' - 'Timestamp' - 'odata.etag' $$;
SELECT tablestore.create_table('Ops');
SELECT tablestore.insert_entity('Ops', '{"PartitionKey": "p", "RowKey": "r", "A": 1, "B": "x",
	"C": "5", "C@odata.type": "Edm.Int64"}');

SELECT is(pg_temp.props(tablestore.update_entity('Ops', '{"PartitionKey": "p", "RowKey": "r", "A": 2}')),
	'{"A": 2}', 'replace removes absent properties');
SELECT is(pg_temp.props(tablestore.update_entity('Ops', '{"PartitionKey": "p", "RowKey": "r", "A": 2, "B": null}')),
	'{"A": 2}', 'replace with null: absent');
SELECT is(pg_temp.props(tablestore.merge_entity('Ops', '{"PartitionKey": "p", "RowKey": "r", "B": "y", "C": "6", "C@odata.type": "Edm.Int64"}')),
	'{"A": 2, "B": "y", "C": "6", "C@odata.type": "Edm.Int64"}', 'merge adds and keeps');
SELECT is(pg_temp.props(tablestore.merge_entity('Ops', '{"PartitionKey": "p", "RowKey": "r", "C": 7, "A": null}')),
	'{"A": 2, "B": "y", "C": 7}', 'merge overwrites value and type (Int64 -> Int32), null keeps the old value');
SELECT is(pg_temp.props(tablestore.insert_or_replace_entity('Ops', '{"PartitionKey": "p", "RowKey": "r", "D": true}')),
	'{"D": true}', 'insert_or_replace on an existing entity replaces');
SELECT is(pg_temp.props(tablestore.insert_or_merge_entity('Ops', '{"PartitionKey": "p", "RowKey": "r", "E": 1}')),
	'{"D": true, "E": 1}', 'insert_or_merge on an existing entity merges');
SELECT is(pg_temp.props(tablestore.insert_or_merge_entity('Ops', '{"PartitionKey": "p", "RowKey": "new1", "E": 1}')),
	'{"E": 1}', 'insert_or_merge on a missing entity inserts');
SELECT is(pg_temp.props(tablestore.insert_or_replace_entity('Ops', '{"PartitionKey": "p", "RowKey": "new2", "E": 2}')),
	'{"E": 2}', 'insert_or_replace on a missing entity inserts');

-- every write moves Timestamp and ETag forward, even within one microsecond
CREATE TEMP TABLE stamps AS
	SELECT i, (tablestore.merge_entity('Ops', jsonb_build_object('PartitionKey', 'p', 'RowKey', 'r', 'N', i))->>'Timestamp')::timestamptz AS ts
	FROM generate_series(1, 200) i;
SELECT is((SELECT count(*) FROM (SELECT ts, lag(ts) OVER (ORDER BY i) AS prev FROM stamps) s WHERE ts <= prev)::int, 0,
	'200 merges in a row: Timestamps strictly increase');
SELECT is((SELECT count(DISTINCT ts) FROM stamps)::int, 200, 'and all differ');
SELECT is((tablestore.get_entity('Ops', 'p', 'r')->>'Timestamp')::timestamptz, (SELECT max(ts) FROM stamps),
	'the stored Timestamp is the last write''s');
SELECT is(tablestore.get_entity('Ops', 'p', 'r')->>'odata.etag', tablestore.get_entity('Ops', 'p', 'r')->>'odata.etag',
	'reads do not change the ETag');
SELECT is((SELECT (e->>'Timestamp')::timestamptz FROM tablestore.query_entities('Ops', 'PartitionKey eq ''p'' and RowKey eq ''r''') e),
	(SELECT max(ts) FROM stamps), 'nor the stored Timestamp (read by a query)');

-- writes with the current ETag succeed
SELECT lives_ok($$SELECT tablestore.update_entity('Ops', '{"PartitionKey": "p", "RowKey": "r"}',
	tablestore.get_entity('Ops', 'p', 'r')->>'odata.etag')$$, 'update with the current ETag');
SELECT lives_ok($$SELECT tablestore.merge_entity('Ops', '{"PartitionKey": "p", "RowKey": "r", "Z": 1}',
	tablestore.get_entity('Ops', 'p', 'r')->>'odata.etag')$$, 'merge with the current ETag');
SELECT lives_ok($$SELECT tablestore.delete_entity('Ops', 'p', 'r', tablestore.get_entity('Ops', 'p', 'r')->>'odata.etag')$$,
	'delete with the current ETag');
SELECT throws_ok($$SELECT tablestore.get_entity('Ops', 'p', 'r')$$, 'P0002', NULL, 'deleted entities are gone');

-- select lists
SELECT is(tablestore.get_entity('Ops', 'p', 'new1', ' E , Missing') - 'odata.etag',
	'{"E": 1, "Missing": null}', 'select list: exactly the chosen, missing as null, keys only when named');
SELECT ok(tablestore.get_entity('Ops', 'p', 'new1', 'E,RowKey,Timestamp') ?& ARRAY['RowKey', 'Timestamp', 'odata.etag']
	AND NOT tablestore.get_entity('Ops', 'p', 'new1', 'E,RowKey,Timestamp') ? 'PartitionKey',
	'select list keeps the ETag; named system properties come back');

-- table names: as created, ordinal order, case-insensitive
SELECT tablestore.create_table(n) FROM unnest(ARRAY['Zeta', 'alpha', 'Beta']) n;
SELECT is(ARRAY(SELECT t FROM tablestore.list_tables() t WHERE t IN ('Zeta', 'alpha', 'Beta', 'Ops')),
	ARRAY['Beta', 'Ops', 'Zeta', 'alpha'], 'list_tables: names as created, ordinal order');
SELECT lives_ok($$SELECT tablestore.delete_table('ops')$$, 'delete_table is case-insensitive');
SELECT tablestore.create_table('OPS');
SELECT is((SELECT count(*) FROM tablestore.query_entities('OPS'))::int, 0, 'a table created again is empty');

SELECT * FROM finish();
ROLLBACK;
