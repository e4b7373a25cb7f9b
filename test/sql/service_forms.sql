-- Issue 22, items 1 to 3: what the service accepts and returns where an
-- earlier reading of it was stricter or looser.
--  1. A Boolean as an annotated string: "true"/"false" in any letter case,
--     stored as the Boolean, on every write path; anything else refused.
--  2. $select returns exactly the named properties (null for one an entity
--     lacks) and odata.etag; PartitionKey, RowKey and Timestamp only when
--     named; paging stays exact when the keys are not selected.
--  3. top => 0 is legal: no entities and no continuation; negative refused.
SELECT tablestore.create_table('Forms');

-- 1. annotated Boolean strings, stored as Booleans (no annotation kept)
SELECT tablestore.insert_entity('Forms', '{"PartitionKey": "b", "RowKey": "1",
	"F": "false", "F@odata.type": "Edm.Boolean", "T": "TRUE", "T@odata.type": "Edm.Boolean",
	"M": "fAlSe", "M@odata.type": "Edm.Boolean", "P": true, "P@odata.type": "Edm.Boolean"}')
	- 'Timestamp' - 'odata.etag' AS inserted;
SELECT p, jsonb_typeof(e->p) AS type, e->p AS value, e ? (p || '@odata.type') AS annotated
FROM tablestore.get_entity('Forms', 'b', '1') e, unnest(ARRAY['F', 'T', 'M', 'P']) p;
-- every write path takes them: update, merge, both upserts, a batch, validate_entity
SELECT tablestore.update_entity('Forms', '{"PartitionKey": "b", "RowKey": "1", "U": "True", "U@odata.type": "Edm.Boolean"}')->'U' AS updated;
SELECT tablestore.merge_entity('Forms', '{"PartitionKey": "b", "RowKey": "1", "G": "FALSE", "G@odata.type": "Edm.Boolean"}')->'G' AS merged;
SELECT tablestore.insert_or_replace_entity('Forms', '{"PartitionKey": "b", "RowKey": "2", "R": "false", "R@odata.type": "Edm.Boolean"}')->'R' AS replaced;
SELECT tablestore.insert_or_merge_entity('Forms', '{"PartitionKey": "b", "RowKey": "2", "S": "tRUE", "S@odata.type": "Edm.Boolean"}')->'S' AS upsert_merged;
SELECT r->>'status' AS status FROM tablestore.execute_batch('Forms', '[
	{"op": "insert", "entity": {"PartitionKey": "b", "RowKey": "3", "B": "true", "B@odata.type": "Edm.Boolean"}},
	{"op": "merge", "entity": {"PartitionKey": "b", "RowKey": "2", "C": "False", "C@odata.type": "Edm.Boolean"}}]') r;
SELECT e->>'RowKey' AS rk, e->'B' AS b, e->'C' AS c, e->'R' AS r, e->'S' AS s
FROM tablestore.query_entities('Forms', 'PartitionKey eq ''b'' and RowKey ge ''2''') e;
SELECT tablestore.validate_entity('{"PartitionKey": "b", "RowKey": "v", "V": "TRUE", "V@odata.type": "Edm.Boolean"}') AS validated;
-- a filter finds them as Booleans
SELECT string_agg(e->>'RowKey', ',') AS true_b FROM tablestore.query_entities('Forms', 'B eq true or T eq true or U eq true') e;
-- anything else as an annotated Boolean string is InvalidInput (and so is
-- a number); without the annotation "true" is a String, stored as one
DO $$
DECLARE
	v text;
BEGIN
	FOREACH v IN ARRAY ARRAY['yes', '1', '', ' true', 'true ', 'tru', 'falsey', 'T', '0'] LOOP
		BEGIN
			PERFORM tablestore.insert_entity('Forms', jsonb_build_object('PartitionKey', 'x', 'RowKey', v,
				'B', v, 'B@odata.type', 'Edm.Boolean'));
			RAISE NOTICE '% accepted', quote_literal(v);
		EXCEPTION WHEN invalid_parameter_value THEN
			RAISE NOTICE '% refused: %', quote_literal(v), SQLERRM;
		END;
	END LOOP;
END $$;
SELECT tablestore.insert_entity('Forms', '{"PartitionKey": "b", "RowKey": "n", "B": 1, "B@odata.type": "Edm.Boolean"}');
SELECT tablestore.validate_entity('{"PartitionKey": "b", "RowKey": "n", "B": "on", "B@odata.type": "Edm.Boolean"}');
SELECT jsonb_typeof(tablestore.insert_entity('Forms', '{"PartitionKey": "b", "RowKey": "s", "B": "true"}')->'B') AS plain_string;

-- 2. $select: exactly the named properties and odata.etag
SELECT tablestore.create_table('Sel');
SELECT count(tablestore.insert_entity('Sel', jsonb_build_object('PartitionKey', 'p' || (i / 3), 'RowKey', i::text,
	'A', i, 'L', i::text, 'L@odata.type', 'Edm.Int64')))
