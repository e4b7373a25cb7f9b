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
