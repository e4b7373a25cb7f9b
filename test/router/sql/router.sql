-- The router itself (test/router_regress.sh runs this through a router
-- with 2 shards and 16 partitions).

-- the partition hash is part of where data lives: these values never change
SELECT k, tablestore.partition_hash(k) FROM (VALUES (''), ('a'), ('Sales'), ('é'), ('😀'), ('ｚ')) v(k);
SELECT tablestore_router.partition_of('Sales'), tablestore.partition_hash('Sales') & 15 AS masked;
SELECT count(*) AS partitions, count(DISTINCT node) AS nodes FROM tablestore_router.partitions();
SELECT has_function_privilege('public', 'tablestore_router._insert_entity(integer, text, jsonb)', 'EXECUTE') AS public_may_call;

-- an ordinary role uses the API, and cannot call the PL/Proxy functions
-- directly (they would take any partition it names)
CREATE ROLE router_user;
GRANT USAGE ON FOREIGN SERVER tablestore_cluster TO router_user;
SET ROLE router_user;
SELECT tablestore_router.partition_of('Sales') AS partition;
SELECT tablestore_router._insert_entity(3, 'Orders', '{"PartitionKey": "Sales", "RowKey": "1"}');
SELECT * FROM tablestore_router._query_page_all('Orders', NULL, NULL, 10, NULL, NULL);
SELECT tablestore_router.configure(ARRAY['host=elsewhere'], 16);
RESET ROLE;

-- routing: a filter that fixes the PartitionKey runs on one node, others
-- on every node (the plan is the node's)
SELECT tablestore.create_table('Routed');
SELECT count(tablestore.insert_entity('Routed', jsonb_build_object('PartitionKey', 'p' || i, 'RowKey', 'r', 'N', i)))
FROM generate_series(1, 40) i;
SELECT tablestore.explain_query('Routed', 'PartitionKey eq ''p7''')->>'access' AS one_node,
	tablestore.explain_query('Routed', 'N gt 3')->>'access' AS every_node;
-- both nodes hold some of the partitions
SELECT count(DISTINCT tablestore_router.partition_of('p' || i)) > 8 AS spread FROM generate_series(1, 40) i;
-- a merged walk in pages of 7 returns every entity once, in key order
WITH RECURSIVE walk(n, page, pk, rk) AS (
	SELECT 1, p.entities, p.next_partition_key, p.next_row_key
	FROM tablestore.query_entities_page('Routed', 'N gt 0', NULL, 7) p
	UNION ALL
	SELECT w.n + 1, p.entities, p.next_partition_key, p.next_row_key
	FROM walk w, tablestore.query_entities_page('Routed', 'N gt 0', NULL, 7, w.pk, w.rk) p
	WHERE w.pk IS NOT NULL
)
SELECT count(DISTINCT n) AS pages, count(*) AS entities,
	array_agg(e->>'PartitionKey' ORDER BY n, ord) = array_agg(e->>'PartitionKey' ORDER BY (e->>'PartitionKey')::tablestore.key) AS in_key_order
FROM walk, jsonb_array_elements(page) WITH ORDINALITY x(e, ord);

-- a node's errors do not cost its connection: they come back as data (the
-- _routed_ calls), so PL/Proxy keeps its session on the node (it drops a
-- connection whose call raised an error, and connects again next time)
CREATE FUNCTION public.node_pid(part integer) RETURNS integer
	LANGUAGE plproxy AS $$ CLUSTER 'tablestore_cluster'; RUN ON part; SELECT pg_backend_pid() AS node_pid; $$;
CREATE TEMP TABLE pids AS SELECT public.node_pid(tablestore_router.partition_of('p1')) AS before;
SELECT tablestore.get_entity('Routed', 'p1', 'missing');
SELECT tablestore.insert_entity('Routed', '{"PartitionKey": "p1", "RowKey": "r"}');
SELECT tablestore.update_entity('Routed', '{"PartitionKey": "p1", "RowKey": "r"}', 'W/"datetime''2020-01-01T00%3A00%3A00Z''"');
SELECT tablestore.execute_batch('Routed', '[{"op": "delete", "entity": {"PartitionKey": "p1", "RowKey": "missing"}}]');
SELECT tablestore.query_entities_page('Routed', 'PartitionKey eq ''p1'' and', NULL);
SELECT before = public.node_pid(tablestore_router.partition_of('p1')) AS same_node_session FROM pids;
DROP FUNCTION public.node_pid(integer);

