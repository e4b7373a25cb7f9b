#!/usr/bin/env bash
# test/cluster/frozen_shard.sh: a call to a shard that hangs (its processes
# stopped with SIGSTOP, as a host that stops answering without closing its
# connections) must still end at the router's statement_timeout, and a
# router backend must still obey pg_terminate_backend.  KNOWN TO FAIL (not
# part of the test command): when the timeout fires, PL/Proxy 2.10
# (plproxy_exec) cancels the remote query with libpq's PQcancel, which in
# PostgreSQL 15 waits for the shard's postmaster to answer with no time
# limit, in a recv() that no interrupt ends; the router backend is stuck,
# unkillable, until the shard runs again.
#
# Starts a router with 2 shards; a session reads an entity on shard1 (so it
# holds a connection to it), shard1's processes are stopped, then the
# session reads again with statement_timeout 2 s; if it has not ended 6 s
# later it is terminated, and the shard is resumed when the session has
# ended or 20 s after the stop.  Passes if the session ended before the
# shard was resumed.
set -u -o pipefail
export LC_ALL=C
cd "$(dirname "$0")/../.."
. tools/lib.sh

DIR=$(ts_cluster_dir tsfrozen)
chmod 755 "$DIR"
frozen=""
trap '[ -n "$frozen" ] && kill -CONT $frozen; wait; ts_stop_cluster "$DIR"; ts_rm_cluster_dir "$DIR"' EXIT
ts_start_cluster "$DIR" 2 >/dev/null || exit 1
export PGUSER=postgres
R() { psql -X -q -At -h "$DIR/router" -d tablestore -v ON_ERROR_STOP=1 "$@"; }

R -c "SELECT tablestore.create_table('Frozen')" \
	-c "SELECT tablestore.insert_entity('Frozen', '{\"PartitionKey\": \"a\", \"RowKey\": \"1\"}')" >/dev/null || exit 1
[ "$(R -c "SELECT tablestore_router.partition_of('a') % 2")" = 1 ] || { echo "partition key a is not on shard1"; exit 1; }

start=$SECONDS
PGAPPNAME=frozen_test psql -X -q -At -h "$DIR/router" -d tablestore -v VERBOSITY=sqlstate >"$DIR/session.out" 2>&1 <<SQL &
SELECT tablestore.get_entity('Frozen', 'a', '1')->>'RowKey';
\! touch $DIR/connected; bash $TS_LIB ts_until_file $DIR/frozen
SET statement_timeout = '2s';
SELECT tablestore.get_entity('Frozen', 'a', '1')->>'RowKey';
SQL
session=$!
ts_until_file "$DIR/connected" || exit 1
pm=$(head -n 1 "$DIR/shard1/data/postmaster.pid")
frozen="$pm $(pgrep -P "$pm" | tr '\n' ' ')"
kill -STOP $frozen
touch "$DIR/frozen"
# the session ends at its statement_timeout, or else within 6 s of its
# termination (or never, while the shard is stopped)
ended() { ! kill -0 "$session" 2>/dev/null; }
if ! ts_until -t 6 ended 2>/dev/null; then
	R -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'frozen_test'" >/dev/null
	ts_until -t 14 ended 2>/dev/null
fi
if ! ended; then
	ended="no: still waiting after $((SECONDS - start)) s, past statement_timeout and pg_terminate_backend"
else
	ended="yes, after $((SECONDS - start)) s"
fi
kill -CONT $frozen
frozen=""
wait "$session"
echo "a call to a stopped shard ended before the shard resumed: $ended"
sed 's/^/  session: /' "$DIR/session.out"
case "$ended" in
yes*) exit 0 ;;
*) exit 1 ;;
esac
