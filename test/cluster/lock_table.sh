#!/usr/bin/env bash
# test/cluster/lock_table.sh: concurrent queries over every node must not
# exhaust the router's shared lock table.  KNOWN TO FAIL (not part of the
# test command): every routed call holds a share lock on its partition until
# the end of its transaction, and a query over every node holds one on
# every partition (src/router.c lock_partitions(-1)), so with the largest
# cluster tablestore_router.configure() accepts (4,096 partitions) a few
# clients that stream a query in a transaction (a cursor, a page walk in a
# function) fill PostgreSQL's lock table (max_locks_per_transaction 64 x
# (max_connections + max_prepared_transactions) entries, plus the spare
# shared memory it can take) and every later statement on the router that
# needs a lock, of any kind, fails with "out of shared memory" (53200).
#
# Starts a router with 2 shards and 4,096 partitions, opens CLIENTS (12)
# sessions that each hold a cursor over query_entities, and requires that
# none fails and that a point read still works meanwhile.
set -u -o pipefail
export LC_ALL=C
cd "$(dirname "$0")/../.."
. tools/lib.sh

CLIENTS=${CLIENTS:-12}
PARTITIONS=${PARTITIONS:-4096}
DIR=$(mktemp -d /tmp/tslocks.XXXXXX)
chmod 755 "$DIR"
trap 'wait; ts_stop_cluster "$DIR"; rm -rf "$DIR"' EXIT
ts_start_cluster "$DIR" 2 "$PARTITIONS" >/dev/null || exit 1
export PGUSER=postgres
R() { psql -X -q -At -h "$DIR/router" -d tablestore -v ON_ERROR_STOP=1 -v VERBOSITY=sqlstate "$@"; }

R -c "SELECT tablestore.create_table('Locks')" \
	-c "SELECT count(tablestore.insert_entity('Locks', jsonb_build_object('PartitionKey', 'p' || i, 'RowKey', 'r')))
		FROM generate_series(1, 100) i" >/dev/null || exit 1

for i in $(seq 1 "$CLIENTS"); do
	R >"$DIR/client$i.out" 2>&1 <<'SQL' &
BEGIN;
DECLARE c NO SCROLL CURSOR FOR SELECT e FROM tablestore.query_entities('Locks') e;
FETCH 1 FROM c \g /dev/null
SELECT pg_sleep(3);
COMMIT;
SQL
	sleep 0.1
done
sleep 1
point=$(R -c "SELECT tablestore.get_entity('Locks', 'p1', 'r')->>'RowKey'" 2>&1)
held=$(R -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'" 2>&1)
wait
failed=$(grep -l ERROR "$DIR"/client*.out | wc -l)
echo "$CLIENTS clients holding a query over every node of $PARTITIONS partitions: $failed failed" \
	"($(cat "$DIR"/client*.out | grep -o 'ERROR:  [0-9A-Z]*' | sort | uniq -c | tr -s ' ' | tr '\n' ';'))," \
	"advisory locks held: $held, a point read meanwhile: $point"
[ "$failed" -eq 0 ] && [ "$point" = r ]
