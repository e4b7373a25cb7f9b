-- The two write paths give the same results.  A write goes through the
-- table and index access methods directly unless the relation has
-- triggers, row-level security applies, or the caller lacks a table-wide
-- privilege; then through SPI.  The same operations on a table of each kind
-- (the second made to take the SPI path by a trigger that does nothing)
-- must store the same entities and raise the same errors.
\set VERBOSITY terse
CREATE FUNCTION pg_temp.try(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || left(SQLERRM, 120);
END $$;
CREATE FUNCTION pg_temp.noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
SELECT tablestore.create_table('PathDirect');
SELECT tablestore.create_table('PathSpi');
CREATE TRIGGER noop AFTER INSERT OR UPDATE OR DELETE ON tablestore_data.pathspi
	FOR EACH ROW EXECUTE FUNCTION pg_temp.noop();

CREATE TEMP TABLE ops (n int, op text, arg jsonb, if_match text);
INSERT INTO ops VALUES
	(1, 'insert', '{"PartitionKey": "p", "RowKey": "1", "A": 1, "B": "x"}', NULL),
	(2, 'insert', '{"PartitionKey": "p", "RowKey": "1", "A": 2}', NULL),
	(3, 'merge', '{"PartitionKey": "p", "RowKey": "1", "B": 5, "B@odata.type": "Edm.Int64", "C": true}', '*'),
	(4, 'replace', '{"PartitionKey": "p", "RowKey": "1", "D": 1.5}', '*'),
	(5, 'merge', '{"PartitionKey": "p", "RowKey": "2", "A": 1}', '*'),
	(6, 'replace', '{"PartitionKey": "p", "RowKey": "2", "A": 1}', '*'),
	(7, 'upsert_merge', '{"PartitionKey": "p", "RowKey": "2", "A": 1}', NULL),
	(8, 'upsert_merge', '{"PartitionKey": "p", "RowKey": "2", "B": "y"}', NULL),
	(9, 'upsert_replace', '{"PartitionKey": "p", "RowKey": "3", "A": 3}', NULL),
	(10, 'upsert_replace', '{"PartitionKey": "p", "RowKey": "3", "Z": 3}', NULL),
	(11, 'merge', '{"PartitionKey": "p", "RowKey": "3", "Y": 1}', 'W/"datetime''2001-01-01T00%3A00%3A00Z''"'),
	(12, 'delete', '{"PartitionKey": "p", "RowKey": "3"}', 'W/"datetime''2001-01-01T00%3A00%3A00Z''"'),
	(13, 'delete', '{"PartitionKey": "p", "RowKey": "9"}', '*'),
	(14, 'delete', '{"PartitionKey": "p", "RowKey": "1"}', '*'),
	(15, 'merge', jsonb_build_object('PartitionKey', 'p', 'RowKey', '2', 'S', repeat('s', 32768)), '*'),
	(16, 'merge', jsonb_build_object('PartitionKey', 'p', 'RowKey', '2', 'S', repeat('s', 32769)), '*');
-- a merge beyond the entity size limit: each property fits, the entity does not
INSERT INTO ops SELECT 16 + i, 'merge', jsonb_build_object('PartitionKey', 'p', 'RowKey', '2', 'M' || i, repeat('m', 32000)), '*'
	FROM generate_series(1, 17) i;

CREATE FUNCTION pg_temp.apply(t text, o ops) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	RETURN pg_temp.try(CASE o.op
		WHEN 'insert' THEN format('SELECT tablestore.insert_entity(%L, %L)', t, o.arg)
		WHEN 'merge' THEN format('SELECT tablestore.merge_entity(%L, %L, %L)', t, o.arg, o.if_match)
		WHEN 'replace' THEN format('SELECT tablestore.update_entity(%L, %L, %L)', t, o.arg, o.if_match)
		WHEN 'upsert_merge' THEN format('SELECT tablestore.insert_or_merge_entity(%L, %L)', t, o.arg)
		WHEN 'upsert_replace' THEN format('SELECT tablestore.insert_or_replace_entity(%L, %L)', t, o.arg)
		WHEN 'delete' THEN format('SELECT tablestore.delete_entity(%L, %L, %L, %L)', t, o.arg->>'PartitionKey',
			o.arg->>'RowKey', o.if_match)
	END);
END $$;
CREATE TEMP TABLE outcome (n int, direct text, spi text);
DO $$
DECLARE
	o ops;
BEGIN
	FOR o IN SELECT * FROM ops ORDER BY n LOOP
		INSERT INTO outcome VALUES (o.n, pg_temp.apply('PathDirect', o), pg_temp.apply('PathSpi', o));
	END LOOP;
END $$;
SELECT n, op, direct, direct = spi AS same FROM outcome JOIN ops USING (n) ORDER BY n;
SELECT d.pk, d.rk, d.props = s.props AS same_props, (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(d.props) k) AS names
FROM tablestore_data.pathdirect d FULL JOIN tablestore_data.pathspi s USING (pk, rk) ORDER BY 1, 2;

-- Timestamps increase per entity on both paths, even within a microsecond
SELECT bool_and(a < b) AS increasing FROM (
	SELECT (tablestore.merge_entity(t, '{"PartitionKey": "p", "RowKey": "2", "N": 1}')->>'Timestamp')::timestamptz AS a,
		(tablestore.merge_entity(t, '{"PartitionKey": "p", "RowKey": "2", "N": 2}')->>'Timestamp')::timestamptz AS b
	FROM unnest(ARRAY['PathDirect', 'PathSpi']) t) d;

-- a batch on each path
SELECT t, count(*) AS results FROM unnest(ARRAY['PathDirect', 'PathSpi']) t,
	LATERAL tablestore.execute_batch(t, '[{"op": "insert", "entity": {"PartitionKey": "b", "RowKey": "1"}},
		{"op": "insert_or_merge", "entity": {"PartitionKey": "b", "RowKey": "2", "X": 1}},
		{"op": "insert_or_replace", "entity": {"PartitionKey": "b", "RowKey": "3", "Z": 3}}]') GROUP BY t ORDER BY t;
SELECT t, count(*) AS results FROM unnest(ARRAY['PathDirect', 'PathSpi']) t,
	LATERAL tablestore.execute_batch(t, '[{"op": "merge", "entity": {"PartitionKey": "b", "RowKey": "1", "Y": 2}},
		{"op": "delete", "entity": {"PartitionKey": "b", "RowKey": "2"}},
		{"op": "insert_or_merge", "entity": {"PartitionKey": "b", "RowKey": "3", "W": 4}}]') GROUP BY t ORDER BY t;
-- a failing batch changes nothing on either path
SELECT t, pg_temp.try(format('SELECT * FROM tablestore.execute_batch(%L, %L)', t,
	'[{"op": "delete", "entity": {"PartitionKey": "b", "RowKey": "1"}},
	  {"op": "insert", "entity": {"PartitionKey": "b", "RowKey": "3"}}]')) AS failing
FROM unnest(ARRAY['PathDirect', 'PathSpi']) t;
SELECT d.rk, d.props, d.props = s.props AS same FROM tablestore_data.pathdirect d
FULL JOIN tablestore_data.pathspi s USING (pk, rk) WHERE pk = 'b' ORDER BY 1;

-- the direct path keeps HOT updates possible: updates of an entity whose
-- page has room change no index
SELECT pg_stat_reset_single_table_counters('tablestore_data.pathdirect'::regclass);
SELECT count(*) FROM (SELECT tablestore.merge_entity('PathDirect', jsonb_build_object('PartitionKey', 'p', 'RowKey', '2', 'H', i))
	FROM generate_series(1, 20) i) d;
SELECT pg_stat_force_next_flush();
SELECT n_tup_upd >= 20 AS updated, n_tup_hot_upd > 0 AS hot FROM pg_stat_user_tables
WHERE relid = 'tablestore_data.pathdirect'::regclass;

-- a CHECK constraint the owner added binds both paths
ALTER TABLE tablestore_data.pathdirect ADD CONSTRAINT small CHECK (pg_column_size(props) < 1000) NOT VALID;
ALTER TABLE tablestore_data.pathspi ADD CONSTRAINT small CHECK (pg_column_size(props) < 1000) NOT VALID;
SELECT t, pg_temp.try(format('SELECT tablestore.insert_entity(%L, %L)', t,
	jsonb_build_object('PartitionKey', 'c', 'RowKey', '1', 'Big', repeat('b', 2000)))) AS big
FROM unnest(ARRAY['PathDirect', 'PathSpi']) t;

SELECT tablestore.delete_table(t) FROM unnest(ARRAY['PathDirect', 'PathSpi']) t;
