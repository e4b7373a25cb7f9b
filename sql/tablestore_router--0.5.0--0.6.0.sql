-- tablestore_router 0.5.0 -> 0.6.0

\echo Use "ALTER EXTENSION tablestore_router UPDATE TO '0.6.0'" to load this file. \quit

-- Issue 22 ($select, $top=0): query_page with each entity's keys, as on a
-- node, for the HTTP gateway in front of a router: a $select that does not
-- name PartitionKey and RowKey leaves them out of the entity
CREATE FUNCTION tablestore._query_page_keyed(table_name text, filter text, select_list text,
		top integer, next_partition_key text, next_row_key text)
	RETURNS TABLE (entity json, next_partition_key text, next_row_key text, partition_key text, row_key text)
	AS 'MODULE_PATHNAME', 'router_query_page' LANGUAGE C STABLE ROWS 1000;
COMMENT ON FUNCTION tablestore._query_page_keyed(text, text, text, integer, text, text) IS 'internal: query_page with each entity''s keys, for the HTTP gateway';

-- Stored access policies (Get/Set Table ACL, issue 22 item 8): begin
-- Every node keeps a table's policies with its copy of the table (so that
-- delete_table, run on every node, removes them): set replaces them on
-- every node, get reads every node's and answers them if they agree.
CREATE FUNCTION tablestore_router._set_table_acl(table_name text, acl jsonb)
	RETURNS SETOF jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON ALL;
	SELECT tablestore._routed_set_table_acl(table_name, acl) AS _set_table_acl; $$;
CREATE FUNCTION tablestore_router._get_table_acl(table_name text)
	RETURNS SETOF jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON ALL;
	SELECT tablestore._routed_get_table_acl(table_name) AS _get_table_acl; $$;
REVOKE EXECUTE ON FUNCTION tablestore_router._set_table_acl(text, jsonb), tablestore_router._get_table_acl(text) FROM PUBLIC;

CREATE FUNCTION tablestore.set_table_acl(table_name text, acl jsonb) RETURNS void
	AS 'MODULE_PATHNAME', 'router_set_table_acl' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.set_table_acl(text, jsonb) IS 'replace a table''s stored access policies on every node (at most 5; NULL or [] removes them)';
CREATE FUNCTION tablestore.get_table_acl(table_name text) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'router_get_table_acl' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore.get_table_acl(text) IS 'a table''s stored access policies as a JSON array (the same on every node)';
-- Stored access policies: end
