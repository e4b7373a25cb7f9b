-- tablestore: Azure Table service semantics on PostgreSQL.
-- This is the editable install script; the build copies it to
-- tablestore--<version>.sql.  Released versions change only through
-- upgrade scripts tablestore--<from>--<to>.sql.
--
-- The scale-out router (tablestore_router.sql) offers this script's API:
-- its build copies the functions of schema tablestore from here
-- (tools/router-api.pl), a C function calling the router's router_<name>.
-- A line "-- router: ..." before a function says when that is otherwise:
-- "node only", "as is" (it runs in the router itself), "own" (the router
-- declares it, with these arguments and result) or the router's C symbol.

\echo Use "CREATE EXTENSION tablestore" to load this file. \quit

-- The extension's objects live in schema tablestore (the control file's
-- schema); each table's entities in a relation of schema tablestore_data.
CREATE SCHEMA tablestore_data;
COMMENT ON SCHEMA tablestore_data IS 'tablestore: one relation per table, holding its entities';
GRANT USAGE ON SCHEMA tablestore TO PUBLIC;
GRANT USAGE ON SCHEMA tablestore_data TO PUBLIC;

-- key type: begin (tablestore_router's build copies this part)
-- The key type: PartitionKey and RowKey.  The bytes of text, ordered as the
-- service orders keys: ordinally by UTF-16 code unit (text in the "C"
-- collation orders by code point, which differs for supplementary
-- characters).  Casts to and from text are free; to text implicitly, so
-- that every text function takes a key.
CREATE TYPE tablestore.key;
CREATE FUNCTION tablestore.key_in(cstring) RETURNS tablestore.key
	AS 'textin' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tablestore.key_out(tablestore.key) RETURNS cstring
	AS 'textout' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tablestore.key_recv(internal) RETURNS tablestore.key
	AS 'textrecv' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tablestore.key_send(tablestore.key) RETURNS bytea
	AS 'textsend' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
CREATE TYPE tablestore.key (
	INPUT = tablestore.key_in, OUTPUT = tablestore.key_out,
	RECEIVE = tablestore.key_recv, SEND = tablestore.key_send,
	INTERNALLENGTH = VARIABLE, STORAGE = extended, CATEGORY = 'S', LIKE = pg_catalog.text
);
COMMENT ON TYPE tablestore.key IS 'a PartitionKey or RowKey: text ordered by UTF-16 code unit, as the Table service orders keys';

CREATE CAST (tablestore.key AS pg_catalog.text) WITHOUT FUNCTION AS IMPLICIT;
CREATE CAST (pg_catalog.text AS tablestore.key) WITHOUT FUNCTION AS ASSIGNMENT;
CREATE CAST (pg_catalog.varchar AS tablestore.key) WITHOUT FUNCTION AS ASSIGNMENT;

CREATE FUNCTION tablestore.key_cmp(tablestore.key, tablestore.key) RETURNS integer
	AS 'MODULE_PATHNAME', 'key_cmp' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tablestore.key_sortsupport(internal) RETURNS void
	AS 'MODULE_PATHNAME', 'key_sortsupport' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tablestore.key_hash(tablestore.key) RETURNS integer
	AS 'MODULE_PATHNAME', 'key_hash' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tablestore.key_lt(tablestore.key, tablestore.key) RETURNS boolean
	AS 'MODULE_PATHNAME', 'key_lt' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION tablestore.key_le(tablestore.key, tablestore.key) RETURNS boolean
	AS 'MODULE_PATHNAME', 'key_le' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION tablestore.key_eq(tablestore.key, tablestore.key) RETURNS boolean
	AS 'MODULE_PATHNAME', 'key_eq' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION tablestore.key_ne(tablestore.key, tablestore.key) RETURNS boolean
	AS 'MODULE_PATHNAME', 'key_ne' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION tablestore.key_ge(tablestore.key, tablestore.key) RETURNS boolean
	AS 'MODULE_PATHNAME', 'key_ge' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION tablestore.key_gt(tablestore.key, tablestore.key) RETURNS boolean
	AS 'MODULE_PATHNAME', 'key_gt' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;

CREATE OPERATOR tablestore.< (LEFTARG = tablestore.key, RIGHTARG = tablestore.key,
	FUNCTION = tablestore.key_lt, COMMUTATOR = OPERATOR(tablestore.>), NEGATOR = OPERATOR(tablestore.>=),
	RESTRICT = pg_catalog.scalarltsel, JOIN = pg_catalog.scalarltjoinsel);
CREATE OPERATOR tablestore.<= (LEFTARG = tablestore.key, RIGHTARG = tablestore.key,
	FUNCTION = tablestore.key_le, COMMUTATOR = OPERATOR(tablestore.>=), NEGATOR = OPERATOR(tablestore.>),
	RESTRICT = pg_catalog.scalarlesel, JOIN = pg_catalog.scalarlejoinsel);
CREATE OPERATOR tablestore.= (LEFTARG = tablestore.key, RIGHTARG = tablestore.key,
	FUNCTION = tablestore.key_eq, COMMUTATOR = OPERATOR(tablestore.=), NEGATOR = OPERATOR(tablestore.<>),
	RESTRICT = pg_catalog.eqsel, JOIN = pg_catalog.eqjoinsel, HASHES, MERGES);
CREATE OPERATOR tablestore.<> (LEFTARG = tablestore.key, RIGHTARG = tablestore.key,
	FUNCTION = tablestore.key_ne, COMMUTATOR = OPERATOR(tablestore.<>), NEGATOR = OPERATOR(tablestore.=),
	RESTRICT = pg_catalog.neqsel, JOIN = pg_catalog.neqjoinsel);
CREATE OPERATOR tablestore.>= (LEFTARG = tablestore.key, RIGHTARG = tablestore.key,
	FUNCTION = tablestore.key_ge, COMMUTATOR = OPERATOR(tablestore.<=), NEGATOR = OPERATOR(tablestore.<),
	RESTRICT = pg_catalog.scalargesel, JOIN = pg_catalog.scalargejoinsel);
CREATE OPERATOR tablestore.> (LEFTARG = tablestore.key, RIGHTARG = tablestore.key,
	FUNCTION = tablestore.key_gt, COMMUTATOR = OPERATOR(tablestore.<), NEGATOR = OPERATOR(tablestore.<=),
	RESTRICT = pg_catalog.scalargtsel, JOIN = pg_catalog.scalargtjoinsel);

CREATE OPERATOR CLASS tablestore.key_ops DEFAULT FOR TYPE tablestore.key USING btree AS
	OPERATOR 1 tablestore.< , OPERATOR 2 tablestore.<= , OPERATOR 3 tablestore.= ,
	OPERATOR 4 tablestore.>= , OPERATOR 5 tablestore.> ,
	FUNCTION 1 tablestore.key_cmp(tablestore.key, tablestore.key),
	FUNCTION 2 tablestore.key_sortsupport(internal);
CREATE OPERATOR CLASS tablestore.key_hash_ops DEFAULT FOR TYPE tablestore.key USING hash AS
	OPERATOR 1 tablestore.= ,
	FUNCTION 1 tablestore.key_hash(tablestore.key);
-- key type: end

-- Index access method
-- tskey: the index of every entity relation, a B-link tree on (pk, rk) in
-- the key type's order (doc/index-am.md).  Its operator class has the key
-- type's btree operators at the btree strategy numbers, so the planner
-- takes the index's order for ORDER BY pk, rk.
-- router: node only: the index access method
CREATE FUNCTION tablestore.tskey_handler(internal) RETURNS index_am_handler
	AS 'MODULE_PATHNAME', 'tskey_handler' LANGUAGE C;
CREATE ACCESS METHOD tskey TYPE INDEX HANDLER tablestore.tskey_handler;
COMMENT ON ACCESS METHOD tskey IS 'tablestore: unique ordered index on (PartitionKey, RowKey)';
CREATE OPERATOR CLASS tablestore.key_tskey_ops DEFAULT FOR TYPE tablestore.key USING tskey AS
	OPERATOR 1 tablestore.< , OPERATOR 2 tablestore.<= , OPERATOR 3 tablestore.= ,
	OPERATOR 4 tablestore.>= , OPERATOR 5 tablestore.> ,
	FUNCTION 1 tablestore.key_cmp(tablestore.key, tablestore.key);

-- verify_index: the light and parent checks and heapallindexed (issue 25)
-- router: node only: a check of a node's index
CREATE FUNCTION tablestore.verify_index(index regclass, parent_check boolean DEFAULT true,
										heapallindexed boolean DEFAULT false) RETURNS void
	AS 'MODULE_PATHNAME', 'verify_index' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION tablestore.verify_index(regclass, boolean, boolean) IS 'check a tskey index: page invariants, key order, links; with parent_check (ShareLock) levels, uniqueness, one entry per live tuple; with heapallindexed every heap tuple''s entry';

-- The catalog of tables: the name as created, and its entity relation.
CREATE TABLE tablestore.tables (
	relation_name pg_catalog.text PRIMARY KEY,
	table_name pg_catalog.text NOT NULL,
	created_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
	CHECK (relation_name OPERATOR(pg_catalog.=) pg_catalog.lower(table_name))
);
COMMENT ON TABLE tablestore.tables IS 'tablestore: the catalog of tables';
GRANT SELECT ON tablestore.tables TO PUBLIC;
-- Dump the catalog's rows with the data (pg_dump dumps the entity relations
-- themselves, as they are not members of the extension).
SELECT pg_catalog.pg_extension_config_dump('tablestore.tables', '');

