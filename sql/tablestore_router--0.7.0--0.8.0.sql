-- tablestore_router 0.7.0 -> 0.8.0

\echo Use "ALTER EXTENSION tablestore_router UPDATE TO '0.8.0'" to load this file. \quit

-- ---- issue 23 A3: a cleanup that a table's owner can refuse after the
-- switch (or in abort_move) no longer keeps the move unfinished: the rows
-- are recorded in tablestore_router.leftovers (removed by a move of the
-- partition back to that node first, or by clean_leftovers); dblink's
-- schema found by one helper.  Every statement the mover sends to a node
-- waits for locks at most lock_timeout (_node_connect); a filter trigger
-- a lock keeps after the switch or in abort_move is recorded
-- (_left_triggers) and dropped by the next move to that node or by
-- clean_leftovers; the leftovers are superuser-only ----
-- _dblink_schema: the schema of extension dblink in the router database
-- (where the administrator created it), NULL without it; the mover's
-- calls of dblink name it so, whatever the session's search_path
CREATE FUNCTION tablestore_router._dblink_schema() RETURNS text
	LANGUAGE sql STABLE AS $$
	SELECT n.nspname::text FROM pg_catalog.pg_extension e
		JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'dblink';
$$;
REVOKE ALL ON FUNCTION tablestore_router._dblink_schema() FROM PUBLIC;

-- _lock_timeout: how long each statement the mover sends to a node waits
-- for its locks: the router session's lock_timeout, 60 s when it is unset
CREATE FUNCTION tablestore_router._lock_timeout() RETURNS text
	LANGUAGE sql STABLE AS $$
	SELECT CASE WHEN pg_catalog.current_setting('lock_timeout') IN ('0', '0ms') THEN '60s'
		ELSE pg_catalog.current_setting('lock_timeout') END;
$$;
REVOKE ALL ON FUNCTION tablestore_router._lock_timeout() FROM PUBLIC;

-- _node_connect: open (again) the router session's dblink connection conn
-- to a node, as the calling role (the node string names no role).
CREATE OR REPLACE FUNCTION tablestore_router._node_connect(conn text, node text) RETURNS void
	LANGUAGE plpgsql AS $$
DECLARE
	s text := tablestore_router._dblink_schema();
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
	-- checks compare definitions as printed (_move_owner_code_sql).  Every
	-- statement sent on it waits for its locks at most lock_timeout: an
	-- open transaction of anyone who can read a table there must not hold
	-- the mover (and with it every move, create_table and delete_table of
	-- the cluster) for ever; each caller handles the timeout
	EXECUTE format('SELECT %I.dblink_exec($1, $2)', s)
		USING conn, format('SET search_path = pg_catalog, pg_temp; SET lock_timeout = %L',
			tablestore_router._lock_timeout());
END $$;

-- _node_exec: run a command (or several, one transaction) on a node
CREATE OR REPLACE FUNCTION tablestore_router._node_exec(conn text, command text) RETURNS void
	LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('SELECT %I.dblink_exec($1, $2, true)',
		tablestore_router._dblink_schema())
		USING conn, command;
END $$;

-- _node_values: the first column of a query's rows on a node, as text
CREATE OR REPLACE FUNCTION tablestore_router._node_values(conn text, query text) RETURNS SETOF text
	LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE format('SELECT v FROM %I.dblink($1, $2, true) AS t(v text)',
		tablestore_router._dblink_schema())
		USING conn, query;
END $$;

-- _move_undo: a move that has not switched the partition map, undone: the
-- subscription dropped on the target (with its slots on the source), the
-- publication on the source, the target's filter triggers and whatever of
-- the partition the target holds (it does not serve it: the source holds it
-- all).  Connections 'ts_move_src' and 'ts_move_tgt' are open.
CREATE OR REPLACE FUNCTION tablestore_router._move_undo(move bigint, part integer, mask integer) RETURNS void
	LANGUAGE plpgsql AS $$
