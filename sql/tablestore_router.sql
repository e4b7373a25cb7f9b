-- tablestore_router: one tablestore across many PostgreSQL servers.
-- This is the editable install script; the build makes
-- tablestore_router--<version>.sql of it with tools/router-api.pl, which
-- puts parts of tablestore.sql at its three "-- @...@" marks: the key
-- type, the API and the service properties are defined once, there.
--
-- Installed in a router database, it offers in schema tablestore the SQL
-- API of the tablestore extension, with the same signatures, results,
-- errors and privileges, and runs each call on the shards (ordinary
-- tablestore databases) through PL/Proxy: a stable hash of the PartitionKey
-- picks one of the cluster's partitions, and the foreign server
-- tablestore_cluster maps partitions onto shards.  See README "Scale-out".

\echo Use "CREATE EXTENSION tablestore_router" to load this file. \quit

CREATE SCHEMA tablestore_router;
COMMENT ON SCHEMA tablestore_router IS 'tablestore_router: the cluster''s configuration and the PL/Proxy calls behind schema tablestore';
GRANT USAGE ON SCHEMA tablestore TO PUBLIC;
GRANT USAGE ON SCHEMA tablestore_router TO PUBLIC;

-- The key type of extension tablestore, so that a query on the router can
-- order keys as the service does (ORDER BY key::tablestore.key).  The
-- build puts here the part of tablestore.sql between its "key type" marks.
-- @key type@

-- Configuration

-- _check_nodes: configure()'s check of its nodes (C): each read with
-- libpq's parser, allowed only the keywords that say where a node is (a
-- node string names WHERE, the calling role decides WHO: no user,
-- password, passfile, service, client certificate or key, options, and
-- no value with "user=" in it), naming a database, no node twice; the
-- result is the nodes in their canonical form.
CREATE FUNCTION tablestore_router._check_nodes(nodes text[]) RETURNS text[]
	AS 'MODULE_PATHNAME', 'router_check_nodes' LANGUAGE C STABLE STRICT;

-- node_string: a node string as the router stores it: the text of the
-- cluster's node at the same address (host, port, database) if it has
-- one, else its canonical form.  A mover sets a partition to it.
CREATE FUNCTION tablestore_router.node_string(node text) RETURNS text
	AS 'MODULE_PATHNAME', 'router_node_string' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION tablestore_router.node_string(text) IS 'a node''s connection string as the partition map holds it (checked; the existing spelling of a node)';

-- The locks of a mover (tools/cluster-move.sh): the partition's, then that
-- of all partitions, held by the session until unlock_partition_for_move.
-- Routed calls hold a share lock of the same kind while they run; these
-- locks are of a class that no SQL function reaches.  Superuser only.
CREATE FUNCTION tablestore_router.lock_partition_for_move(partition integer) RETURNS void
	AS 'MODULE_PATHNAME', 'router_lock_partition_for_move' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION tablestore_router.lock_partition_for_move(integer) IS 'a mover''s locks on a partition and on all partitions (session level; waits at most lock_timeout)';
CREATE FUNCTION tablestore_router.unlock_partition_for_move(partition integer) RETURNS boolean
	AS 'MODULE_PATHNAME', 'router_unlock_partition_for_move' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION tablestore_router.unlock_partition_for_move(integer) IS 'release a mover''s locks on a partition';

-- configure: (re)define the cluster.  Partition i (of partitions, a power
-- of two) goes to nodes[i % n]; each node is a libpq connection string of
-- a tablestore database, which says where the node is (_check_nodes).
-- The user mapping for PUBLIC (without a user name) makes every call run
-- on the shards as the calling role.  Run again, it replaces the partition
-- map and keeps the server's other options and user mappings.
CREATE FUNCTION tablestore_router.configure(nodes text[], partitions integer DEFAULT 16) RETURNS void
	LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
	opts text := '';
	adds text := '';
	n integer;
BEGIN
	IF array_ndims(nodes) > 1 THEN
		RAISE EXCEPTION 'nodes must be a one-dimensional array of connection strings' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- the nodes in order, subscripted from 1 whatever the caller's array
	-- was (a slice always is)
	nodes := nodes[array_lower(nodes, 1):array_upper(nodes, 1)];
	n := coalesce(array_length(nodes, 1), 0);
	IF n = 0 OR array_position(nodes, NULL) IS NOT NULL THEN
		RAISE EXCEPTION 'a cluster needs at least one node, none of them NULL' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF partitions IS NULL OR partitions < n OR partitions > 256 OR partitions & (partitions - 1) <> 0 THEN
		RAISE EXCEPTION 'partitions must be a power of two between the number of nodes and 256' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	nodes := tablestore_router._check_nodes(nodes);
	FOR i IN 0 .. partitions - 1 LOOP
		opts := opts || CASE WHEN i > 0 THEN ', ' ELSE '' END
			|| format('p%s %L', i, nodes[1 + i % n]);
		adds := adds || CASE WHEN i > 0 THEN ', ' ELSE '' END
			|| format('ADD p%s %L', i, nodes[1 + i % n]);
	END LOOP;
	IF NOT EXISTS (SELECT FROM pg_foreign_server WHERE srvname = 'tablestore_cluster') THEN
		EXECUTE 'CREATE SERVER tablestore_cluster FOREIGN DATA WRAPPER plproxy OPTIONS ('
			|| opts || ')';
	ELSE
		-- a new partition map in one ALTER (PL/Proxy validates the result):
		-- the server's other options and its user mappings, which may carry
		-- passwords, stay as they are
		EXECUTE 'ALTER SERVER tablestore_cluster OPTIONS ('
			|| concat_ws(', ', (SELECT string_agg(format('DROP %I', split_part(o, '=', 1)), ', ')
					FROM pg_foreign_server s, unnest(s.srvoptions) o
					WHERE s.srvname = 'tablestore_cluster' AND split_part(o, '=', 1) ~ '^p[0-9]+$'),
				adds)
			|| ')';
	END IF;
	IF NOT EXISTS (SELECT FROM pg_user_mappings WHERE srvname = 'tablestore_cluster' AND umuser = 0) THEN
		CREATE USER MAPPING FOR PUBLIC SERVER tablestore_cluster;
	END IF;
	GRANT USAGE ON FOREIGN SERVER tablestore_cluster TO PUBLIC;
END $$;
REVOKE ALL ON FUNCTION tablestore_router.configure(text[], integer) FROM PUBLIC;
COMMENT ON FUNCTION tablestore_router.configure(text[], integer) IS 'define the cluster: partitions spread over the nodes'' connection strings';

-- The partitions and the node each is on, from the foreign server.
CREATE FUNCTION tablestore_router.partitions(OUT partition integer, OUT node text) RETURNS SETOF record
	LANGUAGE sql STABLE SET search_path = pg_catalog
	BEGIN ATOMIC
		SELECT substr(o.opt, 2, strpos(o.opt, '=') - 2)::integer,
			substr(o.opt, strpos(o.opt, '=') + 1)
		FROM pg_catalog.pg_foreign_server s, unnest(s.srvoptions) o(opt)
		WHERE s.srvname = 'tablestore_cluster' AND o.opt ~ '^p[0-9]+='
		ORDER BY 1;
	END;
COMMENT ON FUNCTION tablestore_router.partitions() IS 'the cluster''s partitions and the connection string of the node that holds each';

CREATE FUNCTION tablestore_router.partition_of(partition_key text) RETURNS integer
	AS 'MODULE_PATHNAME', 'router_partition_of' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION tablestore_router.partition_of(text) IS 'the partition a PartitionKey is routed to';

-- The PL/Proxy calls.  Each takes the partition first (RUN ON it) and runs
-- the shard's function of the same name through its _routed_ form, which
-- answers the function's error as data so that PL/Proxy keeps its
-- connection (a one-value call: jsonb, {"#error": [...]} for an error; a set
-- call: a last column error); the C functions of schema tablestore below
-- pick the partition, wait for a partition that is being moved, and raise
-- the shard's errors as the shard raised them.

CREATE FUNCTION tablestore_router._create_table(table_name text)
	RETURNS SETOF jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON ALL;
	SELECT tablestore._routed_create_table_if_absent(table_name) AS _create_table; $$;
CREATE FUNCTION tablestore_router._create_table_on(part integer, table_name text)
	RETURNS jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON part;
	SELECT tablestore._routed_create_table(table_name) AS _create_table_on; $$;
CREATE FUNCTION tablestore_router._delete_table(table_name text)
	RETURNS SETOF jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON ALL;
	SELECT tablestore._routed_delete_table_if_exists(table_name) AS _delete_table; $$;
CREATE FUNCTION tablestore_router._delete_table_on(part integer, table_name text)
	RETURNS jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON part;
	SELECT tablestore._routed_delete_table(table_name) AS _delete_table_on; $$;
CREATE FUNCTION tablestore_router._list_tables(filter text)
	RETURNS TABLE (result text, error text[])
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON ALL;
	SELECT * FROM tablestore._routed_list_tables(filter); $$;

CREATE FUNCTION tablestore_router._insert_entity(part integer, table_name text, entity jsonb)
	RETURNS jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON part;
	SELECT tablestore._routed_insert_entity(table_name, entity) AS _insert_entity; $$;
CREATE FUNCTION tablestore_router._update_entity(part integer, table_name text, entity jsonb, if_match text)
	RETURNS jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON part;
	SELECT tablestore._routed_update_entity(table_name, entity, if_match) AS _update_entity; $$;
CREATE FUNCTION tablestore_router._merge_entity(part integer, table_name text, entity jsonb, if_match text)
	RETURNS jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON part;
	SELECT tablestore._routed_merge_entity(table_name, entity, if_match) AS _merge_entity; $$;
CREATE FUNCTION tablestore_router._insert_or_replace_entity(part integer, table_name text, entity jsonb)
	RETURNS jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON part;
	SELECT tablestore._routed_insert_or_replace_entity(table_name, entity) AS _insert_or_replace_entity; $$;
CREATE FUNCTION tablestore_router._insert_or_merge_entity(part integer, table_name text, entity jsonb)
	RETURNS jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON part;
	SELECT tablestore._routed_insert_or_merge_entity(table_name, entity) AS _insert_or_merge_entity; $$;
CREATE FUNCTION tablestore_router._delete_entity(part integer, table_name text, partition_key text, row_key text, if_match text)
	RETURNS jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON part;
	SELECT tablestore._routed_delete_entity(table_name, partition_key, row_key, if_match) AS _delete_entity; $$;
CREATE FUNCTION tablestore_router._get_entity(part integer, table_name text, partition_key text, row_key text, select_list text)
	RETURNS jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON part;
	SELECT tablestore._routed_get_entity(table_name, partition_key, row_key, select_list) AS _get_entity; $$;
CREATE FUNCTION tablestore_router._execute_batch(part integer, table_name text, operations jsonb)
	RETURNS TABLE (result jsonb, error text[])
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON part;
	SELECT * FROM tablestore._routed_execute_batch(table_name, operations); $$;
CREATE FUNCTION tablestore_router._explain_query(part integer, table_name text, filter text)
	RETURNS jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON part;
	SELECT tablestore._routed_explain_query(table_name, filter) AS _explain_query; $$;
CREATE FUNCTION tablestore_router._query_entities_page(part integer, table_name text, filter text, select_list text,
		top integer, next_pk text, next_rk text)
	RETURNS TABLE (entities jsonb, next_partition_key text, next_row_key text, error text[])
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON part;
	SELECT * FROM tablestore._routed_query_entities_page(table_name, filter, select_list, top, next_pk, next_rk); $$;
CREATE FUNCTION tablestore_router._query_entities_page_json(part integer, table_name text, filter text, select_list text,
		top integer, next_pk text, next_rk text)
	RETURNS TABLE (entities json, next_partition_key text, next_row_key text, error text[])
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON part;
	SELECT * FROM tablestore._routed_query_entities_page_json(table_name, filter, select_list, top, next_pk, next_rk); $$;
-- a page as rows, from one partition's node or from every node, with each
-- entity's keys (the router merges pages in key order); the entity as
-- text, which the router takes as it is (json would be parsed again)
CREATE FUNCTION tablestore_router._query_page(part integer, table_name text, filter text, select_list text,
		top integer, next_pk text, next_rk text)
	RETURNS TABLE (entity text, next_partition_key text, next_row_key text, pk text, rk text, error text[])
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON part;
	SELECT * FROM tablestore._routed_query_page(table_name, filter, select_list, top, next_pk, next_rk); $$;
