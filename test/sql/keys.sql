-- The key type: PartitionKey and RowKey order as the service orders them,
-- ordinally by UTF-16 code unit, in plain SQL as in the functions.
SELECT tablestore.create_table('Keys');
-- U+FF21 (fullwidth A, BMP above the surrogates) and U+1F600 (a
-- supplementary character, the surrogates D83D DE00 in UTF-16): in UTF-16
-- the supplementary character sorts first, in code point order last.
SELECT count(tablestore.insert_entity('Keys', jsonb_build_object('PartitionKey', p, 'RowKey', r))) AS inserted
FROM (VALUES ('a', 'ｚ'), ('a', '😀'), ('a', 'z'), ('a', ''), ('ｚ', '1'), ('😀', '1'), ('b', 'Z')) v(p, r);
SELECT pk, rk FROM tablestore_data.keys ORDER BY pk, rk;
SELECT pk, rk FROM tablestore_data.keys ORDER BY pk DESC, rk DESC;
-- the same order as comparing the UTF-16 encodings byte by byte, computed
-- here independently of the extension
CREATE FUNCTION pg_temp.utf16be(s text) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
	SELECT decode(coalesce(string_agg(CASE WHEN ascii(c) < 65536 THEN lpad(to_hex(ascii(c)), 4, '0')
		ELSE to_hex(55296 + ((ascii(c) - 65536) >> 10)) || to_hex(56320 + ((ascii(c) - 65536) & 1023)) END,
		'' ORDER BY i), ''), 'hex')
	FROM regexp_split_to_table(s, '') WITH ORDINALITY AS t(c, i)
$$;
SELECT array_agg(pk || '/' || rk ORDER BY pk, rk)
	= array_agg(pk || '/' || rk ORDER BY pg_temp.utf16be(pk), pg_temp.utf16be(rk)) AS same_order
FROM tablestore_data.keys;
-- The key operators live in schema tablestore: with it on the search_path,
-- comparisons of keys are key comparisons.  Without it they resolve to
-- text's (through the implicit cast): the same for equality, code point
-- order for ranges.
SELECT '😀'::tablestore.key < 'ｚ'::tablestore.key AS text_operator;
SELECT '😀'::tablestore.key OPERATOR(tablestore.<) 'ｚ'::tablestore.key AS key_operator;
SET search_path = public, tablestore;
SELECT 'a'::tablestore.key < 'b'::tablestore.key AS lt,
	'😀'::tablestore.key < 'ｚ'::tablestore.key AS supplementary_first,
	'😀'::text COLLATE "C" < 'ｚ'::text COLLATE "C" AS as_text_lt,
	'abc'::tablestore.key = 'abc' AS eq, 'abc'::tablestore.key <> 'abd' AS ne;
-- keys read as text where text is wanted
SELECT pk || '/' || rk AS joined, length(rk) FROM tablestore_data.keys WHERE pk = 'a' ORDER BY rk;
-- key predicates and ORDER BY on the keys use the key index, with no sort
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET enable_sort = off;
EXPLAIN (COSTS OFF) SELECT * FROM tablestore_data.keys ORDER BY pk, rk;
EXPLAIN (COSTS OFF) SELECT * FROM tablestore_data.keys WHERE pk = 'a' AND rk >= 'b' ORDER BY rk DESC;
RESET enable_seqscan;
EXPLAIN (COSTS OFF) SELECT * FROM tablestore_data.keys WHERE pk = 'a' AND rk = 'z';
RESET enable_bitmapscan;
RESET enable_sort;
RESET search_path;
SELECT tablestore.delete_table('Keys');
