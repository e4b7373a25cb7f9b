-- The direct write path evaluates an entity relation's CHECK constraints as
-- the executor does (issue 21, round 3): with expression state made for the
-- call, so that a CHECK whose function writes the same table (SQL or
-- PL/pgSQL), a whole-row CHECK, a CHECK the caller may not execute, and a
-- CHECK whose SQL function or domain changed give what plain SQL gives.
\set VERBOSITY sqlstate
SET client_min_messages = warning;
CREATE ROLE regress_chk_own;
CREATE ROLE regress_chk_wr;
GRANT CREATE ON SCHEMA tablestore_data TO regress_chk_own;
CREATE SCHEMA regress_chk AUTHORIZATION regress_chk_own;
GRANT USAGE ON SCHEMA regress_chk TO regress_chk_wr;

-- 1. a CHECK calling an SQL function that inserts into the same table:
-- plain SQL inserts both rows, so does insert_entity (it crashed)
SELECT tablestore.create_table('ChkSqlFn') IS NOT NULL;
CREATE FUNCTION regress_chk.sqlfn(k text) RETURNS boolean LANGUAGE sql AS $$
	SELECT 1;
	SELECT CASE WHEN k = 'outer' THEN
		tablestore.insert_entity('ChkSqlFn', '{"PartitionKey":"p","RowKey":"inner"}') IS NOT NULL
		ELSE true END;
$$;
ALTER TABLE tablestore_data.chksqlfn ADD CONSTRAINT c CHECK (regress_chk.sqlfn(rk));
BEGIN;
INSERT INTO tablestore_data.chksqlfn VALUES ('p', 'outer', now(), '{}');
SELECT rk FROM tablestore_data.chksqlfn ORDER BY rk;
ROLLBACK;
SELECT tablestore.insert_entity('ChkSqlFn', '{"PartitionKey":"p","RowKey":"outer"}') IS NOT NULL;
SELECT rk FROM tablestore_data.chksqlfn ORDER BY rk;
-- (the CHECK's insert of "inner" then finds it taken, as plain SQL's would)
SELECT tablestore.insert_or_replace_entity('ChkSqlFn', '{"PartitionKey":"p","RowKey":"outer","V":1}') IS NOT NULL;
SELECT rk, props FROM tablestore_data.chksqlfn ORDER BY rk;

-- 2. a CHECK whose PL/pgSQL function writes another entity of the table:
-- the violating row is refused, 23514, as plain SQL refuses it
SELECT tablestore.create_table('ChkReenter') IS NOT NULL;
CREATE FUNCTION regress_chk.hook(k text) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	IF k = 'long-outer-key' THEN
		PERFORM tablestore.insert_entity('ChkReenter', '{"PartitionKey":"p","RowKey":"b"}');
	END IF;
	RETURN 5;
END $$;
ALTER TABLE tablestore_data.chkreenter ADD CONSTRAINT short_rk CHECK (length(rk) < regress_chk.hook(rk));
INSERT INTO tablestore_data.chkreenter VALUES ('p', 'long-outer-key', now(), '{}');
SELECT tablestore.insert_entity('ChkReenter', '{"PartitionKey":"p","RowKey":"long-outer-key"}') IS NOT NULL;
SELECT tablestore.execute_batch('ChkReenter', '[{"op":"insert","entity":{"PartitionKey":"p","RowKey":"long-outer-key"}}]') IS NOT NULL;
SELECT rk FROM tablestore_data.chkreenter ORDER BY rk;

-- 3. a CHECK the writer may not execute: 42501 every time, and the other
-- CHECKs still apply; after the owner's write another role still needs
-- EXECUTE (the privilege is checked for each write, as for each statement)
SET ROLE regress_chk_own;
SELECT tablestore.create_table('ChkAcct') IS NOT NULL;
CREATE FUNCTION regress_chk.positive(j jsonb) RETURNS boolean LANGUAGE sql IMMUTABLE
	AS $$ SELECT coalesce((j->>'amount')::int, 0) >= 0 $$;
