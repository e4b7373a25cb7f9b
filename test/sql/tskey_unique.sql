-- The unique check of tskey holds one leaf beyond the first at a time, as
-- nbtree's does, however many versions of a key the index holds: 700
-- versions of one entity with long keys (three entries a leaf, so over 200
-- leaves with the same key, more than a backend may lock at once).
SET search_path = public, tablestore;
CREATE TABLE tq (pk tablestore.key NOT NULL, rk tablestore.key NOT NULL, n int NOT NULL);
CREATE UNIQUE INDEX tq_key ON tq USING tskey (pk, rk);
CREATE FUNCTION pg_temp.rk(g int) RETURNS tablestore.key LANGUAGE sql IMMUTABLE AS $$
	SELECT (repeat('字', 509) || lpad(g::text, 2, '0'))::tablestore.key
$$;
INSERT INTO tq SELECT repeat('漢', 512), pg_temp.rk(g), g FROM generate_series(1, 20) g;
-- the same key deleted and inserted again, 700 times in one transaction:
-- every version stays in the index until VACUUM
DO $$
BEGIN
	FOR i IN 1..700 LOOP
		DELETE FROM tq WHERE pk = repeat('漢', 512)::tablestore.key AND rk = pg_temp.rk(10);
		INSERT INTO tq VALUES (repeat('漢', 512), pg_temp.rk(10), 1000 + i);
	END LOOP;
END $$;
SELECT pg_relation_size('tq_key') / 8192 > 200 AS over_200_pages;
-- the key's next insert checks every version: a duplicate, found
\set VERBOSITY sqlstate
INSERT INTO tq VALUES (repeat('漢', 512), pg_temp.rk(10), 0);
\set VERBOSITY default
-- deleted and inserted again after commit
DELETE FROM tq WHERE n = 1700;
INSERT INTO tq VALUES (repeat('漢', 512), pg_temp.rk(10), 2000);
-- keys just to the right of all the versions, and just to the left
INSERT INTO tq VALUES (repeat('漢', 512), pg_temp.rk(10) || 'z', 3000);
INSERT INTO tq VALUES (repeat('漢', 512), pg_temp.rk(9) || 'z', 3001);
SELECT count(*) AS rows, max(n) AS last FROM tq;
SELECT verify_index('tq_key');
SET enable_seqscan = off;
SELECT n FROM tq WHERE pk = repeat('漢', 512)::tablestore.key AND rk >= pg_temp.rk(9) AND rk < pg_temp.rk(11) ORDER BY rk;
RESET enable_seqscan;
VACUUM tq;
INSERT INTO tq VALUES (repeat('漢', 512), pg_temp.rk(10) || 'y', 4000);
SELECT verify_index('tq_key');
DROP TABLE tq;
