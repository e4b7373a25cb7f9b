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
