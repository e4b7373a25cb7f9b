-- tablestore_router: one tablestore across many PostgreSQL servers.
-- This is the editable install script; the build copies it to
-- tablestore_router--<version>.sql.
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

CREATE FUNCTION tablestore.partition_hash(partition_key text) RETURNS integer
	AS 'MODULE_PATHNAME', 'partition_hash' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tablestore.partition_hash(text) IS 'the stable hash of a PartitionKey that the router routes by';

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

-- The API: the signatures of extension tablestore

CREATE FUNCTION tablestore.create_table(table_name text) RETURNS void
	AS 'MODULE_PATHNAME', 'router_create_table' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.create_table(text) IS 'create a table on every node';

CREATE FUNCTION tablestore.delete_table(table_name text) RETURNS void
	AS 'MODULE_PATHNAME', 'router_delete_table' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.delete_table(text) IS 'delete a table and all its entities on every node';

CREATE FUNCTION tablestore.list_tables(filter text DEFAULT NULL) RETURNS SETOF text
	AS 'MODULE_PATHNAME', 'router_list_tables' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore.list_tables(text) IS 'the names of the tables (on every node) matching a $filter on TableName, in ordinal order';

CREATE FUNCTION tablestore.insert_entity(table_name text, entity jsonb) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'router_insert_entity' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.insert_entity(text, jsonb) IS 'insert an entity; EntityAlreadyExists if its key exists';

CREATE FUNCTION tablestore.update_entity(table_name text, entity jsonb, if_match text DEFAULT '*') RETURNS jsonb
	AS 'MODULE_PATHNAME', 'router_update_entity' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.update_entity(text, jsonb, text) IS 'replace an existing entity whole, if its ETag matches';

CREATE FUNCTION tablestore.merge_entity(table_name text, entity jsonb, if_match text DEFAULT '*') RETURNS jsonb
	AS 'MODULE_PATHNAME', 'router_merge_entity' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.merge_entity(text, jsonb, text) IS 'overwrite the given properties of an existing entity, if its ETag matches';

CREATE FUNCTION tablestore.insert_or_replace_entity(table_name text, entity jsonb) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'router_insert_or_replace_entity' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.insert_or_replace_entity(text, jsonb) IS 'replace the entity, or insert it';

CREATE FUNCTION tablestore.insert_or_merge_entity(table_name text, entity jsonb) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'router_insert_or_merge_entity' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.insert_or_merge_entity(text, jsonb) IS 'merge into the entity, or insert it';

CREATE FUNCTION tablestore.delete_entity(table_name text, partition_key text, row_key text, if_match text DEFAULT '*') RETURNS void
	AS 'MODULE_PATHNAME', 'router_delete_entity' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.delete_entity(text, text, text, text) IS 'delete an entity, if its ETag matches';

CREATE FUNCTION tablestore.get_entity(table_name text, partition_key text, row_key text, select_list text DEFAULT NULL) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'router_get_entity' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore.get_entity(text, text, text, text) IS 'one entity by its keys, optionally projected to a $select list';

-- runs in the router itself: it reads no table
CREATE FUNCTION tablestore.validate_entity(entity jsonb) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'validate_entity' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION tablestore.validate_entity(jsonb) IS 'validate an entity as a write would and return its properties in the stored form, writing nothing';

CREATE FUNCTION tablestore._query_entities(table_name text, filter text, select_list text, top integer)
	RETURNS SETOF jsonb
	AS 'MODULE_PATHNAME', 'router_query_entities' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore._query_entities(text, text, text, integer) IS 'internal: the streaming scan of query_entities, page by page over the nodes';

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
	AS 'MODULE_PATHNAME', 'router_query_entities_page' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore.query_entities_page(text, text, text, integer, text, text) IS 'one page of a query (at most 1,000 entities) and its continuation';

CREATE FUNCTION tablestore._query_entities_json(table_name text, filter text, select_list text, top integer)
	RETURNS SETOF json
	AS 'MODULE_PATHNAME', 'router_query_entities_json' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore._query_entities_json(text, text, text, integer) IS 'internal: the streaming scan of query_entities_json';

CREATE FUNCTION tablestore.query_entities_json(table_name text, filter text DEFAULT NULL, select_list text DEFAULT NULL,
		top integer DEFAULT NULL)
	RETURNS SETOF json LANGUAGE sql STABLE
	BEGIN ATOMIC
		SELECT tablestore._query_entities_json(table_name, filter, select_list, top);
	END;
COMMENT ON FUNCTION tablestore.query_entities_json(text, text, text, integer) IS 'query_entities with each entity as json text';

