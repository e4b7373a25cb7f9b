-- test/fuzz_fixture.sql: the database that test/sqlsmith.sh and
-- test/fuzz_live.sh throw random input at.  Run by a superuser in a fresh
-- database with the extension created.  With psql variable ts_router set,
-- on a scale-out router (test/cluster/fuzz_router.sh): only what goes
-- through the API (the roles, the tables and their entities, the value
-- pools); the grants, the row-level security of Policed and the odd
-- relations are node internals, which that script makes on each shard.
--
-- Roles (cluster-wide, created if missing):
--   ts_fz_owner     CREATE on tablestore_data; owns every table below
--   ts_fz_user      ordinary rights: SELECT/INSERT/UPDATE/DELETE on the
--                   tables granted to it, nothing on Secret; the role the
--                   random runs use
--   ts_fz_norights  no rights on any table (reads the catalog, as anyone)
-- Tables: Alpha (every Edm type, special Doubles, 252 properties, a long
-- String, a large Binary), Beta (512-unit keys, CJK, supplementary
-- characters, empty keys), Gamma (empty), Secret (nothing granted), Policed
-- (row-level security enabled), Longkeys (empty, for fuzz_live's probe of
-- the longest keys); odd relations: Oddint (int8 keys), Oddtext
-- (text keys, btree), Oddpart (partitioned), Oddview (a view), not made by
-- create_table; Oddnull (a NULL props), Oddarray (props an array), Orphan
-- (relation dropped), Renamed (relation renamed), Oddcheck (its CHECK
-- constraints dropped, an array props, a forbidden and a 600-unit key),
-- Oddkid (an inheritance child with a duplicate key) made by it and then
-- altered.  Schema fz holds value pools (table names,
-- filters, select lists, entities, ETags, keys) that sqlsmith draws column
-- values from, and non-set-returning wrappers of the set-returning functions,
-- which sqlsmith does not call directly.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

DO $$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'ts_fz_owner') THEN
		CREATE ROLE ts_fz_owner LOGIN;
	END IF;
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'ts_fz_user') THEN
		CREATE ROLE ts_fz_user LOGIN;
	END IF;
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'ts_fz_norights') THEN
		CREATE ROLE ts_fz_norights LOGIN;
	END IF;
END $$;
\if :{?ts_router}
\else
GRANT CREATE ON SCHEMA tablestore_data TO ts_fz_owner;
GRANT CREATE ON SCHEMA public TO ts_fz_owner;
\endif

