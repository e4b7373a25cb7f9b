#!/usr/bin/env bash
# test/gateway/run.sh: tablestore-gateway against the server tools/run-tests.sh
# started (PGHOST etc. set).  Builds the gateway, creates a database per
# account (an account's tables are its own): gwtest for devstoreaccount1
# (role gwt_dev) and gwtest_reader for reader (role gwt_reader, which may only
# read the table readertab another role made there), both reached through the
# login role gwt_auth (NOINHERIT, member of gwt_dev and gwt_reader); starts
# the gateway on a free loopback port, then runs
#   sdk_test.mjs   the JavaScript SDK (@azure/data-tables from npm)
#   sdk_test.py    the Python SDK (Debian's python3-azure)
#   acl_test.py    Get/Set Table ACL and SAS tokens naming a stored policy
#   oauth_test.py  OAuth bearer tokens, with gateways of its own
#   http_test.sh   raw HTTP: signatures, malformed requests, limits, with the
#                  account addressed path-style and host-style
#   cors_test.sh   service properties and CORS, with a gateway of its own
#   load_test.mjs  concurrent clients for a bounded time
#   pool_test.sh   a second gateway with one connection: roles, back-pressure
#   tls_test.sh    a third gateway serving HTTPS; http_test.sh and the
#                  JavaScript SDK (host-style) over HTTPS too
#   attack_test.sh a test per finding of issue 20, each with its own gateway
#   fuzz_batch     libFuzzer on the multipart and entity path parsers
#   resource_test.py  its own -O2 gateway under slowloris, unauthenticated
#                  bodies, over-long requests and unread pages: probes and RSS
#   fuzz_http.py   signed and raw mutated HTTP requests (XX000 checked in
#                  $TS_SERVER_LOG, which tools/run-tests.sh exports)
# and checks that the gateway is still running and that it holds no more
# database connections than its pool.
#
# The gateways are the checkout's (gateway/), built here; GW_BIN and
# GW_BIN_ASAN may name other builds of tablestore-gateway and
# tablestore-gateway-asan to run the suite against.  A pool is an
# account's: to each database at most the pools of the gateways.
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
export GW_BIN=${GW_BIN:-gateway/tablestore-gateway} GW_BIN_ASAN=${GW_BIN_ASAN:-gateway/tablestore-gateway-asan}
export GW_WORK=$work

psql -X -q -v ON_ERROR_STOP=1 -d postgres <<'SQL' || exit 1
DROP DATABASE IF EXISTS gwtest;
DROP DATABASE IF EXISTS gwtest_reader;
CREATE DATABASE gwtest;
CREATE DATABASE gwtest_reader;
DO $$
DECLARE
	r text;
BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'gwt_auth') THEN
		CREATE ROLE gwt_auth LOGIN NOINHERIT;
	END IF;
	FOREACH r IN ARRAY ARRAY['gwt_dev', 'gwt_reader'] LOOP
		IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = r) THEN
			EXECUTE format('CREATE ROLE %I NOLOGIN', r);
			EXECUTE format('GRANT %I TO gwt_auth', r);
		END IF;
	END LOOP;
END $$;
SQL
psql -X -q -v ON_ERROR_STOP=1 -d gwtest <<'SQL' || exit 1
CREATE EXTENSION tablestore;
ALTER DATABASE gwtest SET log_error_verbosity = verbose;
GRANT CREATE ON SCHEMA tablestore_data TO gwt_dev;
SQL
# reader's own database: a table made by another role, which reader may read
psql -X -q -v ON_ERROR_STOP=1 -d gwtest_reader <<'SQL' >/dev/null || exit 1
CREATE EXTENSION tablestore;
GRANT CREATE ON SCHEMA tablestore_data TO gwt_dev;
ALTER DEFAULT PRIVILEGES FOR ROLE gwt_dev IN SCHEMA tablestore_data GRANT SELECT ON TABLES TO gwt_reader;
SET ROLE gwt_dev;
SELECT tablestore.create_table('readertab');
SELECT count(tablestore.insert_entity('readertab',
	jsonb_build_object('PartitionKey', 'r', 'RowKey', lpad(i::text, 5, '0'), 'n', i)))
