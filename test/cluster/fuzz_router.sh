#!/usr/bin/env bash
# test/cluster/fuzz_router.sh: random input for every function of the
# scale-out router (extension tablestore_router) on a live router with 2
# shards.  The router's C code (src/router/) parses the PL/Proxy results,
# merges the pages of queries over every node and raises the shards' errors
# again: what fuzz_live.sh throws at one node is thrown at it here.
#
# Starts a router and 2 shards (log_error_verbosity=verbose), creates the
# roles of test/fuzz_fixture.sql on every server with the grants per shard
# (README "Scale-out", Roles and privileges: CREATE on tablestore_data for
# the owner, the tables granted to ts_fz_user but Secret, the row-level
# security of Policed), loads the fixture through the router's API (psql
# variable ts_router: non-ASCII, supplementary-plane, 512-unit and empty
# keys), and runs test/fuzz_live.py --router against the router for
# FUZZ_ROUTER_SECONDS (default 45) as those four roles and a fifth that
# only the router has (every shard refuses its connections).  Fails on a lost
# connection to the router (a router backend crash), an internal error
# (XX000) from the router or a shard, "(null)" in a message, an error
# message over 8 KiB or a statement that ignores its statement_timeout seen
# by the client, and on any crash, PANIC, failed assertion or XX000 from
# tablestore in the router's or a shard's server log (test/logcheck.py).
# The seed is 1 unless FUZZ_ROUTER_SEED gives one (N, or random; printed); the statements and
# server logs of a failed run are kept in the printed directory.
set -u
cd "$(dirname "$0")/../.."
. tools/lib.sh

SECS=${FUZZ_ROUTER_SECONDS:-45}
SEED=$(ts_seed FUZZ_ROUTER_SEED 1)
SHARDS=2
DIR=$(ts_cluster_dir tsfzrouter)
status=0
finish() {
	local d
	# a backend that ignores cancels may ignore a fast shutdown too
	for d in "$DIR"/router "$DIR"/shard*; do
		[ -f "$d/data/postmaster.pid" ] || continue
		ts_pg_ctl -D "$d/data" -m fast -t 20 -w stop >/dev/null 2>&1 ||
			ts_pg_ctl -D "$d/data" -m immediate -w stop >/dev/null 2>&1
	done
	if [ $status -eq 0 ]; then
		ts_rm_cluster_dir "$DIR"
	else
		echo "fuzz_router: statements and server logs kept in $DIR (statements.log, {router,shard*}/server.log)"
	fi
}
trap finish EXIT
echo "fuzz_router: seed $SEED (FUZZ_ROUTER_SEED=$SEED repeats, =random tries a new one), $SECS s, a router with $SHARDS shards"
ts_start_cluster "$DIR" $SHARDS || { status=1; exit 1; }
export PGOPTIONS="-c client_min_messages=warning"
# every log as test/logcheck.py reads it; a crashed backend's server restarts
ts_cluster_psql "$DIR" -c "ALTER SYSTEM SET log_error_verbosity = verbose" \
	-c "ALTER SYSTEM SET log_min_error_statement = error" -c "ALTER SYSTEM SET log_line_prefix = '%m [%p] '" \
	-c "ALTER SYSTEM SET restart_after_crash = on" -c "SELECT pg_reload_conf()" -o /dev/null || { status=1; exit 1; }

# Roles are per server: the fixture's three on every one.  On the shards,
# the owner may create tables (create_table runs there as the calling role).
shards() {
	local i
	for i in $(seq 0 $((SHARDS - 1))); do
		psql -X -q -At -v ON_ERROR_STOP=1 -h "$DIR/shard$i" -d tablestore "$@" || return 1
	done
}
ts_cluster_psql "$DIR" -c "CREATE ROLE ts_fz_owner LOGIN" -c "CREATE ROLE ts_fz_user LOGIN" \
	-c "CREATE ROLE ts_fz_norights LOGIN" || { status=1; exit 1; }
shards -c "GRANT CREATE ON SCHEMA tablestore_data TO ts_fz_owner" || { status=1; exit 1; }
# and a role that only the router has: the shards refuse its connections
psql -X -q -v ON_ERROR_STOP=1 -d tablestore -c "CREATE ROLE ts_fz_router_only LOGIN" || { status=1; exit 1; }
psql -X -q -At -v ON_ERROR_STOP=1 -v ts_router=1 -d tablestore -o /dev/null -f test/fuzz_fixture.sql || { status=1; exit 1; }
# what one node's fixture grants on its relations, granted on each shard
shards -c "SET ROLE ts_fz_owner" \
	-c "ALTER TABLE tablestore_data.policed ENABLE ROW LEVEL SECURITY" \
	-c "CREATE POLICY visible ON tablestore_data.policed USING ((props->>'Visible')::boolean)" \
	-c "GRANT SELECT, INSERT, UPDATE, DELETE ON tablestore_data.alpha, tablestore_data.beta,
		tablestore_data.gamma, tablestore_data.policed, tablestore_data.longkeys TO ts_fz_user" || { status=1; exit 1; }
echo "fixture: $(psql -X -At -d tablestore -c "SELECT string_agg(t, ' ' ORDER BY t) FROM tablestore.list_tables() t"); entities per shard: $(
	shards -c "SELECT (SELECT count(*) FROM tablestore_data.alpha) + (SELECT count(*) FROM tablestore_data.beta)
		+ (SELECT count(*) FROM tablestore_data.secret) + (SELECT count(*) FROM tablestore_data.policed)" | tr '\n' ' ')"

chmod 777 "$DIR"
python3 test/fuzz_live.py --router "host=$DIR/router dbname=tablestore" "$SECS" "$SEED" "$DIR" || status=1
for d in "$DIR"/router "$DIR"/shard*; do
	if out=$(python3 test/logcheck.py "$d/server.log" src); then
		echo "${d##*/}: ${out##*$'\n'}"
	else
		echo "${d##*/}:"; echo "$out"; status=1
	fi
done
exit $status