REVOKE EXECUTE ON FUNCTION regress_chk.positive(jsonb) FROM PUBLIC;
ALTER TABLE tablestore_data.chkacct ADD CONSTRAINT amount_positive CHECK (regress_chk.positive(props));
ALTER TABLE tablestore_data.chkacct ADD CONSTRAINT has_owner CHECK (props ? 'owner');
GRANT SELECT, INSERT, UPDATE, DELETE ON tablestore_data.chkacct TO regress_chk_wr;
SET ROLE regress_chk_wr;
INSERT INTO tablestore_data.chkacct VALUES ('p', 's', now(), '{"amount":-5}');
SELECT tablestore.insert_entity('ChkAcct', '{"PartitionKey":"p","RowKey":"d1","amount":-5}') IS NOT NULL;
SELECT tablestore.insert_entity('ChkAcct', '{"PartitionKey":"p","RowKey":"d1","amount":-5}') IS NOT NULL;
SELECT tablestore.insert_entity('ChkAcct', '{"PartitionKey":"p","RowKey":"d2","amount":5}') IS NOT NULL;
SET ROLE regress_chk_own;
SELECT tablestore.insert_entity('ChkAcct', '{"PartitionKey":"p","RowKey":"o1","amount":5,"owner":"o"}') IS NOT NULL;
SELECT tablestore.insert_entity('ChkAcct', '{"PartitionKey":"p","RowKey":"o2","amount":5}') IS NOT NULL;
SELECT tablestore.insert_entity('ChkAcct', '{"PartitionKey":"p","RowKey":"o3","amount":-5,"owner":"o"}') IS NOT NULL;
SET ROLE regress_chk_wr;
SELECT tablestore.insert_entity('ChkAcct', '{"PartitionKey":"p","RowKey":"w1","amount":5,"owner":"w"}') IS NOT NULL;
SELECT tablestore.merge_entity('ChkAcct', '{"PartitionKey":"p","RowKey":"o1","amount":-5}') IS NOT NULL;
RESET ROLE;
SELECT rk, props FROM tablestore_data.chkacct ORDER BY rk;

-- 4. a whole-row CHECK: 23514, as plain SQL
SELECT tablestore.create_table('ChkWholeRow') IS NOT NULL;
ALTER TABLE tablestore_data.chkwholerow ADD CONSTRAINT c
	CHECK (row_to_json(chkwholerow)::text NOT LIKE '%forbidden%');
INSERT INTO tablestore_data.chkwholerow VALUES ('p', '0', now(), '{"x":"forbidden"}');
SELECT tablestore.insert_entity('ChkWholeRow', '{"PartitionKey":"p","RowKey":"1"}') IS NOT NULL;
SELECT tablestore.insert_entity('ChkWholeRow', '{"PartitionKey":"p","RowKey":"2","x":"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"}') IS NOT NULL;
SELECT tablestore.insert_entity('ChkWholeRow', '{"PartitionKey":"p","RowKey":"3","x":"forbidden"}') IS NOT NULL;
SELECT tablestore.merge_entity('ChkWholeRow', '{"PartitionKey":"p","RowKey":"2","x":"forbidden"}') IS NOT NULL;
SELECT rk FROM tablestore_data.chkwholerow ORDER BY rk;

-- 5. a CHECK's inlinable SQL function replaced, a domain it casts to given
-- a constraint: the next write applies the new definitions, as plain SQL
SELECT tablestore.create_table('ChkStale') IS NOT NULL;
CREATE FUNCTION regress_chk.small(j jsonb) RETURNS boolean LANGUAGE sql IMMUTABLE
	AS $$ SELECT coalesce((j->>'n')::int, 0) < 100 $$;