FROM generate_series(1, 20) i;
SQL
# the databases and roles of attack_test.sh
bash test/gateway/attack_test.sh setup || exit 1

reader_key=$(openssl rand -base64 32)
dev_key="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
cat >"$work/accounts" <<EOF
# name key role [database]; no database: --db's
devstoreaccount1 $dev_key gwt_dev
reader $reader_key gwt_reader gwtest_reader
EOF
# start_gateway NAME OPTIONS...: start a gateway, wait for its port
start_gateway() {
	local name=$1
	shift
	"$GW_BIN_ASAN" --db "host=$PGHOST port=${PGPORT:-5432} dbname=gwtest user=gwt_auth" \
		--accounts-file "$work/accounts" --port 0 --port-file "$work/$name.port" "$@" >"$work/$name.log" 2>&1 &
	gw_pid="$gw_pid $!"
	for _ in $(seq 50); do [ -s "$work/$name.port" ] && break; sleep 0.1; done
	[ -s "$work/$name.port" ] || { echo "gateway $name did not start"; cat "$work/$name.log"; status=1; exit 1; }
}
pool=6
start_gateway gw --pool $pool --threads 4 --pool-wait-ms 10000
export GW_PORT=$(cat "$work/gw.port") GW_READER_KEY=$reader_key GW_DEV_KEY=$dev_key
echo "gateway on port $GW_PORT"

# step NAME CMD...: one step; GW_ONLY=TEXT runs only the steps whose name
# holds TEXT (a developer's shortcut; the test command runs them all)
step() {
	local t0=$SECONDS
	if [ -n "${GW_ONLY:-}" ] && [[ "$1" != *"$GW_ONLY"* ]]; then return 0; fi
	echo "== gateway: $1"
	shift
	"$@" || { echo "== gateway: FAILED"; status=1; }
	echo "== gateway: ($((SECONDS - t0)) s)"
}

# The JavaScript SDK from npm, pinned with all its dependencies by the
# committed package-lock.json (npm ci installs exactly that), into a
# directory that git ignores.
if [ ! -d test/gateway/node_modules/@azure/data-tables ]; then
	(cd test/gateway && npm ci --no-audit --no-fund --silent) || { echo "npm install failed"; status=1; exit 1; }
fi
step "JavaScript SDK" node test/gateway/sdk_test.mjs
step "Python SDK" /usr/bin/python3 test/gateway/sdk_test.py
step "raw HTTP" bash test/gateway/http_test.sh
step "table ACLs and SAS with si (raw HTTP)" /usr/bin/python3 test/gateway/acl_test.py
step "OAuth bearer tokens (own gateways; HTTPS, HTTP, Python SDK)" /usr/bin/python3 test/gateway/oauth_test.py
step "strict parsing: batch framing, JSON bodies, a batch without database" bash test/gateway/strict_test.sh
step "service properties and CORS (own gateway, restarted)" bash test/gateway/cors_test.sh
GW_STYLE=host step "service properties and CORS, host-style" bash test/gateway/cors_test.sh
step "load" node test/gateway/load_test.mjs
GW_STYLE=host step "raw HTTP, host-style" bash test/gateway/http_test.sh

# one pooled connection: roles end with their request, back-pressure, timeout
start_gateway pool1 --pool 1 --pool-wait-ms 300 --statement-timeout-ms 1500
GW_PORT=$(cat "$work/pool1.port") step "pool of one" bash test/gateway/pool_test.sh

# HTTPS with a throwaway certificate for 127.0.0.1 and the host-style names
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
	-addext "subjectAltName=IP:127.0.0.1,DNS:*.table.tstest" \
	-keyout "$work/tls.key" -out "$work/tls.crt" 2>/dev/null || { echo "openssl req failed"; status=1; }