DECLARE
	name text := 'ts_move_' || move;
	subid text := (SELECT * FROM tablestore_router._node_values('ts_move_tgt',
		format('SELECT oid::text FROM pg_catalog.pg_subscription WHERE subname = %L', name)));
BEGIN
	PERFORM tablestore_router._node_exec('ts_move_tgt', format('DROP SUBSCRIPTION IF EXISTS %I', name));
	-- the subscription is gone: this session's lock on the target's tables
	-- (a failed run's) would only stop the undo's DROP TRIGGER
	PERFORM tablestore_router._move_unlock_target();
	PERFORM tablestore_router._move_drop_slots(move, subid);
	PERFORM tablestore_router._node_exec('ts_move_src', format('DROP PUBLICATION IF EXISTS %I', name));
	-- a filter that a lock keeps is recorded (_move_drop_filters)
	PERFORM tablestore_router._move_drop_filters('ts_move_tgt', (SELECT x.target FROM tablestore_router._moves x WHERE x.id = move), move);
	-- locked, checked, then deleted (_move_delete_sql: never an owner's
	-- code); if an owner's code or lock there refuses it, the partial copy
	-- is recorded as left (the target does not serve the partition, a move
	-- to it removes the rows first) rather than keeping the move unfinished
	PERFORM tablestore_router._move_leftover((SELECT x.target FROM tablestore_router._moves x WHERE x.id = move), mask, part, move,
		tablestore_router._move_delete_rows('ts_move_tgt', mask, part));
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
	leftwhy text;
	trigwhy text;
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
		-- rows of the partition an earlier move left on the target are
		-- stale: deleted before the target gets it, or the move is refused
		PERFORM tablestore_router._move_remove_leftovers('ts_move_tgt', tgt, mask, part);
		-- an earlier move's slot left on either node (not in use) holds its
		-- WAL for ever: dropped; no other move runs, and a rerun's undo
		-- dropped this one's
		FOREACH c IN ARRAY ARRAY['ts_move_src', 'ts_move_tgt'] LOOP
			PERFORM * FROM tablestore_router._node_values(c,
				'SELECT pg_catalog.pg_drop_replication_slot(slot_name)::text FROM pg_catalog.pg_replication_slots WHERE NOT active AND slot_name ~ ''^ts_move_[0-9]+$''');
		END LOOP;
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
		-- its slot on the source made here, over the mover's connection: it
		-- waits for every transaction there that holds an xid (the decoding's
		-- first snapshot), anyone's, and so at most lock_timeout (and as long
		-- a statement_timeout); CREATE SUBSCRIPTION would make it in the
		-- source's walsender, which waits for ever, and a slot it finished
		-- after an abort_move was left for ever.  A timeout fails the move
		-- (rerun or abort_move); a slot not finished is dropped by the server
		PERFORM tablestore_router._node_exec('ts_move_src', format('SET statement_timeout = %L', tablestore_router._lock_timeout()));
		PERFORM * FROM tablestore_router._node_values('ts_move_src', format(
			'SELECT pg_catalog.pg_create_logical_replication_slot(%L, ''pgoutput'')::text', name));
		PERFORM tablestore_router._node_exec('ts_move_src', 'RESET statement_timeout');
		PERFORM tablestore_router._node_exec('ts_move_tgt', format(
			'CREATE SUBSCRIPTION %I CONNECTION %L PUBLICATION %I WITH (copy_data = true, create_slot = false, slot_name = %I)', name,
			src || ' user=''' || replace(replace(current_user, '\', '\\'), '''', '\''') || '''', name, name));
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
	-- locked, checked, then deleted (_move_delete_sql: never an owner's
	-- code).  If that cannot be (a table's owner added code there, or holds
	-- a lock), the rows are recorded as left (tablestore_router.leftovers)
	-- and the move goes on: the target serves the partition and the router
	-- ignores the source's copy, and a cleanup that an owner can refuse
	-- must not keep the move, and with it every other move and table
	-- operation, unfinished
	leftwhy := tablestore_router._move_delete_rows('ts_move_src', mask, part);
	PERFORM tablestore_router._move_leftover(src, mask, part, m.id, leftwhy);
	PERFORM tablestore_router._move_step(m.id, 'cleanup');
	COMMIT;
	-- no subscription: the lock on the target's tables is no longer needed
	PERFORM tablestore_router._move_unlock_target();
	PERFORM tablestore_router._node_exec('ts_move_src', format('DROP PUBLICATION IF EXISTS %I', name));
	PERFORM tablestore_router._move_drop_slots(m.id, NULL);
	-- a filter that a lock keeps (it waits lock_timeout) is recorded and the
	-- move ends: a move to that node drops it first
	trigwhy := tablestore_router._move_drop_filters('ts_move_tgt', tgt, m.id);
	FOREACH c IN ARRAY ARRAY['ts_move_src', 'ts_move_tgt'] LOOP
		PERFORM tablestore_router._node_exec(c, format(
			'DO $d$BEGIN IF to_regclass(''tablestore_move.marker'') IS NOT NULL THEN DELETE FROM tablestore_move.marker WHERE id = %s; END IF; END$d$', m.id));
	END LOOP;
	-- rows_moved: the partition's entities the source held at the cutover
	-- (recorded at the switch; the target's count if a rerun finishes it)
	UPDATE tablestore_router._moves SET step = 'done', step_at = clock_timestamp(),
		detail = concat_ws('; ', cut,
			CASE WHEN leftwhy IS NOT NULL THEN 'the source''s rows are left (tablestore_router.leftovers)' END,
			CASE WHEN trigwhy IS NOT NULL THEN 'a filter trigger on the target is left (tablestore_router.leftovers)' END),
		finished_at = clock_timestamp(),
		rows_moved = coalesce(rows_moved, tablestore_router._move_count('ts_move_tgt', mask, part))
	WHERE id = m.id AND finished_at IS NULL;
	COMMIT;
	PERFORM tablestore_router._move_session_lock(false);
END $$;

-- abort_move: the unfinished move abandoned, if it has not switched the
-- partition map (the source still holds the whole partition): its
-- subscription, publication, slots (which keep the source's WAL), filter
-- triggers and the target's partial copy removed, on the nodes reachable
-- (the source must be; a lost target is skipped), and the move marked
-- 'aborted'.  Returns what it did.  Superuser only.
CREATE OR REPLACE FUNCTION tablestore_router.abort_move() RETURNS text
	LANGUAGE plpgsql AS $$
DECLARE
	m tablestore_router._moves;
	nparts integer := (SELECT count(*) FROM tablestore_router.partitions());
	cur text;
	tgt_up boolean := true;
	did text[] := '{}';
BEGIN
	IF NOT (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
		RAISE EXCEPTION 'only a superuser may abort moves' USING ERRCODE = 'insufficient_privilege';
	END IF;
	IF NOT tablestore_router._move_session_lock(true) THEN
		RAISE EXCEPTION 'a move is running in another session'
			USING ERRCODE = 'lock_not_available', HINT = 'End that process (pg_terminate_backend) first.';
	END IF;
	SELECT * INTO m FROM tablestore_router._moves WHERE finished_at IS NULL FOR UPDATE;
	IF NOT FOUND THEN
		PERFORM tablestore_router._move_session_lock(false);
		RETURN 'no unfinished move';
	END IF;
	cur := (SELECT node FROM tablestore_router.partitions() WHERE partition = m.partition);
	IF cur IS DISTINCT FROM m.source THEN
		RAISE EXCEPTION 'move % of partition % has switched it to % already', m.id, m.partition, cur
			USING ERRCODE = 'object_not_in_prerequisite_state',
				HINT = format('Complete it: CALL tablestore_router.move_partition(%s, %L).', m.partition, m.target);
	END IF;
	PERFORM tablestore_router._node_connect('ts_move_src', m.source);
	BEGIN
		PERFORM tablestore_router._node_connect('ts_move_tgt', m.target);
	EXCEPTION WHEN OTHERS THEN
		tgt_up := false;
		did := did || format('target %s unreachable (%s): its subscription, if any, is left', m.target, SQLERRM);
	END;
	IF tgt_up AND tablestore_router._node_identity('ts_move_src') = tablestore_router._node_identity('ts_move_tgt') THEN
		-- the target is the source: never delete "the target's copy"
		tgt_up := false;
		did := did || 'the target is the source: nothing deleted there'::text;
	END IF;
	IF tgt_up THEN
		PERFORM tablestore_router._move_undo(m.id, m.partition, nparts - 1);
		did := did || format('dropped subscription ts_move_%s and the filter triggers on %s', m.id, m.target)
			|| coalesce((SELECT 'the partial copy there is left (tablestore_router.leftovers)'
				FROM tablestore_router._leftovers l WHERE l.node = m.target AND l.mask = nparts - 1 AND l.partition = m.partition AND l.move = m.id),
				format('deleted the partial copy on %s', m.target));
	ELSE
		-- the filter triggers: the source's own tables (a move to itself)
		PERFORM tablestore_router._move_drop_filters('ts_move_src', m.source, m.id);
	END IF;
	did := did || (SELECT format('filter triggers left (tablestore_router.leftovers): %s', string_agg(format('%I on %s', l.trigger, l.node), ', '))
		FROM tablestore_router._left_triggers l WHERE l.move = m.id HAVING count(*) > 0);
	PERFORM tablestore_router._move_drop_slots(m.id, NULL);
	PERFORM tablestore_router._node_exec('ts_move_src', format('DROP PUBLICATION IF EXISTS %I', 'ts_move_' || m.id));
	did := did || format('dropped publication and inactive slot ts_move_%s on %s', m.id, m.source);
	did := did || coalesce((SELECT 'slots left on the source: ' || string_agg(v, ', ')
		FROM tablestore_router._node_values('ts_move_src',
			'SELECT slot_name::text FROM pg_catalog.pg_replication_slots WHERE slot_name LIKE ''ts\_move\_%'' OR slot_name LIKE ''pg\_%\_sync\_%''') v),
		'no move slot left on the source');
	UPDATE tablestore_router._moves SET step = 'aborted', detail = array_to_string(did, '; '), step_at = clock_timestamp(),
		finished_at = clock_timestamp(), last_error = 'aborted by abort_move' WHERE id = m.id;
	PERFORM tablestore_router._move_session_lock(false);
	RETURN format('move %s of partition %s aborted: %s', m.id, m.partition, array_to_string(did, '; '));
END $$;

-- _move_unlock_target: the lock of _move_lock_target released (its
-- connection closed, which ends the transaction), if this session holds it
CREATE OR REPLACE FUNCTION tablestore_router._move_unlock_target() RETURNS void
	LANGUAGE plpgsql AS $$
DECLARE
	s text := tablestore_router._dblink_schema();
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

-- _move_count_both: _move_count of the source and of the target, the two
-- scans run at once (they are most of the cutover's pause with a large
-- partition)
CREATE OR REPLACE FUNCTION tablestore_router._move_count_both(mask integer, part integer, OUT src bigint, OUT tgt bigint)
	LANGUAGE plpgsql AS $$
DECLARE
	s text := tablestore_router._dblink_schema();
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

-- Rows of a partition left on a node that does not serve it: the router
-- ignores them (a query over every node drops the rows a node returns of
-- partitions the map gives another node), rebalance_plan does not count
-- them.  mask is the partition map's (partitions - 1) when recorded.
CREATE TABLE tablestore_router._leftovers (
	node text NOT NULL,
	partition integer NOT NULL,
	mask integer NOT NULL,
	move bigint NOT NULL,
	reason text NOT NULL,
	recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	PRIMARY KEY (node, mask, partition)
);
COMMENT ON TABLE tablestore_router._leftovers IS 'rows of a partition that a move could not delete on a node that no longer serves it';

-- A move's filter trigger (ts_move_N, ENABLE REPLICA) that it could not
-- drop on a node (a lock there outlasted lock_timeout): it does nothing
-- without the move's subscription, but it would filter a later move's
-- copy into that table, so a move to the node drops it first (or is
-- refused naming it); clean_leftovers drops it too.
CREATE TABLE tablestore_router._left_triggers (
	node text NOT NULL,
	relation text NOT NULL,
	trigger text NOT NULL,
	move bigint NOT NULL,
	reason text NOT NULL,
	recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	PRIMARY KEY (node, relation, trigger)
);
COMMENT ON TABLE tablestore_router._left_triggers IS 'filter triggers of finished moves that could not be dropped on a node';

-- superuser only (no grant): the reasons name other tenants' tables and
-- objects
CREATE VIEW tablestore_router.leftovers AS
	SELECT node, partition, mask + 1 AS partitions, move, 'rows'::text AS object, reason, recorded_at
	FROM tablestore_router._leftovers
	UNION ALL
	SELECT node, NULL, NULL, move, format('trigger %I on tablestore_data.%I', trigger, relation), reason, recorded_at
	FROM tablestore_router._left_triggers;
COMMENT ON VIEW tablestore_router.leftovers IS 'rows of a partition, and filter triggers, a move left on a node that does not serve them (ignored by the router; removed by a move to that node or by clean_leftovers)';
REVOKE ALL ON tablestore_router._leftovers, tablestore_router._left_triggers, tablestore_router.leftovers FROM PUBLIC;

-- _drop_filter: the filter trigger trig of table rel dropped on a node
-- (connection conn), if both are still there; it waits for the table's
-- lock at most lock_timeout (_node_connect) and raises if it cannot
CREATE FUNCTION tablestore_router._drop_filter(conn text, trig text, rel text) RETURNS void
	LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT FROM tablestore_router._node_values(conn, format(
			'SELECT 1 FROM pg_catalog.pg_trigger WHERE tgname = %L AND tgrelid = pg_catalog.to_regclass(%L)',
			trig, 'tablestore_data.' || quote_ident(rel)))) THEN
		PERFORM tablestore_router._node_exec(conn, format('DROP TRIGGER IF EXISTS %I ON tablestore_data.%I', trig, rel));
	END IF;
END $$;
REVOKE ALL ON FUNCTION tablestore_router._drop_filter(text, text, text) FROM PUBLIC;

-- _move_drop_filters: the filter triggers of move dropped on node
-- (connection conn); one that cannot be (a lock held there past
-- lock_timeout, a lost node) is recorded in _left_triggers rather than
-- keeping the move, and every move and table operation with it,
-- unfinished.  NULL when all are dropped, else why not.
CREATE FUNCTION tablestore_router._move_drop_filters(conn text, node text, move bigint) RETURNS text
	LANGUAGE plpgsql AS $$
DECLARE
	trig text := 'ts_move_' || move;
	rel text;
	errs text[] := '{}';
BEGIN
	FOR rel IN SELECT * FROM tablestore_router._node_values(conn, format(
			'SELECT c.relname FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
			 WHERE t.tgname = %L AND c.relnamespace = ''tablestore_data''::pg_catalog.regnamespace', trig))
	LOOP
		BEGIN
			PERFORM tablestore_router._drop_filter(conn, trig, rel);
			DELETE FROM tablestore_router._left_triggers l WHERE l.node = $2 AND l.relation = rel AND l.trigger = trig;
		EXCEPTION WHEN OTHERS THEN
			INSERT INTO tablestore_router._left_triggers AS l (node, relation, trigger, move, reason)
				VALUES ($2, rel, trig, $3, SQLERRM)
				ON CONFLICT ON CONSTRAINT _left_triggers_pkey
				DO UPDATE SET move = excluded.move, reason = excluded.reason, recorded_at = clock_timestamp();
			errs := errs || format('trigger %I on tablestore_data.%I: %s', trig, rel, SQLERRM);
			RAISE WARNING 'the filter trigger % on tablestore_data.% on % is left (tablestore_router.leftovers): %', trig, rel, $2, SQLERRM
				USING HINT = 'A move to that node drops it first; or end what holds the lock, then SELECT * FROM tablestore_router.clean_leftovers();';
		END;
	END LOOP;
	RETURN nullif(array_to_string(errs, '; '), '');
END $$;
REVOKE ALL ON FUNCTION tablestore_router._move_drop_filters(text, text, bigint) FROM PUBLIC;

-- _move_delete_rows: the rows of partition part (of mask + 1) of every
-- entity relation on a node deleted through connection conn, as
-- _move_delete_sql does it (locked, checked against the whitelist under
-- the lock, deleted as the superuser), waiting for the locks at most
-- lock_timeout (60 s when unset: an owner's lock must not hold the mover
-- for ever).  NULL when done, else why not (the rows stay).
CREATE FUNCTION tablestore_router._move_delete_rows(conn text, mask integer, part integer) RETURNS text
	LANGUAGE plpgsql AS $$
DECLARE
	lt text := tablestore_router._lock_timeout();
	stmts text;
BEGIN
	stmts := (SELECT * FROM tablestore_router._node_values(conn, tablestore_router._move_delete_sql(mask, part)));
	IF stmts IS NOT NULL THEN
		PERFORM tablestore_router._node_exec(conn, format('SET LOCAL lock_timeout = %L; ', lt) || stmts);
	END IF;
	RETURN NULL;
EXCEPTION WHEN OTHERS THEN
	RETURN SQLERRM;
END $$;
REVOKE ALL ON FUNCTION tablestore_router._move_delete_rows(text, integer, integer) FROM PUBLIC;

-- _move_leftover: the outcome of deleting partition part's rows on node
-- (err from _move_delete_rows) recorded: a failure as a leftover of move,
-- a success removes the record
CREATE FUNCTION tablestore_router._move_leftover(node text, mask integer, part integer, move bigint, err text) RETURNS void
	LANGUAGE plpgsql AS $$
BEGIN
	IF err IS NULL THEN
		DELETE FROM tablestore_router._leftovers l WHERE l.node = $1 AND l.mask = $2 AND l.partition = $3;
	ELSE
		INSERT INTO tablestore_router._leftovers AS l (node, partition, mask, move, reason)
			VALUES ($1, $3, $2, $4, $5)
			ON CONFLICT ON CONSTRAINT _leftovers_pkey
			DO UPDATE SET move = excluded.move, reason = excluded.reason, recorded_at = clock_timestamp();
		RAISE WARNING 'the rows of partition % on % are left (tablestore_router.leftovers): %', part, node, err
			USING HINT = 'The router ignores them; drop what the error names, then SELECT * FROM tablestore_router.clean_leftovers();';
	END IF;
END $$;
REVOKE ALL ON FUNCTION tablestore_router._move_leftover(text, integer, integer, bigint, text) FROM PUBLIC;

-- _move_remove_leftovers: before node (connection conn) is given partition
-- part (of mask + 1), the rows left there of every partition overlapping
-- it are deleted (they are stale: another node served them since), or the
-- move is refused naming the leftover and what stops its deletion: the
-- node must never serve a partition with stale rows (duplicated or
-- resurrected entities)
CREATE FUNCTION tablestore_router._move_remove_leftovers(conn text, node text, mask integer, part integer) RETURNS void
	LANGUAGE plpgsql AS $$
DECLARE
	l tablestore_router._leftovers;
	t tablestore_router._left_triggers;
	err text;
	srel text;
	strig text;
BEGIN
	-- a filter trigger a move left there would filter this move's copy
	FOR t IN SELECT * FROM tablestore_router._left_triggers x WHERE x.node = $2 ORDER BY x.relation, x.trigger LOOP
		BEGIN
			PERFORM tablestore_router._drop_filter(conn, t.trigger, t.relation);
		EXCEPTION WHEN OTHERS THEN
			RAISE EXCEPTION 'partition %: the filter trigger % on tablestore_data.% left on % by move % cannot be dropped: %', part, t.trigger, t.relation, node, t.move, SQLERRM
				USING ERRCODE = 'object_not_in_prerequisite_state',
					DETAIL = 'It would filter the move''s copy into that table.',
					HINT = 'End what holds the lock on that node, then move again.';
		END;
		DELETE FROM tablestore_router._left_triggers x WHERE x.node = t.node AND x.relation = t.relation AND x.trigger = t.trigger;
	END LOOP;
	-- and any other filter trigger of the mover's there, recorded or not
	-- (abort_move with the target lost could not see them): no move runs
	-- but this one, which has made none yet (a rerun's undo dropped its
	-- own), so each is a finished or aborted move's and would filter this
	-- move's copy
	FOR srel, strig IN SELECT split_part(v, '/', 1), substr(v, strpos(v, '/') + 1)
		FROM tablestore_router._node_values(conn,
			'SELECT c.relname || ''/'' || t.tgname FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
			 WHERE t.tgname ~ ''^ts_move_[0-9]+$'' AND c.relnamespace = ''tablestore_data''::pg_catalog.regnamespace
			   AND t.tgfoid = pg_catalog.to_regprocedure(''tablestore_move.keep_partition()'') ORDER BY 1') v
	LOOP
		BEGIN
			PERFORM tablestore_router._drop_filter(conn, strig, srel);
		EXCEPTION WHEN OTHERS THEN
			RAISE EXCEPTION 'partition %: the filter trigger % on tablestore_data.% left on % by an earlier move cannot be dropped: %', part, strig, srel, node, SQLERRM
				USING ERRCODE = 'object_not_in_prerequisite_state',
					DETAIL = 'It would filter the move''s copy into that table.',
					HINT = 'End what holds the lock on that node, then move again.';
		END;
	END LOOP;
	FOR l IN SELECT * FROM tablestore_router._leftovers x
			WHERE x.node = $2 AND (x.partition & x.mask & $3) = ($4 & x.mask & $3) ORDER BY x.mask, x.partition LOOP
		err := tablestore_router._move_delete_rows(conn, l.mask, l.partition);
		IF err IS NOT NULL THEN
			RAISE EXCEPTION 'partition %: the rows of partition % left on % by move % cannot be deleted: %', part, l.partition, node, l.move, err
				USING ERRCODE = 'object_not_in_prerequisite_state',
					DETAIL = 'The node would serve them again: stale, deleted or doubled entities.',
					HINT = 'Drop what the error names on that node, then move again.';
		END IF;
		DELETE FROM tablestore_router._leftovers x WHERE x.node = l.node AND x.mask = l.mask AND x.partition = l.partition;
	END LOOP;
END $$;
REVOKE ALL ON FUNCTION tablestore_router._move_remove_leftovers(text, text, integer, integer) FROM PUBLIC;

-- clean_leftovers: every leftover deleted again (superuser), as the mover
-- deletes (locked, checked, then deleted): those whose deletion succeeds
-- are forgotten, the others keep their (new) reason.  A leftover of a
-- partition that its node serves (the map changed by hand) or that the
-- unfinished move is giving it is kept.  One row per leftover.
CREATE FUNCTION tablestore_router.clean_leftovers()
	RETURNS TABLE (node text, partition integer, move bigint, result text)
	LANGUAGE plpgsql AS $$
DECLARE
	l tablestore_router._leftovers;
	t tablestore_router._left_triggers;
	u tablestore_router._moves;
	mask integer := (SELECT count(*) FROM tablestore_router.partitions()) - 1;
	err text;
	open text[];
BEGIN
	IF NOT (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
		RAISE EXCEPTION 'only a superuser may clean leftovers' USING ERRCODE = 'insufficient_privilege';
	END IF;
	-- no move runs meanwhile (it could be copying the partition there)
	IF NOT tablestore_router._move_session_lock(true) THEN
		RAISE EXCEPTION 'a move is running in another session'
			USING ERRCODE = 'lock_not_available', HINT = 'Wait for it to end, then clean again.';
	END IF;
	SELECT * INTO u FROM tablestore_router._moves WHERE finished_at IS NULL;
	FOR l IN SELECT * FROM tablestore_router._leftovers ORDER BY 1, 3, 2 LOOP
		node := l.node; partition := l.partition; move := l.move;
		IF EXISTS (SELECT FROM tablestore_router.partitions() p
				WHERE p.node = l.node AND (p.partition & l.mask & mask) = (l.partition & l.mask & mask)) THEN
			result := 'kept: the node serves the partition';
		ELSIF u.id IS NOT NULL AND u.target = l.node AND (u.partition & l.mask & mask) = (l.partition & l.mask & mask) THEN
			result := format('kept: move %s will remove it', u.id);
		ELSE
			BEGIN
				PERFORM tablestore_router._node_connect('ts_clean', l.node);
				err := tablestore_router._move_delete_rows('ts_clean', l.mask, l.partition);
			EXCEPTION WHEN OTHERS THEN
				err := SQLERRM;
			END;
			IF err IS NULL THEN
				DELETE FROM tablestore_router._leftovers x WHERE x.node = l.node AND x.mask = l.mask AND x.partition = l.partition;
				result := 'deleted';
			ELSE
				UPDATE tablestore_router._leftovers x SET reason = err, recorded_at = clock_timestamp()
				WHERE x.node = l.node AND x.mask = l.mask AND x.partition = l.partition;
				result := 'kept: ' || err;
			END IF;
		END IF;
		RETURN NEXT;
	END LOOP;
	FOR t IN SELECT * FROM tablestore_router._left_triggers ORDER BY 1, 2, 3 LOOP
		node := t.node; partition := NULL; move := t.move;
		IF u.id IS NOT NULL AND u.id = t.move THEN
			result := format('kept: move %s is unfinished', u.id);
		ELSE
			BEGIN
				PERFORM tablestore_router._node_connect('ts_clean', t.node);
				PERFORM tablestore_router._drop_filter('ts_clean', t.trigger, t.relation);
				err := NULL;
			EXCEPTION WHEN OTHERS THEN
				err := SQLERRM;
			END;
			IF err IS NULL THEN
				DELETE FROM tablestore_router._left_triggers x WHERE x.node = t.node AND x.relation = t.relation AND x.trigger = t.trigger;
				result := 'deleted';
			ELSE
				UPDATE tablestore_router._left_triggers x SET reason = err, recorded_at = clock_timestamp()
				WHERE x.node = t.node AND x.relation = t.relation AND x.trigger = t.trigger;
				result := 'kept: ' || err;
			END IF;
		END IF;
		RETURN NEXT;
	END LOOP;
	IF tablestore_router._dblink_schema() IS NOT NULL THEN
		EXECUTE format('SELECT %I.dblink_get_connections()', tablestore_router._dblink_schema()) INTO open;
	END IF;
	IF 'ts_clean' = ANY (open) THEN
		EXECUTE format('SELECT %I.dblink_disconnect($1)', tablestore_router._dblink_schema()) USING 'ts_clean';
	END IF;
	PERFORM tablestore_router._move_session_lock(false);
END $$;
COMMENT ON FUNCTION tablestore_router.clean_leftovers() IS 'delete again the rows of partitions left on nodes that no longer serve them (tablestore_router.leftovers), as the mover deletes';
REVOKE ALL ON FUNCTION tablestore_router.clean_leftovers() FROM PUBLIC;
-- ---- end of issue 23 A3 ----
