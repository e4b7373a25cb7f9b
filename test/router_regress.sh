#!/usr/bin/env bash
# test/router_regress.sh: the SQL-level suites against a scale-out router
# with 2 shards (issue 14).  The pg_regress tests that exercise the API
# (entities, keys, queries, batch, json_output, validation) run on a router
# and must give the output in test/router/expected/: the single-node output
# except where a test looks at one node's internals (the relations in
# tablestore_data, the catalog tablestore.tables, event triggers), which a
# router does not have; Timestamps and ETags are masked as <time>.  `diff
# expected/X.out test/router/expected/X.out` shows those places and nothing
# else.  The test router (test/router/sql) checks the router itself.  Then
# the pgTAP files errors_test, operations_test, query_test and
# roundtrip_test run through the router.
set -u
cd "$(dirname "$0")/.."
. tools/lib.sh

TESTS="entities keys queries batch json_output validation router"
DIR=$(mktemp -d /tmp/tsrouter.XXXXXX)
status=0
trap 'ts_stop_cluster "$DIR"; rm -rf "$DIR"' EXIT
ts_start_cluster "$DIR" 2 || exit 1

OUT=$DIR/regress
mkdir -p "$OUT"
cp -r test/sql "$OUT/sql"
cp -r test/router/expected "$OUT/expected"
cp test/router/sql/*.sql "$OUT/sql/"
# pg_regress runs the tests; the outputs are compared here, with the
# Timestamps and ETags that a test prints masked (they are clocks)
"$("$PGBIN/pg_config" --pkglibdir)/pgxs/src/test/regress/pg_regress" --use-existing \
	--dbname=tablestore --host="$DIR/router" --user=postgres \
	--inputdir="$OUT" --outputdir="$OUT" $TESTS >"$OUT/pg_regress.log" 2>&1
mask() {
	# the Timestamp property and the time in an ETag; not other DateTimes
	sed -E -e 's/("Timestamp": ?")[0-9][^"]*"/\1<time>"/g' \
		-e "s/datetime'[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}%3A[0-9]{2}%3A[0-9]{2}(\.[0-9]+)?Z'/datetime'<time>'/g" "$1"
}
for t in $TESTS; do
	if [ ! -f "$OUT/results/$t.out" ]; then
		echo "router test $t: no output"; cat "$OUT/pg_regress.log"; status=1; continue
	fi
	mask "$OUT/results/$t.out" > "$OUT/$t.masked"
	if [ -n "${ROUTER_ACCEPT:-}" ]; then
		# ROUTER_ACCEPT=1: take the outputs as the new expected files (review
		# the diff against the single-node expected files before committing)
		cp "$OUT/$t.masked" "test/router/expected/$t.out"
	elif diff -u "test/router/expected/$t.out" "$OUT/$t.masked"; then
		echo "router test $t ... ok"
	else
		echo "router test $t ... FAILED"
		status=1
	fi
done

# pgTAP: the files that test the API (security_test grants on the nodes'
# relations: privileges through a router are test/cluster/robustness.sh's);
# the router's calls commit on the shards, so the regression tests' tables
# are deleted first
psql -X -q -d tablestore -c "CREATE EXTENSION pgtap" \
	-c "SELECT count(tablestore.delete_table(t)) FROM tablestore.list_tables() t" >/dev/null || status=1
pg_prove -d tablestore --failures test/pgtap/errors_test.sql test/pgtap/operations_test.sql \
	test/pgtap/query_test.sql test/pgtap/roundtrip_test.sql || status=1
exit $status