-- Entity relations: guards

-- The rules of keys, as the CHECK constraint of every entity relation
-- (rows written with plain SQL are held to them too).
-- router: node only: the CHECK of entity relations
CREATE FUNCTION tablestore.key_is_valid(tablestore.key) RETURNS boolean
	AS 'MODULE_PATHNAME', 'key_is_valid' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tablestore.key_is_valid(tablestore.key) IS 'whether a value may be a PartitionKey or RowKey: no forbidden character, at most 512 UTF-16 code units';

-- router: node only: the event triggers' check
CREATE FUNCTION tablestore._check_entity_relation(oid) RETURNS void
	AS 'MODULE_PATHNAME', 'check_entity_relation' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION tablestore._check_entity_relation(oid) IS 'internal: error unless a relation is an entity relation as create_table makes it';
REVOKE ALL ON FUNCTION tablestore._check_entity_relation(oid) FROM PUBLIC;

-- The catalog and the relations stay consistent: after DDL, every relation
-- of schema tablestore_data has the definition create_table gives, and no
-- table's relation is renamed or leaves the schema; a dropped relation takes
-- its table with it.  (A relation made in the schema with CREATE TABLE and
-- that definition is a table: that is how a restore from pg_dump makes them.)  The functions run with the
-- extension owner's rights (the catalog is theirs) and a fixed search_path.
-- router: node only: an event trigger
CREATE FUNCTION tablestore._ddl_command_end() RETURNS event_trigger
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT DISTINCT c.oid, c.relname, c.relnamespace OPERATOR(pg_catalog.=) 'tablestore_data'::regnamespace AS in_data,
			EXISTS (SELECT FROM tablestore.tables t WHERE t.relation_name OPERATOR(pg_catalog.=) c.relname::text) AS listed
		FROM pg_event_trigger_ddl_commands() d
		JOIN pg_class c ON c.oid OPERATOR(pg_catalog.=) d.objid
		WHERE d.classid OPERATOR(pg_catalog.=) 'pg_class'::regclass AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
	LOOP
		-- no relation may inherit from an entity relation: SQL over the entity
		-- relation would see its rows, keys the key index does not hold
		IF EXISTS (SELECT FROM pg_inherits i JOIN pg_class p ON p.oid OPERATOR(pg_catalog.=) i.inhparent
				WHERE i.inhrelid OPERATOR(pg_catalog.=) r.oid
					AND p.relnamespace OPERATOR(pg_catalog.=) 'tablestore_data'::regnamespace) THEN
			RAISE EXCEPTION 'relation "%" cannot inherit from an entity relation', r.relname
				USING ERRCODE = 'object_not_in_prerequisite_state';
		END IF;
		IF r.in_data THEN
			-- a table's relation renamed: it is not listed, and a listed
			-- table has lost its relation
			IF TG_TAG LIKE 'ALTER %' AND NOT r.listed AND EXISTS (SELECT FROM tablestore.tables t
					WHERE NOT EXISTS (SELECT FROM pg_class c
						WHERE c.relnamespace OPERATOR(pg_catalog.=) 'tablestore_data'::regnamespace
							AND c.relname OPERATOR(pg_catalog.=) t.relation_name)) THEN
				RAISE EXCEPTION 'the entity relation of a table cannot be renamed'
					USING ERRCODE = 'object_not_in_prerequisite_state',
						HINT = 'A table''s entity relation is named after the table; create a new table and copy the entities instead.';
			END IF;
			PERFORM tablestore._check_entity_relation(r.oid);
		ELSIF r.listed AND NOT EXISTS (SELECT FROM pg_class c
				WHERE c.relnamespace OPERATOR(pg_catalog.=) 'tablestore_data'::regnamespace
					AND c.relname OPERATOR(pg_catalog.=) r.relname) THEN
			RAISE EXCEPTION 'the entity relation "%" of a table cannot leave schema tablestore_data', r.relname
				USING ERRCODE = 'object_not_in_prerequisite_state',
					HINT = 'Delete the table with tablestore.delete_table instead.';
		END IF;
	END LOOP;
END
$$;
COMMENT ON FUNCTION tablestore._ddl_command_end() IS 'internal: event trigger keeping schema tablestore_data and the catalog consistent';

-- router: node only: an event trigger
CREATE FUNCTION tablestore._sql_drop() RETURNS event_trigger
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF pg_catalog.to_regclass('tablestore.tables') IS NULL THEN
		RETURN;					-- the extension itself is being dropped
	END IF;
	DELETE FROM tablestore.tables t
	USING pg_event_trigger_dropped_objects() d
	WHERE d.classid OPERATOR(pg_catalog.=) 'pg_class'::regclass AND d.objsubid OPERATOR(pg_catalog.=) 0
		AND d.object_type OPERATOR(pg_catalog.=) 'table'
		AND d.schema_name OPERATOR(pg_catalog.=) 'tablestore_data'
		AND t.relation_name OPERATOR(pg_catalog.=) d.object_name;
END
$$;
COMMENT ON FUNCTION tablestore._sql_drop() IS 'internal: event trigger removing the table of a dropped entity relation';

CREATE EVENT TRIGGER tablestore_ddl_command_end ON ddl_command_end
	WHEN TAG IN ('CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO', 'ALTER TABLE', 'CREATE VIEW', 'ALTER VIEW',
		'CREATE MATERIALIZED VIEW', 'ALTER MATERIALIZED VIEW', 'CREATE FOREIGN TABLE', 'ALTER FOREIGN TABLE')
	EXECUTE FUNCTION tablestore._ddl_command_end();
CREATE EVENT TRIGGER tablestore_sql_drop ON sql_drop
	EXECUTE FUNCTION tablestore._sql_drop();

-- Tables

CREATE FUNCTION tablestore.create_table(table_name text) RETURNS void
	AS 'MODULE_PATHNAME', 'create_table' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.create_table(text) IS 'create a table';

CREATE FUNCTION tablestore.delete_table(table_name text) RETURNS void
	AS 'MODULE_PATHNAME', 'delete_table' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.delete_table(text) IS 'delete a table and all its entities';

CREATE FUNCTION tablestore.list_tables(filter text DEFAULT NULL) RETURNS SETOF text
	AS 'MODULE_PATHNAME', 'list_tables' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore.list_tables(text) IS 'the names of the tables matching a $filter on TableName, in ordinal order';

-- Scale-out (tablestore_router): the partition hash the router routes by,
-- and the idempotent halves of create_table and delete_table it runs on
-- every shard, so that a call that failed on some shards completes when it
-- is repeated.

-- router: as is: runs in the router itself
CREATE FUNCTION tablestore.partition_hash(partition_key text) RETURNS integer
	AS 'MODULE_PATHNAME', 'partition_hash' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tablestore.partition_hash(text) IS 'the stable hash of a PartitionKey that a scale-out router routes by';

-- router: node only: the router's create_table runs it on every node
CREATE FUNCTION tablestore.create_table_if_absent(table_name text) RETURNS boolean
	LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog AS $$
BEGIN
	PERFORM tablestore.create_table(table_name);
	RETURN true;
EXCEPTION WHEN duplicate_table THEN
	RETURN false;
END $$;
COMMENT ON FUNCTION tablestore.create_table_if_absent(text) IS 'create a table unless it exists; true if it was created';

