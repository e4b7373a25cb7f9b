#!/usr/bin/env bash
# test/gateway/azurite_suite.sh: run Azurite's own table tests (tests/table/
# of Azure/Azurite, MIT) against tablestore-gateway instead of Azurite.
#
#   test/gateway/azurite_suite.sh AZURITE_CHECKOUT [MOCHA_GREP]
#
# Not part of CI (it needs a checkout of Azurite and its npm packages); run
# it by hand.  It builds and installs the extension and the gateway into
# $PGBIN's tree (tools/lib.sh), starts a throwaway PostgreSQL server, and
# two gateways with the development account: HTTP on 127.0.0.1:11002 and
# HTTPS (a throwaway certificate) on 127.0.0.1:11003, the ports must be
# free.  It copies the checkout's src/ and tests/ into a work directory
# (the checkout is not modified; its node_modules is used, installed with
# `npm ci --ignore-scripts` if missing) and patches the copy:
#   - tests/table/utils/TableTestServerFactory.ts: the in-process Azurite
#     server becomes a stub whose start and close do nothing, so every test
#     talks to the gateway;
#   - the tests that reach Azurite's HTTPS server at https://HOST:11002 are
#     pointed at the HTTPS gateway's port 11003 (Azurite serves both schemes
#     on one port, one server at a time; the gateway cannot).
# Then mocha runs the tests of tests/table/ that talk to a server (apis/,
# auth/, KeepAlive/; not unit/ nor tableEnvironment: Azurite's own classes),
# or those of them matching MOCHA_GREP,
# and a summary is printed: passed and failed counts and each failure with
# the first line of its reason.  Exit status 0 when nothing failed.
# The JSON report and the gateways' logs stay in $AZ_KEEP if it is set;
# AZ_SIGN_DATES=1 makes Azurite's raw-REST helper sign a date (below).
set -u
cd "$(dirname "$0")/../.."
root=$PWD
az=${1:?usage: $0 AZURITE_CHECKOUT [MOCHA_GREP]}
grep_arg=${2:-}
az=$(cd "$az" && pwd) || exit 2
[ -d "$az/tests/table" ] || { echo "$az has no tests/table: not an Azurite checkout"; exit 2; }
: "${PGBIN:?set PGBIN to the PostgreSQL whose tree gets the extension}"
http_port=11002
https_port=11003
for p in $http_port $https_port; do
	if (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then
		echo "port $p is in use: stop what listens there (an Azurite?) first"
		exit 2
	fi
done

. tools/lib.sh
ts_build_install >/dev/null || { echo "building the extension failed"; exit 1; }
make -s -C gateway tablestore-gateway || exit 1

work=$(mktemp -d /tmp/tsaz.XXXXXX)
chmod 755 "$work"
gw_pids=
finish() {
	for p in $gw_pids; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	ts_stop_server "$work"
	if [ -n "${AZ_KEEP:-}" ]; then
		mkdir -p "$AZ_KEEP" && cp "$work"/*.log "$work"/report.json "$AZ_KEEP"/ 2>/dev/null
	fi
	rm -rf "$work"
}
trap finish EXIT

ts_start_server "$work" || exit 1
psql -X -q -v ON_ERROR_STOP=1 -d postgres >/dev/null <<'SQL' || exit 1
CREATE DATABASE azurite;
CREATE ROLE az_dev NOLOGIN;
CREATE ROLE az_gateway LOGIN NOINHERIT IN ROLE az_dev;
SQL
psql -X -q -v ON_ERROR_STOP=1 -d azurite -c "CREATE EXTENSION tablestore" \
	-c "GRANT CREATE ON SCHEMA tablestore_data TO az_dev" >/dev/null || exit 1

key="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
printf 'devstoreaccount1 %s az_dev\n' "$key" >"$work/accounts"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
	-addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
	-keyout "$work/tls.key" -out "$work/tls.crt" 2>/dev/null || { echo "openssl req failed"; exit 1; }
start_gateway() {
	local name=$1 port=$2
	shift 2
	gateway/tablestore-gateway --db "host=$PGHOST port=$PGPORT dbname=azurite user=az_gateway" \
		--accounts-file "$work/accounts" --port "$port" --port-file "$work/$name.port" \
		--pool 4 --threads 8 -v "$@" >"$work/$name.log" 2>&1 &
	gw_pids="$gw_pids $!"
	for _ in $(seq 50); do [ -s "$work/$name.port" ] && break; sleep 0.1; done
	[ -s "$work/$name.port" ] || { echo "gateway $name did not start"; cat "$work/$name.log"; exit 1; }
}
start_gateway http $http_port
# Azurite's OAuth tests sign their tokens with its tests/server.key: the
# HTTPS gateway trusts that key's certificate, the issuers the tests name
# (exactly: the double slashes are theirs), and any principal
azt=ab1f708d-50f6-404c-a006-d71b2ac7a606
start_gateway https $https_port --tls-cert "$work/tls.crt" --tls-key "$work/tls.key" \
	--oauth-key "$az/tests/server.cert" --oauth-principal 'devstoreaccount1:*' \
	--oauth-issuer "https://sts.windows-ppe.net/$azt/" --oauth-issuer "https://sts.windows.net//$azt/" \
	--oauth-issuer "https://sts.microsoftonline.de//$azt/" --oauth-issuer "https://sts.chinacloudapi.cn//$azt/"


# the checkout's npm packages
if [ ! -d "$az/node_modules/@azure/data-tables" ] || [ ! -x "$az/node_modules/.bin/mocha" ]; then
	echo "installing Azurite's npm packages in $az (npm ci --ignore-scripts)"
	(cd "$az" && npm ci --ignore-scripts --no-audit --no-fund --silent) || { echo "npm ci failed"; exit 1; }
fi

# a patched copy of the tests and of the sources they import
copy=$work/azurite
mkdir -p "$copy"
cp -r "$az/src" "$az/tests" "$az/package.json" "$az/tsconfig.json" "$copy/"
ln -s "$az/node_modules" "$copy/node_modules"
cat >"$copy/tests/table/utils/TableTestServerFactory.ts" <<EOF
// Replaced by tablestore's test/gateway/azurite_suite.sh: no Azurite server
// is started; the tests talk to tablestore-gateway (HTTP on $http_port,
// HTTPS on $https_port).
export interface ITableTestServerFactoryParams {
  metadataDBPath: string;
  enableDebugLog: boolean;
  debugLogFilePath: string;
  loose: boolean;
  skipApiVersionCheck: boolean;
  https: boolean;
  oauth?: string;
}

export default class TableTestServerFactory {
  public static inMemoryPersistence() {
    return false;
  }

  public createServer(params: ITableTestServerFactoryParams): any {
    const port = params.https ? $https_port : $http_port;
    return {
      config: { host: "127.0.0.1", port },
      start: async () => {},
      close: async () => {},
      clean: async () => {}
    };
  }
}
EOF
# AZ_SIGN_DATES=1: the raw-REST helper signs an x-ms-date header (it signs
# none, which Azurite accepts and the service and the gateway refuse), to see
# what else those tests check
if [ -n "${AZ_SIGN_DATES:-}" ]; then
	sed -i 's|^  const stringToSign = createStringToSignForSharedKeyLite(|  if (!headersIn["x-ms-date"] \&\& !headersIn["Date"]) headersIn["x-ms-date"] = new Date().toUTCString();\n&|' \
		"$copy/tests/table/utils/table.entity.tests.utils.for.rest.ts"
	grep -q 'headersIn\["x-ms-date"\] = new Date' "$copy/tests/table/utils/table.entity.tests.utils.for.rest.ts" ||
		{ echo "AZ_SIGN_DATES: the raw-REST helper's signing line was not found"; exit 1; }
fi
grep -rl 'https://${HOST}:${PORT}' "$copy/tests/table" | while read -r f; do
	sed -i "s#https://\${HOST}:\${PORT}#https://\${HOST}:$https_port#g" "$f"
done

# a reporter that prints as mocha's spec reporter does and writes a JSON
# summary that no value in an error can break (mocha's json reporter stops
# silently on a BigInt)
cat >"$copy/gateway-reporter.js" <<'EOF'
"use strict";
const fs = require("fs");
const Mocha = require("mocha");
const { EVENT_TEST_PASS, EVENT_TEST_FAIL, EVENT_TEST_PENDING, EVENT_RUN_END } = Mocha.Runner.constants;
const say = (v) => {
  try {
    return typeof v === "string" ? v : JSON.stringify(v, (k, x) => (typeof x === "bigint" ? x.toString() : x));
  } catch (e) {
    return String(v);
  }
};
class GatewayReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const tests = [];
    const file = (t) => (t.file || "").replace(/^.*\/tests\/table\//, "");
    runner.on(EVENT_TEST_PASS, (t) => tests.push({ file: file(t), title: t.fullTitle(), state: "passed" }));
    runner.on(EVENT_TEST_PENDING, (t) => tests.push({ file: file(t), title: t.fullTitle(), state: "skipped" }));
    runner.on(EVENT_TEST_FAIL, (t, err) => {
      let why = String((err && err.message) || err).split("\n").filter((l) => l.trim() !== "")[0] || "";
      if (err && typeof err === "object" && "actual" in err && "expected" in err)
        why += ` (actual ${say(err.actual)}, expected ${say(err.expected)})`;
      tests.push({ file: file(t), title: t.fullTitle(), state: "failed", why: why.slice(0, 400) });
    });
    runner.once(EVENT_RUN_END, () => fs.writeFileSync(process.env.AZ_REPORT, JSON.stringify(tests, null, 1)));
  }
}
module.exports = GatewayReporter;
EOF

echo "running Azurite's table tests against the gateway (HTTP $http_port, HTTPS $https_port)"
(
	cd "$copy" &&
		AZ_REPORT="$work/report.json" TS_NODE_TRANSPILE_ONLY=1 TS_NODE_COMPILER_OPTIONS='{"rootDir":"."}' \
			NODE_EXTRA_CA_CERTS="$work/tls.crt" NODE_NO_WARNINGS=1 \
			timeout 1200 node_modules/.bin/mocha --require ts-node/register --timeout 60000 --exit \
			--reporter ./gateway-reporter.js ${grep_arg:+--grep "$grep_arg"} \
			'tests/table/apis/*.test.ts' 'tests/table/auth/*.test.ts' 'tests/table/KeepAlive/*.test.ts' \
			>"$work/mocha.log" 2>&1
)
[ -s "$work/report.json" ] || { echo "mocha wrote no report"; grep -v baseUri "$work/mocha.log" | tail -n 40; exit 1; }

node - "$work/report.json" <<'EOF'
const r = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
const n = { passed: 0, failed: 0, skipped: 0 };
for (const t of r) {
  n[t.state]++;
  if (t.state === "failed") console.log(`FAIL ${t.file} :: ${t.title}\n     ${t.why}`);
}
console.log(`${n.passed} passed, ${n.failed} failed, ${n.skipped} skipped`);
process.exit(n.failed === 0 ? 0 : 1);
EOF