-- configure() refuses what is not a cluster, and changes nothing then
SELECT tablestore_router.configure(ARRAY[]::text[]);
SELECT tablestore_router.configure(ARRAY['host=a', NULL]);
SELECT tablestore_router.configure(ARRAY['host=a'], 24);
SELECT tablestore_router.configure(ARRAY['host=a', 'host=b', 'host=c'], 2);
SELECT tablestore_router.configure(ARRAY['host=a'], 512);
-- nor a password where every role can read it
SELECT tablestore_router.configure(ARRAY['host=a', 'host=b password=secret']);
SELECT tablestore_router.configure(ARRAY['host=a PASSWORD =secret']);
SELECT tablestore_router.configure(ARRAY['postgresql://app:secret@db1/tablestore']);
SELECT tablestore_router.configure(ARRAY['postgres://db1/tablestore?user=app&password=secret']);
-- nor the passphrase of an SSL key
SELECT tablestore_router.configure(ARRAY['host=a sslpassword=secret']);
SELECT tablestore_router.configure(ARRAY['postgresql://db1/tablestore?sslpassword=secret']);
-- an array with other subscripts is its nodes in order; one of more
-- dimensions is no list of nodes
SELECT tablestore_router.configure('[0:1]={"host=a password=secret","host=b"}'::text[]);
SELECT tablestore_router.configure('[3:3]={NULL}'::text[], 1);
SELECT tablestore_router.configure(ARRAY[['host=a'], ['host=b']]);
BEGIN;
SELECT tablestore_router.configure('[5:6]={"host=x dbname=d","host=y dbname=d"}'::text[], 2);
SELECT * FROM tablestore_router.partitions();
ROLLBACK;
SELECT count(*) AS partitions FROM tablestore_router.partitions();
-- the largest cluster: 256 nodes of a partition each (rolled back); a
-- 257th node has no partition.  configure() run again keeps the server's
-- other options and its user mappings (they may carry passwords).
BEGIN;
CREATE ROLE ts_router_mapped;
CREATE USER MAPPING FOR ts_router_mapped SERVER tablestore_cluster OPTIONS (user 'app', password 'secret');
ALTER SERVER tablestore_cluster OPTIONS (ADD connection_lifetime '1800');
SELECT tablestore_router.configure(array_agg('host=node' || i || ' dbname=d' ORDER BY i), 256) FROM generate_series(1, 256) i;
SELECT count(*) AS partitions, count(DISTINCT node) AS nodes, min(node) FILTER (WHERE partition = 255) AS last
	FROM tablestore_router.partitions();
SELECT array(SELECT o FROM pg_foreign_server s, unnest(s.srvoptions) o WHERE s.srvname = 'tablestore_cluster' AND o !~ '^p[0-9]') AS other_options,
	array(SELECT usename || ' ' || coalesce(array_to_string(umoptions, ','), '') FROM pg_user_mappings WHERE srvname = 'tablestore_cluster' ORDER BY 1) AS mappings;