-- router: node only: the router's delete_table runs it on every node
CREATE FUNCTION tablestore.delete_table_if_exists(table_name text) RETURNS boolean
	LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog AS $$
BEGIN
	PERFORM tablestore.delete_table(table_name);
	RETURN true;
EXCEPTION WHEN no_data_found THEN
	RETURN false;
END $$;
COMMENT ON FUNCTION tablestore.delete_table_if_exists(text) IS 'delete a table if it exists; true if it was deleted';

-- query_page with each entity's keys: what a scale-out router merges by
-- router: router_query_page
CREATE FUNCTION tablestore._query_page_keyed(table_name text, filter text, select_list text,
		top integer, next_partition_key text, next_row_key text)
	RETURNS TABLE (entity json, next_partition_key text, next_row_key text, partition_key text, row_key text)
	AS 'MODULE_PATHNAME', 'query_page_rows' LANGUAGE C STABLE ROWS 1000;
COMMENT ON FUNCTION tablestore._query_page_keyed(text, text, text, integer, text, text) IS 'internal: query_page with each entity''s keys, for the HTTP gateway and a scale-out router';

-- The calls of a scale-out router (extension tablestore_router).  Each
-- runs one function of the API and answers its error, if it raises one, as
-- data rather than raising it: a call that ends in an error makes PL/Proxy
-- drop its connection to the node and connect again on the next call,
-- which costs milliseconds, and errors (an entity not found, a stale ETag)
-- are everyday answers.  The call runs in a subtransaction, so an error
-- leaves nothing behind; the router raises the error again as the node
-- raised it.  The one-value calls (C, src/routedcall.c) answer jsonb: the
-- result (a boolean as jsonb, nothing for void), or {"#error": [SQLSTATE,
-- message, detail, hint]}; the set calls answer rows with a last column
-- error (SQLSTATE, message, detail, hint).
CREATE FUNCTION tablestore._routed_create_table_if_absent(table_name text) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore._routed_create_table_if_absent(text) IS 'internal: create_table_if_absent for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_create_table(table_name text) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore._routed_create_table(text) IS 'internal: create_table for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_delete_table_if_exists(table_name text) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore._routed_delete_table_if_exists(text) IS 'internal: delete_table_if_exists for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_delete_table(table_name text) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore._routed_delete_table(text) IS 'internal: delete_table for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_list_tables(filter text)
	RETURNS TABLE (result text, error text[])
	LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog ROWS 1000 AS $$
DECLARE
	s text;
	m text;
	d text;
	h text;
BEGIN
	RETURN QUERY SELECT t, NULL::text[] FROM tablestore.list_tables(filter) t;
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
	RETURN QUERY SELECT NULL::text, ARRAY[s, m, nullif(d, ''), nullif(h, '')];
END $$;
COMMENT ON FUNCTION tablestore._routed_list_tables(text) IS 'internal: list_tables for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_insert_entity(table_name text, entity jsonb) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore._routed_insert_entity(text, jsonb) IS 'internal: insert_entity for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_update_entity(table_name text, entity jsonb, if_match text) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore._routed_update_entity(text, jsonb, text) IS 'internal: update_entity for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_merge_entity(table_name text, entity jsonb, if_match text) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore._routed_merge_entity(text, jsonb, text) IS 'internal: merge_entity for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_insert_or_replace_entity(table_name text, entity jsonb) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore._routed_insert_or_replace_entity(text, jsonb) IS 'internal: insert_or_replace_entity for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_insert_or_merge_entity(table_name text, entity jsonb) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore._routed_insert_or_merge_entity(text, jsonb) IS 'internal: insert_or_merge_entity for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_delete_entity(table_name text, partition_key text, row_key text, if_match text) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore._routed_delete_entity(text, text, text, text) IS 'internal: delete_entity for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_get_entity(table_name text, partition_key text, row_key text, select_list text) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore._routed_get_entity(text, text, text, text) IS 'internal: get_entity for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_execute_batch(table_name text, operations jsonb)
	RETURNS TABLE (result jsonb, error text[])
	LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog ROWS 1000 AS $$
DECLARE
	s text;
	m text;
	d text;
	h text;
BEGIN
	RETURN QUERY SELECT r, NULL::text[] FROM tablestore.execute_batch(table_name, operations) r;
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
	RETURN QUERY SELECT NULL::jsonb, ARRAY[s, m, nullif(d, ''), nullif(h, '')];
END $$;
COMMENT ON FUNCTION tablestore._routed_execute_batch(text, jsonb) IS 'internal: execute_batch for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_explain_query(table_name text, filter text) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore._routed_explain_query(text, text) IS 'internal: explain_query for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_query_entities_page(table_name text, filter text, select_list text, top integer, next_pk text, next_rk text)
	RETURNS TABLE (entities jsonb, next_partition_key text, next_row_key text, error text[])
	LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog ROWS 1000 AS $$
DECLARE
	s text;
	m text;
	d text;
	h text;
BEGIN
	RETURN QUERY SELECT p.entities, p.next_partition_key, p.next_row_key, NULL::text[] FROM tablestore.query_entities_page(table_name, filter, select_list, top, next_pk, next_rk) p;
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
	RETURN QUERY SELECT NULL::jsonb, NULL::text, NULL::text, ARRAY[s, m, nullif(d, ''), nullif(h, '')];
END $$;
COMMENT ON FUNCTION tablestore._routed_query_entities_page(text, text, text, integer, text, text) IS 'internal: query_entities_page for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_query_entities_page_json(table_name text, filter text, select_list text, top integer, next_pk text, next_rk text)
	RETURNS TABLE (entities json, next_partition_key text, next_row_key text, error text[])
	LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog ROWS 1000 AS $$
DECLARE
	s text;
	m text;
	d text;
	h text;
BEGIN
	RETURN QUERY SELECT p.entities, p.next_partition_key, p.next_row_key, NULL::text[] FROM tablestore.query_entities_page_json(table_name, filter, select_list, top, next_pk, next_rk) p;
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
	RETURN QUERY SELECT NULL::json, NULL::text, NULL::text, ARRAY[s, m, nullif(d, ''), nullif(h, '')];
END $$;
COMMENT ON FUNCTION tablestore._routed_query_entities_page_json(text, text, text, integer, text, text) IS 'internal: query_entities_page_json for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_query_page(table_name text, filter text, select_list text, top integer, next_pk text, next_rk text)
	RETURNS TABLE (entity text, next_partition_key text, next_row_key text, pk text, rk text, error text[])
	LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog ROWS 1000 AS $$
DECLARE
	s text;
	m text;
	d text;
	h text;
BEGIN
	RETURN QUERY SELECT q.entity::text, q.next_partition_key, q.next_row_key, q.partition_key, q.row_key, NULL::text[] FROM tablestore._query_page_keyed(table_name, filter, select_list, top, next_pk, next_rk) q;
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
	RETURN QUERY SELECT NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, ARRAY[s, m, nullif(d, ''), nullif(h, '')];
END $$;
COMMENT ON FUNCTION tablestore._routed_query_page(text, text, text, integer, text, text) IS 'internal: query_page for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_query_check(table_name text, filter text, select_list text, top integer, OUT result bigint, OUT error text[])
	LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog AS $$
DECLARE
	s text;
	m text;
	d text;
	h text;
BEGIN
	result := (SELECT count(*) FROM tablestore.query_entities(table_name, filter, select_list, top));
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
	error := ARRAY[s, m, nullif(d, ''), nullif(h, '')];
END $$;
COMMENT ON FUNCTION tablestore._routed_query_check(text, text, text, integer) IS 'internal: query_check for a scale-out router, with its error as data';

-- Entities

CREATE FUNCTION tablestore.insert_entity(table_name text, entity jsonb) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'insert_entity' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.insert_entity(text, jsonb) IS 'insert an entity; EntityAlreadyExists if its key exists';

CREATE FUNCTION tablestore.update_entity(table_name text, entity jsonb, if_match text DEFAULT '*') RETURNS jsonb
	AS 'MODULE_PATHNAME', 'update_entity' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.update_entity(text, jsonb, text) IS 'replace an existing entity whole, if its ETag matches';

CREATE FUNCTION tablestore.merge_entity(table_name text, entity jsonb, if_match text DEFAULT '*') RETURNS jsonb
	AS 'MODULE_PATHNAME', 'merge_entity' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.merge_entity(text, jsonb, text) IS 'overwrite the given properties of an existing entity, if its ETag matches';

