#!/usr/bin/env bash
# test/router_regress.sh: the SQL-level suites against a scale-out router
# with 2 shards (issue 14).  The pg_regress tests that exercise the API
# (entities, keys, queries, batch, json_output) run on a router database
# and must give the output in test/router/expected/: the single-node output
# except where a test looks at one node's internals (the relations in
# tablestore_data, the catalog tablestore.tables, event triggers), which a
# router does not have.  `diff expected/X.out test/router/expected/X.out`
# shows those places and nothing else.  Then pgTAP's errors_test (every
# error code with its SQLSTATE) runs through the router.
set -u
cd "$(dirname "$0")/.."
. tools/lib.sh

TESTS="entities keys queries batch json_output"
DIR=$(mktemp -d /tmp/tsrouter.XXXXXX)
status=0
trap 'ts_stop_cluster "$DIR"; rm -rf "$DIR"' EXIT
ts_start_cluster "$DIR" 2 || exit 1

OUT=$DIR/regress
mkdir -p "$OUT"
cp -r test/sql "$OUT/sql"
cp -r test/router/expected "$OUT/expected"
if ! "$("$PGBIN/pg_config" --pkglibdir)/pgxs/src/test/regress/pg_regress" --use-existing \
	--dbname=tablestore --host="$DIR/router" --user=postgres \
	--inputdir="$OUT" --outputdir="$OUT" $TESTS; then
	cat "$OUT/regression.diffs"
	status=1
fi
# ROUTER_ACCEPT=1: take the outputs as the new expected files (review the
# diff against the single-node expected files before committing)
if [ -n "${ROUTER_ACCEPT:-}" ]; then
	for t in $TESTS; do cp "$OUT/results/$t.out" test/router/expected/; done
fi

psql -X -q -d tablestore -c "CREATE EXTENSION pgtap" || status=1
pg_prove -d tablestore --failures test/pgtap/errors_test.sql || status=1
exit $status
