-- A batch whose operation changes the entity relation under the batch (an
-- owner's CHECK constraint whose function runs DDL on it): every later
-- operation decides on the relation as it is then, on either write path, as
-- a new call would (attack-wp F3).  A rule makes the relation one tablestore
-- refuses; a trigger sends the later operations to the SPI path; what the
-- open relation forbids (ALTER TABLE, CREATE INDEX) is refused at once.
\set VERBOSITY terse
SET client_min_messages = warning;
CREATE SCHEMA regress_bddl;
CREATE FUNCTION regress_bddl.trg() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.props := NEW.props || '{"T":1}'; RETURN NEW; END $$;
CREATE FUNCTION regress_bddl.noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE FUNCTION regress_bddl.ddl(p jsonb) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	IF p ? 'mkrule' THEN
		EXECUTE 'CREATE RULE r AS ON INSERT TO tablestore_data.bddl DO INSTEAD NOTHING';
	END IF;
	IF p ? 'mkupdrule' THEN
		EXECUTE 'CREATE RULE u AS ON UPDATE TO tablestore_data.bddl DO INSTEAD NOTHING';
	END IF;
	IF p ? 'mktrg' THEN
		EXECUTE 'CREATE TRIGGER t BEFORE INSERT ON tablestore_data.bddl FOR EACH ROW EXECUTE FUNCTION regress_bddl.trg()';
	END IF;
	IF p ? 'mkrls' THEN
		EXECUTE 'ALTER TABLE tablestore_data.bddl ENABLE ROW LEVEL SECURITY';
	END IF;
	IF p ? 'mkidx' THEN
		EXECUTE 'CREATE INDEX ON tablestore_data.bddl ((props->>''V''))';
	END IF;
	IF p ? 'mkkid' THEN
		EXECUTE 'CREATE TABLE regress_bddl.kid () INHERITS (tablestore_data.bddl)';
	END IF;
	IF p ? 'mkinvalid' THEN
		EXECUTE 'UPDATE pg_index SET indisvalid = false WHERE indrelid = ''tablestore_data.bddl''::regclass';
	END IF;
	RETURN true;
END $$;
CREATE FUNCTION regress_bddl.setup(spi boolean) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM tablestore.delete_table_if_exists('bddl');
	PERFORM tablestore.create_table('bddl');
	ALTER TABLE tablestore_data.bddl ADD CONSTRAINT ddl CHECK (regress_bddl.ddl(props));
	IF spi THEN
		CREATE TRIGGER noop BEFORE UPDATE ON tablestore_data.bddl FOR EACH ROW EXECUTE FUNCTION regress_bddl.noop();
	END IF;
	PERFORM tablestore.insert_entity('bddl', '{"PartitionKey":"p","RowKey":"x"}');
	PERFORM tablestore.insert_entity('bddl', '{"PartitionKey":"p","RowKey":"y"}');
END $$;
CREATE FUNCTION regress_bddl.run(ops text) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
	BEGIN
		RETURN QUERY SELECT r->>'status' FROM tablestore.execute_batch('bddl', ops::jsonb) r;
	EXCEPTION WHEN OTHERS THEN
		RETURN NEXT 'error ' || SQLSTATE || ': ' || SQLERRM;
	END;
	RETURN QUERY SELECT 'stored ' || string_agg(rk || ' ' || props::text, ', ' ORDER BY rk) FROM tablestore_data.bddl;
END $$;

-- a rule made by op 0 (direct, and SPI): op 1 finds the relation refused,
-- and the batch is undone
SELECT regress_bddl.setup(false);
SELECT * FROM regress_bddl.run('[{"op":"insert","entity":{"PartitionKey":"p","RowKey":"a","mkrule":1}},{"op":"insert","entity":{"PartitionKey":"p","RowKey":"b"}}]');
SELECT regress_bddl.setup(true);
SELECT * FROM regress_bddl.run('[{"op":"merge","entity":{"PartitionKey":"p","RowKey":"x","mkupdrule":1}},{"op":"merge","entity":{"PartitionKey":"p","RowKey":"y","V":2}}]');
-- a trigger made by op 0: op 1 goes to the SPI path and the trigger fires
SELECT regress_bddl.setup(false);
SELECT * FROM regress_bddl.run('[{"op":"insert","entity":{"PartitionKey":"p","RowKey":"a","mktrg":1}},{"op":"insert","entity":{"PartitionKey":"p","RowKey":"b"}}]');
-- ALTER TABLE and CREATE INDEX on the relation the batch holds open: refused
SELECT regress_bddl.setup(false);
SELECT * FROM regress_bddl.run('[{"op":"insert","entity":{"PartitionKey":"p","RowKey":"a","mkrls":1}},{"op":"insert","entity":{"PartitionKey":"p","RowKey":"b"}}]');
SELECT * FROM regress_bddl.run('[{"op":"insert","entity":{"PartitionKey":"p","RowKey":"a","mkidx":1}},{"op":"insert","entity":{"PartitionKey":"p","RowKey":"b"}}]');
-- an inheritance child, or the key index made invalid (a change that
-- invalidates the index's relcache entry only), by op 0: op 1 finds the
-- relation refused (the relation's check is kept between operations until
-- an invalidation, issue 24)
ALTER EVENT TRIGGER tablestore_ddl_command_end DISABLE;
SELECT regress_bddl.setup(false);
SELECT * FROM regress_bddl.run('[{"op":"insert","entity":{"PartitionKey":"p","RowKey":"a","mkkid":1}},{"op":"insert","entity":{"PartitionKey":"p","RowKey":"b"}}]');
SELECT regress_bddl.setup(false);
SELECT * FROM regress_bddl.run('[{"op":"insert","entity":{"PartitionKey":"p","RowKey":"a","mkinvalid":1}},{"op":"insert","entity":{"PartitionKey":"p","RowKey":"b"}}]');
ALTER EVENT TRIGGER tablestore_ddl_command_end ENABLE;

SELECT tablestore.delete_table_if_exists('bddl');
DROP SCHEMA regress_bddl CASCADE;
