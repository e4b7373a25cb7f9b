-- verify_index in its two strengths, as amcheck's bt_index_check and
-- bt_index_parent_check, and with heapallindexed (issue 25).  A heap tuple
-- without its index entry is made in test/t/004_tskey_corrupt.pl.
CREATE TABLE vt (pk tablestore.key NOT NULL, rk tablestore.key NOT NULL, n int);
INSERT INTO vt SELECT 'p' || (g % 7), lpad(g::text, 8, '0') || repeat('x', g % 50), g
FROM generate_series(1, 20000) g;
CREATE UNIQUE INDEX vt_key ON vt USING tskey (pk, rk);
-- HOT updates (entries reach the root of the chain), deletes, inserts that split
UPDATE vt SET n = -n WHERE n % 3 = 0;
DELETE FROM vt WHERE n % 11 = 0;
-- long keys: large pivots, so that the tree has more than two levels and
-- the light check goes down by leftmost downlinks
INSERT INTO vt SELECT 'q' || (g % 5), repeat('y', 300 + g % 200) || g, g FROM generate_series(1, 3000) g;
SELECT pg_relation_size('vt_key') > 200 * 8192 AS many_pages;
SELECT tablestore.verify_index('vt_key');
SELECT tablestore.verify_index('vt_key', parent_check => false);
SELECT tablestore.verify_index('vt_key', false, true);
SELECT tablestore.verify_index('vt_key', true, true);
SELECT tablestore.verify_index('vt_key', heapallindexed => true);
-- after VACUUM has deleted emptied leaves, and on an empty index
DELETE FROM vt WHERE pk = 'p3';
VACUUM vt;
SELECT tablestore.verify_index('vt_key', false, true);
SELECT tablestore.verify_index('vt_key', true, true);
TRUNCATE vt;
SELECT tablestore.verify_index('vt_key', false, true);
SELECT tablestore.verify_index(NULL, false, true);
DROP TABLE vt;
