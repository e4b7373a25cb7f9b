-- tablestore_router 0.8.0 -> 0.9.0

\echo Use "ALTER EXTENSION tablestore_router UPDATE TO '0.9.0'" to load this file. \quit

-- Time to live (issue 26 part 2): begin
-- Every node keeps a table's time to live with its copy of the table and
-- sweeps its own entities; set sets it on every node under the table's name
-- lock, get reads the node of partition 0 (src/router/ttl.c).
CREATE FUNCTION tablestore_router._set_table_ttl(table_name text, seconds integer)
	RETURNS SETOF jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON ALL;
	SELECT tablestore._routed_set_table_ttl(table_name, seconds) AS _set_table_ttl; $$;
CREATE FUNCTION tablestore_router._get_table_ttl(table_name text)
	RETURNS SETOF jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON 0;
	SELECT tablestore._routed_get_table_ttl(table_name) AS _get_table_ttl; $$;
REVOKE EXECUTE ON FUNCTION tablestore_router._set_table_ttl(text, integer), tablestore_router._get_table_ttl(text) FROM PUBLIC;
CREATE FUNCTION tablestore.set_table_ttl(table_name text, seconds integer) RETURNS void
	AS 'MODULE_PATHNAME', 'router_set_table_ttl' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.set_table_ttl(text, integer) IS 'set a table''s time to live: NULL off, -1 on without a default, n > 0 the default in seconds';
CREATE FUNCTION tablestore.get_table_ttl(table_name text) RETURNS integer
	AS 'MODULE_PATHNAME', 'router_get_table_ttl' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore.get_table_ttl(text) IS 'a table''s time to live in seconds (-1: on without a default; NULL: off)';
-- Time to live: end

-- property indexes: begin (issue 26 part 1)
-- Every node keeps the property indexes of its copy of a table, and every
-- node's queries use its own.  create_property_index and
-- drop_property_index run on every node (src/router/propindex.c), and
-- list_property_indexes lists every node's: one row per index, its size
-- the sum of the nodes', valid when every node has it valid.
CREATE FUNCTION tablestore_router._create_property_index(table_name text, property text, edm_type text)
	RETURNS SETOF jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON ALL;
	SELECT tablestore._routed_create_property_index_if_absent(table_name, property, edm_type) AS _create_property_index; $$;
CREATE FUNCTION tablestore_router._create_property_index_on(part integer, table_name text, property text, edm_type text)
	RETURNS jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON part;
	SELECT tablestore._routed_create_property_index(table_name, property, edm_type) AS _create_property_index_on; $$;
CREATE FUNCTION tablestore_router._drop_property_index(table_name text, property text, edm_type text, if_exists boolean)
	RETURNS SETOF jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON ALL;
	SELECT tablestore._routed_drop_property_index(table_name, property, edm_type, if_exists) AS _drop_property_index; $$;
CREATE FUNCTION tablestore_router._drop_property_index_on(part integer, table_name text, property text, edm_type text, if_exists boolean)
	RETURNS jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON part;
	SELECT tablestore._routed_drop_property_index(table_name, property, edm_type, if_exists) AS _drop_property_index_on; $$;
REVOKE EXECUTE ON FUNCTION tablestore_router._create_property_index(text, text, text),
	tablestore_router._create_property_index_on(integer, text, text, text),
	tablestore_router._drop_property_index(text, text, text, boolean),
	tablestore_router._drop_property_index_on(integer, text, text, text, boolean) FROM PUBLIC;
CREATE FUNCTION tablestore_router._list_property_indexes(table_name text)
	RETURNS TABLE (table_name text, property text, edm_type text, index_name text, size bigint,
				   valid boolean, created_at timestamptz)
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON ALL;
	SELECT * FROM tablestore.list_property_indexes(table_name); $$;
REVOKE EXECUTE ON FUNCTION tablestore_router._list_property_indexes(text) FROM PUBLIC;
-- every node's rows through a C entry point, so that a node's refusal of
-- the caller's connection is 42501 and a lost node ServerBusy, as in every
-- routed call (src/router/propindex.c)
CREATE FUNCTION tablestore_router._property_index_rows(table_name text)
	RETURNS TABLE (table_name text, property text, edm_type text, index_name text, size bigint,
				   valid boolean, created_at timestamptz)
	AS 'MODULE_PATHNAME', 'router_property_index_rows' LANGUAGE C VOLATILE;
CREATE FUNCTION tablestore.list_property_indexes(table_name text DEFAULT NULL)
	RETURNS TABLE (table_name text, property text, edm_type text, index_name text, size bigint,
				   valid boolean, created_at timestamptz)
	LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
AS $$
	SELECT l.table_name, l.property, l.edm_type, min(l.index_name), sum(l.size)::bigint,
		bool_and(l.valid) AND count(*) >= (SELECT count(DISTINCT p.node) FROM tablestore_router.partitions() p),
		min(l.created_at)
	FROM tablestore_router._property_index_rows($1) l
	GROUP BY l.table_name, l.property, l.edm_type
	ORDER BY l.table_name COLLATE "C", l.property COLLATE "C", l.edm_type COLLATE "C"
