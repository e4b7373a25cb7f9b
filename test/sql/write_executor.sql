-- The direct write path keeps every promise of the executor (issue 21).
-- Differential test: every write function and a batch, run on three tables
-- under each condition below -- one served by the direct path (D), one made
-- to take the SPI path by a trigger that does nothing (S), and plain SQL a
-- user would write on the third (Q) -- must give the same SQLSTATE and store
-- the same entities.  Conditions: a read-only transaction, an entity
-- relation attached as a partition, a secondary unique index, a CHECK
-- whose function writes the same entity again, a trigger, row-level
-- security, column privileges.  The concurrent conditions are in
-- test/specs/write_concurrency.spec, the hot standby in test/t/002_standby.pl.
\set VERBOSITY terse
SET client_min_messages = warning;
CREATE SCHEMA regress_diff;
CREATE ROLE regress_diff_user;
GRANT USAGE ON SCHEMA regress_diff TO regress_diff_user;
CREATE FUNCTION regress_diff.noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE FUNCTION regress_diff.mark() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	NEW.props := NEW.props || '{"Trig": true}';
	RETURN NEW;
END $$;

-- The plain SQL of one operation on relation rel: what a careful user
-- writes, with the service's not-found error where no row matched.
CREATE FUNCTION regress_diff.plain(rel regclass, op text, arg jsonb) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	pk text := arg->>'PartitionKey';
	rk text := arg->>'RowKey';
	props jsonb := arg - 'PartitionKey' - 'RowKey';
	upd text := format('UPDATE %s SET ts = clock_timestamp(), props = CASE WHEN $4 THEN props || $3 ELSE $3 END'
		' WHERE pk = $1::tablestore.key AND rk = $2::tablestore.key', rel);
	ins text := format('INSERT INTO %s (pk, rk, ts, props) VALUES ($1, $2, clock_timestamp(), $3)', rel);
	c text;
	n bigint;
BEGIN
	IF op = 'insert' THEN
		EXECUTE ins USING pk, rk, props;
	ELSIF op IN ('update', 'merge') THEN
		EXECUTE upd USING pk, rk, props, op = 'merge';
		GET DIAGNOSTICS n = ROW_COUNT;
		IF n = 0 THEN
			RAISE SQLSTATE 'P0002';
		END IF;
	ELSIF op IN ('insert_or_replace', 'insert_or_merge') THEN
		-- update, else insert; an insert that finds the key taken goes round
		FOR i IN 1..3 LOOP
			EXECUTE upd USING pk, rk, props, op = 'insert_or_merge';
			GET DIAGNOSTICS n = ROW_COUNT;
			IF n > 0 THEN
				RETURN;
			END IF;
			BEGIN
				EXECUTE ins USING pk, rk, props;
				RETURN;
			EXCEPTION WHEN unique_violation THEN
				GET STACKED DIAGNOSTICS c = CONSTRAINT_NAME;
				IF c NOT LIKE '%pk_rk_idx' THEN
					RAISE;
				END IF;
			END;
		END LOOP;
		RAISE SQLSTATE '40001';
	ELSIF op = 'delete' THEN
		EXECUTE format('DELETE FROM %s WHERE pk = $1::tablestore.key AND rk = $2::tablestore.key', rel) USING pk, rk;
		GET DIAGNOSTICS n = ROW_COUNT;
		IF n = 0 THEN
			RAISE SQLSTATE 'P0002';
		END IF;
	END IF;
END $$;

-- run(path, table, op, arg): one operation through tablestore (D, S) or
-- plain SQL (Q); 'ok' or the SQLSTATE of its error
CREATE FUNCTION regress_diff.run(path text, t text, op text, arg jsonb) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	o jsonb;
BEGIN
	IF path = 'Q' THEN
		IF op = 'batch' THEN
			FOR o IN SELECT value FROM jsonb_array_elements(arg) LOOP
				PERFORM regress_diff.plain(('tablestore_data.' || lower(t))::regclass, o->>'op', o->'entity');
			END LOOP;
		ELSE
			PERFORM regress_diff.plain(('tablestore_data.' || lower(t))::regclass, op, arg);
		END IF;
	ELSIF op = 'batch' THEN
		PERFORM count(*) FROM tablestore.execute_batch(t, arg);
	ELSIF op = 'delete' THEN
		PERFORM tablestore.delete_entity(t, arg->>'PartitionKey', arg->>'RowKey');
	ELSE
		EXECUTE format('SELECT tablestore.%I($1, $2)', op || '_entity') USING t, arg;
	END IF;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE;
