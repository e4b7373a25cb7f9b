-- tablestore 0.2.0 -> 0.3.0: hardening.
-- Frozen once 0.3.0 is released; never edit it afterwards.

\echo Use "ALTER EXTENSION tablestore UPDATE TO '0.3.0'" to load this file. \quit

-- Entity relations: guards

-- The rules of keys, as the CHECK constraint of every entity relation
-- (rows written with plain SQL are held to them too).
CREATE FUNCTION tablestore.key_is_valid(tablestore.key) RETURNS boolean
	AS 'MODULE_PATHNAME', 'key_is_valid' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tablestore.key_is_valid(tablestore.key) IS 'whether a value may be a PartitionKey or RowKey: no forbidden character, at most 512 UTF-16 code units';

CREATE FUNCTION tablestore._check_entity_relation(oid) RETURNS void
	AS 'MODULE_PATHNAME', 'check_entity_relation' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION tablestore._check_entity_relation(oid) IS 'internal: error unless a relation is an entity relation as create_table makes it';
REVOKE ALL ON FUNCTION tablestore._check_entity_relation(oid) FROM PUBLIC;

-- The catalog and the relations stay consistent: after DDL, every relation
-- of schema tablestore_data has the definition create_table gives, and no
-- table's relation is renamed or leaves the schema; a dropped relation takes
-- its table with it.  (A relation made in the schema with CREATE TABLE and
-- that definition is a table: that is how a restore from pg_dump makes them.)  The functions run with the
-- extension owner's rights (the catalog is theirs) and a fixed search_path.
CREATE FUNCTION tablestore._ddl_command_end() RETURNS event_trigger
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT DISTINCT c.oid, c.relname, c.relnamespace OPERATOR(pg_catalog.=) 'tablestore_data'::regnamespace AS in_data,
			EXISTS (SELECT FROM tablestore.tables t WHERE t.relation_name OPERATOR(pg_catalog.=) c.relname::text) AS listed
		FROM pg_event_trigger_ddl_commands() d
		JOIN pg_class c ON c.oid OPERATOR(pg_catalog.=) d.objid
		WHERE d.classid OPERATOR(pg_catalog.=) 'pg_class'::regclass AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
	LOOP
		IF r.in_data THEN
			-- a table's relation renamed: it is not listed, and a listed
			-- table has lost its relation
			IF TG_TAG LIKE 'ALTER %' AND NOT r.listed AND EXISTS (SELECT FROM tablestore.tables t
					WHERE NOT EXISTS (SELECT FROM pg_class c
						WHERE c.relnamespace OPERATOR(pg_catalog.=) 'tablestore_data'::regnamespace
							AND c.relname OPERATOR(pg_catalog.=) t.relation_name)) THEN
				RAISE EXCEPTION 'the entity relation of a table cannot be renamed'
					USING ERRCODE = 'object_not_in_prerequisite_state',
						HINT = 'A table''s entity relation is named after the table; create a new table and copy the entities instead.';
			END IF;
			PERFORM tablestore._check_entity_relation(r.oid);
		ELSIF r.listed AND NOT EXISTS (SELECT FROM pg_class c
				WHERE c.relnamespace OPERATOR(pg_catalog.=) 'tablestore_data'::regnamespace
					AND c.relname OPERATOR(pg_catalog.=) r.relname) THEN
			RAISE EXCEPTION 'the entity relation "%" of a table cannot leave schema tablestore_data', r.relname
				USING ERRCODE = 'object_not_in_prerequisite_state',
					HINT = 'Delete the table with tablestore.delete_table instead.';
		END IF;
	END LOOP;
END
$$;
COMMENT ON FUNCTION tablestore._ddl_command_end() IS 'internal: event trigger keeping schema tablestore_data and the catalog consistent';

CREATE FUNCTION tablestore._sql_drop() RETURNS event_trigger
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF pg_catalog.to_regclass('tablestore.tables') IS NULL THEN
		RETURN;					-- the extension itself is being dropped
	END IF;
	DELETE FROM tablestore.tables t
	USING pg_event_trigger_dropped_objects() d
	WHERE d.classid OPERATOR(pg_catalog.=) 'pg_class'::regclass AND d.objsubid OPERATOR(pg_catalog.=) 0
		AND d.object_type OPERATOR(pg_catalog.=) 'table'
		AND d.schema_name OPERATOR(pg_catalog.=) 'tablestore_data'
		AND t.relation_name OPERATOR(pg_catalog.=) d.object_name;
END
$$;
COMMENT ON FUNCTION tablestore._sql_drop() IS 'internal: event trigger removing the table of a dropped entity relation';

CREATE EVENT TRIGGER tablestore_ddl_command_end ON ddl_command_end
	WHEN TAG IN ('CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO', 'ALTER TABLE', 'CREATE VIEW', 'ALTER VIEW',
		'CREATE MATERIALIZED VIEW', 'ALTER MATERIALIZED VIEW', 'CREATE FOREIGN TABLE', 'ALTER FOREIGN TABLE')
	EXECUTE FUNCTION tablestore._ddl_command_end();
CREATE EVENT TRIGGER tablestore_sql_drop ON sql_drop
	EXECUTE FUNCTION tablestore._sql_drop();

-- Every entity relation gets the CHECK constraints create_table now gives:
-- NOT VALID, so that the update does not scan (or fail on) rows written
-- with plain SQL before; VALIDATE CONSTRAINT checks them when wanted.
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT c.oid::regclass AS rel
		FROM tablestore.tables t
		JOIN pg_catalog.pg_class c ON c.relname OPERATOR(pg_catalog.=) t.relation_name
			AND c.relnamespace OPERATOR(pg_catalog.=) 'tablestore_data'::regnamespace
		WHERE c.relkind OPERATOR(pg_catalog.=) 'r'
	LOOP
		EXECUTE pg_catalog.format('ALTER TABLE %s ADD CONSTRAINT entity_keys_valid '
			'CHECK (tablestore.key_is_valid(pk) AND tablestore.key_is_valid(rk)) NOT VALID', r.rel);
		EXECUTE pg_catalog.format('ALTER TABLE %s ADD CONSTRAINT entity_props_object '
			'CHECK (pg_catalog.jsonb_typeof(props) OPERATOR(pg_catalog.=) ''object''::pg_catalog.text) NOT VALID', r.rel);
	END LOOP;
END
$$;
