-- The checked relation kept per backend (issue 24): ts_table_open checks an
-- entity relation's shape once and keeps the result until an invalidation
-- of the relation or its key index.  After each kind of DDL, made between
-- two calls of this session (the relation checked, and so cached, by the
-- first), every function must find the relation as it is now: refused after
-- a rule, an inheritance child (also when relhassubclass is already set), a
-- column added, NOT NULL dropped, the key index invalid or dropped; served
-- through the new index when the key index is replaced; a table dropped and
-- created again under the same name is the new one, also for a prepared
-- statement.  The privileges are checked on every call, whatever the cache.
\set VERBOSITY terse
-- try(sql): 'ok', or the SQLSTATE and the gist of the message of its error
CREATE FUNCTION pg_temp.try(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || regexp_replace(SQLERRM, '^.* as create_table makes it: ', '');
END $$;
GRANT EXECUTE ON FUNCTION pg_temp.try(text) TO PUBLIC;
-- calls(): a read, a write and a one-operation batch of table Relc; their
-- result when they agree
CREATE FUNCTION pg_temp.calls() RETURNS text LANGUAGE sql AS $$
	SELECT CASE WHEN g = u AND u = b THEN g ELSE concat_ws(' | ', 'get ' || g, 'upsert ' || u, 'batch ' || b) END
	FROM (SELECT pg_temp.try($q$SELECT tablestore.get_entity('Relc', 'p', 'r')$q$) AS g,
		pg_temp.try($q$SELECT tablestore.insert_or_merge_entity('Relc', '{"PartitionKey": "p", "RowKey": "r", "N": 1}')$q$) AS u,
		pg_temp.try($q$SELECT tablestore.execute_batch('Relc', '[{"op": "merge", "entity": {"PartitionKey": "p", "RowKey": "r", "M": 2}}]')$q$) AS b) r
$$;
GRANT EXECUTE ON FUNCTION pg_temp.calls() TO PUBLIC;
SELECT tablestore.create_table('Relc');
SELECT tablestore.insert_entity('Relc', '{"PartitionKey": "p", "RowKey": "r"}') IS NOT NULL AS inserted;
SELECT pg_temp.calls();
-- the event trigger would refuse most of this DDL when made: do it anyway,
-- as a superuser may
ALTER EVENT TRIGGER tablestore_ddl_command_end DISABLE;

-- a rule
CREATE RULE nothing AS ON INSERT TO tablestore_data.relc DO INSTEAD NOTHING;
SELECT pg_temp.calls();
DROP RULE nothing ON tablestore_data.relc;
SELECT pg_temp.calls();

-- an inheritance child; then, relhassubclass left set by the dropped one, a
-- child added with ALTER TABLE ... INHERIT
CREATE TABLE public.relc_kid () INHERITS (tablestore_data.relc);
SELECT pg_temp.calls();
DROP TABLE public.relc_kid;
SELECT relhassubclass FROM pg_class WHERE oid = 'tablestore_data.relc'::regclass;
SELECT pg_temp.calls();
CREATE TABLE public.relc_kid (LIKE tablestore_data.relc INCLUDING CONSTRAINTS);
ALTER TABLE public.relc_kid INHERIT tablestore_data.relc;
SELECT pg_temp.calls();
DROP TABLE public.relc_kid;
SELECT pg_temp.calls();

-- a column added, and dropped again (a dropped column is no column)
ALTER TABLE tablestore_data.relc ADD COLUMN extra int;
SELECT pg_temp.calls();
ALTER TABLE tablestore_data.relc DROP COLUMN extra;
SELECT pg_temp.calls();

-- NOT NULL dropped
ALTER TABLE tablestore_data.relc ALTER COLUMN ts DROP NOT NULL;
SELECT pg_temp.calls();
ALTER TABLE tablestore_data.relc ALTER COLUMN ts SET NOT NULL;
SELECT pg_temp.calls();

-- the key index made invalid: a change of its pg_index row invalidates the
-- index's relcache entry only, not the relation's
SELECT indexrelid AS key_index, indexrelid::regclass AS key_index_name
FROM pg_index WHERE indrelid = 'tablestore_data.relc'::regclass \gset
UPDATE pg_index SET indisvalid = false WHERE indexrelid = :key_index;
SELECT pg_temp.calls();
UPDATE pg_index SET indisvalid = true WHERE indexrelid = :key_index;
SELECT pg_temp.calls();

-- the key index dropped; then replaced by another: the new one serves, and
-- its unique violation is the service's EntityAlreadyExists naming it
DROP INDEX :key_index_name;
SELECT pg_temp.calls();
CREATE UNIQUE INDEX relc_key_again ON tablestore_data.relc USING tskey (pk, rk);
SELECT pg_temp.calls();
DO $$
BEGIN
	PERFORM tablestore.insert_entity('Relc', '{"PartitionKey": "p", "RowKey": "r"}');
EXCEPTION WHEN OTHERS THEN
	RAISE NOTICE '%: %', SQLSTATE, SQLERRM;
END $$;
SELECT count(*) AS entities FROM tablestore.query_entities('Relc');

-- DDL in the same transaction, between two calls
BEGIN;
SELECT pg_temp.calls();
CREATE RULE nothing AS ON UPDATE TO tablestore_data.relc DO INSTEAD NOTHING;
SELECT pg_temp.calls();
ROLLBACK;
SELECT pg_temp.calls();
ALTER EVENT TRIGGER tablestore_ddl_command_end ENABLE;

-- the table dropped and created again under the same name, between two
-- executions of prepared statements: they reach the new relation
PREPARE get_rc AS SELECT tablestore.get_entity('Relc', 'p', 'r') ? 'N' AS has_n;
PREPARE put_rc(text) AS SELECT tablestore.insert_or_replace_entity('Relc', jsonb_build_object('PartitionKey', 'p', 'RowKey', $1)) IS NOT NULL AS put;
EXECUTE get_rc;
EXECUTE put_rc('old');
SELECT 'tablestore_data.relc'::regclass::oid AS old_relid \gset
SELECT tablestore.delete_table('Relc');
SELECT tablestore.create_table('Relc');
SELECT pg_temp.try('EXECUTE get_rc') AS get_new_table;
EXECUTE put_rc('new');
SELECT 'tablestore_data.relc'::regclass::oid <> :old_relid AS new_relation,
	(SELECT array_agg(rk::text ORDER BY rk) FROM tablestore_data.relc) AS stored;
-- ... and with another schema first on the search_path holding a relation
-- of that name: the table is always the one in tablestore_data
CREATE SCHEMA regress_rc;
CREATE TABLE regress_rc.rc (pk text, rk text, ts timestamptz, props jsonb);
SET search_path = regress_rc, public;
EXECUTE put_rc('path');
SELECT count(*) AS decoy_rows FROM regress_rc.rc;
RESET search_path;
DROP SCHEMA regress_rc CASCADE;
DEALLOCATE get_rc;
DEALLOCATE put_rc;

-- the privileges: checked on every call, not kept with the checked relation
SELECT tablestore.insert_entity('Relc', '{"PartitionKey": "p", "RowKey": "r"}') IS NOT NULL AS inserted;
CREATE ROLE regress_rc_reader;
SELECT pg_temp.calls();
SET ROLE regress_rc_reader;
SELECT pg_temp.calls();
RESET ROLE;
GRANT SELECT ON tablestore_data.relc TO regress_rc_reader;
SET ROLE regress_rc_reader;
SELECT pg_temp.calls();
RESET ROLE;
REVOKE SELECT ON tablestore_data.relc FROM regress_rc_reader;
SET ROLE regress_rc_reader;
SELECT pg_temp.calls();
RESET ROLE;
DROP ROLE regress_rc_reader;

SELECT tablestore.delete_table('Relc');
