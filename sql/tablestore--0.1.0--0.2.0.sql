-- tablestore 0.1.0 -> 0.2.0: queries.
-- Frozen once 0.2.0 is released; never edit it afterwards.

\echo Use "ALTER EXTENSION tablestore UPDATE TO '0.2.0'" to load this file. \quit

-- list_tables takes a $filter on TableName
DROP FUNCTION tablestore.list_tables();
CREATE FUNCTION tablestore.list_tables(filter text DEFAULT NULL) RETURNS SETOF text
	AS 'MODULE_PATHNAME', 'list_tables' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore.list_tables(text) IS 'the names of the tables matching a $filter on TableName, in ordinal order';

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

