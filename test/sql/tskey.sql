-- The tskey index access method: every kind of scan, in both directions,
-- against an ordering computed here independently of the extension (the
-- keys' UTF-16BE encodings compared as bytes); the longest keys; uniqueness;
-- plans without a sort; verify_index after loads, deletes, VACUUM, REINDEX.
SET search_path = public, tablestore;
SELECT amname, amtype FROM pg_am WHERE amname = 'tskey';
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'key_tskey_ops';

CREATE FUNCTION pg_temp.u16(s text) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
	SELECT decode(coalesce(string_agg(CASE WHEN ascii(c) < 65536 THEN lpad(to_hex(ascii(c)), 4, '0')
		ELSE to_hex(55296 + ((ascii(c) - 65536) >> 10)) || to_hex(56320 + ((ascii(c) - 65536) & 1023)) END,
		'' ORDER BY i), ''), 'hex')
	FROM regexp_split_to_table(s, '') WITH ORDINALITY AS t(c, i)
$$;

-- Keys from an alphabet with ASCII, Latin-1, CJK, the private use area
-- (U+E000), fullwidth (U+FF5A) and supplementary characters (U+1F600,
-- U+1D11E), which order differently by code point and by UTF-16 unit.
CREATE TABLE tk (pk tablestore.key NOT NULL, rk tablestore.key NOT NULL, id int NOT NULL);
CREATE UNIQUE INDEX tk_key ON tk USING tskey (pk, rk);
CREATE TEMP TABLE alphabet AS
SELECT c, i FROM unnest(ARRAY['a', 'b', 'Z', 'é', '漢', chr(57344), 'ｚ', '😀', '𝄞', '~']) WITH ORDINALITY AS t(c, i);
INSERT INTO tk
SELECT a1.c || a2.c, b1.c || b2.c || n, row_number() OVER ()
FROM alphabet a1, alphabet a2, alphabet b1, alphabet b2, generate_series(0, 2) n
WHERE a1.i <= 6;
SELECT count(*) AS entities, pg_relation_size('tk_key') / 8192 > 20 AS many_pages FROM tk;
SELECT verify_index('tk_key');

-- the reference: the same rows, ordered by their UTF-16 encodings
CREATE TEMP TABLE ref AS SELECT id, pg_temp.u16(pk) AS upk, pg_temp.u16(rk) AS urk FROM tk;
CREATE FUNCTION pg_temp.same(got int[], want int[]) RETURNS text LANGUAGE sql AS $$
	SELECT CASE WHEN coalesce(got, '{}') = coalesce(want, '{}') THEN 'same ' || coalesce(cardinality(got), 0)
		ELSE 'DIFFERENT: ' || coalesce(cardinality(got), 0) || ' vs ' || coalesce(cardinality(want), 0) END
$$;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET enable_sort = off;

-- whole index
SELECT pg_temp.same((SELECT array_agg(id) FROM (SELECT id FROM tk ORDER BY pk, rk) s),
	(SELECT array_agg(id ORDER BY upk, urk) FROM ref)) AS full_forward;
SELECT pg_temp.same((SELECT array_agg(id) FROM (SELECT id FROM tk ORDER BY pk DESC, rk DESC) s),
	(SELECT array_agg(id ORDER BY upk DESC, urk DESC) FROM ref)) AS full_backward;
-- a partition
SELECT pg_temp.same((SELECT array_agg(id) FROM (SELECT id FROM tk WHERE pk = '漢😀' ORDER BY rk) s),
	(SELECT array_agg(id ORDER BY urk) FROM ref WHERE upk = pg_temp.u16('漢😀'))) AS partition_forward;
SELECT pg_temp.same((SELECT array_agg(id) FROM (SELECT id FROM tk WHERE pk = (chr(57344) || '😀')::key ORDER BY rk DESC) s),
	(SELECT array_agg(id ORDER BY urk DESC) FROM ref WHERE upk = pg_temp.u16(chr(57344) || '😀'))) AS partition_backward;
-- a RowKey range in a partition, bounds inclusive and exclusive
SELECT pg_temp.same((SELECT array_agg(id) FROM (SELECT id FROM tk WHERE pk = 'aé' AND rk >= '😀' AND rk < 'ｚ' ORDER BY rk) s),
	(SELECT array_agg(id ORDER BY urk) FROM ref WHERE upk = pg_temp.u16('aé')
		AND urk >= pg_temp.u16('😀') AND urk < pg_temp.u16('ｚ'))) AS rk_range_forward;
SELECT pg_temp.same((SELECT array_agg(id) FROM (SELECT id FROM tk WHERE pk = 'aé' AND rk > 'b' AND rk <= (chr(57344) || 'a')::key ORDER BY rk DESC) s),
	(SELECT array_agg(id ORDER BY urk DESC) FROM ref WHERE upk = pg_temp.u16('aé')
		AND urk > pg_temp.u16('b') AND urk <= pg_temp.u16(chr(57344) || 'a'))) AS rk_range_backward;
-- a PartitionKey range
SELECT pg_temp.same((SELECT array_agg(id) FROM (SELECT id FROM tk WHERE pk > 'b' AND pk <= 'é~' ORDER BY pk, rk) s),
	(SELECT array_agg(id ORDER BY upk, urk) FROM ref WHERE upk > pg_temp.u16('b') AND upk <= pg_temp.u16('é~'))) AS pk_range_forward;
SELECT pg_temp.same((SELECT array_agg(id) FROM (SELECT id FROM tk WHERE pk >= 'b' AND pk < '漢' ORDER BY pk DESC, rk DESC) s),
	(SELECT array_agg(id ORDER BY upk DESC, urk DESC) FROM ref WHERE upk >= pg_temp.u16('b') AND upk < pg_temp.u16('漢'))) AS pk_range_backward;
-- RowKey bounds without a PartitionKey, and redundant bounds
SELECT pg_temp.same((SELECT array_agg(id) FROM (SELECT id FROM tk WHERE rk > '𝄞ｚ' AND rk < '😀' ORDER BY pk, rk) s),
	(SELECT array_agg(id ORDER BY upk, urk) FROM ref WHERE urk > pg_temp.u16('𝄞ｚ') AND urk < pg_temp.u16('😀'))) AS rk_only;
SELECT pg_temp.same((SELECT array_agg(id) FROM (SELECT id FROM tk WHERE pk >= 'a' AND pk > 'aZ' AND pk < 'b' AND pk <= 'é' ORDER BY pk DESC, rk DESC) s),
	(SELECT array_agg(id ORDER BY upk DESC, urk DESC) FROM ref WHERE upk > pg_temp.u16('aZ') AND upk < pg_temp.u16('b'))) AS redundant_bounds;
-- a point, a missing point, a contradiction
SELECT id = (SELECT id FROM ref WHERE upk = pg_temp.u16('é😀') AND urk = pg_temp.u16('𝄞a2')) AS point
FROM tk WHERE pk = 'é😀' AND rk = '𝄞a2';
SELECT count(*) AS missing FROM tk WHERE pk = '😀ｚ' AND rk = 'nothing';
SELECT count(*) AS contradiction FROM tk WHERE pk > 'b' AND pk < 'a';
SELECT count(*) AS null_bound FROM tk WHERE pk = NULL;
-- the plans: index scans in both directions, no sort
EXPLAIN (COSTS OFF) SELECT id FROM tk ORDER BY pk, rk LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM tk WHERE pk = 'a' ORDER BY rk DESC LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM tk WHERE pk = 'a' AND rk >= 'b' AND rk < 'c' ORDER BY rk;
EXPLAIN (COSTS OFF) SELECT id FROM tk WHERE pk > 'a' ORDER BY pk DESC, rk DESC;
-- bitmap scans
SET enable_indexscan = off;
SET enable_bitmapscan = on;
EXPLAIN (COSTS OFF) SELECT count(*) FROM tk WHERE pk = 'a😀' AND rk < 'b';
SELECT count(*) = (SELECT count(*) FROM ref WHERE upk = pg_temp.u16('a😀') AND urk < pg_temp.u16('b')) AS bitmap_same
FROM tk WHERE pk = 'a😀' AND rk < 'b';
SELECT count(*) = (SELECT count(*) FROM ref WHERE urk >= pg_temp.u16('漢')) AS bitmap_rk_only
FROM tk WHERE rk >= '漢';
RESET enable_indexscan;
-- the planner chooses the index for a point lookup by itself
RESET enable_seqscan;
RESET enable_bitmapscan;
RESET enable_sort;
ANALYZE tk;
EXPLAIN (COSTS OFF) SELECT id FROM tk WHERE pk = 'aé' AND rk = 'ab1';

-- uniqueness: the service's error, SQLSTATE 23505
INSERT INTO tk VALUES ('漢😀', 'ab~0', -1);
\set VERBOSITY sqlstate
INSERT INTO tk VALUES ('漢😀', 'ab~0', -1);
\set VERBOSITY default
-- the same key again in one statement, and after its row is deleted
INSERT INTO tk VALUES ('new', 'x', -2), ('new', 'x', -3);
DELETE FROM tk WHERE pk = 'ab' AND rk = 'aaa0';
INSERT INTO tk VALUES ('ab', 'aaa0', -4);
UPDATE tk SET rk = 'aaa1' WHERE id = -4;
-- a key updated to itself (a new version with the same key) is no duplicate
UPDATE tk SET id = -5 WHERE id = -4;
SELECT pk, rk, id FROM tk WHERE id < 0 ORDER BY id;

-- The longest keys: 512 UTF-16 code units each, 1,536 bytes of UTF-8 for
-- CJK (a pair a btree could not hold), and supplementary characters (two
-- units each); one unit more is refused.
INSERT INTO tk SELECT repeat('漢', 511) || s, repeat('字', 511) || chr(19968 + g), 100000 + row_number() OVER ()
FROM unnest(ARRAY['a', 'ｚ', chr(57344)]) s, generate_series(1, 30) g;
INSERT INTO tk SELECT repeat('😀', 256), repeat('𝄞', 255) || chr(19968 + g), 200000 + g FROM generate_series(1, 40) g;
SELECT count(*) AS long_keys, max(octet_length(pk)) AS pk_bytes, max(octet_length(rk)) AS rk_bytes FROM tk WHERE id > 100000;
SELECT verify_index('tk_key');
INSERT INTO tk VALUES (repeat('😀', 256) || 'x', 'r', 0);
INSERT INTO tk VALUES ('p', repeat('漢', 513), 0);
SET enable_seqscan = off;
SELECT count(*) AS long_partition FROM tk WHERE pk = repeat('😀', 256)::key;
EXPLAIN (COSTS OFF) SELECT count(*) FROM tk WHERE pk = repeat('😀', 2)::key;
SELECT pg_temp.same((SELECT array_agg(id) FROM (SELECT id FROM tk WHERE pk >= repeat('漢', 500)::key ORDER BY pk DESC, rk DESC) s),
	(SELECT array_agg(id ORDER BY pg_temp.u16(pk) DESC, pg_temp.u16(rk) DESC) FROM tk WHERE pg_temp.u16(pk) >= pg_temp.u16(repeat('漢', 500)))) AS long_keys_backward;
RESET enable_seqscan;

-- deletes, VACUUM (entries removed), inserts into the emptied ranges, REINDEX
DELETE FROM tk WHERE id % 3 = 0;
VACUUM tk;
SELECT verify_index('tk_key');
INSERT INTO tk SELECT pk, rk || '+', -id FROM tk WHERE id % 3 = 1 AND length(rk) < 500;
SELECT verify_index('tk_key');
REINDEX INDEX tk_key;
SELECT verify_index('tk_key');
REINDEX INDEX CONCURRENTLY tk_key;
SELECT verify_index('tk_key');
SET enable_seqscan = off;
SELECT count(*) = (SELECT count(*) FROM tk WHERE id > -1000000000 AND pk IS NOT NULL) AS all_reachable FROM tk WHERE pk >= '';
RESET enable_seqscan;

-- CREATE INDEX on existing data, a non-unique index, duplicates refused by
-- a unique build, nulls, columns the access method does not serve
CREATE TABLE tb (pk tablestore.key, rk tablestore.key, v int);
INSERT INTO tb SELECT 'p' || (g % 50), 'r' || g, g FROM generate_series(1, 20000) g;
CREATE UNIQUE INDEX tb_key ON tb USING tskey (pk, rk) WITH (fillfactor = 70);
SELECT verify_index('tb_key');
INSERT INTO tb VALUES ('p1', 'r1', 0);
CREATE INDEX tb_dup ON tb USING tskey (pk, rk);
DROP INDEX tb_key;
INSERT INTO tb VALUES ('p1', 'r1', 0);
SELECT verify_index('tb_dup');
CREATE UNIQUE INDEX tb_key ON tb USING tskey (pk, rk);
INSERT INTO tb VALUES (NULL, 'r', 0);
CREATE INDEX ON tb USING tskey (pk);
CREATE INDEX ON tb USING tskey (pk DESC, rk);
CREATE INDEX ON tb USING tskey (pk, rk) WITH (fillfactor = 10);
SELECT verify_index('tb');
CREATE INDEX tb_btree ON tb (pk, rk);
SELECT verify_index('tb_btree');

-- an unlogged table's index (its init fork is an empty index)
CREATE UNLOGGED TABLE tu (pk tablestore.key NOT NULL, rk tablestore.key NOT NULL);
CREATE UNIQUE INDEX tu_key ON tu USING tskey (pk, rk);
INSERT INTO tu SELECT 'p' || (g % 10), 'r' || g FROM generate_series(1, 5000) g;
SELECT verify_index('tu_key');

-- an entity relation is indexed by tskey alone
SELECT tablestore.create_table('Indexed');
SELECT c.relname AS index, am.amname, i.indisunique
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
WHERE i.indrelid = 'tablestore_data.indexed'::regclass;
SELECT tablestore.insert_entity('Indexed', '{"PartitionKey": "p", "RowKey": "r"}') IS NOT NULL AS inserted;
SELECT tablestore.insert_entity('Indexed', '{"PartitionKey": "p", "RowKey": "r"}');
SELECT tablestore.insert_or_replace_entity('Indexed', '{"PartitionKey": "p", "RowKey": "r", "N": 1}')->>'N' AS replaced;
SELECT tablestore.delete_table('Indexed');
DROP TABLE tk, tb, tu;
