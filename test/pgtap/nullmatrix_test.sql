-- Every function of the extension, generated from the catalog (pg_proc
-- members of extension tablestore through pg_depend), called with NULL in
-- each argument in turn, then an empty string (an empty JSON container for
-- jsonb), then a 10 MB value, in each text, key, cstring and jsonb argument
-- (edge integers for integer arguments; an OID of nothing, a table and a
-- btree for regclass arguments), the other arguments valid.  Each
-- call runs as a role that owns the table (ordinary rights, no superuser),
-- and the NULL calls again as a role without any right.  For every call:
--   - no internal error (XX000) and, as the server survives the file, no crash;
--   - nothing changed: the catalog, the entity relations and every entity
--     (keys, Timestamp, properties) are as before;
--   - the error text (message, detail, hint) stays under 8 KiB, however
--     large the input it complains about, and never shows "(null)" (a NULL
--     pointer printed with %s);
--   - NULL in a required argument (no default, and not a query's filter,
--     select list, top or continuation, where NULL means none) of a function
--     that is not STRICT raises InvalidInput (22023), as the README's error
--     table says (a NULL key may be PropertiesNeedValue, 23502; for the role
--     without rights, 42501 is right too).
-- Functions taking type internal cannot be called from SQL at all; the file
-- checks that they are exactly the three support functions and that every
-- other function of the extension is covered.  The router's calls
-- (tablestore._routed_*) answer their function's error as data (a set
-- call's column error, a one-value call's {"#error": [...]}) instead of
-- raising it: that error counts as the call's.
BEGIN;

CREATE ROLE ts_nm_owner NOLOGIN;
CREATE ROLE ts_nm_none NOLOGIN;
GRANT CREATE ON SCHEMA tablestore_data TO ts_nm_owner;
SET ROLE ts_nm_owner;
DO $$
BEGIN
	PERFORM tablestore.create_table('NullMatrix');
	PERFORM tablestore.insert_entity('NullMatrix', '{"PartitionKey": "p", "RowKey": "r", "V": 1}');
	PERFORM tablestore.insert_entity('NullMatrix', '{"PartitionKey": "p", "RowKey": "r2", "V": 2}');
	PERFORM tablestore.insert_entity('NullMatrix', '{"PartitionKey": "q", "RowKey": "r", "W": "x"}');
END $$;
RESET ROLE;

-- the functions of the extension and their parameters
CREATE TEMP TABLE nm_funcs AS
SELECT p.oid AS fn, p.oid::regprocedure::text AS sig, quote_ident(n.nspname) || '.' || quote_ident(p.proname) AS qname,
	p.proisstrict AS isstrict, p.pronargs AS nargs, p.pronargdefaults AS ndefaults,
	coalesce(p.proargnames, '{}') AS argnames,
	ARRAY(SELECT format_type(t, NULL) FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY u(t, o) ORDER BY o) AS argtypes
FROM pg_proc p
JOIN pg_namespace n ON n.oid = p.pronamespace
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
	AND d.refclassid = 'pg_extension'::regclass
JOIN pg_extension x ON x.oid = d.refobjid AND x.extname = 'tablestore';

