-- Entity group transactions: execute_batch.  Timestamps and ETags vary, so
-- result rows are shown without them.
CREATE FUNCTION batch_shown(r jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE
	AS $$ SELECT CASE WHEN r ? 'entity'
		THEN jsonb_set(r - 'etag', '{entity}', (r->'entity') - 'Timestamp' - 'odata.etag')
		ELSE r - 'etag' END || jsonb_build_object('has_etag', r ? 'etag') $$;
-- n operations of kind op on partition p, rows first..first+n-1
CREATE FUNCTION ops(op text, p text, first int, n int) RETURNS jsonb LANGUAGE sql IMMUTABLE
	AS $$ SELECT jsonb_agg(jsonb_build_object('op', op, 'entity',
		jsonb_build_object('PartitionKey', p, 'RowKey', lpad(i::text, 5, '0'), 'N', i)) ORDER BY i)
		FROM generate_series(first, first + n - 1) i $$;

SELECT tablestore.create_table('Orders');
CREATE FUNCTION entities() RETURNS TABLE (pk text, rk text, props jsonb) LANGUAGE sql
	AS $$ SELECT pk, rk, props FROM tablestore_data.orders ORDER BY pk, rk $$;

-- each operation inside a batch, and the rows returned
SELECT batch_shown(r) FROM tablestore.execute_batch('Orders', '[
	{"op": "insert", "entity": {"PartitionKey": "c1", "RowKey": "a", "Qty": 1}},
	{"op": "insert_or_replace", "entity": {"PartitionKey": "c1", "RowKey": "b", "Qty": 2}},
	{"op": "insert_or_merge", "entity": {"PartitionKey": "c1", "RowKey": "c", "Qty": 3}}
	]') r;
SELECT batch_shown(r) FROM tablestore.execute_batch('Orders', '[
	{"op": "update", "entity": {"PartitionKey": "c1", "RowKey": "a", "Qty": 10}},
	{"op": "merge", "entity": {"PartitionKey": "c1", "RowKey": "b", "Note": "rush"}},
	{"op": "delete", "entity": {"PartitionKey": "c1", "RowKey": "c"}},
	{"op": "insert_or_merge", "entity": {"PartitionKey": "c1", "RowKey": "d", "Qty": 4}}
	]') r;
SELECT batch_shown(r) FROM tablestore.execute_batch('Orders',
	'[{"op": "retrieve", "entity": {"PartitionKey": "c1", "RowKey": "b"}}]') r;
SELECT * FROM entities();

-- ETag conditions inside a batch
CREATE TEMP TABLE seen AS SELECT tablestore.get_entity('Orders', 'c1', 'a')->>'odata.etag' AS etag;
SELECT batch_shown(r) FROM tablestore.execute_batch('Orders', jsonb_build_array(
	jsonb_build_object('op', 'merge', 'if_match', (SELECT etag FROM seen),
		'entity', '{"PartitionKey": "c1", "RowKey": "a", "Qty": 11}'::jsonb))) r;
SELECT batch_shown(r) FROM tablestore.execute_batch('Orders', jsonb_build_array(
	'{"op": "insert", "entity": {"PartitionKey": "c1", "RowKey": "e"}}'::jsonb,
	jsonb_build_object('op', 'delete', 'if_match', (SELECT etag FROM seen),
		'entity', '{"PartitionKey": "c1", "RowKey": "a"}'::jsonb))) r;
SELECT * FROM entities();

-- limits: exactly 100 operations, then 101
SELECT count(*) FROM tablestore.execute_batch('Orders', ops('insert', 'c2', 1, 100));
SELECT count(*) FROM tablestore.execute_batch('Orders', ops('insert', 'c3', 1, 101));
SELECT count(*) FROM tablestore.execute_batch('Orders', '[]');
-- payload: 4 MiB exactly is fine, one byte more is not
CREATE FUNCTION big(extra int) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
	-- 100 inserts of two 21,000-character strings, the first one's second
	-- string shortened so that the JSON text is 4 MiB + extra bytes
	WITH base AS (SELECT jsonb_agg(jsonb_build_object('op', 'insert', 'entity',
		jsonb_build_object('PartitionKey', 'c4', 'RowKey', lpad(i::text, 3, '0'),
			'S1', repeat('x', 21000), 'S2', repeat('x', 21000))) ORDER BY i) AS b
		FROM generate_series(1, 100) i)
	SELECT jsonb_set(b, '{0,entity,S2}', to_jsonb(repeat('x', 21000 + 4194304 + extra - length(b::text))))
	FROM base $$;
SELECT length(big(0)::text) AS bytes, length(big(1)::text) AS bytes_plus_one;
SELECT count(*) FROM tablestore.execute_batch('Orders', big(1));
SELECT count(*) FROM tablestore.execute_batch('Orders', big(0));

-- checked before anything runs
SELECT * FROM tablestore.execute_batch('Orders', '[
	{"op": "insert", "entity": {"PartitionKey": "c5", "RowKey": "1"}},
	{"op": "insert", "entity": {"PartitionKey": "c5", "RowKey": "2"}},
	{"op": "insert", "entity": {"PartitionKey": "c6", "RowKey": "3"}}]');
SELECT * FROM tablestore.execute_batch('Orders', '[
	{"op": "insert", "entity": {"PartitionKey": "c5", "RowKey": "1"}},
	{"op": "delete", "entity": {"PartitionKey": "c5", "RowKey": "1"}}]');
SELECT * FROM tablestore.execute_batch('Orders', '[
	{"op": "insert", "entity": {"PartitionKey": "c5", "RowKey": "1"}},
	{"op": "retrieve", "entity": {"PartitionKey": "c5", "RowKey": "2"}}]');
SELECT * FROM tablestore.execute_batch('Orders', '[{"op": "upsert", "entity": {"PartitionKey": "c5", "RowKey": "1"}}]');
SELECT * FROM tablestore.execute_batch('Orders', '[{"op": "insert", "entity": [1]}]');
SELECT * FROM tablestore.execute_batch('Orders', '[{"op": "insert", "entity": {"PartitionKey": "c5", "RowKey": "1"}, "extra": 1}]');
SELECT * FROM tablestore.execute_batch('Orders', '[42]');
SELECT * FROM tablestore.execute_batch('Orders', '{"op": "insert"}');
SELECT * FROM tablestore.execute_batch('Orders', '[{"op": "insert", "if_match": "*", "entity": {"PartitionKey": "c5", "RowKey": "1"}}]');
SELECT * FROM tablestore.execute_batch('Orders', '[{"op": "update", "if_match": "nope", "entity": {"PartitionKey": "c5", "RowKey": "1"}}]');
SELECT * FROM tablestore.execute_batch('Orders', '[{"op": "insert", "entity": {"PartitionKey": "c5", "RowKey": "1", "bad name": 1}}]');
SELECT * FROM tablestore.execute_batch('Nowhere', '[{"op": "insert", "entity": {"PartitionKey": "c5", "RowKey": "1"}}]');

-- a failure at the first, a middle and the last operation applies nothing
SELECT * FROM tablestore.execute_batch('Orders', '[
	{"op": "insert", "entity": {"PartitionKey": "c1", "RowKey": "b"}},
	{"op": "insert", "entity": {"PartitionKey": "c1", "RowKey": "x1"}}]');
SELECT * FROM tablestore.execute_batch('Orders', '[
	{"op": "insert", "entity": {"PartitionKey": "c1", "RowKey": "x1"}},
	{"op": "delete", "entity": {"PartitionKey": "c1", "RowKey": "b"}},
	{"op": "insert", "entity": {"PartitionKey": "c1", "RowKey": "b2"}},
	{"op": "insert", "entity": {"PartitionKey": "c1", "RowKey": "d"}},
	{"op": "insert", "entity": {"PartitionKey": "c1", "RowKey": "x2"}}]');
SELECT * FROM tablestore.execute_batch('Orders', '[
	{"op": "insert", "entity": {"PartitionKey": "c1", "RowKey": "x1"}},
	{"op": "merge", "entity": {"PartitionKey": "c1", "RowKey": "b", "Qty": 99}},
	{"op": "update", "entity": {"PartitionKey": "c1", "RowKey": "nobody"}}]');
SELECT * FROM entities() WHERE pk = 'c1';

-- inside an open transaction: a failed batch aborts it, unless a SAVEPOINT
-- is there to roll back to; then the transaction goes on
BEGIN;
SELECT tablestore.insert_entity('Orders', '{"PartitionKey": "c7", "RowKey": "1"}') ? 'odata.etag' AS inserted;
SAVEPOINT before_batch;
SELECT * FROM tablestore.execute_batch('Orders', '[
	{"op": "insert", "entity": {"PartitionKey": "c7", "RowKey": "2"}},
	{"op": "insert", "entity": {"PartitionKey": "c7", "RowKey": "1"}}]');
ROLLBACK TO SAVEPOINT before_batch;
SELECT count(*) FROM tablestore.execute_batch('Orders', '[
	{"op": "insert", "entity": {"PartitionKey": "c7", "RowKey": "3"}}]');
COMMIT;
SELECT * FROM entities() WHERE pk = 'c7';

-- return_entity false: an insert's row without its entity (the gateway's
-- Prefer: return-no-content), the entity stored all the same
SELECT r - 'etag' #- '{entity,Timestamp}' #- '{entity,odata.etag}' AS row, r ? 'etag' AS has_etag
  FROM tablestore.execute_batch('Orders',
  '[{"op": "insert", "entity": {"PartitionKey": "c9", "RowKey": "1", "N": 1}, "return_entity": false},
    {"op": "insert", "entity": {"PartitionKey": "c9", "RowKey": "2", "N": 2}, "return_entity": true},
    {"op": "insert", "entity": {"PartitionKey": "c9", "RowKey": "3", "N": 3}}]') AS r;
