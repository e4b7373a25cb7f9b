-- tablestore 0.5.0 -> 0.6.0

\echo Use "ALTER EXTENSION tablestore UPDATE TO '0.6.0'" to load this file. \quit

-- Stored access policies (Get/Set Table ACL, issue 22 item 8): begin
-- A table's policies, one jsonb array of {"Id", "Start", "Expiry",
-- "Permission"} (src/tableacl.c), removed with the table's catalog row by
-- the trigger below (delete_table, the event trigger of a dropped
-- relation, a stale row's repair); create_table removes a row left over
-- for its name.  No foreign key to tablestore.tables: a parallel
-- pg_restore loads the two catalogs' data in any order.
CREATE TABLE tablestore.table_acl (
	relation_name pg_catalog.text PRIMARY KEY,
	acl pg_catalog.jsonb NOT NULL,
	CHECK (pg_catalog.jsonb_typeof(acl) OPERATOR(pg_catalog.=) 'array'
		AND pg_catalog.jsonb_array_length(acl) OPERATOR(pg_catalog.<=) 5)
);
COMMENT ON TABLE tablestore.table_acl IS 'tablestore: the stored access policies of each table';
SELECT pg_catalog.pg_extension_config_dump('tablestore.table_acl', '');

CREATE FUNCTION tablestore._tables_deleted() RETURNS trigger
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	DELETE FROM tablestore.table_acl a USING old_rows o
	WHERE a.relation_name OPERATOR(pg_catalog.=) o.relation_name;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION tablestore._tables_deleted() IS 'internal: removes the stored access policies of deleted tables';
REVOKE EXECUTE ON FUNCTION tablestore._tables_deleted() FROM PUBLIC;
CREATE TRIGGER tables_deleted AFTER DELETE ON tablestore.tables
	REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION tablestore._tables_deleted();

CREATE FUNCTION tablestore.set_table_acl(table_name text, acl jsonb) RETURNS void
	AS 'MODULE_PATHNAME', 'set_table_acl' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore.set_table_acl(text, jsonb) IS 'replace a table''s stored access policies (at most 5; NULL or [] removes them)';

CREATE FUNCTION tablestore.get_table_acl(table_name text) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'get_table_acl' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore.get_table_acl(text) IS 'a table''s stored access policies as a JSON array';
-- Stored access policies through a scale-out router (issue 22 item 8): the
-- calls every node answers, with their errors as data (as the table calls).
CREATE FUNCTION tablestore._routed_set_table_acl(table_name text, acl jsonb) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tablestore._routed_set_table_acl(text, jsonb) IS 'internal: set_table_acl for a scale-out router, with its error as data';
CREATE FUNCTION tablestore._routed_get_table_acl(table_name text) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'routed_call' LANGUAGE C STABLE;
COMMENT ON FUNCTION tablestore._routed_get_table_acl(text) IS 'internal: get_table_acl for a scale-out router, with its error as data';
-- Stored access policies: end

-- Service properties (issue 22 item 7)

-- _may_set_service_properties: whether the current role may set the
-- account's service properties: the account-level right, CREATE on schema
-- tablestore_data, as create_table needs.
CREATE FUNCTION tablestore._may_set_service_properties() RETURNS boolean
	LANGUAGE sql STABLE SET search_path = pg_catalog
	RETURN pg_catalog.has_schema_privilege('tablestore_data', 'CREATE');

-- service properties: begin (issue 22 item 7; tablestore_router's build copies this part)
-- The account's service properties (Get/Set Table Service Properties):
-- logging, hour and minute metrics and the CORS rules that the gateway
-- answers preflight requests and cross-origin requests from.  One row per
-- database (an account is a database), as jsonb in the normalized form
-- that get_service_properties returns.  Anyone may read them; writing
-- needs the account-level right (_may_set_service_properties), enforced
-- by a row security policy, so that a direct UPDATE is held to it too, and
-- the CHECK keeps every stored value one that the validation accepted.
-- PUBLIC has SELECT and INSERT on the table and UPDATE of its column
-- properties only: no table-level UPDATE, DELETE or TRUNCATE, so that no
-- role without the right can LOCK it in a mode that blocks the readers
-- (the gateway's CORS read) or the writers; a row lock (FOR UPDATE) is
-- held to the update policy, which hides the row from such a role.
-- _service_properties_clip: a caller's value as a message echoes it: at
-- most 100 bytes, whole characters, "..." marking a cut (as every echo of
-- the extension).
CREATE FUNCTION tablestore._service_properties_clip(v text) RETURNS text
	LANGUAGE plpgsql IMMUTABLE STRICT SET search_path = pg_catalog AS $$
DECLARE
	c text := left(v, 100);
BEGIN
	IF octet_length(v) <= 100 THEN
		RETURN v;
	END IF;
	WHILE octet_length(c) > 100 LOOP
		c := left(c, -1);
	END LOOP;
	RETURN c || '...';
END $$;

-- _service_properties_fail: raise InvalidXmlDocument or (any other code)
-- InvalidXmlNodeValue with this message.
CREATE FUNCTION tablestore._service_properties_fail(code text, message text) RETURNS void
	LANGUAGE plpgsql IMMUTABLE STRICT SET search_path = pg_catalog AS $$
BEGIN
	RAISE EXCEPTION '%', left(message, 1000) USING
		ERRCODE = CASE code WHEN 'InvalidXmlDocument' THEN 'TSX00' ELSE 'TSX01' END,
		DETAIL = CASE code WHEN 'InvalidXmlDocument' THEN 'Table service error code: InvalidXmlDocument.'
			ELSE 'Table service error code: InvalidXmlNodeValue.' END;
END $$;

-- _service_properties_list: a comma-separated CORS list checked as the
-- service checks it: at least min_items (0 or 1), at most max_plain items
-- and max_prefixed items that end in "*", each 1..256 characters.  Items
-- are trimmed of spaces (only) and must be visible ASCII: an origin any
-- (the service and the SDKs' tests store "test" or "https://host/*"; a
-- rule matches an Origin only when equal, so an odd one matches nothing),
-- a header name (what ending in "Headers") an HTTP token that may end in
-- "*".  So nothing the properties' XML
-- cannot carry (U+FFFE, control characters) or a response header cannot
-- (CR, LF, tab) is stored.
CREATE FUNCTION tablestore._service_properties_list(what text, v text, min_items integer,
		max_plain integer, max_prefixed integer) RETURNS void
	LANGUAGE plpgsql IMMUTABLE STRICT SET search_path = pg_catalog AS $$
DECLARE
	item text;
	plain integer := 0;
	prefixed integer := 0;
BEGIN
	IF btrim(v) = '' THEN
		IF min_items > 0 THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue',
				format('%s must not be empty', tablestore._service_properties_clip(what)));
		END IF;
		RETURN;
	END IF;
	FOREACH item IN ARRAY string_to_array(v, ',') LOOP
		item := btrim(item, ' ');
		IF item = '' OR length(item) > 256 THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue',
				format('each item of %s must have 1 to 256 characters', tablestore._service_properties_clip(what)));
		END IF;
		IF what = 'AllowedOrigins' AND item !~ '^[!-~]+$' THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue',
				format('%s holds an item that is not visible ASCII', what));
		ELSIF what <> 'AllowedOrigins' AND item !~ '^[!#$%&''*+.^_`|~0-9A-Za-z-]+$' THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue',
				format('%s holds an item that is no header name', what));
		END IF;
		IF right(item, 1) = '*' THEN
			prefixed := prefixed + 1;
		ELSE
			plain := plain + 1;
		END IF;
	END LOOP;
	IF plain > max_plain OR prefixed > max_prefixed THEN
		PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue',
			format('%s may hold at most %s names and %s prefixes (ending in *)',
				tablestore._service_properties_clip(what), max_plain, max_prefixed));
	END IF;
