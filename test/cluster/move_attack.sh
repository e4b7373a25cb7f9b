#!/usr/bin/env bash
# test/cluster/move_attack.sh: what the attack on online moves found
# (reports/attack-move.md, issue 23), as checks of move_partition:
#   F1  a table's owner gets nothing of the superuser's: a move is refused
#       (nothing changed) when the source's or the target's relation has a
#       user trigger, and a trigger added during the move never runs: the
#       mover's DELETE locks and checks the relations first (the move ends
#       with the source's rows left and recorded; clean_leftovers deletes
#       them once the trigger is dropped);
#   F2  a second run of a move while the first is alive is refused at once,
#       and no entity is lost;
#   F3  a target that is the source under another name is refused;
#   F4  abort_move abandons an unfinished move and drops its slot;
#   F5  a finished move reads 'done' with the partition's count;
#   F6  while a move copies, the owner can add no code to the target's copy
#       (a trigger enabled ALWAYS, a CHECK constraint, an index expression,
#       a column default, a rule): the mover's lock on the target's tables
#       refuses that DDL (lock_timeout), so the replication's apply worker
#       (a superuser) never runs the owner's functions;
#   F7  owner code added on the target after the move's first check but
#       before its lock is found under the lock: the move is refused;
#   F8  a rerun of a killed move (whose lock died with it) drops the
#       interrupted subscription before it refuses the owner code added
#       meanwhile.
# The mover is held at a step by tablestore_router.move_pause_at/_file.
set -u
cd "$(dirname "$0")/../.."
. tools/lib.sh

DIR=$(ts_cluster_dir tsmovea)
trap 'kill $(jobs -p) 2>/dev/null; ts_stop_cluster "$DIR"; ts_rm_cluster_dir "$DIR"' EXIT
fail=0
check() {
	if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAILED: $1: got '$2', want '$3'"; fail=1; fi
}
ts_start_cluster "$DIR" 3 8 >/dev/null || exit 1
export PGUSER=postgres
r() { psql -X -q -At -d "host=$DIR/router dbname=tablestore" "$@"; }
n() { local h=$1; shift; psql -X -q -At -d "host=$DIR/$h dbname=tablestore" "$@"; }
S() { echo "host=$DIR/shard$1 dbname=tablestore"; }
super() { n "$1" -c "SELECT rolsuper FROM pg_roles WHERE rolname = 'app'"; }
total() { r -c "SELECT count(*) FROM tablestore.query_entities('Evil')"; }
unfinished() { r -c "SELECT count(*) FROM tablestore_router._moves WHERE finished_at IS NULL"; }
step_is() {	# wait (bounded) until the unfinished move is at step $1
	for _ in $(seq 1 600); do
		[ "$(r -c "SELECT step FROM tablestore_router._moves WHERE finished_at IS NULL")" = "$1" ] && return 0
		sleep 0.05
	done
	return 1
}
locks_gone() {	# the move's locks on a node's tables, once its session is gone (bounded)
	local k
	for _ in $(seq 1 200); do
		k=$(n "$1" -c "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
			WHERE c.relnamespace = 'tablestore_data'::regnamespace AND l.mode = 'ShareUpdateExclusiveLock'")
		[ "$k" = 0 ] && break
		sleep 0.05
	done
	echo "$k"
}
for d in router shard0 shard1 shard2; do
	psql -X -q -d "host=$DIR/$d dbname=tablestore" -c "CREATE ROLE app LOGIN" \
		-c "DO \$\$BEGIN IF to_regnamespace('tablestore_data') IS NOT NULL THEN GRANT CREATE, USAGE ON SCHEMA tablestore_data TO app; END IF; END\$\$;"
done
psql -X -q -At -d "host=$DIR/router dbname=tablestore user=app" -c "SELECT tablestore.create_table('Evil')" \
	-c "SELECT count(tablestore.insert_entity('Evil', jsonb_build_object('PartitionKey', 'k' || i, 'RowKey', 'r'))) FROM generate_series(0, 999) i" >/dev/null
pwn() {	# pwn NODE TRIGGER-NAME TIMING ALWAYS?: app's trigger that makes app a superuser
	psql -X -q -d "host=$DIR/$1 dbname=tablestore user=app" <<SQL
CREATE OR REPLACE FUNCTION tablestore_data.pwn() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
	IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN EXECUTE 'ALTER ROLE app SUPERUSER'; END IF;
	RETURN coalesce(NEW, OLD);
END \$\$;
CREATE TRIGGER $2 $3 ON tablestore_data.evil FOR EACH ROW EXECUTE FUNCTION tablestore_data.pwn();
$( [ -n "${4:-}" ] && echo "ALTER TABLE tablestore_data.evil ENABLE ALWAYS TRIGGER $2;" )
SQL
}
ALL=$(total)
check "entities" "$ALL" 1000

# F1, source: a DELETE trigger on partition 0's source (shard0)
pwn shard0 pwn "BEFORE DELETE"
out=$(r -c "CALL tablestore_router.move_partition(0, '$(S 1)')" 2>&1)
case $out in *"run their owners' code"*) echo "ok: a move whose source table has a user trigger is refused";;
	*) echo "FAILED: move with a source trigger: $out"; fail=1;; esac
