-- The write functions check the replica identity and the privileges where
-- and as the executor checks them (issue 21, round 3), on the direct path
-- (RuleD) and the SPI path (RuleS, a trigger that does nothing).
\set VERBOSITY sqlstate
SET client_min_messages = warning;
CREATE SCHEMA regress_rules;
CREATE FUNCTION regress_rules.noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
SELECT tablestore.create_table(t) IS NOT NULL FROM unnest(ARRAY['RuleD', 'RuleS']) t;
CREATE TRIGGER noop BEFORE INSERT OR UPDATE OR DELETE ON tablestore_data.rules
	FOR EACH ROW EXECUTE FUNCTION regress_rules.noop();
SELECT tablestore.insert_entity(t, '{"PartitionKey":"p","RowKey":"a","V":1}') IS NOT NULL
	FROM unnest(ARRAY['RuleD', 'RuleS']) t;

-- 6. in a publication that publishes updates and deletes, without a
-- replica identity: every write that is, or may be, an UPDATE or DELETE
-- is 55000 before any row is looked at (a missing key, a new key of an
-- upsert), as plain UPDATE and DELETE are; an insert is not
SET client_min_messages = error;
CREATE PUBLICATION regress_rules_pub FOR TABLE tablestore_data.ruled, tablestore_data.rules;
SET client_min_messages = warning;
ALTER TABLE tablestore_data.ruled REPLICA IDENTITY NOTHING;
ALTER TABLE tablestore_data.rules REPLICA IDENTITY NOTHING;
UPDATE tablestore_data.ruled SET props = '{}' WHERE false;
DELETE FROM tablestore_data.ruled WHERE false;
CREATE FUNCTION regress_rules.try(t text, op text, e text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	IF op = 'delete' THEN
		PERFORM tablestore.delete_entity(t, e::jsonb->>'PartitionKey', e::jsonb->>'RowKey');
	ELSE
		EXECUTE format('SELECT tablestore.%s_entity($1, $2)', op) USING t, e::jsonb;
	END IF;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE;
END $$;
SELECT t, op, regress_rules.try(t, op, e)
	FROM unnest(ARRAY['RuleD', 'RuleS']) t,
		unnest(ARRAY['update', 'merge', 'delete', 'insert_or_replace', 'insert_or_merge']) op,
		unnest(ARRAY['{"PartitionKey":"p","RowKey":"a"}', '{"PartitionKey":"p","RowKey":"new"}']) e
	ORDER BY 1, 2, 3;
SELECT t, regress_rules.try(t, 'insert', '{"PartitionKey":"p","RowKey":"b"}') FROM unnest(ARRAY['RuleD', 'RuleS']) t;
SELECT tablestore.execute_batch('RuleD', '[{"op":"insert_or_merge","entity":{"PartitionKey":"p","RowKey":"c"}}]') IS NOT NULL;
SELECT tablestore.execute_batch('RuleS', '[{"op":"insert_or_merge","entity":{"PartitionKey":"p","RowKey":"c"}}]') IS NOT NULL;
DROP PUBLICATION regress_rules_pub;
SELECT rk FROM tablestore_data.ruled UNION ALL SELECT rk FROM tablestore_data.rules ORDER BY 1;

-- 7. an upsert needs SELECT, INSERT and UPDATE on either path, also when
-- the entity exists (INSERT on every column will do on the SPI path, as
-- for plain INSERT)
CREATE ROLE regress_rules_su;
GRANT USAGE ON SCHEMA regress_rules TO regress_rules_su;
GRANT SELECT, UPDATE ON tablestore_data.ruled, tablestore_data.rules TO regress_rules_su;
SET ROLE regress_rules_su;
SELECT t, op, regress_rules.try(t, op, '{"PartitionKey":"p","RowKey":"a","V":2}')
	FROM unnest(ARRAY['RuleD', 'RuleS']) t, unnest(ARRAY['insert_or_replace', 'insert_or_merge', 'merge']) op
	ORDER BY 1, 2;
RESET ROLE;
GRANT INSERT (pk, rk, ts, props) ON tablestore_data.ruled, tablestore_data.rules TO regress_rules_su;
SET ROLE regress_rules_su;
SELECT t, op, regress_rules.try(t, op, '{"PartitionKey":"p","RowKey":"a","V":3}')
	FROM unnest(ARRAY['RuleD', 'RuleS']) t, unnest(ARRAY['insert_or_replace', 'insert_or_merge']) op
	ORDER BY 1, 2;
RESET ROLE;
SELECT rk, props FROM tablestore_data.ruled UNION ALL SELECT rk, props FROM tablestore_data.rules ORDER BY 1, 2;

SELECT tablestore.delete_table(t) FROM unnest(ARRAY['RuleD', 'RuleS']) t;
DROP SCHEMA regress_rules CASCADE;
DROP OWNED BY regress_rules_su;
DROP ROLE regress_rules_su;
