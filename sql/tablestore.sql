-- tablestore: Azure Table service semantics on PostgreSQL.
-- This is the editable install script; the build copies it to
-- tablestore--<version>.sql.  Released versions change only through
-- upgrade scripts tablestore--<from>--<to>.sql.

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
CREATE FUNCTION tablestore.tskey_handler(internal) RETURNS index_am_handler
	AS 'MODULE_PATHNAME', 'tskey_handler' LANGUAGE C;
CREATE ACCESS METHOD tskey TYPE INDEX HANDLER tablestore.tskey_handler;
COMMENT ON ACCESS METHOD tskey IS 'tablestore: unique ordered index on (PartitionKey, RowKey)';
CREATE OPERATOR CLASS tablestore.key_tskey_ops DEFAULT FOR TYPE tablestore.key USING tskey AS
	OPERATOR 1 tablestore.< , OPERATOR 2 tablestore.<= , OPERATOR 3 tablestore.= ,
	OPERATOR 4 tablestore.>= , OPERATOR 5 tablestore.> ,
	FUNCTION 1 tablestore.key_cmp(tablestore.key, tablestore.key);

-- verify_index: the light and parent checks and heapallindexed (issue 25)
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
CREATE FUNCTION tablestore.key_is_valid(tablestore.key) RETURNS boolean
	AS 'MODULE_PATHNAME', 'key_is_valid' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tablestore.key_is_valid(tablestore.key) IS 'whether a value may be a PartitionKey or RowKey: no forbidden character, at most 512 UTF-16 code units';

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

CREATE FUNCTION tablestore.partition_hash(partition_key text) RETURNS integer
	AS 'MODULE_PATHNAME', 'partition_hash' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tablestore.partition_hash(text) IS 'the stable hash of a PartitionKey that a scale-out router routes by';

CREATE FUNCTION tablestore.create_table_if_absent(table_name text) RETURNS boolean
	LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog AS $$
BEGIN
	PERFORM tablestore.create_table(table_name);
	RETURN true;
EXCEPTION WHEN duplicate_table THEN
	RETURN false;
END $$;
COMMENT ON FUNCTION tablestore.create_table_if_absent(text) IS 'create a table unless it exists; true if it was created';

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
CREATE FUNCTION tablestore._query_page_keyed(table_name text, filter text, select_list text,
		top integer, next_partition_key text, next_row_key text)
	RETURNS TABLE (entity json, next_partition_key text, next_row_key text, partition_key text, row_key text)
	AS 'MODULE_PATHNAME', 'query_page_rows' LANGUAGE C STABLE ROWS 1000;
COMMENT ON FUNCTION tablestore._query_page_keyed(text, text, text, integer, text, text) IS 'internal: query_page with each entity''s keys, for a scale-out router';

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

CREATE FUNCTION tablestore.error_codes(OUT code text, OUT sqlstate text, OUT http_status integer, OUT description text,
		OUT service_message text)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'error_codes' LANGUAGE C IMMUTABLE;
COMMENT ON FUNCTION tablestore.error_codes() IS 'the Table service error codes and the SQLSTATE each is raised with';
