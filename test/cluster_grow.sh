#!/usr/bin/env bash
# test/cluster_grow.sh: growing a cluster from 2 to 4 nodes with
# tools/cluster-move.sh while clients write (issue 14).
#
# A 2-shard cluster of 16 partitions holds two tables of entities over 64
# PartitionKeys.  Two nodes are added and the partitions p with p % 4 = 2
# and p % 4 = 3 move to them, while a writer upserts through the router
# into every partition and records each acknowledged write.  Then:
#   - every entity is on exactly one node, the one its partition names;
#   - nothing was lost or duplicated: the counts through the router and
#     summed over the nodes equal the loaded entities plus the writer's new
#     ones, and every acknowledged write reads back with its value;
#   - ETags survived the move (an entity not written since reads back
#     with the ETag it had);
#   - while a partition is being copied, writes to it and to another
#     partition complete at once (the move is online);
#   - a move killed half-way leaves the partition whole on its node and
#     every entity served once, and the same command, run again, completes.
set -u
cd "$(dirname "$0")/.."
. tools/lib.sh

DIR=$(ts_cluster_dir tsgrow)
trap 'kill $(jobs -p) 2>/dev/null; ts_stop_cluster "$DIR"; ts_rm_cluster_dir "$DIR"' EXIT
fail=0
check() {
	if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAILED: $1: got '$2', want '$3'"; fail=1; fi
}

ts_start_cluster "$DIR" 2 16 >/dev/null || exit 1
ROUTER="host=$DIR/router dbname=tablestore user=postgres"
r() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$ROUTER" "$@"; }

r <<'SQL' >/dev/null
SELECT tablestore.create_table('Orders');
SELECT tablestore.create_table('Audit');
SELECT tablestore.set_table_acl('Orders', '[{"Id": "readers", "Permission": "r"}]');
SELECT count(tablestore.insert_entity(t, jsonb_build_object('PartitionKey', 'k' || (i % 64), 'RowKey', lpad(i::text, 5, '0'), 'N', i)))
FROM generate_series(1, 2000) i, unnest(ARRAY['Orders', 'Audit']) t;
SQL
r -c "SELECT tablestore.get_entity('Orders', 'k3', '00003')->>'odata.etag'" > "$DIR/etag_before"

# two new nodes
for i in 2 3; do
	mkdir -p "$DIR/shard$i"
	ts_start_server "$DIR/shard$i" >/dev/null || exit 1
	psql -X -q -h "$DIR/shard$i" -d postgres -c "CREATE DATABASE tablestore"
	psql -X -q -h "$DIR/shard$i" -d tablestore -c "CREATE EXTENSION tablestore"
done

# the writer: upserts into every partition, one acknowledged key per line
writer() {
	local n=0
	while [ ! -f "$DIR/stop" ]; do
		n=$((n + 1))
		if psql -X -q -At -d "$ROUTER" -c "SELECT tablestore.insert_or_replace_entity('Orders',
			jsonb_build_object('PartitionKey', 'k' || ($n % 64), 'RowKey', 'w$n', 'V', $n)) IS NOT NULL" >/dev/null 2>&1; then
			echo "k$((n % 64)) w$n $n" >> "$DIR/acked"
		fi
	done
}
writer &

# the move is online: while partition 2 is being copied (held half-way by
# MOVE_WAIT_FILE, for as long as the test keeps the file), writes to it and to
# a partition that stays complete (within 5 s on a loaded machine: the copy
# is held until the writes are done, so a write that waited for it would
# never complete)
pk_in() { r -c "SELECT pk FROM (SELECT 'k' || i AS pk FROM generate_series(0, 63) i) k WHERE tablestore_router.partition_of(pk) = $1 LIMIT 1"; }
PK_MOVING=$(pk_in 2)
PK_STAYING=$(pk_in 1)
touch "$DIR/hold"
MOVE_WAIT_FILE=$DIR/hold bash tools/cluster-move.sh "$ROUTER" "host=$DIR/shard2 dbname=tablestore" 2 >"$DIR/move2.log" 2>&1 &
mover=$!
wait_step() {
	for _ in $(seq 1 600); do
		[ "$(r -c "SELECT step FROM tablestore_router.moves WHERE finished_at IS NULL")" = "$1" ] && return 0
		sleep 0.1
	done
	echo "FAILED: the move did not reach step $1"; fail=1
}
wait_step copying
t0=$(date +%s%N)
r -c "SELECT tablestore.insert_or_replace_entity('Audit', '{\"PartitionKey\": \"$PK_STAYING\", \"RowKey\": \"probe\"}') IS NOT NULL" >/dev/null
t1=$(date +%s%N)
r -c "SELECT tablestore.insert_or_replace_entity('Audit', '{\"PartitionKey\": \"$PK_MOVING\", \"RowKey\": \"probe\"}') IS NOT NULL" >/dev/null
t2=$(date +%s%N)
rm -f "$DIR/hold"
wait $mover || { cat "$DIR/move2.log"; fail=1; }
check "a write to a partition that stays does not wait for the move" "$(( (t1 - t0) / 1000000 < 5000 ))" 1
check "a write to the moving partition does not wait for its copy" "$(( (t2 - t1) / 1000000 < 5000 ))" 1

# the rest of the move: p % 4 = 2 to shard2, p % 4 = 3 to shard3
bash tools/cluster-move.sh "$ROUTER" "host=$DIR/shard2 dbname=tablestore" 6 10 14 >"$DIR/move.log" 2>&1 || { cat "$DIR/move.log"; fail=1; }
bash tools/cluster-move.sh "$ROUTER" "host=$DIR/shard3 dbname=tablestore" 3 7 11 15 >>"$DIR/move.log" 2>&1 || { cat "$DIR/move.log"; fail=1; }
touch "$DIR/stop"
wait

