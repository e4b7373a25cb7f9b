#!/usr/bin/env bash
# test/stress.sh: the tskey index under concurrent load.
# Starts its own server; pgbench clients run random inserts, upserts,
# merges, deletes and ordered range scans both ways on a few partitions of one table,
# and a rolling window with scans both ways in another (VACUUM deletes and reuses its leaves)
# (keys long enough, and some in CJK, that the index splits often) while a
# loop VACUUMs it and another runs verify_index (no false report under
# load); then verify_index checks the index against the heap, and
# the entities counted through the index equal those counted without it.
# STRESS_SECONDS (default 45) bounds the run.
set -u
cd "$(dirname "$0")/.."
. tools/lib.sh

SECONDS_RUN=${STRESS_SECONDS:-45}
DIR=$(mktemp -d /tmp/tsstress.XXXXXX)
trap 'ts_stop_server "$DIR"; rm -rf "$DIR"' EXIT
ts_start_server "$DIR" -c max_connections=50 || exit 1
export PGOPTIONS="-c client_min_messages=warning"
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d postgres "$@"; }

q <<'SQL' >/dev/null || exit 1
CREATE EXTENSION tablestore;
SELECT tablestore.create_table('Stress');
CREATE SEQUENCE stress_w;
CREATE FUNCTION currval_or_zero() RETURNS bigint LANGUAGE sql AS $$ SELECT last_value FROM stress_w $$;
-- one random operation; the errors a random key may meet are expected
CREATE FUNCTION stress_op(op int, p int, r int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	kp text := CASE WHEN p = 5 THEN repeat('漢', 200) || p ELSE 'p' || p END;
	kr text := lpad(r::text, 6, '0') || repeat('x', 30);
	w bigint := CASE WHEN op = 12 THEN nextval('stress_w') ELSE currval_or_zero() END;
BEGIN
	IF op <= 3 THEN
		PERFORM tablestore.insert_entity('Stress', jsonb_build_object('PartitionKey', kp, 'RowKey', kr, 'N', r));
	ELSIF op <= 5 THEN
		PERFORM tablestore.insert_or_merge_entity('Stress', jsonb_build_object('PartitionKey', kp, 'RowKey', kr, 'M', op));
	ELSIF op = 6 THEN
		PERFORM tablestore.merge_entity('Stress', jsonb_build_object('PartitionKey', kp, 'RowKey', kr, 'U', op));
	ELSIF op <= 8 THEN
		PERFORM tablestore.delete_entity('Stress', kp, kr);
	ELSIF op = 9 THEN
		PERFORM count(*) FROM (SELECT 1 FROM tablestore_data.stress
			WHERE pk OPERATOR(tablestore.=) kp::tablestore.key
				AND rk OPERATOR(tablestore.>=) kr::tablestore.key
			ORDER BY rk LIMIT 100) s;
	ELSIF op = 12 THEN
		-- a rolling window in partition w: the newest key in, the ones
		-- 2,000 behind out, so that VACUUM deletes and reuses leaves
		PERFORM tablestore.insert_entity('Stress', jsonb_build_object('PartitionKey', 'w', 'RowKey', lpad(w::text, 10, '0')));
		DELETE FROM tablestore_data.stress WHERE pk OPERATOR(tablestore.=) 'w'::tablestore.key
			AND rk OPERATOR(tablestore.>=) lpad((w - 2010)::text, 10, '0')::tablestore.key
			AND rk OPERATOR(tablestore.<) lpad((w - 2000)::text, 10, '0')::tablestore.key;
	ELSIF op = 13 THEN
		PERFORM count(*) FROM (SELECT 1 FROM tablestore_data.stress
			WHERE pk OPERATOR(tablestore.=) 'w'::tablestore.key
				AND rk OPERATOR(tablestore.<=) lpad((w - r)::text, 10, '0')::tablestore.key
			ORDER BY rk DESC LIMIT 500) s;
	ELSIF op = 14 THEN
		PERFORM count(*) FROM (SELECT 1 FROM tablestore_data.stress
			WHERE pk OPERATOR(tablestore.=) 'w'::tablestore.key
				AND rk OPERATOR(tablestore.>=) lpad((w - 3000 - r)::text, 10, '0')::tablestore.key
			ORDER BY rk LIMIT 500) s;
	ELSE
		-- backward, across pages VACUUM may be deleting
		PERFORM count(*) FROM (SELECT 1 FROM tablestore_data.stress
			WHERE pk OPERATOR(tablestore.=) kp::tablestore.key
				AND rk OPERATOR(tablestore.<=) kr::tablestore.key
			ORDER BY rk DESC LIMIT 300) s;
	END IF;
EXCEPTION
	WHEN unique_violation OR no_data_found THEN NULL;
END $$;
SQL

cat >"$DIR/ops.sql" <<'PGB'
\set op random(1, 14)
\set p random(1, 5)
\set r random(1, 4000)
SELECT stress_op(:op, :p, :r);
PGB

# (its sleeps, and the verifier's, pace background work: they wait for no
# condition)
( end=$((SECONDS + SECONDS_RUN)); while [ $SECONDS -lt $end ]; do q -c "VACUUM tablestore_data.stress" >/dev/null 2>&1; sleep 3; done ) &
vacuumer=$!
# verify_index while the clients insert and split pages: it must never
# report corruption that is not there (it locks out writers while it checks)
index=$(q -c "SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'tablestore_data.stress'::regclass")
( end=$((SECONDS + SECONDS_RUN)); while [ $SECONDS -lt $end ]; do
	if q -c "SELECT tablestore.verify_index('$index')" >/dev/null 2>>"$DIR/verify.err"; then echo ok; else echo FAILED; fi
	sleep 1
done >"$DIR/verify.log" ) &
verifier=$!
pgbench -n -d postgres -c 6 -j 2 --random-seed="${STRESS_SEED:-1}" -T "$SECONDS_RUN" -f "$DIR/ops.sql" >"$DIR/pgbench.log" 2>&1
rc=$?
wait $vacuumer
wait $verifier
verifies=$(grep -c ok "$DIR/verify.log")
verify_failed=$(grep -c FAILED "$DIR/verify.log")
tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$DIR/pgbench.log" | head -1)
xacts=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$DIR/pgbench.log")
failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$DIR/pgbench.log")

verify=$(q -c "VACUUM tablestore_data.stress" -c "SELECT tablestore.verify_index('$index')" 2>&1 >/dev/null && echo ok)
heap=$(q -c "SET enable_indexscan = off" -c "SET enable_bitmapscan = off" -c "SELECT count(*) FROM tablestore_data.stress")
byindex=$(q -c "SET enable_seqscan = off" -c "SET enable_bitmapscan = off" \
	-c "SELECT count(*) FROM (SELECT 1 FROM tablestore_data.stress WHERE pk OPERATOR(tablestore.>=) ''::tablestore.key ORDER BY pk, rk) s")
pages=$(q -c "SELECT pg_relation_size('$index') / 8192")

echo "stress: ${SECONDS_RUN}s, 6 clients, $xacts operations (${tps} tps), ${failed:-0} failed; $heap entities, $byindex through the index, $pages index pages; verify_index: $verify, and $verifies times during the load ($verify_failed failed)"
if [ $rc -ne 0 ] || [ "${failed:-0}" != 0 ] || [ "$verify" != "ok" ] || [ "$heap" != "$byindex" ] || [ "${xacts:-0}" -lt 100 ] ||
	[ "$verify_failed" != 0 ] || [ "$verifies" -lt 5 ]; then
	echo "stress test FAILED"; tail -20 "$DIR/pgbench.log"; cat "$DIR/verify.err"; grep -E "ERROR|PANIC|TRAP" "$DIR/server.log" | head
	exit 1
fi
echo "stress: ok"