-- a valid value of each parameter, by name and type (text of an expression)
CREATE FUNCTION pg_temp.nm_valid(fname text, pname text, ptype text) RETURNS text LANGUAGE sql AS $$
	SELECT CASE
		WHEN ptype = 'text' THEN CASE pname
			WHEN 'table_name' THEN '''NullMatrix'''
			WHEN 'filter' THEN CASE WHEN fname LIKE '%list_tables' THEN '''TableName ge ''''N''''''' ELSE '''V ge 1''' END
			WHEN 'select_list' THEN '''V,W'''
			WHEN 'if_match' THEN '''*'''
			WHEN 'partition_key' THEN '''p'''
			WHEN 'row_key' THEN '''r'''
			WHEN 'next_partition_key' THEN '''p'''
			WHEN 'next_row_key' THEN '''r2'''
			ELSE '''x''' END
		WHEN ptype = 'jsonb' THEN CASE pname
			WHEN 'operations' THEN '''[{"op": "merge", "entity": {"PartitionKey": "p", "RowKey": "r", "X": 3}}]''::jsonb'
			ELSE '''{"PartitionKey": "p", "RowKey": "r", "V": 5}''::jsonb' END
		WHEN ptype = 'integer' THEN '5'
		WHEN ptype = 'regclass' THEN quote_literal((SELECT indexrelid::regclass::text FROM pg_index
			WHERE indrelid = 'tablestore_data.nullmatrix'::regclass)) || '::regclass'
		WHEN ptype = 'tablestore.key' THEN '''x''::tablestore.key'
		WHEN ptype = 'cstring' THEN '''x''::cstring'
	END
$$;

-- 10 MB values, read by the calls from this table (not spelled out in the
-- statement text)
CREATE TEMP TABLE nm_huge AS SELECT repeat('x', 10 * 1024 * 1024) AS t,
	jsonb_build_object('PartitionKey', 'p', 'RowKey', 'r', 'S', repeat('x', 10 * 1024 * 1024)) AS entity,
	jsonb_build_array(jsonb_build_object('op', 'merge', 'entity',
		jsonb_build_object('PartitionKey', 'p', 'RowKey', 'r', 'S', repeat('x', 10 * 1024 * 1024)))) AS ops;
GRANT SELECT ON nm_huge TO PUBLIC;

