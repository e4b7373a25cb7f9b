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
