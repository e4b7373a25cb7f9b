#!/usr/bin/env bash
# bench/propindex.sh: property indexes (issue 26 part 1) on a throwaway
# server.  ROWS entities (default 1,000,000) in 1,000 partitions, each with
# an Int32 property Code (1 entity in 10,000 has a given value) and a
# String Name; the filter "Code eq 4242" (ROWS / 10,000 matches) through
# query_entities
#   - without an index (the key-order scan of the whole table),
#   - with tablestore.create_property_index('Bench', 'Code', 'Int32'),
#   - against a hand-written SQL expression index
#     (((props->>'Code')::integer) WHERE jsonb_typeof(props->'Code') = 'number')
#     queried with plain SQL (ORDER BY pk, rk);
# each the median of RUNS runs.  Then the write cost the index adds:
# insert_entity throughput (pgbench, one client, SECONDS_PER_RUN seconds)
# and WAL per insert, without and with the property index.  Writes
# bench/results/propindex.md.
#
#   bench/propindex.sh                                      # the full run
#   ROWS=100000 SECONDS_PER_RUN=3 RUNS=3 bench/propindex.sh  # a quick look
set -eu
cd "$(dirname "$0")/.."
. tools/lib.sh

ROWS=${ROWS:-1000000}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
RUNS=${RUNS:-5}
SETTINGS="-c shared_buffers=1GB -c synchronous_commit=off -c max_wal_size=8GB -c checkpoint_timeout=30min -c maintenance_work_mem=512MB"

ts_build_install
DIR=$(mktemp -d /tmp/tsbenchpi.XXXXXX)
trap 'ts_stop_server "$DIR"; rm -rf "$DIR"' EXIT
ts_start_server "$DIR" $SETTINGS
OUT=bench/results
mkdir -p "$OUT"
export PGOPTIONS="-c client_min_messages=warning"
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d postgres "$@"; }
# ms SQL: the median time of RUNS runs of one statement in one session
# (after a first run that warms the session's caches), in milliseconds
ms() {
	local args=(-c '\timing on')
	for _ in $(seq $((RUNS + 1))); do args+=(-c "$1"); done
	q "${args[@]}" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -n +2 |
		sort -n | awk '{ a[NR] = $1 } END { printf "%.2f", a[int((NR + 1) / 2)] }'
}
# once SQL: the time of one statement, in milliseconds
once() { q -c '\timing on' -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }

q -c "CREATE EXTENSION tablestore" -c "SELECT tablestore.create_table('Bench')" >/dev/null
# the stored form of an entity with an Int32 and a String (as insert_entity writes them)
q -c "INSERT INTO tablestore_data.bench
	SELECT 'tenant' || lpad((i % 1000)::text, 4, '0'), lpad(i::text, 8, '0'), now(),
		jsonb_build_object('Code', i % 10000, 'Name', 'name' || (i % 977), 'Payload', repeat('x', 40))
	FROM generate_series(1, $ROWS) i" -c "VACUUM ANALYZE tablestore_data.bench"
FILTER="Code eq 4242"
COUNT="SELECT count(*) FROM tablestore.query_entities('Bench', '$FILTER')"
matches=$(q -c "$COUNT")

unindexed=$(ms "$COUNT")
build=$(once "SELECT tablestore.create_property_index('Bench', 'Code', 'Int32')")
size=$(q -c "SELECT pg_size_pretty(size) FROM tablestore.list_property_indexes('Bench')")
access=$(q -c "SELECT tablestore.explain_query('Bench', '$FILTER')->>'access'")
indexed=$(ms "$COUNT")
page=$(ms "SELECT jsonb_array_length(entities) FROM tablestore.query_entities_page('Bench', '$FILTER')")
q -c "SELECT tablestore.drop_property_index('Bench', 'Code', 'Int32')" >/dev/null
sqlbuild=$(once "CREATE INDEX bench_code_sql ON tablestore_data.bench (((props->>'Code')::integer)) WHERE jsonb_typeof(props->'Code') = 'number'")
SQLQ="SELECT count(*) FROM (SELECT pk, rk, props FROM tablestore_data.bench WHERE (props->>'Code')::integer = 4242 AND jsonb_typeof(props->'Code') = 'number' ORDER BY pk, rk) s"
sqlplan=$(q -c "EXPLAIN (COSTS OFF) $SQLQ" | grep -o 'Index Scan using bench_code_sql\|Bitmap Index Scan on bench_code_sql\|Seq Scan' | head -1)
sqlidx=$(ms "$SQLQ")
q -c "DROP INDEX tablestore_data.bench_code_sql"

# the write cost: insert_entity of new entities, without and with the index
cat >"$DIR/insert.sql" <<'SQL'
\set n random(1, 1000000000)
SELECT tablestore.insert_or_replace_entity('Bench', jsonb_build_object('PartitionKey', 'w' || (:n % 1000), 'RowKey', :n::text, 'Code', :n % 10000, 'Name', 'new', 'Payload', repeat('x', 40)));
SQL
# tps_wal: "tps WAL-bytes-per-insert" of a pgbench run of the insert script
tps_wal() {
	local lsn0 lsn1 tps n0 n1
	q -c "CHECKPOINT"
	n0=$(q -c "SELECT count(*) FROM tablestore_data.bench")
	lsn0=$(q -c "SELECT pg_current_wal_lsn()")
	tps=$(pgbench -n -M prepared -c 1 -T "$SECONDS_PER_RUN" -f "$DIR/insert.sql" postgres 2>/dev/null |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p')
	lsn1=$(q -c "SELECT pg_current_wal_lsn()")
	n1=$(q -c "SELECT count(*) FROM tablestore_data.bench")
	echo "$tps $(q -c "SELECT round(pg_wal_lsn_diff('$lsn1', '$lsn0') / greatest($n1 - $n0, 1))")"
}
read -r tps_without wal_without <<<"$(tps_wal)"
q -c "SELECT tablestore.create_property_index('Bench', 'Code', 'Int32')" >/dev/null
read -r tps_with wal_with <<<"$(tps_wal)"

{
	echo "# Property indexes"
	echo
	echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); machine: $(nproc) cores, $(uname -r); server: $(q -c 'SELECT version()' | cut -d, -f1)"
	echo "- settings: \`$SETTINGS\`; timings the median of $RUNS runs; pgbench -M prepared, 1 client, ${SECONDS_PER_RUN}s per cell"
	echo "- data: $ROWS entities in 1,000 partitions; filter \`$FILTER\`: $matches matches (1 in 10,000)"
	echo
	echo "| query | ms | against the unindexed scan |"
	echo "|---|---|---|"
	echo "| query_entities, no index (key-order scan of the table) | $unindexed | 1.0 |"
	echo "| query_entities, property index (explain: $access) | $indexed | $(ratio "$unindexed" "$indexed")x faster |"
	echo "| query_entities_page (one page), property index | $page | $(ratio "$unindexed" "$page")x faster |"
	echo "| plain SQL on a hand-written expression index ($sqlplan) | $sqlidx | $(ratio "$unindexed" "$sqlidx")x faster |"
	echo
	echo "Building: create_property_index $build ms (index $size); the hand-written expression index $sqlbuild ms."
	echo
	echo "| writes (insert_or_replace_entity of new entities) | tps | WAL bytes per insert |"
	echo "|---|---|---|"
	echo "| without a property index | $tps_without | $wal_without |"
	echo "| with the property index on Code | $tps_with | $wal_with |"
} >"$OUT/propindex.md"
cat "$OUT/propindex.md"
