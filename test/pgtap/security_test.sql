-- The privilege model with two roles, and a hostile search_path.
BEGIN;
SELECT plan(47);

CREATE ROLE ts_owner NOLOGIN;
CREATE ROLE ts_other NOLOGIN;
GRANT CREATE ON SCHEMA tablestore_data TO ts_owner;

SET ROLE ts_owner;
SELECT lives_ok($$SELECT tablestore.create_table('Secrets')$$, 'a role with CREATE on tablestore_data creates a table');
SELECT is((SELECT pg_get_userbyid(relowner)::text FROM pg_class WHERE oid = 'tablestore_data.secrets'::regclass),
	'ts_owner', 'and owns its relation');
SELECT lives_ok($$SELECT tablestore.insert_entity('Secrets', '{"PartitionKey": "p", "RowKey": "r", "V": 1}')$$, 'the owner inserts');

SET ROLE ts_other;
SELECT throws_ok($$SELECT tablestore.get_entity('Secrets', 'p', 'r')$$, '42501', NULL, 'no rights: get_entity denied');
SELECT throws_ok($$SELECT tablestore.insert_entity('Secrets', '{"PartitionKey": "p", "RowKey": "s"}')$$, '42501', NULL, 'no rights: insert denied');
SELECT throws_ok($$SELECT tablestore.update_entity('Secrets', '{"PartitionKey": "p", "RowKey": "r"}')$$, '42501', NULL, 'no rights: update denied');
SELECT throws_ok($$SELECT tablestore.merge_entity('Secrets', '{"PartitionKey": "p", "RowKey": "r"}')$$, '42501', NULL, 'no rights: merge denied');
SELECT throws_ok($$SELECT tablestore.insert_or_merge_entity('Secrets', '{"PartitionKey": "p", "RowKey": "r"}')$$, '42501', NULL, 'no rights: upsert denied');
SELECT throws_ok($$SELECT tablestore.delete_entity('Secrets', 'p', 'r')$$, '42501', NULL, 'no rights: delete denied');
SELECT throws_ok($$SELECT * FROM tablestore.execute_batch('Secrets', '[{"op": "delete", "entity": {"PartitionKey": "p", "RowKey": "r"}}]')$$,
	'42501', NULL, 'no rights: batch denied');
SELECT throws_ok($$SELECT * FROM tablestore.query_entities('Secrets')$$, '42501', NULL, 'no rights: query_entities denied');
SELECT throws_ok($$SELECT * FROM tablestore.query_entities_page('Secrets')$$, '42501', NULL, 'no rights: query_entities_page denied');
SELECT throws_ok($$SELECT tablestore.verify_index(indexrelid::regclass) FROM pg_index WHERE indrelid = 'tablestore_data.secrets'::regclass$$,
	'42501', NULL, 'no rights: verify_index denied');
SELECT throws_ok($$SELECT tablestore.delete_table('Secrets')$$, '42501', NULL, 'not the owner: delete_table denied');
SELECT throws_ok($$SELECT tablestore.create_table('Mine')$$, '42501', NULL, 'no CREATE on tablestore_data: create_table denied');
SELECT is((SELECT count(*) FROM tablestore.tables WHERE relation_name = 'mine')::int, 0, 'and left no catalog row');
SELECT throws_ok($$INSERT INTO tablestore.tables (relation_name, table_name) VALUES ('x', 'X')$$, '42501', NULL, 'the catalog is read-only to callers');
SELECT ok((SELECT count(*) FROM tablestore.list_tables() t WHERE t = 'Secrets') = 1, 'list_tables shows every table');

RESET ROLE;
SET ROLE ts_owner;
GRANT SELECT ON tablestore_data.secrets TO ts_other;
SET ROLE ts_other;
SELECT is((tablestore.get_entity('Secrets', 'p', 'r')->>'V')::int, 1, 'SELECT granted: get_entity works');
SELECT is((SELECT count(*) FROM tablestore.query_entities('Secrets', 'V eq 1'))::int, 1, 'SELECT granted: query_entities works');
SELECT throws_ok($$SELECT tablestore.insert_entity('Secrets', '{"PartitionKey": "p", "RowKey": "s"}')$$, '42501', NULL, 'but insert is still denied');

