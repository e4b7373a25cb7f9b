-- tablestore 0.5.0 -> 0.6.0

\echo Use "ALTER EXTENSION tablestore UPDATE TO '0.6.0'" to load this file. \quit

-- Stored access policies (Get/Set Table ACL, issue 22 item 8): begin
-- A table's policies, one jsonb array of {"Id", "Start", "Expiry",
-- "Permission"} (src/tableacl.c), removed with the table's catalog row.
CREATE TABLE tablestore.table_acl (
	relation_name pg_catalog.text PRIMARY KEY
		REFERENCES tablestore.tables (relation_name) ON DELETE CASCADE,
	acl pg_catalog.jsonb NOT NULL,
	CHECK (pg_catalog.jsonb_typeof(acl) OPERATOR(pg_catalog.=) 'array'
		AND pg_catalog.jsonb_array_length(acl) OPERATOR(pg_catalog.<=) 5)
);
COMMENT ON TABLE tablestore.table_acl IS 'tablestore: the stored access policies of each table';
SELECT pg_catalog.pg_extension_config_dump('tablestore.table_acl', '');

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
