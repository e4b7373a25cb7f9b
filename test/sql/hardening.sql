-- Hardening (issue 10): what a hostile or careless caller can send or build
-- is refused with a clear error and the right code, never a crash, a read
-- of memory or data the role may not read, a lock it should not hold, or a
-- cache that grows without bound.
\set VERBOSITY terse
-- try(sql): 'ok', or the SQLSTATE and the message (clipped) of its error
CREATE FUNCTION pg_temp.try(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || left(SQLERRM, 160);
END $$;
GRANT EXECUTE ON FUNCTION pg_temp.try(text) TO PUBLIC;

CREATE ROLE regress_ts_owner;
CREATE ROLE regress_ts_attacker;
CREATE ROLE regress_ts_nobody;
GRANT CREATE ON SCHEMA tablestore_data TO regress_ts_owner, regress_ts_attacker;
SET ROLE regress_ts_owner;
SELECT tablestore.create_table('Victim');
SELECT tablestore.insert_entity('Victim', '{"PartitionKey": "p", "RowKey": "r", "Secret": "s3cret"}') IS NOT NULL AS inserted;
RESET ROLE;

-- 1, 2. Relations that are not what create_table made.  The event trigger
-- refuses them when they are made or altered ...
SET ROLE regress_ts_attacker;
SELECT pg_temp.try($$CREATE TABLE tablestore_data.fakeuuid (pk uuid NOT NULL, rk uuid NOT NULL,
	ts timestamptz NOT NULL, props jsonb NOT NULL)$$) AS uuid_keys;
SELECT pg_temp.try($$CREATE TABLE tablestore_data.fakeint (pk int8 NOT NULL, rk int8 NOT NULL,
	ts timestamptz NOT NULL, props jsonb NOT NULL)$$) AS int8_keys;
SELECT pg_temp.try($$CREATE TABLE tablestore_data.fakepart (pk tablestore.key NOT NULL, rk tablestore.key NOT NULL,
	ts timestamptz NOT NULL, props jsonb NOT NULL) PARTITION BY RANGE (pk)$$) AS partitioned;
SELECT pg_temp.try($$CREATE VIEW tablestore_data.fakeview AS
	SELECT 'p'::tablestore.key AS pk, 'r'::tablestore.key AS rk, now() AS ts, '{}'::jsonb AS props$$) AS view;
RESET ROLE;
CREATE SCHEMA regress_elsewhere AUTHORIZATION regress_ts_owner;
SET ROLE regress_ts_owner;
SELECT pg_temp.try($$ALTER TABLE tablestore_data.victim ALTER COLUMN props DROP NOT NULL$$) AS drop_not_null;
SELECT pg_temp.try($$ALTER TABLE tablestore_data.victim ALTER COLUMN rk TYPE text$$) AS retype;
SELECT pg_temp.try($$ALTER TABLE tablestore_data.victim RENAME TO elsewhere$$) AS rename;
SELECT pg_temp.try($$ALTER TABLE tablestore_data.victim SET SCHEMA regress_elsewhere$$) AS set_schema;
SELECT pg_temp.try($$ALTER TABLE tablestore_data.victim RENAME COLUMN props TO p$$) AS rename_column;
RESET ROLE;

-- ... and where the event triggers did not fire (disabled by a superuser),
-- every function refuses them when it meets them, read or write
ALTER EVENT TRIGGER tablestore_ddl_command_end DISABLE;
SET ROLE regress_ts_attacker;
CREATE TABLE tablestore_data.fakeuuid (pk uuid NOT NULL, rk uuid NOT NULL, ts timestamptz NOT NULL, props jsonb NOT NULL);
CREATE UNIQUE INDEX ON tablestore_data.fakeuuid (pk, rk);
INSERT INTO tablestore_data.fakeuuid VALUES (gen_random_uuid(), gen_random_uuid(), now(), '{}');
CREATE TABLE tablestore_data.fakeint (pk int8 NOT NULL, rk int8 NOT NULL, ts timestamptz NOT NULL, props jsonb NOT NULL);
CREATE UNIQUE INDEX ON tablestore_data.fakeint (pk, rk);
INSERT INTO tablestore_data.fakeint VALUES (1, 2, now(), '{}');
CREATE TABLE tablestore_data.fakepart (pk tablestore.key NOT NULL, rk tablestore.key NOT NULL,
	ts timestamptz NOT NULL, props jsonb NOT NULL) PARTITION BY RANGE (pk);
SELECT t AS "table", pg_temp.try(format('SELECT tablestore.query_entities(%L)', t)) AS query,
	pg_temp.try(format('SELECT tablestore.get_entity(%L, %L, %L)', t, 'p', 'r')) AS get,
	pg_temp.try(format('SELECT tablestore.insert_or_merge_entity(%L, %L)', t, '{"PartitionKey": "p", "RowKey": "r"}')) AS upsert
FROM unnest(ARRAY['FakeUuid', 'FakeInt', 'FakePart']) t;
RESET ROLE;
SET ROLE regress_ts_owner;
ALTER TABLE tablestore_data.victim ALTER COLUMN props DROP NOT NULL;
RESET ROLE;
GRANT SELECT ON tablestore_data.victim TO regress_ts_nobody;
SET ROLE regress_ts_nobody;
SELECT pg_temp.try($$SELECT tablestore.query_entities('Victim')$$) AS query_nullable;
SELECT pg_temp.try($$SELECT tablestore.get_entity('Victim', 'p', 'r')$$) AS get_nullable;
RESET ROLE;
SET ROLE regress_ts_owner;
ALTER TABLE tablestore_data.victim ALTER COLUMN props SET NOT NULL;
RESET ROLE;
ALTER EVENT TRIGGER tablestore_ddl_command_end ENABLE;
REVOKE SELECT ON tablestore_data.victim FROM regress_ts_nobody;
DROP TABLE tablestore_data.fakeuuid, tablestore_data.fakeint, tablestore_data.fakepart;

-- props that are not an object (stored with plain SQL where the CHECK
-- constraint was dropped): refused on read and on merge, nothing lost
SET ROLE regress_ts_owner;
SELECT tablestore.create_table('Arrays');
ALTER TABLE tablestore_data.arrays DROP CONSTRAINT entity_props_object;
INSERT INTO tablestore_data.arrays VALUES ('p', 'r', now(), '[1, 2]');
SELECT pg_temp.try($$SELECT tablestore.query_entities('Arrays')$$) AS query_array;
SELECT pg_temp.try($$SELECT tablestore.get_entity('Arrays', 'p', 'r')$$) AS get_array;
SELECT pg_temp.try($$SELECT tablestore.merge_entity('Arrays', '{"PartitionKey": "p", "RowKey": "r", "M": 1}')$$) AS merge_array;
SELECT props FROM tablestore_data.arrays;
SELECT tablestore.delete_table('Arrays');
RESET ROLE;

-- a rule or a trigger that turns a write into nothing cannot make a write
-- report success
SET ROLE regress_ts_owner;
SELECT tablestore.create_table('Ruled');
CREATE RULE nothing AS ON INSERT TO tablestore_data.ruled DO INSTEAD NOTHING;
SELECT pg_temp.try($$SELECT tablestore.insert_entity('Ruled', '{"PartitionKey": "p", "RowKey": "r"}')$$) AS insert_ruled;
SELECT pg_temp.try($$SELECT tablestore.query_entities('Ruled')$$) AS query_ruled;
DROP RULE nothing ON tablestore_data.ruled;
CREATE FUNCTION pg_temp.skip() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER skip BEFORE INSERT ON tablestore_data.ruled FOR EACH ROW EXECUTE FUNCTION pg_temp.skip();
SELECT pg_temp.try($$SELECT tablestore.insert_entity('Ruled', '{"PartitionKey": "p", "RowKey": "r"}')$$) AS insert_skipped;
SELECT pg_temp.try($$SELECT tablestore.insert_or_replace_entity('Ruled', '{"PartitionKey": "p", "RowKey": "r"}')$$) AS upsert_skipped;
SELECT count(*) AS stored FROM tablestore_data.ruled;
SELECT tablestore.delete_table('Ruled');
DROP FUNCTION pg_temp.skip();
RESET ROLE;

-- 3. NULL in every argument of every function, for a role without rights
SET ROLE regress_ts_nobody;
SELECT f AS call, pg_temp.try('SELECT ' || f) AS result FROM unnest(ARRAY[
	'tablestore.create_table(NULL)',
	'tablestore.delete_table(NULL)',
	'tablestore.list_tables(NULL)',
	'tablestore.insert_entity(NULL, ''{}'')',
	'tablestore.insert_entity(''Victim'', NULL)',
	'tablestore.update_entity(''Victim'', ''{"PartitionKey": "p", "RowKey": "r"}'', NULL)',
	'tablestore.merge_entity(NULL, NULL, NULL)',
	'tablestore.insert_or_replace_entity(NULL, NULL)',
	'tablestore.insert_or_merge_entity(''Victim'', NULL)',
	'tablestore.delete_entity(NULL, NULL, NULL, NULL)',
	'tablestore.delete_entity(''Victim'', ''p'', ''r'', NULL)',
	'tablestore.get_entity(NULL, NULL, NULL, NULL)',
	'tablestore.get_entity(''Victim'', NULL, ''r'')',
	'tablestore.query_entities(NULL)',
	'tablestore.query_entities_page(NULL)',
	'tablestore.query_entities_page(''Victim'', NULL, NULL, NULL, ''p'', NULL)',
	'tablestore.explain_query(NULL, NULL)',
	'tablestore.execute_batch(NULL, NULL)',
	'tablestore.execute_batch(''Victim'', NULL)',
	'tablestore.verify_index(NULL)',
	'tablestore.key_is_valid(NULL)'
]) f;
RESET ROLE;

-- 4. Filters: every node counts, flat chains and constants included; the
-- work is bounded before anything is read or locked
SELECT pg_temp.try($$SELECT tablestore.explain_query('Victim', 'true' || repeat(' or true', 200000))$$) AS long_or;
SELECT pg_temp.try($$SELECT count(*) FROM tablestore.query_entities('Victim', repeat('true and ', 1000000) || 'true')$$) AS long_and;
SELECT pg_temp.try($$SELECT tablestore.explain_query('Victim', repeat('not ', 100) || 'true')$$) AS long_not;
SELECT pg_temp.try($$SELECT tablestore.explain_query('Victim', repeat('(', 100000) || 'true' || repeat(')', 100000))$$) AS deep_parens;
SELECT pg_temp.try($$SELECT tablestore.explain_query('Victim', repeat('true or ', 14) || 'true')$$) AS fifteen_constants;
SELECT pg_temp.try($$SELECT tablestore.explain_query('Victim', repeat('true or ', 15) || 'true')$$) AS sixteen_constants;

-- 5. A role without rights takes no lock on a table it cannot use
SET ROLE regress_ts_nobody;
BEGIN;
SELECT pg_temp.try($$SELECT tablestore.explain_query('Victim', 'x eq 1')$$) AS explain_no_rights;
SELECT pg_temp.try($$SELECT tablestore.insert_entity('Victim', '{"PartitionKey": "p", "RowKey": "x"}')$$) AS insert_no_rights;
SELECT pg_temp.try($$SELECT tablestore.execute_batch('Victim', '[{"op": "delete", "entity": {"PartitionKey": "p", "RowKey": "r"}}]')$$) AS batch_no_rights;
SELECT count(*) AS locks_on_victim FROM pg_locks
WHERE relation = 'tablestore_data.victim'::regclass AND pid = pg_backend_pid();
COMMIT;
RESET ROLE;
-- a reader's explain_query keeps no lock either
GRANT SELECT ON tablestore_data.victim TO regress_ts_nobody;
SET ROLE regress_ts_nobody;
BEGIN;
SELECT tablestore.explain_query('Victim', 'PartitionKey eq ''p''')->>'access' AS access;
SELECT count(*) AS locks_on_victim FROM pg_locks
WHERE relation = 'tablestore_data.victim'::regclass AND pid = pg_backend_pid();
COMMIT;
RESET ROLE;
REVOKE SELECT ON tablestore_data.victim FROM regress_ts_nobody;

-- 6. The statement cache is bounded and forgets dropped relations: 80
-- create/insert/delete cycles leave no statements of the dropped tables
DO $$
BEGIN
	FOR i IN 1..80 LOOP
		PERFORM tablestore.create_table('Cycle' || i);
		PERFORM tablestore.insert_entity('Cycle' || i, '{"PartitionKey": "p", "RowKey": "r"}');
		PERFORM tablestore.update_entity('Cycle' || i, '{"PartitionKey": "p", "RowKey": "r"}');
		PERFORM tablestore.delete_table('Cycle' || i);
	END LOOP;
END $$;
SELECT tablestore.insert_or_merge_entity('Victim', '{"PartitionKey": "p", "RowKey": "r"}') IS NOT NULL AS merged;
SELECT count(*) FILTER (WHERE ident LIKE '%tablestore_data.cycle%') AS dropped_tables_statements,
	count(*) FILTER (WHERE ident LIKE '%tablestore_data.victim%') > 0 AS live_table_statements
FROM pg_backend_memory_contexts;
-- and at most 64 relations' statements are kept
DO $$
BEGIN
	FOR i IN 1..70 LOOP
		PERFORM tablestore.create_table('Many' || i);
		PERFORM tablestore.insert_entity('Many' || i, '{"PartitionKey": "p", "RowKey": "r"}');
	END LOOP;
END $$;
SELECT count(DISTINCT substring(ident FROM 'tablestore_data\.(many[0-9]+)')) <= 64 AS bounded
FROM pg_backend_memory_contexts WHERE ident LIKE '%tablestore_data.many%';
SELECT count(*) AS deleted FROM (SELECT tablestore.delete_table('Many' || i) FROM generate_series(1, 70) i) d;

-- 7. Errors
-- a page of large entities is cut short with a continuation, never fails;
-- the walk returns every entity once
SELECT tablestore.create_table('Large');
SELECT count(*) AS inserted FROM (
	SELECT tablestore.insert_entity('Large', jsonb_build_object('PartitionKey', 'p', 'RowKey', lpad(i::text, 3, '0'),
		'A', repeat('a', 30000), 'B', repeat('b', 30000), 'C', repeat('c', 30000), 'D', repeat('d', 30000),
		'E', repeat('e', 30000), 'F', repeat('f', 30000), 'G', repeat('g', 30000), 'H', repeat('h', 30000),
		'I', repeat('i', 30000), 'J', repeat('j', 30000), 'K', repeat('k', 30000), 'L', repeat('l', 30000),
		'M', repeat('m', 30000), 'N', repeat('n', 30000), 'O', repeat('o', 30000), 'P', repeat('p', 30000)))
	FROM generate_series(1, 80) i) d;
WITH RECURSIVE walk AS (
	SELECT 1 AS page, p.* FROM tablestore.query_entities_page('Large', NULL, 'RowKey') p
	UNION ALL
	SELECT w.page + 1, p.* FROM walk w,
		LATERAL tablestore.query_entities_page('Large', NULL, 'RowKey', NULL, w.next_partition_key, w.next_row_key) p
	WHERE w.next_partition_key IS NOT NULL
)
SELECT (SELECT count(*) FROM walk) AS pages, count(*) AS entities, count(DISTINCT e->>'RowKey') AS distinct_entities
FROM walk, jsonb_array_elements(entities) e;
SELECT jsonb_array_length(entities) < 80 AS cut_short, next_row_key IS NOT NULL AS continued
FROM tablestore.query_entities_page('Large');
SELECT tablestore.delete_table('Large');

-- a $select list names at most 255 properties
SELECT pg_temp.try(format('SELECT tablestore.get_entity(%L, %L, %L, %L)', 'Victim', 'p', 'r',
	(SELECT string_agg('P' || i, ',') FROM generate_series(1, 255) i))) AS select_255;
SELECT pg_temp.try(format('SELECT tablestore.get_entity(%L, %L, %L, %L)', 'Victim', 'p', 'r',
	(SELECT string_agg('P' || i, ',') FROM generate_series(1, 20000) i))) AS select_20000;

SELECT pg_temp.try(format('SELECT tablestore.get_entity(%L, %L, %L, %L)', 'Victim', 'p', 'r',
	repeat('n', 256))) AS select_long_name;

-- Edm.Double takes the service's lexical forms only
SELECT v AS double, pg_temp.try(format('SELECT tablestore.insert_or_replace_entity(%L, %L)', 'Victim',
	jsonb_build_object('PartitionKey', 'p', 'RowKey', 'd', 'X', v, 'X@odata.type', 'Edm.Double'))) AS result
FROM unnest(ARRAY['0x1p3', ' 8', 'inf', 'nan', '8 ', '1e', '.5', '-2.5E+3', 'NaN', '-Infinity']) v;

-- echoed input is clipped: the message of a 10 MB ETag or select list is short
SELECT length(pg_temp.try(format('SELECT tablestore.update_entity(%L, %L, %L)', 'Victim',
	'{"PartitionKey": "p", "RowKey": "r"}', repeat('x', 10000000)))) < 300 AS short_etag_error;
SELECT length(pg_temp.try(format('SELECT tablestore.get_entity(%L, %L, %L, %L)', 'Victim', 'p', 'r',
	repeat('x', 200000) || ',,'))) < 300 AS short_select_error;
SELECT length(pg_temp.try(format('SELECT tablestore.insert_entity(%L, %L)', 'Victim',
	jsonb_build_object('PartitionKey', 'p', 'RowKey', 'q', 'X', repeat('y', 100000), 'X@odata.type', 'Edm.Int64')))) < 300
	AS short_value_error;

-- create_table without CREATE on tablestore_data names the right, not an
-- internal statement
SET ROLE regress_ts_nobody;
SELECT pg_temp.try($$SELECT tablestore.create_table('NoRight')$$) AS no_create_right;
RESET ROLE;

-- 8. The catalog follows the relations: dropped by its owner, a table is
-- gone everywhere; its name can be created again
SET ROLE regress_ts_owner;
SELECT tablestore.create_table('Orphan');
DROP TABLE tablestore_data.orphan;
SELECT count(*) AS listed FROM tablestore.list_tables('TableName eq ''Orphan''');
SELECT count(*) AS in_catalog FROM tablestore.tables WHERE relation_name = 'orphan';
SELECT pg_temp.try($$SELECT tablestore.delete_table('Orphan')$$) AS delete_orphan;
SELECT tablestore.create_table('Orphan');
RESET ROLE;
-- without the event triggers: list_tables follows the relations, and
-- create_table and delete_table repair the catalog
ALTER EVENT TRIGGER tablestore_sql_drop DISABLE;
DROP TABLE tablestore_data.orphan;
SELECT count(*) AS listed FROM tablestore.list_tables('TableName eq ''Orphan''');
SELECT pg_temp.try($$SELECT tablestore.create_table('Orphan')$$) AS create_repairs;
DROP TABLE tablestore_data.orphan;
SELECT pg_temp.try($$SELECT tablestore.delete_table('Orphan')$$) AS delete_repairs;
SELECT count(*) AS in_catalog FROM tablestore.tables WHERE relation_name = 'orphan';
ALTER EVENT TRIGGER tablestore_sql_drop ENABLE;

-- 9. Rows written with plain SQL obey the rules of keys and props
SET ROLE regress_ts_owner;
SELECT pg_temp.try($$INSERT INTO tablestore_data.victim VALUES ('p', 'a/b', now(), '{}')$$) AS slash_key;
SELECT pg_temp.try($$INSERT INTO tablestore_data.victim VALUES ('p', repeat('k', 600), now(), '{}')$$) AS long_key;
SELECT pg_temp.try($$INSERT INTO tablestore_data.victim VALUES ('p', 'ok', now(), '"scalar"')$$) AS scalar_props;
SELECT pg_temp.try($$INSERT INTO tablestore_data.victim VALUES ('p', 'ok', now(), '{"A": 1}')$$) AS valid_row;
-- and a row that breaks them (constraint dropped by the owner) does not stop
-- paging: its key comes back as a continuation that works
ALTER TABLE tablestore_data.victim DROP CONSTRAINT entity_keys_valid;
INSERT INTO tablestore_data.victim VALUES ('p', 'a/b', now(), '{}'), ('p', 'a/c', now(), '{}');
SELECT next_partition_key, next_row_key FROM tablestore.query_entities_page('Victim', NULL, NULL, 1);
SELECT jsonb_path_query_array(entities, '$[*].RowKey') AS rows, next_row_key
FROM tablestore.query_entities_page('Victim', NULL, NULL, 2, 'p', 'a/b');
-- values that are not of their type (written with plain SQL) count as
-- absent in filters and come back as stored; none makes a query fail
INSERT INTO tablestore_data.victim VALUES
	('v', '01', now(), '{"A": 1e1000}'),
	('v', '02', now(), '{"A": "abc", "A@odata.type": "Edm.Int64"}'),
	('v', '03', now(), '{"A": "garbage", "A@odata.type": "Edm.DateTime"}'),
	('v', '04', now(), '{"A": "zz", "A@odata.type": "Edm.Guid"}'),
	('v', '05', now(), '{"A": "!!", "A@odata.type": "Edm.Binary"}'),
	('v', '06', now(), '{"A": "x", "A@odata.type": "Edm.Double"}'),
	('v', '07', now(), '{"A": true, "A@odata.type": "Edm.Int32"}'),
	('v', '08', now(), '{"A": 99999999999999999999, "A@odata.type": "Edm.Int32"}'),
	('v', '09', now(), '{"A": {"x": [1]}, "A@odata.type": 5}'),
	('v', '10', now(), '{"A": null}'),
	('v', '11', now(), '{"A": 1.5, "A@odata.type": "Edm.Int64"}'),
	('v', '12', now(), '{"PartitionKey": "zz", "odata.etag": 5, "Timestamp": 1}');
SELECT f AS filter, (SELECT count(*) FROM tablestore.query_entities('Victim', 'PartitionKey eq ''v'' and ' || f)) AS matches
FROM unnest(ARRAY['A eq 5L', 'A ne 5L', 'A eq 5', 'A gt 1.0', 'A gt datetime''2020-01-01T00:00:00Z''',
	'A eq guid''00000000-0000-0000-0000-000000000000''', 'A eq X''00''', 'A eq true', 'A ge ''''']) f;
SELECT e->>'RowKey' AS rk, left((e->'A')::text, 24) AS a, e->>'PartitionKey' AS pk
FROM tablestore.query_entities('Victim', 'PartitionKey eq ''v''') e;
SELECT tablestore.get_entity('Victim', 'v', '09', 'A')->'A' AS nested;
SELECT pg_temp.try($$SELECT tablestore.merge_entity('Victim', '{"PartitionKey": "v", "RowKey": "09", "B": 1}')$$) AS merge_nested;
RESET ROLE;

-- upserts under row-level security that hides the existing key: a service
-- error, not a loop
SET ROLE regress_ts_owner;
SELECT tablestore.create_table('Hidden');
SELECT tablestore.insert_entity('Hidden', '{"PartitionKey": "p", "RowKey": "secret"}') IS NOT NULL AS inserted;
ALTER TABLE tablestore_data.hidden ENABLE ROW LEVEL SECURITY;
CREATE POLICY seen ON tablestore_data.hidden FOR SELECT USING (rk <> 'secret');
CREATE POLICY changed ON tablestore_data.hidden FOR UPDATE USING (rk <> 'secret');
CREATE POLICY added ON tablestore_data.hidden FOR INSERT WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON tablestore_data.hidden TO regress_ts_nobody;
RESET ROLE;
SET ROLE regress_ts_nobody;
SELECT pg_temp.try($$SELECT tablestore.insert_or_merge_entity('Hidden', '{"PartitionKey": "p", "RowKey": "secret", "X": 1}')$$) AS upsert_hidden;
SELECT pg_temp.try($$SELECT tablestore.insert_or_replace_entity('Hidden', '{"PartitionKey": "p", "RowKey": "open", "X": 1}')$$) AS upsert_visible;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT pg_temp.try($$SELECT tablestore.insert_or_merge_entity('Hidden', '{"PartitionKey": "p", "RowKey": "secret", "X": 1}')$$) AS upsert_hidden_rr;
COMMIT;
RESET ROLE;
SELECT rk, props FROM tablestore_data.hidden ORDER BY rk;

-- queries under row-level security stream through SQL cursors, in batches,
-- in key order, with the policies applied
SET ROLE regress_ts_owner;
SELECT count(*) AS inserted FROM (SELECT tablestore.insert_entity('Hidden', jsonb_build_object('PartitionKey', 'm' || (i % 3),
	'RowKey', lpad(i::text, 4, '0'), 'N', i)) FROM generate_series(1, 250) i) d;
RESET ROLE;
SET ROLE regress_ts_nobody;
SELECT count(*) AS visible, count(*) = count(DISTINCT e->>'RowKey') AS once,
	bool_and((e->>'N')::int BETWEEN 1 AND 250) AS all_policy_allowed
FROM tablestore.query_entities('Hidden', 'N ge 1') e;
SELECT array_agg(e->>'RowKey') = (SELECT array_agg(lpad(i::text, 4, '0') ORDER BY i % 3, lpad(i::text, 4, '0'))
	FROM generate_series(1, 250) i) AS key_order
FROM tablestore.query_entities('Hidden', 'N ge 1') e;
SELECT count(*) AS limited FROM (SELECT tablestore.query_entities('Hidden', 'PartitionKey ge ''m''') LIMIT 5) d;
SELECT count(*) AS secret FROM tablestore.query_entities('Hidden', 'RowKey eq ''secret''');
BEGIN;
DECLARE c CURSOR FOR SELECT e->>'RowKey' AS rk FROM tablestore.query_entities('Hidden', 'PartitionKey eq ''m1''') e;
FETCH 2 FROM c;
FETCH 1 FROM c;
CLOSE c;
COMMIT;
RESET ROLE;

-- clean up
SET ROLE regress_ts_owner;
SELECT tablestore.delete_table(t) FROM unnest(ARRAY['Victim', 'Hidden']) t;
RESET ROLE;
DROP SCHEMA regress_elsewhere;
REVOKE CREATE ON SCHEMA tablestore_data FROM regress_ts_owner, regress_ts_attacker;
DROP ROLE regress_ts_owner, regress_ts_attacker, regress_ts_nobody;