SELECT tablestore_router.partition_of('Sales') AS sales;
ROLLBACK;
SELECT tablestore_router.configure(array_agg('host=node' || i || ' dbname=d' ORDER BY i), 256) FROM generate_series(1, 257) i;
-- A node string names WHERE a node is; the calling role decides WHO
-- (issue 21, findings 12 and 13).  Read with libpq's own parser, a string
-- that sets a user, a password, a password or service file, a client
-- certificate or key, or session options, however spelled (quoted, in a
-- URI, percent-encoded), or has "user=" in a value (PL/Proxy would then
-- not add the calling role), is refused; so is one without a database.
SELECT tablestore_router.configure(ARRAY['host=a dbname=d user=alice']);
SELECT tablestore_router.configure(ARRAY['host=a dbname=d application_name=poweruser=1']);
SELECT tablestore_router.configure(ARRAY['postgresql://h/d?application_name=x%75ser%3D1']);
SELECT tablestore_router.configure(ARRAY['host=''/tmp''password=s1 dbname=d']);
SELECT tablestore_router.configure(ARRAY['postgresql://u@h/d']);
SELECT tablestore_router.configure(ARRAY['postgresql://h/d?%70assword=s3']);
SELECT tablestore_router.configure(ARRAY['postgresql://h/d?application_name=a&%73slpassword=s8']);
SELECT tablestore_router.configure(ARRAY['host=a dbname=d passfile=/tmp/pgpass']);
SELECT tablestore_router.configure(ARRAY['host=a dbname=d service=other']);
SELECT tablestore_router.configure(ARRAY['host=a dbname=d sslcert=/tmp/c']);
SELECT tablestore_router.configure(ARRAY['host=a dbname=d options=''-c role=alice''']);
SELECT tablestore_router.configure(ARRAY['host=a dbname=d nosuch=1']);
SELECT tablestore_router.configure(ARRAY['host=a']);
-- one node twice, spelled two ways (finding 16): nodes are told apart by
-- their address (host, port, database, with the router's defaults)
SELECT tablestore_router.configure(ARRAY['host=a dbname=d', 'dbname=d port=5432 host=A']);
-- an empty value is libpq's default (port='' is port 5432, host='' the
-- default socket directory), and a socket directory is one however its
-- path is spelled (doubled or trailing slashes, "." segments); each in a
-- transaction, rolled back should it be accepted
BEGIN;
SELECT tablestore_router.configure(ARRAY['host=/x/shard0 dbname=tablestore', 'host=/x/shard0 port='''' dbname=tablestore']);
ROLLBACK;
BEGIN;
SELECT tablestore_router.configure(ARRAY['host=/x/shard0,/y port=5432,5432 dbname=d', 'host=/x/shard0,/y port=,5432 dbname=d']);
ROLLBACK;
BEGIN;
SELECT tablestore_router.configure(ARRAY['host=/x/shard0 dbname=d', 'host=/x//shard0 dbname=d']);
ROLLBACK;
BEGIN;
SELECT tablestore_router.configure(ARRAY['host=/x/shard0 dbname=d', 'host=/x/./shard0/ dbname=d']);
ROLLBACK;
BEGIN;
SELECT tablestore_router.configure(ARRAY['host=/x/shard0,/y dbname=d', 'host=/x/shard0/,//y dbname=d']);
ROLLBACK;
BEGIN;
SELECT tablestore_router.configure(ARRAY['host=/x/shard0 dbname=d']);
SELECT tablestore_router.node_string('host=//x//shard0/ port='''' dbname=d') AS same_node;
ROLLBACK;
-- what is accepted is stored in one canonical form; node_string gives a
-- node's string as the partition map holds it
BEGIN;
SELECT tablestore_router.configure(ARRAY['postgresql://db1:5433/tablestore?sslmode=require&application_name=router%20one',
	'dbname = tablestore   host=db2'], 2);
SELECT * FROM tablestore_router.partitions();
SELECT tablestore_router.node_string('host=DB1 port=05433 dbname=tablestore') AS same_node,
	tablestore_router.node_string('host=db3 dbname=tablestore connect_timeout=5') AS new_node;
ROLLBACK;
-- the router routes over nothing else, however the server was changed
-- (ALTER SERVER by a superuser), and a role's own user mapping (which a
-- role with USAGE on the server may create) may give its password, not
-- another role's name
BEGIN;
ALTER SERVER tablestore_cluster OPTIONS (SET p0 'host=/nowhere dbname=tablestore application_name=poweruser=1');
SELECT tablestore.get_entity('Routed', 'p1', 'r');
ROLLBACK;
BEGIN;
ALTER SERVER tablestore_cluster OPTIONS (SET p0 'host=/nowhere dbname=tablestore sslkey=/tmp/k');
SELECT tablestore.get_entity('Routed', 'p1', 'r');
ROLLBACK;
BEGIN;
SET ROLE router_user;
CREATE USER MAPPING FOR router_user SERVER tablestore_cluster OPTIONS (user 'postgres');
SELECT tablestore.get_entity('Routed', 'p1', 'r')->>'N' AS n;
RESET ROLE;
ROLLBACK;
-- so is the question whether the role may set the service properties,
-- asked of node 0 through PL/Proxy (attack F2: it ran there as the role
-- the mapping named)
BEGIN;
SET ROLE router_user;
CREATE USER MAPPING FOR router_user SERVER tablestore_cluster OPTIONS (user 'postgres');
SELECT tablestore.set_service_properties('{"Cors": []}') IS NOT NULL AS set;
RESET ROLE;
ROLLBACK;
-- a partition moved to a node already in the map under another spelling
-- is refused, not taken for a new node (a query over every node read it
-- twice); node_string gives the spelling the map has
SELECT format('dbname=tablestore host=%s/', substring(node FROM 'host=(\S+)')) AS respelled
	FROM tablestore_router.partitions() WHERE partition = 0 \gset
