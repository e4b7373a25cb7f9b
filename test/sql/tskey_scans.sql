-- tskey scans beyond the basics of tskey.sql: index-only scans (count(*)
-- takes one when no column is needed, and the keys come back as stored,
-- whatever their encoding).
SET search_path = public, tablestore;

-- count(*) after VACUUM ANALYZE: PostgreSQL 15 plans an index-only scan
-- when no column is needed, so the index must return its tuples
CREATE TABLE ts (pk tablestore.key NOT NULL, rk tablestore.key NOT NULL, v text);
CREATE UNIQUE INDEX ts_key ON ts USING tskey (pk, rk);
INSERT INTO ts SELECT 'p' || (g % 50), 'r' || g, repeat('x', 600) FROM generate_series(1, 20000) g;
-- keys stored as UTF-16BE (CJK) and with supplementary characters
INSERT INTO ts SELECT '漢字' || (g % 7), '😀' || g || repeat('字', g % 40), 'y' FROM generate_series(1, 3000) g;
VACUUM ANALYZE ts;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ts;
SELECT count(*) FROM ts;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET enable_sort = off;
EXPLAIN (COSTS OFF) SELECT pk, rk FROM ts WHERE pk = '漢字3' ORDER BY rk;
-- the keys an index-only scan returns are the table's, forward and backward
SELECT array_agg(pk || '/' || rk) = (SELECT array_agg(pk || '/' || rk ORDER BY pk, rk) FROM ts t2 WHERE pk >= '漢字3' AND v IS NOT NULL)
	AS ios_forward
FROM (SELECT pk, rk FROM ts WHERE pk >= '漢字3' ORDER BY pk, rk) s;
SELECT array_agg(pk || '/' || rk) = (SELECT array_agg(pk || '/' || rk ORDER BY pk DESC, rk DESC) FROM ts t2 WHERE pk < 'p2' AND v IS NOT NULL)
	AS ios_backward
FROM (SELECT pk, rk FROM ts WHERE pk < 'p2' ORDER BY pk DESC, rk DESC) s;
-- deleted rows: pages no longer all-visible, the heap decides
DELETE FROM ts WHERE rk LIKE '%7';
EXPLAIN (COSTS OFF) SELECT count(*) FROM ts;
SELECT count(*) FROM ts;
VACUUM ts;
SELECT count(*) FROM ts;
SELECT count(*) FROM ts WHERE pk = 'p3';
RESET enable_seqscan;
RESET enable_bitmapscan;
RESET enable_sort;
SELECT verify_index('ts_key');
DROP TABLE ts;

-- Comparison values longer than any key the index stores (512 UTF-16 code
-- units) are legal: they are clamped, never refused, and every operator
-- gives what a sequential scan gives.  Stored keys around the clamp point:
-- equal to the first 512 units, below and above them, shorter, and with
-- a supplementary character where the clamp splits a surrogate pair.
CREATE TABLE tl (pk tablestore.key NOT NULL, rk tablestore.key NOT NULL, id int NOT NULL);
CREATE UNIQUE INDEX tl_key ON tl USING tskey (pk, rk);
INSERT INTO tl SELECT p, r, row_number() OVER ()
FROM unnest(ARRAY[repeat('漢', 512), repeat('漢', 511) || 'a', repeat('漢', 511) || '龥', repeat('漢', 300),
	repeat('a', 511) || '漢', repeat('a', 511) || chr(57344), repeat('a', 510) || '😀', repeat('a', 512), 'b', 'a']) p,
	unnest(ARRAY[repeat('字', 512), repeat('字', 511) || 'a', repeat('a', 511) || 'z', repeat('a', 510) || '😀', 'r']) r;
CREATE TEMP TABLE probes AS
SELECT v FROM unnest(ARRAY[repeat('漢', 1100), repeat('漢', 512) || 'x', repeat('a', 511) || '😀' || 'tail',
	repeat('a', 513), repeat('字', 600), repeat('😀', 300)]) v;
CREATE FUNCTION pg_temp.ids(q text) RETURNS int[] LANGUAGE plpgsql AS $$
DECLARE r int[];
BEGIN
	EXECUTE q INTO r;
	RETURN r;
END $$;
CREATE FUNCTION pg_temp.probe_query(col text, op text, v text, ord text) RETURNS text LANGUAGE sql AS $$
	SELECT format('SELECT array_agg(id) FROM (SELECT id FROM tl WHERE %s %s %L::tablestore.key %s ORDER BY pk %s, rk %s) s',
		col, op, v, CASE WHEN col = 'rk' THEN 'AND pk = repeat(''漢'', 512)' ELSE '' END, ord, ord)
$$;
-- every operator on each column, in both directions: sequentially, then
-- through the index
SET enable_indexscan = off;
SET enable_indexonlyscan = off;
SET enable_bitmapscan = off;
CREATE TEMP TABLE long_results AS
SELECT col, op, v, ord, pg_temp.ids(pg_temp.probe_query(col, op, v, ord)) AS seq, NULL::int[] AS idx
FROM (VALUES ('pk'), ('rk')) c(col), unnest(ARRAY['<', '<=', '=', '>=', '>']) op, probes,
	(VALUES ('ASC'), ('DESC')) o(ord);
RESET enable_indexscan;
RESET enable_indexonlyscan;
SET enable_seqscan = off;
SET enable_sort = off;
UPDATE long_results SET idx = pg_temp.ids(pg_temp.probe_query(col, op, v, ord));
RESET enable_seqscan;
RESET enable_bitmapscan;
RESET enable_sort;
SELECT count(*) AS comparisons, count(*) FILTER (WHERE seq IS NOT DISTINCT FROM idx) AS same,
	count(*) FILTER (WHERE seq IS NOT NULL) AS non_empty
FROM long_results;
SELECT col, op, left(v, 3), ord, seq, idx FROM long_results WHERE seq IS DISTINCT FROM idx;
-- a bitmap scan, and the service's filter on a table
SET enable_indexscan = off;
SET enable_seqscan = off;
SELECT count(*) AS bitmap_lt FROM tl WHERE pk < repeat('漢', 1100)::key;
RESET enable_indexscan;
RESET enable_seqscan;
SELECT tablestore.create_table('LongFilter');
SELECT count(tablestore.insert_entity('LongFilter', jsonb_build_object('PartitionKey', p, 'RowKey', 'r'))) AS inserted
FROM unnest(ARRAY['a', 'b', repeat('漢', 512)]) p;
SELECT e->>'PartitionKey' AS pk FROM tablestore.query_entities('LongFilter',
	'PartitionKey lt ''' || repeat('b', 1100) || '''') e;
SELECT count(*) AS ge_long FROM tablestore.query_entities('LongFilter',
	'PartitionKey ge ''' || repeat('漢', 1100) || '''') e;
SELECT count(*) AS eq_long FROM tablestore.query_entities('LongFilter',
	'PartitionKey eq ''' || repeat('漢', 1100) || ''' and RowKey eq ''r''') e;
SELECT tablestore.delete_table('LongFilter');
DROP TABLE tl;
