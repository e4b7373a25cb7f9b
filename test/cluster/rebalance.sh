#!/usr/bin/env bash
# test/cluster/rebalance.sh: tools/cluster-rebalance.sh adds a node to a
# cluster of two whose entities are skewed (most in two partitions), evens
# the entities out, then drains a node (issue 23).  Checks: after --add,
# the new node holds partitions and no node holds more than half the
# entities; after --drain, the drained node holds no partition and no
# entity; every entity reads back through the router throughout; every
# move is done.
set -u
cd "$(dirname "$0")/../.."
. tools/lib.sh

DIR=$(ts_cluster_dir tsrebal)
trap 'ts_stop_cluster "$DIR"; ts_rm_cluster_dir "$DIR"' EXIT
fail=0
check() {
	if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAILED: $1: got '$2', want '$3'"; fail=1; fi
}
ts_start_cluster "$DIR" 2 8 >/dev/null || exit 1
ROUTER="host=$DIR/router dbname=tablestore user=postgres"
r() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$ROUTER" "$@"; }
mkdir -p "$DIR/shard2"
ts_start_server "$DIR/shard2" -c wal_level=logical >/dev/null || exit 1
psql -X -q -h "$DIR/shard2" -d postgres -c "CREATE DATABASE tablestore"
psql -X -q -h "$DIR/shard2" -d tablestore -c "CREATE EXTENSION tablestore"
export PGHOST=$DIR/router
r <<'SQL' >/dev/null
SELECT tablestore.create_table('Skew');
-- 600 entities in k0 and k1's partitions, 10 in each other key's
SELECT count(tablestore.insert_entity('Skew', jsonb_build_object('PartitionKey', 'k' || k, 'RowKey', lpad(i::text, 4, '0'))))
FROM generate_series(0, 15) k, generate_series(1, 1000) i WHERE i <= CASE WHEN k < 2 THEN 300 ELSE 10 END;
SQL
total=$(r -c "SELECT count(*) FROM tablestore.query_entities('Skew')")
per_node() { for i in 0 1 2; do psql -X -q -At -h "$DIR/shard$i" -d tablestore -c "SELECT coalesce((SELECT count(*) FROM tablestore_data.skew), 0)" 2>/dev/null || echo 0; done | tr '\n' ' '; }
echo "entities per node before: $(per_node)"
bash tools/cluster-rebalance.sh "$ROUTER" --add "host=$DIR/shard2 dbname=tablestore" || fail=1
echo "entities per node after --add: $(per_node)"
check "the new node holds partitions" "$(r -c "SELECT count(*) > 0 FROM tablestore_router.partitions() WHERE node = 'host=$DIR/shard2 dbname=tablestore'")" t
check "no node holds more than half the entities" "$(for n in $(per_node); do [ "$n" -gt $((total / 2)) ] && echo heavy; done)" ""
check "every entity through the router after --add" "$(r -c "SELECT count(*) FROM tablestore.query_entities('Skew')")" "$total"
bash tools/cluster-rebalance.sh "$ROUTER" --drain "host=$DIR/shard0 dbname=tablestore" || fail=1
echo "entities per node after --drain: $(per_node)"
check "the drained node holds no partition" "$(r -c "SELECT count(*) FROM tablestore_router.partitions() WHERE node = 'host=$DIR/shard0 dbname=tablestore'")" 0
check "the drained node holds no entity" "$(psql -X -q -At -h "$DIR/shard0" -d tablestore -c "SELECT count(*) FROM tablestore_data.skew")" 0
check "every entity through the router after --drain" "$(r -c "SELECT count(*) FROM tablestore.query_entities('Skew')")" "$total"
check "every move done" "$(r -c "SELECT count(*) FROM tablestore_router.moves WHERE step <> 'done'")" 0
exit $fail
