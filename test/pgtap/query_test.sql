-- Queries: paging through a table while others write to it, streaming, and
-- the SQLSTATE of every query error.
BEGIN;
SELECT plan(23);

SELECT tablestore.create_table('Pages');
-- 2,600 entities in 4 partitions, RowKeys with gaps so that writes can land
-- between them
SELECT count(*) FROM generate_series(0, 3) p, generate_series(0, 6) c,
	LATERAL tablestore.execute_batch('Pages', (
		SELECT jsonb_agg(jsonb_build_object('op', 'insert', 'entity',
			jsonb_build_object('PartitionKey', 'p' || p, 'RowKey', lpad((i * 10)::text, 6, '0'), 'N', i)))
		FROM generate_series(c * 100, least(c * 100 + 99, 649)) i));
SELECT is((SELECT count(*) FROM tablestore.query_entities('Pages'))::int, 2600, '2,600 entities');

-- page through with pages of 250, writing between pages: new entities before
-- and after the position, deletes of entities not yet read, merges of some
-- that were
CREATE TEMP TABLE seen (n serial, pk text, rk text);
CREATE TEMP TABLE deleted (pk text, rk text);
DO $$
DECLARE
	npk text;
	nrk text;
	page jsonb;
	pages int := 0;
BEGIN
	LOOP
		SELECT entities, next_partition_key, next_row_key INTO page, npk, nrk
		FROM tablestore.query_entities_page('Pages', NULL, 'PartitionKey,RowKey,N', 250, npk, nrk);
		INSERT INTO seen (pk, rk) SELECT e->>'PartitionKey', e->>'RowKey' FROM jsonb_array_elements(page) e;
		pages := pages + 1;
		EXIT WHEN npk IS NULL;
		-- an entity behind the position, one ahead of it, a delete ahead, a merge behind
		PERFORM tablestore.insert_entity('Pages', jsonb_build_object('PartitionKey', 'p0', 'RowKey', lpad(pages::text, 6, '0') || 'x'));
		PERFORM tablestore.insert_or_replace_entity('Pages', jsonb_build_object('PartitionKey', 'p3', 'RowKey', 'z' || pages));
		INSERT INTO deleted
		SELECT e->>'PartitionKey', e->>'RowKey'
		FROM tablestore.query_entities_page('Pages', NULL, NULL, 7, npk, nrk) p,
			jsonb_array_elements(p.entities) WITH ORDINALITY AS a(e, i)
		WHERE i = 6;
		PERFORM tablestore.delete_entity('Pages', d.pk, d.rk) FROM (SELECT * FROM deleted ORDER BY ctid DESC LIMIT 1) d;
		PERFORM tablestore.merge_entity('Pages', jsonb_build_object('PartitionKey', (page->0)->>'PartitionKey',
			'RowKey', (page->0)->>'RowKey', 'Merged', true));
	END LOOP;
END $$;
SELECT ok((SELECT count(*) FROM seen) >= 2500, 'more than 2,500 entities came back in pages of 250');
SELECT ok((SELECT count(*) FROM deleted) >= 9, 'entities were deleted ahead of the position while paging');
-- every entity that existed throughout came back exactly once
SELECT is((SELECT count(*) FROM (SELECT pk, rk FROM seen GROUP BY pk, rk HAVING count(*) > 1) d)::int, 0,
	'no entity came back twice');
SELECT is((SELECT count(*) FROM (
		SELECT 'p' || p AS pk, lpad((i * 10)::text, 6, '0') AS rk FROM generate_series(0, 3) p, generate_series(0, 649) i
		EXCEPT SELECT pk, rk FROM deleted
		EXCEPT SELECT pk, rk FROM seen) missing)::int, 0,
	'every entity that existed throughout came back');
SELECT is((SELECT count(*) FROM seen s JOIN deleted d USING (pk, rk))::int, 0, 'no deleted entity came back');
-- in key order
SELECT ok((SELECT array_agg(pk || '/' || rk ORDER BY n) FROM seen) =
		  (SELECT array_agg(pk || '/' || rk ORDER BY pk::tablestore.key, rk::tablestore.key) FROM seen),
	'pages came in key order');

