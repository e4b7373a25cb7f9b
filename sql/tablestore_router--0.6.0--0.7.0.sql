-- tablestore_router 0.6.0 -> 0.7.0

\echo Use "ALTER EXTENSION tablestore_router UPDATE TO '0.7.0'" to load this file. \quit

-- ---- issue 25 item 4: one definition of the SQL API (sqlgen) ----
-- The API of schema tablestore is now copied by the build from
-- tablestore.sql (tools/router-api.pl), comments included: the functions
-- whose router comment was its own take the node's.
COMMENT ON FUNCTION tablestore._query_entities(text, text, text, integer) IS 'internal: the streaming scan of query_entities';
COMMENT ON FUNCTION tablestore._query_page_keyed(text, text, text, integer, text, text) IS 'internal: query_page with each entity''s keys, for the HTTP gateway and a scale-out router';
COMMENT ON FUNCTION tablestore.create_table(text) IS 'create a table';
COMMENT ON FUNCTION tablestore.delete_table(text) IS 'delete a table and all its entities';
COMMENT ON FUNCTION tablestore.execute_batch(text, jsonb) IS 'run up to 100 operations on one partition, all or nothing';
COMMENT ON FUNCTION tablestore.explain_query(text, text) IS 'how a $filter on a table is executed: access kind, key bounds, residual';
COMMENT ON FUNCTION tablestore.get_table_acl(text) IS 'a table''s stored access policies as a JSON array';
COMMENT ON FUNCTION tablestore.list_tables(text) IS 'the names of the tables matching a $filter on TableName, in ordinal order';
COMMENT ON FUNCTION tablestore.partition_hash(text) IS 'the stable hash of a PartitionKey that a scale-out router routes by';
COMMENT ON FUNCTION tablestore.set_table_acl(text, jsonb) IS 'replace a table''s stored access policies (at most 5; NULL or [] removes them)';
-- ---- end of issue 25 item 4 (sqlgen) ----

-- ---- issue 23, the move's lock on the target (move2): while a move's
-- subscription applies on the target (as a superuser), the target's copies
-- of the tables are locked against the DDL that could add their owner's
-- code; a rerun first drops the interrupted run's subscription; the mover's
-- schema must be a superuser's ----

-- _move_lock_target: the target's entity relations rels locked in SHARE
-- UPDATE EXCLUSIVE mode by the router session's dblink connection
-- 'ts_move_lock', in a transaction left open until the move's subscription
-- is gone.  That mode conflicts with every DDL that can add code a row
-- write runs (CREATE TRIGGER, ALTER TABLE ... ENABLE TRIGGER, ADD
-- CONSTRAINT, ADD COLUMN, SET DEFAULT, CREATE INDEX and CREATE INDEX
-- CONCURRENTLY, CREATE RULE, CREATE POLICY) but not with the replication's
-- and the calls' row writes (ROW EXCLUSIVE).  The lock transaction takes
-- no transaction id (it writes nothing), so it holds back no slot's
-- snapshot.  Waits for the lock at most lock_timeout (60 s when unset).
-- Then the target is checked again under the lock: owner code added after
-- the move's first check refuses the move before its subscription exists.
CREATE OR REPLACE FUNCTION tablestore_router._move_lock_target(tgt text, rels text[]) RETURNS void
	LANGUAGE plpgsql AS $$
DECLARE
	lt text := CASE WHEN current_setting('lock_timeout') IN ('0', '0ms') THEN '60s' ELSE current_setting('lock_timeout') END;
BEGIN
	PERFORM tablestore_router._node_connect('ts_move_lock', tgt);
	PERFORM tablestore_router._node_exec('ts_move_lock', format(
		'SET application_name = %L; SET idle_in_transaction_session_timeout = 0; SET statement_timeout = 0; BEGIN; SET LOCAL lock_timeout = %L',
		'tablestore move lock', lt));
	IF cardinality(rels) > 0 THEN
		PERFORM tablestore_router._node_exec('ts_move_lock', format('LOCK TABLE %s IN SHARE UPDATE EXCLUSIVE MODE',
			(SELECT string_agg('tablestore_data.' || quote_ident(r), ', ') FROM unnest(rels) r)));
	END IF;
	PERFORM tablestore_router._move_check_owner_code('ts_move_lock', tgt);
END $$;

-- _move_check_lock: the lock of _move_lock_target still held (its
-- connection alive, its transaction open, one lock per table).  If not (the
-- target restarted, the connection was lost), the move's subscription is
-- disabled at once (an owner could now add code the apply worker would
-- run) and the move fails; a rerun starts it again.
CREATE OR REPLACE FUNCTION tablestore_router._move_check_lock(name text, tgt text, nrels integer) RETURNS void
	LANGUAGE plpgsql AS $$
DECLARE
	held bigint;
BEGIN
	BEGIN
		held := (SELECT * FROM tablestore_router._node_values('ts_move_lock',
			'SELECT count(*) FROM pg_catalog.pg_locks WHERE pid = pg_catalog.pg_backend_pid() AND locktype = ''relation'' AND mode = ''ShareUpdateExclusiveLock'' AND granted'))::bigint;
	EXCEPTION WHEN OTHERS THEN
		held := NULL;
	END;
	IF held IS DISTINCT FROM nrels THEN
		PERFORM tablestore_router._move_stop_subscription(name, tgt);
		RAISE EXCEPTION 'move %: the lock on the target''s tables was lost', name
			USING ERRCODE = 'object_not_in_prerequisite_state',
				DETAIL = 'Without it a table''s owner could add code that the replication would run as a superuser; the subscription is disabled.',
				HINT = 'Run the move again to continue it.';
	END IF;
