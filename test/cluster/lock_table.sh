#!/usr/bin/env bash
# test/cluster/lock_table.sh: the router's locks.
#
# 1. Concurrent queries over every node must not exhaust the router's
# shared lock table.  (It did: a query over every node held a share lock on
# every partition until the end of its transaction, so with 4,096
# partitions, configure()'s maximum then, 12 clients holding a cursor
# filled PostgreSQL's lock table and statements failed with "out of shared
# memory", 53200.  Now a call holds the one lock of "all partitions" while
# it runs, and configure() takes at most 256 partitions.)  Starts a router
# with 2 shards (of 3 servers) and 256 partitions, opens CLIENTS (12)
# sessions that each hold a cursor over query_entities, and requires that
# none fails, that none holds an advisory lock between fetches, and that a
# point read still works meanwhile.
#
# 2. No role can stall the cluster (issue 21, finding 14): a role without
# rights that holds pg_advisory_lock(1953722992, p) for every partition
# (the key space of the router's locks until 0.4.0), and a role with an
# open transaction that listed the tables and holds a cursor over every
# node, keep neither routed calls nor a mover waiting.
#
# 3. A query that waited for a move reads the partition map after its wait
# (finding 15): partition 0 moves to a third node while a query over every
# node waits for it; the query returns every entity once.  (It read the
# node list before it waited: the node that lost its lowest partition was
# never read, another twice.)
set -u -o pipefail
export LC_ALL=C
cd "$(dirname "$0")/../.."
. tools/lib.sh

CLIENTS=${CLIENTS:-12}
PARTITIONS=${PARTITIONS:-256}
DIR=$(ts_cluster_dir tslocks)
chmod 755 "$DIR"
trap 'touch "$DIR/clients.done" "$DIR/holder.done"; rm -f "$DIR/move.hold"; wait; ts_stop_cluster "$DIR"; ts_rm_cluster_dir "$DIR"' EXIT
ts_start_cluster "$DIR" 3 "$PARTITIONS" >/dev/null || exit 1
# the cluster on shards 0 and 1; shard 2 takes a partition in check 3
psql -X -q -h "$DIR/router" -d tablestore -U postgres -v ON_ERROR_STOP=1 \
	-c "SELECT tablestore_router.configure(ARRAY['host=$DIR/shard0 dbname=tablestore', 'host=$DIR/shard1 dbname=tablestore'], $PARTITIONS)" >/dev/null || exit 1
export PGUSER=postgres
R() { psql -X -q -At -h "$DIR/router" -d tablestore -v ON_ERROR_STOP=1 -v VERBOSITY=sqlstate "$@"; }

status=0
R -c "SELECT tablestore.create_table('Locks')" \
	-c "SELECT count(tablestore.insert_entity('Locks', jsonb_build_object('PartitionKey', 'p' || i, 'RowKey', 'r')))
		FROM generate_series(1, 100) i" >/dev/null || exit 1

# each client fetches from its cursor, says so (even if the fetch failed:
# ON_ERROR_STOP=0) and holds the cursor until the point read is done
ready=()
for i in $(seq 1 "$CLIENTS"); do
	R -v ON_ERROR_STOP=0 >"$DIR/client$i.out" 2>&1 <<SQL &
BEGIN;
DECLARE c NO SCROLL CURSOR FOR SELECT e FROM tablestore.query_entities('Locks') e;
FETCH 1 FROM c \g /dev/null
\! touch $DIR/client$i.ready; bash $TS_LIB ts_until_file -t 60 $DIR/clients.done
COMMIT;
SQL
	ready+=("$DIR/client$i.ready")
