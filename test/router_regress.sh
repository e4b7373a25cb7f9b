#!/usr/bin/env bash
# test/router_regress.sh: the SQL-level suites against a scale-out router
# with 2 shards (issue 14).  The pg_regress tests that exercise the API
# (entities, keys, queries, batch, json_output, validation, service_forms)
# run on a router and must give the single-node output (expected/X.out,
# with Timestamps and ETags masked as <time>: they are clocks) except where
# a test looks at one node's internals (the relations in tablestore_data,
# the catalog tablestore.tables, event triggers), which a router does not
# have.  Those places, and nothing else, are kept as patches:
# test/router/X.diff turns the masked single-node output into the router's,
# so the router's expected output is generated, never kept twice (a test
# without a patch must give exactly the single-node output).
# ROUTER_ACCEPT=1 rewrites the patches from a run.  The test router
# (test/router/sql, test/router/expected) checks the router itself.  Then
# the pgTAP files errors_test, operations_test, query_test and
# roundtrip_test run through the router.  Run alone it starts its own
# cluster; as a step of test/t/015_router.pl it takes the TAP test's
# (tools/lib.sh, ts_given).
set -u
cd "$(dirname "$0")/.."
. tools/lib.sh

TESTS="${ROUTER_TESTS:-entities keys queries batch json_output validation service_forms router router_acl router_ttl router_propindex}"
DIR=$(ts_cluster_dir tsrouter)
status=0
trap 'ts_stop_cluster "$DIR"; ts_rm_cluster_dir "$DIR"' EXIT
ts_start_cluster "$DIR" 2 || exit 1

OUT=$DIR/regress
mkdir -p "$OUT"
cp -r test/sql "$OUT/sql"
cp -r test/router/expected "$OUT/expected"
cp test/router/sql/*.sql "$OUT/sql/"
# router_expected T: the router's expected output of the node test T, the
# masked single-node output with the test's patch applied
router_expected() {
	ts_mask_clock "expected/$1.out" >"$OUT/expected/$1.out"
	[ ! -f "test/router/$1.diff" ] || patch -s --no-backup-if-mismatch "$OUT/expected/$1.out" "test/router/$1.diff"
}
for t in $TESTS; do
	[ -f "test/router/expected/$t.out" ] || router_expected "$t" || { echo "router test $t: its patch does not apply"; status=1; }
done
# pg_regress runs the tests; the outputs are compared here, with the
# Timestamps and ETags that a test prints masked (they are clocks)
"$("$PGBIN/pg_config" --pkglibdir)/pgxs/src/test/regress/pg_regress" --use-existing \
	--dbname=tablestore --host="$DIR/router" --user=postgres \
	--inputdir="$OUT" --outputdir="$OUT" $TESTS >"$OUT/pg_regress.log" 2>&1
# align_free FILE: the file without psql's column alignment.  A masked
# Timestamp was as wide as its clock made it (trailing zeros of the
# fraction are not printed), and so were the header and the rule of its
# aligned column: leading and trailing blanks go, and a rule line of any
# width reads the same.
align_free() {
	sed -E -e 's/^ +//' -e 's/ +$//' -e 's/^[-+]+$/---/' "$1"
}
for t in $TESTS; do
	if [ ! -f "$OUT/results/$t.out" ]; then
		echo "router test $t: no output"; cat "$OUT/pg_regress.log"; status=1; continue
	fi
	ts_mask_clock "$OUT/results/$t.out" > "$OUT/$t.masked"
	if [ -n "${ROUTER_ACCEPT:-}" ]; then
		# ROUTER_ACCEPT=1: take the outputs as the new expected output (review
		# the patches, which show where the router differs from a node,
		# before committing)
		if [ -f "test/router/expected/$t.out" ]; then
			cp "$OUT/$t.masked" "test/router/expected/$t.out"
		else
			ts_mask_clock "expected/$t.out" >"$OUT/$t.node"
			rm -f "test/router/$t.diff"
			diff -u --label "expected/$t.out" --label "router/$t.out" "$OUT/$t.node" "$OUT/$t.masked" \
				>"$OUT/$t.patch" || cp "$OUT/$t.patch" "test/router/$t.diff"
		fi
	elif diff -u "$OUT/expected/$t.out" "$OUT/$t.masked" >"$OUT/$t.diff" ||
		diff -u <(align_free "$OUT/expected/$t.out") <(align_free "$OUT/$t.masked") >/dev/null; then
		echo "router test $t ... ok"
	else
		echo "router test $t ... FAILED"
		cat "$OUT/$t.diff"
		status=1
	fi
done

# The router's API is the node's: every function of schema tablestore on
# the router has a function of the same name, arguments (names, types,
# defaults), result and volatility on a node; what only nodes have is their
# internals and the router's own calls.
sigs="SELECT p.proname || '(' || pg_get_function_arguments(p.oid) || ') ' || pg_get_function_result(p.oid)
	|| ' ' || p.provolatile::text || p.proretset::text FROM pg_proc p WHERE p.pronamespace = 'tablestore'::regnamespace ORDER BY 1"
psql -X -At -d tablestore -c "$sigs" > "$OUT/router.sigs" &&
	psql -X -At -h "$DIR/shard0" -d tablestore -c "$sigs" > "$OUT/node.sigs" || status=1
extra=$(comm -23 "$OUT/router.sigs" "$OUT/node.sigs")
node_only=$(comm -13 "$OUT/router.sigs" "$OUT/node.sigs" | sed 's/(.*//' | tr '\n' ' ')
want="_check_entity_relation _ddl_command_end _property_index_sql_drop _property_index_valid _property_indexes_tables_deleted _routed_create_property_index _routed_create_property_index_if_absent _routed_create_table _routed_create_table_if_absent _routed_delete_entity _routed_delete_table _routed_delete_table_if_exists _routed_drop_property_index _routed_execute_batch _routed_explain_query _routed_get_entity _routed_get_table_acl _routed_get_table_ttl _routed_insert_entity _routed_insert_or_merge_entity _routed_insert_or_replace_entity _routed_list_tables _routed_merge_entity _routed_query_check _routed_query_entities_page _routed_query_entities_page_json _routed_query_page _routed_set_table_acl _routed_set_table_ttl _routed_update_entity _sql_drop _tables_deleted _tables_deleted_ttl _ttl_catalog_changed create_property_index_if_absent create_table_if_absent delete_table_if_exists key_is_valid property_index_key sweep_expired tskey_handler verify_index "
if [ -n "$extra" ] || [ "$node_only" != "$want" ]; then
	echo "router API: differs from a node's"
	echo "on the router only, or with another signature: $extra"
	echo "on a node only: $node_only (want: $want)"
	status=1
