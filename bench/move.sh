#!/usr/bin/env bash
# bench/move.sh [N]: an online partition move under a steady write load
# (issue 23).  A cluster of 2 shards and 2 partitions; partition 0 (shard0)
# holds N entities (default 100000), written on the shard directly; two
# pgbench clients write through the router, one into partition 0, one into
# partition 1, for the whole run (-R: a fixed rate each), while partition 0
# moves to a third node.  Prints the move's time and entities/s, each
# client's writes/s before, during and after the move, and the longest
# latency a write saw during the move (the cutover's pause) and outside it;
# the move's record gives the cutover's parts.  DUR (seconds, default 90)
# is how long the clients write: the move starts after 15 s and must end
# before DUR (DUR=150 for N = 1000000 here).  KEEP=1 keeps the directory.
set -eu
cd "$(dirname "$0")/.."
. tools/lib.sh
N=${1:-100000}
RATE=${RATE:-200}
DIR=$(mktemp -d /tmp/tsbmove.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; ts_stop_cluster "$DIR"; [ -n "${KEEP:-}" ] || rm -rf "$DIR"' EXIT
ts_start_cluster "$DIR" 2 2 >/dev/null
ROUTER="host=$DIR/router dbname=tablestore user=postgres"
mkdir -p "$DIR/shard2"
ts_start_server "$DIR/shard2" -c wal_level=logical >/dev/null
psql -X -q -h "$DIR/shard2" -d postgres -c "CREATE DATABASE tablestore"
psql -X -q -h "$DIR/shard2" -d tablestore -c "CREATE EXTENSION tablestore"
export PGHOST=$DIR/router PGDATABASE=tablestore PGUSER=postgres
psql -X -q -c "SELECT tablestore.create_table('Big')" >/dev/null
# PartitionKeys of each partition
P0=$(psql -X -At -c "SELECT string_agg(k, ' ') FROM (SELECT 'k' || i k FROM generate_series(1, 400) i) x WHERE tablestore_router.partition_of(k) = 0 LIMIT 1" | cut -d' ' -f1-50)
P1=$(psql -X -At -c "SELECT string_agg(k, ' ') FROM (SELECT 'k' || i k FROM generate_series(1, 400) i) x WHERE tablestore_router.partition_of(k) = 1" | cut -d' ' -f1-50)
t=$(date +%s)
psql -X -q -h "$DIR/shard0" -c "SELECT count(tablestore.insert_or_replace_entity('Big', jsonb_build_object('PartitionKey', k, 'RowKey', lpad(i::text, 8, '0'), 'N', i, 'S', repeat('x', 50))))
	FROM unnest(string_to_array('$P0', ' ')) k, generate_series(1, $N / 50) i" >/dev/null
echo "loaded $N entities into partition 0 in $(( $(date +%s) - t )) s"
for p in 0 1; do
	keys=$([ $p = 0 ] && echo "$P0" || echo "$P1")
	cat > "$DIR/w$p.sql" <<SQL
\\set k random(1, 50)
\\set r random(1, 1000000)
SELECT tablestore.insert_or_replace_entity('Big', jsonb_build_object('PartitionKey', (string_to_array('$keys', ' '))[:k], 'RowKey', 'w' || :r, 'N', :r));
SQL
done
DUR=${DUR:-90}
for p in 0 1; do
	(cd "$DIR" && pgbench -n -c 1 -R "$RATE" -T "$DUR" -l --log-prefix="log$p" -f "w$p.sql" >"$DIR/pgbench$p.out" 2>&1) &
done
sleep 15
m0=$(date +%s.%N)
psql -X -q -c "CALL tablestore_router.move_partition(0, 'host=$DIR/shard2 dbname=tablestore')"
m1=$(date +%s.%N)
wait
psql -X -At -F ' ' -c "SELECT rows_moved, extract(epoch FROM elapsed), cutover_ms, detail FROM tablestore_router.moves" > "$DIR/move"
read -r rows secs cut detail < "$DIR/move"
echo "move: $rows entities in $secs s ($(echo "$rows / $secs" | bc) entities/s), cutover pause recorded $cut ms ($detail)"
for p in 0 1; do
	cat "$DIR"/log$p.* | awk -v m0="$m0" -v m1="$m1" -v p="$p" '
		{ t = $5 + $6 / 1e6; lat = $3 / 1000;
		  if (t < m0) { b++; if (bt == "" || t < bt) bt = t } else if (t <= m1) d++; else { a++; at = t }
		  if (t >= m0 && t <= m1) { if (lat > maxd) { maxd = lat; maxdt = t } }
		  else if (lat > maxo) maxo = lat }
		END { printf "writes to partition %d (%s): %.0f/s before, %.0f/s during, %.0f/s after the move; longest write during the move %.1f ms (ended %.1f s after its start), outside it %.1f ms\n",
			p, p == 0 ? "moving" : "staying", b / (m0 - bt), d / (m1 - m0), a / (at - m1), maxd, maxdt - m0, maxo }'
done
