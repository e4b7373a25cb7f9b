#!/usr/bin/env bash
# tools/run-tests.sh: the whole test suite on a throwaway server.
#   pg_regress (test/sql, expected/), isolation tests (test/specs),
#   pgTAP through pg_prove (test/pgtap), the dump/restore round trip, a crash
#   test (pg_ctl stop -m immediate under concurrent writes), a stress test of
#   the tskey index (pgbench clients, VACUUM, then verify_index), a streaming
#   standby replaying the index (test/t/002_standby.pl), the HTTP gateway driven by
#   the Azure SDKs and raw HTTP (test/t/010_gateway.pl), sqlsmith's random SQL
#   (test/sqlsmith.sh), the SQL-level suites through a scale-out router with
#   2 shards (test/t/015_router.pl), random arguments for every function on a live server
#   (test/fuzz_live.sh), the cluster tier (test/t/020_cluster.pl: a router
#   and its shards under outages, moves, faults and random arguments),
#   the $filter parser's unit tests and a 20-second
#   libFuzzer run; at the end, the server log must show no crash.
# Exits non-zero on any failure, printing regression.diffs and the server log.
set -u
cd "$(dirname "$0")/.."
. tools/lib.sh

ts_install_deps || exit 1
ts_build_install || exit 1

TMP=$(mktemp -d /tmp/tstest.XXXXXX)
status=0
cleanup() {
	if [ $status -ne 0 ]; then
		for f in regression.diffs; do
			[ -f "$f" ] && { echo "==== $f"; cat "$f"; }
		done
		echo "==== server log"; tail -n 200 "$TMP/server.log" 2>/dev/null
	fi
	ts_stop_server "$TMP"
	rm -rf "$TMP"
}
trap cleanup EXIT
ts_start_server "$TMP" || { status=1; exit 1; }
# the gateway's HTTP fuzzer reads what the server logged during its run
export TS_SERVER_LOG=$TMP/server.log

# run CMD...: one step of the suite, with its time (doc/testing.md gives
# each tier's time from these lines)
run() {
	local t0=$SECONDS rc=0
	echo "== $*"
	"$@" || rc=1
	[ $rc -eq 0 ] || status=1
	echo "== ($((SECONDS - t0)) s$([ $rc -eq 0 ] || echo ", FAILED")) $1 ${2:-}"
}

rm -rf results regression.diffs regression.out
run make -s installcheck PG_CONFIG="$PGBIN/pg_config"
run psql -X -q -d postgres -c "CREATE DATABASE tap"
run psql -X -q -d tap -c "CREATE EXTENSION pgtap" -c "CREATE EXTENSION tablestore"
# nullmatrix_test.sql (every function with NULL, empty and 10 MB arguments)
# runs last of all on this server, so that if it crashes the server it takes
# no other test down with it
run pg_prove -d tap --failures $(ls test/pgtap/*.sql | grep -v /nullmatrix_test.sql)
# the manual's table of error codes says what tablestore.error_codes() says
run bash test/doc/errors_doc.sh tap
# the multi-server tests on PostgreSQL's TAP framework (test/t: crash
# recovery, a streaming standby, dump and restore, corrupt pages), then the
# crash test again without shared_preload_libraries: tskey on generic WAL
run bash tools/run-tap.sh $(ls test/t/*.pl | grep -v -e _gateway.pl -e _secondary.pl -e _router.pl -e _cluster.pl)
run env TS_PRELOAD=0 bash tools/run-tap.sh test/t/001_crash.pl
run bash test/stress.sh
# the light verify_index beside writers that split the index: no false report
run bash test/verify_light_race.sh
# upserts racing updates on hot keys never fail
run bash test/upsert_race.sh
# the HTTP gateway on a node of its own (test/t/010_gateway.pl)
run bash tools/run-tap.sh test/t/010_gateway.pl
# the gateway's read-access secondary on a streaming standby
# (test/t/012_secondary.pl)
run bash tools/run-tap.sh test/t/012_secondary.pl
# the router tier on PostgreSQL's TAP framework (test/t/015_router.pl, each
# script a step on a router with 2 shards of its own): the SQL-level suites
# through the router (test/router_regress.sh), random calls on one node and
# through a router giving the same output (test/router_diff.sh), the Azure
# SDKs through the gateway in front of a router (test/gateway/router_test.sh)
run bash tools/run-tap.sh test/t/015_router.pl
# the cluster tier on PostgreSQL's TAP framework (test/t/020_cluster.pl,
# each script of test/cluster/ a step on a cluster of its own): the cluster
# under what one node never sees (merge order, paging under writes,
# streaming memory, a stopped and a crashed shard, privileges), concurrent
# queries over every node against the router's lock table, growing from 2
# to 4 nodes under writes (tools/cluster-move.sh, online moves on logical
# replication), issue 23's findings of the old mover, the attack on moves,
# the whitelist of what a moved table may hold, the leftovers of a
# cleanup an owner refuses, a Jepsen-style test of
# moves under writes and faults (fixed seed), rebalancing, a moved
# partition keeping its time to live, and random
# arguments for every function of the router (FUZZ_ROUTER_SECONDS): no
# crash or XX000 on the router or a shard
run bash tools/run-tap.sh test/t/020_cluster.pl
# random input on live servers of their own: sqlsmith's random SQL, and
# random arguments for every function of the extension (each reports how
# many statements it ran; SQLSMITH_SECONDS, FUZZ_LIVE_SECONDS)
run bash test/sqlsmith.sh
run bash test/fuzz_live.sh

# The $filter parser on its own: unit tests, then a bounded fuzz run seeded
# with the test filters (any crash or broken round trip fails the run).
run make -s unit
# the build's check that the router's SQL API is the node's refuses each
# kind of divergence
run sh test/router_api.sh
fuzz() {
	local work
	work=$(mktemp -d /tmp/tsfuzz.XXXXXX)
	make -s fuzz && (cd "$work" && "$OLDPWD/fuzz/filter_fuzzer" "$work" "$OLDPWD/fuzz/corpus" \
		-seed="${FUZZ_SEED:-1}" -max_total_time="${FUZZ_SECONDS:-20}" -print_final_stats=1 >"$work/log" 2>&1)
	local rc=$?
	grep -E "^(stat::number_of_executed_units|Done)" "$work/log"
	[ $rc -eq 0 ] || tail -n 40 "$work/log"
	rm -rf "$work"
	return $rc
}
run fuzz

run pg_prove -d tap --failures test/pgtap/nullmatrix_test.sql

# The server that ran the suite must have survived all of it: no backend
# killed by a signal, no crash restart, no PANIC, no failed assertion.
servercheck() {
	if grep -E "was terminated by signal|terminating any other active server processes|PANIC:|^TRAP:" "$TMP/server.log"; then
		echo "the server log shows a crash"
		return 1
	fi
	echo "no crash in the server log"
}
run servercheck

if [ $status -eq 0 ]; then echo "== all tests passed"; else echo "== TESTS FAILED"; fi
exit $status