CREATE FUNCTION tablestore.query_entities_page_json(table_name text, filter text DEFAULT NULL, select_list text DEFAULT NULL,
		top integer DEFAULT NULL, next_partition_key text DEFAULT NULL, next_row_key text DEFAULT NULL)
	RETURNS TABLE (entities json, next_partition_key text, next_row_key text)
	AS 'MODULE_PATHNAME', 'router_query_entities_page_json' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore.query_entities_page_json(text, text, text, integer, text, text) IS 'query_entities_page with the page as json text';

CREATE FUNCTION tablestore.query_page(table_name text, filter text DEFAULT NULL, select_list text DEFAULT NULL,
		top integer DEFAULT NULL, next_partition_key text DEFAULT NULL, next_row_key text DEFAULT NULL)
	RETURNS TABLE (entity json, next_partition_key text, next_row_key text)
	AS 'MODULE_PATHNAME', 'router_query_page' LANGUAGE C STABLE ROWS 1000;
COMMENT ON FUNCTION tablestore.query_page(text, text, text, integer, text, text) IS 'one page of a query as rows, then its continuation';

CREATE FUNCTION tablestore.explain_query(table_name text, filter text) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'router_explain_query' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore.explain_query(text, text) IS 'how a $filter on a table is executed on a node';

CREATE FUNCTION tablestore.execute_batch(table_name text, operations jsonb) RETURNS SETOF jsonb
	AS 'MODULE_PATHNAME', 'router_execute_batch' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.execute_batch(text, jsonb) IS 'run up to 100 operations on one partition, all or nothing, on its node';

-- runs in the router itself
CREATE FUNCTION tablestore.error_codes(OUT code text, OUT sqlstate text, OUT http_status integer, OUT description text,
		OUT service_message text)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'error_codes' LANGUAGE C IMMUTABLE;
COMMENT ON FUNCTION tablestore.error_codes() IS 'the Table service error codes and the SQLSTATE each is raised with';

-- Issue 22 ($select, $top=0): query_page with each entity's keys, as on a
-- node, for the HTTP gateway in front of a router: a $select that does not
-- name PartitionKey and RowKey leaves them out of the entity
CREATE FUNCTION tablestore._query_page_keyed(table_name text, filter text, select_list text,
		top integer, next_partition_key text, next_row_key text)
	RETURNS TABLE (entity json, next_partition_key text, next_row_key text, partition_key text, row_key text)
	AS 'MODULE_PATHNAME', 'router_query_page' LANGUAGE C STABLE ROWS 1000;
COMMENT ON FUNCTION tablestore._query_page_keyed(text, text, text, integer, text, text) IS 'internal: query_page with each entity''s keys, for the HTTP gateway';

-- Stored access policies (Get/Set Table ACL, issue 22 item 8): begin
-- Every node keeps a table's policies with its copy of the table (so that
-- delete_table, run on every node, removes them): set replaces them on
-- every node, get reads every node's and answers them if they agree.
CREATE FUNCTION tablestore_router._set_table_acl(table_name text, acl jsonb)
	RETURNS SETOF jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON ALL;
	SELECT tablestore._routed_set_table_acl(table_name, acl) AS _set_table_acl; $$;
CREATE FUNCTION tablestore_router._get_table_acl(table_name text)
	RETURNS SETOF jsonb
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON ALL;
	SELECT tablestore._routed_get_table_acl(table_name) AS _get_table_acl; $$;
REVOKE EXECUTE ON FUNCTION tablestore_router._set_table_acl(text, jsonb), tablestore_router._get_table_acl(text) FROM PUBLIC;

CREATE FUNCTION tablestore.set_table_acl(table_name text, acl jsonb) RETURNS void
	AS 'MODULE_PATHNAME', 'router_set_table_acl' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.set_table_acl(text, jsonb) IS 'replace a table''s stored access policies on every node (at most 5; NULL or [] removes them)';
CREATE FUNCTION tablestore.get_table_acl(table_name text) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'router_get_table_acl' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore.get_table_acl(text) IS 'a table''s stored access policies as a JSON array (the same on every node)';
-- Stored access policies: end

-- Service properties (issue 22 item 7): stored in the router's database,
-- with the functions of extension tablestore (below, copied by the build).
-- Who may set them: a role that may create tables on the cluster, i.e.
-- that has CREATE on schema tablestore_data on the shards (asked of the
-- node of partition 0, as the calling role).
CREATE FUNCTION tablestore_router._may_create_tables() RETURNS boolean
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON 0;
	SELECT pg_catalog.has_schema_privilege('tablestore_data', 'CREATE') AS _may_create_tables; $$;
CREATE FUNCTION tablestore._may_set_service_properties() RETURNS boolean
	LANGUAGE sql STABLE SET search_path = pg_catalog
	RETURN tablestore_router._may_create_tables();

-- @service properties@
