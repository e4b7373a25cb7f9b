-- The tskey build sorts in memory (each PartitionKey interned and ranked,
-- src/tskey/buildsort.c) and hands its entries to the tuplesort when they
-- outgrow maintenance_work_mem.  Both ways must give the same index, page
-- for page: keys with the characters whose UTF-8 order is not UTF-16 order
-- (U+E000..U+FFFF against supplementary ones), keys stored as UTF-16, a
-- key that is a prefix of another, the empty key, one PartitionKey and
-- many, RowKeys whose first 40 bytes are alike (the abbreviated key
-- ties), live duplicates, dead versions.
SET search_path = public, tablestore;
SET max_parallel_maintenance_workers = 0;
CREATE TABLE tb (pk tablestore.key NOT NULL, rk tablestore.key NOT NULL, v int NOT NULL);
INSERT INTO tb
SELECT (ARRAY['', 'a', 'ab', 'é', U&'\E000x', U&'\FFFD', U&'\+01F600', U&'\+01F600\E000',
			  repeat('k', 300), repeat(U&'\4E2D', 400)])[1 + g % 10],
	   repeat('-', 40 * (g % 2))
		|| (ARRAY['', 'z', U&'\E001', U&'\+01F601', 'é', 'x'])[1 + (g / 10) % 6] || (g / 60)::text
		|| repeat(U&'\EFFF', g % 7), g
FROM generate_series(0, 29999) g;
INSERT INTO tb SELECT pk, rk, -v - 1 FROM tb WHERE v % 50 = 0;
DELETE FROM tb WHERE v % 100 = 0;
UPDATE tb SET v = v + 1000000 WHERE v > 0 AND v % 7 = 0;
-- pages without their LSN and checksum (the build logs them after writing)
CREATE FUNCTION pg_temp.pages(i regclass) RETURNS text LANGUAGE sql AS $$
	SELECT md5(string_agg(md5(substr(pg_read_binary_file(pg_relation_filepath(i), b * 8192, 8192), 11)), '' ORDER BY b))
	FROM generate_series(0, pg_relation_size(i) / 8192 - 1) b
$$;
-- in memory
SET maintenance_work_mem = '64MB';
CREATE INDEX tb_mem ON tb USING tskey (pk, rk);
-- spilled to the tuplesort after a megabyte or so of entries
SET maintenance_work_mem = '2MB';
CREATE INDEX tb_spill ON tb USING tskey (pk, rk);
-- spilled before the first entry
SET maintenance_work_mem = '1MB';
CREATE INDEX tb_sort ON tb USING tskey (pk, rk);
RESET maintenance_work_mem;
CHECKPOINT;
SELECT pg_relation_size('tb_mem') / 8192 AS pages,
	   pg_temp.pages('tb_mem') = pg_temp.pages('tb_spill') AS spill_same,
	   pg_temp.pages('tb_mem') = pg_temp.pages('tb_sort') AS sort_same;
SELECT tablestore.verify_index('tb_mem', true, true);
-- a unique index finds the live duplicates both ways
\set VERBOSITY sqlstate
SET maintenance_work_mem = '64MB';
CREATE UNIQUE INDEX tb_u ON tb USING tskey (pk, rk);
SET maintenance_work_mem = '1MB';
CREATE UNIQUE INDEX tb_u ON tb USING tskey (pk, rk);
\set VERBOSITY default
RESET maintenance_work_mem;
DELETE FROM tb WHERE v < 0;
CREATE UNIQUE INDEX tb_u ON tb USING tskey (pk, rk);
SELECT tablestore.verify_index('tb_u', true, true);
-- an empty table and a table of one entry, in memory
CREATE TABLE te (pk tablestore.key NOT NULL, rk tablestore.key NOT NULL);
CREATE UNIQUE INDEX te_key ON te USING tskey (pk, rk);
SELECT tablestore.verify_index('te_key');
INSERT INTO te VALUES ('p', 'r');
REINDEX INDEX te_key;
SELECT tablestore.verify_index('te_key');
SELECT * FROM te WHERE pk = 'p'::tablestore.key;
DROP TABLE tb, te;