check "app is no superuser on the source" "$(super shard0)" f
check "partition 0 stays on shard0" "$(r -c "SELECT node FROM tablestore_router.partitions() WHERE partition = 0")" "$(S 0)"
check "no move recorded" "$(r -c "SELECT count(*) FROM tablestore_router._moves")" 0
n shard0 -c "DROP TRIGGER pwn ON tablestore_data.evil"

# F1, target: an ENABLE ALWAYS trigger on partition 1's target (shard2)
pwn shard2 pwn2 "BEFORE INSERT" always
out=$(r -c "CALL tablestore_router.move_partition(1, '$(S 2)')" 2>&1)
case $out in *"run their owners' code"*) echo "ok: a move whose target table has an ALWAYS trigger is refused";;
	*) echo "FAILED: move with a target trigger: $out"; fail=1;; esac
check "app is no superuser on the target" "$(super shard2)" f
n shard2 -c "DROP TRIGGER pwn2 ON tablestore_data.evil"

# F1, the mover's DELETE: a trigger added on the source while the move
# copies never runs (the cleanup locks, checks and refuses it; the move
# ends with the source's rows left, clean_leftovers deletes them once the
# trigger is dropped)
touch "$DIR/hold"
PGOPTIONS="-c tablestore_router.move_pause_at=copying -c tablestore_router.move_pause_file=$DIR/hold" \
	r -c "CALL tablestore_router.move_partition(0, '$(S 1)')" >"$DIR/m0.log" 2>&1 &
a=$!
step_is copying || echo "FAILED: the move did not reach copying"
pwn shard0 pwn "BEFORE DELETE"
rm -f "$DIR/hold"
wait $a || { echo "FAILED: move of partition 0: $(cat "$DIR/m0.log")"; fail=1; }
check "the source's cleanup leaves the rows, naming the owner's trigger" \
	"$(r -c "SELECT count(*) FROM tablestore_router.leftovers WHERE partition = 0 AND reason LIKE '%trigger pwn%'")" 1
check "app is no superuser after the source's cleanup" "$(super shard0)" f
n shard0 -c "DROP TRIGGER pwn ON tablestore_data.evil"
check "clean_leftovers deletes them once the trigger is dropped" "$(r -c "SELECT result FROM tablestore_router.clean_leftovers()")" deleted
check "partition 0 on shard1" "$(r -c "SELECT node FROM tablestore_router.partitions() WHERE partition = 0")" "$(S 1)"
check "no entity lost (F1)" "$(total)" "$ALL"

# F2 and F5: a second run of the same move while the first waits at the cutover
P=3
PN=$(r -c "SELECT count(*) FROM generate_series(0, 999) i WHERE tablestore_router.partition_of('k' || i) = $P")
touch "$DIR/hold"
PGOPTIONS="-c tablestore_router.move_pause_at=cutover -c tablestore_router.move_pause_file=$DIR/hold" \
	r -c "CALL tablestore_router.move_partition($P, '$(S 2)')" >"$DIR/a.log" 2>&1 &
