#!/usr/bin/env bash
# test/fuzz_live.sh: random input for every SQL function of tablestore on a
# live server.  Starts its own server (log_error_verbosity=verbose), loads
# test/fuzz_fixture.sql, and runs test/fuzz_live.py (python3 standard
# library, libpq through ctypes) for FUZZ_LIVE_SECONDS (default 60): random
# filters, select lists, entities, keys, continuations, ETags, batches,
# table names and NULLs for every function of the extension, as four roles.
# Fails on any lost connection (backend crash), internal error (XX000),
# error message over 8 KiB or statement that ignores its statement_timeout
# seen by the client, and on any crash, PANIC,
# failed assertion or XX000 from tablestore in the server log
# (test/logcheck.py).  The seed is 1 unless FUZZ_LIVE_SEED gives one (N, or random for a new one; printed on every run);
# the statements of a failed run are kept in the printed directory.
set -u
cd "$(dirname "$0")/.."
. tools/lib.sh

SECS=${FUZZ_LIVE_SECONDS:-60}
SEED=$(ts_seed FUZZ_LIVE_SEED 1)
DIR=$(mktemp -d /tmp/tsfuzzlive.XXXXXX)
status=0
finish() {
	# a backend that ignores cancels may ignore a fast shutdown too
	if [ -f "$DIR/data/postmaster.pid" ]; then
		(cd / && runuser -u postgres -- pg_ctl -D "$DIR/data" -m fast -t 20 -w stop >/dev/null 2>&1) ||
			(cd / && runuser -u postgres -- pg_ctl -D "$DIR/data" -m immediate -w stop >/dev/null 2>&1)
	fi
	if [ $status -eq 0 ]; then
		rm -rf "$DIR"
	else
		echo "fuzz_live: statements and server log kept in $DIR (statements.log, server.log)"
	fi
}
trap finish EXIT
ts_start_server "$DIR" -c log_error_verbosity=verbose -c log_min_error_statement=error \
	-c "log_line_prefix='%m [%p] '" -c restart_after_crash=on || { status=1; exit 1; }
export PGOPTIONS="-c client_min_messages=warning"
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

q -d postgres -c "CREATE DATABASE fz" >/dev/null || { status=1; exit 1; }
q -d fz -c "CREATE EXTENSION tablestore" -o /dev/null -f test/fuzz_fixture.sql || { status=1; exit 1; }
# the odd relations the extension let the fixture make (ideally none)
q -d fz -c "SELECT 'fixture: relations in tablestore_data: ' || string_agg(relname, ' ' ORDER BY relname) FROM pg_class WHERE relnamespace = 'tablestore_data'::regnamespace AND relkind IN ('r', 'p', 'v')"
chmod 777 "$DIR"
echo "fuzz_live: seed $SEED (FUZZ_LIVE_SEED=$SEED repeats this run, FUZZ_LIVE_SEED=random tries a new one)"
python3 test/fuzz_live.py "host=$DIR dbname=fz" "$SECS" "$SEED" "$DIR" || status=1
python3 test/logcheck.py "$DIR/server.log" src || status=1
exit $status