END $$;

-- _move_stop_subscription: the move's subscription on the target disabled,
-- if the target can be reached (again): a move that fails stops its apply
-- worker before its session, and with it the lock, may end (a rerun starts
-- the copy again anyway)
CREATE OR REPLACE FUNCTION tablestore_router._move_stop_subscription(name text, tgt text) RETURNS void
	LANGUAGE plpgsql AS $$
BEGIN
	BEGIN
		PERFORM tablestore_router._node_exec('ts_move_tgt', format('ALTER SUBSCRIPTION %I DISABLE', name));
	EXCEPTION WHEN OTHERS THEN
		BEGIN
			PERFORM tablestore_router._node_connect('ts_move_tgt', tgt);
			PERFORM tablestore_router._node_exec('ts_move_tgt', format('ALTER SUBSCRIPTION %I DISABLE', name));
		EXCEPTION WHEN OTHERS THEN
			NULL;				-- the target is unreachable: nothing runs there
		END;
	END;
END $$;

-- _move_poll: after pause seconds, the lock checked (above), then query run
-- on connection conn; whatever fails (a lost node, a cancel) stops the
-- subscription first, then is raised
CREATE OR REPLACE FUNCTION tablestore_router._move_poll(name text, tgt text, nrels integer, conn text, query text, pause float8)
	RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_catalog.pg_sleep(pause);
	PERFORM tablestore_router._move_check_lock(name, tgt, nrels);
	RETURN QUERY SELECT * FROM tablestore_router._node_values(conn, query);
EXCEPTION WHEN OTHERS OR query_canceled THEN
	PERFORM tablestore_router._move_stop_subscription(name, tgt);
	RAISE;
END $$;

-- _move_unlock_target: the lock of _move_lock_target released (its
-- connection closed, which ends the transaction), if this session holds it
CREATE OR REPLACE FUNCTION tablestore_router._move_unlock_target() RETURNS void
	LANGUAGE plpgsql AS $$
DECLARE
	s text := (SELECT n.nspname FROM pg_catalog.pg_extension e
		JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'dblink');
	open text[];
BEGIN
	IF s IS NULL THEN
		RETURN;
	END IF;
	EXECUTE format('SELECT %I.dblink_get_connections()', s) INTO open;
	IF 'ts_move_lock' = ANY (open) THEN
		EXECUTE format('SELECT %I.dblink_disconnect($1)', s) USING 'ts_move_lock';
	END IF;
END $$;

