#!/usr/bin/env bash
# test/cluster/move_attack.sh: what the attack on online moves found
# (reports/attack-move.md, issue 23), as checks of move_partition:
#   F1  a table's owner gets nothing of the superuser's: a move is refused
#       (nothing changed) when the source's or the target's relation has a
#       user trigger, and the mover's DELETE runs as the owner (a trigger
#       added during the move does not run as the superuser);
#   F2  a second run of a move while the first is alive is refused at once,
#       and no entity is lost;
#   F3  a target that is the source under another name is refused;
#   F4  abort_move abandons an unfinished move and drops its slot;
#   F5  a finished move reads 'done' with the partition's count.
# The mover is held at a step by tablestore_router.move_pause_at/_file.
set -u
cd "$(dirname "$0")/../.."
. tools/lib.sh

DIR=$(mktemp -d /tmp/tsmovea.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; ts_stop_cluster "$DIR"; rm -rf "$DIR"' EXIT
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

# F1, the mover's DELETE as the owner: a trigger added on the source while
# the move copies runs, at the source's delete, as app
touch "$DIR/hold"
PGOPTIONS="-c tablestore_router.move_pause_at=copying -c tablestore_router.move_pause_file=$DIR/hold" \
	r -c "CALL tablestore_router.move_partition(0, '$(S 1)')" >"$DIR/m0.log" 2>&1 &
a=$!
step_is copying || echo "FAILED: the move did not reach copying"
pwn shard0 pwn "BEFORE DELETE"
rm -f "$DIR/hold"
wait $a || { echo "FAILED: move of partition 0: $(cat "$DIR/m0.log")"; fail=1; }
check "app is no superuser after the source's delete ran its trigger" "$(super shard0)" f
check "partition 0 on shard1" "$(r -c "SELECT node FROM tablestore_router.partitions() WHERE partition = 0")" "$(S 1)"
check "no entity lost (F1)" "$(total)" "$ALL"
n shard0 -c "DROP TRIGGER pwn ON tablestore_data.evil"

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
out=$(r -c "SELECT tablestore_router.abort_move()" 2>&1)
case $out in *aborted*) echo "ok: abort_move: $out";; *) echo "FAILED: abort_move: $out"; fail=1;; esac
check "no move slot on the source" "$(n shard1 -c "SELECT count(*) FROM pg_replication_slots")" 0
check "no subscription on the target" "$(n shard2 -c "SELECT count(*) FROM pg_subscription")" 0
check "no unfinished move (F4)" "$(unfinished)" 0
check "partition 4 stays on shard1" "$(r -c "SELECT node FROM tablestore_router.partitions() WHERE partition = 4")" "$(S 1)"
check "no entity lost (F4)" "$(total)" "$ALL"
exit $fail
