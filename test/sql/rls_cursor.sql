-- A query under row-level security reads through SQL.  Its scan outlives
-- the caller's subtransactions: a PL/pgSQL cursor whose first FETCH ran in a
-- BEGIN ... EXCEPTION block that rolled back read on to the end (it failed at
-- row 101 with XX000 "cursor ... of the query has gone": the scan's own
-- cursor had been opened in, and died with, that block).  Through SQL it
-- returns what the direct scan returns, in the same order.
CREATE ROLE regress_ts_rls_reader;
SELECT tablestore.create_table('RlsScan');
-- 360 entities: partitions of 1, 99, 100, 101 and 59 rows around the batch
-- of 100, and a key order that is not code point order (U+1F600 sorts
-- before U+FF5A by UTF-16 code unit)
INSERT INTO tablestore_data.rlsscan
SELECT 'a', 'only', now(), '{}'
UNION ALL SELECT 'b', lpad(i::text, 3, '0'), now(), pg_catalog.jsonb_build_object('I', i) FROM generate_series(1, 99) i
UNION ALL SELECT 'c', lpad(i::text, 3, '0'), now(), pg_catalog.jsonb_build_object('I', i) FROM generate_series(1, 100) i
UNION ALL SELECT 'd', lpad(i::text, 3, '0'), now(), pg_catalog.jsonb_build_object('I', i) FROM generate_series(1, 101) i
UNION ALL SELECT 'e' || chr(65370), lpad(i::text, 3, '0'), now(), '{}' FROM generate_series(1, 29) i
UNION ALL SELECT 'e' || chr(128512), lpad(i::text, 3, '0'), now(), '{}' FROM generate_series(1, 30) i;
ALTER TABLE tablestore_data.rlsscan ENABLE ROW LEVEL SECURITY;
CREATE POLICY everything ON tablestore_data.rlsscan FOR SELECT TO regress_ts_rls_reader USING (true);
GRANT SELECT ON tablestore_data.rlsscan TO regress_ts_rls_reader;

-- the keys a cursor over query_entities (or query_entities_json) returns,
-- its first FETCH in a block that rolls back
CREATE FUNCTION pg_temp.keys_after_rollback(filter text, json boolean) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
	c refcursor;
	r jsonb;
	keys text[] := '{}';
BEGIN
	IF json THEN
		OPEN c FOR SELECT e::jsonb FROM tablestore.query_entities_json('RlsScan', filter) e;
	ELSE
		OPEN c FOR SELECT e FROM tablestore.query_entities('RlsScan', filter) e;
	END IF;
	BEGIN
		FETCH c INTO r;
		keys := keys || (r->>'PartitionKey' || '/' || (r->>'RowKey'));
		RAISE EXCEPTION 'roll the block back';
	EXCEPTION WHEN raise_exception THEN
		NULL;
	END;
	LOOP
		FETCH c INTO r;
		EXIT WHEN NOT FOUND;
		keys := keys || (r->>'PartitionKey' || '/' || (r->>'RowKey'));
	END LOOP;
	CLOSE c;
	RETURN keys;
END $$;
GRANT EXECUTE ON FUNCTION pg_temp.keys_after_rollback(text, boolean) TO regress_ts_rls_reader;
-- the same keys as the direct scan gives the owner (row-level security does
-- not apply to the owner), for filters of each access path: all, a range of
-- partitions, points, a row range in each partition
CREATE TEMP TABLE filters (filter text);
INSERT INTO filters VALUES (NULL), ('PartitionKey ge ''c'''), ('PartitionKey eq ''d'' or PartitionKey eq ''b'''),
	('RowKey gt ''050'''), ('PartitionKey eq ''c'' and RowKey ge ''001'''), ('I ge 2');
CREATE TEMP TABLE direct AS
SELECT filter, json, pg_temp.keys_after_rollback(filter, json) AS keys
FROM filters, (VALUES (false), (true)) j(json);
GRANT SELECT ON direct TO regress_ts_rls_reader;
SELECT filter, json, cardinality(keys) FROM direct ORDER BY 1, 2;
SET ROLE regress_ts_rls_reader;
SELECT d.filter, d.json, cardinality(k.keys) AS n, k.keys = d.keys AS same_as_direct
FROM direct d, LATERAL (SELECT pg_temp.keys_after_rollback(d.filter, d.json) AS keys) k
ORDER BY 1, 2;
-- the same as a plain query gives, also for a page
SELECT count(*) AS n FROM tablestore.query_entities('RlsScan') e;
SELECT jsonb_array_length(entities) AS n, next_partition_key, next_row_key
FROM tablestore.query_entities_page('RlsScan', NULL, NULL, 250);
SELECT count(entity) AS n, max(next_partition_key) AS next_pk, max(next_row_key) AS next_rk
FROM tablestore.query_page('RlsScan', 'PartitionKey ge ''c''', NULL, 150);
RESET ROLE;

-- a policy that hides rows: the reader gets the rows it may see, in order
CREATE POLICY odd ON tablestore_data.rlsscan AS RESTRICTIVE FOR SELECT TO regress_ts_rls_reader
	USING (NOT props ? 'I' OR (props->>'I')::int % 2 = 1);
SET ROLE regress_ts_rls_reader;
SELECT d.filter, d.json, cardinality(k.keys) AS n,
	k.keys = ARRAY(SELECT key FROM unnest(d.keys) WITH ORDINALITY u(key, i)
		WHERE key NOT SIMILAR TO '[bcd]/%' OR ltrim(split_part(key, '/', 2), '0')::int % 2 = 1 ORDER BY i) AS visible
FROM direct d, LATERAL (SELECT pg_temp.keys_after_rollback(d.filter, d.json) AS keys) k
ORDER BY 1, 2;
RESET ROLE;

SELECT tablestore.delete_table('RlsScan');
DROP OWNED BY regress_ts_rls_reader;
DROP ROLE regress_ts_rls_reader;