END $$;

-- _service_properties_normalize: one element of a Set (name: Logging,
-- HourMetrics, MinuteMetrics or Cors) checked and in its stored form.
-- Booleans and integers may come as JSON values or as the XML text
-- ("true", "42"); unknown or missing members are InvalidXmlDocument, bad
-- values InvalidXmlNodeValue, as the service answers.
CREATE FUNCTION tablestore._service_properties_normalize(name text, v jsonb) RETURNS jsonb
	LANGUAGE plpgsql IMMUTABLE STRICT SET search_path = pg_catalog AS $$
DECLARE
	allowed text[];
	required text[];
	k text;
	out jsonb := '{}';
	rp jsonb;
	rule jsonb;
	rules jsonb := '[]';
	m text;
	n bigint;
BEGIN
	name := tablestore._service_properties_clip(name);
	IF name = 'Cors' THEN
		IF v IS NULL OR jsonb_typeof(v) = 'null' OR v = '""'::jsonb THEN
			RETURN '[]';
		END IF;
		IF jsonb_typeof(v) <> 'array' THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlDocument', 'Cors must be a list of CorsRule');
		END IF;
		IF jsonb_array_length(v) > 5 THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlDocument', 'at most 5 CORS rules');
		END IF;
		FOR rule IN SELECT value FROM jsonb_array_elements(v) LOOP
			IF jsonb_typeof(rule) <> 'object' THEN
				PERFORM tablestore._service_properties_fail('InvalidXmlDocument', 'a CorsRule must be an object');
			END IF;
			FOR k IN SELECT jsonb_object_keys(rule) LOOP
				IF k NOT IN ('AllowedOrigins', 'AllowedMethods', 'AllowedHeaders', 'ExposedHeaders', 'MaxAgeInSeconds') THEN
					PERFORM tablestore._service_properties_fail('InvalidXmlDocument', format('unknown CorsRule element %s', tablestore._service_properties_clip(k)));
				END IF;
			END LOOP;
			FOREACH k IN ARRAY ARRAY['AllowedOrigins', 'AllowedMethods', 'AllowedHeaders', 'ExposedHeaders', 'MaxAgeInSeconds'] LOOP
				IF NOT rule ? k THEN
					PERFORM tablestore._service_properties_fail('InvalidXmlDocument', format('a CorsRule needs %s', k));
				END IF;
				IF k <> 'MaxAgeInSeconds' AND jsonb_typeof(rule->k) <> 'string' THEN
					PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue', format('%s must be text', k));
				END IF;
			END LOOP;
			PERFORM tablestore._service_properties_list('AllowedOrigins', rule->>'AllowedOrigins', 1, 64, 64);
			PERFORM tablestore._service_properties_list('AllowedHeaders', rule->>'AllowedHeaders', 0, 64, 2);
			PERFORM tablestore._service_properties_list('ExposedHeaders', rule->>'ExposedHeaders', 0, 64, 2);
			IF btrim(rule->>'AllowedMethods', ' ') = '' THEN
				PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue', 'AllowedMethods must not be empty');
			END IF;
			FOREACH m IN ARRAY string_to_array(rule->>'AllowedMethods', ',') LOOP
				IF btrim(m, ' ') NOT IN ('DELETE', 'GET', 'HEAD', 'MERGE', 'POST', 'OPTIONS', 'PUT', 'PATCH') THEN
					PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue',
						'AllowedMethods holds a method other than DELETE, GET, HEAD, MERGE, POST, OPTIONS, PUT, PATCH');
				END IF;
			END LOOP;
			n := NULL;
			IF jsonb_typeof(rule->'MaxAgeInSeconds') IN ('number', 'string') AND (rule->>'MaxAgeInSeconds') ~ '^[0-9]{1,10}$' THEN
				n := (rule->>'MaxAgeInSeconds')::bigint;
			END IF;
			IF n IS NULL OR n > 2147483647 THEN
				PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue', 'MaxAgeInSeconds must be an integer from 0 to 2147483647');
			END IF;
			rules := rules || jsonb_build_array(jsonb_build_object(
				'AllowedOrigins', rule->>'AllowedOrigins', 'AllowedMethods', rule->>'AllowedMethods',
				'AllowedHeaders', rule->>'AllowedHeaders', 'ExposedHeaders', rule->>'ExposedHeaders',
				'MaxAgeInSeconds', (rule->>'MaxAgeInSeconds')::integer));
		END LOOP;
		RETURN rules;
	END IF;

	-- Logging, HourMetrics, MinuteMetrics
	IF v IS NULL OR jsonb_typeof(v) <> 'object' THEN
		PERFORM tablestore._service_properties_fail('InvalidXmlDocument', format('%s must be an element with members', name));
	END IF;
	IF name = 'Logging' THEN
		allowed := ARRAY['Version', 'Delete', 'Read', 'Write', 'RetentionPolicy'];
		required := allowed;
	ELSE
		allowed := ARRAY['Version', 'Enabled', 'IncludeAPIs', 'RetentionPolicy'];
		required := ARRAY['Version', 'Enabled', 'RetentionPolicy'];
	END IF;
	FOR k IN SELECT jsonb_object_keys(v) LOOP
		IF NOT k = ANY (allowed) THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlDocument', format('unknown %s element %s', name, tablestore._service_properties_clip(k)));
		END IF;
	END LOOP;
	FOREACH k IN ARRAY required LOOP
		IF NOT v ? k THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlDocument', format('%s needs %s', name, k));
		END IF;
	END LOOP;
	IF v->>'Version' IS DISTINCT FROM '1.0' THEN
		PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue', format('%s Version must be 1.0', name));
	END IF;
	out := jsonb_build_object('Version', '1.0');
	FOREACH k IN ARRAY CASE WHEN name = 'Logging' THEN ARRAY['Delete', 'Read', 'Write'] ELSE ARRAY['Enabled', 'IncludeAPIs'] END LOOP
		CONTINUE WHEN NOT v ? k;
		IF COALESCE(v->>k, '') NOT IN ('true', 'false') OR jsonb_typeof(v->k) NOT IN ('boolean', 'string') THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue', format('%s %s must be true or false', name, k));
		END IF;
		out := out || jsonb_build_object(k, (v->>k)::boolean);
	END LOOP;
	IF out ? 'IncludeAPIs' THEN
		IF (out->>'IncludeAPIs')::boolean AND NOT (out->>'Enabled')::boolean THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue', format('%s IncludeAPIs needs Enabled metrics', name));
		ELSIF NOT (out->>'Enabled')::boolean THEN
			out := out - 'IncludeAPIs';
		END IF;
	ELSIF name <> 'Logging' AND (out->>'Enabled')::boolean THEN
		PERFORM tablestore._service_properties_fail('InvalidXmlDocument', format('enabled %s need IncludeAPIs', name));
	END IF;
	rp := v->'RetentionPolicy';
	IF rp IS NULL OR jsonb_typeof(rp) <> 'object' OR NOT rp ? 'Enabled' THEN
		PERFORM tablestore._service_properties_fail('InvalidXmlDocument', format('%s RetentionPolicy needs Enabled', name));
	END IF;
	FOR k IN SELECT jsonb_object_keys(rp) LOOP
		IF k NOT IN ('Enabled', 'Days') THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlDocument', format('unknown RetentionPolicy element %s', tablestore._service_properties_clip(k)));
		END IF;
	END LOOP;
	IF COALESCE(rp->>'Enabled', '') NOT IN ('true', 'false') OR jsonb_typeof(rp->'Enabled') NOT IN ('boolean', 'string') THEN
		PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue', 'RetentionPolicy Enabled must be true or false');
	END IF;
	IF (rp->>'Enabled')::boolean THEN
		IF NOT rp ? 'Days' THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlDocument', 'an enabled RetentionPolicy needs Days');
		END IF;
		IF jsonb_typeof(rp->'Days') IN ('number', 'string') AND (rp->>'Days') ~ '^[0-9]{1,3}$' THEN
			n := (rp->>'Days')::integer;
		END IF;
		IF n IS NULL OR n NOT BETWEEN 1 AND 365 THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlNodeValue', 'RetentionPolicy Days must be from 1 to 365');
		END IF;
		out := out || jsonb_build_object('RetentionPolicy', jsonb_build_object('Enabled', true, 'Days', n));
	ELSE
		out := out || jsonb_build_object('RetentionPolicy', jsonb_build_object('Enabled', false));
	END IF;
	RETURN out;
