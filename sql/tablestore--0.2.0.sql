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

CREATE FUNCTION tablestore.verify_index(index regclass) RETURNS void
	AS 'MODULE_PATHNAME', 'verify_index' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION tablestore.verify_index(regclass) IS 'check a tskey index: page invariants, key order, links, uniqueness, one entry per live tuple';

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
