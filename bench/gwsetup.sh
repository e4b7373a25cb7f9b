# bench/gwsetup.sh: what the gateway's benchmarks (bench/gateway.sh,
# bench/gateway_sdk.sh) share, sourced after tools/lib.sh: a throwaway
# server with database bench and the account's role, the gateway serving it
# as deployed (the account acts as its own role), Azurite 3.x beside it,
# the cleanup of all three, and the CPU counters read from /proc.

# gw_setup PREFIX SETTINGS...: a throwaway server in a new /tmp/PREFIX.*
# directory ($DIR), with database bench, the extension and role bench_dev;
# everything gw_* starts is stopped, and $DIR removed, at exit
gw_setup() {
	local prefix=$1
	shift
	DIR=$(mktemp -d "/tmp/$prefix.XXXXXX")
	pids=""
	trap gw_cleanup EXIT
	ts_start_server "$DIR" "$@" -c fsync=on
	psql -X -q -d postgres -c "CREATE DATABASE bench"
	psql -X -q -d bench -c "CREATE EXTENSION tablestore" -c "CREATE ROLE bench_dev" \
		-c "GRANT CREATE ON SCHEMA tablestore_data TO bench_dev"
}

# gw_cleanup: stop what was started (one already gone does not stop it)
gw_cleanup() {
	set +e
	for p in $pids; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	ts_stop_server "$DIR"
	rm -rf "$DIR"
}

# gw_start_gateway THREADS: the gateway ($GATEWAY_BIN, else the build's)
# with a pool of 8, the development account acting as role bench_dev;
# sets $gwpid and $GW, its account's URL
gw_start_gateway() {
	local key="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	"${GATEWAY_BIN:-gateway/tablestore-gateway}" --db "host=$DIR dbname=bench user=postgres" --port 0 \
		--port-file "$DIR/gw.port" --account "devstoreaccount1:$key:bench_dev" --pool 8 --threads "$1" \
		>"$DIR/gw.log" 2>&1 &
	gwpid=$!
	pids="$pids $gwpid"
	for _ in $(seq 100); do [ -s "$DIR/gw.port" ] && break; sleep 0.1; done
	GW="http://127.0.0.1:$(cat "$DIR/gw.port")/devstoreaccount1"
}

# gw_start_azurite: Azurite's table service in memory ($AZURITE_MAIN, else
# npm's azurite@3, installed once into /tmp/tsgw-azurite), answering before
# this returns; sets $azpid, $AZ and $azver
gw_start_azurite() {
	local azdir=/tmp/tsgw-azurite azport
	if [ -z "${AZURITE_MAIN:-}" ]; then
		if [ ! -x "$azdir/node_modules/.bin/azurite-table" ]; then
			mkdir -p "$azdir"
			(cd "$azdir" && npm install --no-audit --no-fund --silent azurite@3 >/dev/null)
		fi
		AZURITE_MAIN=$(readlink -f "$azdir/node_modules/.bin/azurite-table")
	fi
	azver=$(node -p "require('$(dirname "$AZURITE_MAIN")/../../../package.json').version" 2>/dev/null || echo 3)
	azport=$((20000 + RANDOM % 20000))
	(cd "$DIR" && exec node "$AZURITE_MAIN" --inMemoryPersistence --tableHost 127.0.0.1 \
		--tablePort "$azport" --skipApiVersionCheck --disableProductStyleUrl --disableTelemetry --silent) \
		>"$DIR/azurite.log" 2>&1 &
	azpid=$!
	pids="$pids $azpid"
	AZ="http://127.0.0.1:$azport/devstoreaccount1"
	for _ in $(seq 100); do
		curl -s -o /dev/null "$AZ/Tables" && break
		sleep 0.1
	done
}

# CPU time (clock ticks, $hz a second) of processes; for the PostgreSQL
# server, the postmaster with what its exited children spent and its live
# children (the backends among them)
ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done; echo $t; }
pg_ticks() {
	local pm
	pm=$(head -1 "$DIR/data/postmaster.pid")
	echo $(($(awk '{print $14 + $15 + $16 + $17}' "/proc/$pm/stat") + $(ticks $(pgrep -P "$pm"))))
}
hz=$(getconf CLK_TCK)
