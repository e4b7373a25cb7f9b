-- tablestore 0.8.0 -> 0.9.0

\echo Use "ALTER EXTENSION tablestore UPDATE TO '0.9.0'" to load this file. \quit

-- Time to live (issue 26 part 2): begin
-- A table's time to live, in the catalog (so pg_dump keeps it): NULL off
-- (the default: TimeToLive is an ordinary property), -1 on without a
-- default, n > 0 the default in seconds.  An entity's own is its property
-- TimeToLive (Edm.Int32 > 0, or -1 for never).  src/ttl.c, doc/ttl.md.
ALTER TABLE tablestore.tables ADD COLUMN default_ttl pg_catalog.int4
	CHECK (default_ttl OPERATOR(pg_catalog.>) 0 OR default_ttl OPERATOR(pg_catalog.=) -1);

CREATE FUNCTION tablestore.set_table_ttl(table_name text, seconds integer) RETURNS void
	AS 'MODULE_PATHNAME', 'set_table_ttl' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.set_table_ttl(text, integer) IS 'set a table''s time to live: NULL off, -1 on without a default, n > 0 the default in seconds';

CREATE FUNCTION tablestore.get_table_ttl(table_name text) RETURNS integer
	AS 'MODULE_PATHNAME', 'get_table_ttl' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore.get_table_ttl(text) IS 'a table''s time to live in seconds (-1: on without a default; NULL: off)';
-- through a scale-out router: set on every node, read from partition 0's
CREATE FUNCTION tablestore._routed_set_table_ttl(table_name text, seconds integer) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore._routed_set_table_ttl(text, integer) IS 'internal: set_table_ttl for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_get_table_ttl(table_name text) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore._routed_get_table_ttl(text) IS 'internal: get_table_ttl for a scale-out router, with its error as data';

-- router: node only: each node sweeps its own entities
CREATE FUNCTION tablestore.sweep_expired(table_name text DEFAULT NULL, max_rows bigint DEFAULT NULL) RETURNS bigint
	AS 'MODULE_PATHNAME', 'sweep_expired' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.sweep_expired(text, bigint) IS 'delete the expired entities of a table (NULL: of every table with time to live the caller owns), at most max_rows; the rows deleted';

-- The progress of the sweeps (the worker's and sweep_expired's), one row
-- per table: its pass under way (position, NULL between passes), the
-- rows deleted, the last error.  Not dumped: it is state, not data.
CREATE TABLE tablestore.ttl_sweep_state (
	relation_name pg_catalog.text PRIMARY KEY,
	last_start pg_catalog.timestamptz,
	last_end pg_catalog.timestamptz,
	rows_deleted pg_catalog.int8 NOT NULL DEFAULT 0,
	total_deleted pg_catalog.int8 NOT NULL DEFAULT 0,
	position pg_catalog.tid,
	errors pg_catalog.int8 NOT NULL DEFAULT 0,
	last_error pg_catalog.text,
	last_error_at pg_catalog.timestamptz
);
COMMENT ON TABLE tablestore.ttl_sweep_state IS 'tablestore: the progress of the time to live sweeps (see view tablestore.ttl_sweeps)';

CREATE VIEW tablestore.ttl_sweeps AS
	SELECT t.table_name, t.default_ttl, s.last_start, s.last_end, s.rows_deleted, s.total_deleted,
		s.position AS current_position, s.errors, s.last_error, s.last_error_at
	FROM tablestore.tables t LEFT JOIN tablestore.ttl_sweep_state s
		ON s.relation_name OPERATOR(pg_catalog.=) t.relation_name
	WHERE t.default_ttl IS NOT NULL OR s.relation_name IS NOT NULL;
COMMENT ON VIEW tablestore.ttl_sweeps IS 'time to live: each table''s sweeps: last start and end, rows deleted in the last pass and in all, the position of a pass under way, errors';
GRANT SELECT ON tablestore.ttl_sweeps TO PUBLIC;

-- router: node only: a trigger of the catalog
CREATE FUNCTION tablestore._tables_deleted_ttl() RETURNS trigger
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	DELETE FROM tablestore.ttl_sweep_state s USING old_rows o
	WHERE s.relation_name OPERATOR(pg_catalog.=) o.relation_name;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION tablestore._tables_deleted_ttl() IS 'internal: removes the sweep progress of deleted tables';
REVOKE EXECUTE ON FUNCTION tablestore._tables_deleted_ttl() FROM PUBLIC;
CREATE TRIGGER tables_deleted_ttl AFTER DELETE ON tablestore.tables
	REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION tablestore._tables_deleted_ttl();
-- router: node only: a trigger of the catalog
CREATE FUNCTION tablestore._ttl_catalog_changed() RETURNS trigger
	AS 'MODULE_PATHNAME', 'ttl_catalog_changed' LANGUAGE C;
COMMENT ON FUNCTION tablestore._ttl_catalog_changed() IS 'internal: makes every session read a table''s changed time to live again';
REVOKE EXECUTE ON FUNCTION tablestore._ttl_catalog_changed() FROM PUBLIC;
CREATE TRIGGER tables_ttl_changed AFTER UPDATE OF default_ttl ON tablestore.tables
	FOR EACH ROW EXECUTE FUNCTION tablestore._ttl_catalog_changed();
-- Time to live: end

-- Time to live, ttl_sweeps shows only readable tables (attack F6 on issue 26 part 2): begin
CREATE OR REPLACE VIEW tablestore.ttl_sweeps AS
	SELECT t.table_name, t.default_ttl, s.last_start, s.last_end, s.rows_deleted, s.total_deleted,
		s.position AS current_position, s.errors, s.last_error, s.last_error_at
	FROM tablestore.tables t LEFT JOIN tablestore.ttl_sweep_state s
		ON s.relation_name OPERATOR(pg_catalog.=) t.relation_name
	WHERE (t.default_ttl IS NOT NULL OR s.relation_name IS NOT NULL)
		-- only the tables the caller may read (as get_table_ttl, list_tables)
		AND pg_catalog.has_table_privilege(pg_catalog.to_regclass('tablestore_data.' OPERATOR(pg_catalog.||)
			pg_catalog.quote_ident(t.relation_name)), 'SELECT');
-- Time to live, ttl_sweeps shows only readable tables: end
