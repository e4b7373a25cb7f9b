-- query_entities_json and query_entities_page_json write each entity as
-- JSON text straight from the stored row; parsed, it is exactly what the
-- jsonb functions return, for every type, every character that needs an
-- escape, $select lists, pages and continuations.
SELECT tablestore.create_table('JsonOut');
SELECT count(*) AS inserted FROM (SELECT tablestore.insert_entity('JsonOut', e) FROM unnest(ARRAY[
	'{"PartitionKey": "p", "RowKey": "01", "S": "plain", "I": 42, "D": 1.5, "B": true, "F": false}',
	'{"PartitionKey": "p", "RowKey": "02", "S": "quote \" backslash \\ slash / tab \t newline \n return \r"}',
	'{"PartitionKey": "p", "RowKey": "03", "S": "controls \u0001\u0008\u000c\u001f and del \u007f"}',
	'{"PartitionKey": "p", "RowKey": "04", "S": "ünïcödé 漢字 😀 \u2028\u2029", "E": ""}',
	'{"PartitionKey": "p", "RowKey": "05", "L": "9223372036854775807", "L@odata.type": "Edm.Int64",
	  "T": "2024-02-29T12:34:56.1234567Z", "T@odata.type": "Edm.DateTime",
	  "G": "C9DA6455-213D-42C9-9A79-3E9149A57833", "G@odata.type": "Edm.Guid",
	  "X": "AQID", "X@odata.type": "Edm.Binary", "N": "NaN", "N@odata.type": "Edm.Double",
	  "M": "-Infinity", "M@odata.type": "Edm.Double", "Z": "-0", "Z@odata.type": "Edm.Double"}',
	'{"PartitionKey": "p", "RowKey": "06"}',
	'{"PartitionKey": "q\"uote", "RowKey": "k\"ey ü", "A": 1}'
]::jsonb[]) e) d;
-- each entity, parsed, equals the jsonb entity
SELECT count(*) AS entities, bool_and(j.e::jsonb = b.e) AS equal
FROM (SELECT e, row_number() OVER () AS n FROM tablestore.query_entities_json('JsonOut') e) j
JOIN (SELECT e, row_number() OVER () AS n FROM tablestore.query_entities('JsonOut') e) b USING (n);
-- and with $select lists: missing names come back null, annotations follow,
-- system names and repeated names are not repeated
SELECT s AS select_list, count(*) AS entities, bool_and(j.e::jsonb = b.e) AS equal,
	bool_and((SELECT count(*) FROM json_object_keys(j.e)) = (SELECT count(*) FROM jsonb_object_keys(b.e))) AS same_keys
FROM unnest(ARRAY['S', 'S,I,Nope', 'L,T,G,X,N,M,Z', 'RowKey,S,S,A', 'Timestamp,X,PartitionKey', 'Nope']) s,
	LATERAL (SELECT e, row_number() OVER () AS n FROM tablestore.query_entities_json('JsonOut', NULL, s) e) j
	JOIN LATERAL (SELECT e, row_number() OVER () AS n FROM tablestore.query_entities('JsonOut', NULL, s) e) b USING (n)
GROUP BY s ORDER BY s;
-- the text itself: system properties first, then the stored ones
SELECT regexp_replace(e::text, '"(odata.etag|Timestamp)":"[^"]*(\\"[^"]*)*"', '"\1":"…"', 'g') AS text
FROM tablestore.query_entities_json('JsonOut', 'RowKey le ''03''') e;
-- pages: the same entities and continuations, page by page
WITH RECURSIVE walk AS (
	SELECT 1 AS page, p.* FROM tablestore.query_entities_page_json('JsonOut', NULL, NULL, 3) p
	UNION ALL
	SELECT w.page + 1, p.* FROM walk w,
		LATERAL tablestore.query_entities_page_json('JsonOut', NULL, NULL, 3, w.next_partition_key, w.next_row_key) p
	WHERE w.next_partition_key IS NOT NULL
)
SELECT w.page, json_array_length(w.entities) AS n, w.entities::jsonb = b.entities AS equal,
	w.next_partition_key, w.next_row_key, (w.next_partition_key, w.next_row_key) IS NOT DISTINCT FROM
	(b.next_partition_key, b.next_row_key) AS same_continuation
FROM walk w, LATERAL tablestore.query_entities_page('JsonOut', NULL, NULL, 3,
	(SELECT next_partition_key FROM walk x WHERE x.page = w.page - 1),
	(SELECT next_row_key FROM walk x WHERE x.page = w.page - 1)) b
