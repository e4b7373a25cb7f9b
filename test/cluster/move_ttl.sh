#!/usr/bin/env bash
# test/cluster/move_ttl.sh: a partition moved to another node keeps its
# table's time to live there (attack F2 on issue 26 part 2: the mover did
# not copy tablestore.tables.default_ttl, so the moved entities never
# expired on the new node, and expired ones not yet swept came back).
#
# A cluster of 2 shards (8 partitions) and a new node shard2; table Moved
# with a time to live of 100 s and 40 entities; partition 3 moved to
# shard2.  Checked on shard2: get_table_ttl is 100; with the clock 200 s
# ahead no moved entity is visible and sweep_expired removes them all.
# Also: a time to live turned off on the source is turned off on a target
# whose copy of the table still has one (moved back, then again).
set -u
cd "$(dirname "$0")/../.."
. tools/lib.sh

DIR=$(ts_cluster_dir tsmvttl)
trap 'ts_stop_cluster "$DIR"; ts_rm_cluster_dir "$DIR"' EXIT
fail=0
check() {
	if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAILED: $1: got '$2', want '$3'"; fail=1; fi
}
ts_start_cluster "$DIR" 2 8 >/dev/null || exit 1
export PGUSER=postgres
r() { psql -X -q -At -v ON_ERROR_STOP=1 -d "host=$DIR/router dbname=tablestore" "$@"; }
n() { local h=$1; shift; psql -X -q -At -v ON_ERROR_STOP=1 -d "host=$DIR/$h dbname=tablestore" "$@"; }
mkdir -p "$DIR/shard2"
ts_start_server "$DIR/shard2" -c wal_level=logical >/dev/null || exit 1
psql -X -q -h "$DIR/shard2" -d postgres -c "CREATE DATABASE tablestore" || exit 1
psql -X -q -h "$DIR/shard2" -d tablestore -c "CREATE EXTENSION tablestore" || exit 1
export PGHOST=$DIR/router
S2="host=$DIR/shard2 dbname=tablestore"

r <<'SQL' >/dev/null || exit 1
SELECT tablestore.create_table('Moved');
SELECT tablestore.set_table_ttl('Moved', 100);
SELECT count(tablestore.insert_entity('Moved', jsonb_build_object('PartitionKey', 'P' || i, 'RowKey', 'r', 'V', i)))
FROM generate_series(1, 40) i;
SQL
src=$(r -c "SELECT node FROM tablestore_router.partitions() WHERE partition = 3")
r -c "CALL tablestore_router.move_partition(3, '$S2')" >/dev/null || fail=1
moved=$(n shard2 -c "SELECT count(*) FROM tablestore_data.moved")
check "partition 3 is on shard2 and holds entities" "$(r -c "SELECT node FROM tablestore_router.partitions() WHERE partition = 3"):$([ "$moved" -gt 0 ] && echo some)" "$S2:some"
check "shard2 has the table's time to live" "$(n shard2 -c "SELECT tablestore.get_table_ttl('Moved')")" 100
check "the router's time to live" "$(r -c "SELECT tablestore.get_table_ttl('Moved')")" 100
check "no moved entity visible once expired on shard2" \
	"$(n shard2 -c "SET tablestore.clock_offset = '200s'" -c "SELECT count(*) FROM tablestore.query_entities('Moved')")" 0
check "the sweep on shard2 removes every moved entity" \
	"$(n shard2 -c "SET tablestore.clock_offset = '200s'" -c "SELECT tablestore.sweep_expired('Moved')")" "$moved"

# TTL off, the partition back to its source, then again to shard2, which
# kept its copy of the table, given a stale TTL of 100 meanwhile
r -c "SELECT tablestore.set_table_ttl('Moved', NULL)" >/dev/null || fail=1
r -c "CALL tablestore_router.move_partition(3, '$src')" >/dev/null || fail=1
n shard2 -c "UPDATE tablestore.tables SET default_ttl = 100 WHERE table_name = 'Moved'" >/dev/null || fail=1
r -c "SELECT tablestore.insert_entity('Moved', jsonb_build_object('PartitionKey', 'P' || i, 'RowKey', 'r2')) FROM generate_series(1, 40) i" >/dev/null || fail=1
r -c "CALL tablestore_router.move_partition(3, '$S2')" >/dev/null || fail=1
check "a time to live turned off reaches the target" "$(n shard2 -c "SELECT coalesce(tablestore.get_table_ttl('Moved')::text, 'off')")" off
check "moved entities stay live with TTL off" \
	"$(n shard2 -c "SET tablestore.clock_offset = '200s'" -c "SELECT count(*) > 0 FROM tablestore.query_entities('Moved')")" t
exit $fail
