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
