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

CREATE FUNCTION tablestore.list_tables() RETURNS SETOF text
	LANGUAGE sql STABLE
	BEGIN ATOMIC
		SELECT t.table_name FROM tablestore.tables t
		ORDER BY t.table_name COLLATE pg_catalog."C";
	END;
COMMENT ON FUNCTION tablestore.list_tables() IS 'the names of all tables, in ordinal order';

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