RESET ROLE;
SET ROLE ts_owner;
GRANT INSERT, UPDATE ON tablestore_data.secrets TO ts_other;
SET ROLE ts_other;
SELECT lives_ok($$SELECT tablestore.insert_entity('Secrets', '{"PartitionKey": "p", "RowKey": "s"}')$$, 'INSERT granted: insert works');
SELECT lives_ok($$SELECT tablestore.merge_entity('Secrets', '{"PartitionKey": "p", "RowKey": "r", "W": 2}')$$, 'UPDATE granted: merge works');
SELECT throws_ok($$SELECT tablestore.delete_entity('Secrets', 'p', 'r')$$, '42501', NULL, 'but delete is still denied');
RESET ROLE;

-- under row-level security queries read through SQL, so the policies apply
SET ROLE ts_owner;
ALTER TABLE tablestore_data.secrets ENABLE ROW LEVEL SECURITY;
CREATE POLICY only_v1 ON tablestore_data.secrets FOR SELECT USING (props ? 'V');
SELECT lives_ok($$SELECT tablestore.insert_entity('Secrets', '{"PartitionKey": "q", "RowKey": "1", "V": 2}')$$, 'the owner inserts more');
SELECT lives_ok($$SELECT tablestore.insert_entity('Secrets', '{"PartitionKey": "q", "RowKey": "2", "X": 3}')$$, 'and one the policy hides');
SET ROLE ts_other;
SELECT is((SELECT array_agg((e->>'PartitionKey') || '/' || (e->>'RowKey')) FROM tablestore.query_entities('Secrets') e),
	ARRAY['p/r', 'q/1'], 'row-level security: query_entities returns what the policy allows, in key order');
SELECT is((SELECT count(*) FROM tablestore.query_entities('Secrets', 'PartitionKey eq ''q'''))::int, 1,
	'row-level security: a partition scan too');
SELECT is((SELECT count(*) FROM tablestore.query_entities('Secrets', 'PartitionKey eq ''q'' and RowKey eq ''2'''))::int, 0,
	'row-level security: a point query of a hidden entity finds nothing');
SELECT is((SELECT jsonb_path_query_array(entities, '$[*].RowKey') FROM tablestore.query_entities_page('Secrets', NULL, NULL, 1)),
	'["r"]'::jsonb, 'row-level security: a page');
SELECT is((SELECT ARRAY[next_partition_key, next_row_key] FROM tablestore.query_entities_page('Secrets', NULL, NULL, 1)),
	ARRAY['q', '1'], 'and its continuation is the next visible entity');
SELECT is((SELECT jsonb_path_query_array(entities, '$[*].RowKey') FROM tablestore.query_entities_page('Secrets', NULL, NULL, 5, 'q', '1')),
	'["1"]'::jsonb, 'row-level security: the page after the continuation');
SELECT is((SELECT count(*) FROM tablestore.query_entities('Secrets', 'V ge 1', 'V', 1))::int, 1,
	'row-level security: a residual filter, a select list and top');
SELECT is((SELECT count(*) FROM tablestore_data.secrets)::int, 2, 'as SQL sees what the policy allows');
SELECT is((tablestore.get_entity('Secrets', 'p', 'r')->>'V')::int, 1, 'row-level security: get_entity reads through SQL, an allowed entity');
SELECT throws_ok($$SELECT tablestore.get_entity('Secrets', 'p', 's')$$, 'P0002', NULL, 'and a hidden one is not found');
RESET ROLE;
SET ROLE ts_owner;
DROP POLICY only_v1 ON tablestore_data.secrets;
ALTER TABLE tablestore_data.secrets DISABLE ROW LEVEL SECURITY;
RESET ROLE;