done
ts_until_file "${ready[@]}" || status=1
point=$(R -c "SELECT tablestore.get_entity('Locks', 'p1', 'r')->>'RowKey'" 2>&1)
held=$(R -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'" 2>&1)
touch "$DIR/clients.done"
wait
failed=$(grep -l ERROR "$DIR"/client*.out | wc -l)
echo "$CLIENTS clients holding a query over every node of $PARTITIONS partitions: $failed failed" \
	"($(cat "$DIR"/client*.out | grep -o 'ERROR:  [0-9A-Z]*' | sort | uniq -c | tr -s ' ' | tr '\n' ';'))," \
	"advisory locks held: $held, a point read meanwhile: $point"
[ "$failed" -eq 0 ] && [ "$point" = r ] && [ "$held" -eq 0 ] || status=1

# 2. a role without rights holds the old key space of the router's locks,
# exclusively, for every partition; another has listed the tables and
# holds a cursor over every node in an open transaction
R -c "CREATE ROLE ts_nobody LOGIN" >/dev/null || exit 1
PGUSER=ts_nobody R >"$DIR/holder.out" 2>&1 <<SQL &
SELECT count(pg_advisory_lock(1953722992, p)) FROM generate_series(-1, $((PARTITIONS - 1))) p;
BEGIN;
SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory' \g /dev/null
\! touch $DIR/holder.ready; bash $TS_LIB ts_until_file -t 60 $DIR/holder.done
COMMIT;
SQL
R >"$DIR/reader.out" 2>&1 <<SQL &
BEGIN;
SELECT count(*) FROM tablestore.list_tables() \g /dev/null
DECLARE c NO SCROLL CURSOR FOR SELECT e FROM tablestore.query_entities('Locks') e;
FETCH 1 FROM c \g /dev/null
\! touch $DIR/reader.ready; bash $TS_LIB ts_until_file -t 60 $DIR/holder.done
COMMIT;
SQL
ts_until_file "$DIR/holder.ready" "$DIR/reader.ready" || status=1
calls=$(R -c "SET statement_timeout = '5s'" \
	-c "SELECT tablestore.get_entity('Locks', 'p1', 'r')->>'RowKey'" \
	-c "SELECT count(*) FROM tablestore.query_entities('Locks')" \
	-c "SELECT count(*) FROM tablestore.list_tables()" 2>&1 | tr '\n' ' ')
mover=$(R -c "SET lock_timeout = '5s'" -c "SELECT 'moved ' || tablestore_router.lock_partition_for_move(0)" \
	-c "SELECT tablestore_router.unlock_partition_for_move(0)" 2>&1 | tr '\n' ' ')
touch "$DIR/holder.done"
wait
echo "a role holding pg_advisory_lock(1953722992, p) for every partition, another an open cursor:" \
	"calls: $calls; a mover: $mover"
[ "$calls" = "r 100 1 " ] && [ "$mover" = "moved  t " ] || { cat "$DIR/holder.out" "$DIR/reader.out"; status=1; }

# 3. a query over every node that waits for a move of partition 0 to
# shard 2 (the node order changes: shard 2 holds the lowest partition)
R -c "SELECT tablestore.create_table('Moves')" \
	-c "SELECT count(tablestore.insert_entity('Moves', jsonb_build_object('PartitionKey', 'm' || i, 'RowKey', 'r')))
		FROM generate_series(1, 20) i" >/dev/null || exit 1
touch "$DIR/move.hold"
MOVE_WAIT_FILE=$DIR/move.hold MOVE_WAIT_STEP=locked bash tools/cluster-move.sh "host=$DIR/router dbname=tablestore user=postgres" \
	"host=$DIR/shard2 dbname=tablestore" 0 >"$DIR/move.log" 2>&1 &
mover=$!
# the sessions holding (true) or awaiting (false) the lock of all
# partitions in a mode: the mover's ExclusiveLock, then a query's ShareLock
waiting() { [ "$(R -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = 1953722992
	AND objsubid = 29811 AND objid::integer = $1 AND granted = $2 AND mode = '$3'")" = 1 ]; }
ts_until waiting -1 true ExclusiveLock || status=1
R -c "SELECT count(*) || ' ' || count(DISTINCT e->>'PartitionKey') FROM tablestore.query_entities('Moves') e" \
	>"$DIR/moving.out" 2>&1 &
query=$!
waited=no
ts_until waiting -1 false ShareLock && waited=yes
rm -f "$DIR/move.hold"
wait "$mover" || { cat "$DIR/move.log"; status=1; }
wait "$query"
echo "a query over every node that waited ($waited) for a move: $(cat "$DIR/moving.out") (entities, distinct) of 20;" \
	"partition 0 on $(R -c "SELECT node FROM tablestore_router.partitions() WHERE partition = 0" | sed 's|.*/||')"
[ "$(cat "$DIR/moving.out")" = "20 20" ] && [ "$waited" = yes ] || status=1
exit $status