FROM generate_series(1, 7) i;
-- keys not named: not returned, nor Timestamp; a missing property null
SELECT e - 'odata.etag' AS e, e ? 'odata.etag' AS etag
FROM tablestore.get_entity('Sel', 'p0', '1', 'A,Missing') e;
SELECT e - 'odata.etag' AS e, e ? 'odata.etag' AS etag
FROM tablestore.query_entities('Sel', 'PartitionKey eq ''p1''', 'L') e;
-- named: returned; Timestamp only when named
SELECT array(SELECT jsonb_object_keys(e)) AS keys FROM tablestore.get_entity('Sel', 'p0', '1', 'RowKey,A') e;
SELECT array(SELECT jsonb_object_keys(e)) AS keys FROM tablestore.get_entity('Sel', 'p0', '1', 'Timestamp') e;
SELECT array(SELECT jsonb_object_keys(e)) AS keys
FROM tablestore.get_entity('Sel', 'p0', '1', 'PartitionKey, RowKey,Timestamp,L') e;
-- json text: odata.etag first, then the named system properties, then the others
SELECT regexp_replace(e::text, '"odata.etag":"(\\.|[^"\\])*"', '"odata.etag":"<etag>"') AS e
FROM tablestore.query_entities_json('Sel', 'RowKey eq ''2''', 'A,RowKey,Nope') e;
SELECT regexp_replace(regexp_replace(e::text, '"odata.etag":"(\\.|[^"\\])*"', '"odata.etag":"<etag>"'),
	'"Timestamp":"[^"]*"', '"Timestamp":"<time>"') AS e
FROM tablestore.query_entities_json('Sel', 'RowKey eq ''2''', 'Timestamp,PartitionKey') e;
-- every page form: entities without keys, continuations exact
SELECT jsonb_array_length(entities) AS n, (entities->0) - 'odata.etag' AS first, next_partition_key, next_row_key
FROM tablestore.query_entities_page('Sel', NULL, 'A', 2);
SELECT json_array_length(entities) AS n, next_partition_key, next_row_key
FROM tablestore.query_entities_page_json('Sel', NULL, 'A', 2, 'p0', '2');
SELECT (entity::jsonb - 'odata.etag') AS entity, next_partition_key, next_row_key
FROM tablestore.query_page('Sel', NULL, 'A', 2, 'p1', '4');
-- the keyed page (what the HTTP gateway reads): each entity's keys beside it
SELECT entity::jsonb - 'odata.etag' AS entity, partition_key, row_key, next_partition_key, next_row_key
FROM tablestore._query_page_keyed('Sel', NULL, 'A', 2, 'p0', '2');
-- paging through the whole table with keys not selected returns every entity once
WITH RECURSIVE pages(n, a, npk, nrk) AS (
	SELECT 1, (SELECT array_agg((x->>'A')::int) FROM jsonb_array_elements(q.entities) x), q.next_partition_key, q.next_row_key
	FROM tablestore.query_entities_page('Sel', NULL, 'A', 3) q
	UNION ALL
	SELECT p.n + 1, (SELECT array_agg((x->>'A')::int) FROM jsonb_array_elements(q.entities) x), q.next_partition_key, q.next_row_key
	FROM pages p, tablestore.query_entities_page('Sel', NULL, 'A', 3, p.npk, p.nrk) q
	WHERE p.npk IS NOT NULL AND p.n < 10)
SELECT n, a, npk, nrk FROM pages ORDER BY n;

-- 3. top => 0: no entities, no continuation; negative refused
SELECT count(*) AS streamed FROM tablestore.query_entities('Sel', NULL, NULL, 0);
SELECT count(*) AS streamed_json FROM tablestore.query_entities_json('Sel', NULL, 'A', 0);
SELECT entities, next_partition_key, next_row_key FROM tablestore.query_entities_page('Sel', NULL, NULL, 0);
SELECT entities, next_partition_key, next_row_key FROM tablestore.query_entities_page_json('Sel', NULL, NULL, 0, 'p0', '1');
SELECT count(*) AS rows FROM tablestore.query_page('Sel', 'PartitionKey eq ''p1''', NULL, 0);
SELECT count(*) AS rows FROM tablestore.query_page('Sel', NULL, NULL, 0);
-- still checked: the table, the filter and the select list
SELECT * FROM tablestore.query_entities_page('NoSuchTable', NULL, NULL, 0);
SELECT * FROM tablestore.query_page('Sel', 'A eq', NULL, 0);
SELECT * FROM tablestore.query_entities('Sel', NULL, 'A,,B', 0);
SELECT * FROM tablestore.query_entities('Sel', NULL, NULL, -1);
SELECT * FROM tablestore.query_entities_page('Sel', NULL, NULL, -1);
SELECT * FROM tablestore.query_page('Sel', NULL, NULL, -1);

SELECT tablestore.delete_table('Forms'), tablestore.delete_table('Sel');