-- streaming: a LIMIT or a cursor stops the scan; the caller sees rows as they come
SELECT is((SELECT count(*) FROM (SELECT * FROM tablestore.query_entities('Pages') LIMIT 3) s)::int, 3, 'LIMIT');
CREATE TEMP TABLE fetched (rk text);
DO $$
DECLARE
	c CURSOR FOR SELECT e->>'RowKey' AS rk FROM tablestore.query_entities('Pages', 'PartitionKey eq ''p2''') e;
	r record;
BEGIN
	OPEN c;
	FETCH c INTO r;
	INSERT INTO fetched VALUES (r.rk);
	FETCH c INTO r;
	INSERT INTO fetched VALUES (r.rk);
	CLOSE c;
END $$;
SELECT is((SELECT string_agg(rk, ',') FROM fetched), '000000,000010', 'a cursor fetches the first rows of the partition');
CREATE TEMP TABLE plan_rows (line text);
DO $$
DECLARE
	l text;
BEGIN
	FOR l IN EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
		SELECT * FROM tablestore.query_entities('Pages') LIMIT 5
	LOOP
		INSERT INTO plan_rows VALUES (l);
	END LOOP;
END $$;
SELECT ok(EXISTS (SELECT 1 FROM plan_rows WHERE line ~ 'ProjectSet \(actual rows=5 '), 'the scan produced only the 5 rows the LIMIT took');

-- every query error with its SQLSTATE
SELECT throws_ok($$SELECT * FROM tablestore.query_entities('Pages', 'N eq')$$, '22023', NULL, 'syntax error: InvalidInput');
SELECT throws_ok($$SELECT * FROM tablestore.query_entities('Pages', 'N eq null')$$, '22023', NULL, 'null literal: InvalidInput');
SELECT throws_ok($$SELECT * FROM tablestore.query_entities('Pages', 'substringof(''a'', N)')$$, '0A000', NULL, 'function: NotImplemented');
SELECT throws_ok($$SELECT * FROM tablestore.query_entities('Pages', 'N eq 3000000000')$$, '22023', NULL, 'Int32 out of range: InvalidInput');
SELECT throws_ok($$SELECT * FROM tablestore.query_entities('Pages', 'N eq datetime''1500-01-01T00:00:00Z''')$$, '22003', NULL, 'DateTime before 1601: OutOfRangeInput');
SELECT throws_ok($$SELECT * FROM tablestore.query_entities('Pages', 'N eq guid''nope''')$$, '22023', NULL, 'bad Guid: InvalidInput');
SELECT throws_ok($$SELECT * FROM tablestore.query_entities('Pages', 'N eq x''1''')$$, '22023', NULL, 'odd hex: InvalidInput');
SELECT throws_ok($$SELECT * FROM tablestore.query_entities('Pages', repeat('N eq 1 and ', 15) || 'N eq 1')$$, '22023', NULL, '16 comparisons: InvalidInput');
SELECT lives_ok($$SELECT * FROM tablestore.query_entities('Pages', repeat('N eq 1 and ', 14) || 'N eq 1')$$, '15 comparisons are fine');
SELECT throws_ok($$SELECT * FROM tablestore.query_entities('Nope')$$, '42P01', NULL, 'missing table: TableNotFound');
SELECT throws_ok($$SELECT * FROM tablestore.query_entities_page('Pages', top => 1001)$$, '22023', NULL, 'top over 1,000: InvalidInput');
SELECT lives_ok($$SELECT * FROM tablestore.query_entities_page('Pages', top => 1000)$$, 'top of 1,000 is fine');
SELECT throws_ok($$SELECT * FROM tablestore.query_entities_page('Pages', next_partition_key => 'p1')$$, '22023', NULL, 'half a continuation: InvalidInput');

SELECT * FROM finish();
ROLLBACK;