# the new nodes got the tables' stored access policies: the router, which
# answers them only when every node agrees, still does
check "stored access policies after the move" "$(r -c "SELECT tablestore.get_table_acl('Orders')")" '[{"Id": "readers", "Permission": "r"}]'
check "partitions per node after the move" \
	"$(r -c "SELECT string_agg(n::text, ' ' ORDER BY node) FROM (SELECT node, count(*) n FROM tablestore_router.partitions() GROUP BY node) x")" "4 4 4 4"

# every entity on the node its partition names, and on no other
misplaced=0
for i in 0 1 2 3; do
	parts=$(r -c "SELECT coalesce(string_agg(partition::text, ','), '-1') FROM tablestore_router.partitions() WHERE node = 'host=$DIR/shard$i dbname=tablestore'")
	for rel in orders audit; do
		n=$(psql -X -q -At -h "$DIR/shard$i" -d tablestore -c "SELECT count(*) FROM tablestore_data.$rel WHERE NOT (tablestore.partition_hash(pk) & 15 = ANY('{$parts}'))")
		misplaced=$((misplaced + n))
	done
done
check "entities on a node that does not hold their partition" "$misplaced" 0

acked=$(wc -l < "$DIR/acked")
total_nodes=0
for i in 0 1 2 3; do
	total_nodes=$((total_nodes + $(psql -X -q -At -h "$DIR/shard$i" -d tablestore -c "SELECT count(*) FROM tablestore_data.orders")))
done
via_router=$(r -c "SELECT count(*) FROM tablestore.query_entities('Orders')")
check "Orders through the router = loaded + acknowledged writes" "$via_router" "$((2000 + acked))"
check "Orders summed over the nodes = through the router" "$total_nodes" "$via_router"
check "Audit through the router" "$(r -c "SELECT count(*) FROM tablestore.query_entities('Audit')")" 2002

# every acknowledged write reads back with its value
r -c "CREATE TEMP TABLE acked (pk text, rk text, v int)" -c "\\copy acked FROM '$DIR/acked' (DELIMITER ' ')" \
	-c "SELECT count(*) FROM acked a WHERE (tablestore.get_entity('Orders', a.pk, a.rk)->>'V')::int IS DISTINCT FROM a.v" > "$DIR/lost"
check "acknowledged writes missing or wrong after the move" "$(tail -1 "$DIR/lost")" 0
check "an entity's ETag survives the move" \
	"$(r -c "SELECT tablestore.get_entity('Orders', 'k3', '00003')->>'odata.etag'")" "$(cat "$DIR/etag_before")"
check "writes went on during the move" "$([ "$acked" -gt 20 ] && echo yes)" yes

# A move killed half-way (its router session terminated while the target
# copies) leaves partition 0 on shard0, whole, and every entity served once
# (shard1, the target, already serves other partitions: queries over every
# node read it, and must not read its copy of partition 0); the same
# command, run again, completes the move.
count_all() { r -c "SELECT (SELECT count(*) FROM tablestore.query_entities('Orders')) || ' ' || (SELECT count(*) FROM tablestore.query_entities('Audit'))"; }
counts_before=$(count_all)
touch "$DIR/hold"
MOVE_WAIT_FILE=$DIR/hold bash tools/cluster-move.sh "$ROUTER" "host=$DIR/shard1 dbname=tablestore" 0 >"$DIR/movefail.log" 2>&1 &
mover=$!
wait_step copying
r -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'CALL tablestore_router.move_partition%'" >/dev/null
wait $mover && { echo "FAILED: a killed move reports success"; fail=1; }
rm -f "$DIR/hold"
check "a killed move leaves the partition on its node" \
	"$(r -c "SELECT node FROM tablestore_router.partitions() WHERE partition = 0")" "host=$DIR/shard0 dbname=tablestore"
check "a killed move changes no count through the router" "$(count_all)" "$counts_before"
check "a killed move is recorded unfinished" "$(r -c "SELECT count(*) FROM tablestore_router.moves WHERE finished_at IS NULL")" 1
bash tools/cluster-move.sh "$ROUTER" "host=$DIR/shard1 dbname=tablestore" 0 >>"$DIR/movefail.log" 2>&1 || { cat "$DIR/movefail.log"; fail=1; }
check "the move, run again, moves the partition" \
	"$(r -c "SELECT node FROM tablestore_router.partitions() WHERE partition = 0")" "host=$DIR/shard1 dbname=tablestore"
check "the move, run again, changes no count through the router" "$(count_all)" "$counts_before"
check "the move, run again, leaves nothing on the old node" \
	"$(psql -X -q -At -h "$DIR/shard0" -d tablestore -c "SELECT (SELECT count(*) FROM tablestore_data.orders WHERE tablestore.partition_hash(pk) & 15 = 0) + (SELECT count(*) FROM tablestore_data.audit WHERE tablestore.partition_hash(pk) & 15 = 0)")" 0
check "the move, run again, leaves no replication behind" \
	"$(psql -X -q -At -h "$DIR/shard0" -d tablestore -c "SELECT (SELECT count(*) FROM pg_publication) + (SELECT count(*) FROM pg_replication_slots)")/$(psql -X -q -At -h "$DIR/shard1" -d tablestore -c "SELECT count(*) FROM pg_subscription")" "0/0"
check "every move is recorded done" "$(r -c "SELECT count(*) FILTER (WHERE step = 'done') || '/' || count(*) FROM tablestore_router.moves")" "9/9"
exit $fail