else
	echo "router API: $(wc -l < "$OUT/router.sigs") functions, each with a node's signature"
fi

# Stored access policies are kept on every node: set_table_acl replaces
# them on every node, so that setting them again repairs nodes that differ
# (a set that failed on some node); get_table_acl reads one node under the
# table's name lock in share mode, so that a get concurrent with sets sees
# the list before or after a set, never a set half applied (which read
# every node and raised "differ between nodes" before): 150 sets, each of a
# new list, race 300 gets of the same table, and no get may fail.
acl_q() { psql -X -At -v ON_ERROR_STOP=1 "$@" 2>&1; }
acl_q -d tablestore -c "SELECT tablestore.create_table('AclDiff')" \
	-c "SELECT tablestore.set_table_acl('AclDiff', '[{\"Id\": \"p\"}]')" >/dev/null &&
	acl_q -h "$DIR/shard1" -d tablestore -c "SELECT tablestore.set_table_acl('AclDiff', '[{\"Id\": \"other\"}]')" >/dev/null || status=1
repaired=$(acl_q -d tablestore -c "SELECT tablestore.set_table_acl('AclDiff', '[{\"Id\": \"p\"}]')" \
	-c "SELECT tablestore.get_table_acl('AclDiff')")
on1=$(acl_q -h "$DIR/shard1" -d tablestore -c "SELECT tablestore.get_table_acl('AclDiff')")
if [ "$(echo "$repaired" | sed -n 2p)" = '[{"Id": "p"}]' ] && [ "$on1" = '[{"Id": "p"}]' ]; then
	echo "router stored access policies: nodes that differ are repaired by setting them again"
