#!/usr/bin/env bash
# bench/ttl.sh: expiring ROWS entities (default 1,000,000) while a write
# load runs: the write latency (average, p99) of the same pgbench load in
# three phases on one throwaway server that preloads the library (so the
# time to live worker runs, naptime 1 s, batches of 1,000):
#   off     the table has no time to live
#   on      a time to live of a day: every write probes for an expired
#           entity of its key, nothing has expired, the worker leaves the
#           database alone (tablestore.ttl_worker = off)
#   sweep   a time to live of an hour: the ROWS entities (written two hours
#           ago) have all expired, and the worker deletes them while the
#           load runs
# and how long the worker took to delete them all, and at what rate.  The
# load: CLIENTS pgbench clients, each an insert_or_replace_entity of a
# random one of 100,000 keys of another partition of the same table.
# Writes bench/results/ttl.md.
#
#   bench/ttl.sh                                  # the full run, ~3 minutes
#   ROWS=100000 SECONDS_PER_RUN=10 bench/ttl.sh   # a quick look
set -eu
cd "$(dirname "$0")/.."
. tools/lib.sh

ROWS=${ROWS:-1000000}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-30}
CLIENTS=${CLIENTS:-2}
SETTINGS="-c shared_buffers=512MB -c synchronous_commit=off -c max_wal_size=8GB -c checkpoint_timeout=30min -c tablestore.ttl_naptime=1"

ts_build_install
DIR=$(mktemp -d /tmp/tsbenchttl.XXXXXX)
trap 'ts_stop_server "$DIR"; rm -rf "$DIR"' EXIT
ts_start_server "$DIR" $SETTINGS
OUT=bench/results
mkdir -p "$OUT"
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d postgres "$@"; }
q -c "CREATE EXTENSION tablestore" -c "SELECT tablestore.create_table('Expiring')"
# the entities to expire, written with SQL two hours ago (the stored form of
# an entity without properties), and the load's 100,000 keys, so that every
# phase's upserts replace existing entities
q -c "INSERT INTO tablestore_data.expiring (pk, rk, ts, props)
	SELECT 'p' || (i % 1000), lpad(i::text, 8, '0'), now() - interval '2 hours', '{}'
	FROM generate_series(1, $ROWS) i" \
	-c "INSERT INTO tablestore_data.expiring (pk, rk, ts, props)
	SELECT 'load', i::text, now(), jsonb_build_object('V', i) FROM generate_series(1, 100000) i" \
	-c "VACUUM ANALYZE tablestore_data.expiring"
cat >"$DIR/load.sql" <<'EOF'
\set k random(1, 100000)
SELECT tablestore.insert_or_replace_entity('Expiring', jsonb_build_object('PartitionKey', 'load', 'RowKey', (:k)::text, 'V', (:k)::int));
EOF

# phase NAME: run the load, print "avg p99 tps" (milliseconds)
phase() {
	rm -f "$DIR"/lat.*
	(cd "$DIR" && pgbench -n -M prepared -c "$CLIENTS" -j "$CLIENTS" -T "$SECONDS_PER_RUN" -f load.sql \
		--log --log-prefix=lat postgres >"$DIR/$1.out" 2>&1)
	local tps
	tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$DIR/$1.out")
	cat "$DIR"/lat.* | awk '{ print $3 }' | sort -n |
		awk -v tps="$tps" '{ v[NR] = $1; s += $1 } END { i = int(NR * 0.99); if (i < 1) i = 1;
			printf "%.3f %.3f %.0f %d\n", s / NR / 1000, v[i] / 1000, tps, NR }'
}

# off: no time to live
off=$(phase off)
# on: a day, nothing expired, no sweep
q -c "ALTER DATABASE postgres SET tablestore.ttl_worker = off" -c "SELECT tablestore.set_table_ttl('Expiring', 86400)"
on=$(phase on)
# sweep: an hour; every loaded entity has expired; the worker deletes them
q -c "ALTER DATABASE postgres RESET tablestore.ttl_worker" -c "SELECT tablestore.set_table_ttl('Expiring', 3600)"
t0=$(date +%s.%N)
# the load in the background; meanwhile the moment the last expired entity
# is deleted (polled every 0.2 s; after the phase, for at most 20 minutes)
phase sweep >"$DIR/sweep.result" &
load=$!
t1=
for _ in $(seq 1 6000); do
	if [ "$(q -c "SELECT coalesce(sum(total_deleted), 0) >= $ROWS FROM tablestore.ttl_sweeps")" = t ]; then
		t1=$(date +%s.%N)
		break
	fi
	sleep 0.2
done
wait "$load"
sweep=$(cat "$DIR/sweep.result")
t1=${t1:-$(date +%s.%N)}
total=$(q -c "SELECT coalesce(sum(total_deleted), 0) FROM tablestore.ttl_sweeps")
left=$(q -c "SELECT count(*) FROM tablestore_data.expiring WHERE pk <> 'load'")
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')

{
	echo "# Time to live: write latency while expired entities are swept"
	echo
	echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); server: $(q -c 'SELECT version()' | cut -d, -f1)"
	echo "- settings: \`$SETTINGS\`, batches of $(q -c 'SHOW tablestore.ttl_batch_size') rows"
	echo "- $ROWS expired entities in 1,000 partitions; load: $CLIENTS pgbench clients, insert_or_replace_entity of one of 100,000 keys, ${SECONDS_PER_RUN} s per phase"
	echo
	echo "| phase | avg latency (ms) | p99 latency (ms) | tps | transactions |"
	echo "|---|---|---|---|---|"
	for p in off on sweep; do
		set -- ${!p}
		echo "| $p | $1 | $2 | $3 | $4 |"
	done
	echo
	echo "- the worker deleted all $ROWS expired entities ${secs} s after the time to live was set, under the load ($total deleted, $left left): $(awk -v n="$total" -v s="$secs" 'BEGIN { printf "%.0f", n / s }') rows/s"
} >"$OUT/ttl.md"
cat "$OUT/ttl.md"