CREATE FUNCTION tablestore_router._query_page_all(table_name text, filter text, select_list text,
		top integer, next_pk text, next_rk text)
	RETURNS TABLE (entity text, next_partition_key text, next_row_key text, pk text, rk text, error text[])
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON ALL;
	SELECT * FROM tablestore._routed_query_page(table_name, filter, select_list, top, next_pk, next_rk); $$;
-- a streaming query's arguments, checked by the shard's own query_entities
-- for the error one node gives
CREATE FUNCTION tablestore_router._query_check(part integer, table_name text, filter text, select_list text, top integer)
	RETURNS TABLE (result bigint, error text[])
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON part;
	SELECT * FROM tablestore._routed_query_check(table_name, filter, select_list, top); $$;

-- Only the functions of schema tablestore call these, with the partition
-- they computed (through fmgr, which needs no EXECUTE privilege): a caller
-- must not send an entity to a partition that is not its own.
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA tablestore_router FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tablestore_router.partitions() TO PUBLIC;
GRANT EXECUTE ON FUNCTION tablestore_router.partition_of(text) TO PUBLIC;
GRANT EXECUTE ON FUNCTION tablestore_router.node_string(text) TO PUBLIC;

-- The API: the functions of schema tablestore of extension tablestore,
-- copied here by the build from tablestore.sql (tools/router-api.pl), with
-- their comments and privileges: each C function calls the router's
-- router_<name> (src/router.c), which routes it, unless the node's script
-- says otherwise in a "-- router:" line before it (a function that runs in
-- the router itself, one the router declares itself, the node's
-- internals).  A function added to the node's API is thus on the router
-- too; the build fails if the router's library lacks its C function
-- (tools/check-sql-symbols.sh).
-- @api@

-- Stored access policies (Get/Set Table ACL, issue 22 item 8): begin
-- Every node keeps a table's policies with its copy of the table (so that
-- delete_table, run on every node, removes them): set replaces them on
-- every node under the table's name lock, get reads the node of partition
-- 0 under the same lock in share mode (the nodes agree when no set is in
-- flight; one remote call, not one per partition, per SAS with si).
CREATE FUNCTION tablestore_router._set_table_acl(table_name text, acl jsonb)
	RETURNS SETOF jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON ALL;
	SELECT tablestore._routed_set_table_acl(table_name, acl) AS _set_table_acl; $$;
CREATE FUNCTION tablestore_router._get_table_acl(table_name text)
	RETURNS SETOF jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON 0;
	SELECT tablestore._routed_get_table_acl(table_name) AS _get_table_acl; $$;
REVOKE EXECUTE ON FUNCTION tablestore_router._set_table_acl(text, jsonb), tablestore_router._get_table_acl(text) FROM PUBLIC;
-- Stored access policies: end

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
-- property indexes: end

-- Service properties (issue 22 item 7): stored in the router's database,
-- with the functions of extension tablestore (below, copied by the build).
-- Who may set them: a role that may create tables on the cluster, i.e.
-- that has CREATE on schema tablestore_data on the shards (asked of the
-- node of partition 0, as the calling role).
CREATE FUNCTION tablestore_router._may_create_tables() RETURNS boolean
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON 0;
	SELECT pg_catalog.has_schema_privilege('tablestore_data', 'CREATE') AS _may_create_tables; $$;
-- called only by _may_set_service_properties (C, which maps a node's
-- refusal of the role to 42501): not by the public directly
REVOKE EXECUTE ON FUNCTION tablestore_router._may_create_tables() FROM PUBLIC;
-- _check_user_mapping: the mapping check of every routed call (a mapping
-- naming another role is refused, 42501), made before _may_create_tables
-- asks node 0 (attack F2: a role's own mapping naming a privileged role
-- made the question answer for that role).
CREATE FUNCTION tablestore_router._check_user_mapping() RETURNS void
	AS 'MODULE_PATHNAME', 'router_check_user_mapping' LANGUAGE C VOLATILE;
-- the router's own _may_set_service_properties, as tablestore.sql says,
-- with the node's arguments and result (the build checks them)
CREATE FUNCTION tablestore._may_set_service_properties() RETURNS boolean
	AS 'MODULE_PATHNAME', 'router_may_set_service_properties' LANGUAGE C STABLE;

-- @service properties@

-- ---------------------------------------------------------------------
-- Online partition moves (issue 23): tablestore_router.move_partition
-- moves a partition to another node on PostgreSQL's logical replication
-- (a publication on the source, a subscription on the target that copies
-- and then streams), with the partition's lock held only for the cutover.
-- The router reaches the nodes with extension dblink (created by the
-- administrator: CREATE EXTENSION dblink).  README "Growing the cluster".
-- ---------------------------------------------------------------------

-- Every move, in progress and done; at most one is unfinished at a time
-- (create_table and delete_table refuse to run while one is).
CREATE TABLE tablestore_router._moves (
	id bigserial PRIMARY KEY,
	partition integer NOT NULL,
	source text NOT NULL,
	target text NOT NULL,
	step text NOT NULL,
	detail text,
	started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	step_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	finished_at timestamptz,
	attempts integer NOT NULL DEFAULT 1,
	rows_moved bigint,
	lag_bytes bigint,
	cutover_ms numeric,
	last_error text
);
CREATE UNIQUE INDEX _moves_one_unfinished ON tablestore_router._moves ((true)) WHERE finished_at IS NULL;
COMMENT ON TABLE tablestore_router._moves IS 'the partition moves of this router (move_partition), with their steps';
GRANT SELECT ON tablestore_router._moves TO PUBLIC;

CREATE VIEW tablestore_router.moves AS
	SELECT id, partition, source, target, step, detail, started_at, step_at, finished_at,
		coalesce(finished_at, clock_timestamp()) - started_at AS elapsed,
		attempts, rows_moved, lag_bytes, cutover_ms, last_error
	FROM tablestore_router._moves;
COMMENT ON VIEW tablestore_router.moves IS 'partition moves in progress and done: step, times, entities moved, replication lag, the cutover''s pause';
GRANT SELECT ON tablestore_router.moves TO PUBLIC;

-- _dblink_schema: the schema of extension dblink in the router database
-- (where the administrator created it), NULL without it; the mover's
-- calls of dblink name it so, whatever the session's search_path
CREATE FUNCTION tablestore_router._dblink_schema() RETURNS text
	LANGUAGE sql STABLE AS $$
	SELECT n.nspname::text FROM pg_catalog.pg_extension e
		JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'dblink';
$$;
REVOKE ALL ON FUNCTION tablestore_router._dblink_schema() FROM PUBLIC;

-- _lock_timeout: how long each statement the mover sends to a node waits
-- for its locks: the router session's lock_timeout, 60 s when it is unset
CREATE FUNCTION tablestore_router._lock_timeout() RETURNS text
	LANGUAGE sql STABLE AS $$
	SELECT CASE WHEN pg_catalog.current_setting('lock_timeout') IN ('0', '0ms') THEN '60s'
		ELSE pg_catalog.current_setting('lock_timeout') END;
$$;
REVOKE ALL ON FUNCTION tablestore_router._lock_timeout() FROM PUBLIC;

-- _node_connect: open (again) the router session's dblink connection conn
-- to a node, as the calling role (the node string names no role).
CREATE FUNCTION tablestore_router._node_connect(conn text, node text) RETURNS void
	LANGUAGE plpgsql AS $$
DECLARE
	s text := tablestore_router._dblink_schema();
	open text[];