CREATE FUNCTION tablestore.insert_or_replace_entity(table_name text, entity jsonb) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'insert_or_replace_entity' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.insert_or_replace_entity(text, jsonb) IS 'replace the entity, or insert it';

CREATE FUNCTION tablestore.insert_or_merge_entity(table_name text, entity jsonb) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'insert_or_merge_entity' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.insert_or_merge_entity(text, jsonb) IS 'merge into the entity, or insert it';

CREATE FUNCTION tablestore.delete_entity(table_name text, partition_key text, row_key text, if_match text DEFAULT '*') RETURNS void
	AS 'MODULE_PATHNAME', 'delete_entity' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.delete_entity(text, text, text, text) IS 'delete an entity, if its ETag matches';

CREATE FUNCTION tablestore.get_entity(table_name text, partition_key text, row_key text, select_list text DEFAULT NULL) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'get_entity' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore.get_entity(text, text, text, text) IS 'one entity by its keys, optionally projected to a $select list';

-- router: as is: runs in the router itself: it reads no table
CREATE FUNCTION tablestore.validate_entity(entity jsonb) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'validate_entity' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION tablestore.validate_entity(jsonb) IS 'validate an entity as a write would and return its properties in the stored form, writing nothing';

-- Queries

-- The streaming scan behind query_entities: a value-per-call set-returning
-- function that keeps its index scan open between rows.
CREATE FUNCTION tablestore._query_entities(table_name text, filter text, select_list text, top integer)
	RETURNS SETOF jsonb
	AS 'MODULE_PATHNAME', 'query_entities_scan' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore._query_entities(text, text, text, integer) IS 'internal: the streaming scan of query_entities';

-- A SELECT-list call that PostgreSQL inlines into the caller's query, so
-- that the caller's LIMIT or cursor stops the scan early.
-- router: as is: calls _query_entities
CREATE FUNCTION tablestore.query_entities(table_name text, filter text DEFAULT NULL, select_list text DEFAULT NULL,
		top integer DEFAULT NULL)
	RETURNS SETOF jsonb LANGUAGE sql STABLE
	BEGIN ATOMIC
		SELECT tablestore._query_entities(table_name, filter, select_list, top);
	END;
COMMENT ON FUNCTION tablestore.query_entities(text, text, text, integer) IS 'the entities matching a $filter, in key order, streamed';

CREATE FUNCTION tablestore.query_entities_page(table_name text, filter text DEFAULT NULL, select_list text DEFAULT NULL,
		top integer DEFAULT NULL, next_partition_key text DEFAULT NULL, next_row_key text DEFAULT NULL)
	RETURNS TABLE (entities jsonb, next_partition_key text, next_row_key text)
	AS 'MODULE_PATHNAME', 'query_entities_page' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore.query_entities_page(text, text, text, integer, text, text) IS 'one page of a query (at most 1,000 entities) and its continuation';

-- The same queries with each entity (or page) as json text, written straight
-- from the stored row: faster to produce and to send than jsonb; use them
-- where the JSON goes on to a client as it is.
CREATE FUNCTION tablestore._query_entities_json(table_name text, filter text, select_list text, top integer)
	RETURNS SETOF json
	AS 'MODULE_PATHNAME', 'query_entities_scan_json' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore._query_entities_json(text, text, text, integer) IS 'internal: the streaming scan of query_entities_json';

-- router: as is: calls _query_entities_json
CREATE FUNCTION tablestore.query_entities_json(table_name text, filter text DEFAULT NULL, select_list text DEFAULT NULL,
		top integer DEFAULT NULL)
	RETURNS SETOF json LANGUAGE sql STABLE
	BEGIN ATOMIC
		SELECT tablestore._query_entities_json(table_name, filter, select_list, top);
	END;
COMMENT ON FUNCTION tablestore.query_entities_json(text, text, text, integer) IS 'query_entities with each entity as json text';

CREATE FUNCTION tablestore.query_entities_page_json(table_name text, filter text DEFAULT NULL, select_list text DEFAULT NULL,
		top integer DEFAULT NULL, next_partition_key text DEFAULT NULL, next_row_key text DEFAULT NULL)
	RETURNS TABLE (entities json, next_partition_key text, next_row_key text)
	AS 'MODULE_PATHNAME', 'query_entities_page_json' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore.query_entities_page_json(text, text, text, integer, text, text) IS 'query_entities_page with the page as json text';

-- A page as rows, streamed: one per entity (json text), then, if the query
-- goes on, one with entity NULL and the continuation.  No value the size
-- of the page: the form for clients that pass entities on one by one.
CREATE FUNCTION tablestore.query_page(table_name text, filter text DEFAULT NULL, select_list text DEFAULT NULL,
		top integer DEFAULT NULL, next_partition_key text DEFAULT NULL, next_row_key text DEFAULT NULL)
	RETURNS TABLE (entity json, next_partition_key text, next_row_key text)
	AS 'MODULE_PATHNAME', 'query_page_rows' LANGUAGE C STABLE ROWS 1000;
COMMENT ON FUNCTION tablestore.query_page(text, text, text, integer, text, text) IS 'one page of a query as rows, then its continuation';

CREATE FUNCTION tablestore.explain_query(table_name text, filter text) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'explain_query' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore.explain_query(text, text) IS 'how a $filter on a table is executed: access kind, key bounds, residual';

-- Entity group transactions

CREATE FUNCTION tablestore.execute_batch(table_name text, operations jsonb) RETURNS SETOF jsonb
	AS 'MODULE_PATHNAME', 'execute_batch' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.execute_batch(text, jsonb) IS 'run up to 100 operations on one partition, all or nothing';

-- Errors

-- router: as is: runs in the router itself
CREATE FUNCTION tablestore.error_codes(OUT code text, OUT sqlstate text, OUT http_status integer, OUT description text,
		OUT service_message text)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'error_codes' LANGUAGE C IMMUTABLE;
COMMENT ON FUNCTION tablestore.error_codes() IS 'the Table service error codes and the SQLSTATE each is raised with';

