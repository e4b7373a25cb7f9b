#!/usr/bin/env bash
# tools/gateway-demo.sh: build tablestore and tablestore-gateway, start a
# throwaway PostgreSQL server with the extension in database `demo`, and start
# the gateway next to it on 127.0.0.1 (port $GW_PORT, default 10002, Azurite's
# table port) with the development account devstoreaccount1.  The account acts
# as role tablestore_dev, reached through the gateway's login role
# tablestore_gateway (NOINHERIT, member of tablestore_dev).  Prints the
# connection string the Azure SDKs take, and how to stop everything.
set -eu
cd "$(dirname "$0")/.."
. tools/lib.sh

port=${GW_PORT:-10002}
ts_install_deps
ts_build_install
make -s -C gateway

dir=$(mktemp -d /tmp/tsgw-demo.XXXXXX)
ts_start_server "$dir"
chmod 755 "$dir"
psql -X -q -v ON_ERROR_STOP=1 -d postgres <<'SQL'
CREATE DATABASE demo;
DO $$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'tablestore_dev') THEN
		CREATE ROLE tablestore_dev NOLOGIN;
	END IF;
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'tablestore_gateway') THEN
		CREATE ROLE tablestore_gateway LOGIN NOINHERIT IN ROLE tablestore_dev;
	END IF;
END $$;
SQL
psql -X -q -v ON_ERROR_STOP=1 -d demo -c "CREATE EXTENSION tablestore" \
	-c "GRANT CREATE ON SCHEMA tablestore_data TO tablestore_dev"

key="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
install -m 0755 gateway/tablestore-gateway "$dir/tablestore-gateway"
# lines "name key [role [database]]": the one account uses --db's database
# (demo); another account would need a database of its own, since accounts
# never share one (an account's tables are its own)
printf 'devstoreaccount1 %s tablestore_dev\n' "$key" >"$dir/accounts"
chown postgres: "$dir/accounts"
chmod 600 "$dir/accounts"
(cd / && exec runuser -u postgres -- "$dir/tablestore-gateway" \
	--db "host=$dir dbname=demo user=tablestore_gateway" \
	--accounts-file "$dir/accounts" \
	--port "$port" --port-file "$dir/gateway.port") >"$dir/gateway.log" 2>&1 </dev/null &
echo $! >"$dir/gateway.pid"
for _ in $(seq 50); do [ -s "$dir/gateway.port" ] && break; sleep 0.1; done
[ -s "$dir/gateway.port" ] || { cat "$dir/gateway.log"; exit 1; }

cat <<EOF
tablestore-gateway listens on http://127.0.0.1:$port/devstoreaccount1 (log: $dir/gateway.log)

connection string (JavaScript: pass { allowInsecureConnection: true } as client options):
  DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=$key;TableEndpoint=http://127.0.0.1:$port/devstoreaccount1;

psql:  psql -h $dir -U postgres demo
stop:  kill \$(cat $dir/gateway.pid); runuser -u postgres -- $PGBIN/pg_ctl -D $dir/data stop && rm -rf $dir
EOF
