#!/usr/bin/env bash
# test/cluster/lock_table.sh: concurrent queries over every node must not
# exhaust the router's shared lock table.  (It did: a query over every node
# held a share lock on every partition until the end of its transaction, so
# with 4,096 partitions, configure()'s maximum then, 12 clients holding a
# cursor filled PostgreSQL's lock table and statements failed with "out of
# shared memory", 53200.  Now such a query holds the one lock of "all
# partitions", and configure() takes at most 256 partitions.)
#
# Starts a router with 2 shards and 256 partitions, opens CLIENTS (12)
# sessions that each hold a cursor over query_entities, and requires that
# none fails, that each holds one advisory lock, and that a point read still
# works meanwhile.
set -u -o pipefail
export LC_ALL=C
cd "$(dirname "$0")/../.."
. tools/lib.sh

CLIENTS=${CLIENTS:-12}
PARTITIONS=${PARTITIONS:-256}
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
[ "$failed" -eq 0 ] && [ "$point" = r ] && [ "$held" -le $((CLIENTS + 1)) ]