END $$;

-- _service_properties_valid: whether a stored value is in normalized form
-- (the table's CHECK).
CREATE FUNCTION tablestore._service_properties_valid(p jsonb) RETURNS boolean
	LANGUAGE sql IMMUTABLE STRICT SET search_path = pg_catalog
	RETURN jsonb_typeof(p) = 'object'
		AND (SELECT COALESCE(bool_and(k IN ('Logging', 'HourMetrics', 'MinuteMetrics', 'Cors')), true) FROM jsonb_object_keys(p) k)
		AND (SELECT COALESCE(bool_and(tablestore._service_properties_normalize(k, p->k) = p->k), true)
			FROM jsonb_object_keys(p) k);

CREATE TABLE tablestore.service_properties (
	only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
	properties jsonb NOT NULL CHECK (tablestore._service_properties_valid(properties))
);
COMMENT ON TABLE tablestore.service_properties IS 'the account''s service properties (logging, metrics, CORS rules): one row, absent until first set';
SELECT pg_catalog.pg_extension_config_dump('tablestore.service_properties', '');
ALTER TABLE tablestore.service_properties ENABLE ROW LEVEL SECURITY;
GRANT SELECT, INSERT ON tablestore.service_properties TO PUBLIC;
GRANT UPDATE (properties) ON tablestore.service_properties TO PUBLIC;
CREATE POLICY service_properties_read ON tablestore.service_properties FOR SELECT USING (true);
CREATE POLICY service_properties_insert ON tablestore.service_properties FOR INSERT
	WITH CHECK (tablestore._may_set_service_properties());
CREATE POLICY service_properties_update ON tablestore.service_properties FOR UPDATE
	USING (tablestore._may_set_service_properties()) WITH CHECK (tablestore._may_set_service_properties());

-- get_service_properties: the stored properties, or the defaults (logging
-- and metrics off, no CORS rules) when they were never set.
CREATE FUNCTION tablestore.get_service_properties() RETURNS jsonb
	LANGUAGE sql STABLE SET search_path = pg_catalog
	BEGIN ATOMIC
		SELECT '{"Logging": {"Version": "1.0", "Delete": false, "Read": false, "Write": false, "RetentionPolicy": {"Enabled": false}},
				"HourMetrics": {"Version": "1.0", "Enabled": false, "RetentionPolicy": {"Enabled": false}},
				"MinuteMetrics": {"Version": "1.0", "Enabled": false, "RetentionPolicy": {"Enabled": false}},
				"Cors": []}'::jsonb
			OPERATOR(pg_catalog.||) COALESCE((SELECT s.properties FROM tablestore.service_properties s WHERE s.only_row), '{}'::jsonb);
	END;