BEGIN
	IF s IS NULL THEN
		RAISE EXCEPTION 'moving partitions needs extension dblink in the router database'
			USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'CREATE EXTENSION dblink;';
	END IF;
	EXECUTE format('SELECT %I.dblink_get_connections()', s) INTO open;
	IF conn = ANY (open) THEN
		EXECUTE format('SELECT %I.dblink_disconnect($1)', s) USING conn;
	END IF;
	EXECUTE format('SELECT %I.dblink_connect($1, $2)', s)
		USING conn, node || ' user=''' || replace(replace(current_user, '\', '\\'), '''', '\''') || '''';
	-- names resolve in the catalog only, whatever the node's defaults: the
	-- checks compare definitions as printed (_move_owner_code_sql).  Every
	-- statement sent on it waits for its locks at most lock_timeout: an
	-- open transaction of anyone who can read a table there must not hold
	-- the mover (and with it every move, create_table and delete_table of
	-- the cluster) for ever; each caller handles the timeout
	EXECUTE format('SELECT %I.dblink_exec($1, $2)', s)
		USING conn, format('SET search_path = pg_catalog, pg_temp; SET lock_timeout = %L',
			tablestore_router._lock_timeout());
END $$;

-- _node_exec: run a command (or several, one transaction) on a node
CREATE FUNCTION tablestore_router._node_exec(conn text, command text) RETURNS void
	LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('SELECT %I.dblink_exec($1, $2, true)',
		tablestore_router._dblink_schema())
		USING conn, command;
END $$;

-- _node_values: the first column of a query's rows on a node, as text
CREATE FUNCTION tablestore_router._node_values(conn text, query text) RETURNS SETOF text
	LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE format('SELECT v FROM %I.dblink($1, $2, true) AS t(v text)',
		tablestore_router._dblink_schema())
		USING conn, query;
END $$;

-- _move_pause: a test's hook: with tablestore_router.move_pause_at set to
-- a step's name, the mover waits after recording that step for as long as
-- the file tablestore_router.move_pause_file exists (at most 2 minutes).
CREATE FUNCTION tablestore_router._move_pause(step text) RETURNS void
	LANGUAGE plpgsql AS $$
DECLARE
	f text := current_setting('tablestore_router.move_pause_file', true);
BEGIN
	IF current_setting('tablestore_router.move_pause_at', true) IS DISTINCT FROM step OR coalesce(f, '') = '' THEN
		RETURN;
	END IF;
	FOR i IN 1 .. 2400 LOOP
		EXIT WHEN pg_catalog.pg_stat_file(f, true) IS NULL;
		PERFORM pg_catalog.pg_sleep(0.05);
	END LOOP;
END $$;

-- _move_step: record a move's step (committed by the caller)
CREATE FUNCTION tablestore_router._move_step(move bigint, step text, detail text DEFAULT NULL) RETURNS void
	LANGUAGE sql AS $$
	UPDATE tablestore_router._moves SET step = $2, detail = $3, step_at = clock_timestamp()
	WHERE id = $1 AND finished_at IS NULL;
$$;

-- ---- issue 23, the attack on moves (fixmove): no owner code as the
-- superuser, one live run of a move, no move to the source itself, the
-- move's slots dropped, abort_move ----

-- _move_session_lock: the mover's session lock (router's lock class), held
-- for a whole run of move_partition; take: false if another session holds it
CREATE FUNCTION tablestore_router._move_session_lock(take boolean) RETURNS boolean
	AS 'MODULE_PATHNAME', 'router_move_session_lock' LANGUAGE C VOLATILE STRICT;

-- _move_owner_code_sql: a query, run on a node (search_path pg_catalog,
-- as _node_connect sets it), naming what of its entity relations is not
-- exactly what create_table made, and so could run code of their owners
-- in the replication's apply worker or in the mover's statements (as the
-- superuser).  A whitelist, not a search for code: PostgreSQL's own
-- functions record no dependency and some of them run SQL given as text
-- (query_to_xml), so a relation may have only its three CHECK constraints
-- as create_table writes them (the Timestamp bounds' literals in any
-- DateStyle), its one tskey index on (pk, rk) with the extension's
-- operator classes, its four columns of their types, no default, rule,
-- child, parent or foreign key to it, and no trigger but a mover's
-- filter, enabled for the replication only.  Policies are allowed: the
-- superuser bypasses them.  The mover's schema must be a superuser's,
-- with no trigger or rule.  NULL when there is nothing.
CREATE FUNCTION tablestore_router._move_owner_code_sql() RETURNS text
	LANGUAGE sql IMMUTABLE AS $$
SELECT $q$
WITH rels AS (
	SELECT c.oid, c.relname, c.relkind FROM tablestore.tables t
	JOIN pg_catalog.pg_class c ON c.oid = pg_catalog.to_regclass('tablestore_data.' || pg_catalog.quote_ident(t.relation_name))
)
SELECT pg_catalog.string_agg(w, '; ' ORDER BY w) FROM (
	SELECT r.relname || ': not a plain table' AS w FROM rels r WHERE r.relkind <> 'r'
	UNION ALL
	SELECT r.relname || ': trigger ' || t.tgname
	FROM rels r JOIN pg_catalog.pg_trigger t ON t.tgrelid = r.oid
	WHERE NOT (t.tgname ~ '^ts_move_[0-9]+$' AND t.tgenabled = 'R' AND NOT t.tgisinternal
		AND t.tgfoid = pg_catalog.to_regprocedure('tablestore_move.keep_partition()'))
	UNION ALL
	SELECT r.relname || ': rule ' || w.rulename FROM rels r JOIN pg_catalog.pg_rewrite w ON w.ev_class = r.oid
	UNION ALL
	SELECT r.relname || ': default or generated column ' || a.adnum
	FROM rels r JOIN pg_catalog.pg_attrdef a ON a.adrelid = r.oid
	UNION ALL
	SELECT r.relname || ': inheritance' FROM rels r JOIN pg_catalog.pg_inherits i ON r.oid IN (i.inhrelid, i.inhparent)
	UNION ALL
	SELECT r.relname || ': constraint ' || k.conname
	FROM rels r JOIN pg_catalog.pg_constraint k ON k.conrelid = r.oid OR k.confrelid = r.oid
	WHERE NOT (k.conrelid = r.oid AND k.contype = 'c' AND CASE k.conname
		WHEN 'entity_keys_valid' THEN pg_catalog.pg_get_constraintdef(k.oid) ~
			'^CHECK \(\(tablestore\.key_is_valid\(pk\) AND tablestore\.key_is_valid\(rk\)\)\)( NOT VALID)?$'
		WHEN 'entity_props_object' THEN pg_catalog.pg_get_constraintdef(k.oid) ~
			'^CHECK \(\(jsonb_typeof\(props\) = ''object''::text\)\)( NOT VALID)?$'
		WHEN 'entity_ts_in_range' THEN pg_catalog.pg_get_constraintdef(k.oid) ~
			'^CHECK \(\(\(ts >= ''[^'']*''::timestamp with time zone\) AND \(ts < ''[^'']*''::timestamp with time zone\)\)\)( NOT VALID)?$'
		ELSE false END)
	UNION ALL
	SELECT r.relname || ': index ' || i.indexrelid::pg_catalog.regclass::text
	FROM rels r JOIN pg_catalog.pg_index i ON i.indrelid = r.oid
	WHERE NOT (i.indisunique AND i.indnatts = 2 AND i.indkey::text = '1 2' AND i.indexprs IS NULL AND i.indpred IS NULL
		AND (SELECT a.amname FROM pg_catalog.pg_class x JOIN pg_catalog.pg_am a ON a.oid = x.relam WHERE x.oid = i.indexrelid) = 'tskey'
		AND NOT EXISTS (SELECT FROM pg_catalog.unnest(i.indclass::oid[]) oc JOIN pg_catalog.pg_opclass o ON o.oid = oc
			WHERE o.opcnamespace <> 'tablestore'::regnamespace))
	UNION ALL
	SELECT r.relname || ': more than one index' FROM rels r
	WHERE (SELECT count(*) FROM pg_catalog.pg_index i WHERE i.indrelid = r.oid) > 1
	UNION ALL
	SELECT r.relname || ': columns' FROM rels r
	WHERE (SELECT pg_catalog.string_agg(a.attname || ' ' || a.atttypid::pg_catalog.regtype::text, ', ' ORDER BY a.attnum)
		FROM pg_catalog.pg_attribute a WHERE a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped)
		IS DISTINCT FROM 'pk tablestore.key, rk tablestore.key, ts timestamp with time zone, props jsonb'
	UNION ALL
	-- the mover's schema (its marker is replicated, its trigger function
	-- filters): every object of it a superuser's, no user trigger or rule
	SELECT pg_catalog.pg_describe_object(o.classid, o.objid, 0) || ' owned by ' || pg_catalog.pg_get_userbyid(o.owner)
	FROM (SELECT 'pg_catalog.pg_namespace'::regclass AS classid, n.oid AS objid, n.nspowner AS owner
			FROM pg_catalog.pg_namespace n WHERE n.nspname = 'tablestore_move'
		UNION ALL
		SELECT 'pg_catalog.pg_class'::regclass, c.oid, c.relowner FROM pg_catalog.pg_class c
			JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'tablestore_move'
		UNION ALL
		SELECT 'pg_catalog.pg_proc'::regclass, p.oid, p.proowner FROM pg_catalog.pg_proc p
			JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'tablestore_move') o
	WHERE NOT coalesce((SELECT a.rolsuper FROM pg_catalog.pg_roles a WHERE a.oid = o.owner), false)
	UNION ALL
	SELECT 'tablestore_move.' || c.relname || ': trigger or rule ' || coalesce(t.tgname, w.rulename)
	FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'tablestore_move'
		LEFT JOIN pg_catalog.pg_trigger t ON t.tgrelid = c.oid AND NOT t.tgisinternal
		LEFT JOIN pg_catalog.pg_rewrite w ON w.ev_class = c.oid
	WHERE t.oid IS NOT NULL OR w.oid IS NOT NULL
) x
$q$;
$$;

-- _move_check_owner_code: refuse to move when a node (connection conn)
-- has entity relations that would run their owner's code (above)
CREATE FUNCTION tablestore_router._move_check_owner_code(conn text, node text) RETURNS void
	LANGUAGE plpgsql AS $$
DECLARE
	found text := (SELECT * FROM tablestore_router._node_values(conn, tablestore_router._move_owner_code_sql()));
BEGIN
	IF found IS NOT NULL THEN
		RAISE EXCEPTION 'tables on % have triggers, rules or expressions that run their owners'' code: %', node, found
			USING ERRCODE = 'object_not_in_prerequisite_state',
				DETAIL = 'The replication and the mover run as a superuser: a move would run that code as the superuser.',
				HINT = 'Drop those triggers, rules, constraints or indexes on every node (or move the table''s entities otherwise), then move again.';
	END IF;
END $$;

-- _move_delete_sql: a query, run on a node, whose value is one statement
-- (a DO block, one transaction) that deletes a partition's rows of every
-- entity relation there: the relations locked in SHARE UPDATE EXCLUSIVE
-- mode first (no trigger, rule, constraint, index or default can be added
-- then), checked under that lock to be exactly what create_table made
-- (_move_owner_code_sql: nothing of their owners' can run), then the rows
-- deleted as the superuser.  Never as the owner with SET ROLE over the
-- superuser's connection: code that ran then could RESET ROLE.  NULL when
-- the node has no table.
CREATE FUNCTION tablestore_router._move_delete_sql(mask integer, part integer) RETURNS text
	LANGUAGE sql IMMUTABLE AS $$
SELECT format($q$
SELECT 'DO $d$DECLARE bad text; BEGIN '
	|| string_agg(format('LOCK TABLE tablestore_data.%%I IN SHARE UPDATE EXCLUSIVE MODE; ', c.relname), '' ORDER BY c.relname)
	|| 'EXECUTE ' || pg_catalog.quote_literal(%3$L) || ' INTO bad; '
	|| 'IF bad IS NOT NULL THEN RAISE EXCEPTION ''tables are not as create_table made them: %%'', bad '
	|| 'USING ERRCODE = ''object_not_in_prerequisite_state'', HINT = ''Drop those objects, then run the move (or abort_move) again.''; END IF; '
	|| string_agg(format('DELETE FROM tablestore_data.%%I WHERE (tablestore.partition_hash(pk) & %1$s) = %2$s; ', c.relname), '' ORDER BY c.relname)
	|| 'END$d$'
FROM tablestore.tables t JOIN pg_catalog.pg_class c ON c.oid = pg_catalog.to_regclass('tablestore_data.' || pg_catalog.quote_ident(t.relation_name))
$q$, mask, part, tablestore_router._move_owner_code_sql());
$$;

-- _move_count: the partition's rows of every entity relation on a node
-- (connection conn; plain scans as the superuser run no owner code)
CREATE FUNCTION tablestore_router._move_count(conn text, mask integer, part integer) RETURNS bigint
	LANGUAGE sql AS $$
	SELECT sum(v::bigint) FROM tablestore_router._node_values(conn, (
		SELECT 'SELECT 0' || coalesce(string_agg(format(' UNION ALL SELECT count(*) FROM tablestore_data.%I WHERE (tablestore.partition_hash(pk) & %s) = %s', v, mask, part), ''), '')
		FROM tablestore_router._node_values(conn, $r$SELECT t.relation_name FROM tablestore.tables t
			JOIN pg_catalog.pg_class c ON c.oid = pg_catalog.to_regclass('tablestore_data.' || pg_catalog.quote_ident(t.relation_name))
			WHERE c.relkind = 'r'$r$) v)) v;
$$;

-- _node_identity: a node's server and database (system identifier and the
-- database's oid), the same for two connection strings of one database
CREATE FUNCTION tablestore_router._node_identity(conn text) RETURNS text
	LANGUAGE sql AS $$
	SELECT * FROM tablestore_router._node_values(conn,
		'SELECT s.system_identifier || ''/'' || d.oid || ''/'' || d.datname FROM pg_catalog.pg_control_system() s, pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database()');
$$;

-- _move_drop_slots: the move's replication slots on the source (its own and
-- the table synchronization slots of subscription subid, when known) that
-- are left and not in use, dropped: a slot keeps the source's WAL
CREATE FUNCTION tablestore_router._move_drop_slots(move bigint, subid text) RETURNS void
	LANGUAGE plpgsql AS $$
BEGIN
	PERFORM * FROM tablestore_router._node_values('ts_move_src', format(
		'SELECT pg_catalog.pg_drop_replication_slot(slot_name)::text FROM pg_catalog.pg_replication_slots WHERE NOT active AND (slot_name = %L OR slot_name LIKE %L)',
		'ts_move_' || move, CASE WHEN subid IS NULL THEN NULL ELSE 'pg\_' || subid || '\_sync\_%' END));
END $$;

-- _move_undo: a move that has not switched the partition map, undone: the
-- subscription dropped on the target (with its slots on the source), the
-- publication on the source, the target's filter triggers and whatever of
-- the partition the target holds (it does not serve it: the source holds it
-- all).  Connections 'ts_move_src' and 'ts_move_tgt' are open.
CREATE FUNCTION tablestore_router._move_undo(move bigint, part integer, mask integer) RETURNS void
	LANGUAGE plpgsql AS $$
DECLARE
	name text := 'ts_move_' || move;
	subid text := (SELECT * FROM tablestore_router._node_values('ts_move_tgt',
		format('SELECT oid::text FROM pg_catalog.pg_subscription WHERE subname = %L', name)));
