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
SELECT count(*) AS partitions FROM tablestore_router.partitions();
-- the largest cluster: 256 nodes of a partition each (rolled back); a
-- 257th node has no partition.  configure() run again keeps the server's
-- other options and its user mappings (they may carry passwords).
BEGIN;
CREATE ROLE ts_router_mapped;
CREATE USER MAPPING FOR ts_router_mapped SERVER tablestore_cluster OPTIONS (user 'app', password 'secret');
ALTER SERVER tablestore_cluster OPTIONS (ADD connection_lifetime '1800');
SELECT tablestore_router.configure(array_agg('host=node' || i ORDER BY i), 256) FROM generate_series(1, 256) i;
SELECT count(*) AS partitions, count(DISTINCT node) AS nodes, min(node) FILTER (WHERE partition = 255) AS last
	FROM tablestore_router.partitions();
SELECT array(SELECT o FROM pg_foreign_server s, unnest(s.srvoptions) o WHERE s.srvname = 'tablestore_cluster' AND o !~ '^p[0-9]') AS other_options,
	array(SELECT usename || ' ' || coalesce(array_to_string(umoptions, ','), '') FROM pg_user_mappings WHERE srvname = 'tablestore_cluster' ORDER BY 1) AS mappings;
SELECT tablestore_router.partition_of('Sales') AS sales;
ROLLBACK;
SELECT tablestore_router.configure(array_agg('host=node' || i ORDER BY i), 256) FROM generate_series(1, 257) i;
-- the cluster not configured (rolled back)
BEGIN;
DROP SERVER tablestore_cluster CASCADE;
SELECT tablestore.get_entity('Routed', 'p1', 'r');
ROLLBACK;
SELECT tablestore.get_entity('Routed', 'p1', 'r')->>'N' AS n;