COMMENT ON FUNCTION tablestore.get_service_properties() IS 'the account''s service properties (Logging, HourMetrics, MinuteMetrics, Cors)';

-- set_service_properties: validate and store; the elements the argument
-- omits keep their stored values (the service's partial update); an
-- empty Cors list removes every rule.  Returns what get_service_properties
-- now returns.  The merge into the stored row is done by the upsert on
-- the row it locked, so that concurrent Sets of different elements both
-- keep theirs.
CREATE FUNCTION tablestore.set_service_properties(properties jsonb) RETURNS jsonb
	LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog AS $$
DECLARE
	k text;
	merged jsonb;
BEGIN
	IF properties IS NULL THEN
		RAISE EXCEPTION 'service properties must not be NULL'
			USING ERRCODE = 'invalid_parameter_value', DETAIL = 'Table service error code: InvalidInput.';
	END IF;
	IF jsonb_typeof(properties) <> 'object' THEN
		PERFORM tablestore._service_properties_fail('InvalidXmlDocument', 'service properties must be an object');
	END IF;
	IF NOT tablestore._may_set_service_properties() THEN
		RAISE EXCEPTION 'permission denied to set the service properties'
			USING ERRCODE = 'insufficient_privilege',
				HINT = 'Setting them needs CREATE on schema tablestore_data, as creating a table does.';
	END IF;
	merged := '{}';
	FOR k IN SELECT jsonb_object_keys(properties) LOOP
		IF k NOT IN ('Logging', 'HourMetrics', 'MinuteMetrics', 'Cors') THEN
			PERFORM tablestore._service_properties_fail('InvalidXmlDocument', format('unknown service property %s', tablestore._service_properties_clip(k)));
		END IF;
		merged := merged || jsonb_build_object(k, tablestore._service_properties_normalize(k, properties->k));
	END LOOP;
	INSERT INTO tablestore.service_properties AS s (only_row, properties) VALUES (true, merged)
		ON CONFLICT (only_row) DO UPDATE SET properties = s.properties OPERATOR(pg_catalog.||) excluded.properties;
	RETURN tablestore.get_service_properties();
END $$;
COMMENT ON FUNCTION tablestore.set_service_properties(jsonb) IS 'set the account''s service properties (omitted elements keep their values)';
-- service properties: end

-- verify_index: the light and parent checks and heapallindexed (issue 25)
DROP FUNCTION tablestore.verify_index(regclass);
CREATE FUNCTION tablestore.verify_index(index regclass, parent_check boolean DEFAULT true,
										heapallindexed boolean DEFAULT false) RETURNS void
	AS 'MODULE_PATHNAME', 'verify_index' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION tablestore.verify_index(regclass, boolean, boolean) IS 'check a tskey index: page invariants, key order, links; with parent_check (ShareLock) levels, uniqueness, one entry per live tuple; with heapallindexed every heap tuple''s entry';
