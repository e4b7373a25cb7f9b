-- tablestore_router 0.8.0 -> 0.9.0

\echo Use "ALTER EXTENSION tablestore_router UPDATE TO '0.9.0'" to load this file. \quit

-- Time to live (issue 26 part 2): begin
-- Every node keeps a table's time to live with its copy of the table and
-- sweeps its own entities; set sets it on every node under the table's name
-- lock, get reads the node of partition 0 (src/router/ttl.c).
CREATE FUNCTION tablestore_router._set_table_ttl(table_name text, seconds integer)
	RETURNS SETOF jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON ALL;
	SELECT tablestore._routed_set_table_ttl(table_name, seconds) AS _set_table_ttl; $$;
CREATE FUNCTION tablestore_router._get_table_ttl(table_name text)
	RETURNS SETOF jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON 0;
	SELECT tablestore._routed_get_table_ttl(table_name) AS _get_table_ttl; $$;
REVOKE EXECUTE ON FUNCTION tablestore_router._set_table_ttl(text, integer), tablestore_router._get_table_ttl(text) FROM PUBLIC;
CREATE FUNCTION tablestore.set_table_ttl(table_name text, seconds integer) RETURNS void
	AS 'MODULE_PATHNAME', 'router_set_table_ttl' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.set_table_ttl(text, integer) IS 'set a table''s time to live: NULL off, -1 on without a default, n > 0 the default in seconds';
CREATE FUNCTION tablestore.get_table_ttl(table_name text) RETURNS integer
	AS 'MODULE_PATHNAME', 'router_get_table_ttl' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore.get_table_ttl(text) IS 'a table''s time to live in seconds (-1: on without a default; NULL: off)';
-- Time to live: end
