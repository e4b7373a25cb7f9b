#!/usr/bin/env bash
# test/gateway/run.sh: tablestore-gateway against the server tools/run-tests.sh
# started (PGHOST etc. set).  Builds the gateway, creates database gwtest with
# three roles (the gateway's login role gwt_auth, NOINHERIT, member of
# gwt_dev and gwt_reader), starts the gateway on a free loopback port with
# accounts devstoreaccount1 -> gwt_dev and reader -> gwt_reader, then runs
#   sdk_test.mjs   the JavaScript SDK (@azure/data-tables from npm)
#   sdk_test.py    the Python SDK (Debian's python3-azure)
#   http_test.sh   raw HTTP: signatures, malformed requests, limits
#   load_test.mjs  concurrent clients for a bounded time
#   pool_test.sh   a second gateway with one connection: roles, back-pressure
#   tls_test.sh    a third gateway serving HTTPS
#   fuzz_batch     libFuzzer on the multipart and entity path parsers
#   resource_test.py  its own -O2 gateway under slowloris, unauthenticated
#                  bodies, over-long requests and unread pages: probes and RSS
#   fuzz_http.py   signed and raw mutated HTTP requests (XX000 checked in
#                  $TS_SERVER_LOG, which tools/run-tests.sh exports)
# and checks that the gateway is still running and that it holds no more
# database connections than its pool.
set -u
cd "$(dirname "$0")/../.."
status=0
work=$(mktemp -d /tmp/tsgw.XXXXXX)
gw_pid=
finish() {
	for p in $gw_pid; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	if [ $status -ne 0 ]; then
		for f in "$work"/*.log; do echo "==== $f (tail)"; tail -n 30 "$f"; done
	fi
	rm -rf "$work"
}
trap finish EXIT

# the tests run the gateway built with AddressSanitizer, LeakSanitizer and
# UBSan: a memory error or undefined behaviour aborts it, and a leak is
# reported when it stops
make -s -C gateway tablestore-gateway tablestore-gateway-asan || exit 1
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1

psql -X -q -v ON_ERROR_STOP=1 -d postgres <<'SQL' || exit 1
DROP DATABASE IF EXISTS gwtest;
CREATE DATABASE gwtest;
DO $$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'gwt_auth') THEN
		CREATE ROLE gwt_auth LOGIN NOINHERIT;
		CREATE ROLE gwt_dev NOLOGIN;
		CREATE ROLE gwt_reader NOLOGIN;
		GRANT gwt_dev, gwt_reader TO gwt_auth;
	END IF;
END $$;
SQL
psql -X -q -v ON_ERROR_STOP=1 -d gwtest <<'SQL' || exit 1
CREATE EXTENSION tablestore;
ALTER DATABASE gwtest SET log_error_verbosity = verbose;
GRANT CREATE ON SCHEMA tablestore_data TO gwt_dev;
ALTER DEFAULT PRIVILEGES FOR ROLE gwt_dev IN SCHEMA tablestore_data GRANT SELECT ON TABLES TO gwt_reader;
SQL

reader_key=$(openssl rand -base64 32)
dev_key="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
cat >"$work/accounts" <<EOF
# name key role
devstoreaccount1 $dev_key gwt_dev
reader $reader_key gwt_reader
EOF
# start_gateway NAME OPTIONS...: start a gateway, wait for its port
start_gateway() {
	local name=$1
	shift
	gateway/tablestore-gateway-asan --db "host=$PGHOST port=${PGPORT:-5432} dbname=gwtest user=gwt_auth" \
		--accounts-file "$work/accounts" --port 0 --port-file "$work/$name.port" "$@" >"$work/$name.log" 2>&1 &
	gw_pid="$gw_pid $!"
	for _ in $(seq 50); do [ -s "$work/$name.port" ] && break; sleep 0.1; done
	[ -s "$work/$name.port" ] || { echo "gateway $name did not start"; cat "$work/$name.log"; status=1; exit 1; }
}
pool=6
start_gateway gw --pool $pool --threads 4 --pool-wait-ms 10000
export GW_PORT=$(cat "$work/gw.port") GW_READER_KEY=$reader_key GW_DEV_KEY=$dev_key
echo "gateway on port $GW_PORT"

step() {
	echo "== gateway: $1"
	shift
	"$@" || { echo "== gateway: FAILED"; status=1; }
}

# The JavaScript SDK from npm, pinned in package.json, into a directory
# that git ignores.
if [ ! -d test/gateway/node_modules/@azure/data-tables ]; then
	(cd test/gateway && npm install --no-audit --no-fund --silent) || { echo "npm install failed"; status=1; exit 1; }
fi
step "JavaScript SDK" node test/gateway/sdk_test.mjs
step "Python SDK" /usr/bin/python3 test/gateway/sdk_test.py
step "raw HTTP" bash test/gateway/http_test.sh
step "strict parsing: batch framing, JSON bodies, a batch without database" bash test/gateway/strict_test.sh
step "load" node test/gateway/load_test.mjs

# one pooled connection: roles end with their request, back-pressure, timeout
start_gateway pool1 --pool 1 --pool-wait-ms 300 --statement-timeout-ms 1500
GW_PORT=$(cat "$work/pool1.port") step "pool of one" bash test/gateway/pool_test.sh

# HTTPS with a throwaway certificate for 127.0.0.1
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
	-keyout "$work/tls.key" -out "$work/tls.crt" 2>/dev/null || { echo "openssl req failed"; status=1; }
start_gateway tls --tls-cert "$work/tls.crt" --tls-key "$work/tls.key" --pool 2
GW_PORT=$(cat "$work/tls.port") GW_TLS_CA=$work/tls.crt step "HTTPS" bash test/gateway/tls_test.sh
GW_PORT=$(cat "$work/tls.port") GW_SCHEME=https NODE_EXTRA_CA_CERTS=$work/tls.crt \
	step "JavaScript SDK over HTTPS" node test/gateway/sdk_test.mjs

# the parsers of untrusted bytes under libFuzzer, seeded with JavaScript-
# and Python-style batches and an entity path (GW_FUZZ_SECONDS, default 15)
fuzz_batch() {
	local corpus
	corpus=$(mktemp -d /tmp/tsgwfuzz.XXXXXX)
	make -s -C gateway fuzz_batch &&
		(cd "$corpus" && "$OLDPWD/gateway/fuzz_batch" "$corpus" "$OLDPWD/gateway/fuzz-corpus" \
			-max_total_time="${GW_FUZZ_SECONDS:-15}" -print_final_stats=1 >"$corpus/log" 2>&1)
	local rc=$?
	grep -E "^(stat::number_of_executed_units|Done)" "$corpus/log"
	[ $rc -eq 0 ] || tail -n 40 "$corpus/log"
	rm -rf "$corpus"
	return $rc
}
step "fuzzing the batch and path parsers" fuzz_batch
step "resources: slow headers, bodies, long requests, unread pages (-O2 build)" /usr/bin/python3 test/gateway/resource_test.py gateway/tablestore-gateway
step "fuzzing HTTP requests (FUZZ_HTTP_SECONDS, FUZZ_HTTP_SEED)" /usr/bin/python3 test/gateway/fuzz_http.py
GW_PORT=$(cat "$work/tls.port") GW_SCHEME=https GW_TLS_CA=$work/tls.crt FUZZ_HTTP_SECONDS=${FUZZ_HTTPS_SECONDS:-15} \
	step "fuzzing HTTPS requests, host- and path-style" /usr/bin/python3 test/gateway/fuzz_http.py

# still alive (no request crashed them), and no connection leaked
for p in $gw_pid; do
	kill -0 "$p" 2>/dev/null || { echo "== gateway: a gateway died"; status=1; }
done
conns=$(psql -X -At -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE usename = 'gwt_auth'")
echo "== gateway: $conns database connections (pools $pool + 1 + 2)"
[ "$conns" -le $((pool + 3)) ] || { echo "== gateway: more connections than the pools"; status=1; }

# a clean stop: exit status 0 and no sanitizer report (leaks included)
for p in $gw_pid; do
	kill "$p" 2>/dev/null
	wait "$p" || { echo "== gateway: exit status $? at stop"; status=1; }
done
gw_pid=
if grep -l -E "Sanitizer|runtime error" "$work"/*.log; then
	echo "== gateway: sanitizer report"; status=1
else
	echo "== gateway: stopped cleanly, no sanitizer report"
fi
exit $status
