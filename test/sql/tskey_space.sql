-- tskey gives back the pages VACUUM empties: empty leaves are deleted and
-- recycled (doc/index-am.md, "Page deletion"), so workloads that move
-- through the key space keep a bounded index, as a btree does.  Each
-- workload runs on a tskey index and, side by side, on a btree.
SET search_path = public, tablestore;
CREATE TEMP TABLE sizes (workload text, am text, cycle int, pages bigint);
CREATE FUNCTION pg_temp.record(w text, c int) RETURNS void LANGUAGE sql AS $$
	INSERT INTO sizes SELECT w, am.amname, c, pg_relation_size(i.indexrelid) / 8192
	FROM pg_index i JOIN pg_class r ON r.oid = i.indexrelid JOIN pg_am am ON am.oid = r.relam
	WHERE i.indrelid IN (('t_' || w)::regclass, ('b_' || w)::regclass)
$$;
CREATE FUNCTION pg_temp.both(w text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('CREATE TABLE t_%s (pk tablestore.key NOT NULL, rk tablestore.key NOT NULL, v int) WITH (autovacuum_enabled = false)', w);
	EXECUTE format('CREATE UNIQUE INDEX ON t_%s USING tskey (pk, rk)', w);
	EXECUTE format('CREATE TABLE b_%s (pk tablestore.key NOT NULL, rk tablestore.key NOT NULL, v int) WITH (autovacuum_enabled = false)', w);
	EXECUTE format('CREATE UNIQUE INDEX ON b_%s (pk, rk)', w);
END $$;

-- a rolling window: each cycle inserts the newest 3,000 keys (increasing,
-- as a log or a time series writes them), deletes the oldest 3,000, and
-- VACUUMs; 30 cycles (\gexec runs each statement at top level, as VACUUM
-- must be)
SELECT pg_temp.both('window');
SELECT format('INSERT INTO %s_window SELECT ''log'', lpad(g::text, 10, ''0''), g FROM generate_series(1, 6000) g', t)
FROM unnest(ARRAY['t', 'b']) t \gexec
SELECT format('INSERT INTO %s_window SELECT ''log'', lpad(g::text, 10, ''0''), g FROM generate_series(%s, %s) g', t, c * 3000 + 3001, c * 3000 + 6000),
	format('DELETE FROM %s_window WHERE v <= %s', t, c * 3000),
	format('VACUUM %s_window', t),
	CASE WHEN t = 'b' THEN format('SELECT pg_temp.record(''window'', %s)', c) END
FROM generate_series(1, 30) c, unnest(ARRAY['t', 'b']) t \gexec
SELECT count(*) AS live FROM t_window;
SELECT verify_index('t_window_pk_rk_idx');

-- a queue: each cycle inserts 5,000 increasing keys and deletes them all
SELECT pg_temp.both('queue');
SELECT format('INSERT INTO %s_queue SELECT ''q'', lpad(g::text, 10, ''0''), g FROM generate_series(%s, %s) g', t, c * 5000, c * 5000 + 4999),
	format('DELETE FROM %s_queue', t),
	format('VACUUM %s_queue', t),
	CASE WHEN t = 'b' THEN format('SELECT pg_temp.record(''queue'', %s)', c) END
FROM generate_series(1, 20) c, unnest(ARRAY['t', 'b']) t \gexec
SELECT verify_index('t_queue_pk_rk_idx');

-- random churn: 10,000 keys, then each cycle deletes a random fifth and
-- inserts 2,000 new random keys
SELECT pg_temp.both('churn');
SELECT format('INSERT INTO %s_churn SELECT ''p'' || (g %% 20), md5(g::text), g FROM generate_series(1, 10000) g', t)
FROM unnest(ARRAY['t', 'b']) t \gexec
SELECT format('DELETE FROM %s_churn WHERE hashint4(v + %s) %% 5 = 0', t, c),
	format('INSERT INTO %s_churn SELECT ''p'' || (g %% 20), md5(g::text), g FROM generate_series(%s, %s) g', t, c * 100000, c * 100000 + 1999),
	format('VACUUM %s_churn', t),
	CASE WHEN t = 'b' THEN format('SELECT pg_temp.record(''churn'', %s)', c) END
FROM generate_series(1, 20) c, unnest(ARRAY['t', 'b']) t \gexec
SELECT verify_index('t_churn_pk_rk_idx');

-- The bounds.  Pages a VACUUM deletes are reused after the next (once no
-- transaction that could reach them is left), so an index settles one
-- cycle's pages above its first size, tskey as the btree: from then on it
-- stays within 1.2 times its size after the second cycle, and it grows no
-- more from the first cycle than the btree does (within 10%).
SELECT workload,
	CASE WHEN max(pages) FILTER (WHERE am = 'tskey' AND cycle > 2)
			<= 1.2 * min(pages) FILTER (WHERE am = 'tskey' AND cycle = 2) THEN 'bounded'
		ELSE 'GREW' END AS after_second_cycle,
	CASE WHEN max(pages) FILTER (WHERE am = 'tskey') / min(pages) FILTER (WHERE am = 'tskey' AND cycle = 1)::numeric
			<= 1.1 * max(pages) FILTER (WHERE am = 'btree') / min(pages) FILTER (WHERE am = 'btree' AND cycle = 1)
		THEN 'as a btree' ELSE 'MORE THAN A BTREE: ' || string_agg(pages::text, ' ' ORDER BY am, cycle) END AS growth
FROM sizes GROUP BY workload ORDER BY workload;

-- the emptied queue is cheap to scan: its empty leaves were deleted, so a
-- query reads a few pages, not every page the queue ever had
CREATE FUNCTION pg_temp.blocks_read(q text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	plan json;
BEGIN
	EXECUTE 'EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, FORMAT JSON) ' || q INTO plan;
	RETURN (plan->0->'Plan'->'Plans'->0->>'Shared Hit Blocks')::int + (plan->0->'Plan'->'Plans'->0->>'Shared Read Blocks')::int;
END $$;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT pg_temp.blocks_read('SELECT count(*) FROM t_queue WHERE pk = ''q''') <= 3 AS few_pages_read;
RESET enable_seqscan;
RESET enable_bitmapscan;

-- Long keys (few pivots a page, a tree of five levels): a leaf that is its
-- parent's only child is deleted after its parent is dissolved into a
-- sibling (and that parent's parent, as far up as needed).  Scattered
-- deletions first, then all but the two ends, then everything: scans both
-- ways agree with the table at each step, and the emptied index is one
-- page per level.
CREATE TABLE tdx (pk tablestore.key NOT NULL, rk tablestore.key NOT NULL, v int NOT NULL) WITH (autovacuum_enabled = false);
CREATE UNIQUE INDEX tdx_key ON tdx USING tskey (pk, rk);
INSERT INTO tdx SELECT 'p' || lpad((g / 1000)::text, 3, '0'), lpad(g::text, 8, '0') || repeat('k', 300), g FROM generate_series(1, 30000) g;
CREATE FUNCTION pg_temp.both_ways() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	f boolean;
	b boolean;
BEGIN
	SET LOCAL enable_seqscan = off;
	SET LOCAL enable_bitmapscan = off;
	SELECT (SELECT array_agg(v) FROM (SELECT v FROM tdx ORDER BY pk, rk) s)
		IS NOT DISTINCT FROM (SELECT array_agg(v ORDER BY v) FROM (SELECT v FROM tdx OFFSET 0) s2) INTO f;
	SELECT (SELECT array_agg(v) FROM (SELECT v FROM tdx ORDER BY pk DESC, rk DESC) s)
		IS NOT DISTINCT FROM (SELECT array_agg(v ORDER BY v DESC) FROM (SELECT v FROM tdx OFFSET 0) s2) INTO b;
	RETURN CASE WHEN f AND b THEN 'same both ways' ELSE 'DIFFERENT' END;
END $$;
DELETE FROM tdx WHERE (v / 40) % 3 <> 0;
VACUUM tdx;
SELECT verify_index('tdx_key'), pg_temp.both_ways();
DELETE FROM tdx WHERE v > 1000 AND v < 29000;
VACUUM tdx;
SELECT verify_index('tdx_key'), pg_temp.both_ways();
SELECT txid_current() > 0 AS xid;
VACUUM tdx;
INSERT INTO tdx SELECT 'p' || lpad((g / 1000)::text, 3, '0'), lpad(g::text, 8, '0') || repeat('z', 300), g FROM generate_series(30001, 40000) g;
SELECT verify_index('tdx_key'), pg_temp.both_ways();
DELETE FROM tdx;
VACUUM tdx;
SELECT verify_index('tdx_key');
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT pg_temp.blocks_read('SELECT count(*) FROM tdx WHERE pk >= ''''') <= 6 AS one_page_per_level;
RESET enable_seqscan;
RESET enable_bitmapscan;
DROP TABLE t_window, b_window, t_queue, b_queue, t_churn, b_churn, tdx;
