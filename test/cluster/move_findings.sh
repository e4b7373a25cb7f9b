#!/usr/bin/env bash
# test/cluster/move_findings.sh: what issue 23 found of the copy-based mover,
# as checks any mover must pass (tools/cluster-move.sh ROUTER TARGET P):
#   1. a table created during a move is not stranded: create_table while a
#      partition is being moved either is refused (ServerBusy, retry) or
#      makes a table that, after the move, serves every partition, the
#      moved one included;
#   2. a move carries the table's owner, grants, row-level security and
#      comment: after a move to a new node, the owner and a grantee read
#      and write the moved partition, the owner deletes the table, and a
#      table created again under the same name is empty;
#   3. delete_table during a move is refused or complete (no entity of it
#      is left on any node afterwards).
# The move is held half-way by MOVE_WAIT_FILE (the mover waits while that
# file exists).
set -u
cd "$(dirname "$0")/../.."
. tools/lib.sh

DIR=$(ts_cluster_dir tsmovef)
trap 'kill $(jobs -p) 2>/dev/null; ts_stop_cluster "$DIR"; ts_rm_cluster_dir "$DIR"' EXIT
fail=0
check() {
	if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAILED: $1: got '$2', want '$3'"; fail=1; fi
}

ts_start_cluster "$DIR" 2 8 >/dev/null || exit 1
ROUTER="host=$DIR/router dbname=tablestore user=postgres"
r() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$ROUTER" "$@"; }
ra() { psql -X -q -At -v ON_ERROR_STOP=1 -d "host=$DIR/router dbname=tablestore user=$1" -c "$2"; }
mkdir -p "$DIR/shard2"
ts_start_server "$DIR/shard2" -c wal_level=logical >/dev/null || exit 1
psql -X -q -h "$DIR/shard2" -d postgres -c "CREATE DATABASE tablestore"
psql -X -q -h "$DIR/shard2" -d tablestore -c "CREATE EXTENSION tablestore"
export PGHOST=$DIR/router PGDATABASE=tablestore
NEW="host=$DIR/shard2 dbname=tablestore"
# the roles on every server, app may create tables
for d in router shard0 shard1 shard2; do
	psql -X -q -h "$DIR/$d" -d tablestore <<'SQL'
CREATE ROLE app LOGIN;
CREATE ROLE reader LOGIN;
DO $$BEGIN IF to_regnamespace('tablestore_data') IS NOT NULL THEN GRANT CREATE, USAGE ON SCHEMA tablestore_data TO app; END IF; END$$;
SQL
done
r -c "CREATE EXTENSION IF NOT EXISTS dblink" >/dev/null 2>&1
pk_in() { r -c "SELECT pk FROM (SELECT 'k' || i AS pk FROM generate_series(0, 63) i) k WHERE tablestore_router.partition_of(pk) = $1 LIMIT 1"; }
P=3
PK=$(pk_in $P)

# finding 2: a table of app's, read by reader, with RLS and a comment
ra app "SELECT tablestore.create_table('Owned')" >/dev/null
for d in shard0 shard1; do
	psql -X -q -h "$DIR/$d" -d tablestore -c "GRANT SELECT, INSERT, UPDATE, DELETE ON tablestore_data.owned TO reader; COMMENT ON TABLE tablestore_data.owned IS 'owned by app'"
done
ra app "SELECT count(tablestore.insert_entity('Owned', jsonb_build_object('PartitionKey', 'k' || i, 'RowKey', 'r', 'N', i))) FROM generate_series(0, 63) i" >/dev/null
r -c "SELECT tablestore.create_table('Doomed')" >/dev/null
r -c "SELECT count(tablestore.insert_entity('Doomed', jsonb_build_object('PartitionKey', 'k' || i, 'RowKey', 'r'))) FROM generate_series(0, 63) i" >/dev/null

# the move, held half-way
touch "$DIR/hold"
MOVE_WAIT_FILE=$DIR/hold bash tools/cluster-move.sh "$ROUTER" "$NEW" $P >"$DIR/move.log" 2>&1 &
mover=$!
# paused half-way: its step "copying" recorded, its session in the pause
# (tablestore_router._move_pause, a pg_sleep loop while the file exists)
ts_until_sql "SELECT EXISTS (SELECT FROM tablestore_router.moves WHERE partition = $P AND finished_at IS NULL AND step = 'copying')
	AND EXISTS (SELECT FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query LIKE '%move_partition%')" ||
	{ echo "FAILED: the move did not pause at copying"; fail=1; }