SELECT tablestore_router.node_string(:'respelled') = node AS same_spelling FROM tablestore_router.partitions() WHERE partition = 0;
BEGIN;
ALTER SERVER tablestore_cluster OPTIONS (SET p1 :'respelled');
SELECT count(*), count(DISTINCT e->>'PartitionKey') FROM tablestore.query_entities('Routed') e;
ROLLBACK;

-- The router's locks (finding 14): a call holds its partition's lock
-- while it runs and not after, so no open transaction or cursor holds one
-- (a mover, and every call behind it, would wait for it); and they are of
-- a class no SQL function takes (pg_advisory_lock(1953722992, p) is not
-- one of them).
BEGIN;
SELECT count(*) > 0 AS listed FROM tablestore.list_tables();
SELECT tablestore.get_entity('Routed', 'p1', 'r')->>'N' AS n;
SELECT jsonb_array_length(entities) FROM tablestore.query_entities_page('Routed', 'N gt 0', NULL, 5);
DECLARE c NO SCROLL CURSOR FOR SELECT e->>'PartitionKey' FROM tablestore.query_entities('Routed') e;
FETCH 1 FROM c;
SELECT count(*) AS advisory_locks_held FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();
COMMIT;
-- a mover's locks: superuser only, session level, of the router's class
SET ROLE router_user;
SELECT tablestore_router.lock_partition_for_move(3);
RESET ROLE;
SELECT tablestore_router.lock_partition_for_move(3);
SELECT objid::integer AS partition, objsubid AS class, mode FROM pg_locks
	WHERE locktype = 'advisory' AND pid = pg_backend_pid() ORDER BY 1;
SELECT tablestore_router.unlock_partition_for_move(3), tablestore_router.unlock_partition_for_move(3);
SELECT tablestore_router.lock_partition_for_move(16);

-- the cluster not configured (rolled back)
BEGIN;
DROP SERVER tablestore_cluster CASCADE;
SELECT tablestore.get_entity('Routed', 'p1', 'r');
ROLLBACK;
SELECT tablestore.get_entity('Routed', 'p1', 'r')->>'N' AS n;

-- A node's reply is read as untrusted as a page on disk: a page row whose
-- keys are missing, or a page of other than one row, is an error
-- (DATA_CORRUPTED), never a crash or a page merged as if that node had
-- ended.  Node 0's _query_page_keyed and query_entities_page are replaced
-- for a moment by ones that return such rows (by the filter).
SELECT current_setting('unix_socket_directories') AS router,
	(SELECT substring(node FROM 'host=(\S+)') FROM tablestore_router.partitions() WHERE partition = 0) AS node0,
	(SELECT format('PartitionKey eq %L', 'p' || i) FROM generate_series(1, 40) i, tablestore_router.partitions() p
	 WHERE p.partition = tablestore_router.partition_of('p' || i)
		AND p.node = (SELECT node FROM tablestore_router.partitions() WHERE partition = 0) LIMIT 1) AS on_node0 \gset
\connect tablestore postgres :node0
CREATE OR REPLACE FUNCTION tablestore._query_page_keyed(table_name text, filter text, select_list text,
		top integer, next_partition_key text, next_row_key text)
	RETURNS TABLE (entity json, next_partition_key text, next_row_key text, partition_key text, row_key text)
	LANGUAGE sql STABLE AS $$
	SELECT NULL::json, CASE WHEN filter = 'N eq 2' THEN 'p1' END, NULL::text, NULL::text, NULL::text
	WHERE filter <> 'N eq 3'
	UNION ALL
	SELECT '{}'::json, NULL, NULL, NULL, 'r' WHERE filter = 'N eq 3' $$;
CREATE OR REPLACE FUNCTION tablestore.query_entities_page(table_name text, filter text DEFAULT NULL, select_list text DEFAULT NULL,
		top integer DEFAULT NULL, next_partition_key text DEFAULT NULL, next_row_key text DEFAULT NULL)
	RETURNS TABLE (entities jsonb, next_partition_key text, next_row_key text)
	LANGUAGE sql STABLE AS $$ SELECT NULL::jsonb, NULL::text, NULL::text WHERE false $$;