CREATE DOMAIN regress_chk.word AS text;
ALTER TABLE tablestore_data.chkstale ADD CONSTRAINT small CHECK (regress_chk.small(props));
ALTER TABLE tablestore_data.chkstale ADD CONSTRAINT word CHECK ((coalesce(props->>'w', 'x'))::regress_chk.word IS NOT NULL);
SELECT tablestore.insert_entity('ChkStale', '{"PartitionKey":"p","RowKey":"1","n":50,"w":"a b"}') IS NOT NULL;
CREATE OR REPLACE FUNCTION regress_chk.small(j jsonb) RETURNS boolean LANGUAGE sql IMMUTABLE
	AS $$ SELECT coalesce((j->>'n')::int, 0) < 10 $$;
INSERT INTO tablestore_data.chkstale VALUES ('p', 'q2', now(), '{"n":50}');
SELECT tablestore.insert_entity('ChkStale', '{"PartitionKey":"p","RowKey":"2","n":50}') IS NOT NULL;
ALTER DOMAIN regress_chk.word ADD CONSTRAINT no_space CHECK (VALUE NOT LIKE '% %');
INSERT INTO tablestore_data.chkstale VALUES ('p', 'q3', now(), '{"w":"c d"}');
SELECT tablestore.insert_entity('ChkStale', '{"PartitionKey":"p","RowKey":"3","w":"c d"}') IS NOT NULL;
SELECT tablestore.insert_entity('ChkStale', '{"PartitionKey":"p","RowKey":"4","n":5,"w":"cd"}') IS NOT NULL;
SELECT rk FROM tablestore_data.chkstale ORDER BY rk;

-- 6. planning a CHECK runs code (an immutable function of constants is
-- evaluated): a write that code makes of the same table is checked in
-- full (23514 here, for the inner row), as plain SQL checks it
SELECT tablestore.create_table('ChkPlan') IS NOT NULL;
CREATE FUNCTION regress_chk.at_plan(n int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF current_setting('regress_chk.planned', true) IS DISTINCT FROM 'yes' THEN
		PERFORM set_config('regress_chk.planned', 'yes', false);
		PERFORM tablestore.insert_entity('ChkPlan', '{"PartitionKey":"p","RowKey":"inner"}');
	END IF;
	RETURN n > 0;
END $$;
SET regress_chk.planned = 'yes';
ALTER TABLE tablestore_data.chkplan ADD CONSTRAINT has_ok CHECK (props ? 'ok');
ALTER TABLE tablestore_data.chkplan ADD CONSTRAINT at_plan CHECK (regress_chk.at_plan(1));
SELECT tablestore.insert_entity('ChkPlan', '{"PartitionKey":"p","RowKey":"first","ok":1}') IS NOT NULL;
-- the function replaced: the trees are planned again by the next write
CREATE OR REPLACE FUNCTION regress_chk.at_plan(n int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF current_setting('regress_chk.planned', true) IS DISTINCT FROM 'yes' THEN
		PERFORM set_config('regress_chk.planned', 'yes', false);
		PERFORM tablestore.insert_entity('ChkPlan', '{"PartitionKey":"p","RowKey":"inner"}');
	END IF;
	RETURN n > 0;
END $$;
SET regress_chk.planned = '';
SELECT tablestore.insert_entity('ChkPlan', '{"PartitionKey":"p","RowKey":"outer","ok":1}') IS NOT NULL;
SET regress_chk.planned = '';
INSERT INTO tablestore_data.chkplan VALUES ('p', 'q', now(), '{"ok":1}');
SELECT rk FROM tablestore_data.chkplan ORDER BY rk;

-- clean up
SELECT tablestore.delete_table(t) FROM unnest(ARRAY['ChkSqlFn', 'ChkReenter', 'ChkAcct', 'ChkWholeRow', 'ChkStale', 'ChkPlan']) t;
DROP SCHEMA regress_chk CASCADE;
DROP OWNED BY regress_chk_own, regress_chk_wr;
DROP ROLE regress_chk_own;
DROP ROLE regress_chk_wr;