END $$;

-- A CHECK that writes the entity being written once more (an upsert marked
-- Inner), on the path of its table.
CREATE FUNCTION regress_diff.reenter(path text, t text, pk text, rk text, props jsonb) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
	IF props ? 'Reenter' AND NOT props ? 'Inner' THEN
		IF path = 'Q' THEN
			PERFORM regress_diff.plain(('tablestore_data.' || lower(t))::regclass, 'insert_or_merge',
				jsonb_build_object('PartitionKey', pk, 'RowKey', rk, 'Inner', true, 'Kind', 'a'));
		ELSE
			PERFORM tablestore.insert_or_merge_entity(t, jsonb_build_object('PartitionKey', pk, 'RowKey', rk,
				'Inner', true, 'Kind', 'a'));
		END IF;
	END IF;
	RETURN true;
END $$;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA regress_diff TO regress_diff_user;

-- The operations, in order, on each table of a condition.
CREATE TABLE regress_diff.ops (n int, op text, arg jsonb);
INSERT INTO regress_diff.ops VALUES
	(1, 'insert', '{"PartitionKey": "p", "RowKey": "1", "Kind": "a", "Email": "e1"}'),
	(2, 'insert', '{"PartitionKey": "p", "RowKey": "2", "Kind": "a", "Email": "e1"}'),
	(3, 'insert', '{"PartitionKey": "p", "RowKey": "1", "Kind": "a"}'),
	(4, 'update', '{"PartitionKey": "p", "RowKey": "1", "Kind": "a", "Email": "e2", "Reenter": 1}'),
	(5, 'merge', '{"PartitionKey": "p", "RowKey": "1", "X": 1}'),
	(6, 'merge', '{"PartitionKey": "p", "RowKey": "1", "Kind": "b"}'),
	(7, 'insert_or_replace', '{"PartitionKey": "p", "RowKey": "3", "Kind": "a", "Email": "e2"}'),
	(8, 'insert_or_merge', '{"PartitionKey": "p", "RowKey": "3", "Kind": "a", "Email": "e3"}'),
	(9, 'insert_or_merge', '{"PartitionKey": "p", "RowKey": "4", "Kind": "b"}'),
	(10, 'insert_or_merge', '{"PartitionKey": "p", "RowKey": "1", "Reenter": 2}'),
	(11, 'insert', '{"PartitionKey": "p", "RowKey": "5", "Kind": "a", "Reenter": 3}'),
	(12, 'insert_or_replace', '{"PartitionKey": "p", "RowKey": "3", "Kind": "a", "Email": "e2"}'),
	(13, 'delete', '{"PartitionKey": "p", "RowKey": "3"}'),
	(14, 'delete', '{"PartitionKey": "p", "RowKey": "9"}'),
	(15, 'update', '{"PartitionKey": "p", "RowKey": "9", "Kind": "a"}'),
	(16, 'batch', '[{"op": "insert", "entity": {"PartitionKey": "p", "RowKey": "6", "Kind": "a", "Email": "e9"}},
		{"op": "merge", "entity": {"PartitionKey": "p", "RowKey": "1", "Y": 2}}]'),
	(17, 'batch', '[{"op": "insert", "entity": {"PartitionKey": "p", "RowKey": "7", "Kind": "a", "Email": "e9"}}]'),
	(18, 'batch', '[{"op": "insert_or_replace", "entity": {"PartitionKey": "p", "RowKey": "8", "Kind": "b"}}]'),
	(19, 'batch', '[{"op": "insert_or_merge", "entity": {"PartitionKey": "p", "RowKey": "1", "Email": "e9"}}]'),
	(20, 'merge', '{"PartitionKey": "p", "RowKey": "2", "Hidden": true}'),
	(21, 'insert_or_merge', '{"PartitionKey": "p", "RowKey": "1", "Hidden": true}'),
	(22, 'delete', '{"PartitionKey": "p", "RowKey": "1"}');
GRANT SELECT ON regress_diff.ops TO regress_diff_user;

