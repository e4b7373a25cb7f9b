#!/usr/bin/env bash
# tools/run-tests.sh: the whole test suite on a throwaway server.
#   pg_regress (test/sql, expected/), isolation tests (test/specs),
#   pgTAP through pg_prove (test/pgtap), and the dump/restore round trip.
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
		for f in regression.diffs output_iso/regression.diffs; do
			[ -f "$f" ] && { echo "==== $f"; cat "$f"; }
		done
		echo "==== server log"; tail -n 200 "$TMP/server.log" 2>/dev/null
	fi
	ts_stop_server "$TMP"
	rm -rf "$TMP"
}
trap cleanup EXIT
ts_start_server "$TMP" || { status=1; exit 1; }

run() {
	echo "== $*"
	"$@" || status=1
}

rm -rf results output_iso regression.diffs regression.out
run make -s installcheck PG_CONFIG="$PGBIN/pg_config"
run psql -X -q -d postgres -c "CREATE DATABASE tap"
run psql -X -q -d tap -c "CREATE EXTENSION pgtap" -c "CREATE EXTENSION tablestore"
run pg_prove -d tap --failures test/pgtap/*.sql
run bash test/dump_restore.sh

if [ $status -eq 0 ]; then echo "== all tests passed"; else echo "== TESTS FAILED"; fi
exit $status