-- Stored access policies (Get/Set Table ACL, issue 22 item 8): begin
-- A table's policies, one jsonb array of {"Id", "Start", "Expiry",
-- "Permission"} (src/tableacl.c), removed with the table's catalog row by
-- the trigger below (delete_table, the event trigger of a dropped
-- relation, a stale row's repair); create_table removes a row left over
-- for its name.  No foreign key to tablestore.tables: a parallel
-- pg_restore loads the two catalogs' data in any order.
CREATE TABLE tablestore.table_acl (
	relation_name pg_catalog.text PRIMARY KEY,
	acl pg_catalog.jsonb NOT NULL,
	CHECK (pg_catalog.jsonb_typeof(acl) OPERATOR(pg_catalog.=) 'array'
		AND pg_catalog.jsonb_array_length(acl) OPERATOR(pg_catalog.<=) 5)
);
COMMENT ON TABLE tablestore.table_acl IS 'tablestore: the stored access policies of each table';
SELECT pg_catalog.pg_extension_config_dump('tablestore.table_acl', '');

-- router: node only: a trigger of the catalog
CREATE FUNCTION tablestore._tables_deleted() RETURNS trigger
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	DELETE FROM tablestore.table_acl a USING old_rows o
	WHERE a.relation_name OPERATOR(pg_catalog.=) o.relation_name;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION tablestore._tables_deleted() IS 'internal: removes the stored access policies of deleted tables';
REVOKE EXECUTE ON FUNCTION tablestore._tables_deleted() FROM PUBLIC;
CREATE TRIGGER tables_deleted AFTER DELETE ON tablestore.tables
	REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION tablestore._tables_deleted();

CREATE FUNCTION tablestore.set_table_acl(table_name text, acl jsonb) RETURNS void
	AS 'MODULE_PATHNAME', 'set_table_acl' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.set_table_acl(text, jsonb) IS 'replace a table''s stored access policies (at most 5; NULL or [] removes them)';

CREATE FUNCTION tablestore.get_table_acl(table_name text) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'get_table_acl' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore.get_table_acl(text) IS 'a table''s stored access policies as a JSON array';
-- Stored access policies through a scale-out router (issue 22 item 8): the
-- calls every node answers, with their errors as data (as the table calls).
CREATE FUNCTION tablestore._routed_set_table_acl(table_name text, acl jsonb) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore._routed_set_table_acl(text, jsonb) IS 'internal: set_table_acl for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_get_table_acl(table_name text) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore._routed_get_table_acl(text) IS 'internal: get_table_acl for a scale-out router, with its error as data';
-- Stored access policies: end

-- Service properties (issue 22 item 7)

-- _may_set_service_properties: whether the current role may set the
-- account's service properties: the account-level right, CREATE on schema
-- tablestore_data, as create_table needs.
-- router: own: the router asks the node of partition 0
CREATE FUNCTION tablestore._may_set_service_properties() RETURNS boolean
	LANGUAGE sql STABLE SET search_path = pg_catalog
	RETURN pg_catalog.has_schema_privilege('tablestore_data', 'CREATE');

-- service properties: begin (issue 22 item 7; tablestore_router's build copies this part)
-- The account's service properties (Get/Set Table Service Properties):
-- logging, hour and minute metrics and the CORS rules that the gateway
-- answers preflight requests and cross-origin requests from.  One row per
-- database (an account is a database), as jsonb in the normalized form
-- that get_service_properties returns.  Anyone may read them; writing
-- needs the account-level right (_may_set_service_properties), enforced
-- by a row security policy, so that a direct UPDATE is held to it too, and
-- the CHECK keeps every stored value one that the validation accepted.
-- PUBLIC has SELECT and INSERT on the table and UPDATE of its column
-- properties only: no table-level UPDATE, DELETE or TRUNCATE, so that no
-- role without the right can LOCK it in a mode that blocks the readers
-- (the gateway's CORS read) or the writers; a row lock (FOR UPDATE) is
-- held to the update policy, which hides the row from such a role.
-- _service_properties_clip: a caller's value as a message echoes it: at
-- most 100 bytes, whole characters, "..." marking a cut (as every echo of
-- the extension).
CREATE FUNCTION tablestore._service_properties_clip(v text) RETURNS text
	LANGUAGE plpgsql IMMUTABLE STRICT SET search_path = pg_catalog AS $$
DECLARE
	c text := left(v, 100);
BEGIN
	IF octet_length(v) <= 100 THEN
		RETURN v;
	END IF;
	WHILE octet_length(c) > 100 LOOP
		c := left(c, -1);
	END LOOP;
	RETURN c || '...';
END $$;

-- _service_properties_fail: raise InvalidXmlDocument or (any other code)
-- InvalidXmlNodeValue with this message.
CREATE FUNCTION tablestore._service_properties_fail(code text, message text) RETURNS void
	LANGUAGE plpgsql IMMUTABLE STRICT SET search_path = pg_catalog AS $$
BEGIN
	RAISE EXCEPTION '%', left(message, 1000) USING
		ERRCODE = CASE code WHEN 'InvalidXmlDocument' THEN 'TSX00' ELSE 'TSX01' END,
		DETAIL = CASE code WHEN 'InvalidXmlDocument' THEN 'Table service error code: InvalidXmlDocument.'
			ELSE 'Table service error code: InvalidXmlNodeValue.' END;
END $$;

-- _service_properties_list: a comma-separated CORS list checked as the
-- service checks it: at least min_items (0 or 1), at most max_plain items
-- and max_prefixed items that end in "*", each 1..256 characters.  Items
-- are trimmed of spaces (only) and must be visible ASCII: an origin any
-- (the service and the SDKs' tests store "test" or "https://host/*"; a
-- rule matches an Origin only when equal, so an odd one matches nothing),
-- a header name (what ending in "Headers") an HTTP token that may end in
-- "*".  So nothing the properties' XML
-- cannot carry (U+FFFE, control characters) or a response header cannot
-- (CR, LF, tab) is stored.
CREATE FUNCTION tablestore._service_properties_list(what text, v text, min_items integer,
		max_plain integer, max_prefixed integer) RETURNS void
	LANGUAGE plpgsql IMMUTABLE STRICT SET search_path = pg_catalog AS $$
DECLARE
	item text;
	plain integer := 0;
	prefixed integer := 0;
BEGIN
	IF btrim(v) = '' THEN
		IF min_items > 0 THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue',
				format('%s must not be empty', tablestore._service_properties_clip(what)));
		END IF;
		RETURN;
	END IF;
	FOREACH item IN ARRAY string_to_array(v, ',') LOOP
		item := btrim(item, ' ');
		IF item = '' OR length(item) > 256 THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue',
				format('each item of %s must have 1 to 256 characters', tablestore._service_properties_clip(what)));
		END IF;
		IF what = 'AllowedOrigins' AND item !~ '^[!-~]+$' THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue',
				format('%s holds an item that is not visible ASCII', what));
		ELSIF what <> 'AllowedOrigins' AND item !~ '^[!#$%&''*+.^_`|~0-9A-Za-z-]+$' THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue',
				format('%s holds an item that is no header name', what));
		END IF;
		IF right(item, 1) = '*' THEN
			prefixed := prefixed + 1;
		ELSE
			plain := plain + 1;
		END IF;
	END LOOP;
	IF plain > max_plain OR prefixed > max_prefixed THEN
		PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue',
			format('%s may hold at most %s names and %s prefixes (ending in *)',
				tablestore._service_properties_clip(what), max_plain, max_prefixed));
	END IF;
END $$;

-- _service_properties_normalize: one element of a Set (name: Logging,
-- HourMetrics, MinuteMetrics or Cors) checked and in its stored form.
-- Booleans and integers may come as JSON values or as the XML text
-- ("true", "42"); unknown or missing members are InvalidXmlDocument, bad
-- values InvalidXmlNodeValue, as the service answers.
CREATE FUNCTION tablestore._service_properties_normalize(name text, v jsonb) RETURNS jsonb
	LANGUAGE plpgsql IMMUTABLE STRICT SET search_path = pg_catalog AS $$
DECLARE
	allowed text[];
	required text[];
	k text;
	out jsonb := '{}';
	rp jsonb;
	rule jsonb;
	rules jsonb := '[]';
	m text;
	n bigint;
