-- Property indexes (issue 26 part 1): the API and its errors, the index's
-- key for every Edm type, the planner's choice (explain_query), and the
-- differential check: every filter returns the same entities and the same
-- pages with the index as without it.
SET client_min_messages = notice;
SELECT tablestore.create_table('Pidx');

-- API and errors
SELECT tablestore.create_property_index('Pidx', 'V', 'Int32') AS name;
SELECT tablestore.create_property_index('Pidx', 'V', 'Edm.Int32');      -- exists: 42P07
SELECT tablestore.create_property_index('Nope', 'V', 'Int32');          -- TableNotFound
SELECT tablestore.create_property_index('Pidx', 'PartitionKey', 'String'); -- InvalidInput
SELECT tablestore.create_property_index('Pidx', 'Timestamp', 'DateTime');
SELECT tablestore.create_property_index('Pidx', '1bad', 'String');      -- PropertyNameInvalid
SELECT tablestore.create_property_index('Pidx', repeat('a', 256), 'String'); -- PropertyNameTooLong
SELECT tablestore.create_property_index('Pidx', 'V', 'Edm.Decimal');    -- InvalidInput
SELECT tablestore.create_property_index('Pidx', NULL, 'String');
SELECT tablestore.create_property_index('Pidx', 'V', NULL);
SELECT tablestore.drop_property_index('Pidx', 'V', 'String');           -- ResourceNotFound
SELECT tablestore.drop_property_index('Pidx', 'V', 'String', if_exists => true);
SELECT tablestore.drop_property_index('Pidx', 'V', 'Int32');
SELECT count(*) FROM tablestore.list_property_indexes('Pidx');
-- only the table's owner
CREATE ROLE pidx_reader;
GRANT SELECT ON tablestore_data.pidx TO pidx_reader;
SET ROLE pidx_reader;
SELECT tablestore.create_property_index('Pidx', 'V', 'Int32');          -- 42501
SELECT tablestore.drop_property_index('Pidx', 'V', 'Int32', true);
RESET ROLE;
-- the SQLSTATE of each error above
CREATE FUNCTION sqlstate_of(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE stmt;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE;
END $$;
SELECT stmt, sqlstate_of('SELECT tablestore.' || stmt) FROM (VALUES
	('create_property_index(''Nope'', ''V'', ''Int32'')'),
	('create_property_index(''Pidx'', ''RowKey'', ''String'')'),
	('create_property_index(''Pidx'', ''1bad'', ''String'')'),
	('create_property_index(''Pidx'', repeat(''a'', 256), ''String'')'),
	('create_property_index(''Pidx'', ''V'', ''Edm.Decimal'')'),
	('drop_property_index(''Pidx'', ''V'', ''String'')')) v(stmt);
SELECT tablestore.create_property_index('Pidx', 'V', 'Int32') IS NOT NULL AS created,
	sqlstate_of($$SELECT tablestore.create_property_index('Pidx', 'V', 'Int32')$$) AS again;
SELECT tablestore.drop_property_index('Pidx', 'V', 'Int32');
SET ROLE pidx_reader;
SELECT sqlstate_of($$SELECT tablestore.create_property_index('Pidx', 'V', 'Int32')$$) AS not_owner;
RESET ROLE;

-- one index per type on V, and one on W
SELECT t, tablestore.create_property_index('Pidx', 'V', t) IS NOT NULL AS created
FROM unnest(ARRAY['String', 'Int32', 'Int64', 'Double', 'Boolean', 'DateTime', 'Guid', 'Binary']) t;
SELECT tablestore.create_property_index('Pidx', 'W', 'Int32') IS NOT NULL AS created;
SELECT table_name, property, edm_type, size > 0 AS has_size, valid
FROM tablestore.list_property_indexes('pidx');

-- the key of each type: its order is the filter's
SELECT v, tablestore.property_index_key(('{"V": ' || v || '}')::jsonb, 'V', 'Edm.Int32') AS int32_key
FROM (VALUES ('-1'), ('0'), ('-0.0'), ('1'), ('2.5'), ('"x"'), ('true')) x(v);
SELECT tablestore.property_index_key('{"V": "NaN", "V@odata.type": "Edm.Double"}', 'V', 'Edm.Double') AS nan_key,
	tablestore.property_index_key('{"W": 1}', 'V', 'Edm.Int32') AS absent_key,
	tablestore.property_index_key('{"V": 1}', 'V', 'Edm.String') AS other_type_key,
	length(tablestore.property_index_key(jsonb_build_object('V', repeat('x', 65536)), 'V', 'Edm.String')) AS long_key_bytes;
-- UTF-16 order: U+FFFD sorts above U+10000 (a surrogate pair), unlike code point order
SELECT tablestore.property_index_key('{"V": "\uFFFD"}', 'V', 'Edm.String') >
	tablestore.property_index_key('{"V": "\uD800\uDC00"}', 'V', 'Edm.String') AS utf16_order;

-- entities: V of every type (and absent), W an Int32, random but repeatable
SELECT setseed(0.26);
DO $$
DECLARE
	e jsonb;
	r int;
	v text;
BEGIN
	FOR i IN 1..400 LOOP
		r := floor(random() * 11)::int;
		e := jsonb_build_object('PartitionKey', 'p' || floor(random() * 6)::int,
								'RowKey', lpad(i::text, 4, '0'), 'W', floor(random() * 20)::int);
		CASE r
			WHEN 0 THEN NULL;		-- no V
			WHEN 1 THEN e := e || jsonb_build_object('V', (ARRAY['', 'a', 'ab', 'b', 'ä', '中', E'\uFFFD', E'\U00010000', 'abc' || repeat('z', 3000), 'abc' || repeat('z', 3000) || 'y'])[1 + floor(random() * 10)::int]);
			WHEN 2 THEN e := e || jsonb_build_object('V', floor(random() * 21)::int - 10);
			WHEN 3 THEN e := e || jsonb_build_object('V', (floor(random() * 21)::bigint - 10)::text, 'V@odata.type', 'Edm.Int64');
			WHEN 4 THEN e := e || jsonb_build_object('V', (ARRAY['9007199254740993', '9007199254740992', '-9223372036854775808', '9223372036854775807'])[1 + floor(random() * 4)::int], 'V@odata.type', 'Edm.Int64');
			WHEN 5 THEN
				v := (ARRAY['1.5', '-2.25', '0.0', '"-0"', '"NaN"', '"Infinity"', '"-Infinity"', '3.0', '1e300'])[1 + floor(random() * 9)::int];
				e := e || jsonb_build_object('V', v::jsonb, 'V@odata.type', 'Edm.Double');
			WHEN 6 THEN e := e || jsonb_build_object('V', random() < 0.5);
			WHEN 7 THEN e := e || jsonb_build_object('V', (ARRAY['1601-01-01T00:00:00Z', '2020-01-01T00:00:00Z', '2020-01-01T00:00:00.0000001Z', '9999-12-31T23:59:59.9999999Z'])[1 + floor(random() * 4)::int], 'V@odata.type', 'Edm.DateTime');
			WHEN 8 THEN e := e || jsonb_build_object('V', (ARRAY['00000000-0000-0000-0000-000000000000', 'c9da6455-213d-42c9-9a79-3e9149a57833', 'ffffffff-ffff-ffff-ffff-ffffffffffff'])[1 + floor(random() * 3)::int], 'V@odata.type', 'Edm.Guid');
			WHEN 9 THEN e := e || jsonb_build_object('V', (ARRAY['', 'AA==', 'AQID', 'AQIDBA==', '/w=='])[1 + floor(random() * 5)::int], 'V@odata.type', 'Edm.Binary');
			ELSE e := e || jsonb_build_object('V', 'x' || floor(random() * 5)::int);
		END CASE;
		PERFORM tablestore.insert_entity('Pidx', e);
	END LOOP;
END $$;
-- a row written with SQL whose V is no value of its type counts as absent
INSERT INTO tablestore_data.pidx VALUES ('p0', 'sql', now(), '{"V": "zz", "V@odata.type": "Edm.Int64", "W": 1}');

-- the planner's choice: a selective filter uses the index, a partition the keys
SELECT e->>'access' AS access, e->'property_index'->>'index' IS NOT NULL AS index_named,
	e->'property_index'->>'condition' AS condition
FROM tablestore.explain_query('Pidx', 'V eq 5 and W lt 3') e;
SELECT e->>'access' AS access FROM tablestore.explain_query('Pidx', 'PartitionKey eq ''p1'' and V eq 5') e;
SELECT e->>'access' AS access, e->'property_index'->>'condition' AS condition
FROM tablestore.explain_query('Pidx', 'V eq ''a'' or V eq ''b''') e;
SELECT e->>'access' AS access FROM tablestore.explain_query('Pidx', 'V eq 5.0 or W eq 3') e;
SELECT e->>'access' AS access, e->'property_index'->>'reason' AS reason
FROM tablestore.explain_query('Pidx', 'W ge 0') e;
SET tablestore.property_index = on;
SELECT e->>'access' AS access FROM tablestore.explain_query('Pidx', 'W ge 0') e;
SET tablestore.property_index = off;
SELECT e->>'access' AS access FROM tablestore.explain_query('Pidx', 'V eq 5') e;
RESET tablestore.property_index;

-- differential: every filter, with the index (on) and without (off): the
-- same entities in the same order, and the same pages of 7
CREATE TEMP TABLE lits (lit text);
INSERT INTO lits VALUES ('''a'''), ('''ab'''), ('''b'''), (''''''), ('''中'''), (E'''\uFFFD'''), (E'''\U00010000'''),
	('''abc' || repeat('z', 3000) || ''''), ('''abc' || repeat('z', 2000) || ''''), ('''x2'''),
	('-10'), ('0'), ('3'), ('10'), ('2147483647'), ('0L'), ('5L'), ('9007199254740992L'), ('9007199254740993L'),
	('-9223372036854775808L'), ('1.5'), ('0.0'), ('-2.25'), ('1e300'), ('3.0'), ('true'), ('false'),
	('datetime''2020-01-01T00:00:00Z'''), ('datetime''2020-01-01T00:00:00.0000001Z'''),
	('datetime''1601-01-01T00:00:00Z'''), ('guid''c9da6455-213d-42c9-9a79-3e9149a57833'''),
	('guid''00000000-0000-0000-0000-000000000000'''), ('X'''''), ('X''00'''), ('X''010203'''), ('X''ff''');
CREATE TEMP TABLE filters (f text);
INSERT INTO filters SELECT 'V ' || op || ' ' || lit FROM lits, unnest(ARRAY['eq', 'gt', 'ge', 'lt', 'le', 'ne']) op;
INSERT INTO filters SELECT 'V ' || op || ' ' || lit || ' and W lt 10' FROM lits, unnest(ARRAY['eq', 'le']) op;
INSERT INTO filters SELECT 'PartitionKey ge ''p3'' and V ' || op || ' ' || lit FROM lits, unnest(ARRAY['lt']) op;
INSERT INTO filters SELECT 'V gt ' || a.lit || ' and V lt ' || b.lit FROM lits a, lits b WHERE a.lit < b.lit AND random() < 0.1;
INSERT INTO filters SELECT 'V eq ' || a.lit || ' or V ' || op || ' ' || b.lit FROM lits a, lits b, unnest(ARRAY['eq', 'lt', 'ge']) op WHERE random() < 0.03;
INSERT INTO filters SELECT '(V le ' || a.lit || ' or W eq 3) and not (V eq ' || b.lit || ')' FROM lits a, lits b WHERE random() < 0.02;
INSERT INTO filters VALUES ('W eq 3 or W eq 4'), ('W lt 2 and W ge 1 and V lt 5'), ('V eq 5 and V eq 6'), ('RowKey gt ''0300'' and V eq ''a''');

CREATE FUNCTION all_rows(f text, mode text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE r jsonb;
BEGIN
	PERFORM set_config('tablestore.property_index', mode, true);
	SELECT coalesce(jsonb_agg(e), '[]') INTO r FROM tablestore.query_entities('Pidx', f) e;
	RETURN r;
END $$;
CREATE FUNCTION all_pages(f text, mode text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
	r jsonb := '[]';
	npk text;
	nrk text;
	page record;
BEGIN
	PERFORM set_config('tablestore.property_index', mode, true);
	FOR i IN 1..200 LOOP
		SELECT * INTO page FROM tablestore.query_entities_page('Pidx', f, 'RowKey', 7, npk, nrk);
		r := r || jsonb_build_array(jsonb_build_array(page.entities, page.next_partition_key, page.next_row_key));
		npk := page.next_partition_key;
		nrk := page.next_row_key;
		EXIT WHEN npk IS NULL;
	END LOOP;
	RETURN r;
END $$;
CREATE FUNCTION access_of(f text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('tablestore.property_index', 'on', true);
	RETURN tablestore.explain_query('Pidx', f)->>'access';
END $$;

CREATE TEMP TABLE results AS
	SELECT f, access_of(f) AS access, all_rows(f, 'off') AS off_rows, all_rows(f, 'on') AS on_rows FROM filters;
SELECT count(*) AS filters,
	count(*) FILTER (WHERE access = 'property index') > 120 AS many_indexed,
	count(*) FILTER (WHERE off_rows IS DISTINCT FROM on_rows) AS rows_differ,
	count(*) FILTER (WHERE jsonb_array_length(off_rows) > 0) > 150 AS many_nonempty
FROM results;
SELECT f FROM results WHERE off_rows IS DISTINCT FROM on_rows LIMIT 5;
SELECT count(*) FILTER (WHERE all_pages(f, 'off') IS DISTINCT FROM all_pages(f, 'on')) AS pages_differ
FROM results WHERE access = 'property index' AND (random() < 0.2 OR f LIKE '%W lt 10%');
SELECT all_pages('V ge 0', 'on') = all_pages('V ge 0', 'off') AS same_pages,
	jsonb_array_length(all_pages('V ge 0', 'on')) > 2 AS several_pages;

-- writes through every path keep the index: merge, replace, delete, batch
SELECT tablestore.merge_entity('Pidx', '{"PartitionKey": "p0", "RowKey": "sql", "V": 424242}') IS NOT NULL AS merged;
SELECT count(*) AS found FROM tablestore.query_entities('Pidx', 'V eq 424242');
SELECT tablestore.update_entity('Pidx', '{"PartitionKey": "p0", "RowKey": "sql", "V": 424243}') IS NOT NULL AS replaced;
SELECT count(*) AS old, (SELECT count(*) FROM tablestore.query_entities('Pidx', 'V eq 424243')) AS new
FROM tablestore.query_entities('Pidx', 'V eq 424242');
SELECT tablestore.delete_entity('Pidx', 'p0', 'sql');
SELECT count(*) AS gone FROM tablestore.query_entities('Pidx', 'V eq 424243');
-- a 64 KB string property is still writable, and found
SELECT tablestore.insert_entity('Pidx', jsonb_build_object('PartitionKey', 'big', 'RowKey', '1', 'V', repeat('q', 32000))) IS NOT NULL AS big;
SELECT count(*) AS big_found FROM tablestore.query_entities('Pidx', 'V eq ''' || repeat('q', 32000) || '''');

-- untrusted: an index replaced by the owner with a look-alike is not used
SELECT index_name AS w_index FROM tablestore.list_property_indexes('Pidx') WHERE property = 'W' \gset
DROP INDEX tablestore_data.:"w_index";
SELECT count(*) AS catalog_row_gone FROM tablestore.list_property_indexes('Pidx') WHERE property = 'W';
INSERT INTO tablestore.property_indexes (relation_name, property, edm_type, index_name) VALUES ('pidx', 'W', 'Edm.Int32', :'w_index');
CREATE INDEX :"w_index" ON tablestore_data.pidx (tablestore.property_index_key(props, 'V', 'Edm.Int32')) WHERE tablestore.property_index_key(props, 'V', 'Edm.Int32') IS NOT NULL;
SELECT property, valid FROM tablestore.list_property_indexes('Pidx') WHERE property = 'W';
SELECT e->>'access' AS access FROM tablestore.explain_query('Pidx', 'W eq 3') e;
SELECT all_rows('W eq 3', 'on') = all_rows('W eq 3', 'off') AS same;
DROP INDEX tablestore_data.:"w_index";
CREATE INDEX :"w_index" ON tablestore_data.pidx (tablestore.property_index_key(props, 'W', 'Edm.Int32'));
SELECT property, valid FROM tablestore.list_property_indexes('Pidx') WHERE property = 'W';
SELECT e->>'access' AS access FROM tablestore.explain_query('Pidx', 'W eq 3') e;
-- create replaces the stale row
SELECT tablestore.create_property_index('Pidx', 'W', 'Int32') IS NOT NULL AS recreated;
SELECT property, valid FROM tablestore.list_property_indexes('Pidx') WHERE property = 'W';
DROP INDEX tablestore_data.:"w_index";
-- a catalog row naming the key index (the owner renamed indexes) never
-- drops it: drop_property_index drops the table's property indexes of
-- that property and type, whatever their names, and nothing else
SELECT tablestore.create_property_index('Pidx', 'K', 'Int32') AS k_index \gset
ALTER INDEX tablestore_data.:"k_index" RENAME TO pidx_moved;
ALTER INDEX tablestore_data.pidx_pk_rk_idx RENAME TO :"k_index";
SELECT tablestore.drop_property_index('Pidx', 'K', 'Int32');
SELECT c.relname = :'k_index' AS key_index_kept FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
	JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = 'tablestore_data.pidx'::regclass AND a.amname = 'tskey';
SELECT count(*) AS renamed_dropped FROM pg_class WHERE relname = 'pidx_moved';
ALTER INDEX tablestore_data.:"k_index" RENAME TO pidx_pk_rk_idx;

-- row-level security applies on the index path
ALTER TABLE tablestore_data.pidx ENABLE ROW LEVEL SECURITY;
CREATE POLICY p1_only ON tablestore_data.pidx FOR SELECT TO pidx_reader USING (pk OPERATOR(tablestore.=) 'p1'::tablestore.key);
SET ROLE pidx_reader;
SELECT count(*) = count(*) FILTER (WHERE e->>'PartitionKey' = 'p1') AS only_p1, count(*) > 0 AS some
FROM tablestore.query_entities('Pidx', 'V lt 5') e;
-- explain_query tells nothing of the rows the policies hide: no counts
SELECT e->>'access' AS access, e->'property_index'->'index_entries' AS index_entries,
	e->'property_index'->'entities' AS entities
FROM tablestore.explain_query('Pidx', 'V eq 5') e;
RESET ROLE;
DROP POLICY p1_only ON tablestore_data.pidx;
ALTER TABLE tablestore_data.pidx DISABLE ROW LEVEL SECURITY;

-- delete_table drops the indexes and their catalog rows
SELECT tablestore.delete_table('Pidx');
SELECT count(*) AS rows_left FROM tablestore.property_indexes WHERE relation_name = 'pidx';
DROP ROLE pidx_reader;
DROP FUNCTION all_rows(text, text), all_pages(text, text), access_of(text), sqlstate_of(text);

-- attack finding 4: explain_query leaves no lock behind, not even on the
-- indexes the property-index planner opened (the key index included)
SELECT tablestore.create_table('PiLock');
SELECT tablestore.insert_entity('PiLock', jsonb_build_object('PartitionKey', 'p', 'RowKey', 'r', 'A', 5)) IS NOT NULL AS inserted;
SELECT tablestore.create_property_index('PiLock', 'A', 'Int32') IS NOT NULL AS created;
BEGIN;
SET LOCAL tablestore.property_index = on;
SELECT tablestore.explain_query('PiLock', 'A eq 5')->>'access' AS access;
SELECT count(*) AS locks_left FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
WHERE l.pid = pg_backend_pid() AND l.locktype = 'relation' AND c.relname LIKE 'pilock%';
COMMIT;

-- attack finding 5: the memory cap counts the bytes of the keys collected,
-- not keys at an assumed size: 200 entities with 512-character keys do not
-- fit 64kB, and the query falls back to the key-order scan
SELECT count(tablestore.insert_entity('PiLock', jsonb_build_object('PartitionKey', lpad(i::text, 6, '0') || repeat('a', 506),
	'RowKey', repeat('b', 512), 'A', 7))) AS inserted FROM generate_series(1, 200) i;
SET tablestore.property_index = on;
SET work_mem = '64kB';
SELECT e->>'access' AS access, e->'property_index'->>'used' AS used, e->'property_index'->>'reason' AS reason
FROM tablestore.explain_query('PiLock', 'A eq 7') e;
SELECT count(*) AS matches FROM tablestore.query_entities('PiLock', 'A eq 7', 'A');
-- short keys: 100 entities fit
SELECT count(tablestore.insert_entity('PiLock', jsonb_build_object('PartitionKey', 's', 'RowKey', lpad(i::text, 4, '0'), 'A', 8)))
	AS inserted FROM generate_series(1, 100) i;
SELECT e->>'access' AS access, e->'property_index'->>'used' AS used
FROM tablestore.explain_query('PiLock', 'A eq 8') e;
RESET work_mem;
RESET tablestore.property_index;
SELECT tablestore.delete_table('PiLock');