\connect tablestore postgres :router
-- a continuation without its keys, with one of them, an entity without its keys
\set VERBOSITY sqlstate
SELECT * FROM tablestore.query_entities_page('Routed', 'N eq 1');
\set VERBOSITY default
SELECT * FROM tablestore.query_entities_page('Routed', 'N eq 1');
SELECT * FROM tablestore.query_entities_page('Routed', 'N eq 2');
SELECT * FROM tablestore.query_entities_page('Routed', 'N eq 3');
SELECT count(*) FROM tablestore.query_page('Routed', 'N eq 1');
SELECT count(*) FROM tablestore.query_entities('Routed', 'N eq 1');
SELECT count(*) FROM tablestore.query_entities_json('Routed', 'N eq 2');
-- a page of a partition on node 0 without any row
\set VERBOSITY sqlstate
SELECT * FROM tablestore.query_entities_page('Routed', :'on_node0');
\set VERBOSITY default
SELECT * FROM tablestore.query_entities_page('Routed', :'on_node0');
\connect tablestore postgres :node0
CREATE OR REPLACE FUNCTION tablestore._query_page_keyed(table_name text, filter text, select_list text,
		top integer, next_partition_key text, next_row_key text)
	RETURNS TABLE (entity json, next_partition_key text, next_row_key text, partition_key text, row_key text)
	AS '$libdir/tablestore', 'query_page_rows' LANGUAGE C STABLE ROWS 1000;
CREATE OR REPLACE FUNCTION tablestore.query_entities_page(table_name text, filter text DEFAULT NULL, select_list text DEFAULT NULL,
		top integer DEFAULT NULL, next_partition_key text DEFAULT NULL, next_row_key text DEFAULT NULL)
	RETURNS TABLE (entities jsonb, next_partition_key text, next_row_key text)
	AS '$libdir/tablestore', 'query_entities_page' LANGUAGE C STABLE;
\connect tablestore postgres :router
-- node 0 answers as a node again
SELECT count(*) AS entities FROM tablestore.query_entities('Routed', 'N eq 1');
SELECT jsonb_array_length(entities) AS entities FROM tablestore.query_entities_page('Routed', :'on_node0');

-- An error a node answers as data is read as untrusted too: one that is
-- not [SQLSTATE, message, detail, hint] is DATA_CORRUPTED, whether it comes
-- from a one-value call (get_entity) or a set call (list_tables).
\connect tablestore postgres :node0
ALTER FUNCTION tablestore._routed_get_entity(text, text, text, text) RENAME TO _routed_get_entity_real;
CREATE FUNCTION tablestore._routed_get_entity(table_name text, partition_key text, row_key text, select_list text) RETURNS jsonb
	LANGUAGE sql AS $$ SELECT CASE row_key WHEN 'short' THEN '{"#error": ["P0002"]}'
		ELSE '{"#error": ["not a state", "m", null, null]}' END::jsonb $$;
ALTER FUNCTION tablestore._routed_list_tables(text) RENAME TO _routed_list_tables_real;
CREATE FUNCTION tablestore._routed_list_tables(filter text) RETURNS TABLE (result text, error text[])
	LANGUAGE sql AS $$ SELECT NULL::text, ARRAY['42P01'] $$;
\connect tablestore postgres :router
SELECT pk FROM (SELECT 'p' || i AS pk FROM generate_series(1, 40) i) k
	WHERE tablestore_router.partition_of(pk) IN (SELECT partition FROM tablestore_router.partitions()
		WHERE node = (SELECT node FROM tablestore_router.partitions() WHERE partition = 0)) LIMIT 1 \gset
\set VERBOSITY sqlstate
SELECT tablestore.get_entity('Routed', :'pk', 'short');
SELECT tablestore.get_entity('Routed', :'pk', 'r');
SELECT tablestore.list_tables();
\set VERBOSITY default
SELECT tablestore.get_entity('Routed', :'pk', 'short');
\connect tablestore postgres :node0
DROP FUNCTION tablestore._routed_get_entity(text, text, text, text);
ALTER FUNCTION tablestore._routed_get_entity_real(text, text, text, text) RENAME TO _routed_get_entity;
DROP FUNCTION tablestore._routed_list_tables(text);
ALTER FUNCTION tablestore._routed_list_tables_real(text) RENAME TO _routed_list_tables;
\connect tablestore postgres :router
SELECT tablestore.get_entity('Routed', :'pk', 'r')->>'RowKey' AS row_key, count(*) AS tables FROM tablestore.list_tables();