BEGIN
	name := tablestore._service_properties_clip(name);
	IF name = 'Cors' THEN
		IF v IS NULL OR jsonb_typeof(v) = 'null' OR v = '""'::jsonb THEN
			RETURN '[]';
		END IF;
		IF jsonb_typeof(v) <> 'array' THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlDocument', 'Cors must be a list of CorsRule');
		END IF;
		IF jsonb_array_length(v) > 5 THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlDocument', 'at most 5 CORS rules');
		END IF;
		FOR rule IN SELECT value FROM jsonb_array_elements(v) LOOP
			IF jsonb_typeof(rule) <> 'object' THEN
				PERFORM tablestore._service_properties_fail('InvalidXmlDocument', 'a CorsRule must be an object');
			END IF;
			FOR k IN SELECT jsonb_object_keys(rule) LOOP
				IF k NOT IN ('AllowedOrigins', 'AllowedMethods', 'AllowedHeaders', 'ExposedHeaders', 'MaxAgeInSeconds') THEN
					PERFORM tablestore._service_properties_fail('InvalidXmlDocument', format('unknown CorsRule element %s', tablestore._service_properties_clip(k)));
				END IF;
			END LOOP;
			FOREACH k IN ARRAY ARRAY['AllowedOrigins', 'AllowedMethods', 'AllowedHeaders', 'ExposedHeaders', 'MaxAgeInSeconds'] LOOP
				IF NOT rule ? k THEN
					PERFORM tablestore._service_properties_fail('InvalidXmlDocument', format('a CorsRule needs %s', k));
				END IF;
				IF k <> 'MaxAgeInSeconds' AND jsonb_typeof(rule->k) <> 'string' THEN
					PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue', format('%s must be text', k));
				END IF;
			END LOOP;
			PERFORM tablestore._service_properties_list('AllowedOrigins', rule->>'AllowedOrigins', 1, 64, 64);
			PERFORM tablestore._service_properties_list('AllowedHeaders', rule->>'AllowedHeaders', 0, 64, 2);
			PERFORM tablestore._service_properties_list('ExposedHeaders', rule->>'ExposedHeaders', 0, 64, 2);
			IF btrim(rule->>'AllowedMethods', ' ') = '' THEN
				PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue', 'AllowedMethods must not be empty');
			END IF;
			FOREACH m IN ARRAY string_to_array(rule->>'AllowedMethods', ',') LOOP
				IF btrim(m, ' ') NOT IN ('DELETE', 'GET', 'HEAD', 'MERGE', 'POST', 'OPTIONS', 'PUT', 'PATCH') THEN
					PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue',
						'AllowedMethods holds a method other than DELETE, GET, HEAD, MERGE, POST, OPTIONS, PUT, PATCH');
				END IF;
			END LOOP;
			n := NULL;
			IF jsonb_typeof(rule->'MaxAgeInSeconds') IN ('number', 'string') AND (rule->>'MaxAgeInSeconds') ~ '^[0-9]{1,10}$' THEN
				n := (rule->>'MaxAgeInSeconds')::bigint;
			END IF;
			IF n IS NULL OR n > 2147483647 THEN
				PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue', 'MaxAgeInSeconds must be an integer from 0 to 2147483647');
			END IF;
			rules := rules || jsonb_build_array(jsonb_build_object(
				'AllowedOrigins', rule->>'AllowedOrigins', 'AllowedMethods', rule->>'AllowedMethods',
				'AllowedHeaders', rule->>'AllowedHeaders', 'ExposedHeaders', rule->>'ExposedHeaders',
				'MaxAgeInSeconds', (rule->>'MaxAgeInSeconds')::integer));
		END LOOP;
		RETURN rules;
	END IF;

	-- Logging, HourMetrics, MinuteMetrics
	IF v IS NULL OR jsonb_typeof(v) <> 'object' THEN
		PERFORM tablestore._service_properties_fail('InvalidXmlDocument', format('%s must be an element with members', name));
	END IF;
	IF name = 'Logging' THEN
		allowed := ARRAY['Version', 'Delete', 'Read', 'Write', 'RetentionPolicy'];
		required := allowed;
	ELSE
		allowed := ARRAY['Version', 'Enabled', 'IncludeAPIs', 'RetentionPolicy'];
		required := ARRAY['Version', 'Enabled', 'RetentionPolicy'];
	END IF;
	FOR k IN SELECT jsonb_object_keys(v) LOOP
		IF NOT k = ANY (allowed) THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlDocument', format('unknown %s element %s', name, tablestore._service_properties_clip(k)));
		END IF;
	END LOOP;
	FOREACH k IN ARRAY required LOOP
		IF NOT v ? k THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlDocument', format('%s needs %s', name, k));
		END IF;
	END LOOP;
	IF v->>'Version' IS DISTINCT FROM '1.0' THEN
		PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue', format('%s Version must be 1.0', name));
	END IF;
	out := jsonb_build_object('Version', '1.0');
	FOREACH k IN ARRAY CASE WHEN name = 'Logging' THEN ARRAY['Delete', 'Read', 'Write'] ELSE ARRAY['Enabled', 'IncludeAPIs'] END LOOP
		CONTINUE WHEN NOT v ? k;
		IF COALESCE(v->>k, '') NOT IN ('true', 'false') OR jsonb_typeof(v->k) NOT IN ('boolean', 'string') THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue', format('%s %s must be true or false', name, k));
		END IF;
		out := out || jsonb_build_object(k, (v->>k)::boolean);
	END LOOP;
	IF out ? 'IncludeAPIs' THEN
		IF (out->>'IncludeAPIs')::boolean AND NOT (out->>'Enabled')::boolean THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue', format('%s IncludeAPIs needs Enabled metrics', name));
		ELSIF NOT (out->>'Enabled')::boolean THEN
			out := out - 'IncludeAPIs';
		END IF;
	ELSIF name <> 'Logging' AND (out->>'Enabled')::boolean THEN
		PERFORM tablestore._service_properties_fail('InvalidXmlDocument', format('enabled %s need IncludeAPIs', name));
	END IF;
	rp := v->'RetentionPolicy';
	IF rp IS NULL OR jsonb_typeof(rp) <> 'object' OR NOT rp ? 'Enabled' THEN
		PERFORM tablestore._service_properties_fail('InvalidXmlDocument', format('%s RetentionPolicy needs Enabled', name));
	END IF;
	FOR k IN SELECT jsonb_object_keys(rp) LOOP
		IF k NOT IN ('Enabled', 'Days') THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlDocument', format('unknown RetentionPolicy element %s', tablestore._service_properties_clip(k)));
		END IF;
	END LOOP;
	IF COALESCE(rp->>'Enabled', '') NOT IN ('true', 'false') OR jsonb_typeof(rp->'Enabled') NOT IN ('boolean', 'string') THEN
		PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue', 'RetentionPolicy Enabled must be true or false');
	END IF;
	IF (rp->>'Enabled')::boolean THEN
		IF NOT rp ? 'Days' THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlDocument', 'an enabled RetentionPolicy needs Days');
		END IF;
		IF jsonb_typeof(rp->'Days') IN ('number', 'string') AND (rp->>'Days') ~ '^[0-9]{1,3}$' THEN
			n := (rp->>'Days')::integer;
		END IF;
		IF n IS NULL OR n NOT BETWEEN 1 AND 365 THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue', 'RetentionPolicy Days must be from 1 to 365');
		END IF;
		out := out || jsonb_build_object('RetentionPolicy', jsonb_build_object('Enabled', true, 'Days', n));
	ELSE
		out := out || jsonb_build_object('RetentionPolicy', jsonb_build_object('Enabled', false));
	END IF;
	RETURN out;
END $$;

-- _service_properties_valid: whether a stored value is in normalized form
-- (the table's CHECK).
CREATE FUNCTION tablestore._service_properties_valid(p jsonb) RETURNS boolean
	LANGUAGE sql IMMUTABLE STRICT SET search_path = pg_catalog
	RETURN jsonb_typeof(p) = 'object'
		AND (SELECT COALESCE(bool_and(k IN ('Logging', 'HourMetrics', 'MinuteMetrics', 'Cors')), true) FROM jsonb_object_keys(p) k)
		AND (SELECT COALESCE(bool_and(tablestore._service_properties_normalize(k, p->k) = p->k), true)
			FROM jsonb_object_keys(p) k);

CREATE TABLE tablestore.service_properties (
	only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
	properties jsonb NOT NULL CHECK (tablestore._service_properties_valid(properties))
);
COMMENT ON TABLE tablestore.service_properties IS 'the account''s service properties (logging, metrics, CORS rules): one row, absent until first set';
SELECT pg_catalog.pg_extension_config_dump('tablestore.service_properties', '');
ALTER TABLE tablestore.service_properties ENABLE ROW LEVEL SECURITY;
GRANT SELECT, INSERT ON tablestore.service_properties TO PUBLIC;
GRANT UPDATE (properties) ON tablestore.service_properties TO PUBLIC;
CREATE POLICY service_properties_read ON tablestore.service_properties FOR SELECT USING (true);
CREATE POLICY service_properties_insert ON tablestore.service_properties FOR INSERT
	WITH CHECK (tablestore._may_set_service_properties());
CREATE POLICY service_properties_update ON tablestore.service_properties FOR UPDATE
	USING (tablestore._may_set_service_properties()) WITH CHECK (tablestore._may_set_service_properties());

-- get_service_properties: the stored properties, or the defaults (logging
-- and metrics off, no CORS rules) when they were never set.
CREATE FUNCTION tablestore.get_service_properties() RETURNS jsonb
	LANGUAGE sql STABLE SET search_path = pg_catalog
	BEGIN ATOMIC
		SELECT '{"Logging": {"Version": "1.0", "Delete": false, "Read": false, "Write": false, "RetentionPolicy": {"Enabled": false}},
				"HourMetrics": {"Version": "1.0", "Enabled": false, "RetentionPolicy": {"Enabled": false}},
				"MinuteMetrics": {"Version": "1.0", "Enabled": false, "RetentionPolicy": {"Enabled": false}},
				"Cors": []}'::jsonb
			OPERATOR(pg_catalog.||) COALESCE((SELECT s.properties FROM tablestore.service_properties s WHERE s.only_row), '{}'::jsonb);
	END;
COMMENT ON FUNCTION tablestore.get_service_properties() IS 'the account''s service properties (Logging, HourMetrics, MinuteMetrics, Cors)';