else
	echo "router stored access policies: after setting again: $repaired; on shard1: $on1"
	status=1
fi
# every list of the race holds "stable", the one before it too (a get that
# ran before the first set read the repaired list and was miscounted)
acl_q -d tablestore -c "SELECT tablestore.set_table_acl('AclDiff', '[{\"Id\": \"stable\"}]')" >/dev/null || status=1
for i in $(seq 1 150); do
	echo "SELECT tablestore.set_table_acl('AclDiff', '[{\"Id\": \"stable\"}, {\"Id\": \"v$i\"}]');"
done >"$OUT/acl_sets.sql"
for i in $(seq 1 300); do echo "SELECT tablestore.get_table_acl('AclDiff');"; done >"$OUT/acl_gets.sql"
psql -X -q -At -d tablestore -f "$OUT/acl_sets.sql" >/dev/null 2>"$OUT/acl_sets.err" &
setter=$!
psql -X -q -At -d tablestore -f "$OUT/acl_gets.sql" >"$OUT/acl_gets.out" 2>"$OUT/acl_gets.err"
wait "$setter"
errors=$(grep -c ERROR "$OUT/acl_sets.err" "$OUT/acl_gets.err" | awk -F: '{ n += $2 } END { print n }')
gets=$(grep -c '"stable"' "$OUT/acl_gets.out")
acl_q -d tablestore -c "SELECT tablestore.delete_table('AclDiff')" >/dev/null || status=1
if [ "$errors" = 0 ] && [ "$gets" = 300 ]; then
	echo "router stored access policies: 300 gets during 150 sets, no error"
else
	echo "router stored access policies: $errors errors, $gets of 300 gets answered, during 150 sets"
	head -3 "$OUT/acl_sets.err" "$OUT/acl_gets.err"
	status=1
fi

# Time to live through the router: with the nodes' clocks 200 s ahead
# (tablestore.clock_offset for their database: the router's next session
# connects anew), the entities of a table with a time to live of 100 s
# are gone for every read and conditional write through the router, an
# insert over one succeeds, and each node's sweep_expired reclaims its own.
ttl_q() { psql -X -At -v ON_ERROR_STOP=1 "$@" 2>&1; }
ttl_q -d tablestore -c "SELECT tablestore.create_table('TtlRouted')" \
	-c "SELECT count(*) FROM (SELECT tablestore.insert_entity('TtlRouted', jsonb_build_object('PartitionKey', 'p' || i, 'RowKey', 'r')) FROM generate_series(1, 20) i) s" \
	-c "SELECT tablestore.set_table_ttl('TtlRouted', 100)" >/dev/null || status=1
for s in shard0 shard1; do
	ttl_q -h "$DIR/$s" -d tablestore -c "ALTER DATABASE tablestore SET tablestore.clock_offset = '200s'" >/dev/null || status=1
done
ttl_out=$(psql -X -At -d tablestore 2>&1 <<'SQL'
SELECT count(*) FROM tablestore.query_entities('TtlRouted');
SELECT tablestore.get_entity('TtlRouted', 'p1', 'r');
SELECT tablestore.merge_entity('TtlRouted', '{"PartitionKey": "p2", "RowKey": "r", "X": 1}');
SELECT tablestore.insert_entity('TtlRouted', '{"PartitionKey": "p3", "RowKey": "r", "New": 1, "TimeToLive": -1}')->>'New';
SELECT string_agg(e->>'PartitionKey', ',') FROM tablestore.query_entities('TtlRouted') e;
SQL
)
swept=0
for s in shard0 shard1; do
	n=$(ttl_q -h "$DIR/$s" -d tablestore -c "SELECT tablestore.sweep_expired('TtlRouted')") || status=1
	swept=$((swept + n))
	ttl_q -h "$DIR/$s" -d tablestore -c "ALTER DATABASE tablestore RESET tablestore.clock_offset" >/dev/null || status=1
