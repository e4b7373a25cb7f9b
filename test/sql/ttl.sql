-- Time to live (issue 26 part 2): a table's default and an entity's own
-- TimeToLive; an expired entity is gone for every read, conditional write
-- and batch, an insert over it starts afresh; sweep_expired reclaims the
-- rows.  The clock is moved with tablestore.clock_offset: nothing sleeps.
\set VERBOSITY terse
-- the background worker leaves this database alone: the progress shown
-- below is sweep_expired's
DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET tablestore.ttl_worker = off', current_database()); END $$;
-- try(sql): 'ok', or the SQLSTATE and the service code of its error
CREATE FUNCTION pg_temp.try(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE d text;
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
	RETURN SQLSTATE || ' ' || coalesce(substring(d from 'code: (\w+)'), left(SQLERRM, 120));
END $$;
GRANT EXECUTE ON FUNCTION pg_temp.try(text) TO PUBLIC;
-- an entity without the parts that vary (Timestamp, ETag)
CREATE FUNCTION pg_temp.shown(e jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE
	AS $$ SELECT e - 'Timestamp' - 'odata.etag' $$;
-- the RowKeys a query returns, in order
CREATE FUNCTION pg_temp.keys(t text, f text DEFAULT NULL) RETURNS text LANGUAGE sql
	AS $$ SELECT coalesce(string_agg(e->>'RowKey', ',' ORDER BY n), '') FROM tablestore.query_entities(t, f) WITH ORDINALITY q(e, n) $$;

-- Off (the default): TimeToLive is an ordinary property, nothing expires.
SELECT tablestore.create_table('TtlOff');
SELECT tablestore.get_table_ttl('TtlOff');
SELECT pg_temp.shown(tablestore.insert_entity('TtlOff', '{"PartitionKey": "p", "RowKey": "a", "TimeToLive": "soon"}'));
SELECT pg_temp.shown(tablestore.insert_entity('TtlOff', '{"PartitionKey": "p", "RowKey": "b", "TimeToLive": 1}'));
SET tablestore.clock_offset = '3650d';
SELECT pg_temp.keys('TtlOff');
RESET tablestore.clock_offset;

-- set_table_ttl: NULL, -1 or n > 0; owner only; get_table_ttl reads it.
SELECT tablestore.create_table('Ttl');
SELECT pg_temp.try($$SELECT tablestore.set_table_ttl('Ttl', 0)$$);
SELECT pg_temp.try($$SELECT tablestore.set_table_ttl('Ttl', -2)$$);
SELECT pg_temp.try($$SELECT tablestore.set_table_ttl('NoSuchTable', 5)$$);
SELECT pg_temp.try($$SELECT tablestore.set_table_ttl(NULL, 5)$$);
CREATE ROLE regress_ttl_other;
GRANT SELECT ON tablestore_data.ttl TO regress_ttl_other;
SET ROLE regress_ttl_other;
SELECT pg_temp.try($$SELECT tablestore.set_table_ttl('Ttl', 5)$$);
SELECT pg_temp.try($$SELECT tablestore.sweep_expired('Ttl')$$);
SELECT tablestore.sweep_expired();		-- owns no table: nothing
SELECT pg_temp.try($$SET tablestore.clock_offset = '1h'$$);
RESET ROLE;
-- entities written before the TTL is on: an invalid TimeToLive is read as
-- absent (the table's default applies) once it is on
SELECT pg_temp.shown(tablestore.insert_entity('Ttl', '{"PartitionKey": "p", "RowKey": "old-invalid", "TimeToLive": "x"}'));
SELECT pg_temp.shown(tablestore.insert_entity('Ttl', '{"PartitionKey": "p", "RowKey": "old-zero", "TimeToLive": 0}'));
SELECT tablestore.set_table_ttl('Ttl', -1);
SELECT tablestore.get_table_ttl('Ttl');
SET tablestore.clock_offset = '3650d';
SELECT pg_temp.keys('Ttl');				-- -1 without a default: nothing expires
RESET tablestore.clock_offset;
SELECT tablestore.set_table_ttl('Ttl', 100);
SELECT tablestore.get_table_ttl('Ttl');
SELECT table_name, default_ttl FROM tablestore.tables WHERE table_name LIKE 'Ttl%' ORDER BY 1;

-- A write's TimeToLive must be an Edm.Int32 > 0 or -1 (InvalidInput).
SELECT pg_temp.try($$SELECT tablestore.insert_entity('Ttl', '{"PartitionKey": "p", "RowKey": "bad", "TimeToLive": 0}')$$);
SELECT pg_temp.try($$SELECT tablestore.insert_entity('Ttl', '{"PartitionKey": "p", "RowKey": "bad", "TimeToLive": -2}')$$);
SELECT pg_temp.try($$SELECT tablestore.insert_entity('Ttl', '{"PartitionKey": "p", "RowKey": "bad", "TimeToLive": "5"}')$$);
SELECT pg_temp.try($$SELECT tablestore.insert_entity('Ttl', '{"PartitionKey": "p", "RowKey": "bad", "TimeToLive": 1.5}')$$);
SELECT pg_temp.try($$SELECT tablestore.insert_entity('Ttl', '{"PartitionKey": "p", "RowKey": "bad", "TimeToLive": 5, "TimeToLive@odata.type": "Edm.Double"}')$$);
SELECT pg_temp.try($$SELECT tablestore.insert_entity('Ttl', '{"PartitionKey": "p", "RowKey": "bad", "TimeToLive": "5", "TimeToLive@odata.type": "Edm.Int64"}')$$);
SELECT pg_temp.try($$SELECT tablestore.insert_entity('Ttl', '{"PartitionKey": "p", "RowKey": "bad", "TimeToLive": true}')$$);
SELECT pg_temp.try($$SELECT tablestore.merge_entity('Ttl', '{"PartitionKey": "p", "RowKey": "old-zero", "TimeToLive": 0}')$$);
SELECT pg_temp.try($$SELECT tablestore.insert_or_merge_entity('Ttl', '{"PartitionKey": "p", "RowKey": "bad", "TimeToLive": -5}')$$);
SELECT pg_temp.try($$SELECT * FROM tablestore.execute_batch('Ttl', '[{"op": "insert", "entity": {"PartitionKey": "p", "RowKey": "bad", "TimeToLive": 0}}]')$$);
SELECT pg_temp.keys('Ttl', 'RowKey eq ''bad''');
-- valid: n > 0 (also written as Edm.Int32), -1; returned like any property
SELECT pg_temp.shown(tablestore.insert_entity('Ttl', '{"PartitionKey": "p", "RowKey": "own10", "TimeToLive": 10}'));
SELECT pg_temp.shown(tablestore.insert_entity('Ttl', '{"PartitionKey": "p", "RowKey": "own1000", "TimeToLive": "1000", "TimeToLive@odata.type": "Edm.Int32"}'));
SELECT pg_temp.shown(tablestore.insert_entity('Ttl', '{"PartitionKey": "p", "RowKey": "never", "TimeToLive": -1}'));
SELECT pg_temp.shown(tablestore.insert_entity('Ttl', '{"PartitionKey": "p", "RowKey": "plain", "V": 1}'));
SELECT pg_temp.keys('Ttl');

-- The clock: 50 s on, own10 has expired; 150 s on, the default (100 s)
-- has: the plain entity and the old ones with an invalid TimeToLive.
SET tablestore.clock_offset = '50s';
SELECT pg_temp.keys('Ttl');
SET tablestore.clock_offset = '150s';
SELECT pg_temp.keys('Ttl');
-- every read: get_entity, each query form, pages and their continuation
SELECT pg_temp.try($$SELECT tablestore.get_entity('Ttl', 'p', 'plain')$$);
SELECT pg_temp.try($$SELECT tablestore.get_entity('Ttl', 'p', 'own10', 'V')$$);
SELECT pg_temp.shown(tablestore.get_entity('Ttl', 'p', 'never'));
SELECT count(*) FROM tablestore.query_entities_json('Ttl');
SELECT count(*) FROM tablestore.query_entities('Ttl', 'PartitionKey eq ''p'' and RowKey eq ''plain''');
SELECT jsonb_array_length(entities), next_partition_key, next_row_key FROM tablestore.query_entities_page('Ttl', NULL, NULL, 1);
SELECT jsonb_array_length(entities), next_partition_key, next_row_key FROM tablestore.query_entities_page('Ttl', NULL, NULL, 1, 'p', 'never');
SELECT json_array_length(entities), next_partition_key, next_row_key FROM tablestore.query_entities_page_json('Ttl', NULL, NULL, 1);
SELECT entity->>'RowKey', next_partition_key, next_row_key FROM tablestore.query_page('Ttl', NULL, NULL, 1);
SELECT entity->>'RowKey', next_partition_key, next_row_key FROM tablestore.query_page('Ttl', NULL, 'RowKey', 5, 'p', 'a');
-- every conditional write: ResourceNotFound, with or without an ETag
SELECT pg_temp.try($$SELECT tablestore.update_entity('Ttl', '{"PartitionKey": "p", "RowKey": "plain", "W": 1}')$$);
SELECT pg_temp.try($$SELECT tablestore.merge_entity('Ttl', '{"PartitionKey": "p", "RowKey": "plain", "W": 1}')$$);
SELECT pg_temp.try($$SELECT tablestore.delete_entity('Ttl', 'p', 'plain')$$);
SELECT pg_temp.try(format('SELECT tablestore.merge_entity(%L, %L, %L)', 'Ttl',
	'{"PartitionKey": "p", "RowKey": "plain", "W": 1}',
	(SELECT format('W/"datetime''%s''"', replace(to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), ':', '%3A'))
	 FROM tablestore_data.ttl WHERE rk = 'plain')));
-- the rows are still there (not swept yet), unchanged
SELECT rk, props FROM tablestore_data.ttl ORDER BY rk;
-- an insert over an expired entity succeeds and keeps none of its properties;
-- so does an insert-or-merge (it inserts); an insert-or-replace replaces
SELECT pg_temp.shown(tablestore.insert_entity('Ttl', '{"PartitionKey": "p", "RowKey": "plain", "New": 1}'));
SELECT pg_temp.shown(tablestore.insert_or_merge_entity('Ttl', '{"PartitionKey": "p", "RowKey": "own10", "Merged": 1}'));
SELECT pg_temp.shown(tablestore.insert_or_replace_entity('Ttl', '{"PartitionKey": "p", "RowKey": "old-zero", "Replaced": 1}'));
SELECT rk, props FROM tablestore_data.ttl ORDER BY rk;
-- batches: a retrieve or merge of an expired entity fails the batch; an
-- insert over one succeeds
SELECT pg_temp.try($$SELECT * FROM tablestore.execute_batch('Ttl', '[{"op": "retrieve", "entity": {"PartitionKey": "p", "RowKey": "old-invalid"}}]')$$);
SELECT pg_temp.try($$SELECT * FROM tablestore.execute_batch('Ttl', '[{"op": "merge", "entity": {"PartitionKey": "p", "RowKey": "old-invalid", "X": 1}}]')$$);
SELECT pg_temp.try($$SELECT * FROM tablestore.execute_batch('Ttl', '[{"op": "delete", "entity": {"PartitionKey": "p", "RowKey": "old-invalid"}}]')$$);
SELECT r->'index', r->'status', pg_temp.shown(r->'entity') FROM tablestore.execute_batch('Ttl', '[
	{"op": "insert", "entity": {"PartitionKey": "p", "RowKey": "old-invalid", "Fresh": true}},
	{"op": "merge", "entity": {"PartitionKey": "p", "RowKey": "never", "Merged": true}}]') r;
SELECT r->'status', pg_temp.shown(r->'entity') FROM tablestore.execute_batch('Ttl', '[{"op": "retrieve", "entity": {"PartitionKey": "p", "RowKey": "never"}}]') r;
RESET tablestore.clock_offset;
SELECT pg_temp.keys('Ttl');

-- Changing the default applies to every entity at once.
SET tablestore.clock_offset = '150s';
SELECT pg_temp.keys('Ttl');
SELECT tablestore.set_table_ttl('Ttl', 1000);
SELECT pg_temp.keys('Ttl');
SELECT tablestore.set_table_ttl('Ttl', 100);
SELECT pg_temp.keys('Ttl');
-- a direct UPDATE of the catalog (by its owner) is seen at once too
UPDATE tablestore.tables SET default_ttl = 1000 WHERE table_name = 'Ttl';
SELECT pg_temp.keys('Ttl');
UPDATE tablestore.tables SET default_ttl = 100 WHERE table_name = 'Ttl';
SELECT pg_temp.keys('Ttl');
-- in a transaction that is rolled back, a change is undone
BEGIN;
SELECT tablestore.set_table_ttl('Ttl', NULL);
SELECT pg_temp.keys('Ttl');
ROLLBACK;
SELECT tablestore.get_table_ttl('Ttl'), pg_temp.keys('Ttl');

-- Through the SPI write path (a trigger) and under row-level security.
CREATE FUNCTION pg_temp.touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER touch BEFORE INSERT OR UPDATE ON tablestore_data.ttl FOR EACH ROW EXECUTE FUNCTION pg_temp.touch();
SET tablestore.clock_offset = '1000s';
SELECT pg_temp.keys('Ttl');
SELECT pg_temp.try($$SELECT tablestore.merge_entity('Ttl', '{"PartitionKey": "p", "RowKey": "plain", "W": 1}')$$);
SELECT pg_temp.shown(tablestore.insert_or_merge_entity('Ttl', '{"PartitionKey": "p", "RowKey": "plain", "Spi": 1}'));
SELECT pg_temp.shown(tablestore.insert_entity('Ttl', '{"PartitionKey": "p", "RowKey": "own1000", "Spi": 2}'));
DROP TRIGGER touch ON tablestore_data.ttl;
ALTER TABLE tablestore_data.ttl ENABLE ROW LEVEL SECURITY;
CREATE POLICY everyone ON tablestore_data.ttl USING (true) WITH CHECK (true);
GRANT ALL ON tablestore_data.ttl TO regress_ttl_other;
SET ROLE regress_ttl_other;
SELECT pg_temp.keys('Ttl');
SELECT pg_temp.try($$SELECT tablestore.get_entity('Ttl', 'p', 'own10')$$);
SELECT pg_temp.shown(tablestore.get_entity('Ttl', 'p', 'never'));
RESET ROLE;
-- the catalog is read as its owner: a role that may not read it (here no
-- one but its owner may) still gets the table's time to live
REVOKE SELECT ON tablestore.tables FROM PUBLIC;
SELECT tablestore.set_table_ttl('Ttl', 100);	-- every session reads it again
SET ROLE regress_ttl_other;
SELECT pg_temp.try($$SELECT count(*) FROM tablestore.tables$$);
SELECT pg_temp.keys('Ttl');
RESET ROLE;
GRANT SELECT ON tablestore.tables TO PUBLIC;
ALTER TABLE tablestore_data.ttl DISABLE ROW LEVEL SECURITY;
DROP POLICY everyone ON tablestore_data.ttl;

-- sweep_expired: bounded by max_rows, resuming where it stopped; the
-- view shows the progress.
SELECT count(*) FROM tablestore_data.ttl;
SELECT tablestore.sweep_expired('Ttl', 1);
SELECT table_name, default_ttl, rows_deleted, total_deleted, current_position IS NOT NULL AS under_way, errors
FROM tablestore.ttl_sweeps;
SELECT tablestore.sweep_expired('Ttl');
SELECT table_name, default_ttl, rows_deleted, total_deleted, current_position IS NOT NULL AS under_way,
	last_end >= last_start AS ended, errors
FROM tablestore.ttl_sweeps;
SELECT rk FROM tablestore_data.ttl ORDER BY rk;
-- the view shows only the tables the caller may read
REVOKE ALL ON tablestore_data.ttl FROM regress_ttl_other;
SET ROLE regress_ttl_other;
SELECT count(*) AS sweeps_shown FROM tablestore.ttl_sweeps;
-- a security barrier: a cheap function of the caller's own, or a failing
-- cast, in its WHERE never sees another table's row (second attack, F1)
CREATE FUNCTION pg_temp.leak(text) RETURNS boolean LANGUAGE plpgsql COST 0.0000001
	AS $$ BEGIN RAISE NOTICE 'leaked: %', $1; RETURN true; END $$;
SELECT count(*) AS leaked FROM tablestore.ttl_sweeps WHERE pg_temp.leak(table_name);
SELECT count(*) AS leaked FROM tablestore.ttl_sweeps WHERE table_name::int > 0;
RESET ROLE;
DROP FUNCTION pg_temp.leak(text);
SELECT reloptions FROM pg_class WHERE oid = 'tablestore.ttl_sweeps'::regclass;
SELECT tablestore.sweep_expired();		-- nothing left
SELECT pg_temp.try($$SELECT tablestore.sweep_expired('Ttl', -1)$$);
SELECT tablestore.sweep_expired('TtlOff');	-- off: nothing
RESET tablestore.clock_offset;
-- many rows, several batches of a pass
SET tablestore.ttl_batch_size = 7;
SELECT count(*) FROM (SELECT tablestore.insert_entity('Ttl', jsonb_build_object('PartitionKey', 'm', 'RowKey', lpad(i::text, 3, '0'))) FROM generate_series(1, 50) i) s;
SET tablestore.clock_offset = '1000s';
SELECT tablestore.sweep_expired('Ttl', 20);
SELECT tablestore.sweep_expired('Ttl');
SELECT rows_deleted, total_deleted FROM tablestore.ttl_sweeps;
RESET tablestore.clock_offset;
RESET tablestore.ttl_batch_size;

-- delete_table removes the table's progress with it.
SELECT tablestore.delete_table('Ttl');
SELECT count(*) FROM tablestore.ttl_sweep_state;
SELECT tablestore.delete_table('TtlOff');
DROP ROLE regress_ttl_other;
