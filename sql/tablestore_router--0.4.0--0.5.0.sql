-- tablestore_router 0.4.0 -> 0.5.0 (issue 21, findings 12-17).
--
-- Node strings are read with libpq's parser and may name where a node is,
-- never who connects (_check_nodes, node_string); a mover's locks are of a
-- class no SQL function takes and are taken through superuser-only
-- functions (lock_partition_for_move, unlock_partition_for_move).  The
-- library checks the configuration whenever it reads it: a 0.4.0 cluster
-- whose node strings lack dbname, set a refused keyword, or name one node
-- in two spellings routes no call until it is configured again.

\echo Use "ALTER EXTENSION tablestore_router UPDATE TO '0.5.0'" to load this file. \quit

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
CREATE OR REPLACE FUNCTION tablestore_router.configure(nodes text[], partitions integer DEFAULT 16) RETURNS void
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

REVOKE EXECUTE ON FUNCTION tablestore_router._check_nodes(text[]) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION tablestore_router.lock_partition_for_move(integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION tablestore_router.unlock_partition_for_move(integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION tablestore_router.node_string(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tablestore_router.node_string(text) TO PUBLIC;