ORDER BY w.page;
-- an empty page is an empty array
SELECT entities, next_partition_key FROM tablestore.query_entities_page_json('JsonOut', 'RowKey eq ''none''');
-- streaming stops early under LIMIT, as query_entities does
SELECT count(*) AS limited FROM (SELECT tablestore.query_entities_json('JsonOut') LIMIT 2) d;
-- query_page: the same pages as rows, the continuation in a last row
SELECT entity::jsonb->>'RowKey' AS rk, next_partition_key, next_row_key
FROM tablestore.query_page('JsonOut', NULL, 'RowKey,S', 3);
SELECT entity::jsonb->>'RowKey' AS rk, next_partition_key, next_row_key
FROM tablestore.query_page('JsonOut', NULL, 'RowKey,S', 3, 'p', '04');
SELECT entity::jsonb->>'RowKey' AS rk, next_partition_key, next_row_key
FROM tablestore.query_page('JsonOut', 'PartitionKey eq ''q"uote''');
SELECT (SELECT jsonb_agg(entity::jsonb) FROM tablestore.query_page('JsonOut', NULL, NULL, 4) WHERE entity IS NOT NULL)
	= (SELECT entities FROM tablestore.query_entities_page('JsonOut', NULL, NULL, 4)) AS same_as_a_page;
SELECT count(*) AS limited FROM (SELECT * FROM tablestore.query_page('JsonOut') LIMIT 2) d;
-- a residual filter and a select list live as long as the streamed page
-- (found by fuzz_live: they were in per-call memory)
SELECT count(entity) AS entities, count(next_row_key) AS continuations
FROM tablestore.query_page('JsonOut', 'not not (S ne ''zz'' or A eq 1) and not (RowKey eq ''02'')', 'S,A', 4);
SELECT tablestore.delete_table('JsonOut');

-- The jsonb entities and pages are assembled from the stored binary form
-- (entityout.c) rather than serialized from in-memory values: they must be
-- the bytes jsonb's own serialization gives.  40 entities (a page's array
-- past JB_OFFSET_STRIDE members) of 37 properties (an entity's JEntries past
-- it), numbers after strings of every length modulo 4 (their padding moves),
-- booleans, and strings with an escape at every place of an 8-byte word;
-- then rows of plain SQL with what the stored form never has: a nested
-- value, a null, stored properties named like system ones.
SELECT tablestore.create_table('BinOut');
SELECT count(tablestore.insert_entity('BinOut', (SELECT jsonb_object_agg(k, v) FROM (
	SELECT 'PartitionKey' AS k, to_jsonb('p'::text) AS v
	UNION ALL SELECT 'RowKey', to_jsonb(lpad(r::text, 2, '0'))
	UNION ALL SELECT 'S' || lpad(i::text, 2, '0'), to_jsonb(repeat('x', (i + r) % 13)
		|| (ARRAY['"', E'\\', E'\n', E'\x01', 'é', ''])[1 + (i + r) % 6] || repeat('y', i % 11))
	FROM generate_series(1, 20) i
	UNION ALL SELECT 'N' || lpad(i::text, 2, '0'), to_jsonb(i * 1.5 + r * 1000) FROM generate_series(1, 12) i
	UNION ALL SELECT 'B' || i, to_jsonb(i % 2 = 0) FROM generate_series(1, 5) i) d)))
FROM generate_series(1, 40) r;
INSERT INTO tablestore_data.binout VALUES
	('q', '01', now(), '{"A": {"x": [1, 2.5]}, "Z": "z", "N": 1.5}'),
	('q', '02', now(), '{"A": null, "B": 1e1000}'),
	('q', '03', now(), '{"PartitionKey": "zz", "odata.etag": 5, "Timestamp": 1, "A": "a"}');
-- each entity: the same value as its JSON text form, the same bytes once
-- reserialized, the same hash; each page likewise
SELECT count(*) AS entities, bool_and(e = j::jsonb) AS as_json, bool_and(e::text = e::text::jsonb::text) AS reserialized,
	bool_and(jsonb_hash(e) = jsonb_hash(j::jsonb)) AS same_hash,
	bool_and(e = tablestore.get_entity('BinOut', e->>'PartitionKey', e->>'RowKey')) AS as_get
FROM (SELECT row_number() OVER () AS n, e FROM tablestore.query_entities('BinOut') e) a
JOIN (SELECT row_number() OVER () AS n, j FROM tablestore.query_entities_json('BinOut') j) b USING (n);
SELECT top, jsonb_array_length(p.entities) AS n, p.entities = q.entities::jsonb AS as_json,
	p.entities::text = p.entities::text::jsonb::text AS reserialized,
	jsonb_hash(p.entities) = jsonb_hash(q.entities::jsonb) AS same_hash,
	p.entities->(jsonb_array_length(p.entities) - 1)->>'RowKey' AS last, p.next_row_key
FROM unnest(ARRAY[0, 1, 33, 40, 1000]) top,
	LATERAL tablestore.query_entities_page('BinOut', NULL, NULL, top) p,
	LATERAL tablestore.query_entities_page_json('BinOut', NULL, NULL, top) q;
SELECT p.entities = q.entities::jsonb AS selected_as_json, (p.entities->0) - 'odata.etag' AS first
FROM tablestore.query_entities_page('BinOut', 'PartitionKey eq ''q''', 'A,N,RowKey') p,
	tablestore.query_entities_page_json('BinOut', 'PartitionKey eq ''q''', 'A,N,RowKey') q;
SELECT e->'S03' AS s03, e->'N12' AS n12, e->'B5' AS b5 FROM tablestore.query_entities('BinOut',
	'PartitionKey eq ''p'' and RowKey eq ''07''') e;
SELECT tablestore.delete_table('BinOut');
