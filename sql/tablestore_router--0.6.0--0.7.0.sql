-- tablestore_router 0.6.0 -> 0.7.0

\echo Use "ALTER EXTENSION tablestore_router UPDATE TO '0.7.0'" to load this file. \quit

-- ---- issue 25 item 4: one definition of the SQL API (sqlgen) ----
-- The API of schema tablestore is now copied by the build from
-- tablestore.sql (tools/router-api.pl), comments included: the functions
-- whose router comment was its own take the node's.
COMMENT ON FUNCTION tablestore._query_entities(text, text, text, integer) IS 'internal: the streaming scan of query_entities';
COMMENT ON FUNCTION tablestore._query_page_keyed(text, text, text, integer, text, text) IS 'internal: query_page with each entity''s keys, for the HTTP gateway and a scale-out router';
COMMENT ON FUNCTION tablestore.create_table(text) IS 'create a table';
COMMENT ON FUNCTION tablestore.delete_table(text) IS 'delete a table and all its entities';
COMMENT ON FUNCTION tablestore.execute_batch(text, jsonb) IS 'run up to 100 operations on one partition, all or nothing';
COMMENT ON FUNCTION tablestore.explain_query(text, text) IS 'how a $filter on a table is executed: access kind, key bounds, residual';
COMMENT ON FUNCTION tablestore.get_table_acl(text) IS 'a table''s stored access policies as a JSON array';
COMMENT ON FUNCTION tablestore.list_tables(text) IS 'the names of the tables matching a $filter on TableName, in ordinal order';
COMMENT ON FUNCTION tablestore.partition_hash(text) IS 'the stable hash of a PartitionKey that a scale-out router routes by';
COMMENT ON FUNCTION tablestore.set_table_acl(text, jsonb) IS 'replace a table''s stored access policies (at most 5; NULL or [] removes them)';
-- ---- end of issue 25 item 4 (sqlgen) ----