BEGIN
	PERFORM tablestore_router._node_exec('ts_move_tgt', format('DROP SUBSCRIPTION IF EXISTS %I', name));
	-- the subscription is gone: this session's lock on the target's tables
	-- (a failed run's) would only stop the undo's DROP TRIGGER
	PERFORM tablestore_router._move_unlock_target();
	PERFORM tablestore_router._move_drop_slots(move, subid);
	PERFORM tablestore_router._node_exec('ts_move_src', format('DROP PUBLICATION IF EXISTS %I', name));
	-- a filter that a lock keeps is recorded (_move_drop_filters)
	PERFORM tablestore_router._move_drop_filters('ts_move_tgt', (SELECT x.target FROM tablestore_router._moves x WHERE x.id = move), move);
	-- locked, checked, then deleted (_move_delete_sql: never an owner's
	-- code); if an owner's code or lock there refuses it, the partial copy
	-- is recorded as left (the target does not serve the partition, a move
	-- to it removes the rows first) rather than keeping the move unfinished
	PERFORM tablestore_router._move_leftover((SELECT x.target FROM tablestore_router._moves x WHERE x.id = move), mask, part, move,
		tablestore_router._move_delete_rows('ts_move_tgt', mask, part));
	PERFORM tablestore_router._node_exec('ts_move_tgt', format(
		'DO $d$BEGIN IF to_regclass(''tablestore_move.marker'') IS NOT NULL THEN DELETE FROM tablestore_move.marker WHERE id = %s; END IF; END$d$', move));
END $$;

-- _move_table_sql: the statements that give a table on the target the
-- owner, grants, row-level security, policies, comment and stored access
-- policies its entity relation has on the source (run on the source; the result is run on the
-- target, after the target's own grants and policies are removed).
CREATE FUNCTION tablestore_router._move_table_sql(rel text) RETURNS text
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

-- _move_target_reset_sql: the statements that remove a table's grants (but
-- its owner's) and policies on the target before the source's are given.
CREATE FUNCTION tablestore_router._move_target_reset_sql(rel text) RETURNS text
	LANGUAGE sql AS $$
SELECT format($q$
SELECT string_agg(s, E';\n') FROM (
	SELECT DISTINCT format('REVOKE ALL ON tablestore_data.%%I FROM %%s', c.relname,
		CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END) AS s
	FROM pg_class c, aclexplode(c.relacl) a
	WHERE c.oid = %1$L::regclass AND a.grantee <> c.relowner
	UNION ALL
	SELECT format('DROP POLICY %%I ON tablestore_data.%%I', p.policyname, p.tablename)
	FROM pg_policies p WHERE p.schemaname = 'tablestore_data' AND p.tablename = %2$L
) x$q$, 'tablestore_data.' || quote_ident(rel), rel);
$$;

-- move_partition: move partition part to the node target, online.
--   1. (prepare) every table of the source exists on the target, with the
--      source's owner, grants, policies and comment; its key index is the
--      replica identity on both; on the target, a trigger that only the
--      replication fires keeps the partition's rows and drops the others';
--   2. (copying) a publication of every table on the source and a
--      subscription on the target that copies them, then streams changes;
--      writes to the partition go on, on the source;
--   3. (catching up) wait for the copy of every table, then for the
--      target to be close behind the source;
--   4. (cutover) take the partition's lock (and that of "all partitions",
--      as lock_partition_for_move does: calls on this partition and calls
--      on every node wait); write a marker on the source and wait for the
--      target to apply it (so it has every write made before the lock);
--      drop the subscription; switch the partition map (this commit is the
--      move's decision: before it the source holds the partition, after it
--      the target); release; delete the partition's rows on the source
--      (a query over every node reads a partition on its node only);
--   5. (cleanup) drop the publication and the triggers; done.
-- Each step is recorded in tablestore_router.moves.  Run again after a
-- failure at any step, it completes the move: after the switch it finishes
-- the cleanup, before it it undoes what the interrupted run set up (the
-- source still holds the whole partition and serves it) and starts again.
CREATE PROCEDURE tablestore_router.move_partition(part integer, target text, timeout interval DEFAULT '1 hour')
	LANGUAGE plpgsql AS $$
DECLARE
	m tablestore_router._moves;
	nparts integer;
	mask integer;
	src text;
	tgt text;
	cur text;
	name text;
	c text;
	rel text;
	tname text;
	rels text[] := '{}';
	stmts text;
	idx text;
	deadline timestamptz;
	n bigint;
	total bigint;
	lag bigint;
	token bigint;
	t0 timestamptz;
	t1 timestamptz;
	cut text;
	srcrows bigint;
	holder text;
	resumed boolean;
	leftwhy text;
	trigwhy text;
BEGIN
	IF NOT (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
		RAISE EXCEPTION 'only a superuser may move partitions' USING ERRCODE = 'insufficient_privilege';
	END IF;
	-- one live run of a move at a time, held for the whole run (a run of
	-- this session that failed left it: this run takes it over)
	IF NOT tablestore_router._move_session_lock(true) THEN
		holder := (SELECT string_agg(l.pid::text, ', ') FROM pg_catalog.pg_locks l
			WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
				AND l.classid = 1953722994 AND l.objid = 0 AND l.objsubid = 29811);
		RAISE EXCEPTION 'a move is running in another session (process %)', coalesce(holder, '?')
			USING ERRCODE = 'lock_not_available',
				DETAIL = 'Two live runs of a move would undo each other''s replication.',
				HINT = 'Wait for that run to end (tablestore_router.moves shows its step), or end that process (pg_terminate_backend) first.';
	END IF;
	SELECT count(*) INTO nparts FROM tablestore_router.partitions();
	IF part IS NULL OR part < 0 OR part >= nparts THEN
		RAISE EXCEPTION 'the cluster has no partition %', part USING ERRCODE = 'invalid_parameter_value';
	END IF;
	mask := nparts - 1;
	tgt := tablestore_router.node_string(target);
	IF NOT EXISTS (SELECT FROM tablestore_router.partitions() WHERE node = tgt) THEN
		-- a new node: the partition map must be able to hold it
		PERFORM tablestore_router._check_nodes(ARRAY[tgt]);
	END IF;
	SELECT * INTO m FROM tablestore_router._moves WHERE finished_at IS NULL;
	resumed := FOUND;
	IF resumed AND (m.partition <> part OR m.target <> tgt) THEN
		RAISE EXCEPTION 'partition % is being moved to %', m.partition, m.target
			USING ERRCODE = 'object_not_in_prerequisite_state',
				HINT = format('Complete that move first: CALL tablestore_router.move_partition(%s, %L).', m.partition, m.target);
	END IF;
	cur := (SELECT node FROM tablestore_router.partitions() WHERE partition = part);
	IF NOT resumed AND cur = tgt THEN
		RAISE NOTICE 'partition % is on % already', part, tgt;
		PERFORM tablestore_router._move_session_lock(false);
		RETURN;
	END IF;
	src := CASE WHEN resumed THEN m.source ELSE cur END;
	PERFORM tablestore_router._node_connect('ts_move_src', src);
	PERFORM tablestore_router._node_connect('ts_move_tgt', tgt);
	-- two strings for one database (a link, another host name, a port
	-- forward): the "target" is the source, refused before anything
	IF tablestore_router._node_identity('ts_move_src') = tablestore_router._node_identity('ts_move_tgt') THEN
		RAISE EXCEPTION 'the target % is the source % (the same database of the same server)', tgt, src
			USING ERRCODE = 'invalid_parameter_value',
				HINT = CASE WHEN resumed THEN 'Abandon that move: SELECT tablestore_router.abort_move();' ELSE 'Name another node.' END;
	END IF;
	-- a rerun of a move that has not switched first undoes what the
	-- interrupted run set up: its subscription, whose lock died with it, must
	-- not go on applying (as a superuser) while this run checks or waits
	PERFORM tablestore_router._move_unlock_target();
	IF resumed AND cur = src AND m.step <> 'started' THEN
		PERFORM tablestore_router._move_undo(m.id, part, mask);
	END IF;
	-- nothing of the tables' owners may run as the superuser (the replication's
	-- apply worker on the target, the mover's statements): refused before anything
	IF cur = src THEN
		PERFORM tablestore_router._move_check_owner_code('ts_move_src', src);
		PERFORM tablestore_router._move_check_owner_code('ts_move_tgt', tgt);
		-- rows of the partition an earlier move left on the target are
		-- stale: deleted before the target gets it, or the move is refused
		PERFORM tablestore_router._move_remove_leftovers('ts_move_tgt', tgt, mask, part);
		-- an earlier move's slot left on either node (not in use) holds its
		-- WAL for ever: dropped; no other move runs, and a rerun's undo
		-- dropped this one's
		FOREACH c IN ARRAY ARRAY['ts_move_src', 'ts_move_tgt'] LOOP
			PERFORM * FROM tablestore_router._node_values(c,
				'SELECT pg_catalog.pg_drop_replication_slot(slot_name)::text FROM pg_catalog.pg_replication_slots WHERE NOT active AND slot_name ~ ''^ts_move_[0-9]+$''');
		END LOOP;
	END IF;
	IF NOT resumed THEN
		INSERT INTO tablestore_router._moves (partition, source, target, step)
			VALUES (part, cur, tgt, 'started') RETURNING * INTO m;
	ELSE
		UPDATE tablestore_router._moves SET attempts = attempts + 1, last_error = NULL WHERE id = m.id;
	END IF;
	COMMIT;
	name := 'ts_move_' || m.id;
	IF cur <> src AND cur <> tgt THEN
		RAISE EXCEPTION 'partition % is on %, neither the source nor the target of its unfinished move %', part, cur, m.id
			USING ERRCODE = 'object_not_in_prerequisite_state',
				HINT = 'The partition map was changed by hand during the move; mark the move finished in tablestore_router._moves once the partition is whole on its node.';
	END IF;

	IF cur = src THEN
		-- Before the switch: the source holds the whole partition.  Undo
		-- what an interrupted run left, then wait for the table operations
		-- in flight (they hold the lock of all partitions; those that start
		-- now see this move and refuse) and list the tables.
		PERFORM tablestore_router._move_step(m.id, 'prepare');
		COMMIT;
		PERFORM tablestore_router.lock_partition_for_move(part);
		PERFORM tablestore_router.unlock_partition_for_move(part);

		PERFORM tablestore_router._node_exec('ts_move_src', $s$
			CREATE SCHEMA IF NOT EXISTS tablestore_move;
			CREATE TABLE IF NOT EXISTS tablestore_move.marker (id bigint PRIMARY KEY, token bigint NOT NULL)$s$);
		PERFORM tablestore_router._node_exec('ts_move_tgt', $s$
			CREATE SCHEMA IF NOT EXISTS tablestore_move;
			CREATE TABLE IF NOT EXISTS tablestore_move.marker (id bigint PRIMARY KEY, token bigint NOT NULL);
			CREATE OR REPLACE FUNCTION tablestore_move.keep_partition() RETURNS trigger
				LANGUAGE plpgsql SET search_path = pg_catalog AS $f$
			BEGIN
				-- fired by the replication only: a row of the moving partition
				-- is applied, any other is not (the source's other partitions)
				IF TG_OP = 'DELETE' THEN
					IF (tablestore.partition_hash(OLD.pk) & TG_ARGV[0]::integer) = TG_ARGV[1]::integer THEN
						RETURN OLD;
					END IF;
				ELSIF (tablestore.partition_hash(NEW.pk) & TG_ARGV[0]::integer) = TG_ARGV[1]::integer THEN
					RETURN NEW;
				END IF;
				RETURN NULL;
			END $f$ $s$);
		FOR rel, tname IN SELECT split_part(v, '/', 1), substr(v, strpos(v, '/') + 1)
			FROM tablestore_router._node_values('ts_move_src', 'SELECT relation_name || ''/'' || table_name FROM tablestore.tables ORDER BY 1') v
		LOOP
			rels := rels || rel;
			PERFORM * FROM tablestore_router._node_values('ts_move_tgt', format('SELECT tablestore.create_table_if_absent(%L)::text', tname));
			stmts := (SELECT * FROM tablestore_router._node_values('ts_move_tgt', tablestore_router._move_target_reset_sql(rel)));
			IF stmts IS NOT NULL THEN
				PERFORM tablestore_router._node_exec('ts_move_tgt', stmts);
			END IF;
			stmts := (SELECT * FROM tablestore_router._node_values('ts_move_src', tablestore_router._move_table_sql(rel)));
			IF stmts IS NOT NULL THEN
				PERFORM tablestore_router._node_exec('ts_move_tgt', stmts);
			END IF;
			-- the key index identifies a row in the replication's updates and deletes
			FOREACH c IN ARRAY ARRAY['ts_move_src', 'ts_move_tgt'] LOOP
				idx := (SELECT * FROM tablestore_router._node_values(c, format(
					'SELECT i.indexrelid::regclass::text FROM pg_index i WHERE i.indrelid = %L::regclass AND i.indisunique AND i.indnatts = 2 ORDER BY i.indisreplident DESC LIMIT 1',
					'tablestore_data.' || quote_ident(rel))));
				PERFORM tablestore_router._node_exec(c, format('ALTER TABLE tablestore_data.%I REPLICA IDENTITY USING INDEX %s',
					rel, (SELECT quote_ident(v) FROM pg_catalog.parse_ident(idx) AS p(a), unnest(p.a) WITH ORDINALITY AS u(v, o) ORDER BY o DESC LIMIT 1)));
			END LOOP;
			PERFORM tablestore_router._node_exec('ts_move_tgt', format(
				'CREATE TRIGGER %I BEFORE INSERT OR UPDATE OR DELETE ON tablestore_data.%I FOR EACH ROW EXECUTE FUNCTION tablestore_move.keep_partition(%s, %s);
				 ALTER TABLE tablestore_data.%I ENABLE REPLICA TRIGGER %I', name, rel, mask, part, rel, name));
		END LOOP;

		-- the target's tables locked against DDL that adds code until the
		-- cutover is done, and checked again under the lock
		PERFORM tablestore_router._move_pause('prepared');
		PERFORM tablestore_router._move_lock_target(tgt, rels);
		-- and the filter of every table there, as made, under that lock: a
		-- filter dropped or enabled otherwise before it would let the copy
		-- write the source's other partitions
		IF (SELECT count(*) FROM tablestore_router._node_values('ts_move_lock', format(
				'SELECT c.relname FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
				 WHERE t.tgname = %L AND t.tgenabled = ''R'' AND t.tgfoid = pg_catalog.to_regprocedure(''tablestore_move.keep_partition()'')
				   AND c.relnamespace = ''tablestore_data''::regnamespace AND c.relname = ANY (%L::text[])', name, rels))) <> cardinality(rels) THEN
			RAISE EXCEPTION 'partition %: a table''s filter on % was dropped or changed before the move locked it', part, tgt
				USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'Run the move again.';
		END IF;

		-- the publication and the subscription that copies, then streams
		PERFORM tablestore_router._node_exec('ts_move_src', format(
			'CREATE PUBLICATION %I FOR TABLE %s WITH (publish = ''insert, update, delete'')', name,
			(SELECT string_agg('tablestore_data.' || quote_ident(r), ', ') FROM unnest(rels) r) ||
			CASE WHEN cardinality(rels) > 0 THEN ', ' ELSE '' END || 'tablestore_move.marker'));
		-- its slot on the source made here, over the mover's connection: it
		-- waits for every transaction there that holds an xid (the decoding's
		-- first snapshot), anyone's, and so at most lock_timeout (and as long
		-- a statement_timeout); CREATE SUBSCRIPTION would make it in the
		-- source's walsender, which waits for ever, and a slot it finished
		-- after an abort_move was left for ever.  A timeout fails the move
		-- (rerun or abort_move); a slot not finished is dropped by the server
		PERFORM tablestore_router._node_exec('ts_move_src', format('SET statement_timeout = %L', tablestore_router._lock_timeout()));
		PERFORM * FROM tablestore_router._node_values('ts_move_src', format(
			'SELECT pg_catalog.pg_create_logical_replication_slot(%L, ''pgoutput'')::text', name));
		PERFORM tablestore_router._node_exec('ts_move_src', 'RESET statement_timeout');
		PERFORM tablestore_router._node_exec('ts_move_tgt', format(
			'CREATE SUBSCRIPTION %I CONNECTION %L PUBLICATION %I WITH (copy_data = true, create_slot = false, slot_name = %I)', name,
			src || ' user=''' || replace(replace(current_user, '\', '\\'), '''', '\''') || '''', name, name));
		PERFORM tablestore_router._move_step(m.id, 'copying', format('0 of %s tables copied', cardinality(rels) + 1));
		COMMIT;
		PERFORM tablestore_router._move_pause('copying');

		-- wait for the copy of every table, then for the lag to fall
		deadline := clock_timestamp() + timeout;
		LOOP
			SELECT count(*) FILTER (WHERE v = 'r'), count(*) INTO n, total
			FROM tablestore_router._move_poll(name, tgt, cardinality(rels), 'ts_move_tgt', format(
				'SELECT r.srsubstate FROM pg_subscription_rel r JOIN pg_subscription s ON s.oid = r.srsubid WHERE s.subname = %L', name),
				CASE WHEN n IS NULL THEN 0 ELSE 0.1 END) v;
			PERFORM tablestore_router._move_step(m.id, 'copying', format('%s of %s tables copied', n, total));
			COMMIT;
			EXIT WHEN total > 0 AND n = total;
			IF clock_timestamp() > deadline THEN
				PERFORM tablestore_router._move_stop_subscription(name, tgt);
				RAISE EXCEPTION 'partition %: the copy did not finish within %', part, timeout
					USING ERRCODE = 'query_canceled', HINT = 'Run the move again to continue it.';
			END IF;
		END LOOP;
		LOOP
			lag := (SELECT * FROM tablestore_router._move_poll(name, tgt, cardinality(rels), 'ts_move_src', format(
				'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint FROM pg_replication_slots WHERE slot_name = %L', name), 0.1));
			UPDATE tablestore_router._moves SET lag_bytes = lag WHERE id = m.id;
			PERFORM tablestore_router._move_step(m.id, 'catching up', format('%s bytes behind', lag));
			COMMIT;
			EXIT WHEN lag IS NOT NULL AND lag < 16 * 1024 * 1024;
			IF clock_timestamp() > deadline THEN
				PERFORM tablestore_router._move_stop_subscription(name, tgt);
				RAISE EXCEPTION 'partition %: the target did not catch up within %', part, timeout
					USING ERRCODE = 'query_canceled', HINT = 'Run the move again to continue it.';
			END IF;
		END LOOP;
		-- then the target applies a marker written now, before the lock: the
		-- marker the cutover waits for under the lock then follows only the
		-- writes of the last moment (the slot's confirmed position, above,
		-- lags the apply)
		token := (SELECT * FROM tablestore_router._move_poll(name, tgt, cardinality(rels), 'ts_move_src', format(
			'INSERT INTO tablestore_move.marker VALUES (%s, 1) ON CONFLICT (id) DO UPDATE SET token = marker.token + 1 RETURNING token', m.id), 0))::bigint;
		WHILE (SELECT * FROM tablestore_router._move_poll(name, tgt, cardinality(rels), 'ts_move_tgt', format(
				'SELECT token FROM tablestore_move.marker WHERE id = %s', m.id), 0.01))::bigint IS DISTINCT FROM token LOOP
			IF clock_timestamp() > deadline THEN
				PERFORM tablestore_router._move_stop_subscription(name, tgt);
				RAISE EXCEPTION 'partition %: the target did not catch up within %', part, timeout
					USING ERRCODE = 'query_canceled', HINT = 'Run the move again to continue it.';
			END IF;
		END LOOP;
		PERFORM tablestore_router._move_step(m.id, 'cutover');
		COMMIT;
		PERFORM tablestore_router._move_pause('cutover');

		-- the cutover, under the partition's lock
		PERFORM tablestore_router.lock_partition_for_move(part);
		t0 := clock_timestamp();
		BEGIN
			PERFORM tablestore_router._move_pause('locked');
			token := (SELECT * FROM tablestore_router._node_values('ts_move_src', format(
				'INSERT INTO tablestore_move.marker VALUES (%s, 1) ON CONFLICT (id) DO UPDATE SET token = marker.token + 1 RETURNING token', m.id)))::bigint;
			deadline := clock_timestamp() + least(timeout, interval '60 s');
			WHILE (SELECT * FROM tablestore_router._node_values('ts_move_tgt', format(
					'SELECT token FROM tablestore_move.marker WHERE id = %s', m.id)))::bigint IS DISTINCT FROM token LOOP
				IF clock_timestamp() > deadline THEN
					RAISE EXCEPTION 'partition %: the target did not apply the source''s last writes within %', part, least(timeout, interval '60 s')
						USING ERRCODE = 'query_canceled', HINT = 'Run the move again to continue it.';
				END IF;
				PERFORM pg_catalog.pg_sleep(0.001);
			END LOOP;
			t1 := clock_timestamp();
			cut := format('cutover: marker %s ms', round(extract(epoch FROM t1 - t0) * 1000));
			-- this run's subscription copied every table (another run's could
			-- have replaced it), and the target holds every row of the
			-- partition that the source holds (writes wait for the lock)
			SELECT count(*) FILTER (WHERE v IN ('r', 's')), count(*) INTO n, total
			FROM tablestore_router._node_values('ts_move_tgt', format(
				'SELECT r.srsubstate FROM pg_subscription_rel r JOIN pg_subscription s ON s.oid = r.srsubid WHERE s.subname = %L', name)) v;
			IF n <> cardinality(rels) + 1 OR total <> n THEN
				RAISE EXCEPTION 'partition %: % of the % tables of the move''s subscription are copied at the cutover', part, n, cardinality(rels) + 1
					USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'Run the move again to continue it.';
			END IF;
			t1 := clock_timestamp();
			SELECT c.src, c.tgt INTO srcrows, n FROM tablestore_router._move_count_both(mask, part) c;
			cut := cut || format(', counts %s ms', round(extract(epoch FROM clock_timestamp() - t1) * 1000));
			IF n IS DISTINCT FROM srcrows THEN
				RAISE EXCEPTION 'partition %: the target holds % of the source''s % entities at the cutover', part, n, srcrows
					USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'Run the move again to continue it.';
			END IF;
			-- defence in depth: the lock is still held, and the target's
			-- tables still run no owner code
			PERFORM tablestore_router._move_check_lock(name, tgt, cardinality(rels));
			PERFORM tablestore_router._move_check_owner_code('ts_move_tgt', tgt);
			t1 := clock_timestamp();
			PERFORM tablestore_router._node_exec('ts_move_tgt', format('DROP SUBSCRIPTION %I', name));
			cut := cut || format(', drop subscription %s ms', round(extract(epoch FROM clock_timestamp() - t1) * 1000));
		EXCEPTION WHEN OTHERS OR query_canceled THEN
			PERFORM tablestore_router._move_stop_subscription(name, tgt);
			PERFORM tablestore_router.unlock_partition_for_move(part);
			RAISE;
		END;
		-- the decision: from this commit on the target holds the partition
		PERFORM tablestore_router._move_step(m.id, 'switched');
		EXECUTE format('ALTER SERVER tablestore_cluster OPTIONS (SET %I %L)', 'p' || part, tgt);
		UPDATE tablestore_router._moves SET rows_moved = srcrows WHERE id = m.id;
		COMMIT;
	END IF;

	-- after the switch: the partition's lock released first (the cutover's
	-- pause ends here; the target serves the partition, and a query over
	-- every node drops the rows a node returns of partitions the map gives
	-- another node, so the source's old copy is never read), then the
	-- source's copy deleted and the replication objects dropped
	IF t0 IS NOT NULL THEN
		PERFORM tablestore_router.unlock_partition_for_move(part);
		UPDATE tablestore_router._moves SET cutover_ms = round(extract(epoch FROM clock_timestamp() - t0) * 1000, 1) WHERE id = m.id;
		COMMIT;
	END IF;
	PERFORM tablestore_router._node_exec('ts_move_tgt', format('DROP SUBSCRIPTION IF EXISTS %I', name));
	-- locked, checked, then deleted (_move_delete_sql: never an owner's
	-- code).  If that cannot be (a table's owner added code there, or holds
	-- a lock), the rows are recorded as left (tablestore_router.leftovers)
	-- and the move goes on: the target serves the partition and the router
	-- ignores the source's copy, and a cleanup that an owner can refuse
	-- must not keep the move, and with it every other move and table
	-- operation, unfinished
	leftwhy := tablestore_router._move_delete_rows('ts_move_src', mask, part);
	PERFORM tablestore_router._move_leftover(src, mask, part, m.id, leftwhy);
	PERFORM tablestore_router._move_step(m.id, 'cleanup');
	COMMIT;
	-- no subscription: the lock on the target's tables is no longer needed
	PERFORM tablestore_router._move_unlock_target();
	PERFORM tablestore_router._node_exec('ts_move_src', format('DROP PUBLICATION IF EXISTS %I', name));
	PERFORM tablestore_router._move_drop_slots(m.id, NULL);
	-- a filter that a lock keeps (it waits lock_timeout) is recorded and the
	-- move ends: a move to that node drops it first
	trigwhy := tablestore_router._move_drop_filters('ts_move_tgt', tgt, m.id);
	FOREACH c IN ARRAY ARRAY['ts_move_src', 'ts_move_tgt'] LOOP
		PERFORM tablestore_router._node_exec(c, format(
			'DO $d$BEGIN IF to_regclass(''tablestore_move.marker'') IS NOT NULL THEN DELETE FROM tablestore_move.marker WHERE id = %s; END IF; END$d$', m.id));
	END LOOP;
	-- rows_moved: the partition's entities the source held at the cutover
	-- (recorded at the switch; the target's count if a rerun finishes it)
	UPDATE tablestore_router._moves SET step = 'done', step_at = clock_timestamp(),
		detail = concat_ws('; ', cut,
			CASE WHEN leftwhy IS NOT NULL THEN 'the source''s rows are left (tablestore_router.leftovers)' END,
			CASE WHEN trigwhy IS NOT NULL THEN 'a filter trigger on the target is left (tablestore_router.leftovers)' END),
		finished_at = clock_timestamp(),
		rows_moved = coalesce(rows_moved, tablestore_router._move_count('ts_move_tgt', mask, part))
	WHERE id = m.id AND finished_at IS NULL;
	COMMIT;
	PERFORM tablestore_router._move_session_lock(false);
END $$;
COMMENT ON PROCEDURE tablestore_router.move_partition(integer, text, interval) IS 'move a partition to a node online (logical replication; the partition''s lock only for the cutover); run again, it completes an interrupted move';

REVOKE ALL ON PROCEDURE tablestore_router.move_partition(integer, text, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION tablestore_router._node_connect(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION tablestore_router._node_exec(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION tablestore_router._node_values(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION tablestore_router._move_pause(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION tablestore_router._move_step(bigint, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION tablestore_router._move_undo(bigint, integer, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION tablestore_router._move_table_sql(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION tablestore_router._move_target_reset_sql(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION tablestore_router._move_session_lock(boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION tablestore_router._move_owner_code_sql() FROM PUBLIC;
REVOKE ALL ON FUNCTION tablestore_router._move_check_owner_code(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION tablestore_router._move_delete_sql(integer, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION tablestore_router._move_count(text, integer, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION tablestore_router._node_identity(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION tablestore_router._move_drop_slots(bigint, text) FROM PUBLIC;

-- abort_move: the unfinished move abandoned, if it has not switched the
-- partition map (the source still holds the whole partition): its
-- subscription, publication, slots (which keep the source's WAL), filter
-- triggers and the target's partial copy removed, on the nodes reachable
-- (the source must be; a lost target is skipped), and the move marked
-- 'aborted'.  Returns what it did.  Superuser only.
CREATE FUNCTION tablestore_router.abort_move() RETURNS text
	LANGUAGE plpgsql AS $$
DECLARE
	m tablestore_router._moves;
	nparts integer := (SELECT count(*) FROM tablestore_router.partitions());
	cur text;
	tgt_up boolean := true;
	did text[] := '{}';
BEGIN
	IF NOT (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
		RAISE EXCEPTION 'only a superuser may abort moves' USING ERRCODE = 'insufficient_privilege';
	END IF;
	IF NOT tablestore_router._move_session_lock(true) THEN
		RAISE EXCEPTION 'a move is running in another session'
			USING ERRCODE = 'lock_not_available', HINT = 'End that process (pg_terminate_backend) first.';
	END IF;
	SELECT * INTO m FROM tablestore_router._moves WHERE finished_at IS NULL FOR UPDATE;
	IF NOT FOUND THEN
		PERFORM tablestore_router._move_session_lock(false);
		RETURN 'no unfinished move';
	END IF;
	cur := (SELECT node FROM tablestore_router.partitions() WHERE partition = m.partition);
	IF cur IS DISTINCT FROM m.source THEN
		RAISE EXCEPTION 'move % of partition % has switched it to % already', m.id, m.partition, cur
			USING ERRCODE = 'object_not_in_prerequisite_state',
				HINT = format('Complete it: CALL tablestore_router.move_partition(%s, %L).', m.partition, m.target);
	END IF;
	PERFORM tablestore_router._node_connect('ts_move_src', m.source);
	BEGIN
		PERFORM tablestore_router._node_connect('ts_move_tgt', m.target);
	EXCEPTION WHEN OTHERS THEN
		tgt_up := false;
		did := did || format('target %s unreachable (%s): its subscription, if any, is left', m.target, SQLERRM);
	END;
	IF tgt_up AND tablestore_router._node_identity('ts_move_src') = tablestore_router._node_identity('ts_move_tgt') THEN
		-- the target is the source: never delete "the target's copy"
		tgt_up := false;
		did := did || 'the target is the source: nothing deleted there'::text;
	END IF;
	IF tgt_up THEN
		PERFORM tablestore_router._move_undo(m.id, m.partition, nparts - 1);
		did := did || format('dropped subscription ts_move_%s and the filter triggers on %s', m.id, m.target)
			|| coalesce((SELECT 'the partial copy there is left (tablestore_router.leftovers)'
				FROM tablestore_router._leftovers l WHERE l.node = m.target AND l.mask = nparts - 1 AND l.partition = m.partition AND l.move = m.id),
				format('deleted the partial copy on %s', m.target));
	ELSE
		-- the filter triggers: the source's own tables (a move to itself)
		PERFORM tablestore_router._move_drop_filters('ts_move_src', m.source, m.id);
	END IF;
	did := did || (SELECT format('filter triggers left (tablestore_router.leftovers): %s', string_agg(format('%I on %s', l.trigger, l.node), ', '))
		FROM tablestore_router._left_triggers l WHERE l.move = m.id HAVING count(*) > 0);
	PERFORM tablestore_router._move_drop_slots(m.id, NULL);
	PERFORM tablestore_router._node_exec('ts_move_src', format('DROP PUBLICATION IF EXISTS %I', 'ts_move_' || m.id));
	did := did || format('dropped publication and inactive slot ts_move_%s on %s', m.id, m.source);
	did := did || coalesce((SELECT 'slots left on the source: ' || string_agg(v, ', ')
		FROM tablestore_router._node_values('ts_move_src',
			'SELECT slot_name::text FROM pg_catalog.pg_replication_slots WHERE slot_name LIKE ''ts\_move\_%'' OR slot_name LIKE ''pg\_%\_sync\_%''') v),
		'no move slot left on the source');
	UPDATE tablestore_router._moves SET step = 'aborted', detail = array_to_string(did, '; '), step_at = clock_timestamp(),
		finished_at = clock_timestamp(), last_error = 'aborted by abort_move' WHERE id = m.id;
	PERFORM tablestore_router._move_session_lock(false);
	RETURN format('move %s of partition %s aborted: %s', m.id, m.partition, array_to_string(did, '; '));
END $$;
COMMENT ON FUNCTION tablestore_router.abort_move() IS 'abandon the unfinished move (not yet switched): drop its replication objects and slots, the target''s partial copy';
REVOKE ALL ON FUNCTION tablestore_router.abort_move() FROM PUBLIC;
-- ---- end of issue 23, the attack on moves (fixmove) ----

-- ---- issue 23, the move's lock on the target (move2): while a move's
-- subscription applies on the target (as a superuser), the target's copies
-- of the tables are locked against the DDL that could add their owner's
-- code ----

-- _move_lock_target: the target's entity relations rels locked in SHARE
-- UPDATE EXCLUSIVE mode by the router session's dblink connection
-- 'ts_move_lock', in a transaction left open until the move's subscription
-- is gone.  That mode conflicts with every DDL that can add code a row
-- write runs (CREATE TRIGGER, ALTER TABLE ... ENABLE TRIGGER, ADD
-- CONSTRAINT, ADD COLUMN, SET DEFAULT, CREATE INDEX and CREATE INDEX
-- CONCURRENTLY, CREATE RULE, CREATE POLICY) but not with the replication's
-- and the calls' row writes (ROW EXCLUSIVE).  The lock transaction takes
-- no transaction id (it writes nothing), so it holds back no slot's
-- snapshot.  Waits for the lock at most lock_timeout (60 s when unset).
-- Then the target is checked again under the lock: owner code added after
-- the move's first check refuses the move before its subscription exists.
CREATE FUNCTION tablestore_router._move_lock_target(tgt text, rels text[]) RETURNS void
	LANGUAGE plpgsql AS $$
DECLARE
	lt text := CASE WHEN current_setting('lock_timeout') IN ('0', '0ms') THEN '60s' ELSE current_setting('lock_timeout') END;
BEGIN
	PERFORM tablestore_router._node_connect('ts_move_lock', tgt);
	PERFORM tablestore_router._node_exec('ts_move_lock', format(
		'SET application_name = %L; SET idle_in_transaction_session_timeout = 0; SET statement_timeout = 0; BEGIN; SET LOCAL lock_timeout = %L',
		'tablestore move lock', lt));
	IF cardinality(rels) > 0 THEN
		PERFORM tablestore_router._node_exec('ts_move_lock', format('LOCK TABLE %s IN SHARE UPDATE EXCLUSIVE MODE',
			(SELECT string_agg('tablestore_data.' || quote_ident(r), ', ') FROM unnest(rels) r)));
	END IF;
	PERFORM tablestore_router._move_check_owner_code('ts_move_lock', tgt);
END $$;

-- _move_check_lock: the lock of _move_lock_target still held (its
-- connection alive, its transaction open, one lock per table).  If not (the
-- target restarted, the connection was lost), the move's subscription is
-- disabled at once (an owner could now add code the apply worker would
-- run) and the move fails; a rerun starts it again.
CREATE FUNCTION tablestore_router._move_check_lock(name text, tgt text, nrels integer) RETURNS void
	LANGUAGE plpgsql AS $$
DECLARE
	held bigint;
BEGIN
	BEGIN
		held := (SELECT * FROM tablestore_router._node_values('ts_move_lock',
			'SELECT count(*) FROM pg_catalog.pg_locks WHERE pid = pg_catalog.pg_backend_pid() AND locktype = ''relation'' AND mode = ''ShareUpdateExclusiveLock'' AND granted'))::bigint;
	EXCEPTION WHEN OTHERS THEN
		held := NULL;
	END;
	IF held IS DISTINCT FROM nrels THEN
		PERFORM tablestore_router._move_stop_subscription(name, tgt);
		RAISE EXCEPTION 'move %: the lock on the target''s tables was lost', name
			USING ERRCODE = 'object_not_in_prerequisite_state',
				DETAIL = 'Without it a table''s owner could add code that the replication would run as a superuser; the subscription is disabled.',
				HINT = 'Run the move again to continue it.';
	END IF;
END $$;

-- _move_stop_subscription: the move's subscription on the target disabled,
-- if the target can be reached (again): a move that fails stops its apply
-- worker before its session, and with it the lock, may end (a rerun starts
-- the copy again anyway)
CREATE FUNCTION tablestore_router._move_stop_subscription(name text, tgt text) RETURNS void
	LANGUAGE plpgsql AS $$
BEGIN
	BEGIN
		PERFORM tablestore_router._node_exec('ts_move_tgt', format('ALTER SUBSCRIPTION %I DISABLE', name));
	EXCEPTION WHEN OTHERS THEN
		BEGIN
			PERFORM tablestore_router._node_connect('ts_move_tgt', tgt);
			PERFORM tablestore_router._node_exec('ts_move_tgt', format('ALTER SUBSCRIPTION %I DISABLE', name));
		EXCEPTION WHEN OTHERS THEN
			NULL;				-- the target is unreachable: nothing runs there
		END;
	END;
END $$;

-- _move_poll: after pause seconds, the lock checked (above), then query run
-- on connection conn; whatever fails (a lost node, a cancel) stops the
-- subscription first, then is raised
CREATE FUNCTION tablestore_router._move_poll(name text, tgt text, nrels integer, conn text, query text, pause float8)
	RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_catalog.pg_sleep(pause);
	PERFORM tablestore_router._move_check_lock(name, tgt, nrels);
	RETURN QUERY SELECT * FROM tablestore_router._node_values(conn, query);
EXCEPTION WHEN OTHERS OR query_canceled THEN
	PERFORM tablestore_router._move_stop_subscription(name, tgt);
	RAISE;
END $$;

-- _move_unlock_target: the lock of _move_lock_target released (its
-- connection closed, which ends the transaction), if this session holds it
CREATE FUNCTION tablestore_router._move_unlock_target() RETURNS void
	LANGUAGE plpgsql AS $$
DECLARE
	s text := tablestore_router._dblink_schema();
	open text[];
BEGIN
	IF s IS NULL THEN
		RETURN;
	END IF;
	EXECUTE format('SELECT %I.dblink_get_connections()', s) INTO open;
	IF 'ts_move_lock' = ANY (open) THEN
		EXECUTE format('SELECT %I.dblink_disconnect($1)', s) USING 'ts_move_lock';
	END IF;
END $$;

REVOKE ALL ON FUNCTION tablestore_router._move_lock_target(text, text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION tablestore_router._move_check_lock(text, text, integer) FROM PUBLIC;
-- _move_count_both: _move_count of the source and of the target, the two
-- scans run at once (they are most of the cutover's pause with a large
-- partition)
CREATE FUNCTION tablestore_router._move_count_both(mask integer, part integer, OUT src bigint, OUT tgt bigint)
	LANGUAGE plpgsql AS $$
DECLARE
	s text := tablestore_router._dblink_schema();
	c text;
	q text;
	v bigint[] := '{}';
BEGIN
	FOREACH c IN ARRAY ARRAY['ts_move_src', 'ts_move_tgt'] LOOP
		q := (SELECT 'SELECT (0' || coalesce(string_agg(format(' + (SELECT count(*) FROM tablestore_data.%I WHERE (tablestore.partition_hash(pk) & %s) = %s)', r, mask, part), ''), '') || ')::text'
			FROM tablestore_router._node_values(c, $r$SELECT t.relation_name FROM tablestore.tables t
				JOIN pg_catalog.pg_class c ON c.oid = pg_catalog.to_regclass('tablestore_data.' || pg_catalog.quote_ident(t.relation_name))
				WHERE c.relkind = 'r'$r$) r);
		EXECUTE format('SELECT %I.dblink_send_query($1, $2)', s) USING c, q;
	END LOOP;
	FOREACH c IN ARRAY ARRAY['ts_move_src', 'ts_move_tgt'] LOOP
		EXECUTE format('SELECT v::bigint FROM %I.dblink_get_result($1, true) AS t(v text)', s) INTO q USING c;
		v := v || q::bigint;
		EXECUTE format('SELECT count(*) FROM %I.dblink_get_result($1, true) AS t(v text)', s) USING c;
	END LOOP;
	src := v[1];
	tgt := v[2];
END $$;

REVOKE ALL ON FUNCTION tablestore_router._move_unlock_target() FROM PUBLIC;
REVOKE ALL ON FUNCTION tablestore_router._move_count_both(integer, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION tablestore_router._move_stop_subscription(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION tablestore_router._move_poll(text, text, integer, text, text, float8) FROM PUBLIC;
-- ---- end of issue 23, the move's lock on the target (move2) ----

-- rebalance_plan: the moves that spread the partitions over the nodes so
-- that each holds about the same number of entities (each partition
-- weighs its entities plus one, so that an empty cluster is spread by
-- partitions): add_nodes join the cluster, every partition of drain_nodes
-- leaves it (largest first, each to the lightest node), then, while it
-- makes the heaviest node lighter, the largest partition of the heaviest
-- node that fits moves to the lightest.  Counts each node's entities per
-- partition (dblink, superuser).  tools/cluster-rebalance.sh runs the plan.
CREATE FUNCTION tablestore_router.rebalance_plan(add_nodes text[] DEFAULT '{}', drain_nodes text[] DEFAULT '{}')
	RETURNS TABLE (step integer, partition integer, source text, target text, entities bigint)
	LANGUAGE plpgsql AS $$
DECLARE
	nparts integer := (SELECT count(*) FROM tablestore_router.partitions());
	mask integer := nparts - 1;
	nodes text[];
	drains text[] := '{}';
	pnode integer[];
	w bigint[];
	load bigint[];
	q text;
	r record;
	h integer;
	l integer;
	best integer;
	i integer := 0;
	d text;
BEGIN
	IF NOT (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
		RAISE EXCEPTION 'only a superuser may plan moves' USING ERRCODE = 'insufficient_privilege';
	END IF;
	SELECT array_agg(DISTINCT node ORDER BY node) INTO nodes FROM tablestore_router.partitions();
	FOREACH d IN ARRAY coalesce(add_nodes, '{}') LOOP
		d := tablestore_router.node_string(d);
		PERFORM tablestore_router._check_nodes(ARRAY[d]);
		IF NOT d = ANY (nodes) THEN
			nodes := nodes || d;
		END IF;
	END LOOP;
	FOREACH d IN ARRAY coalesce(drain_nodes, '{}') LOOP
		drains := drains || tablestore_router.node_string(d);
	END LOOP;
	IF NOT EXISTS (SELECT FROM unnest(nodes) n WHERE NOT n = ANY (drains)) THEN
		RAISE EXCEPTION 'draining every node leaves none' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	pnode := array_fill(0, ARRAY[nparts]);
	w := array_fill(1::bigint, ARRAY[nparts]);
	load := array_fill(0::bigint, ARRAY[cardinality(nodes)]);
	FOR r IN SELECT p.partition, p.node FROM tablestore_router.partitions() p LOOP
		pnode[r.partition + 1] := array_position(nodes, r.node);
	END LOOP;
	-- each node's entities per partition it holds
	FOR h IN 1 .. cardinality(nodes) LOOP
		CONTINUE WHEN NOT nodes[h] = ANY (SELECT node FROM tablestore_router.partitions());
		PERFORM tablestore_router._node_connect('ts_plan', nodes[h]);
		-- plain scans of ordinary tables (not a relation its owner made a
		-- view of): the superuser's count runs none of the owner's code
		q := (SELECT string_agg(format('SELECT tablestore.partition_hash(pk) & %s AS p FROM tablestore_data.%I', mask, v), ' UNION ALL ')
			FROM tablestore_router._node_values('ts_plan', $r$SELECT t.relation_name FROM tablestore.tables t
				JOIN pg_catalog.pg_class c ON c.oid = pg_catalog.to_regclass('tablestore_data.' || pg_catalog.quote_ident(t.relation_name))
				WHERE c.relkind = 'r'$r$) v);
		IF q IS NOT NULL THEN
			FOR r IN SELECT split_part(v, ' ', 1)::integer AS p, split_part(v, ' ', 2)::bigint AS n
				FROM tablestore_router._node_values('ts_plan', 'SELECT p || '' '' || count(*) FROM (' || q || ') x GROUP BY p') v
			LOOP
				IF pnode[r.p + 1] = h THEN
					w[r.p + 1] := w[r.p + 1] + r.n;
				END IF;
			END LOOP;
		END IF;
	END LOOP;
	FOR best IN 1 .. nparts LOOP
		load[pnode[best]] := load[pnode[best]] + w[best];
	END LOOP;
	-- the drained nodes' partitions, largest first, each to the lightest node
	FOR best IN SELECT o FROM unnest(w) WITH ORDINALITY AS u(x, o)
			WHERE nodes[pnode[o]] = ANY (drains) ORDER BY x DESC, o LOOP
		SELECT o INTO l FROM unnest(load) WITH ORDINALITY AS u(x, o) WHERE NOT nodes[o] = ANY (drains) ORDER BY x, o LIMIT 1;
		i := i + 1;
		step := i; partition := best - 1; source := nodes[pnode[best]]; target := nodes[l]; entities := w[best] - 1;
		RETURN NEXT;
		load[pnode[best]] := load[pnode[best]] - w[best];
		load[l] := load[l] + w[best];
		pnode[best] := l;
	END LOOP;
	-- then from the heaviest node to the lightest while that helps
	FOR k IN 1 .. nparts LOOP
		SELECT o INTO h FROM unnest(load) WITH ORDINALITY AS u(x, o) WHERE NOT nodes[o] = ANY (drains) ORDER BY x DESC, o LIMIT 1;
		SELECT o INTO l FROM unnest(load) WITH ORDINALITY AS u(x, o) WHERE NOT nodes[o] = ANY (drains) ORDER BY x, o LIMIT 1;
		best := (SELECT o FROM unnest(w) WITH ORDINALITY AS u(x, o)
			WHERE pnode[o] = h AND x < load[h] - load[l] ORDER BY x DESC, o LIMIT 1);
		EXIT WHEN best IS NULL OR h = l;
		i := i + 1;
		step := i; partition := best - 1; source := nodes[h]; target := nodes[l]; entities := w[best] - 1;
		RETURN NEXT;
		load[h] := load[h] - w[best];
		load[l] := load[l] + w[best];
		pnode[best] := l;
	END LOOP;
END $$;
COMMENT ON FUNCTION tablestore_router.rebalance_plan(text[], text[]) IS 'the partition moves that add and drain nodes and even out the entities per node (run by tools/cluster-rebalance.sh)';
REVOKE ALL ON FUNCTION tablestore_router.rebalance_plan(text[], text[]) FROM PUBLIC;

-- ---- issue 23 A3, the source's copy left after the switch (leftovers):
-- a cleanup that cannot delete a partition's rows on a node that no
-- longer serves it (a table's owner added code there, or holds a lock)
-- records them and lets the move end; a later move of the partition to
-- that node removes them first, clean_leftovers retries ----

-- Rows of a partition left on a node that does not serve it: the router
-- ignores them (a query over every node drops the rows a node returns of
-- partitions the map gives another node), rebalance_plan does not count
-- them.  mask is the partition map's (partitions - 1) when recorded.
CREATE TABLE tablestore_router._leftovers (
	node text NOT NULL,
	partition integer NOT NULL,
	mask integer NOT NULL,
	move bigint NOT NULL,
	reason text NOT NULL,
	recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	PRIMARY KEY (node, mask, partition)
);
COMMENT ON TABLE tablestore_router._leftovers IS 'rows of a partition that a move could not delete on a node that no longer serves it';

-- A move's filter trigger (ts_move_N, ENABLE REPLICA) that it could not
-- drop on a node (a lock there outlasted lock_timeout): it does nothing
-- without the move's subscription, but it would filter a later move's
-- copy into that table, so a move to the node drops it first (or is
-- refused naming it); clean_leftovers drops it too.
CREATE TABLE tablestore_router._left_triggers (
	node text NOT NULL,
	relation text NOT NULL,
	trigger text NOT NULL,
	move bigint NOT NULL,
	reason text NOT NULL,
	recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	PRIMARY KEY (node, relation, trigger)
);
COMMENT ON TABLE tablestore_router._left_triggers IS 'filter triggers of finished moves that could not be dropped on a node';

-- superuser only (no grant): the reasons name other tenants' tables and
-- objects
CREATE VIEW tablestore_router.leftovers AS
	SELECT node, partition, mask + 1 AS partitions, move, 'rows'::text AS object, reason, recorded_at
	FROM tablestore_router._leftovers
	UNION ALL
	SELECT node, NULL, NULL, move, format('trigger %I on tablestore_data.%I', trigger, relation), reason, recorded_at
	FROM tablestore_router._left_triggers;
COMMENT ON VIEW tablestore_router.leftovers IS 'rows of a partition, and filter triggers, a move left on a node that does not serve them (ignored by the router; removed by a move to that node or by clean_leftovers)';
REVOKE ALL ON tablestore_router._leftovers, tablestore_router._left_triggers, tablestore_router.leftovers FROM PUBLIC;

-- _drop_filter: the filter trigger trig of table rel dropped on a node
-- (connection conn), if both are still there; it waits for the table's
-- lock at most lock_timeout (_node_connect) and raises if it cannot
CREATE FUNCTION tablestore_router._drop_filter(conn text, trig text, rel text) RETURNS void
	LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT FROM tablestore_router._node_values(conn, format(
			'SELECT 1 FROM pg_catalog.pg_trigger WHERE tgname = %L AND tgrelid = pg_catalog.to_regclass(%L)',
			trig, 'tablestore_data.' || quote_ident(rel)))) THEN
		PERFORM tablestore_router._node_exec(conn, format('DROP TRIGGER IF EXISTS %I ON tablestore_data.%I', trig, rel));
	END IF;
END $$;
REVOKE ALL ON FUNCTION tablestore_router._drop_filter(text, text, text) FROM PUBLIC;

-- _move_drop_filters: the filter triggers of move dropped on node
-- (connection conn); one that cannot be (a lock held there past
-- lock_timeout, a lost node) is recorded in _left_triggers rather than
-- keeping the move, and every move and table operation with it,
-- unfinished.  NULL when all are dropped, else why not.
CREATE FUNCTION tablestore_router._move_drop_filters(conn text, node text, move bigint) RETURNS text
	LANGUAGE plpgsql AS $$
DECLARE
	trig text := 'ts_move_' || move;
	rel text;
	errs text[] := '{}';
BEGIN
	FOR rel IN SELECT * FROM tablestore_router._node_values(conn, format(
			'SELECT c.relname FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
			 WHERE t.tgname = %L AND c.relnamespace = ''tablestore_data''::pg_catalog.regnamespace', trig))
	LOOP
		BEGIN
			PERFORM tablestore_router._drop_filter(conn, trig, rel);
			DELETE FROM tablestore_router._left_triggers l WHERE l.node = $2 AND l.relation = rel AND l.trigger = trig;
		EXCEPTION WHEN OTHERS THEN
			INSERT INTO tablestore_router._left_triggers AS l (node, relation, trigger, move, reason)
				VALUES ($2, rel, trig, $3, SQLERRM)
				ON CONFLICT ON CONSTRAINT _left_triggers_pkey
				DO UPDATE SET move = excluded.move, reason = excluded.reason, recorded_at = clock_timestamp();
			errs := errs || format('trigger %I on tablestore_data.%I: %s', trig, rel, SQLERRM);
			RAISE WARNING 'the filter trigger % on tablestore_data.% on % is left (tablestore_router.leftovers): %', trig, rel, $2, SQLERRM
				USING HINT = 'A move to that node drops it first; or end what holds the lock, then SELECT * FROM tablestore_router.clean_leftovers();';
		END;
	END LOOP;
	RETURN nullif(array_to_string(errs, '; '), '');
END $$;
REVOKE ALL ON FUNCTION tablestore_router._move_drop_filters(text, text, bigint) FROM PUBLIC;

-- _move_delete_rows: the rows of partition part (of mask + 1) of every
-- entity relation on a node deleted through connection conn, as
-- _move_delete_sql does it (locked, checked against the whitelist under
-- the lock, deleted as the superuser), waiting for the locks at most
-- lock_timeout (60 s when unset: an owner's lock must not hold the mover
-- for ever).  NULL when done, else why not (the rows stay).
CREATE FUNCTION tablestore_router._move_delete_rows(conn text, mask integer, part integer) RETURNS text
	LANGUAGE plpgsql AS $$
DECLARE
	lt text := tablestore_router._lock_timeout();
	stmts text;
BEGIN
	stmts := (SELECT * FROM tablestore_router._node_values(conn, tablestore_router._move_delete_sql(mask, part)));
	IF stmts IS NOT NULL THEN
		PERFORM tablestore_router._node_exec(conn, format('SET LOCAL lock_timeout = %L; ', lt) || stmts);
	END IF;
	RETURN NULL;
EXCEPTION WHEN OTHERS THEN
	RETURN SQLERRM;
END $$;
REVOKE ALL ON FUNCTION tablestore_router._move_delete_rows(text, integer, integer) FROM PUBLIC;

-- _move_leftover: the outcome of deleting partition part's rows on node
-- (err from _move_delete_rows) recorded: a failure as a leftover of move,
-- a success removes the record
CREATE FUNCTION tablestore_router._move_leftover(node text, mask integer, part integer, move bigint, err text) RETURNS void
	LANGUAGE plpgsql AS $$
BEGIN
	IF err IS NULL THEN
		DELETE FROM tablestore_router._leftovers l WHERE l.node = $1 AND l.mask = $2 AND l.partition = $3;
	ELSE
		INSERT INTO tablestore_router._leftovers AS l (node, partition, mask, move, reason)
			VALUES ($1, $3, $2, $4, $5)
			ON CONFLICT ON CONSTRAINT _leftovers_pkey
			DO UPDATE SET move = excluded.move, reason = excluded.reason, recorded_at = clock_timestamp();
		RAISE WARNING 'the rows of partition % on % are left (tablestore_router.leftovers): %', part, node, err
			USING HINT = 'The router ignores them; drop what the error names, then SELECT * FROM tablestore_router.clean_leftovers();';
	END IF;
END $$;
REVOKE ALL ON FUNCTION tablestore_router._move_leftover(text, integer, integer, bigint, text) FROM PUBLIC;

-- _move_remove_leftovers: before node (connection conn) is given partition
-- part (of mask + 1), the rows left there of every partition overlapping
-- it are deleted (they are stale: another node served them since), or the
-- move is refused naming the leftover and what stops its deletion: the
-- node must never serve a partition with stale rows (duplicated or
-- resurrected entities)
CREATE FUNCTION tablestore_router._move_remove_leftovers(conn text, node text, mask integer, part integer) RETURNS void
	LANGUAGE plpgsql AS $$
DECLARE
	l tablestore_router._leftovers;
	t tablestore_router._left_triggers;
	err text;
	srel text;
	strig text;
BEGIN
	-- a filter trigger a move left there would filter this move's copy
	FOR t IN SELECT * FROM tablestore_router._left_triggers x WHERE x.node = $2 ORDER BY x.relation, x.trigger LOOP
		BEGIN
			PERFORM tablestore_router._drop_filter(conn, t.trigger, t.relation);
		EXCEPTION WHEN OTHERS THEN
			RAISE EXCEPTION 'partition %: the filter trigger % on tablestore_data.% left on % by move % cannot be dropped: %', part, t.trigger, t.relation, node, t.move, SQLERRM
				USING ERRCODE = 'object_not_in_prerequisite_state',
					DETAIL = 'It would filter the move''s copy into that table.',
					HINT = 'End what holds the lock on that node, then move again.';
		END;
		DELETE FROM tablestore_router._left_triggers x WHERE x.node = t.node AND x.relation = t.relation AND x.trigger = t.trigger;
	END LOOP;
	-- and any other filter trigger of the mover's there, recorded or not
	-- (abort_move with the target lost could not see them): no move runs
	-- but this one, which has made none yet (a rerun's undo dropped its
	-- own), so each is a finished or aborted move's and would filter this
	-- move's copy
	FOR srel, strig IN SELECT split_part(v, '/', 1), substr(v, strpos(v, '/') + 1)
		FROM tablestore_router._node_values(conn,
			'SELECT c.relname || ''/'' || t.tgname FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
			 WHERE t.tgname ~ ''^ts_move_[0-9]+$'' AND c.relnamespace = ''tablestore_data''::pg_catalog.regnamespace
			   AND t.tgfoid = pg_catalog.to_regprocedure(''tablestore_move.keep_partition()'') ORDER BY 1') v
	LOOP
		BEGIN
			PERFORM tablestore_router._drop_filter(conn, strig, srel);
		EXCEPTION WHEN OTHERS THEN
			RAISE EXCEPTION 'partition %: the filter trigger % on tablestore_data.% left on % by an earlier move cannot be dropped: %', part, strig, srel, node, SQLERRM
				USING ERRCODE = 'object_not_in_prerequisite_state',
					DETAIL = 'It would filter the move''s copy into that table.',
					HINT = 'End what holds the lock on that node, then move again.';
		END;
	END LOOP;
	FOR l IN SELECT * FROM tablestore_router._leftovers x
			WHERE x.node = $2 AND (x.partition & x.mask & $3) = ($4 & x.mask & $3) ORDER BY x.mask, x.partition LOOP
		err := tablestore_router._move_delete_rows(conn, l.mask, l.partition);
		IF err IS NOT NULL THEN
			RAISE EXCEPTION 'partition %: the rows of partition % left on % by move % cannot be deleted: %', part, l.partition, node, l.move, err
				USING ERRCODE = 'object_not_in_prerequisite_state',
					DETAIL = 'The node would serve them again: stale, deleted or doubled entities.',
					HINT = 'Drop what the error names on that node, then move again.';
		END IF;
		DELETE FROM tablestore_router._leftovers x WHERE x.node = l.node AND x.mask = l.mask AND x.partition = l.partition;
	END LOOP;
END $$;
REVOKE ALL ON FUNCTION tablestore_router._move_remove_leftovers(text, text, integer, integer) FROM PUBLIC;

-- clean_leftovers: every leftover deleted again (superuser), as the mover
-- deletes (locked, checked, then deleted): those whose deletion succeeds
-- are forgotten, the others keep their (new) reason.  A leftover of a
-- partition that its node serves (the map changed by hand) or that the
-- unfinished move is giving it is kept.  One row per leftover.
CREATE FUNCTION tablestore_router.clean_leftovers()
	RETURNS TABLE (node text, partition integer, move bigint, result text)
	LANGUAGE plpgsql AS $$
DECLARE
	l tablestore_router._leftovers;
	t tablestore_router._left_triggers;
	u tablestore_router._moves;
	mask integer := (SELECT count(*) FROM tablestore_router.partitions()) - 1;
	err text;
	open text[];
BEGIN
	IF NOT (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
		RAISE EXCEPTION 'only a superuser may clean leftovers' USING ERRCODE = 'insufficient_privilege';
	END IF;
	-- no move runs meanwhile (it could be copying the partition there)
	IF NOT tablestore_router._move_session_lock(true) THEN
		RAISE EXCEPTION 'a move is running in another session'
			USING ERRCODE = 'lock_not_available', HINT = 'Wait for it to end, then clean again.';
	END IF;
	SELECT * INTO u FROM tablestore_router._moves WHERE finished_at IS NULL;
	FOR l IN SELECT * FROM tablestore_router._leftovers ORDER BY 1, 3, 2 LOOP
		node := l.node; partition := l.partition; move := l.move;
		IF EXISTS (SELECT FROM tablestore_router.partitions() p
				WHERE p.node = l.node AND (p.partition & l.mask & mask) = (l.partition & l.mask & mask)) THEN
			result := 'kept: the node serves the partition';
		ELSIF u.id IS NOT NULL AND u.target = l.node AND (u.partition & l.mask & mask) = (l.partition & l.mask & mask) THEN
			result := format('kept: move %s will remove it', u.id);
		ELSE
			BEGIN
				PERFORM tablestore_router._node_connect('ts_clean', l.node);
				err := tablestore_router._move_delete_rows('ts_clean', l.mask, l.partition);
			EXCEPTION WHEN OTHERS THEN
				err := SQLERRM;
			END;
			IF err IS NULL THEN
				DELETE FROM tablestore_router._leftovers x WHERE x.node = l.node AND x.mask = l.mask AND x.partition = l.partition;
				result := 'deleted';
			ELSE
				UPDATE tablestore_router._leftovers x SET reason = err, recorded_at = clock_timestamp()
				WHERE x.node = l.node AND x.mask = l.mask AND x.partition = l.partition;
				result := 'kept: ' || err;
			END IF;
		END IF;
		RETURN NEXT;
	END LOOP;
	FOR t IN SELECT * FROM tablestore_router._left_triggers ORDER BY 1, 2, 3 LOOP
		node := t.node; partition := NULL; move := t.move;
		IF u.id IS NOT NULL AND u.id = t.move THEN
			result := format('kept: move %s is unfinished', u.id);
		ELSE
			BEGIN
				PERFORM tablestore_router._node_connect('ts_clean', t.node);
				PERFORM tablestore_router._drop_filter('ts_clean', t.trigger, t.relation);
				err := NULL;
			EXCEPTION WHEN OTHERS THEN
				err := SQLERRM;
			END;
			IF err IS NULL THEN
				DELETE FROM tablestore_router._left_triggers x WHERE x.node = t.node AND x.relation = t.relation AND x.trigger = t.trigger;
				result := 'deleted';
			ELSE
				UPDATE tablestore_router._left_triggers x SET reason = err, recorded_at = clock_timestamp()
				WHERE x.node = t.node AND x.relation = t.relation AND x.trigger = t.trigger;
				result := 'kept: ' || err;
			END IF;
		END IF;
		RETURN NEXT;
	END LOOP;
	IF tablestore_router._dblink_schema() IS NOT NULL THEN
		EXECUTE format('SELECT %I.dblink_get_connections()', tablestore_router._dblink_schema()) INTO open;
	END IF;
	IF 'ts_clean' = ANY (open) THEN
		EXECUTE format('SELECT %I.dblink_disconnect($1)', tablestore_router._dblink_schema()) USING 'ts_clean';
	END IF;
	PERFORM tablestore_router._move_session_lock(false);
END $$;
COMMENT ON FUNCTION tablestore_router.clean_leftovers() IS 'delete again the rows of partitions left on nodes that no longer serve them (tablestore_router.leftovers), as the mover deletes';
REVOKE ALL ON FUNCTION tablestore_router.clean_leftovers() FROM PUBLIC;
-- ---- end of issue 23 A3 ----
