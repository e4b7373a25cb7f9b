-- tablestore 0.8.0 -> 0.9.0

\echo Use "ALTER EXTENSION tablestore UPDATE TO '0.9.0'" to load this file. \quit

-- property indexes: begin (issue 26 part 1)
-- An index over the values of one property of one Edm type: a btree on the
-- entity relation over tablestore.property_index_key (src/propindex.c),
-- which the $filter planner uses when it is the cheaper path.  The catalog
-- names each table's indexes; its rows are dumped as extension
-- configuration (the indexes themselves with their entity relations), and
-- go with their table (the trigger on tablestore.tables) and with their
-- index (the event trigger below, for an index dropped with plain SQL).
CREATE TABLE tablestore.property_indexes (
	relation_name pg_catalog.text NOT NULL,
	property pg_catalog.text NOT NULL,
	edm_type pg_catalog.text NOT NULL,
	index_name pg_catalog.text NOT NULL,
	created_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
	PRIMARY KEY (relation_name, property, edm_type)
);
COMMENT ON TABLE tablestore.property_indexes IS 'tablestore: the property indexes of each table';
GRANT SELECT ON tablestore.property_indexes TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('tablestore.property_indexes', '');

-- router: node only: the key function of a node's indexes
CREATE FUNCTION tablestore.property_index_key(props jsonb, property text, edm_type text) RETURNS bytea
	AS 'MODULE_PATHNAME', 'property_index_key' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tablestore.property_index_key(jsonb, text, text) IS 'the key of a property in a property index of an Edm type (NULL: not in it)';

-- router: node only: a check of a node's index
CREATE FUNCTION tablestore._property_index_valid(index oid, relation_name text, property text, edm_type text) RETURNS boolean
	AS 'MODULE_PATHNAME', 'property_index_valid' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION tablestore._property_index_valid(oid, text, text, text) IS 'internal: whether an index is the property index a catalog row names';

CREATE FUNCTION tablestore.create_property_index(table_name text, property text, edm_type text) RETURNS text
	AS 'MODULE_PATHNAME', 'create_property_index' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.create_property_index(text, text, text) IS 'create an index over one property of one Edm type of a table (the table''s owner); returns its name';

CREATE FUNCTION tablestore.drop_property_index(table_name text, property text, edm_type text,
											   if_exists boolean DEFAULT false) RETURNS boolean
	AS 'MODULE_PATHNAME', 'drop_property_index' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.drop_property_index(text, text, text, boolean) IS 'drop a table''s property index (the table''s owner); false if there was none and if_exists';

-- router: own: the router's lists every node's, one row per index
CREATE FUNCTION tablestore.list_property_indexes(table_name text DEFAULT NULL)
	RETURNS TABLE (table_name text, property text, edm_type text, index_name text, size bigint,
				   valid boolean, created_at timestamptz)
	LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
AS $$
	SELECT COALESCE(t.table_name, p.relation_name), p.property, p.edm_type, p.index_name,
		pg_relation_size(c.oid),
		COALESCE(tablestore._property_index_valid(c.oid, p.relation_name, p.property, p.edm_type), false),
		p.created_at
	FROM tablestore.property_indexes p
	LEFT JOIN tablestore.tables t ON t.relation_name = p.relation_name
	LEFT JOIN pg_class c ON c.relname = p.index_name AND c.relnamespace = 'tablestore_data'::regnamespace
		AND c.relkind = 'i'
	WHERE $1 IS NULL OR p.relation_name = lower($1)
	ORDER BY COALESCE(t.table_name, p.relation_name) COLLATE "C", p.property COLLATE "C", p.edm_type COLLATE "C"
$$;
COMMENT ON FUNCTION tablestore.list_property_indexes(text) IS 'the property indexes of a table (NULL: of every table): index, size, whether queries can use it';

-- router: node only: the router's create_property_index runs it on every node
CREATE FUNCTION tablestore.create_property_index_if_absent(table_name text, property text, edm_type text) RETURNS text
	LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog AS $$
BEGIN
	RETURN tablestore.create_property_index(table_name, property, edm_type);
EXCEPTION WHEN duplicate_object THEN
	RETURN NULL;
END $$;
COMMENT ON FUNCTION tablestore.create_property_index_if_absent(text, text, text) IS 'create a property index unless it exists; its name if it was created';

-- Property indexes through a scale-out router: the calls every node
-- answers, with their errors as data.
CREATE FUNCTION tablestore._routed_create_property_index(table_name text, property text, edm_type text) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore._routed_create_property_index(text, text, text) IS 'internal: create_property_index for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_create_property_index_if_absent(table_name text, property text, edm_type text) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore._routed_create_property_index_if_absent(text, text, text) IS 'internal: create_property_index_if_absent for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_drop_property_index(table_name text, property text, edm_type text, if_exists boolean DEFAULT false) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore._routed_drop_property_index(text, text, text, boolean) IS 'internal: drop_property_index for a scale-out router, with its error as data';

-- router: node only: a trigger of the catalog
CREATE FUNCTION tablestore._property_indexes_tables_deleted() RETURNS trigger
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	DELETE FROM tablestore.property_indexes p USING old_rows o
	WHERE p.relation_name OPERATOR(pg_catalog.=) o.relation_name;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION tablestore._property_indexes_tables_deleted() IS 'internal: removes the property indexes of deleted tables from their catalog';
REVOKE EXECUTE ON FUNCTION tablestore._property_indexes_tables_deleted() FROM PUBLIC;
CREATE TRIGGER tables_deleted_property_indexes AFTER DELETE ON tablestore.tables
	REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
	EXECUTE FUNCTION tablestore._property_indexes_tables_deleted();

-- router: node only: an event trigger
CREATE FUNCTION tablestore._property_index_sql_drop() RETURNS event_trigger
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF pg_catalog.to_regclass('tablestore.property_indexes') IS NULL THEN
		RETURN;					-- the extension itself is being dropped
	END IF;
	DELETE FROM tablestore.property_indexes p
	USING pg_event_trigger_dropped_objects() d
	WHERE d.classid OPERATOR(pg_catalog.=) 'pg_class'::regclass AND d.objsubid OPERATOR(pg_catalog.=) 0
		AND d.object_type OPERATOR(pg_catalog.=) 'index'
		AND d.schema_name OPERATOR(pg_catalog.=) 'tablestore_data'
		AND p.index_name OPERATOR(pg_catalog.=) d.object_name;
END
$$;
COMMENT ON FUNCTION tablestore._property_index_sql_drop() IS 'internal: event trigger removing the catalog row of a dropped property index';
CREATE EVENT TRIGGER tablestore_property_index_sql_drop ON sql_drop
	EXECUTE FUNCTION tablestore._property_index_sql_drop();
-- property indexes: end
