#!/usr/bin/env bash
# tools/gateway-demo.sh: build tablestore and tablestore-gateway, start a
# throwaway PostgreSQL server with the extension in database `demo`, and start
# the gateway next to it on 127.0.0.1, port 10002 (Azurite's table port, so
# that the connection string UseDevelopmentStorage=true works in every SDK)
# with the development account devstoreaccount1.  The account acts as role
# tablestore_dev, reached through the gateway's login role tablestore_gateway
# (NOINHERIT, member of tablestore_dev).
#
#   tools/gateway-demo.sh [--tls] [--port N] [--background]
#
# --tls         serve HTTPS with a certificate generated for 127.0.0.1 and
#               localhost, and print how each SDK is told to trust it
# --port N      another port (also $GW_PORT); the SDKs' development connection
#               string means 10002
# --background  leave everything running and print the command that stops it;
#               by default the script prints the request log until Ctrl-C,
#               then stops everything
#
# A port already in use is reported before anything is built, and whatever
# the script started is stopped if a later step fails.
set -eu
cd "$(dirname "$0")/.."

port=${GW_PORT:-10002}
tls=0
background=0
while [ $# -gt 0 ]; do
	case $1 in
		--tls) tls=1 ;;
		--background) background=1 ;;
		--port)
			[ $# -ge 2 ] || { echo "--port needs a number" >&2; exit 2; }
			port=$2
			shift
			;;
		-h | --help)
			sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'
			exit 0
			;;
		*)
			echo "unknown option $1 (--tls, --port N, --background)" >&2
			exit 2
			;;
	esac
	shift
done
case $port in '' | *[!0-9]*) echo "the port must be a number, not '$port'" >&2; exit 2 ;; esac

# the port first: a taken port is said before minutes of building
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
	echo "port $port on 127.0.0.1 is already in use (an Azurite, another demo?)." >&2
	echo "Stop what listens there, or give another port with --port N (the SDKs' UseDevelopmentStorage=true means 10002)." >&2
	exit 1
fi

. tools/lib.sh
ts_install_deps
ts_build_install
make -s -C gateway

dir=$(mktemp -d /tmp/tsgw-demo.XXXXXX)
gw_pid=
tail_pid=
# stop: the gateway and the server, and their directory, whatever fails
stop() {
	set +e
	[ -z "$tail_pid" ] || kill "$tail_pid" 2>/dev/null
	if [ -n "$gw_pid" ]; then
		kill "$gw_pid" 2>/dev/null
		wait "$gw_pid" 2>/dev/null
	fi
	ts_stop_server "$dir"
	rm -rf "$dir"
}
trap stop EXIT
trap 'exit 130' INT TERM

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
tlsopts=()
scheme=http
if [ $tls = 1 ]; then
	scheme=https
	openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=tablestore-gateway demo" \
		-addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
		-keyout "$dir/tls.key" -out "$dir/tls.crt" 2>/dev/null
	chmod 644 "$dir/tls.crt"
	tlsopts=(--tls-cert "$dir/tls.crt" --tls-key "$dir/tls.key")
fi
chown postgres: "$dir/accounts" "$dir"/tls.* 2>/dev/null || true
chmod 600 "$dir/accounts"
# -v: one line per request in the log (client, method, path, status)
(cd / && exec runuser -u postgres -- "$dir/tablestore-gateway" \
	--db "host=$dir dbname=demo user=tablestore_gateway" \
	--accounts-file "$dir/accounts" "${tlsopts[@]}" -v \
	--port "$port" --port-file "$dir/gateway.port") >"$dir/gateway.log" 2>&1 </dev/null &
gw_pid=$!
echo "$gw_pid" >"$dir/gateway.pid"
for _ in $(seq 50); do [ -s "$dir/gateway.port" ] && break; sleep 0.1; done
[ -s "$dir/gateway.port" ] || { cat "$dir/gateway.log"; exit 1; }

endpoint=$scheme://127.0.0.1:$port/devstoreaccount1
conn="DefaultEndpointsProtocol=$scheme;AccountName=devstoreaccount1;AccountKey=$key;TableEndpoint=$endpoint;"
echo
echo "tablestore-gateway listens on $endpoint"
echo
if [ $tls = 0 ] && [ "$port" = 10002 ]; then
	cat <<EOF
connection string, for every SDK (JavaScript, Python, .NET, Java) and az:
  UseDevelopmentStorage=true
or, spelled out (the JavaScript SDK then needs { allowInsecureConnection: true }):
  $conn
EOF
elif [ $tls = 0 ]; then
	cat <<EOF
connection string (JavaScript: pass { allowInsecureConnection: true } as client options):
  $conn
EOF
else
	if command -v keytool >/dev/null 2>&1; then
		keytool -importcert -noprompt -alias tablestore-demo -file "$dir/tls.crt" \
			-keystore "$dir/truststore.p12" -storetype PKCS12 -storepass changeit >/dev/null 2>&1 || true
	fi
	cat <<EOF
connection string (every SDK and az):
  $conn

The certificate is $dir/tls.crt (self-signed, for 127.0.0.1 and localhost).
Tell each client to trust it:
  JavaScript (node)       NODE_EXTRA_CA_CERTS=$dir/tls.crt node app.mjs
  Python, az CLI          REQUESTS_CA_BUNDLE=$dir/tls.crt python3 app.py
                          REQUESTS_CA_BUNDLE=$dir/tls.crt az storage table list --connection-string "..."
  .NET on Linux (OpenSSL) SSL_CERT_FILE=$dir/tls.crt dotnet run
  Java                    java -Djavax.net.ssl.trustStore=$dir/truststore.p12 -Djavax.net.ssl.trustStorePassword=changeit ...
EOF
fi
echo
echo "psql:  psql -h $dir -U postgres demo"
if [ $background = 1 ]; then
	trap - EXIT
	cat <<EOF
log:   tail -f $dir/gateway.log
stop:  kill \$(cat $dir/gateway.pid); runuser -u postgres -- $PGBIN/pg_ctl -D $dir/data stop && rm -rf $dir
EOF
	exit 0
fi
echo "requests as they arrive (Ctrl-C stops the gateway and the server):"
echo
tail -n +1 -f "$dir/gateway.log" &
tail_pid=$!
wait "$gw_pid" || true
gw_pid=
echo "the gateway stopped:" >&2
tail -n 5 "$dir/gateway.log" >&2
exit 1