-- the variants of one parameter: (kind, expression)
CREATE FUNCTION pg_temp.nm_variants(pname text, ptype text) RETURNS TABLE (kind text, expr text) LANGUAGE sql AS $$
	SELECT 'NULL', 'NULL::' || ptype
	UNION ALL
	SELECT v.kind, v.expr FROM (VALUES
		('text', 'empty', ''''''),
		('text', 'huge', '(SELECT t FROM pg_temp.nm_huge)'),
		('cstring', 'empty', '''''::cstring'),
		('cstring', 'huge', '(SELECT t FROM pg_temp.nm_huge)::cstring'),
		('tablestore.key', 'empty', '''''::tablestore.key'),
		('tablestore.key', 'huge', '(SELECT t FROM pg_temp.nm_huge)::tablestore.key'),
		('jsonb', 'empty', CASE WHEN pname = 'operations' THEN '''[]''::jsonb' ELSE '''{}''::jsonb' END),
		('jsonb', 'huge', CASE WHEN pname = 'operations' THEN '(SELECT ops FROM pg_temp.nm_huge)'
			ELSE '(SELECT entity FROM pg_temp.nm_huge)' END),
		('integer', 'zero', '0'),
		('integer', 'negative', '-1'),
		('integer', 'max', '2147483647'),
		('regclass', 'zero', '0::oid::regclass'),
		('regclass', 'no such relation', '4000000000::oid::regclass'),
		('regclass', 'a table', '''tablestore.tables''::regclass'),
		('regclass', 'a btree', '''tablestore.tables_pkey''::regclass')) v(ty, kind, expr)
	WHERE v.ty = ptype
$$;

-- one call per function and parameter and variant; functions without
-- parameters once, as they are
CREATE TEMP TABLE nm_cases AS
SELECT f.sig, f.qname, r.role, pos, v.kind, f.isstrict,
	-- required: no default, and not one that means "none" when NULL (the
	-- query parameters of _query_entities and explain_query have no
	-- defaults but are optional like those of query_entities; a NULL acl
	-- of set_table_acl removes every stored access policy, as [] does; NULL
	-- seconds of set_table_ttl turns time to live off)
	pos <= f.nargs - f.ndefaults
		AND f.argnames[pos] NOT IN ('filter', 'select_list', 'top', 'next_partition_key', 'next_row_key', 'next_pk', 'next_rk', 'acl')
		AND NOT (f.argnames[pos] = 'seconds' AND f.qname LIKE '%set_table_ttl') AS required,
	f.qname || '(' || (SELECT string_agg(CASE WHEN i = pos THEN v.expr
			ELSE pg_temp.nm_valid(f.qname, f.argnames[i], f.argtypes[i]) END, ', ' ORDER BY i)
		FROM generate_series(1, f.nargs) i) || ')' AS call,
	f.argnames[pos] AS pname
FROM nm_funcs f
CROSS JOIN generate_series(1, f.nargs) pos
CROSS JOIN LATERAL pg_temp.nm_variants(f.argnames[pos], f.argtypes[pos]) v
CROSS JOIN (VALUES ('ts_nm_owner'), ('ts_nm_none')) r(role)
WHERE NOT 'internal' = ANY (f.argtypes) AND (r.role = 'ts_nm_owner' OR v.kind = 'NULL')
UNION ALL
SELECT f.sig, f.qname, 'ts_nm_owner', 0, 'no arguments', f.isstrict, false, f.qname || '()', NULL
FROM nm_funcs f WHERE f.nargs = 0;

-- what must not change: the catalog, the relations, every entity
CREATE FUNCTION pg_temp.nm_state() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	rel regclass;
	s text;
	acc text := '';
BEGIN
	SELECT string_agg(relation_name || '=' || table_name, ',' ORDER BY relation_name) INTO s FROM tablestore.tables;
	acc := 'catalog:' || coalesce(s, '');
	SELECT string_agg(c.relname || '/' || c.relkind::text, ',' ORDER BY c.relname) INTO s
		FROM pg_class c WHERE c.relnamespace = 'tablestore_data'::regnamespace;
	acc := acc || ' relations:' || coalesce(s, '');
	FOR rel IN SELECT c.oid FROM pg_class c WHERE c.relnamespace = 'tablestore_data'::regnamespace AND c.relkind = 'r' ORDER BY c.relname
	LOOP
		EXECUTE format('SELECT count(*) || '':'' || coalesce(md5(string_agg(pk || ''|'' || rk || ''|'' || ts || ''|'' || props::text, '';'' ORDER BY pk, rk)), '''') FROM %s', rel)
			INTO s;
		acc := acc || ' ' || rel::text || ':' || s;
	END LOOP;
	RETURN acc;
END $$;

-- run every case as its role, recording the outcome
CREATE TEMP TABLE nm_results (sig text, role text, pos int, pname text, kind text, isstrict bool, required bool,
	call text, sqlstate text, message text, errlen int, changed bool);
CREATE FUNCTION pg_temp.nm_run() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	c record;
	before text := pg_temp.nm_state();
	after text;
	st text;
	m text;
	d text;
	h text;
	e text[];
	j jsonb;
BEGIN
	FOR c IN SELECT * FROM nm_cases ORDER BY sig, role, pos, kind LOOP
		st := '00000'; m := NULL; d := NULL; h := NULL;
		BEGIN
			EXECUTE format('SET LOCAL ROLE %I', c.role);
			IF c.sig LIKE 'tablestore.\_routed\_%' AND (SELECT p.prorettype = 'jsonb'::regtype FROM pg_proc p WHERE p.oid = c.sig::regprocedure) THEN
				-- a one-value call: its answer {"#error": [...]} is the call's error
				EXECUTE 'SELECT v->''#error'' FROM (SELECT ' || c.call || ' AS v) s' INTO j;
				IF j IS NOT NULL THEN
					st := j->>0; m := j->>1; d := j->>2; h := j->>3;
				END IF;
			ELSIF c.sig LIKE 'tablestore.\_routed\_%' THEN
				-- a set call: its error column is the call's error
				EXECUTE 'SELECT r.error FROM ' || c.call || ' r WHERE r.error IS NOT NULL LIMIT 1' INTO e;
				IF e IS NOT NULL THEN
					st := e[1]; m := e[2]; d := e[3]; h := e[4];
				END IF;
			ELSE
				-- the outer aggregate reads the result, so the call cannot be optimized away
				EXECUTE 'SELECT sum(length(v::text)) FROM (SELECT ' || c.call || ' AS v) s';
			END IF;
			RESET ROLE;
		EXCEPTION WHEN OTHERS THEN
			GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
		END;
		RESET ROLE;
		after := pg_temp.nm_state();
		INSERT INTO nm_results VALUES (c.sig, c.role, c.pos, c.pname, c.kind, c.isstrict, c.required,
			replace(c.call, '(SELECT t FROM pg_temp.nm_huge)', '<10 MB>'), st, left(m, 300),
			coalesce(octet_length(m), 0) + coalesce(octet_length(d), 0) + coalesce(octet_length(h), 0), after <> before);
		before := after;
	END LOOP;
END $$;

SELECT plan(4 + 4 * (SELECT count(*)::int FROM nm_cases)
	+ (SELECT count(*)::int FROM nm_cases WHERE kind = 'NULL' AND required AND NOT isstrict));

SELECT is(ARRAY(SELECT sig FROM nm_funcs WHERE 'internal' = ANY (argtypes) ORDER BY sig),
	ARRAY['tablestore.key_recv(internal)', 'tablestore.key_sortsupport(internal)', 'tablestore.tskey_handler(internal)'],
	'the only functions SQL cannot call (type internal) are the support functions');
SELECT is((SELECT count(DISTINCT sig)::int FROM nm_cases),
	(SELECT count(*)::int FROM nm_funcs WHERE NOT 'internal' = ANY (argtypes)),
	'every other function of the extension is called');
SELECT ok((SELECT count(*) FROM nm_cases) > 150, 'the matrix has ' || (SELECT count(*) FROM nm_cases) || ' calls');

SELECT lives_ok('SELECT pg_temp.nm_run()', 'the matrix runs to its end');

SELECT isnt(sqlstate, 'XX000', format('%s as %s, %s %s: no internal error (%s)', sig, role, coalesce(pname, ''), kind, message))
FROM nm_results ORDER BY sig, role, pos, kind;
SELECT ok(NOT changed, format('%s as %s, %s %s: nothing changed (%s)', sig, role, coalesce(pname, ''), kind, call))
FROM nm_results ORDER BY sig, role, pos, kind;
SELECT cmp_ok(errlen, '<', 8192, format('%s as %s, %s %s: error text under 8 KiB', sig, role, coalesce(pname, ''), kind))
FROM nm_results ORDER BY sig, role, pos, kind;
-- "(null)" is what glibc prints for a NULL pointer given to %s
SELECT ok(coalesce(message, '') NOT LIKE '%(null)%', format('%s as %s, %s %s: no "(null)" in the error (%s)',
	sig, role, coalesce(pname, ''), kind, message))
FROM nm_results ORDER BY sig, role, pos, kind;
-- (a NULL key may be PropertiesNeedValue, 23502, as a null key in an entity is)
SELECT ok(sqlstate = '22023' OR (sqlstate = '23502' AND pname IN ('partition_key', 'row_key')),
	format('%s as %s: NULL %s is InvalidInput (%s %s)', sig, role, pname, sqlstate, message))
FROM nm_results WHERE kind = 'NULL' AND required AND NOT isstrict AND role = 'ts_nm_owner' ORDER BY sig, pos;
-- a role without rights may be refused before its input is looked at
SELECT ok(sqlstate IN ('22023', '42501') OR (sqlstate = '23502' AND pname IN ('partition_key', 'row_key')),
	format('%s as %s: NULL %s is InvalidInput or insufficient privilege (%s %s)', sig, role, pname, sqlstate, message))
FROM nm_results WHERE kind = 'NULL' AND required AND NOT isstrict AND role <> 'ts_nm_owner' ORDER BY sig, pos;

SELECT * FROM finish();
ROLLBACK;