done
ttl_q -d tablestore -c "SELECT tablestore.delete_table('TtlRouted')" >/dev/null || status=1
ttl_want="0
ERROR:  entity (\"p1\", \"r\") does not exist
DETAIL:  Table service error code: ResourceNotFound.
ERROR:  entity (\"p2\", \"r\") does not exist
DETAIL:  Table service error code: ResourceNotFound.
1
p3"
if [ "$ttl_out" = "$ttl_want" ] && [ "$swept" = 19 ]; then
	echo "router time to live: expired entities gone through the router, 19 swept on the nodes"
else
	echo "router time to live: got"; echo "$ttl_out"; echo "swept $swept (want 19)"
	status=1
fi

# Property indexes after a node lacks one (a node added, or a partition
# moved, after create_property_index: the mover does not recreate them):
# list_property_indexes through the router shows the index not valid, and
# create_property_index through the router creates it where it is missing
# (doc/property-indexes.md, "After adding a node or moving partitions").
pidx_q() { psql -X -At -v ON_ERROR_STOP=1 "$@" 2>&1; }
pidx_out=$(pidx_q -d tablestore -c "SELECT tablestore.create_table('RouterPidxMove')" \
	-c "SELECT tablestore.create_property_index('RouterPidxMove', 'V', 'Int32') IS NOT NULL" \
	-c "SELECT valid FROM tablestore.list_property_indexes('RouterPidxMove')" &&
	pidx_q -h "$DIR/shard1" -d tablestore -c "SELECT tablestore.drop_property_index('RouterPidxMove', 'V', 'Int32')" &&
	pidx_q -d tablestore -c "SELECT valid FROM tablestore.list_property_indexes('RouterPidxMove')" \
	-c "SELECT tablestore.create_property_index(table_name, property, edm_type) IS NOT NULL FROM tablestore.list_property_indexes('RouterPidxMove') WHERE NOT valid" \
	-c "SELECT valid FROM tablestore.list_property_indexes('RouterPidxMove')" \
	-c "SELECT tablestore.delete_table('RouterPidxMove')")
pidx_want="
t
t
t
f
t
t"
if [ "$pidx_out" = "$pidx_want" ]; then
	echo "router property indexes: a node without the index lists it not valid; create repairs it"
else
	echo "router property indexes: got"; echo "$pidx_out"
	status=1
fi

# The upgrade path of the router: 0.4.0 updated to the current version has
# exactly the functions (definitions, privileges, comments) of a fresh
# installation.
objs="SELECT p.oid::regprocedure::text || ' ' || coalesce(array_to_string(p.proacl, ','), '-') || ' '
	|| md5(pg_get_functiondef(p.oid)) || ' '
	|| md5(coalesce(obj_description(p.oid, 'pg_proc'), '-')) FROM pg_proc p
	WHERE p.pronamespace IN ('tablestore'::regnamespace, 'tablestore_router'::regnamespace) AND p.prokind = 'f' ORDER BY 1"
for db in router_fresh router_updated; do
	psql -X -q -d postgres -c "CREATE DATABASE $db" && psql -X -q -d $db -c "CREATE EXTENSION plproxy" || status=1
done
psql -X -q -d router_fresh -c "CREATE EXTENSION tablestore_router" &&
	psql -X -q -d router_updated -c "CREATE EXTENSION tablestore_router VERSION '0.4.0'" \
		-c "ALTER EXTENSION tablestore_router UPDATE" || status=1
if diff <(psql -X -At -d router_fresh -c "$objs") <(psql -X -At -d router_updated -c "$objs") >"$OUT/upgrade.diff"; then
	echo "router upgrade from 0.4.0: $(psql -X -At -d router_updated -c "SELECT extversion FROM pg_extension WHERE extname = 'tablestore_router'"), the objects of a fresh installation"
else
	echo "router upgrade from 0.4.0: differs from a fresh installation"; cat "$OUT/upgrade.diff"; status=1
fi

# pgTAP: the files that test the API (security_test grants on the nodes'
# relations: privileges through a router are test/cluster/robustness.sh's);
# the router's calls commit on the shards, so the regression tests' tables
# are deleted first
psql -X -q -d tablestore -c "CREATE EXTENSION pgtap" \
	-c "SELECT count(tablestore.delete_table(t)) FROM tablestore.list_tables() t" >/dev/null || status=1
pg_prove -d tablestore --failures test/pgtap/errors_test.sql test/pgtap/operations_test.sql \
	test/pgtap/query_test.sql test/pgtap/roundtrip_test.sql || status=1
exit $status
