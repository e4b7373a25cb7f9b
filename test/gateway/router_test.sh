#!/usr/bin/env bash
# test/gateway/router_test.sh: the Azure SDKs through tablestore-gateway in
# front of a scale-out router with 2 shards (issue 14): the gateway speaks to
# the router exactly as to one node.
#
# Roles: the gateway logs in to the router as gwt_auth and sets the role of
# each request's account (gwt_dev, gwt_reader) as it does on one node;
# PL/Proxy then connects to the shards as that role, so on the shards those
# roles need LOGIN (and the shards' pg_hba.conf must admit them), and they
# get the same grants there as one node would give them.
set -u
cd "$(dirname "$0")/../.."
. tools/lib.sh
status=0
DIR=$(mktemp -d /tmp/tsgwr.XXXXXX)
gw_pid=
finish() {
	[ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null && wait "$gw_pid" 2>/dev/null
	[ $status -ne 0 ] && tail -n 30 "$DIR/gw.log"
	ts_stop_cluster "$DIR"
	rm -rf "$DIR"
}
trap finish EXIT
make -s -C gateway tablestore-gateway || exit 1
ts_start_cluster "$DIR" 2 >/dev/null || exit 1

psql -X -q -v ON_ERROR_STOP=1 -d tablestore <<'SQL' || exit 1
CREATE ROLE gwt_auth LOGIN NOINHERIT;
CREATE ROLE gwt_dev NOLOGIN;
CREATE ROLE gwt_reader NOLOGIN;
GRANT gwt_dev, gwt_reader TO gwt_auth;
SQL
for s in "$DIR"/shard*; do
	psql -X -q -v ON_ERROR_STOP=1 -h "$s" -d tablestore <<'SQL' || exit 1
CREATE ROLE gwt_dev LOGIN;
CREATE ROLE gwt_reader LOGIN;
GRANT CREATE ON SCHEMA tablestore_data TO gwt_dev;
ALTER DEFAULT PRIVILEGES FOR ROLE gwt_dev IN SCHEMA tablestore_data GRANT SELECT ON TABLES TO gwt_reader;
SQL
done

reader_key=$(openssl rand -base64 32)
dev_key="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
printf 'devstoreaccount1 %s gwt_dev\nreader %s gwt_reader\n' "$dev_key" "$reader_key" > "$DIR/accounts"
gateway/tablestore-gateway --db "host=$DIR/router dbname=tablestore user=gwt_auth" \
	--accounts-file "$DIR/accounts" --port 0 --port-file "$DIR/gw.port" --pool 4 >"$DIR/gw.log" 2>&1 &
gw_pid=$!
for _ in $(seq 50); do [ -s "$DIR/gw.port" ] && break; sleep 0.1; done
[ -s "$DIR/gw.port" ] || { echo "the gateway did not start"; status=1; exit 1; }
export GW_PORT=$(cat "$DIR/gw.port") GW_READER_KEY=$reader_key GW_DEV_KEY=$dev_key

if [ ! -d test/gateway/node_modules/@azure/data-tables ]; then
	(cd test/gateway && npm install --no-audit --no-fund --silent) || { status=1; exit 1; }
fi
for t in "node test/gateway/sdk_test.mjs" "/usr/bin/python3 test/gateway/sdk_test.py" "bash test/gateway/http_test.sh"; do
	echo "== gateway through the router: $t"
	$t || { echo "== FAILED: $t"; status=1; }
done
# the entities are spread over both shards
for s in "$DIR"/shard*; do
	echo "$s: $(psql -X -At -h "$s" -d tablestore -c "SELECT count(*) FROM tablestore.tables") tables"
done
exit $status