a=$!
step_is cutover || echo "FAILED: run A did not reach the cutover"
out=$(PGOPTIONS="-c statement_timeout=20s" r -c "CALL tablestore_router.move_partition($P, '$(S 2)')" 2>&1)
case $out in *"a move is running in another session"*) echo "ok: a second run of a live move is refused at once";;
	*) echo "FAILED: second run: $out"; fail=1;; esac
rm -f "$DIR/hold"
wait $a || { echo "FAILED: run A: $(cat "$DIR/a.log")"; fail=1; }
check "no entity lost (F2)" "$(total)" "$ALL"
check "the moves view: done, the partition's count" "$(r -c "SELECT step || ' ' || rows_moved || ' ' || attempts FROM tablestore_router.moves WHERE partition = $P AND finished_at IS NOT NULL")" "done $PN 1"

# F3: the source under another name
ln -sfn "$DIR/shard0" "$DIR/s0link"
out=$(PGOPTIONS="-c statement_timeout=20s" r -c "CALL tablestore_router.move_partition(6, 'host=$DIR/s0link dbname=tablestore')" 2>&1)
case $out in *"is the source"*) echo "ok: a target that is the source is refused";;
	*) echo "FAILED: move to the source's link: $out"; fail=1;; esac
check "no entity lost (F3)" "$(total)" "$ALL"
check "no unfinished move (F3)" "$(unfinished)" 0

# F4: a move killed while it copies, abandoned by abort_move
touch "$DIR/hold"
PGOPTIONS="-c tablestore_router.move_pause_at=copying -c tablestore_router.move_pause_file=$DIR/hold" \
	r -c "CALL tablestore_router.move_partition(4, '$(S 2)')" >/dev/null 2>&1 &
a=$!
step_is copying || echo "FAILED: the move did not reach copying"
r -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'CALL tablestore_router.move_partition(4,%'" >/dev/null
wait $a; rm -f "$DIR/hold"
check "the killed mover's lock on the target's tables is gone" "$(locks_gone shard2)" 0
out=$(r -c "SELECT tablestore_router.abort_move()" 2>&1)
case $out in *aborted*) echo "ok: abort_move: $out";; *) echo "FAILED: abort_move: $out"; fail=1;; esac
check "no move slot on the source" "$(n shard1 -c "SELECT count(*) FROM pg_replication_slots")" 0
check "no subscription on the target" "$(n shard2 -c "SELECT count(*) FROM pg_subscription")" 0
check "no unfinished move (F4)" "$(unfinished)" 0
check "partition 4 stays on shard1" "$(r -c "SELECT node FROM tablestore_router.partitions() WHERE partition = 4")" "$(S 1)"
check "no entity lost (F4)" "$(total)" "$ALL"