# finding 1: a table created during the move (with a deadline: a call that
# waits for the move is given up, as a client would)
late=$(PGOPTIONS="-c statement_timeout=3s" psql -X -q -At -d "$ROUTER" -c "SELECT tablestore.create_table('Late')" 2>&1)
echo "create_table during the move: ${late:-done}"
dropped=$(PGOPTIONS="-c statement_timeout=3s" psql -X -q -At -d "$ROUTER" -c "SELECT tablestore.delete_table('Doomed')" 2>&1)
echo "delete_table during the move: ${dropped:-done}"
rm -f "$DIR/hold"
wait $mover || { echo "FAILED: the move"; cat "$DIR/move.log"; fail=1; }
check "partition $P is on the new node" "$(r -c "SELECT node FROM tablestore_router.partitions() WHERE partition = $P")" "$NEW"

case $late in
*"being moved"*) echo "ok: create_table during a move is refused (ServerBusy)"
	r -c "SELECT tablestore.create_table('Late')" >/dev/null || { echo "FAILED: create_table after the move"; fail=1; } ;;
"") ;;
*) echo "FAILED: create_table during the move: $late"; fail=1 ;;
esac
got=$(psql -X -q -At -d "$ROUTER" -c "SELECT tablestore.insert_entity('Late', '{\"PartitionKey\": \"$PK\", \"RowKey\": \"x\"}') IS NOT NULL" \
	-c "SELECT tablestore.get_entity('Late', '$PK', 'x')->>'RowKey'" -c "SELECT count(*) FROM tablestore.query_entities('Late')" 2>&1 | tr '\n' ' ')
check "a table created during the move serves the moved partition" "$got" "t x 1 "
case $dropped in
*"being moved"*) echo "ok: delete_table during a move is refused (ServerBusy)"
	r -c "SELECT tablestore.delete_table('Doomed')" >/dev/null || { echo "FAILED: delete_table after the move"; fail=1; } ;;
"") ;;
*) echo "FAILED: delete_table during the move: $dropped"; fail=1 ;;
esac
left=0
for d in shard0 shard1 shard2; do
	left=$((left + $(psql -X -q -At -h "$DIR/$d" -d tablestore -c "SELECT count(*) FROM tablestore.tables WHERE table_name = 'Doomed'")))
done
check "a table deleted around a move is on no node" "$left" 0

# finding 2: owner, grants, RLS, comment carried
check "owner of the moved table on the new node" "$(psql -X -q -At -h "$DIR/shard2" -d tablestore -c "SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = 'tablestore_data.owned'::regclass")" app
check "comment on the new node" "$(psql -X -q -At -h "$DIR/shard2" -d tablestore -c "SELECT obj_description('tablestore_data.owned'::regclass, 'pg_class')")" "owned by app"
check "the owner reads the moved partition" "$(ra app "SELECT tablestore.get_entity('Owned', '$PK', 'r')->>'PartitionKey'" 2>&1)" "$PK"
check "a grantee reads the moved partition" "$(ra reader "SELECT tablestore.get_entity('Owned', '$PK', 'r')->>'PartitionKey'" 2>&1)" "$PK"
check "a grantee writes the moved partition" "$(ra reader "SELECT tablestore.merge_entity('Owned', '{\"PartitionKey\": \"$PK\", \"RowKey\": \"r\", \"M\": 1}') IS NOT NULL" 2>&1)" t
check "the owner deletes the table" "$(ra app "SELECT tablestore.delete_table('Owned')" 2>&1)" ""
ra app "SELECT tablestore.create_table('Owned')" >/dev/null 2>&1
check "a table created again is empty" "$(r -c "SELECT count(*) FROM tablestore.query_entities('Owned')" 2>&1)" 0
check "its owner uses it" "$(ra app "SELECT tablestore.insert_entity('Owned', '{\"PartitionKey\": \"$PK\", \"RowKey\": \"n\"}') IS NOT NULL" 2>&1)" t
exit $fail