-- run one statement, reporting instead of failing when it is refused
CREATE FUNCTION pg_temp.fz_try(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE stmt;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RAISE NOTICE 'fixture: refused (%): %: %', SQLSTATE, left(stmt, 60), SQLERRM;
	RETURN SQLSTATE;
END $$;

SET ROLE ts_fz_owner;
SELECT tablestore.create_table(t) FROM unnest(ARRAY['Alpha', 'Beta', 'Gamma', 'Secret', 'Policed', 'Longkeys']) t;

-- Alpha: 300 entities in 6 partitions with every type
SELECT count(tablestore.insert_entity('Alpha', jsonb_build_object(
		'PartitionKey', 'p' || (i % 6), 'RowKey', lpad(i::text, 5, '0'),
		'Age', i, 'Name', 'name' || i, 'IsActive', i % 2 = 0,
		'Score', i * 1.5, 'Big', (i::bigint * 1000000007)::text, 'Big@odata.type', 'Edm.Int64',
		'When', '2020-01-01T00:00:00.' || lpad(i::text, 7, '0') || 'Z', 'When@odata.type', 'Edm.DateTime',
		'Id', md5(i::text)::uuid::text, 'Id@odata.type', 'Edm.Guid',
		'Blob', encode(sha256(i::text::bytea), 'base64'), 'Blob@odata.type', 'Edm.Binary',
		'Special', (ARRAY['NaN', 'Infinity', '-Infinity', '-0'])[1 + i % 4], 'Special@odata.type', 'Edm.Double')))
FROM generate_series(1, 300) i;
SELECT tablestore.insert_entity('Alpha', jsonb_build_object('PartitionKey', 'wide', 'RowKey', 'props252')
	|| (SELECT jsonb_object_agg('P' || k, k) FROM generate_series(1, 252) k));
SELECT tablestore.insert_entity('Alpha', jsonb_build_object('PartitionKey', 'wide', 'RowKey', 'longstring',
	'S', repeat('é', 32768), 'B', translate(encode(convert_to(repeat('x', 65536), 'UTF8'), 'base64'), E'\n', ''), 'B@odata.type', 'Edm.Binary'));

-- Beta: the longest and oddest legal keys
SELECT tablestore.insert_entity('Beta', jsonb_build_object('PartitionKey', pk, 'RowKey', rk, 'N', n))
FROM (VALUES (repeat('k', 512), repeat('r', 512), 1), (repeat('字', 512), repeat('語', 512), 2),
	(repeat('😀', 256), repeat('𝄞', 256), 3), ('', '', 4), ('', 'x', 5), ('ｚ', '😀', 6),
	('a b', 'c''d"e', 7), ('%25', '&amp;', 8)) v(pk, rk, n);

SELECT tablestore.insert_entity('Secret', '{"PartitionKey": "s", "RowKey": "1", "Pin": 1234}');
SELECT tablestore.insert_entity('Policed', '{"PartitionKey": "s", "RowKey": "1", "Visible": true}');
SELECT tablestore.insert_entity('Policed', '{"PartitionKey": "s", "RowKey": "2", "Visible": false}');
\if :{?ts_router}
\else
ALTER TABLE tablestore_data.policed ENABLE ROW LEVEL SECURITY;
CREATE POLICY visible ON tablestore_data.policed USING ((props->>'Visible')::boolean);

-- Odd relations that a role with CREATE on tablestore_data can make or
-- leave behind (issue 10, findings 1, 2, 8): every function must refuse them
-- with a clear error, never crash or read them.  Where the extension
-- refuses to let one be made at all (an event trigger, a constraint), the
-- step is skipped: that is the better outcome.
SELECT pg_temp.fz_try(stmt) FROM unnest(ARRAY[
	$s$CREATE TABLE tablestore_data.oddint (pk int8, rk int8, ts timestamptz, props jsonb)$s$,
	$s$CREATE UNIQUE INDEX ON tablestore_data.oddint (pk, rk)$s$,
	$s$INSERT INTO tablestore_data.oddint VALUES (1, 1, now(), '{"A": 1}')$s$,
	$s$CREATE TABLE tablestore_data.oddtext (pk text, rk text, ts timestamptz, props jsonb)$s$,
	$s$CREATE UNIQUE INDEX ON tablestore_data.oddtext (pk, rk)$s$,
	$s$INSERT INTO tablestore_data.oddtext VALUES ('a', 'b', now(), '{"A": 1}')$s$,
	$s$CREATE TABLE tablestore_data.oddpart (pk tablestore.key, rk tablestore.key, ts timestamptz, props jsonb) PARTITION BY LIST (pk)$s$,
	$s$CREATE TABLE tablestore_data.oddpart_a PARTITION OF tablestore_data.oddpart FOR VALUES IN ('a')$s$,
	$s$INSERT INTO tablestore_data.oddpart VALUES ('a', 'b', now(), '{"A": 1}')$s$,
	$s$CREATE VIEW tablestore_data.oddview AS SELECT * FROM tablestore_data.alpha$s$,
	$s$SELECT tablestore.create_table(t) FROM unnest(ARRAY['Oddnull', 'Oddarray', 'Orphan', 'Renamed']) t$s$,
	$s$SELECT tablestore.insert_entity(t, '{"PartitionKey": "a", "RowKey": "b", "A": 1}') FROM unnest(ARRAY['Oddnull', 'Oddarray', 'Renamed']) t$s$,
	$s$SELECT tablestore.insert_entity(t, '{"PartitionKey": "a", "RowKey": "c", "A": 2}') FROM unnest(ARRAY['Oddnull', 'Oddarray']) t$s$,
	$s$ALTER TABLE tablestore_data.oddnull ALTER props DROP NOT NULL$s$,
	$s$UPDATE tablestore_data.oddnull SET props = NULL WHERE rk OPERATOR(tablestore.=) 'b'$s$,
	$s$UPDATE tablestore_data.oddarray SET props = '[1, 2]' WHERE rk OPERATOR(tablestore.=) 'b'$s$,
	$s$DROP TABLE tablestore_data.orphan$s$,
	$s$ALTER TABLE tablestore_data.renamed RENAME TO renamed2$s$,
	-- the constraints of a real entity relation dropped by its owner, then
	-- plain SQL storing what they forbade
	$s$SELECT tablestore.create_table('Oddcheck')$s$,
	$s$SELECT tablestore.insert_entity('Oddcheck', '{"PartitionKey": "a", "RowKey": "b", "A": 1}')$s$,
	$s$SELECT tablestore.insert_entity('Oddcheck', '{"PartitionKey": "a", "RowKey": "c", "A": 2}')$s$,
	$s$ALTER TABLE tablestore_data.oddcheck DROP CONSTRAINT entity_props_object$s$,
	$s$ALTER TABLE tablestore_data.oddcheck DROP CONSTRAINT entity_keys_valid$s$,
	$s$UPDATE tablestore_data.oddcheck SET props = '[1, 2]' WHERE rk OPERATOR(tablestore.=) 'c'$s$,
	$s$INSERT INTO tablestore_data.oddcheck VALUES ('a/b', repeat('x', 600), now(), '{"B": 1}')$s$,
	-- Timestamps outside the service's range, the last one inside it, and a
	-- DateTime property before 1601
	$s$ALTER TABLE tablestore_data.oddcheck DROP CONSTRAINT entity_ts_in_range$s$,
	$s$INSERT INTO tablestore_data.oddcheck VALUES ('a', 'old', '1500-01-01 00:00:00+00', '{"A": 3}'),
		('a', 'neginf', '-infinity', '{"A": 4}'), ('a', 'posinf', 'infinity', '{"A": 5}'),
		('a', 'future', '10000-01-01 00:00:00+00', '{"A": 6}'), ('a', 'last', '9999-12-31 23:59:59.999999+00', '{"A": 7}'),
		('a', 'olddate', now(), '{"D@odata.type": "Edm.DateTime", "D": "1500-01-01T00:00:00Z"}')$s$,
	-- a real entity relation with an inheritance child holding a duplicate key
	$s$SELECT tablestore.create_table('Oddkid')$s$,
	$s$SELECT tablestore.insert_entity('Oddkid', '{"PartitionKey": "a", "RowKey": "b", "A": 1}')$s$,
	$s$CREATE TABLE public.oddkid_child () INHERITS (tablestore_data.oddkid)$s$,
	$s$INSERT INTO public.oddkid_child VALUES ('a', 'b', now(), '{"Child": 1}'), ('c', 'd', now(), '{"Child": 2}')$s$
	]) WITH ORDINALITY u(stmt, o) ORDER BY o;

GRANT SELECT, INSERT, UPDATE, DELETE ON tablestore_data.alpha, tablestore_data.beta,
	tablestore_data.gamma, tablestore_data.policed, tablestore_data.longkeys TO ts_fz_user;
SELECT pg_temp.fz_try(format('GRANT SELECT, INSERT, UPDATE, DELETE ON %s TO ts_fz_user', c.oid::regclass))
FROM pg_class c WHERE c.relnamespace IN ('tablestore_data'::regnamespace, 'public'::regnamespace) AND c.relkind IN ('r', 'p', 'v')
	AND (c.relname LIKE 'odd%' OR c.relname = 'renamed2');
\endif
RESET ROLE;

-- value pools
CREATE SCHEMA fz;
GRANT USAGE ON SCHEMA fz TO PUBLIC;
CREATE TABLE fz.names (name text);
INSERT INTO fz.names VALUES ('Alpha'), ('Beta'), ('Gamma'), ('Secret'), ('Policed'), ('alpha'), ('ALPHA'),
	('Oddint'), ('Oddtext'), ('Oddpart'), ('Oddpart_a'), ('Oddview'), ('Oddnull'), ('Oddarray'), ('Orphan'), ('Renamed'), ('Renamed2'),
	('Oddcheck'), ('Oddkid'),
	('Missing'), (''), ('tables'), ('a'), ('Ab'), (repeat('A', 63)), (repeat('A', 64)), ('Al pha'),
	('Alpha;DROP TABLE x'), ('"Alpha"'), ('Älpha'), (NULL);
CREATE TABLE fz.filters (filter text);
INSERT INTO fz.filters VALUES ('Age gt 10'), ('PartitionKey eq ''p1'''),
	('PartitionKey eq ''p1'' and RowKey eq ''00007'''), ('PartitionKey eq ''p1'' and (RowKey eq ''00007'' or RowKey eq ''00013'')'),
	('PartitionKey ge ''p2'' and PartitionKey lt ''p4'''), ('PartitionKey eq ''p1'' and RowKey ge ''00100'' and RowKey lt ''00200'''),
	('not IsActive'), ('IsActive'), ('Score le 100.5'), ('Big gt 1000L'), ('When ge datetime''2020-01-01T00:00:00Z'''),
	('Id eq guid''c4ca4238-a0b9-2382-0dcc-509a6f75849b'''), ('Blob eq X''0102'''), ('Blob eq binary''FF'''),
	('Special eq 1e308'), ('true'), ('false'), ('not not not true'), ('((((Age eq 1))))'), ('Age eq'), (''), ('  '),
	('Age eq null'), ('startswith(Name, ''a'')'), ('Age eq 99999999999'), ('Age eq Name'), ('x''zz'''),
	('datetime''1600-01-01T00:00:00Z'' eq When'), ('TableName eq ''Alpha'''), ('TableName ge ''A'''),
	('Age eq 1 or Age eq 2 or Age eq 3 or Age eq 4 or Age eq 5 or Age eq 6 or Age eq 7 or Age eq 8 or Age eq 9 or Age eq 10 or Age eq 11 or Age eq 12 or Age eq 13 or Age eq 14 or Age eq 15'),
	('Age eq 1 or Age eq 2 or Age eq 3 or Age eq 4 or Age eq 5 or Age eq 6 or Age eq 7 or Age eq 8 or Age eq 9 or Age eq 10 or Age eq 11 or Age eq 12 or Age eq 13 or Age eq 14 or Age eq 15 or Age eq 16'),
	(repeat('(', 200) || 'true' || repeat(')', 200)), ('true' || repeat(' and true', 300)),
	('Name eq ''' || repeat('x', 40000) || ''''), ('PartitionKey eq ''' || repeat('字', 600) || ''''), ('Age eq -2147483648'),
	('PartitionKey eq ''a/b'''), ('PartitionKey eq ''' || chr(1) || ''''), (NULL);
CREATE TABLE fz.selects (select_list text);
INSERT INTO fz.selects VALUES ('Age'), ('Age,Name'), ('PartitionKey,RowKey,Timestamp'), ('Nope'), (''), (','),
	('Age,,Name'), (' Age '), ('odata.etag'), ('Age@odata.type'), (repeat('A,', 500) || 'A'), ('*'), (NULL);
CREATE TABLE fz.entities (entity jsonb);
INSERT INTO fz.entities VALUES ('{"PartitionKey": "p1", "RowKey": "00007", "Age": 70}'),
	('{"PartitionKey": "new", "RowKey": "1"}'), ('{"PartitionKey": "p1", "RowKey": "x", "Age": 1, "Age@odata.type": "Edm.Int64"}'),
	('{"PartitionKey": "p1"}'), ('{"RowKey": "1"}'), ('{}'), ('[]'), ('"str"'), ('42'), ('null'),
	('{"PartitionKey": 1, "RowKey": 2}'), ('{"PartitionKey": null, "RowKey": null}'),
	('{"PartitionKey": "a", "RowKey": "b", "N": {"deep": [1, 2, {"x": 3}]}}'),
	('{"PartitionKey": "a", "RowKey": "b", "N": "0x1p3", "N@odata.type": "Edm.Double"}'),
	('{"PartitionKey": "a", "RowKey": "b", "N": "x", "N@odata.type": "Edm.Nope"}'),
	('{"PartitionKey": "a", "RowKey": "b", "N@odata.type": "Edm.String"}'),
	('{"PartitionKey": "a", "RowKey": "b", "Timestamp": "garbage", "odata.etag": "x"}'),
	('{"PartitionKey": "a/b", "RowKey": "c"}'), ('{"PartitionKey": "", "RowKey": ""}'),
	(jsonb_build_object('PartitionKey', repeat('k', 513), 'RowKey', 'r')),
	(jsonb_build_object('PartitionKey', 'a', 'RowKey', 'b', 'S', repeat('s', 40000))),
	(NULL);
CREATE TABLE fz.etags (if_match text);
INSERT INTO fz.etags VALUES ('*'), (''), ('W/"datetime''2020-01-01T00%3A00%3A00Z''"'), ('W/"datetime''garbage''"'),
	('W/"'), ('"x"'), ('**'), (repeat('W', 5000)), (NULL);
CREATE TABLE fz.keys (k text);
INSERT INTO fz.keys VALUES ('p1'), ('00007'), (''), ('wide'), ('props252'), (repeat('k', 512)), (repeat('k', 513)),
	('a/b'), ('a\b'), ('#'), ('?'), (chr(127)), ('😀'), (NULL);
CREATE TABLE fz.batches (operations jsonb);
INSERT INTO fz.batches VALUES
	('[{"op": "insert", "entity": {"PartitionKey": "b", "RowKey": "1"}}]'),
	('[{"op": "retrieve", "entity": {"PartitionKey": "p1", "RowKey": "00007"}}]'),
	('[{"op": "merge", "entity": {"PartitionKey": "p1", "RowKey": "00007", "X": 1}, "if_match": "*"}, {"op": "delete", "entity": {"PartitionKey": "p1", "RowKey": "00013"}}]'),
	('[{"op": "insert", "entity": {"PartitionKey": "a", "RowKey": "1"}}, {"op": "insert", "entity": {"PartitionKey": "b", "RowKey": "1"}}]'),
	('[{"op": "insert", "entity": {"PartitionKey": "a", "RowKey": "1"}}, {"op": "insert", "entity": {"PartitionKey": "a", "RowKey": "1"}}]'),
	('[]'), ('{}'), ('[1]'), ('[{"op": "nope"}]'), ('[{"op": "delete"}]'), ('[{"op": "update", "entity": {"PartitionKey": "p1", "RowKey": "00007"}, "if_match": 5}]'),
	((SELECT jsonb_agg(jsonb_build_object('op', 'insert', 'entity', jsonb_build_object('PartitionKey', 'c', 'RowKey', i::text))) FROM generate_series(1, 101) i)),
	(NULL);
GRANT SELECT ON ALL TABLES IN SCHEMA fz TO PUBLIC;

-- wrappers that bring the set-returning functions into sqlsmith's reach
CREATE FUNCTION fz.query_count(t text, f text, s text, top integer) RETURNS bigint
	LANGUAGE sql VOLATILE AS $f$ SELECT count(*) FROM tablestore.query_entities(t, f, s, top) $f$;
CREATE FUNCTION fz.query_first(t text, f text, s text) RETURNS jsonb
	LANGUAGE sql VOLATILE AS $f$ SELECT e FROM tablestore.query_entities(t, f, s) e LIMIT 1 $f$;
CREATE FUNCTION fz.query_page(t text, f text, s text, top integer, npk text, nrk text) RETURNS text
	LANGUAGE sql VOLATILE AS $f$ SELECT p::text FROM tablestore.query_entities_page(t, f, s, top, npk, nrk) p $f$;
CREATE FUNCTION fz.batch_count(t text, ops jsonb) RETURNS bigint
	LANGUAGE sql VOLATILE AS $f$ SELECT count(*) FROM tablestore.execute_batch(t, ops) $f$;
CREATE FUNCTION fz.list_count(f text) RETURNS bigint
	LANGUAGE sql VOLATILE AS $f$ SELECT count(*) FROM tablestore.list_tables(f) $f$;
