-- Keys of the maximal length (512 UTF-16 units each, 1,536 bytes of UTF-8
-- for CJK) keep the tskey index linear in the keys' bytes.  Before, the
-- first pivot of an internal page was written with its full key and a split
-- of the rightmost page cut it in the middle: with 2 KiB pivots every
-- internal page kept one child, the tree grew a level every few entries
-- and 300 entities took 122 MB (attack report, finding 3).  Ascending and
-- scattered inserts, keys sharing a 506-character prefix or not, through
-- the service and plain SQL, a build, and VACUUM.
SET search_path = public, tablestore;
-- the index within 5 times the keys' UTF-8 bytes and 8 pages (measured:
-- 2.6 ascending, 4.2 scattered with a shared prefix), and valid
CREATE FUNCTION pg_temp.check_index(t text) RETURNS TABLE (tbl text, bounded boolean, valid boolean)
LANGUAGE plpgsql AS $$
DECLARE
	idx regclass := format('tablestore_data.%I', t || '_pk_rk_idx')::regclass;
	keybytes bigint;
BEGIN
	EXECUTE format('SELECT sum(octet_length(pk::text) + octet_length(rk::text)) FROM tablestore_data.%I', t)
		INTO keybytes;
	PERFORM tablestore.verify_index(idx, heapallindexed => true);
	RETURN QUERY SELECT t, pg_relation_size(idx) <= 5 * keybytes + 8 * 8192, true;
END $$;
SELECT tablestore.create_table('Klasc'), tablestore.create_table('Klscat'),
	tablestore.create_table('Klpfx');
-- ascending, distinct leading digits (the report's script)
SELECT count(tablestore.insert_entity('Klasc', jsonb_build_object(
	'PartitionKey', lpad(i::text, 6, '0') || repeat('中', 506),
	'RowKey', lpad(i::text, 6, '0') || repeat('中', 506), 'V', i)))
FROM generate_series(1, 300) i;
SELECT * FROM pg_temp.check_index('klasc');
-- scattered order
SELECT count(tablestore.insert_entity('Klscat', jsonb_build_object(
	'PartitionKey', lpad(i::text, 6, '0') || repeat('中', 506),
	'RowKey', lpad((i * 7919 % 1000)::text, 6, '0') || repeat('中', 506), 'V', i)))
FROM (SELECT i FROM generate_series(1, 300) i ORDER BY md5(i::text)) s;
SELECT * FROM pg_temp.check_index('klscat');
-- plain SQL, keys sharing a 506-character prefix, scattered and ascending
INSERT INTO tablestore_data.klpfx (pk, rk, ts, props)
SELECT repeat('中', 506) || lpad(i::text, 6, '0'), repeat('中', 506) || lpad(i::text, 6, '0'),
	now(), '{}' FROM generate_series(1, 300) i ORDER BY md5(i::text);
INSERT INTO tablestore_data.klpfx (pk, rk, ts, props)
SELECT repeat('中', 506) || '000000', repeat('中', 506) || lpad(i::text, 6, '0'),
	now(), '{}' FROM generate_series(1, 200) i;
SELECT * FROM pg_temp.check_index('klpfx');
-- the build
REINDEX INDEX tablestore_data.klpfx_pk_rk_idx;
SELECT * FROM pg_temp.check_index('klpfx');
-- VACUUM gives the pages of deleted entries back: cycles of deleting nine
-- entities in ten and inserting them again settle after the first (pages
-- deleted by one VACUUM are reused after the next one)
CREATE TEMP TABLE sizes (cycle int, sz bigint);
CREATE FUNCTION pg_temp.refill(c int) RETURNS void LANGUAGE sql AS $$
	SELECT count(tablestore.insert_entity('Klasc', jsonb_build_object(
		'PartitionKey', lpad(i::text, 6, '0') || repeat('中', 506),
		'RowKey', lpad(i::text, 6, '0') || repeat('中', 506), 'V', i)))
	FROM generate_series(1, 300) i WHERE i % 10 <> 0;
	INSERT INTO sizes VALUES (c, pg_relation_size('tablestore_data.klasc_pk_rk_idx'));
$$;
DELETE FROM tablestore_data.klasc WHERE (props->>'V')::int % 10 <> 0;
VACUUM tablestore_data.klasc;
VACUUM tablestore_data.klasc;
SELECT pg_temp.refill(1);
DELETE FROM tablestore_data.klasc WHERE (props->>'V')::int % 10 <> 0;
VACUUM tablestore_data.klasc;
VACUUM tablestore_data.klasc;
SELECT pg_temp.refill(2);
DELETE FROM tablestore_data.klasc WHERE (props->>'V')::int % 10 <> 0;
VACUUM tablestore_data.klasc;
VACUUM tablestore_data.klasc;
SELECT pg_temp.refill(3);
DELETE FROM tablestore_data.klasc WHERE (props->>'V')::int % 10 <> 0;
VACUUM tablestore_data.klasc;
VACUUM tablestore_data.klasc;
SELECT pg_temp.refill(4);
SELECT tablestore.verify_index('tablestore_data.klasc_pk_rk_idx', heapallindexed => true);
SELECT max(sz) FILTER (WHERE cycle = 4) <= max(sz) FILTER (WHERE cycle = 2) + 8 * 8192 AS settled
FROM sizes;
SELECT tablestore.delete_table('Klasc'), tablestore.delete_table('Klscat'),
	tablestore.delete_table('Klpfx');
