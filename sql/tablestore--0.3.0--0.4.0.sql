-- tablestore 0.3.0 -> 0.4.0: the partition hash and the idempotent table
-- functions a scale-out router (extension tablestore_router) relies on.

\echo Use "ALTER EXTENSION tablestore UPDATE TO '0.4.0'" to load this file. \quit

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