# F6: owner code added on the target's copy while the move copies.  app's
# functions note who runs them (and make app a superuser if that is one).
n shard0 -c "CREATE SCHEMA appx AUTHORIZATION app"
psql -X -q -d "host=$DIR/shard0 dbname=tablestore user=app" <<'SQL'
CREATE TABLE appx.witness (what text, who text);
CREATE FUNCTION appx.note(what text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO appx.witness VALUES (what, current_user);
	IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN EXECUTE 'ALTER ROLE app SUPERUSER'; END IF;
	RETURN true;
END $$;
CREATE FUNCTION appx.trg() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM appx.note(TG_NAME); RETURN NEW; END $$;
CREATE FUNCTION appx.chk(k text) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN RETURN appx.note('check'); END $$;
CREATE FUNCTION appx.imm(k text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN RETURN appx.note('index'); END $$;
CREATE FUNCTION appx.dflt() RETURNS text LANGUAGE plpgsql AS $$ BEGIN PERFORM appx.note('default'); RETURN 'x'; END $$;
SQL
witness() { n shard0 -c "SELECT coalesce(string_agg(DISTINCT what || ' as ' || who, ', '), 'none') FROM appx.witness WHERE who <> 'app'"; }
app0() { psql -X -q -At -d "host=$DIR/shard0 dbname=tablestore user=app" -c "SET lock_timeout = '300ms'" "$@" 2>&1; }
writes() {	# an insert and an update through the router into partition $1, as app
	psql -X -q -At -d "host=$DIR/router dbname=tablestore user=app" -c "SELECT count(tablestore.insert_or_replace_entity('Evil', jsonb_build_object('PartitionKey', 'k' || i, 'RowKey', r, 'V', 6)))
		FROM generate_series(0, 999) i, unnest(ARRAY['r', 'r$1']) r WHERE tablestore_router.partition_of('k' || i) = $1" >/dev/null
}
touch "$DIR/hold"
PGOPTIONS="-c tablestore_router.move_pause_at=copying -c tablestore_router.move_pause_file=$DIR/hold" \
	r -c "CALL tablestore_router.move_partition(5, '$(S 0)')" >"$DIR/m5.log" 2>&1 &
a=$!
step_is copying || echo "FAILED: the move of partition 5 did not reach copying"
E=tablestore_data.evil
for ddl in "CREATE TRIGGER t6 BEFORE INSERT OR UPDATE ON $E FOR EACH ROW EXECUTE FUNCTION appx.trg()" \
	"BEGIN; CREATE TRIGGER t6a BEFORE INSERT OR UPDATE ON $E FOR EACH ROW EXECUTE FUNCTION appx.trg(); ALTER TABLE $E ENABLE ALWAYS TRIGGER t6a; COMMIT" \
	"CREATE CONSTRAINT TRIGGER t6c AFTER INSERT ON $E FOR EACH ROW EXECUTE FUNCTION appx.trg()" \
	"ALTER TABLE $E ADD CONSTRAINT c6 CHECK (appx.chk(pk::text)) NOT VALID" \
	"CREATE INDEX i6 ON $E (appx.imm(pk::text))" \
	"CREATE INDEX CONCURRENTLY i6c ON $E (appx.imm(rk::text))" \
	"ALTER TABLE $E ADD COLUMN c6 text DEFAULT appx.dflt()" \
	"ALTER TABLE $E ALTER COLUMN props SET DEFAULT jsonb_build_object('d', appx.dflt())" \
	"CREATE RULE r6 AS ON INSERT TO $E DO ALSO SELECT appx.note('rule')" \
	"CREATE POLICY p6 ON $E USING (appx.chk(pk::text))"; do
	out=$(app0 -c "$ddl")
	case $out in *"lock timeout"*) echo "ok: refused while the move copies: ${ddl:0:60}";;
		*) echo "FAILED: the owner's DDL on the target during the move: $ddl: ${out:-succeeded}"; fail=1;; esac
done
writes 5
rm -f "$DIR/hold"
wait $a || { echo "FAILED: move of partition 5: $(cat "$DIR/m5.log")"; fail=1; }
check "no owner code ran as the superuser on the target (F6)" "$(witness)" none
check "app is no superuser on the target (F6)" "$(super shard0)" f
check "partition 5 on shard0" "$(r -c "SELECT node FROM tablestore_router.partitions() WHERE partition = 5")" "$(S 0)"
check "the lock is released after the move" "$(locks_gone shard0)" 0
# whatever got through (before the fix) removed, so that the next moves run
n shard0 -c "DROP TRIGGER IF EXISTS t6 ON $E; DROP TRIGGER IF EXISTS t6a ON $E; DROP TRIGGER IF EXISTS t6c ON $E; TRUNCATE appx.witness; DROP RULE IF EXISTS r6 ON $E; DROP POLICY IF EXISTS p6 ON $E;
	DROP INDEX IF EXISTS tablestore_data.i6; DROP INDEX IF EXISTS tablestore_data.i6c; ALTER TABLE $E DROP CONSTRAINT IF EXISTS c6;
	ALTER TABLE $E DROP COLUMN IF EXISTS c6; ALTER TABLE $E ALTER COLUMN props DROP DEFAULT; ALTER ROLE app NOSUPERUSER" 2>/dev/null
ALL=$(total)

# F7: a trigger added on the target between the move's first check and its
# lock (held there by a pause): found under the lock, the move is refused
touch "$DIR/hold"
PGOPTIONS="-c tablestore_router.move_pause_at=prepared -c tablestore_router.move_pause_file=$DIR/hold" \
	r -c "CALL tablestore_router.move_partition(2, '$(S 0)')" >"$DIR/m2.log" 2>&1 &