-- A router test with a hostile shard (finding 17): node 0's
-- _routed_query_page and _routed_get_entity are replaced by ones that
-- answer, by the filter or the RowKey, an entity that is not JSON or not
-- an object, entities out of key order, a continuation that never
-- advances (query_entities asked for the same page for ever), an entity
-- twice, an "error" whose SQLSTATE is success, and an entity call's answer
-- that is no object.  Each is DATA_CORRUPTED naming where it came from.
\connect tablestore postgres :node0
ALTER FUNCTION tablestore._routed_query_page(text, text, text, integer, text, text) RENAME TO _routed_query_page_real;
CREATE FUNCTION tablestore._routed_query_page(table_name text, filter text, select_list text, top integer, next_pk text, next_rk text)
	RETURNS TABLE (entity text, next_partition_key text, next_row_key text, pk text, rk text, error text[])
	LANGUAGE sql AS $$
	SELECT * FROM tablestore._routed_query_page_real(table_name, filter, select_list, top, next_pk, next_rk)
		WHERE filter NOT LIKE 'N eq 10__'
	UNION ALL
	SELECT v.e, v.npk, v.nrk, v.pk, v.rk, v.err FROM (VALUES
		('N eq 1001', '{"PartitionKey": "a", "RowKey": "r"', NULL, NULL, 'a', 'r', NULL::text[]),
		('N eq 1002', '["a", "r"]', NULL, NULL, 'a', 'r', NULL),
		('N eq 1003', '{}', NULL, NULL, 'b', 'r', NULL),
		('N eq 1003', '{}', NULL, NULL, 'a', 'r', NULL),
		('N eq 1004', NULL, coalesce(next_pk, 'a'), coalesce(next_rk, 'r'), NULL, NULL, NULL),
		('N eq 1005', '{}', NULL, NULL, 'a', 'r', NULL),
		('N eq 1005', '{}', NULL, NULL, 'a', 'r', NULL)) v(f, e, npk, nrk, pk, rk, err)
		WHERE v.f = filter $$;
ALTER FUNCTION tablestore._routed_get_entity(text, text, text, text) RENAME TO _routed_get_entity_real;
CREATE FUNCTION tablestore._routed_get_entity(table_name text, partition_key text, row_key text, select_list text) RETURNS jsonb
	LANGUAGE sql AS $$ SELECT CASE row_key WHEN 'success' THEN '{"#error": ["00000", "m", null, null]}'
		WHEN 'warning' THEN '{"#error": ["01000", "m", null, null]}' ELSE '[1, 2]' END::jsonb $$;
\connect tablestore postgres :router
SET statement_timeout = '20s';
\set VERBOSITY sqlstate
SELECT count(*) FROM tablestore.query_entities('Routed', 'N eq 1001');
SELECT count(*) FROM tablestore.query_entities_json('Routed', 'N eq 1002');
SELECT count(*) FROM tablestore.query_entities('Routed', 'N eq 1003');
SELECT count(*) FROM tablestore.query_entities('Routed', 'N eq 1004');
SELECT tablestore.get_entity('Routed', :'pk', 'success');
\set VERBOSITY default
SELECT count(*) FROM tablestore.query_entities('Routed', 'N eq 1001');
SELECT count(*) FROM tablestore.query_entities_json('Routed', 'N eq 1001');
SELECT count(*) FROM tablestore.query_entities('Routed', 'N eq 1002');
SELECT count(*) FROM tablestore.query_entities_json('Routed', 'N eq 1002');
SELECT count(*) FROM tablestore.query_entities('Routed', 'N eq 1003');
SELECT count(*) FROM tablestore.query_entities('Routed', 'N eq 1004');
SELECT * FROM tablestore.query_entities_page('Routed', 'N eq 1004', NULL, NULL, 'a', 'r');
SELECT count(*) FROM tablestore.query_page('Routed', 'N eq 1005');
SELECT tablestore.get_entity('Routed', :'pk', 'success');
SELECT tablestore.get_entity('Routed', :'pk', 'warning');
SELECT tablestore.get_entity('Routed', :'pk', 'array');
RESET statement_timeout;
\connect tablestore postgres :node0
DROP FUNCTION tablestore._routed_query_page(text, text, text, integer, text, text);
ALTER FUNCTION tablestore._routed_query_page_real(text, text, text, integer, text, text) RENAME TO _routed_query_page;
DROP FUNCTION tablestore._routed_get_entity(text, text, text, text);
ALTER FUNCTION tablestore._routed_get_entity_real(text, text, text, text) RENAME TO _routed_get_entity;
\connect tablestore postgres :router
-- node 0 answers as a node again
SELECT count(*) AS entities, count(DISTINCT e->>'PartitionKey') AS keys FROM tablestore.query_entities('Routed') e;
SELECT tablestore.get_entity('Routed', :'pk', 'r')->>'RowKey' AS row_key;
