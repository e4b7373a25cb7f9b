#!/usr/bin/env bash
# tools/run-tap.sh [test/t/NNN_name.pl ...]: the multi-server tests, on
# PostgreSQL's own TAP framework (PostgreSQL::Test::Cluster from the
# server's pgxs), as the postgres OS user: initdb refuses to run as root,
# and the checkout may not be readable by postgres, so the tests and their
# module are copied into a throwaway directory that postgres owns.  The
# extension must be installed (tools/lib.sh ts_build_install).  Each test's
# logs are kept in that directory when it fails.
set -u
cd "$(dirname "$0")/.."
. tools/lib.sh

PGXS_PERL="$("$PGBIN/pg_config" --pkglibdir)/pgxs/src/test/perl"
WORK=$(mktemp -d /tmp/tstap.XXXXXX)
cp -r test/t test/perl "$WORK/"
chown -R postgres: "$WORK"
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(test/t/*.pl)
rel=()
for t in "${tests[@]}"; do rel+=("t/$(basename "$t")"); done
(cd "$WORK" && runuser -u postgres -- env PATH="$PGBIN:$PATH" TESTDIR="$WORK" PG_REGRESS="$("$PGBIN/pg_config" --pkglibdir)/pgxs/src/test/regress/pg_regress" \
	TS_PRELOAD="${TS_PRELOAD:-1}" PGHOST= PGPORT= PGUSER= PGDATABASE= \
	prove -v -I "$PGXS_PERL" -I perl "${rel[@]}")
rc=$?
if [ $rc -eq 0 ]; then
	rm -rf "$WORK"
else
	echo "TAP tests failed: logs in $WORK/tmp_check/log"
fi
exit $rc
