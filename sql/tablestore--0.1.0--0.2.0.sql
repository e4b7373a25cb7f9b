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

-- Every entity relation is now indexed by tskey alone: build its unique
-- tskey index, then drop the btree primary key (entity inserts no longer
-- use ON CONFLICT, which PostgreSQL 15 allows only with btree indexes).
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT c.oid::pg_catalog.regclass AS rel, con.conname
		FROM tablestore.tables t
		JOIN pg_catalog.pg_class c ON c.relname OPERATOR(pg_catalog.=) t.relation_name
		JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
			AND n.nspname OPERATOR(pg_catalog.=) 'tablestore_data'
		LEFT JOIN pg_catalog.pg_constraint con ON con.conrelid OPERATOR(pg_catalog.=) c.oid
			AND con.contype OPERATOR(pg_catalog.=) 'p'
	LOOP
		EXECUTE pg_catalog.format('CREATE UNIQUE INDEX ON %s USING tskey (pk, rk)', r.rel);
		IF r.conname IS NOT NULL THEN
			EXECUTE pg_catalog.format('ALTER TABLE %s DROP CONSTRAINT %I', r.rel, r.conname);
		END IF;
	END LOOP;
END
$$;