-- setup(cond): make the three tables of a condition: Cond_D, Cond_S (the
-- no-op trigger) and Cond_Q, each with the condition's setup
CREATE FUNCTION regress_diff.setup(cond text, setup text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	path text;
	t text;
BEGIN
	FOREACH path IN ARRAY ARRAY['D', 'S', 'Q'] LOOP
		t := cond || path;
		PERFORM tablestore.create_table(t);
		IF path = 'S' THEN
			EXECUTE format('CREATE TRIGGER noop AFTER INSERT OR UPDATE OR DELETE ON tablestore_data.%s'
				' FOR EACH ROW EXECUTE FUNCTION regress_diff.noop()', lower(t));
		END IF;
		IF setup IS NOT NULL THEN
			EXECUTE replace(replace(replace(setup, '$rel', 'tablestore_data.' || lower(t)), '$table', t), '$path', path);
		END IF;
	END LOOP;
END $$;

-- play(cond): the operations on the three tables, their outcomes side by side
CREATE FUNCTION regress_diff.play(cond text) RETURNS TABLE (n int, op text, d text, s text, q text, same boolean)
LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY
	SELECT o.n, o.op, x.d, x.s, x.q, x.d = x.s AND x.s = x.q
	FROM regress_diff.ops o,
	LATERAL (SELECT regress_diff.run('D', cond || 'D', o.op, o.arg) AS d,
		regress_diff.run('S', cond || 'S', o.op, o.arg) AS s,
		regress_diff.run('Q', cond || 'Q', o.op, o.arg) AS q) x
	ORDER BY o.n;
END $$;

-- stored(cond): whether the three tables hold the same entities (keys and
-- properties; Timestamps differ)
CREATE FUNCTION regress_diff.stored(cond text) RETURNS TABLE (rk text, props jsonb, same boolean)
LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE format(
		'SELECT coalesce(d.rk, s.rk, q.rk)::text, d.props, d.props IS NOT DISTINCT FROM s.props AND s.props IS NOT DISTINCT FROM q.props'
		' FROM tablestore_data.%sd d FULL JOIN tablestore_data.%ss s USING (pk, rk) FULL JOIN tablestore_data.%sq q USING (pk, rk)'
		' ORDER BY 1', lower(cond), lower(cond), lower(cond));
END $$;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA regress_diff TO regress_diff_user;

-- no condition: the reference
SELECT regress_diff.setup('Base', NULL);
SELECT * FROM regress_diff.play('Base');
SELECT * FROM regress_diff.stored('Base');

-- 1. a read-only transaction: 25006 for every write, on every path
SELECT regress_diff.setup('RO', NULL);
BEGIN READ ONLY;
SELECT * FROM regress_diff.play('RO');
COMMIT;
SET default_transaction_read_only = on;
SELECT n, op, d, same FROM regress_diff.play('RO') WHERE n IN (1, 8, 16);
RESET default_transaction_read_only;
SELECT count(*) AS stored FROM tablestore_data.rod;

-- 2. an entity relation attached as a partition: a row outside the bound
-- is 23514
SELECT regress_diff.setup('Part', $$
	CREATE TABLE regress_diff.parent_$path (LIKE $rel) PARTITION BY LIST ((props->>'Kind'));
	ALTER TABLE regress_diff.parent_$path ATTACH PARTITION $rel FOR VALUES IN ('a')$$);
SELECT * FROM regress_diff.play('Part');
SELECT * FROM regress_diff.stored('Part');

-- 4. a secondary unique index: its own 23505, naming it, never
-- EntityAlreadyExists for the new key nor a serialization failure
SELECT regress_diff.setup('Uniq', $$CREATE UNIQUE INDEX ON $rel ((props->>'Email'))$$);
SELECT * FROM regress_diff.play('Uniq');
SELECT * FROM regress_diff.stored('Uniq');
-- the error names the index, as plain SQL's does
CREATE FUNCTION regress_diff.violated(t text, op text, rk text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	c text;
BEGIN
	EXECUTE format('SELECT tablestore.%I($1, $2)', op || '_entity') USING t,
		jsonb_build_object('PartitionKey', 'p', 'RowKey', rk, 'Email', 'e9');
	RETURN 'ok';
EXCEPTION WHEN unique_violation THEN
	GET STACKED DIAGNOSTICS c = CONSTRAINT_NAME;
	RETURN c;
END $$;
SELECT t, op, regress_diff.violated(t, op, 'new') FROM unnest(ARRAY['UniqD', 'UniqS']) t,
	unnest(ARRAY['insert', 'insert_or_replace', 'insert_or_merge']) op ORDER BY 1, 2;
SELECT count(*) FROM tablestore.execute_batch('UniqD', '[{"op": "insert", "entity": {"PartitionKey": "p", "RowKey": "new", "Email": "e9"}}]');
-- an existing key is still EntityAlreadyExists, naming the key index
SELECT t, regress_diff.violated(t, 'insert', '4') FROM unnest(ARRAY['UniqD', 'UniqS']) t;

-- 5. a CHECK whose function writes the same entity: 27000 for an update
-- (the row to change was changed by the statement's own constraint), 23505
-- for an insert (the key was inserted by it)
SELECT regress_diff.setup('Reent', $$ALTER TABLE $rel ADD CONSTRAINT reenter
	CHECK (regress_diff.reenter('$path', '$table', pk::text, rk::text, props))$$);
SELECT * FROM regress_diff.play('Reent');
SELECT * FROM regress_diff.stored('Reent');

-- a trigger that changes the row (every table takes the SPI path)
SELECT regress_diff.setup('Trig', $$CREATE TRIGGER mark BEFORE INSERT OR UPDATE ON $rel
	FOR EACH ROW EXECUTE FUNCTION regress_diff.mark()$$);
SELECT * FROM regress_diff.play('Trig');
SELECT * FROM regress_diff.stored('Trig');

-- row-level security (the SPI path for the direct table too)
SELECT regress_diff.setup('Rls', $$ALTER TABLE $rel ENABLE ROW LEVEL SECURITY;
	CREATE POLICY visible ON $rel USING (NOT props ? 'Hidden');
	GRANT ALL ON $rel TO regress_diff_user$$);
SET ROLE regress_diff_user;
SELECT * FROM regress_diff.play('Rls');
RESET ROLE;
SELECT * FROM regress_diff.stored('Rls');

-- column privileges only (the SPI path for the direct table too): INSERT
-- and UPDATE on columns let a role write, as in plain SQL
SELECT regress_diff.setup('Cols', $$GRANT SELECT (pk, rk, ts, props), INSERT (pk, rk, ts, props),
	UPDATE (ts, props) ON $rel TO regress_diff_user; GRANT DELETE ON $rel TO regress_diff_user$$);
SET ROLE regress_diff_user;
SELECT * FROM regress_diff.play('Cols');
-- reads still need SELECT on the whole relation (queries read it without SQL)
SELECT count(*) FROM tablestore.query_entities('ColsD');
SELECT tablestore.get_entity('ColsD', 'p', '2');
RESET ROLE;
SELECT * FROM regress_diff.stored('Cols');

-- 9. Calls that fail inside savepoints release what they pinned: the plan
-- cache stays within its 64 relations (6 statements each) however many
-- tables a transaction's failing calls touch, and shrinks back after.
DO $$ BEGIN
	FOR i IN 1..100 LOOP
		PERFORM tablestore.create_table('Pin' || i);
	END LOOP;
END $$;
CREATE TEMP TABLE plans_before AS
	SELECT count(*) AS n FROM pg_backend_memory_contexts WHERE name = 'CachedPlanSource';
BEGIN;
DO $$ BEGIN
	FOR i IN 1..100 LOOP
		BEGIN
			PERFORM tablestore.update_entity('Pin' || i, '{"PartitionKey": "p", "RowKey": "missing"}');
		EXCEPTION WHEN OTHERS THEN
			NULL;
		END;
	END LOOP;
END $$;
SELECT count(*) - (SELECT n FROM plans_before) <= 64 * 6 AS bounded_in_transaction
FROM pg_backend_memory_contexts WHERE name = 'CachedPlanSource';
COMMIT;
SELECT count(*) - (SELECT n FROM plans_before) <= 64 * 6 AS bounded_after_commit
FROM pg_backend_memory_contexts WHERE name = 'CachedPlanSource';
-- a failing batch releases its pin too
BEGIN;
DO $$ BEGIN
	FOR i IN 1..100 LOOP
		BEGIN
			PERFORM tablestore.execute_batch('Pin' || i, '[{"op": "update", "entity": {"PartitionKey": "p", "RowKey": "m"}}]');
		EXCEPTION WHEN OTHERS THEN
			NULL;
		END;
	END LOOP;
END $$;
SELECT count(*) - (SELECT n FROM plans_before) <= 64 * 6 AS bounded_batches
FROM pg_backend_memory_contexts WHERE name = 'CachedPlanSource';
COMMIT;

DO $$ BEGIN
	FOR i IN 1..100 LOOP
		PERFORM tablestore.delete_table('Pin' || i);
	END LOOP;
END $$;
SELECT tablestore.delete_table(t) FROM tablestore.list_tables() t WHERE t ~ '^(Base|RO|Part|Uniq|Reent|Trig|Rls|Cols)[DSQ]$';
DROP SCHEMA regress_diff CASCADE;
DROP ROLE regress_diff_user;