-- a hostile search_path: shadowing functions and operators that a careless
-- implementation would pick up
CREATE SCHEMA evil;
CREATE FUNCTION evil.texteq_always(text, text) RETURNS boolean LANGUAGE sql AS 'SELECT true';
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.texteq_always);
CREATE FUNCTION evil.lower(text) RETURNS text LANGUAGE sql AS $$ SELECT 'hijacked' $$;
CREATE FUNCTION evil.now() RETURNS timestamptz LANGUAGE sql AS $$ SELECT '2000-01-01'::timestamptz $$;
CREATE TABLE evil.tables (relation_name text, table_name text);
CREATE TEMP TABLE outcome (step text, result text);
CREATE FUNCTION pg_temp.try(step text, sql text) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	r text;
BEGIN
	EXECUTE sql INTO r;
	INSERT INTO outcome VALUES (step, coalesce(r, 'ok'));
EXCEPTION WHEN OTHERS THEN
	INSERT INTO outcome VALUES (step, SQLSTATE);
END $f$;
-- pgTAP itself is not safe under such a search_path, so record outcomes
-- first and assert after RESET
SET search_path = evil, pg_catalog, public;
SELECT pg_temp.try('get missing', $$SELECT tablestore.get_entity('Secrets', 'p', 'nobody')::text$$);
SELECT pg_temp.try('insert existing', $$SELECT tablestore.insert_entity('Secrets', '{"PartitionKey": "p", "RowKey": "r"}')::text$$);
SELECT pg_temp.try('merge', $$SELECT tablestore.merge_entity('Secrets', '{"PartitionKey": "p", "RowKey": "s", "V": 5}')->>'V'$$);
SELECT pg_temp.try('create', $$SELECT 'ok' FROM tablestore.create_table('Hostile')$$);
SELECT pg_temp.try('query', $$SELECT string_agg(e->>'RowKey', ',') FROM tablestore.query_entities('Secrets', 'PartitionKey eq ''p'' and RowKey eq ''s''') e$$);
SELECT pg_temp.try('page', $$SELECT jsonb_array_length(entities)::text FROM tablestore.query_entities_page('Secrets', 'RowKey ge ''r''')$$);
SELECT pg_temp.try('list', $$SELECT string_agg(t, ',') FROM tablestore.list_tables('TableName ge ''S''') t$$);
SELECT pg_temp.try('timestamp', $$SELECT (tablestore.get_entity('Secrets', 'p', 's')->>'Timestamp')::timestamptz OPERATOR(pg_catalog.>) '2001-01-01'::timestamptz$$);
RESET search_path;

SELECT is((SELECT result FROM outcome WHERE step = 'get missing'), 'P0002', 'hostile search_path: a missing entity is still missing');
SELECT is((SELECT result FROM outcome WHERE step = 'insert existing'), '23505', 'hostile search_path: an existing entity still exists');
SELECT is((SELECT result FROM outcome WHERE step = 'merge'), '5', 'hostile search_path: merge hits the right entity');
SELECT is((SELECT count(*) FROM tablestore_data.secrets WHERE props ? 'V' AND (props->>'V')::int = 5)::int, 1, 'and only that one');
SELECT is((SELECT result FROM outcome WHERE step = 'create'), 'ok', 'hostile search_path: create_table');
SELECT is((SELECT table_name FROM tablestore.tables WHERE relation_name = 'hostile'), 'Hostile', 'wrote the real catalog');
SELECT is((SELECT count(*) FROM evil.tables)::int, 0, 'and not the shadow one');
SELECT is((SELECT result FROM outcome WHERE step = 'timestamp'), 'true', 'Timestamps come from the real clock');
SELECT is((SELECT result FROM outcome WHERE step = 'query'), 's', 'hostile search_path: query_entities finds the one entity');
SELECT is((SELECT result FROM outcome WHERE step = 'page'), '2', 'hostile search_path: query_entities_page');
SELECT is((SELECT result FROM outcome WHERE step = 'list'), 'Secrets', 'hostile search_path: list_tables reads the real catalog');

SELECT * FROM finish();
ROLLBACK;
