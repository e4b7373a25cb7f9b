-- tskey's memory does not grow with the rows a statement inserts or the
-- rescans of a nested loop: every per-row allocation (keys converted to
-- UTF-16BE among them) lives in a context reset for the next row.
SET search_path = public, tablestore;

-- the backend's memory at two points of one statement, recorded by a
-- function the statement calls for its rows
CREATE FUNCTION pg_temp.probe(g int, at1 int, at2 int) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	IF g = at1 OR g = at2 THEN
		PERFORM set_config('tskey_test.mem' || CASE WHEN g = at1 THEN 1 ELSE 2 END,
			(SELECT sum(total_bytes)::text FROM pg_backend_memory_contexts), false);
	END IF;
	RETURN true;
END $$;
CREATE FUNCTION pg_temp.growth() RETURNS text LANGUAGE sql AS $$
	SELECT CASE WHEN current_setting('tskey_test.mem2')::bigint - current_setting('tskey_test.mem1')::bigint < 4000000
		THEN 'bounded' ELSE 'GREW ' || pg_size_pretty(current_setting('tskey_test.mem2')::bigint
			- current_setting('tskey_test.mem1')::bigint) END
$$;

-- 30,000 inserts of CJK keys (stored as UTF-16BE) in one statement
CREATE TABLE tm (pk tablestore.key NOT NULL, rk tablestore.key NOT NULL);
CREATE UNIQUE INDEX tm_key ON tm USING tskey (pk, rk);
INSERT INTO tm SELECT repeat('漢', 60) || (g % 100), repeat('字', 60) || g
FROM generate_series(1, 30000) g WHERE pg_temp.probe(g, 2000, 30000);
SELECT pg_temp.growth() AS insert_memory;

-- 30,000 rescans of the index as the inner side of a nested loop
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET enable_material = off;
SELECT count(*) AS probes_found
FROM generate_series(1, 30000) g JOIN tm ON tm.pk = (repeat('漢', 60) || (g % 100))::key
	AND tm.rk = (repeat('字', 60) || g)::key
WHERE pg_temp.probe(g, 2000, 30000);
SELECT pg_temp.growth() AS rescan_memory;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_seqscan;
RESET enable_bitmapscan;
RESET enable_material;
SELECT verify_index('tm_key');
DROP TABLE tm;