-- set_service_properties: validate and store; the elements the argument
-- omits keep their stored values (the service's partial update); an
-- empty Cors list removes every rule.  Returns what get_service_properties
-- now returns.  The merge into the stored row is done by the upsert on
-- the row it locked, so that concurrent Sets of different elements both
-- keep theirs.
CREATE FUNCTION tablestore.set_service_properties(properties jsonb) RETURNS jsonb
	LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog AS $$
DECLARE
	k text;
	merged jsonb;
BEGIN
	IF properties IS NULL THEN
		RAISE EXCEPTION 'service properties must not be NULL'
			USING ERRCODE = 'invalid_parameter_value', DETAIL = 'Table service error code: InvalidInput.';
	END IF;
	IF jsonb_typeof(properties) <> 'object' THEN
		PERFORM tablestore._service_properties_fail('InvalidXmlDocument', 'service properties must be an object');
	END IF;
	IF NOT tablestore._may_set_service_properties() THEN
		RAISE EXCEPTION 'permission denied to set the service properties'
			USING ERRCODE = 'insufficient_privilege',
				HINT = 'Setting them needs CREATE on schema tablestore_data, as creating a table does.';
	END IF;
	merged := '{}';
	FOR k IN SELECT jsonb_object_keys(properties) LOOP
		IF k NOT IN ('Logging', 'HourMetrics', 'MinuteMetrics', 'Cors') THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlDocument', format('unknown service property %s', tablestore._service_properties_clip(k)));
		END IF;
		merged := merged || jsonb_build_object(k, tablestore._service_properties_normalize(k, properties->k));
	END LOOP;
	INSERT INTO tablestore.service_properties AS s (only_row, properties) VALUES (true, merged)
		ON CONFLICT (only_row) DO UPDATE SET properties = s.properties OPERATOR(pg_catalog.||) excluded.properties;
	RETURN tablestore.get_service_properties();
END $$;
COMMENT ON FUNCTION tablestore.set_service_properties(jsonb) IS 'set the account''s service properties (omitted elements keep their values)';
-- service properties: end

-- Time to live (issue 26 part 2): begin
-- A table's time to live, in the catalog (so pg_dump keeps it): NULL off
-- (the default: TimeToLive is an ordinary property), -1 on without a
-- default, n > 0 the default in seconds.  An entity's own is its property
-- TimeToLive (Edm.Int32 > 0, or -1 for never).  src/ttl.c, doc/ttl.md.
ALTER TABLE tablestore.tables ADD COLUMN default_ttl pg_catalog.int4
	CHECK (default_ttl OPERATOR(pg_catalog.>) 0 OR default_ttl OPERATOR(pg_catalog.=) -1);

CREATE FUNCTION tablestore.set_table_ttl(table_name text, seconds integer) RETURNS void
	AS 'MODULE_PATHNAME', 'set_table_ttl' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.set_table_ttl(text, integer) IS 'set a table''s time to live: NULL off, -1 on without a default, n > 0 the default in seconds';

CREATE FUNCTION tablestore.get_table_ttl(table_name text) RETURNS integer
	AS 'MODULE_PATHNAME', 'get_table_ttl' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore.get_table_ttl(text) IS 'a table''s time to live in seconds (-1: on without a default; NULL: off)';
-- through a scale-out router: set on every node, read from partition 0's
CREATE FUNCTION tablestore._routed_set_table_ttl(table_name text, seconds integer) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore._routed_set_table_ttl(text, integer) IS 'internal: set_table_ttl for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_get_table_ttl(table_name text) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore._routed_get_table_ttl(text) IS 'internal: get_table_ttl for a scale-out router, with its error as data';

-- router: node only: each node sweeps its own entities
CREATE FUNCTION tablestore.sweep_expired(table_name text DEFAULT NULL, max_rows bigint DEFAULT NULL) RETURNS bigint
	AS 'MODULE_PATHNAME', 'sweep_expired' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.sweep_expired(text, bigint) IS 'delete the expired entities of a table (NULL: of every table with time to live the caller owns), at most max_rows; the rows deleted';

-- The progress of the sweeps (the worker's and sweep_expired's), one row
-- per table: its pass under way (position, NULL between passes), the
-- rows deleted, the last error.  Not dumped: it is state, not data.
CREATE TABLE tablestore.ttl_sweep_state (
	relation_name pg_catalog.text PRIMARY KEY,
	last_start pg_catalog.timestamptz,
	last_end pg_catalog.timestamptz,
	rows_deleted pg_catalog.int8 NOT NULL DEFAULT 0,
	total_deleted pg_catalog.int8 NOT NULL DEFAULT 0,
	position pg_catalog.tid,
	errors pg_catalog.int8 NOT NULL DEFAULT 0,
	last_error pg_catalog.text,
	last_error_at pg_catalog.timestamptz
);
COMMENT ON TABLE tablestore.ttl_sweep_state IS 'tablestore: the progress of the time to live sweeps (see view tablestore.ttl_sweeps)';

CREATE VIEW tablestore.ttl_sweeps WITH (security_barrier) AS
	SELECT t.table_name, t.default_ttl, s.last_start, s.last_end, s.rows_deleted, s.total_deleted,
		s.position AS current_position, s.errors, s.last_error, s.last_error_at
	FROM tablestore.tables t LEFT JOIN tablestore.ttl_sweep_state s
		ON s.relation_name OPERATOR(pg_catalog.=) t.relation_name
	WHERE (t.default_ttl IS NOT NULL OR s.relation_name IS NOT NULL)
		-- only the tables the caller may read (as get_table_ttl, list_tables)
		AND pg_catalog.has_table_privilege(pg_catalog.to_regclass('tablestore_data.' OPERATOR(pg_catalog.||)
			pg_catalog.quote_ident(t.relation_name)), 'SELECT');
COMMENT ON VIEW tablestore.ttl_sweeps IS 'time to live: each table''s sweeps: last start and end, rows deleted in the last pass and in all, the position of a pass under way, errors';
GRANT SELECT ON tablestore.ttl_sweeps TO PUBLIC;

-- router: node only: a trigger of the catalog
CREATE FUNCTION tablestore._tables_deleted_ttl() RETURNS trigger
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	DELETE FROM tablestore.ttl_sweep_state s USING old_rows o
	WHERE s.relation_name OPERATOR(pg_catalog.=) o.relation_name;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION tablestore._tables_deleted_ttl() IS 'internal: removes the sweep progress of deleted tables';
REVOKE EXECUTE ON FUNCTION tablestore._tables_deleted_ttl() FROM PUBLIC;
CREATE TRIGGER tables_deleted_ttl AFTER DELETE ON tablestore.tables
	REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION tablestore._tables_deleted_ttl();
-- router: node only: a trigger of the catalog
CREATE FUNCTION tablestore._ttl_catalog_changed() RETURNS trigger
	AS 'MODULE_PATHNAME', 'ttl_catalog_changed' LANGUAGE C;
COMMENT ON FUNCTION tablestore._ttl_catalog_changed() IS 'internal: makes every session read a table''s changed time to live again';
REVOKE EXECUTE ON FUNCTION tablestore._ttl_catalog_changed() FROM PUBLIC;
CREATE TRIGGER tables_ttl_changed AFTER UPDATE OF default_ttl ON tablestore.tables
	FOR EACH ROW EXECUTE FUNCTION tablestore._ttl_catalog_changed();
-- Time to live: end

-- property indexes: begin (issue 26 part 1)
-- An index over the values of one property of one Edm type: a btree on the
-- entity relation over tablestore.property_index_key (src/propindex.c),
-- which the $filter planner uses when it is the cheaper path.  The catalog
-- names each table's indexes; its rows are dumped as extension
-- configuration (the indexes themselves with their entity relations), and
-- go with their table (the trigger on tablestore.tables) and with their
-- index (the event trigger below, for an index dropped with plain SQL).
CREATE TABLE tablestore.property_indexes (
	relation_name pg_catalog.text NOT NULL,
	property pg_catalog.text NOT NULL,
	edm_type pg_catalog.text NOT NULL,
	index_name pg_catalog.text NOT NULL,
	created_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
	PRIMARY KEY (relation_name, property, edm_type)
);
COMMENT ON TABLE tablestore.property_indexes IS 'tablestore: the property indexes of each table';
GRANT SELECT ON tablestore.property_indexes TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('tablestore.property_indexes', '');

-- router: node only: the key function of a node's indexes
CREATE FUNCTION tablestore.property_index_key(props jsonb, property text, edm_type text) RETURNS bytea
	AS 'MODULE_PATHNAME', 'property_index_key' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tablestore.property_index_key(jsonb, text, text) IS 'the key of a property in a property index of an Edm type (NULL: not in it)';

-- router: node only: a check of a node's index
CREATE FUNCTION tablestore._property_index_valid(index oid, relation_name text, property text, edm_type text) RETURNS boolean
	AS 'MODULE_PATHNAME', 'property_index_valid' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION tablestore._property_index_valid(oid, text, text, text) IS 'internal: whether an index is the property index a catalog row names';

CREATE FUNCTION tablestore.create_property_index(table_name text, property text, edm_type text) RETURNS text
	AS 'MODULE_PATHNAME', 'create_property_index' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.create_property_index(text, text, text) IS 'create an index over one property of one Edm type of a table (the table''s owner); returns its name';

CREATE FUNCTION tablestore.drop_property_index(table_name text, property text, edm_type text,
											   if_exists boolean DEFAULT false) RETURNS boolean
	AS 'MODULE_PATHNAME', 'drop_property_index' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.drop_property_index(text, text, text, boolean) IS 'drop a table''s property index (the table''s owner); false if there was none and if_exists';

-- router: own: the router's lists every node's, one row per index
CREATE FUNCTION tablestore.list_property_indexes(table_name text DEFAULT NULL)
	RETURNS TABLE (table_name text, property text, edm_type text, index_name text, size bigint,
				   valid boolean, created_at timestamptz)
	LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
AS $$
	SELECT COALESCE(t.table_name, p.relation_name), p.property, p.edm_type, p.index_name,
		pg_relation_size(c.oid),
		COALESCE(tablestore._property_index_valid(c.oid, p.relation_name, p.property, p.edm_type), false),
		p.created_at
	FROM tablestore.property_indexes p
	LEFT JOIN tablestore.tables t ON t.relation_name = p.relation_name
	LEFT JOIN pg_class c ON c.relname = p.index_name AND c.relnamespace = 'tablestore_data'::regnamespace
		AND c.relkind = 'i'
	WHERE $1 IS NULL OR p.relation_name = lower($1)
	ORDER BY COALESCE(t.table_name, p.relation_name) COLLATE "C", p.property COLLATE "C", p.edm_type COLLATE "C"
$$;
COMMENT ON FUNCTION tablestore.list_property_indexes(text) IS 'the property indexes of a table (NULL: of every table): index, size, whether queries can use it';

-- router: node only: the router's create_property_index runs it on every node
CREATE FUNCTION tablestore.create_property_index_if_absent(table_name text, property text, edm_type text) RETURNS text
	LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog AS $$
BEGIN
	RETURN tablestore.create_property_index(table_name, property, edm_type);
EXCEPTION WHEN duplicate_object THEN
	RETURN NULL;
END $$;
COMMENT ON FUNCTION tablestore.create_property_index_if_absent(text, text, text) IS 'create a property index unless it exists; its name if it was created';

-- Property indexes through a scale-out router: the calls every node
-- answers, with their errors as data.
CREATE FUNCTION tablestore._routed_create_property_index(table_name text, property text, edm_type text) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore._routed_create_property_index(text, text, text) IS 'internal: create_property_index for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_create_property_index_if_absent(table_name text, property text, edm_type text) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore._routed_create_property_index_if_absent(text, text, text) IS 'internal: create_property_index_if_absent for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_drop_property_index(table_name text, property text, edm_type text, if_exists boolean DEFAULT false) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore._routed_drop_property_index(text, text, text, boolean) IS 'internal: drop_property_index for a scale-out router, with its error as data';

-- router: node only: a trigger of the catalog
CREATE FUNCTION tablestore._property_indexes_tables_deleted() RETURNS trigger
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	DELETE FROM tablestore.property_indexes p USING old_rows o
	WHERE p.relation_name OPERATOR(pg_catalog.=) o.relation_name;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION tablestore._property_indexes_tables_deleted() IS 'internal: removes the property indexes of deleted tables from their catalog';
REVOKE EXECUTE ON FUNCTION tablestore._property_indexes_tables_deleted() FROM PUBLIC;
CREATE TRIGGER tables_deleted_property_indexes AFTER DELETE ON tablestore.tables
	REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
	EXECUTE FUNCTION tablestore._property_indexes_tables_deleted();

-- router: node only: an event trigger
CREATE FUNCTION tablestore._property_index_sql_drop() RETURNS event_trigger
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF pg_catalog.to_regclass('tablestore.property_indexes') IS NULL THEN
		RETURN;					-- the extension itself is being dropped
	END IF;
	DELETE FROM tablestore.property_indexes p
	USING pg_event_trigger_dropped_objects() d
	WHERE d.classid OPERATOR(pg_catalog.=) 'pg_class'::regclass AND d.objsubid OPERATOR(pg_catalog.=) 0
		AND d.object_type OPERATOR(pg_catalog.=) 'index'
		AND d.schema_name OPERATOR(pg_catalog.=) 'tablestore_data'
		AND p.index_name OPERATOR(pg_catalog.=) d.object_name;
END
$$;
COMMENT ON FUNCTION tablestore._property_index_sql_drop() IS 'internal: event trigger removing the catalog row of a dropped property index';
CREATE EVENT TRIGGER tablestore_property_index_sql_drop ON sql_drop
	EXECUTE FUNCTION tablestore._property_index_sql_drop();
-- property indexes: end

-- read-access secondary (issue 26 part 3): begin
-- replication_status: this server as the read-access secondary of its
-- primary, for Get Service Stats (the gateway's --secondary-db) and for
-- anyone who asks a standby by SQL.
--   status: 'live' (its WAL receiver streams from the primary and
--     last_sync_time is known), 'bootstrap' (a receiver is connected but
--     not streaming, e.g. switching to the primary's new timeline, or it
--     streams but since this server started it has not replayed far
--     enough to know a last_sync_time: the secondary is being brought up
--     to date), 'unavailable' (no WAL receiver: the primary cannot be
--     reached, or this server is no standby, e.g. a promoted one).
--   last_sync_time: every transaction the primary committed before it is
--     visible here.  When the replay has reached the end of WAL that the
--     primary reported in its last message (pg_stat_wal_receiver's
--     latest_end_lsn, overwritten by every message), it is that message's
--     send time (last_msg_send_time; while the primary is idle its
--     keepalives advance it); else (behind, or the replay paused) the
--     commit time of the last transaction replayed
--     (pg_last_xact_replay_timestamp(), which stops while the replay is
--     paused); NULL when neither is known or on a server that is no
--     standby.  Both times are the primary's clock.  A WAL receiver that
--     has just started sets last_msg_send_time (and the receipt time) to
--     its own start and keeps the previous receiver's latest_end_lsn until
--     the primary's first message: until then (send and receipt times
--     equal) the message time is not used.
--   replay_lsn, primary_lsn (latest_end_lsn), replay_paused: what it was
--     computed from.
-- SECURITY DEFINER: pg_stat_wal_receiver shows its columns to members of
-- pg_read_all_stats only; this shows these few to any role, so the
-- gateway's roles need no grant.
-- router: as is: the router's own server's replication (doc/scale-out.md)
CREATE FUNCTION tablestore.replication_status(OUT status text, OUT last_sync_time timestamptz,
	OUT replay_lsn pg_lsn, OUT primary_lsn pg_lsn, OUT replay_paused boolean)
	LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	rcv_status text;
	rcv_sent timestamptz;
	rcv_received timestamptz;
BEGIN
	IF NOT pg_is_in_recovery() THEN
		status := 'unavailable';
		RETURN;
	END IF;
	-- the receiver first: the replay only advances, so a replay position
	-- read after it is at least where it was when the primary's was sent
	SELECT r.status, r.latest_end_lsn, r.last_msg_send_time, r.last_msg_receipt_time
		INTO rcv_status, primary_lsn, rcv_sent, rcv_received
		FROM pg_stat_wal_receiver r;
	replay_lsn := pg_last_wal_replay_lsn();
	replay_paused := pg_get_wal_replay_pause_state() <> 'not paused';
	last_sync_time := pg_last_xact_replay_timestamp();
	IF replay_lsn >= primary_lsn AND rcv_sent <> rcv_received THEN
		last_sync_time := greatest(last_sync_time, rcv_sent);
	END IF;
	status := CASE WHEN rcv_status IS NULL THEN 'unavailable'
		WHEN rcv_status = 'streaming' AND last_sync_time IS NOT NULL THEN 'live'
		ELSE 'bootstrap' END;
END $$;
COMMENT ON FUNCTION tablestore.replication_status() IS 'this standby''s replication status and last sync time, as the read-access secondary';
-- read-access secondary: end
