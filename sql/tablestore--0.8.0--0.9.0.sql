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

CREATE VIEW tablestore.ttl_sweeps WITH (security_barrier) AS
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

-- read-access secondary (issue 26 part 3): begin
-- replication_status: this server as the read-access secondary of its
-- primary, for Get Service Stats (the gateway's --secondary-db) and for
-- anyone who asks a standby by SQL.
--   status: 'live' (its WAL receiver streams from the primary and
--     last_sync_time is known), 'bootstrap' (a receiver is connected but
--     not streaming, e.g. switching to the primary's new timeline, or it
--     streams but since this server started it has not replayed far
--     enough to know a last_sync_time: the secondary is being brought up
--     to date), 'unavailable' (no WAL receiver: the primary cannot be
--     reached, or this server is no standby, e.g. a promoted one).
--   last_sync_time: every transaction the primary committed before it is
--     visible here.  When the replay has reached the end of WAL that the
--     primary reported in its last message (pg_stat_wal_receiver's
--     latest_end_lsn, overwritten by every message), it is that message's
--     send time (last_msg_send_time; while the primary is idle its
--     keepalives advance it); else (behind, or the replay paused) the
--     commit time of the last transaction replayed
--     (pg_last_xact_replay_timestamp(), which stops while the replay is
--     paused); NULL when neither is known or on a server that is no
--     standby.  Both times are the primary's clock.  A WAL receiver that
--     has just started sets last_msg_send_time (and the receipt time) to
--     its own start and keeps the previous receiver's latest_end_lsn until
--     the primary's first message: until then (send and receipt times
--     equal) the message time is not used.
--   replay_lsn, primary_lsn (latest_end_lsn), replay_paused: what it was
--     computed from.
-- SECURITY DEFINER: pg_stat_wal_receiver shows its columns to members of
-- pg_read_all_stats only; this shows these few to any role, so the
-- gateway's roles need no grant.
-- router: as is: the router's own server's replication (doc/scale-out.md)
CREATE FUNCTION tablestore.replication_status(OUT status text, OUT last_sync_time timestamptz,
	OUT replay_lsn pg_lsn, OUT primary_lsn pg_lsn, OUT replay_paused boolean)
	LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	rcv_status text;
	rcv_sent timestamptz;
	rcv_received timestamptz;
BEGIN
	IF NOT pg_is_in_recovery() THEN
		status := 'unavailable';
		RETURN;
	END IF;
	-- the receiver first: the replay only advances, so a replay position
	-- read after it is at least where it was when the primary's was sent
	SELECT r.status, r.latest_end_lsn, r.last_msg_send_time, r.last_msg_receipt_time
		INTO rcv_status, primary_lsn, rcv_sent, rcv_received
		FROM pg_stat_wal_receiver r;
	replay_lsn := pg_last_wal_replay_lsn();
	replay_paused := pg_get_wal_replay_pause_state() <> 'not paused';
	last_sync_time := pg_last_xact_replay_timestamp();
	IF replay_lsn >= primary_lsn AND rcv_sent <> rcv_received THEN
		last_sync_time := greatest(last_sync_time, rcv_sent);
	END IF;
	status := CASE WHEN rcv_status IS NULL THEN 'unavailable'
		WHEN rcv_status = 'streaming' AND last_sync_time IS NOT NULL THEN 'live'
		ELSE 'bootstrap' END;
END $$;
COMMENT ON FUNCTION tablestore.replication_status() IS 'this standby''s replication status and last sync time, as the read-access secondary';
-- read-access secondary: end

-- Time to live, ttl_sweeps shows only readable tables (attack F6 on issue 26 part 2): begin
CREATE OR REPLACE VIEW tablestore.ttl_sweeps WITH (security_barrier) AS
	SELECT t.table_name, t.default_ttl, s.last_start, s.last_end, s.rows_deleted, s.total_deleted,
		s.position AS current_position, s.errors, s.last_error, s.last_error_at
	FROM tablestore.tables t LEFT JOIN tablestore.ttl_sweep_state s
		ON s.relation_name OPERATOR(pg_catalog.=) t.relation_name
	WHERE (t.default_ttl IS NOT NULL OR s.relation_name IS NOT NULL)
		-- only the tables the caller may read (as get_table_ttl, list_tables)
		AND pg_catalog.has_table_privilege(pg_catalog.to_regclass('tablestore_data.' OPERATOR(pg_catalog.||)
			pg_catalog.quote_ident(t.relation_name)), 'SELECT');
-- Time to live, ttl_sweeps shows only readable tables: end