$$;
COMMENT ON FUNCTION tablestore.list_property_indexes(text) IS 'the property indexes of a table (NULL: of every table): index, size, whether queries can use it';
-- the API's functions, as the build copies them into the install script
CREATE FUNCTION tablestore.create_property_index(table_name text, property text, edm_type text) RETURNS text
	AS 'MODULE_PATHNAME', 'router_create_property_index' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.create_property_index(text, text, text) IS 'create an index over one property of one Edm type of a table (the table''s owner); returns its name';
CREATE FUNCTION tablestore.drop_property_index(table_name text, property text, edm_type text,
											   if_exists boolean DEFAULT false) RETURNS boolean
	AS 'MODULE_PATHNAME', 'router_drop_property_index' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.drop_property_index(text, text, text, boolean) IS 'drop a table''s property index (the table''s owner); false if there was none and if_exists';
-- property indexes: end

-- read-access secondary (issue 26 part 3): begin
-- replication_status: as in tablestore.sql ("router: as is"): the router's own
-- server's replication status (doc/scale-out.md says what a standby of the router gives)
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

-- Time to live, a move copies it (attack F2 on issue 26 part 2): begin
-- move_partition gives the target the table's time to live as it gives it
-- its access policies.  (Property indexes, branch pindex, must be added to
-- this same function.)
CREATE OR REPLACE FUNCTION tablestore_router._move_table_sql(rel text) RETURNS text
	LANGUAGE sql AS $$
SELECT format($q$
SELECT string_agg(s, E';\n') FROM (
	SELECT format('ALTER TABLE tablestore_data.%%I OWNER TO %%I', c.relname, pg_get_userbyid(c.relowner)) AS s
	FROM pg_class c WHERE c.oid = %1$L::regclass
	UNION ALL
	SELECT format('GRANT %%s ON tablestore_data.%%I TO %%s%%s', a.privilege_type, c.relname,
		CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END,
		CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)
	FROM pg_class c, aclexplode(c.relacl) a
	WHERE c.oid = %1$L::regclass AND a.grantee <> c.relowner
	UNION ALL
	SELECT format('ALTER TABLE tablestore_data.%%I %%s ROW LEVEL SECURITY, %%s ROW LEVEL SECURITY', c.relname,
		CASE WHEN c.relrowsecurity THEN 'ENABLE' ELSE 'DISABLE' END,
		CASE WHEN c.relforcerowsecurity THEN 'FORCE' ELSE 'NO FORCE' END)
	FROM pg_class c WHERE c.oid = %1$L::regclass
	UNION ALL
	SELECT format('CREATE POLICY %%I ON tablestore_data.%%I AS %%s FOR %%s TO %%s%%s%%s', p.policyname, p.tablename,
		p.permissive, p.cmd,
		(SELECT string_agg(CASE WHEN r = 'public' THEN 'PUBLIC' ELSE quote_ident(r) END, ', ') FROM unnest(p.roles) r),
		' USING (' || p.qual || ')', ' WITH CHECK (' || p.with_check || ')')
	FROM pg_policies p WHERE p.schemaname = 'tablestore_data' AND p.tablename = %2$L
	UNION ALL
	SELECT format('COMMENT ON TABLE tablestore_data.%%I IS %%L', c.relname, obj_description(c.oid, 'pg_class'))
	FROM pg_class c WHERE c.oid = %1$L::regclass
	UNION ALL
	-- the table's stored access policies, which every node keeps
	-- (a DO block: dblink_exec runs commands, not queries)
	SELECT format('DO %%L', format('BEGIN PERFORM tablestore.set_table_acl(%%L, %%L::jsonb); END', t.table_name, a.acl))
	FROM tablestore.table_acl a JOIN tablestore.tables t ON t.relation_name = a.relation_name
	WHERE a.relation_name = %2$L
	UNION ALL
	-- the table's time to live (off too: the target may keep an older
	-- one); read through to_jsonb so that a source without the column
	-- (before 0.9.0) gives nothing.
	-- EVERY PER-TABLE SETTING OF THE NODE'S CATALOG (tablestore.tables and
	-- its satellites: time to live, property indexes, ...) MUST BE COPIED
	-- HERE, or the moved entities lose it on the target.
	SELECT format('DO %%L', format('BEGIN PERFORM tablestore.set_table_ttl(%%L, %%s); END', t.table_name,
		coalesce(to_jsonb(t) ->> 'default_ttl', 'NULL')))
	FROM tablestore.tables t
	WHERE t.relation_name = %2$L AND to_jsonb(t) ? 'default_ttl'
) x$q$, 'tablestore_data.' || quote_ident(rel), rel);
$$;
-- Time to live, a move copies it: end
