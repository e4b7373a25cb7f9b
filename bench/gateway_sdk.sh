#!/usr/bin/env bash
# bench/gateway_sdk.sh: server CPU per entity of tablestore-gateway (the
# gateway process and the PostgreSQL server's processes) against Azurite 3.x
# (in memory), both driven by the same workload of the official JavaScript
# SDK (bench/gateway_sdk.mjs, @azure/data-tables as pinned in
# test/gateway/package-lock.json), side by side in one run.  Writes
# bench/results/gateway_sdk.csv and gateway_sdk.md.
#
#   bench/gateway_sdk.sh                  # 100,000 entities per workload
#   ENTITIES=10000 bench/gateway_sdk.sh   # a quick run
#   ENTITIES_1=20000 ...                  # fewer for the one-at-a-time upserts
#   AZURITE_MAIN=/path/dist/src/table/main.js   # a built Azurite (else npm's azurite@3)
#   AZURITE=0 ...                         # the gateway alone
#   BUILD=0 ...                           # without building and installing first
#   GATEWAY_BIN=path ...                  # another build of the gateway (a before/after)
#   PERF_DIR=DIR ...                      # perf record -g the gateway and its
#                                         # backends during each gateway workload
#
# Workloads (each on a table of its own, 100 entities to a partition, 11
# properties each): upsert16 (single upserts, Replace, 16 in flight), upsert1
# (single upserts, one at a time), batch (transactions of 100 inserts, 4 in
# flight) and read (the batch table read back whole, pages of 1,000).
#
# CPU is what the server's processes spent, from /proc (utime + stime),
# measured as a delta around each workload: the gateway process (all its
# threads); the PostgreSQL server's whole process tree (postmaster, its live
# children, the backends serving the gateway among them, and what the
# children that exited spent); Azurite's node process.  On a shared machine
# that figure is robust where throughput is not (throughput depends on what
# else runs; CPU per entity little).  The goals (issue 24): the gateway's CPU
# per entity at most 1/5 of Azurite's for single writes and 1/10 for batches
# and pages.
set -eu
cd "$(dirname "$0")/.."
. tools/lib.sh

ENTITIES=${ENTITIES:-100000}
ENTITIES_1=${ENTITIES_1:-$ENTITIES}
WORKLOADS=${WORKLOADS:-"upsert16 upsert1 batch read"}
AZURITE=${AZURITE:-1}
SETTINGS="-c shared_buffers=512MB -c synchronous_commit=off -c max_connections=50"

if [ "${BUILD:-1}" = 1 ]; then	# BUILD=0: the extension and gateway as they are
	ts_install_deps
	ts_build_install >/dev/null
	make -s -C gateway tablestore-gateway
fi
if [ ! -d test/gateway/node_modules/@azure/data-tables ]; then
	(cd test/gateway && npm ci --no-audit --no-fund --silent)
fi

. bench/gwsetup.sh
gw_setup tsgwsdk $SETTINGS
gw_start_gateway 16
[ "$AZURITE" = 1 ] && gw_start_azurite

# ms_per_k TICKS N: CPU milliseconds per 1,000 entities
ms_per_k() { awk -v t="$1" -v n="$2" -v hz="$hz" 'BEGIN { printf "%.1f", n ? t * 1e6 / hz / n : 0 }'; }

OUT=${OUT:-bench/results}
mkdir -p "$OUT"
CSV=$OUT/gateway_sdk.csv
echo "target,workload,entities,seconds,entities_per_s,errors,cpu_ms_per_1000,gateway_ms_per_1000,postgres_ms_per_1000" >"$CSV"
# run TARGET URL WORKLOAD N: one workload against one side, CPU measured around it
run() {
	local target=$1 url=$2 w=$3 n=$4 table out t0 t1 g0 g1 p0 p1 perfpid=
	table=t$w
	[ "$w" = read ] && table=tbatch
	[ "$w" = read ] || node bench/gateway_sdk.mjs "$url" "$table" create
	if [ "$target" = gateway ]; then
		g0=$(ticks $gwpid)
		p0=$(pg_ticks)
		if [ -n "${PERF_DIR:-}" ]; then
			mkdir -p "$PERF_DIR"
			perf record -q -g -o "$PERF_DIR/$w.data" \
				-p "$gwpid,$(pgrep -P "$(head -1 "$DIR/data/postmaster.pid")" -d, )" >/dev/null 2>&1 &
			perfpid=$!
			sleep 0.5
		fi
		out=$(node bench/gateway_sdk.mjs "$url" "$table" "$w" "$n")
		g1=$(ticks $gwpid)
		p1=$(pg_ticks)
		if [ -n "$perfpid" ]; then kill -INT "$perfpid"; wait "$perfpid" || true; fi
		echo "gateway,$out,$(ms_per_k $((g1 - g0 + p1 - p0)) "$n"),$(ms_per_k $((g1 - g0)) "$n"),$(ms_per_k $((p1 - p0)) "$n")"
	else
		t0=$(ticks $azpid)
		out=$(node bench/gateway_sdk.mjs "$url" "$table" "$w" "$n")
		t1=$(ticks $azpid)
		echo "azurite,$out,$(ms_per_k $((t1 - t0)) "$n"),,"
	fi
}
for w in $WORKLOADS; do
	n=$ENTITIES
	[ "$w" = upsert1 ] && n=$ENTITIES_1
	run gateway "$GW" "$w" "$n" | tee -a "$CSV"
	[ "$AZURITE" = 1 ] && run azurite "$AZ" "$w" "$n" | tee -a "$CSV"
done

python3 - "$CSV" "$AZURITE" >"$OUT/gateway_sdk.md" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
az = sys.argv[2] == "1"
cell = {(r["target"], r["workload"]): r for r in rows}
names = {"upsert16": "single upserts, 16 in flight", "upsert1": "single upserts, one at a time",
         "batch": "transactions of 100", "read": "read back (pages of 1,000)"}
goal = {"upsert16": 5, "upsert1": 5, "batch": 10, "read": 10}
print("| workload | entities | gateway entities/s | gateway CPU ms / 1,000 (gateway + PostgreSQL) |"
      + (" Azurite entities/s | Azurite CPU ms / 1,000 | Azurite CPU / gateway CPU | goal | met |" if az else "") + " errors |")
print("|---|---|---|---|" + ("---|---|---|---|---|" if az else "") + "---|")
for (t, w), g in cell.items():
    if t != "gateway":
        continue
    gc = float(g["cpu_ms_per_1000"])
    line = (f"| {names.get(w, w)} | {g['entities']} | {g['entities_per_s']} |"
            f" {gc:.0f} ({float(g['gateway_ms_per_1000']):.0f} + {float(g['postgres_ms_per_1000']):.0f}) |")
    errs = int(g["errors"])
    if az:
        a = cell[("azurite", w)]
        ac = float(a["cpu_ms_per_1000"])
        r = ac / gc if gc else float("inf")
        line += f" {a['entities_per_s']} | {ac:.0f} | {r:.1f} | ≥ {goal[w]} | {'yes' if r >= goal[w] else 'no'} |"
        errs += int(a["errors"])
    print(line + f" {errs} |")
PY
{
	echo
	echo "- $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load average before the summary: $(cut -d' ' -f1-3 /proc/loadavg); CPU from /proc, utime + stime, $hz ticks/s"
	[ "$AZURITE" = 1 ] && echo "- Azurite $azver, in memory, the same SDK workload"
} >>"$OUT/gateway_sdk.md"
cat "$OUT/gateway_sdk.md"