a=$!
step_is prepare || echo "FAILED: the move of partition 2 did not reach prepare"
for _ in $(seq 1 600); do	# the pause: the target's filter trigger exists
	[ "$(n shard0 -c "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'ts\_move\_%'")" != 0 ] && break; sleep 0.05
done
out=$(app0 -c "CREATE TRIGGER t7 BEFORE INSERT ON $E FOR EACH ROW EXECUTE FUNCTION appx.trg()" -c "ALTER TABLE $E ENABLE ALWAYS TRIGGER t7")
check "the owner's trigger is created before the lock" "$out" ""
rm -f "$DIR/hold"
wait $a
case $(cat "$DIR/m2.log") in *"run their owners' code"*"t7"*) echo "ok: the trigger added before the lock is found under it";;
	*) echo "FAILED: move with a trigger added before the lock: $(cat "$DIR/m2.log")"; fail=1;; esac
check "no subscription on the target (F7)" "$(n shard0 -c "SELECT count(*) FROM pg_subscription")" 0
writes 2
ALL=$(total)
check "no owner code ran as the superuser (F7)" "$(witness)" none
check "partition 2 stays on shard2" "$(r -c "SELECT node FROM tablestore_router.partitions() WHERE partition = 2")" "$(S 2)"
n shard0 -c "DROP TRIGGER t7 ON $E"
r -c "CALL tablestore_router.move_partition(2, '$(S 0)')" >/dev/null 2>&1 || { echo "FAILED: rerun of the move of partition 2"; fail=1; }
check "partition 2 on shard0 after the rerun" "$(r -c "SELECT node FROM tablestore_router.partitions() WHERE partition = 2")" "$(S 0)"
check "no entity lost (F7)" "$(total)" "$ALL"

# F8: a move killed while it copies; the owner adds a trigger on the target
# (the lock died with the mover); the rerun drops the interrupted
# subscription, then refuses the owner code
touch "$DIR/hold"
PGOPTIONS="-c tablestore_router.move_pause_at=copying -c tablestore_router.move_pause_file=$DIR/hold" \
	r -c "CALL tablestore_router.move_partition(7, '$(S 0)')" >/dev/null 2>&1 &
a=$!
step_is copying || echo "FAILED: the move of partition 7 did not reach copying"
r -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'CALL tablestore_router.move_partition(7,%'" >/dev/null
wait $a; rm -f "$DIR/hold"
check "the killed mover's lock is gone (F8)" "$(locks_gone shard0)" 0
out=$(app0 -c "CREATE TRIGGER t8 BEFORE INSERT ON $E FOR EACH ROW EXECUTE FUNCTION appx.trg()" -c "ALTER TABLE $E ENABLE ALWAYS TRIGGER t8")
out=$(PGOPTIONS="-c statement_timeout=60s" r -c "CALL tablestore_router.move_partition(7, '$(S 0)')" 2>&1)
case $out in *"run their owners' code"*"t8"* | *"not as create_table made them"*"t8"*) echo "ok: the rerun refuses the owner code added after the kill";;
	*) echo "FAILED: rerun with a trigger added after the kill: $out"; fail=1;; esac
check "the rerun dropped the interrupted subscription (F8)" "$(n shard0 -c "SELECT count(*) FROM pg_subscription")" 0
writes 7
ALL=$(total)
check "no owner code ran as the superuser (F8)" "$(witness)" none
check "app is no superuser (F8)" "$(super shard0)" f
n shard0 -c "DROP TRIGGER t8 ON $E"
r -c "CALL tablestore_router.move_partition(7, '$(S 0)')" >/dev/null 2>&1 || { echo "FAILED: rerun of the move of partition 7"; fail=1; }
check "partition 7 on shard0 after the rerun" "$(r -c "SELECT node FROM tablestore_router.partitions() WHERE partition = 7")" "$(S 0)"
check "no unfinished move (F8)" "$(unfinished)" 0
check "no entity lost (F8)" "$(total)" "$ALL"
exit $fail
