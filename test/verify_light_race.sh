#!/usr/bin/env bash
# test/verify_light_race.sh: verify_index's light check (parent_check =>
# false, AccessShareLock) beside writers that split the index: it must never
# report a healthy index as corrupt (attack-wp F2: a downlink to a block the
# index grew by after the check had read its length was "corruption").
# Starts its own server; 2 pgbench clients insert batches of long keys for
# VERIFY_RACE_SECONDS (default 8) while light checks run back to back (at
# most 200); then the parent check with heapallindexed checks the result.
set -u
cd "$(dirname "$0")/.."
. tools/lib.sh

SECONDS_RUN=${VERIFY_RACE_SECONDS:-8}
DIR=$(mktemp -d /tmp/tsvfyrace.XXXXXX)
trap 'ts_stop_server "$DIR"; rm -rf "$DIR"' EXIT
ts_start_server "$DIR" || exit 1
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d postgres "$@"; }

q -c "CREATE EXTENSION tablestore" -c "SELECT tablestore.create_table('Vfy')" >/dev/null || exit 1
cat >"$DIR/vfy.pgb" <<'PGB'
\set k random(1, 1000000000)
SELECT tablestore.execute_batch('Vfy', (SELECT jsonb_agg(jsonb_build_object('op', 'insert_or_replace', 'entity', jsonb_build_object('PartitionKey', 'p', 'RowKey', lpad((:k + i)::text, 400, 'z')))) FROM generate_series(1, 100) i));
PGB
pgbench -n -d postgres -f "$DIR/vfy.pgb" -c 2 -j 1 -T "$SECONDS_RUN" >"$DIR/pgbench.log" 2>&1 &
bench=$!
checks=0
failed=0
while kill -0 $bench 2>/dev/null && [ $checks -lt 200 ]; do
	checks=$((checks + 1))
	q -c "SELECT tablestore.verify_index('tablestore_data.vfy_pk_rk_idx', false, false)" >/dev/null 2>>"$DIR/verify.err" ||
		failed=$((failed + 1))
done
wait $bench || { cat "$DIR/pgbench.log"; exit 1; }
pages=$(q -c "SELECT pg_relation_size('tablestore_data.vfy_pk_rk_idx') / 8192")
final=$(q -c "SELECT tablestore.verify_index('tablestore_data.vfy_pk_rk_idx', true, true)" 2>&1 >/dev/null && echo ok)
echo "verify_light_race: ${SECONDS_RUN}s, $checks light checks beside 2 writers ($failed failed), $pages index pages; parent check: ${final:-FAILED}"
[ $failed -eq 0 ] || { sort "$DIR/verify.err" | uniq -c | head -5; exit 1; }
[ "$final" = ok ]