SELECT tablestore.get_entity('Orders', 'c9', '1') - 'odata.etag' - 'Timestamp' AS stored;
SELECT * FROM tablestore.execute_batch('Orders', '[{"op": "insert", "entity": {"PartitionKey": "c9", "RowKey": "4"}, "return_entity": 0}]');
SELECT * FROM tablestore.execute_batch('Orders', '[{"op": "insert_or_replace", "entity": {"PartitionKey": "c9", "RowKey": "4"}, "return_entity": false}]');

-- a role that may not write the table cannot run (or lock) a batch on it
CREATE ROLE regress_ts_nobody;
SET ROLE regress_ts_nobody;
SELECT * FROM tablestore.execute_batch('Orders', '[{"op": "insert", "entity": {"PartitionKey": "c8", "RowKey": "1"}}]');
RESET ROLE;
GRANT SELECT, INSERT ON tablestore_data.orders TO regress_ts_nobody;
SET ROLE regress_ts_nobody;
SELECT count(*) FROM tablestore.execute_batch('Orders', '[{"op": "insert", "entity": {"PartitionKey": "c8", "RowKey": "1"}}]');
SELECT * FROM tablestore.execute_batch('Orders', '[{"op": "delete", "entity": {"PartitionKey": "c8", "RowKey": "1"}}]');
RESET ROLE;
REVOKE ALL ON tablestore_data.orders FROM regress_ts_nobody;
DROP ROLE regress_ts_nobody;

