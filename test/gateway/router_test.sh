#!/usr/bin/env bash
# test/gateway/router_test.sh: the Azure SDKs through tablestore-gateway in
# front of a scale-out router with 2 shards (issue 14): the gateway speaks to
# the router exactly as to one node.
#
# Roles: the gateway logs in to the router as gwt_auth and sets the role of
# the request's account (gwt_dev) as it does on one node; PL/Proxy then
# connects to the shards as that role, so on the shards the role needs LOGIN
# (and the shards' pg_hba.conf must admit it), and it gets the same grants
# there as one node would give it.
#
# One account only: each account has its own database, and a second
# account would need a second router database over its own shard databases;
# the roles and isolation of accounts are tested on one node (run.sh).
#
# Run alone it builds the gateway and starts its own cluster; as a step of
# test/t/015_router.pl it takes the TAP test's cluster (tools/lib.sh,
# ts_given) and the gateway tools/run-tap.sh built.
set -u
cd "$(dirname "$0")/../.."
. tools/lib.sh
status=0
DIR=$(ts_cluster_dir tsgwr)
gw_pid=
finish() {
	[ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null && wait "$gw_pid" 2>/dev/null
	[ $status -ne 0 ] && tail -n 30 "$DIR/gw.log"
	ts_stop_cluster "$DIR"
	ts_rm_cluster_dir "$DIR"
}
trap finish EXIT
# the checkout's gateway, or another build named by GW_BIN
make -s -C gateway tablestore-gateway || exit 1
GW_BIN=${GW_BIN:-gateway/tablestore-gateway}
ts_start_cluster "$DIR" 2 >/dev/null || exit 1

psql -X -q -v ON_ERROR_STOP=1 -d tablestore <<'SQL' || exit 1
CREATE ROLE gwt_auth LOGIN NOINHERIT;
CREATE ROLE gwt_dev NOLOGIN;
GRANT gwt_dev TO gwt_auth;
SQL
for s in "$DIR"/shard*; do
	psql -X -q -v ON_ERROR_STOP=1 -h "$s" -d tablestore <<'SQL' || exit 1
CREATE ROLE gwt_dev LOGIN;
GRANT CREATE ON SCHEMA tablestore_data TO gwt_dev;
SQL
done

dev_key="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
printf 'devstoreaccount1 %s gwt_dev\n' "$dev_key" > "$DIR/accounts"
"$GW_BIN" --db "host=$DIR/router dbname=tablestore user=gwt_auth" \
	--accounts-file "$DIR/accounts" --port 0 --port-file "$DIR/gw.port" --pool 4 >"$DIR/gw.log" 2>&1 &
gw_pid=$!
for _ in $(seq 50); do [ -s "$DIR/gw.port" ] && break; sleep 0.1; done
[ -s "$DIR/gw.port" ] || { echo "the gateway did not start"; status=1; exit 1; }
export GW_PORT=$(cat "$DIR/gw.port") GW_DEV_KEY=$dev_key
unset GW_READER_KEY

if [ ! -d test/gateway/node_modules/@azure/data-tables ]; then
	(cd test/gateway && npm install --no-audit --no-fund --silent) || { status=1; exit 1; }
fi
for t in "node test/gateway/sdk_test.mjs" "/usr/bin/python3 test/gateway/sdk_test.py" "bash test/gateway/http_test.sh"; do
	echo "== gateway through the router: $t"
	$t || { echo "== FAILED: $t"; status=1; }
done
# the service properties the SDK tests set (and set back) are the router's:
# stored in its database, none on the shards
n=$(psql -X -At -h "$DIR/router" -d tablestore -c "SELECT count(*) FROM tablestore.service_properties")
echo "service properties rows in the router's database: $n"
[ "$n" = 1 ] || { echo "== FAILED: the service properties are not stored in the router's database"; status=1; }
for s in "$DIR"/shard*; do
	n=$(psql -X -At -h "$s" -d tablestore -c "SELECT count(*) FROM tablestore.service_properties")
	[ "$n" = 0 ] || { echo "== FAILED: service properties stored on shard $s"; status=1; }
done
# the entities are spread over both shards
for s in "$DIR"/shard*; do
	echo "$s: $(psql -X -At -h "$s" -d tablestore -c "SELECT count(*) FROM tablestore.tables") tables"
done
exit $status