REVOKE ALL ON FUNCTION tablestore_router._move_lock_target(text, text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION tablestore_router._move_check_lock(text, text, integer) FROM PUBLIC;
-- _move_count_both: _move_count of the source and of the target, the two
-- scans run at once (they are most of the cutover's pause with a large
-- partition)
CREATE OR REPLACE FUNCTION tablestore_router._move_count_both(mask integer, part integer, OUT src bigint, OUT tgt bigint)
	LANGUAGE plpgsql AS $$
DECLARE
	s text := (SELECT n.nspname FROM pg_catalog.pg_extension e
		JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'dblink');
	c text;
	q text;
	v bigint[] := '{}';
BEGIN
	FOREACH c IN ARRAY ARRAY['ts_move_src', 'ts_move_tgt'] LOOP
		q := (SELECT 'SELECT (0' || coalesce(string_agg(format(' + (SELECT count(*) FROM tablestore_data.%I WHERE (tablestore.partition_hash(pk) & %s) = %s)', r, mask, part), ''), '') || ')::text'
			FROM tablestore_router._node_values(c, $r$SELECT t.relation_name FROM tablestore.tables t
				JOIN pg_catalog.pg_class c ON c.oid = pg_catalog.to_regclass('tablestore_data.' || pg_catalog.quote_ident(t.relation_name))
				WHERE c.relkind = 'r'$r$) r);
		EXECUTE format('SELECT %I.dblink_send_query($1, $2)', s) USING c, q;
	END LOOP;
	FOREACH c IN ARRAY ARRAY['ts_move_src', 'ts_move_tgt'] LOOP
		EXECUTE format('SELECT v::bigint FROM %I.dblink_get_result($1, true) AS t(v text)', s) INTO q USING c;
		v := v || q::bigint;
		EXECUTE format('SELECT count(*) FROM %I.dblink_get_result($1, true) AS t(v text)', s) USING c;
	END LOOP;
	src := v[1];
	tgt := v[2];
END $$;

-- _move_owner_code_sql: a query, run on a node, naming what of its entity
-- relations would run code of their owners in the replication's apply
-- worker or in the mover's statements (as the superuser): user triggers
-- (but the mover's own), rules, and constraints, indexes and defaults whose
-- expressions call a function (or an operator's) neither of PostgreSQL's
-- catalog nor of extension tablestore (pg_depend records them all).  NULL
-- when there is none.
CREATE OR REPLACE FUNCTION tablestore_router._move_owner_code_sql() RETURNS text
	LANGUAGE sql IMMUTABLE AS $$
SELECT $q$
WITH rels AS (
	SELECT c.oid, c.relname, c.relkind FROM tablestore.tables t
	JOIN pg_catalog.pg_class c ON c.oid = pg_catalog.to_regclass('tablestore_data.' || pg_catalog.quote_ident(t.relation_name))
)
SELECT pg_catalog.string_agg(w, '; ' ORDER BY w) FROM (
	SELECT r.relname || ': not a plain table' AS w FROM rels r WHERE r.relkind <> 'r'
	UNION ALL
	SELECT r.relname || ': trigger ' || t.tgname
	FROM rels r JOIN pg_catalog.pg_trigger t ON t.tgrelid = r.oid
	WHERE NOT (t.tgname ~ '^ts_move_[0-9]+$' AND t.tgenabled = 'R' AND NOT t.tgisinternal
		AND t.tgfoid = pg_catalog.to_regprocedure('tablestore_move.keep_partition()'))
	UNION ALL
	SELECT r.relname || ': rule ' || w.rulename FROM rels r JOIN pg_catalog.pg_rewrite w ON w.ev_class = r.oid
	UNION ALL
	SELECT r.relname || ': default or generated column ' || a.adnum
	FROM rels r JOIN pg_catalog.pg_attrdef a ON a.adrelid = r.oid
	UNION ALL
	SELECT r.relname || ': inheritance' FROM rels r JOIN pg_catalog.pg_inherits i ON r.oid IN (i.inhrelid, i.inhparent)
	UNION ALL
	SELECT r.relname || ': constraint ' || k.conname
	FROM rels r JOIN pg_catalog.pg_constraint k ON k.conrelid = r.oid OR k.confrelid = r.oid
	WHERE NOT (k.conrelid = r.oid AND k.contype = 'c' AND CASE k.conname
		WHEN 'entity_keys_valid' THEN pg_catalog.pg_get_constraintdef(k.oid) ~
			'^CHECK \(\(tablestore\.key_is_valid\(pk\) AND tablestore\.key_is_valid\(rk\)\)\)( NOT VALID)?$'
		WHEN 'entity_props_object' THEN pg_catalog.pg_get_constraintdef(k.oid) ~
			'^CHECK \(\(jsonb_typeof\(props\) = ''object''::text\)\)( NOT VALID)?$'
		WHEN 'entity_ts_in_range' THEN pg_catalog.pg_get_constraintdef(k.oid) ~
			'^CHECK \(\(\(ts >= ''[^'']*''::timestamp with time zone\) AND \(ts < ''[^'']*''::timestamp with time zone\)\)\)( NOT VALID)?$'
		ELSE false END)
	UNION ALL
	SELECT r.relname || ': index ' || i.indexrelid::pg_catalog.regclass::text
	FROM rels r JOIN pg_catalog.pg_index i ON i.indrelid = r.oid
	WHERE NOT (i.indisunique AND i.indnatts = 2 AND i.indkey::text = '1 2' AND i.indexprs IS NULL AND i.indpred IS NULL
		AND (SELECT a.amname FROM pg_catalog.pg_class x JOIN pg_catalog.pg_am a ON a.oid = x.relam WHERE x.oid = i.indexrelid) = 'tskey'
		AND NOT EXISTS (SELECT FROM pg_catalog.unnest(i.indclass::oid[]) oc JOIN pg_catalog.pg_opclass o ON o.oid = oc
			WHERE o.opcnamespace <> 'tablestore'::regnamespace))
	UNION ALL
	SELECT r.relname || ': more than one index' FROM rels r
	WHERE (SELECT count(*) FROM pg_catalog.pg_index i WHERE i.indrelid = r.oid) > 1
	UNION ALL
	SELECT r.relname || ': columns' FROM rels r
	WHERE (SELECT pg_catalog.string_agg(a.attname || ' ' || a.atttypid::pg_catalog.regtype::text, ', ' ORDER BY a.attnum)
		FROM pg_catalog.pg_attribute a WHERE a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped)
		IS DISTINCT FROM 'pk tablestore.key, rk tablestore.key, ts timestamp with time zone, props jsonb'
	UNION ALL
	-- the mover's schema (its marker is replicated, its trigger function
	-- filters): every object of it a superuser's, no user trigger or rule
	SELECT pg_catalog.pg_describe_object(o.classid, o.objid, 0) || ' owned by ' || pg_catalog.pg_get_userbyid(o.owner)
	FROM (SELECT 'pg_catalog.pg_namespace'::regclass AS classid, n.oid AS objid, n.nspowner AS owner
			FROM pg_catalog.pg_namespace n WHERE n.nspname = 'tablestore_move'
		UNION ALL
		SELECT 'pg_catalog.pg_class'::regclass, c.oid, c.relowner FROM pg_catalog.pg_class c
			JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'tablestore_move'
		UNION ALL
		SELECT 'pg_catalog.pg_proc'::regclass, p.oid, p.proowner FROM pg_catalog.pg_proc p
			JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'tablestore_move') o
	WHERE NOT coalesce((SELECT a.rolsuper FROM pg_catalog.pg_roles a WHERE a.oid = o.owner), false)
	UNION ALL
	SELECT 'tablestore_move.' || c.relname || ': trigger or rule ' || coalesce(t.tgname, w.rulename)
	FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'tablestore_move'
		LEFT JOIN pg_catalog.pg_trigger t ON t.tgrelid = c.oid AND NOT t.tgisinternal
		LEFT JOIN pg_catalog.pg_rewrite w ON w.ev_class = c.oid
	WHERE t.oid IS NOT NULL OR w.oid IS NOT NULL
) x
$q$;
$$;

-- _move_undo: a move that has not switched the partition map, undone: the
-- subscription dropped on the target (with its slots on the source), the
-- publication on the source, the target's filter triggers and whatever of
-- the partition the target holds (it does not serve it: the source holds it
-- all).  Connections 'ts_move_src' and 'ts_move_tgt' are open.
CREATE OR REPLACE FUNCTION tablestore_router._move_undo(move bigint, part integer, mask integer) RETURNS void
	LANGUAGE plpgsql AS $$
DECLARE
	name text := 'ts_move_' || move;
	rel text;
	subid text := (SELECT * FROM tablestore_router._node_values('ts_move_tgt',
		format('SELECT oid::text FROM pg_catalog.pg_subscription WHERE subname = %L', name)));
	stmts text;
BEGIN
	PERFORM tablestore_router._node_exec('ts_move_tgt', format('DROP SUBSCRIPTION IF EXISTS %I', name));
	-- the subscription is gone: this session's lock on the target's tables
	-- (a failed run's) would only stop the undo's DROP TRIGGER
	PERFORM tablestore_router._move_unlock_target();
	PERFORM tablestore_router._move_drop_slots(move, subid);
	PERFORM tablestore_router._node_exec('ts_move_src', format('DROP PUBLICATION IF EXISTS %I', name));
	FOR rel IN SELECT * FROM tablestore_router._node_values('ts_move_tgt',
			format('SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE t.tgname = %L', name))
	LOOP
		PERFORM tablestore_router._node_exec('ts_move_tgt', format('DROP TRIGGER IF EXISTS %I ON tablestore_data.%I', name, rel));
	END LOOP;
	-- locked, checked, then deleted (_move_delete_sql: never an owner's code)
	stmts := (SELECT * FROM tablestore_router._node_values('ts_move_tgt', tablestore_router._move_delete_sql(mask, part)));
	IF stmts IS NOT NULL THEN
		PERFORM tablestore_router._node_exec('ts_move_tgt', stmts);
	END IF;
	PERFORM tablestore_router._node_exec('ts_move_tgt', format(
		'DO $d$BEGIN IF to_regclass(''tablestore_move.marker'') IS NOT NULL THEN DELETE FROM tablestore_move.marker WHERE id = %s; END IF; END$d$', move));
END $$;

-- move_partition: move partition part to the node target, online.
--   1. (prepare) every table of the source exists on the target, with the
--      source's owner, grants, policies and comment; its key index is the
--      replica identity on both; on the target, a trigger that only the
--      replication fires keeps the partition's rows and drops the others';
--   2. (copying) a publication of every table on the source and a
--      subscription on the target that copies them, then streams changes;
--      writes to the partition go on, on the source;
--   3. (catching up) wait for the copy of every table, then for the
--      target to be close behind the source;
--   4. (cutover) take the partition's lock (and that of "all partitions",
--      as lock_partition_for_move does: calls on this partition and calls
--      on every node wait); write a marker on the source and wait for the
--      target to apply it (so it has every write made before the lock);
--      drop the subscription; switch the partition map (this commit is the
--      move's decision: before it the source holds the partition, after it
--      the target); release; delete the partition's rows on the source
--      (a query over every node reads a partition on its node only);
--   5. (cleanup) drop the publication and the triggers; done.
-- Each step is recorded in tablestore_router.moves.  Run again after a
-- failure at any step, it completes the move: after the switch it finishes
-- the cleanup, before it it undoes what the interrupted run set up (the
-- source still holds the whole partition and serves it) and starts again.
CREATE OR REPLACE PROCEDURE tablestore_router.move_partition(part integer, target text, timeout interval DEFAULT '1 hour')
	LANGUAGE plpgsql AS $$
DECLARE
	m tablestore_router._moves;
	nparts integer;
	mask integer;
	src text;
	tgt text;
	cur text;
	name text;
	c text;
	rel text;
	tname text;
	rels text[] := '{}';
	stmts text;
	idx text;
	deadline timestamptz;
	n bigint;
	total bigint;
	lag bigint;
	token bigint;
	t0 timestamptz;
	t1 timestamptz;
	cut text;
	srcrows bigint;
	holder text;
	resumed boolean;
BEGIN
	IF NOT (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
		RAISE EXCEPTION 'only a superuser may move partitions' USING ERRCODE = 'insufficient_privilege';
	END IF;
	-- one live run of a move at a time, held for the whole run (a run of
	-- this session that failed left it: this run takes it over)
	IF NOT tablestore_router._move_session_lock(true) THEN
		holder := (SELECT string_agg(l.pid::text, ', ') FROM pg_catalog.pg_locks l
			WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
				AND l.classid = 1953722994 AND l.objid = 0 AND l.objsubid = 29811);
		RAISE EXCEPTION 'a move is running in another session (process %)', coalesce(holder, '?')
			USING ERRCODE = 'lock_not_available',
				DETAIL = 'Two live runs of a move would undo each other''s replication.',
				HINT = 'Wait for that run to end (tablestore_router.moves shows its step), or end that process (pg_terminate_backend) first.';
	END IF;
	SELECT count(*) INTO nparts FROM tablestore_router.partitions();
	IF part IS NULL OR part < 0 OR part >= nparts THEN
		RAISE EXCEPTION 'the cluster has no partition %', part USING ERRCODE = 'invalid_parameter_value';
	END IF;
	mask := nparts - 1;
	tgt := tablestore_router.node_string(target);
	IF NOT EXISTS (SELECT FROM tablestore_router.partitions() WHERE node = tgt) THEN
		-- a new node: the partition map must be able to hold it
		PERFORM tablestore_router._check_nodes(ARRAY[tgt]);
	END IF;
	SELECT * INTO m FROM tablestore_router._moves WHERE finished_at IS NULL;
	resumed := FOUND;
	IF resumed AND (m.partition <> part OR m.target <> tgt) THEN
		RAISE EXCEPTION 'partition % is being moved to %', m.partition, m.target
			USING ERRCODE = 'object_not_in_prerequisite_state',
				HINT = format('Complete that move first: CALL tablestore_router.move_partition(%s, %L).', m.partition, m.target);
	END IF;
	cur := (SELECT node FROM tablestore_router.partitions() WHERE partition = part);
	IF NOT resumed AND cur = tgt THEN
		RAISE NOTICE 'partition % is on % already', part, tgt;
		PERFORM tablestore_router._move_session_lock(false);
		RETURN;
	END IF;
	src := CASE WHEN resumed THEN m.source ELSE cur END;
	PERFORM tablestore_router._node_connect('ts_move_src', src);
	PERFORM tablestore_router._node_connect('ts_move_tgt', tgt);
	-- two strings for one database (a link, another host name, a port
	-- forward): the "target" is the source, refused before anything
	IF tablestore_router._node_identity('ts_move_src') = tablestore_router._node_identity('ts_move_tgt') THEN
		RAISE EXCEPTION 'the target % is the source % (the same database of the same server)', tgt, src
			USING ERRCODE = 'invalid_parameter_value',
				HINT = CASE WHEN resumed THEN 'Abandon that move: SELECT tablestore_router.abort_move();' ELSE 'Name another node.' END;
	END IF;
	-- a rerun of a move that has not switched first undoes what the
	-- interrupted run set up: its subscription, whose lock died with it, must
	-- not go on applying (as a superuser) while this run checks or waits
	PERFORM tablestore_router._move_unlock_target();
	IF resumed AND cur = src AND m.step <> 'started' THEN
		PERFORM tablestore_router._move_undo(m.id, part, mask);
	END IF;
	-- nothing of the tables' owners may run as the superuser (the replication's
	-- apply worker on the target, the mover's statements): refused before anything
	IF cur = src THEN
		PERFORM tablestore_router._move_check_owner_code('ts_move_src', src);
		PERFORM tablestore_router._move_check_owner_code('ts_move_tgt', tgt);
	END IF;
	IF NOT resumed THEN
		INSERT INTO tablestore_router._moves (partition, source, target, step)
			VALUES (part, cur, tgt, 'started') RETURNING * INTO m;
	ELSE
		UPDATE tablestore_router._moves SET attempts = attempts + 1, last_error = NULL WHERE id = m.id;
	END IF;
	COMMIT;
	name := 'ts_move_' || m.id;
	IF cur <> src AND cur <> tgt THEN
		RAISE EXCEPTION 'partition % is on %, neither the source nor the target of its unfinished move %', part, cur, m.id
			USING ERRCODE = 'object_not_in_prerequisite_state',
				HINT = 'The partition map was changed by hand during the move; mark the move finished in tablestore_router._moves once the partition is whole on its node.';
	END IF;

	IF cur = src THEN
		-- Before the switch: the source holds the whole partition.  Undo
		-- what an interrupted run left, then wait for the table operations
		-- in flight (they hold the lock of all partitions; those that start
		-- now see this move and refuse) and list the tables.
		PERFORM tablestore_router._move_step(m.id, 'prepare');
		COMMIT;
		PERFORM tablestore_router.lock_partition_for_move(part);
		PERFORM tablestore_router.unlock_partition_for_move(part);

		PERFORM tablestore_router._node_exec('ts_move_src', $s$
			CREATE SCHEMA IF NOT EXISTS tablestore_move;
			CREATE TABLE IF NOT EXISTS tablestore_move.marker (id bigint PRIMARY KEY, token bigint NOT NULL)$s$);
		PERFORM tablestore_router._node_exec('ts_move_tgt', $s$
			CREATE SCHEMA IF NOT EXISTS tablestore_move;
			CREATE TABLE IF NOT EXISTS tablestore_move.marker (id bigint PRIMARY KEY, token bigint NOT NULL);
			CREATE OR REPLACE FUNCTION tablestore_move.keep_partition() RETURNS trigger
				LANGUAGE plpgsql SET search_path = pg_catalog AS $f$
			BEGIN
				-- fired by the replication only: a row of the moving partition
				-- is applied, any other is not (the source's other partitions)
				IF TG_OP = 'DELETE' THEN
					IF (tablestore.partition_hash(OLD.pk) & TG_ARGV[0]::integer) = TG_ARGV[1]::integer THEN
						RETURN OLD;
					END IF;
				ELSIF (tablestore.partition_hash(NEW.pk) & TG_ARGV[0]::integer) = TG_ARGV[1]::integer THEN
					RETURN NEW;
				END IF;
				RETURN NULL;
			END $f$ $s$);
		FOR rel, tname IN SELECT split_part(v, '/', 1), substr(v, strpos(v, '/') + 1)
			FROM tablestore_router._node_values('ts_move_src', 'SELECT relation_name || ''/'' || table_name FROM tablestore.tables ORDER BY 1') v
		LOOP
			rels := rels || rel;
			PERFORM * FROM tablestore_router._node_values('ts_move_tgt', format('SELECT tablestore.create_table_if_absent(%L)::text', tname));
			stmts := (SELECT * FROM tablestore_router._node_values('ts_move_tgt', tablestore_router._move_target_reset_sql(rel)));
			IF stmts IS NOT NULL THEN
				PERFORM tablestore_router._node_exec('ts_move_tgt', stmts);
			END IF;
			stmts := (SELECT * FROM tablestore_router._node_values('ts_move_src', tablestore_router._move_table_sql(rel)));
			IF stmts IS NOT NULL THEN
				PERFORM tablestore_router._node_exec('ts_move_tgt', stmts);
			END IF;
			-- the key index identifies a row in the replication's updates and deletes
			FOREACH c IN ARRAY ARRAY['ts_move_src', 'ts_move_tgt'] LOOP
				idx := (SELECT * FROM tablestore_router._node_values(c, format(
					'SELECT i.indexrelid::regclass::text FROM pg_index i WHERE i.indrelid = %L::regclass AND i.indisunique AND i.indnatts = 2 ORDER BY i.indisreplident DESC LIMIT 1',
					'tablestore_data.' || quote_ident(rel))));
				PERFORM tablestore_router._node_exec(c, format('ALTER TABLE tablestore_data.%I REPLICA IDENTITY USING INDEX %s',
					rel, (SELECT quote_ident(v) FROM pg_catalog.parse_ident(idx) AS p(a), unnest(p.a) WITH ORDINALITY AS u(v, o) ORDER BY o DESC LIMIT 1)));
			END LOOP;
			PERFORM tablestore_router._node_exec('ts_move_tgt', format(
				'CREATE TRIGGER %I BEFORE INSERT OR UPDATE OR DELETE ON tablestore_data.%I FOR EACH ROW EXECUTE FUNCTION tablestore_move.keep_partition(%s, %s);
				 ALTER TABLE tablestore_data.%I ENABLE REPLICA TRIGGER %I', name, rel, mask, part, rel, name));
		END LOOP;

		-- the target's tables locked against DDL that adds code until the
		-- cutover is done, and checked again under the lock
		PERFORM tablestore_router._move_pause('prepared');
		PERFORM tablestore_router._move_lock_target(tgt, rels);
		-- and the filter of every table there, as made, under that lock: a
		-- filter dropped or enabled otherwise before it would let the copy
		-- write the source's other partitions
		IF (SELECT count(*) FROM tablestore_router._node_values('ts_move_lock', format(
				'SELECT c.relname FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
				 WHERE t.tgname = %L AND t.tgenabled = ''R'' AND t.tgfoid = pg_catalog.to_regprocedure(''tablestore_move.keep_partition()'')
				   AND c.relnamespace = ''tablestore_data''::regnamespace AND c.relname = ANY (%L::text[])', name, rels))) <> cardinality(rels) THEN
			RAISE EXCEPTION 'partition %: a table''s filter on % was dropped or changed before the move locked it', part, tgt
				USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'Run the move again.';
		END IF;

		-- the publication and the subscription that copies, then streams
		PERFORM tablestore_router._node_exec('ts_move_src', format(
			'CREATE PUBLICATION %I FOR TABLE %s WITH (publish = ''insert, update, delete'')', name,
			(SELECT string_agg('tablestore_data.' || quote_ident(r), ', ') FROM unnest(rels) r) ||
			CASE WHEN cardinality(rels) > 0 THEN ', ' ELSE '' END || 'tablestore_move.marker'));
		PERFORM tablestore_router._node_exec('ts_move_tgt', format(
			'CREATE SUBSCRIPTION %I CONNECTION %L PUBLICATION %I WITH (copy_data = true)', name,
			src || ' user=''' || replace(replace(current_user, '\', '\\'), '''', '\''') || '''', name));
		PERFORM tablestore_router._move_step(m.id, 'copying', format('0 of %s tables copied', cardinality(rels) + 1));
		COMMIT;
		PERFORM tablestore_router._move_pause('copying');

		-- wait for the copy of every table, then for the lag to fall
		deadline := clock_timestamp() + timeout;
		LOOP
			SELECT count(*) FILTER (WHERE v = 'r'), count(*) INTO n, total
			FROM tablestore_router._move_poll(name, tgt, cardinality(rels), 'ts_move_tgt', format(
				'SELECT r.srsubstate FROM pg_subscription_rel r JOIN pg_subscription s ON s.oid = r.srsubid WHERE s.subname = %L', name),
				CASE WHEN n IS NULL THEN 0 ELSE 0.1 END) v;
			PERFORM tablestore_router._move_step(m.id, 'copying', format('%s of %s tables copied', n, total));
			COMMIT;
			EXIT WHEN total > 0 AND n = total;
			IF clock_timestamp() > deadline THEN
				PERFORM tablestore_router._move_stop_subscription(name, tgt);
				RAISE EXCEPTION 'partition %: the copy did not finish within %', part, timeout
					USING ERRCODE = 'query_canceled', HINT = 'Run the move again to continue it.';
			END IF;
		END LOOP;
		LOOP
			lag := (SELECT * FROM tablestore_router._move_poll(name, tgt, cardinality(rels), 'ts_move_src', format(
				'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint FROM pg_replication_slots WHERE slot_name = %L', name), 0.1));
			UPDATE tablestore_router._moves SET lag_bytes = lag WHERE id = m.id;
			PERFORM tablestore_router._move_step(m.id, 'catching up', format('%s bytes behind', lag));
			COMMIT;
			EXIT WHEN lag IS NOT NULL AND lag < 16 * 1024 * 1024;
			IF clock_timestamp() > deadline THEN
				PERFORM tablestore_router._move_stop_subscription(name, tgt);
				RAISE EXCEPTION 'partition %: the target did not catch up within %', part, timeout
					USING ERRCODE = 'query_canceled', HINT = 'Run the move again to continue it.';
			END IF;
		END LOOP;
		-- then the target applies a marker written now, before the lock: the
		-- marker the cutover waits for under the lock then follows only the
		-- writes of the last moment (the slot's confirmed position, above,
		-- lags the apply)
		token := (SELECT * FROM tablestore_router._move_poll(name, tgt, cardinality(rels), 'ts_move_src', format(
			'INSERT INTO tablestore_move.marker VALUES (%s, 1) ON CONFLICT (id) DO UPDATE SET token = marker.token + 1 RETURNING token', m.id), 0))::bigint;
		WHILE (SELECT * FROM tablestore_router._move_poll(name, tgt, cardinality(rels), 'ts_move_tgt', format(
				'SELECT token FROM tablestore_move.marker WHERE id = %s', m.id), 0.01))::bigint IS DISTINCT FROM token LOOP
			IF clock_timestamp() > deadline THEN
				PERFORM tablestore_router._move_stop_subscription(name, tgt);
				RAISE EXCEPTION 'partition %: the target did not catch up within %', part, timeout
					USING ERRCODE = 'query_canceled', HINT = 'Run the move again to continue it.';
			END IF;
		END LOOP;
		PERFORM tablestore_router._move_step(m.id, 'cutover');
		COMMIT;
		PERFORM tablestore_router._move_pause('cutover');

		-- the cutover, under the partition's lock
		PERFORM tablestore_router.lock_partition_for_move(part);
		t0 := clock_timestamp();
		BEGIN
			PERFORM tablestore_router._move_pause('locked');
			token := (SELECT * FROM tablestore_router._node_values('ts_move_src', format(
				'INSERT INTO tablestore_move.marker VALUES (%s, 1) ON CONFLICT (id) DO UPDATE SET token = marker.token + 1 RETURNING token', m.id)))::bigint;
			deadline := clock_timestamp() + least(timeout, interval '60 s');
			WHILE (SELECT * FROM tablestore_router._node_values('ts_move_tgt', format(
					'SELECT token FROM tablestore_move.marker WHERE id = %s', m.id)))::bigint IS DISTINCT FROM token LOOP
				IF clock_timestamp() > deadline THEN
					RAISE EXCEPTION 'partition %: the target did not apply the source''s last writes within %', part, least(timeout, interval '60 s')
						USING ERRCODE = 'query_canceled', HINT = 'Run the move again to continue it.';
				END IF;
				PERFORM pg_catalog.pg_sleep(0.001);
			END LOOP;
			t1 := clock_timestamp();
			cut := format('cutover: marker %s ms', round(extract(epoch FROM t1 - t0) * 1000));
			-- this run's subscription copied every table (another run's could
			-- have replaced it), and the target holds every row of the
			-- partition that the source holds (writes wait for the lock)
			SELECT count(*) FILTER (WHERE v IN ('r', 's')), count(*) INTO n, total
			FROM tablestore_router._node_values('ts_move_tgt', format(
				'SELECT r.srsubstate FROM pg_subscription_rel r JOIN pg_subscription s ON s.oid = r.srsubid WHERE s.subname = %L', name)) v;
			IF n <> cardinality(rels) + 1 OR total <> n THEN
				RAISE EXCEPTION 'partition %: % of the % tables of the move''s subscription are copied at the cutover', part, n, cardinality(rels) + 1
					USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'Run the move again to continue it.';
			END IF;
			t1 := clock_timestamp();
			SELECT c.src, c.tgt INTO srcrows, n FROM tablestore_router._move_count_both(mask, part) c;
			cut := cut || format(', counts %s ms', round(extract(epoch FROM clock_timestamp() - t1) * 1000));
			IF n IS DISTINCT FROM srcrows THEN
				RAISE EXCEPTION 'partition %: the target holds % of the source''s % entities at the cutover', part, n, srcrows
					USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'Run the move again to continue it.';
			END IF;
			-- defence in depth: the lock is still held, and the target's
			-- tables still run no owner code
			PERFORM tablestore_router._move_check_lock(name, tgt, cardinality(rels));
			PERFORM tablestore_router._move_check_owner_code('ts_move_tgt', tgt);
			t1 := clock_timestamp();
			PERFORM tablestore_router._node_exec('ts_move_tgt', format('DROP SUBSCRIPTION %I', name));
			cut := cut || format(', drop subscription %s ms', round(extract(epoch FROM clock_timestamp() - t1) * 1000));
		EXCEPTION WHEN OTHERS OR query_canceled THEN
			PERFORM tablestore_router._move_stop_subscription(name, tgt);
			PERFORM tablestore_router.unlock_partition_for_move(part);
			RAISE;
		END;
		-- the decision: from this commit on the target holds the partition
		PERFORM tablestore_router._move_step(m.id, 'switched');
		EXECUTE format('ALTER SERVER tablestore_cluster OPTIONS (SET %I %L)', 'p' || part, tgt);
		UPDATE tablestore_router._moves SET rows_moved = srcrows WHERE id = m.id;
		COMMIT;
	END IF;

	-- after the switch: the partition's lock released first (the cutover's
	-- pause ends here; the target serves the partition, and a query over
	-- every node drops the rows a node returns of partitions the map gives
	-- another node, so the source's old copy is never read), then the
	-- source's copy deleted and the replication objects dropped
	IF t0 IS NOT NULL THEN
		PERFORM tablestore_router.unlock_partition_for_move(part);
		UPDATE tablestore_router._moves SET cutover_ms = round(extract(epoch FROM clock_timestamp() - t0) * 1000, 1) WHERE id = m.id;
		COMMIT;
	END IF;
	PERFORM tablestore_router._node_exec('ts_move_tgt', format('DROP SUBSCRIPTION IF EXISTS %I', name));
	-- locked, checked, then deleted (_move_delete_sql: never an owner's code)
	stmts := (SELECT * FROM tablestore_router._node_values('ts_move_src', tablestore_router._move_delete_sql(mask, part)));
	IF stmts IS NOT NULL THEN
		PERFORM tablestore_router._node_exec('ts_move_src', stmts);
	END IF;
	PERFORM tablestore_router._move_step(m.id, 'cleanup');
	COMMIT;
	-- no subscription: the lock on the target's tables is no longer needed
	PERFORM tablestore_router._move_unlock_target();
	PERFORM tablestore_router._node_exec('ts_move_src', format('DROP PUBLICATION IF EXISTS %I', name));
	PERFORM tablestore_router._move_drop_slots(m.id, NULL);
	FOR rel IN SELECT * FROM tablestore_router._node_values('ts_move_tgt',
			format('SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE t.tgname = %L', name))
	LOOP
		PERFORM tablestore_router._node_exec('ts_move_tgt', format('DROP TRIGGER IF EXISTS %I ON tablestore_data.%I', name, rel));
	END LOOP;
	FOREACH c IN ARRAY ARRAY['ts_move_src', 'ts_move_tgt'] LOOP
		PERFORM tablestore_router._node_exec(c, format(
			'DO $d$BEGIN IF to_regclass(''tablestore_move.marker'') IS NOT NULL THEN DELETE FROM tablestore_move.marker WHERE id = %s; END IF; END$d$', m.id));
	END LOOP;
	-- rows_moved: the partition's entities the source held at the cutover
	-- (recorded at the switch; the target's count if a rerun finishes it)
	UPDATE tablestore_router._moves SET step = 'done', detail = cut, step_at = clock_timestamp(),
		finished_at = clock_timestamp(),
		rows_moved = coalesce(rows_moved, tablestore_router._move_count('ts_move_tgt', mask, part))
	WHERE id = m.id AND finished_at IS NULL;
	COMMIT;
	PERFORM tablestore_router._move_session_lock(false);
END $$;

REVOKE ALL ON FUNCTION tablestore_router._move_lock_target(text, text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION tablestore_router._move_check_lock(text, text, integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION tablestore_router._move_unlock_target() FROM PUBLIC;

REVOKE ALL ON FUNCTION tablestore_router._move_count_both(integer, integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION tablestore_router._move_stop_subscription(text, text) FROM PUBLIC;

REVOKE ALL ON FUNCTION tablestore_router._move_poll(text, text, integer, text, text, float8) FROM PUBLIC;

-- ---- end of issue 23, the move's lock on the target (move2) ----

-- ---- issue 23, after the outside attack on the move's lock (move3): a
-- whitelist of what a moved table may have, deletes as the superuser with
-- the tables locked and checked in the same transaction, the filters
-- checked under the target's lock, connections with search_path pg_catalog ----
CREATE OR REPLACE FUNCTION tablestore_router._node_connect(conn text, node text) RETURNS void
	LANGUAGE plpgsql AS $$
DECLARE
	s text := (SELECT n.nspname FROM pg_catalog.pg_extension e
		JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'dblink');
	open text[];
BEGIN
	IF s IS NULL THEN
		RAISE EXCEPTION 'moving partitions needs extension dblink in the router database'
			USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'CREATE EXTENSION dblink;';
	END IF;
	EXECUTE format('SELECT %I.dblink_get_connections()', s) INTO open;
	IF conn = ANY (open) THEN
		EXECUTE format('SELECT %I.dblink_disconnect($1)', s) USING conn;
	END IF;
	EXECUTE format('SELECT %I.dblink_connect($1, $2)', s)
		USING conn, node || ' user=''' || replace(replace(current_user, '\', '\\'), '''', '\''') || '''';
	-- names resolve in the catalog only, whatever the node's defaults: the
	-- checks compare definitions as printed (_move_owner_code_sql)
	EXECUTE format('SELECT %I.dblink_exec($1, $2)', s)
		USING conn, 'SET search_path = pg_catalog, pg_temp';
END $$;

CREATE OR REPLACE FUNCTION tablestore_router._move_delete_sql(mask integer, part integer) RETURNS text
	LANGUAGE sql IMMUTABLE AS $$
SELECT format($q$
SELECT 'DO $d$DECLARE bad text; BEGIN '
	|| string_agg(format('LOCK TABLE tablestore_data.%%I IN SHARE UPDATE EXCLUSIVE MODE; ', c.relname), '' ORDER BY c.relname)
	|| 'EXECUTE ' || pg_catalog.quote_literal(%3$L) || ' INTO bad; '
	|| 'IF bad IS NOT NULL THEN RAISE EXCEPTION ''tables are not as create_table made them: %%'', bad '
	|| 'USING ERRCODE = ''object_not_in_prerequisite_state'', HINT = ''Drop those objects, then run the move (or abort_move) again.''; END IF; '
	|| string_agg(format('DELETE FROM tablestore_data.%%I WHERE (tablestore.partition_hash(pk) & %1$s) = %2$s; ', c.relname), '' ORDER BY c.relname)
	|| 'END$d$'
FROM tablestore.tables t JOIN pg_catalog.pg_class c ON c.oid = pg_catalog.to_regclass('tablestore_data.' || pg_catalog.quote_ident(t.relation_name))
$q$, mask, part, tablestore_router._move_owner_code_sql());
$$;
-- ---- end of move3 ----
