-- tskey page splits with long keys: random keys (seeded, so the same on
-- every run), half of them 512 CJK characters (1,024 bytes in UTF-16BE),
-- half of one to four ASCII letters, so that pivots of 14 bytes and of
-- 2 KiB mix on internal pages and a split at half of the items' bytes
-- left one half as full as the page (the split pass descended into it and
-- failed with "parent page has no room for a downlink", leaving an
-- orphaned page each time).
SET search_path = public, tablestore;
CREATE TABLE tsp (pk tablestore.key NOT NULL, rk tablestore.key NOT NULL, n int NOT NULL);
CREATE UNIQUE INDEX tsp_key ON tsp USING tskey (pk, rk);
SELECT setseed(0.42);
CREATE FUNCTION pg_temp.rkey() RETURNS text LANGUAGE sql AS $$
	SELECT CASE WHEN random() < 0.5
		THEN (SELECT string_agg(chr(19968 + (random() * 20000)::int), '') FROM generate_series(1, 512))
		ELSE (SELECT string_agg(chr(65 + (random() * 25)::int), '') FROM generate_series(1, 1 + (random() * 3)::int)) END
$$;
-- one row a statement, as a client inserts
DO $$
BEGIN
	FOR i IN 1..3000 LOOP
		BEGIN
			INSERT INTO tsp VALUES (pg_temp.rkey(), pg_temp.rkey(), i);
		EXCEPTION WHEN unique_violation THEN
			NULL;
		END;
	END LOOP;
END $$;
SELECT count(*) > 2900 AS inserted FROM tsp;
-- verify_index also finds every page of the index in the tree (no orphan
-- left by a split)
SELECT verify_index('tsp_key');
DROP TABLE tsp;