-- the direct writes of a batch share one executor state: the owner's CHECK
-- constraint and an index of theirs are applied to every operation, an
-- operation that violates one (the last) undoes the batch, the next batch
-- and single writes go on; replace, merge and delete after the inserts of
-- the same batch see them
ALTER TABLE tablestore_data.orders ADD CONSTRAINT qty_not_negative
	CHECK (coalesce((props->>'Qty')::int, 0) >= 0);
CREATE INDEX orders_qty ON tablestore_data.orders (((props->>'Qty')::int));
SELECT batch_shown(r) FROM tablestore.execute_batch('Orders', '[
	{"op": "insert", "entity": {"PartitionKey": "c10", "RowKey": "1", "Qty": 1}},
	{"op": "insert", "entity": {"PartitionKey": "c10", "RowKey": "2", "Qty": 2}},
	{"op": "insert", "entity": {"PartitionKey": "c10", "RowKey": "3", "Qty": -3}}]') r;
SELECT batch_shown(r) FROM tablestore.execute_batch('Orders', '[
	{"op": "insert", "entity": {"PartitionKey": "c10", "RowKey": "1", "Qty": 1}},
	{"op": "insert", "entity": {"PartitionKey": "c10", "RowKey": "2", "Qty": 2}},
	{"op": "insert", "entity": {"PartitionKey": "c10", "RowKey": "3", "Qty": 3}}]') r;
SELECT batch_shown(r) FROM tablestore.execute_batch('Orders', '[
	{"op": "update", "entity": {"PartitionKey": "c10", "RowKey": "1", "Qty": 10}},
	{"op": "merge", "entity": {"PartitionKey": "c10", "RowKey": "2", "Note": "n"}},
	{"op": "delete", "entity": {"PartitionKey": "c10", "RowKey": "3"}}]') r;
SELECT tablestore.merge_entity('Orders', '{"PartitionKey": "c10", "RowKey": "2", "Qty": -1}');
SELECT * FROM entities() WHERE pk = 'c10';
SET enable_seqscan = off;
SELECT pk, rk FROM tablestore_data.orders WHERE (props->>'Qty')::int = 10;
RESET enable_seqscan;
DROP INDEX tablestore_data.orders_qty;
ALTER TABLE tablestore_data.orders DROP CONSTRAINT qty_not_negative;

SELECT tablestore.delete_table('Orders');
DROP FUNCTION batch_shown(jsonb), ops(text, text, int, int), entities(), big(int);