start_gateway tls --tls-cert "$work/tls.crt" --tls-key "$work/tls.key" --pool 2
export GW_TLS_CA=$work/tls.crt
GW_PORT=$(cat "$work/tls.port") GW_STYLE=path step "HTTPS, path-style" bash test/gateway/tls_test.sh
GW_PORT=$(cat "$work/tls.port") GW_STYLE=host step "HTTPS, host-style" bash test/gateway/tls_test.sh
FUZZ_HTTP_SEED=${FUZZ_HTTPS_SEED:-2} GW_PORT=$(cat "$work/tls.port") GW_SCHEME=https GW_STYLE=path step "raw HTTPS, path-style" bash test/gateway/http_test.sh
GW_PORT=$(cat "$work/tls.port") GW_SCHEME=https GW_STYLE=host step "raw HTTPS, host-style" bash test/gateway/http_test.sh
GW_PORT=$(cat "$work/tls.port") GW_SCHEME=https GW_STYLE=host NODE_EXTRA_CA_CERTS=$work/tls.crt \
	step "JavaScript SDK over HTTPS, host-style" node test/gateway/sdk_test.mjs

# a test per finding of issue 20, each with the gateway it needs (logs in
# $work: the sanitizer scan below covers them too)
step "finding 1: host-style HTTPS under ASan" bash test/gateway/attack_test.sh 1
step "finding 2: over-long request lines" bash test/gateway/attack_test.sh 2
step "finding 3: slow headers, connections per client" bash test/gateway/attack_test.sh 3
step "finding 4: unauthenticated bodies are not buffered" bash test/gateway/attack_test.sh 4
step "finding 6: the published key off loopback" bash test/gateway/attack_test.sh 6
step "finding 7: one answer for unknown account and bad signature" bash test/gateway/attack_test.sh 7
step "finding 8: accounts are isolated" bash test/gateway/attack_test.sh 8
step "finding 9: Shared Key signs the method on the wire" bash test/gateway/attack_test.sh 9
step "finding 13: strict framing, \$top and continuation tokens" bash test/gateway/attack_test.sh 13
step "an outside attack's findings: SAS and memory, header names, percent-encoding, Content-MD5" bash test/gateway/attack_test.sh 14

# the parsers of untrusted bytes under libFuzzer, seeded with JavaScript-
# and Python-style batches and an entity path (GW_FUZZ_SECONDS, default 15)
fuzz_batch() {
	local corpus
	corpus=$(mktemp -d /tmp/tsgwfuzz.XXXXXX)
	make -s -C gateway fuzz_batch &&
		(cd "$corpus" && "$OLDPWD/gateway/fuzz_batch" "$corpus" "$OLDPWD/gateway/fuzz-corpus" \
			-seed="${GW_FUZZ_SEED:-1}" -max_total_time="${GW_FUZZ_SECONDS:-15}" -print_final_stats=1 >"$corpus/log" 2>&1)
	local rc=$?
	grep -E "^(stat::number_of_executed_units|Done)" "$corpus/log"
	[ $rc -eq 0 ] || tail -n 40 "$corpus/log"
	rm -rf "$corpus"
	return $rc
}
step "fuzzing the batch and path parsers" fuzz_batch
step "resources: slow headers, bodies, long requests, unread pages (-O2 build)" /usr/bin/python3 test/gateway/resource_test.py "$GW_BIN"
step "fuzzing HTTP requests (FUZZ_HTTP_SECONDS, FUZZ_HTTP_SEED)" /usr/bin/python3 test/gateway/fuzz_http.py
GW_PORT=$(cat "$work/tls.port") GW_SCHEME=https GW_TLS_CA=$work/tls.crt FUZZ_HTTP_SECONDS=${FUZZ_HTTPS_SECONDS:-15} \
	step "fuzzing HTTPS requests, host- and path-style" /usr/bin/python3 test/gateway/fuzz_http.py

# still alive (no request crashed them), and no connection leaked
for p in $gw_pid; do
	kill -0 "$p" 2>/dev/null || { echo "== gateway: a gateway died"; status=1; }
done
# a pool per account: to each database at most the three gateways' pools
psql -X -At -F ' ' -d postgres -c "SELECT datname, count(*) FROM pg_stat_activity WHERE usename = 'gwt_auth' GROUP BY 1 ORDER BY 1" >"$work/conns"
while read -r db n; do
	echo "== gateway: $n database connections to $db (pools $pool + 1 + 2)"
	[ "$n" -le $((pool + 3)) ] || { echo "== gateway: more connections than the pools"; status=1; }
done <"$work/conns"

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
