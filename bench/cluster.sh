#!/usr/bin/env bash
# bench/cluster.sh: what the scale-out router (tablestore_router, PL/Proxy)
# costs, each figure against its baseline measured in the same run.  Writes
# bench/results/cluster.csv and cluster.md.
#
#   bench/cluster.sh                                   # 1,000 PartitionKeys x 100 entities, 5 s per cell, 3 runs
#   SECONDS_PER_RUN=2 RUNS=1 PROFILE=0 bench/cluster.sh   # a quick look
#   NO_BUILD=1 bench/cluster.sh                        # the installed build
#
# Three clusters of throwaway servers run side by side (tools/lib.sh
# ts_start_cluster): 1, 2 and 4 shards, each behind its own router, each
# loaded through its router with the same 'Bench' table.  The shard of the
# 1-shard cluster is the "one node" (a single tablestore server holding all
# the data).
#   1. cost: get_entity (point), insert_or_replace_entity of an existing
#      entity (write) and a 100-insert execute_batch (batch) through the
#      1-shard cluster's router against the same call on its shard, 1 and 4
#      clients: latency per call, server CPU per call (router + shard), ratio.
#   2. fan-out: queries without a PartitionKey through the routers of 1, 2
#      and 4 shards against one node: query_entities with a filter on a
#      property that 1% of the entities match, a whole walk of
#      query_entities_page (top 1000, following continuations) and a whole
#      streamed query_entities; time per query and ratio.
#   3. throughput: point reads and writes at 8 clients through the router of
#      1, 2 and 4 shards, and on one node directly; scaling against 1 shard.
#   4. profile (perf, PROFILE=0 skips): a point read through the router
#      (router and shard backends) and directly on the shard, CPU per call by
#      what it is spent on; a streamed query_entities through 2 shards.
# pgbench -M prepared; medians of RUNS runs, the paths alternating in each
# run so that drift hits them alike.
set -eu
cd "$(dirname "$0")/.."
. tools/lib.sh
began=$(date +%s)

PARTITIONS=${PARTITIONS:-1000}		# PartitionKeys of 'Bench'
ROWS=${ROWS:-100}					# entities per PartitionKey
SECONDS_PER_RUN=${SECONDS_PER_RUN:-5}
RUNS=${RUNS:-3}
COST_CLIENTS=${COST_CLIENTS:-"1 4"}
THROUGHPUT_CLIENTS=${THROUGHPUT_CLIENTS:-8}
FILTER_REPS=${FILTER_REPS:-10}		# filter queries per timed run
PROFILE=${PROFILE:-1}
PROFILE_SECONDS=${PROFILE_SECONDS:-4}
PROFILE_HZ=${PROFILE_HZ:-999}
ENTITIES=$((PARTITIONS * ROWS))

ts_install_deps
[ "${NO_BUILD:-0}" = 1 ] || ts_build_install

# perf for the profile: Debian's linux-perf; without it the profile is
# skipped and the report says so
perf_note=""
if [ "$PROFILE" = 1 ] && ! command -v perf >/dev/null 2>&1; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf >/dev/null 2>&1 || true
fi
if [ "$PROFILE" = 1 ] && ! { command -v perf >/dev/null 2>&1 && perf record -q -o /dev/null -- true >/dev/null 2>&1; }; then
	PROFILE=0
	perf_note="perf is not available here (linux-perf not installable or perf_event_open refused): no profile."
fi
[ "$PROFILE" = 1 ] || [ -n "$perf_note" ] || perf_note="Profile skipped (PROFILE=0)."

# (not /tmp/tscluster.*: tools/cluster.sh's clusters, which their users remove by hand)
DIR=$(mktemp -d /tmp/tsclusterbench.XXXXXX)
chmod 755 "$DIR"
bgpids=""
pmpids=""
# remember_servers: the postmaster PIDs of the servers started so far, so
# that cleanup stops them even if their directories were lost
remember_servers() {
	local f p
	for f in "$DIR"/c*/*/data/postmaster.pid; do
		[ -f "$f" ] || continue
		p=$(head -1 "$f")
		case " $pmpids " in *" $p "*) ;; *) pmpids="$pmpids $p" ;; esac
	done
}
# Stop everything this script started, however it ends: pgbench and perf
# runs, then every server (pg_ctl stop, then by PID any that is still up).
cleanup() {
	local p c i
	for p in $bgpids; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	remember_servers
	for c in "$DIR"/c*; do
		[ -d "$c" ] && ts_stop_cluster "$c"
	done
	for p in $pmpids; do
		grep -qs "$DIR/" "/proc/$p/cmdline" || continue
		kill -INT "$p" 2>/dev/null
		for i in $(seq 50); do grep -qs "$DIR/" "/proc/$p/cmdline" || break; sleep 0.2; done
		grep -qs "$DIR/" "/proc/$p/cmdline" && kill -QUIT "$p" 2>/dev/null
	done
	rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

OUT=bench/results
mkdir -p "$OUT"
CSV=$OUT/cluster.csv
echo "section,workload,clients,target,metric,value,runs" >"$CSV"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

q() {	# q HOST SQL...: psql on database tablestore of the server in HOST
	local h=$1
	shift
	psql -X -q -At -v ON_ERROR_STOP=1 -h "$h" -d tablestore "$@"
}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
# row SECTION WORKLOAD CLIENTS TARGET METRIC "RUN VALUES": the median and the runs
row() { echo "$1,$2,$3,$4,$5,$(echo "$6" | median),$(echo $6 | tr ' ' ';')" >>"$CSV"; }

# The host of a target: one (the one node), or rN (the router of N shards)
host() {
	case $1 in
	one) echo "$DIR/c1/shard0" ;;
	r*) echo "$DIR/c${1#r}/router" ;;
	esac
}

echo "== starting clusters of 1, 2 and 4 shards in $DIR"
for n in 1 2 4; do
	mkdir -p "$DIR/c$n"
	ts_start_cluster "$DIR/c$n" "$n" >/dev/null
	remember_servers
done

# The same entities on every cluster, loaded through its router: PartitionKey
# p0000.., RowKey 00000..; Tag = (p + r) % 100, so 'Tag eq 7' matches 1%.
echo "== loading $ENTITIES entities into each cluster"
start=$(date +%s)
for n in 1 2 4; do
	q "$DIR/c$n/router" >/dev/null <<SQL
SELECT tablestore.create_table('Bench');
SELECT tablestore.create_table('Batch');
SELECT count(*) FROM generate_series(0, $PARTITIONS - 1) p,
	LATERAL tablestore.execute_batch('Bench', (SELECT jsonb_agg(jsonb_build_object('op', 'insert', 'entity',
		jsonb_build_object('PartitionKey', 'p' || lpad(p::text, 4, '0'), 'RowKey', lpad(r::text, 5, '0'),
			'Name', 'Name' || r, 'Tag', (p + r) % 100, 'Age', 18 + r % 50,
			'Email', 'user' || r || '@example.com', 'Notes', repeat('x', 100))))
		FROM generate_series(0, $ROWS - 1) r));
SQL
	for s in "$DIR/c$n"/shard*; do
		q "$s" -c "VACUUM ANALYZE"
		row data spread 0 "c$n/$(basename "$s")" entities "$(q "$s" -c "SELECT count(*) FROM tablestore.query_entities('Bench', NULL, 'PartitionKey')")"
	done
done
load_s=$(($(date +%s) - start))
filter_expect=$(q "$DIR/c1/shard0" -c "SELECT count(*) FROM generate_series(0, $PARTITIONS - 1) p, generate_series(0, $ROWS - 1) r WHERE (p + r) % 100 = 7")
echo "loaded in ${load_s}s; 'Tag eq 7' matches $filter_expect"

# pgbench on a host: prints "ops_per_s latency_us"
PGB_LOG=$DIR/pgbench.log
pgb() {	# pgb HOST SCRIPT CLIENTS
	pgbench -n -M prepared -h "$1" -c "$3" -j "$3" -T "$SECONDS_PER_RUN" -D partitions="$PARTITIONS" -D rows="$ROWS" \
		-f "bench/sql/cluster_$2.sql" tablestore >"$PGB_LOG" 2>&1 || true
	if grep -q "^tps = " "$PGB_LOG" && ! grep -q "aborted\|ERROR" "$PGB_LOG"; then
		awk '/^latency average/ {lat = $4 * 1000} /^tps = / {tps = $3} END {printf "%.1f %.1f\n", tps, lat}' "$PGB_LOG"
	else
		echo "pgbench $2 on $1 with $3 clients failed:" >&2
		cat "$PGB_LOG" >&2
		exit 1
	fi
}

# CPU time (clock ticks) of a server: its postmaster with its reaped children
# and its live children (backends, background processes)
ticks() {
	local t=0 p
	for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done
	echo $t
}
srv_ticks() {
	local pm
	pm=$(head -1 "$1/data/postmaster.pid")
	echo $(($(awk '{print $14 + $15 + $16 + $17}' "/proc/$pm/stat") + $(ticks $(pgrep -P "$pm"))))
}
hz=$(getconf CLK_TCK)

# 1. The router's cost per call: the 1-shard cluster's router against its
# shard, the same call, the same data, the same server behind.
echo "== 1. cost per call: router vs its shard directly"
# us_per_op TICKS OPS_PER_S: CPU µs per call over a run
us_per_op() { awk -v t="$1" -v hz="$hz" -v o="$2" -v s="$SECONDS_PER_RUN" 'BEGIN {printf "%.1f", t * 1e6 / hz / (o * s)}'; }
for w in point write batch; do
	for c in $COST_CLIENTS; do
		declare -A tps=() lat=() cpu=() rcpu=()
		for r in $(seq "$RUNS"); do
			for t in r1 one; do
				r0=$(srv_ticks "$DIR/c1/router")
				s0=$(srv_ticks "$DIR/c1/shard0")
				res=$(pgb "$(host $t)" "$w" "$c")
				read -r o l <<<"$res"
				sleep 0.3	# the backends (and the router's connections to the shard) are gone
				r1=$(srv_ticks "$DIR/c1/router")
				s1=$(srv_ticks "$DIR/c1/shard0")
				tps[$t]="${tps[$t]:-} $o"
				lat[$t]="${lat[$t]:-} $l"
				cpu[$t]="${cpu[$t]:-} $(us_per_op $((r1 - r0 + s1 - s0)) "$o")"
				rcpu[$t]="${rcpu[$t]:-} $(us_per_op $((r1 - r0)) "$o")"
			done
		done
		for t in r1 one; do
			row cost "$w" "$c" "$t" ops_per_s "${tps[$t]}"
			row cost "$w" "$c" "$t" latency_us "${lat[$t]}"
			row cost "$w" "$c" "$t" cpu_us_per_op "${cpu[$t]}"
			row cost "$w" "$c" "$t" router_cpu_us_per_op "${rcpu[$t]}"
		done
		echo "$w, $c clients: router $(echo "${lat[r1]}" | median) µs, direct $(echo "${lat[one]}" | median) µs per call"
		unset tps lat cpu rcpu
	done
done

# 2. Fan-out: the same queries through the routers and on one node, timed
# server-side (PL/pgSQL) so that no client cost is in either; each checks
# that it saw what the data holds.
echo "== 2. fan-out queries: routers of 1, 2, 4 shards vs one node"
for t in one r1 r2 r4; do
	q "$(host $t)" <<'SQL'
CREATE FUNCTION bench_walk(tname text, expect bigint) RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE
	npk text; nrk text; page jsonb; n bigint := 0; t0 timestamptz := clock_timestamp();
BEGIN
	LOOP
		SELECT p.entities, p.next_partition_key, p.next_row_key INTO page, npk, nrk
			FROM tablestore.query_entities_page(tname, NULL, NULL, 1000, npk, nrk) p;
		n := n + jsonb_array_length(page);
		EXIT WHEN npk IS NULL;
	END LOOP;
	IF n <> expect THEN RAISE 'walked % entities, not %', n, expect; END IF;
	RETURN extract(epoch FROM clock_timestamp() - t0) * 1000;
END $$;
CREATE FUNCTION bench_count(tname text, filter text, expect bigint, reps integer) RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE
	n bigint; t0 timestamptz := clock_timestamp();
BEGIN
	FOR i IN 1 .. reps LOOP
		SELECT count(*) INTO n FROM tablestore.query_entities(tname, filter);
		IF n <> expect THEN RAISE 'query_entities returned % entities, not %', n, expect; END IF;
	END LOOP;
	RETURN extract(epoch FROM clock_timestamp() - t0) * 1000 / reps;
END $$;
SQL
done
declare -A fan=()
for r in $(seq "$RUNS"); do
	for t in one r1 r2 r4; do
		h=$(host $t)
		fan[filter$t]="${fan[filter$t]:-} $(q "$h" -c "SELECT bench_count('Bench', 'Tag eq 7', $filter_expect, $FILTER_REPS)")"
		fan[walk$t]="${fan[walk$t]:-} $(q "$h" -c "SELECT bench_walk('Bench', $ENTITIES)")"
		fan[stream$t]="${fan[stream$t]:-} $(q "$h" -c "SELECT bench_count('Bench', NULL, $ENTITIES, 1)")"
	done
done
# What the nodes send for one merged page of 1,000: every node sends a
# page of its own, and the merged page keeps what lies below the smallest
# continuation
for t in r1 r2 r4; do
	row fanout first_page 1 "$t" rows_sent "$(q "$(host $t)" -c "SELECT count(entity) FROM tablestore_router._query_page_all('Bench', NULL, NULL, 1000, NULL, NULL)")"
done
for w in filter walk stream; do
	for t in one r1 r2 r4; do
		row fanout "$w" 1 "$t" ms "${fan[$w$t]}"
	done
	echo "$w: one node $(echo "${fan[${w}one]}" | median) ms, 2 shards $(echo "${fan[${w}r2]}" | median) ms"
done

# 3. Throughput through one router with 1, 2 and 4 shards, and on one node.
echo "== 3. throughput at $THROUGHPUT_CLIENTS clients: 1, 2, 4 shards and one node"
# CPU of every server of a target's cluster (for one node: its server)
target_ticks() {
	local t=0 s
	case $1 in
	one) srv_ticks "$DIR/c1/shard0" ;;
	r*)
		for s in "$DIR/c${1#r}"/router "$DIR/c${1#r}"/shard*; do t=$((t + $(srv_ticks "$s"))); done
		echo $t
		;;
	esac
}
# (and point reads at 1 client: a call's latency with 1, 2 and 4 shards)
for wc in point:1 point:"$THROUGHPUT_CLIENTS" write:"$THROUGHPUT_CLIENTS"; do
	w=${wc%:*}
	c=${wc#*:}
	declare -A tps=() cpu=()
	for r in $(seq "$RUNS"); do
		for t in r1 r2 r4 one; do
			t0=$(target_ticks $t)
			res=$(pgb "$(host $t)" "$w" "$c")
			read -r o l <<<"$res"
			sleep 0.3
			t1=$(target_ticks $t)
			tps[$t]="${tps[$t]:-} $o"
			cpu[$t]="${cpu[$t]:-} $(us_per_op $((t1 - t0)) "$o")"
		done
	done
	for t in r1 r2 r4 one; do
		row throughput "$w" "$c" "$t" ops_per_s "${tps[$t]}"
		row throughput "$w" "$c" "$t" cpu_us_per_op "${cpu[$t]}"
	done
	echo "$w, $c clients: $(for t in r1 r2 r4 one; do printf '%s %s/s  ' "$t" "$(echo "${tps[$t]}" | median)"; done)"
	unset tps cpu
done

# 4. Profile: perf with DWARF call graphs on the backends of one pgbench
# client, for PROFILE_SECONDS; the calls made in that window are counted
# from pgbench's per-transaction log, so that CPU time becomes µs per call.
# backends HOST CONDITION: the PIDs (comma-separated) of the client
# backends on HOST, other than ours, that match CONDITION; waits up to 10 s
# for one to appear
backends() {
	local p="" i
	for i in $(seq 100); do
		p=$(q "$1" -c "SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND $2")
		[ -n "$p" ] && break
		sleep 0.1
	done
	echo "$p"
}
# profile NAME HOST SCRIPT ROLE=HOST...: pgbench SCRIPT (1 client) on HOST;
# perf records the pgbench backend (role "router" or "direct") and the
# router's connections on each listed shard; writes $DIR/NAME.perf (perf
# script output) and $DIR/NAME.calls.
profile() {
	local name=$1 h=$2 script=$3 pids pgpid t0 t1 role
	shift 3
	pgbench -n -M prepared -h "$h" -c 1 -j 1 -T $((PROFILE_SECONDS + 4)) -l --log-prefix="$DIR/txlog_$name" \
		-D partitions="$PARTITIONS" -D rows="$ROWS" -f "bench/sql/cluster_$script.sql" tablestore >"$DIR/pgbench_$name.out" 2>&1 &
	pgpid=$!
	bgpids="$bgpids $pgpid"
	pids=$(backends "$h" "application_name = 'pgbench'")
	echo "$pids=client" >"$DIR/$name.roles"
	for role in "$@"; do
		# on a shard, PL/Proxy's connections are its only client backends
		for p in $(backends "${role#*=}" "datname = 'tablestore'" | tr ',' ' '); do
			pids="$pids,$p"
			echo "$p=${role%%=*}" >>"$DIR/$name.roles"
		done
	done
	sleep 1
	# the window: the command perf runs while it records
	perf record -q -F "$PROFILE_HZ" --call-graph dwarf,16384 -o "$DIR/$name.data" -p "$pids" -- \
		sh -c "date +%s.%N >'$DIR/$name.t0'; sleep $PROFILE_SECONDS; date +%s.%N >'$DIR/$name.t1'" >/dev/null 2>&1
	t0=$(cat "$DIR/$name.t0")
	t1=$(cat "$DIR/$name.t1")
	wait "$pgpid" || true
	bgpids=${bgpids% $pgpid}
	grep -q "^tps = " "$DIR/pgbench_$name.out" || { cat "$DIR/pgbench_$name.out" >&2; exit 1; }
	# transactions that ended inside the window (log: client xact time script epoch µs)
	cat "$DIR"/txlog_"$name".* | awk -v a="$t0" -v b="$t1" '{t = $5 + $6 / 1e6; if (t >= a && t < b) n++} END {print n + 0}' >"$DIR/$name.calls"
	awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}' >"$DIR/$name.secs"
	perf script -i "$DIR/$name.data" -F pid,ip,sym 2>/dev/null >"$DIR/$name.perf"
	echo "$name: $(cat "$DIR/$name.calls") calls in $(cat "$DIR/$name.secs") s, pids $pids"
}

if [ "$PROFILE" = 1 ]; then
	echo "== 4. profiles"
	profile point_router "$(host r1)" point shard="$DIR/c1/shard0"
	profile point_direct "$(host one)" point
	profile stream_router "$(host r2)" stream shard0="$DIR/c2/shard0" shard1="$DIR/c2/shard1"
	python3 - "$DIR" "$PROFILE_HZ" >>"$CSV" <<'PY'
# Sorts each perf sample (a stack) into one category, by the first rule
# whose functions appear on the stack, and writes CSV rows: CPU µs per call
# of each process role by category (point reads), or the share of each
# process's samples spent under a function (the stream, where they overlap).
import collections, csv, sys
d, hz = sys.argv[1], float(sys.argv[2])
out = csv.writer(sys.stdout, lineterminator="\n")

def stacks(name):
    roles = {k: v for k, v in (l.strip().split("=") for l in open(f"{d}/{name}.roles") if l.strip())}
    for block in open(f"{d}/{name}.perf").read().split("\n\n"):
        lines = [l.strip() for l in block.split("\n") if l.strip()]
        if not lines:
            continue
        pid = lines[0].split()[0]
        syms = set()
        for l in lines[1:]:
            parts = l.split(None, 1)
            if len(parts) == 2:
                syms.add(parts[1].split(" (")[0])
        yield roles.get(pid, "?"), syms

WAIT = {"__GI___poll", "__poll", "poll", "PQconsumeInput", "PQisBusy", "PQgetResult", "pqReadData",
        "__libc_recv", "pqWait", "pqSocketCheck"}
CLIENT_IO = {"secure_read", "secure_write", "pq_getbyte", "pq_flush", "socket_flush", "pq_getmessage",
             "internal_flush", "pq_recvbuf"}
PARSE_PLAN = {"pg_parse_query", "raw_parser", "parse_analyze_varparams", "parse_analyze_fixedparams",
              "pg_analyze_and_rewrite_varparams", "pg_analyze_and_rewrite_fixedparams", "pg_plan_queries",
              "pg_plan_query", "GetCachedPlan", "BuildCachedPlan", "RevalidateCachedQuery"}
TS_FUNCS = {"get_entity", "ts_point_read"}
POINT_RULES = {
    "router": [
        ("PL/Proxy: the shard's reply turned into the result (jsonb_in of the entity text)", lambda s: "plproxy_result" in s),
        ("PL/Proxy: RUN ON part evaluated as a query through SPI", lambda s: "plproxy_query_exec" in s),
        ("PL/Proxy: sending the query to the shard (libpq, socket write, waking the shard)", lambda s: "PQsendQueryParams" in s or "PQsendQuery" in s),
        ("PL/Proxy: waiting for and reading the reply (poll, recv)", lambda s: "plproxy_call_handler" in s and s & WAIT),
        ("PL/Proxy: the rest (function and cluster lookup, arguments as text, connection checks)", lambda s: "plproxy_call_handler" in s),
        ("router C code (route, partition lock, call setup)", lambda s: "routed_call" in s or "router_get_entity" in s),
        ("client protocol (reading the call, sending the result)", lambda s: s & CLIENT_IO),
        ("the router's statement (bind, executor start/end, commit, output)", lambda s: True),
    ],
    "shard": [
        ("tablestore get_entity (the read itself)", lambda s: s & TS_FUNCS),
        ("parse, analyze, plan of the statement", lambda s: s & PARSE_PLAN),
        ("client protocol (reading the call, sending the result)", lambda s: s & CLIENT_IO),
        ("the statement (bind, executor start/end, commit, output)", lambda s: True),
    ],
}
POINT_RULES["direct"] = POINT_RULES["shard"]

for name, label in (("point_router", "point read through the router"), ("point_direct", "point read on the shard directly")):
    calls = int(open(f"{d}/{name}.calls").read())
    secs = float(open(f"{d}/{name}.secs").read())
    cat = collections.defaultdict(collections.Counter)
    tot = collections.Counter()
    for role, syms in stacks(name):
        role = {"client": "router" if name == "point_router" else "direct"}.get(role, role)
        tot[role] += 1
        for lab, rule in POINT_RULES[role]:
            if rule(syms):
                cat[role][lab] += 1
                break
    for role in tot:
        out.writerow(["profile", name, 1, role, "calls", calls, ""])
        out.writerow(["profile", name, 1, role, "cpu_share", round(tot[role] / hz / secs, 3), ""])
        out.writerow(["profile", name, 1, role, "TOTAL CPU µs per call", round(tot[role] / hz / calls * 1e6, 1), ""])
        for lab, _ in POINT_RULES[role]:
            out.writerow(["profile", name, 1, role, lab, round(cat[role][lab] / hz / calls * 1e6, 1), ""])

STREAM = {
    "router": [
        ("PL/Proxy call through SPI, in all", {"SPI_execute_with_args"}),
        ("  of which json_in: PL/Proxy's input of each entity's json column", {"json_in"}),
        ("  of which waiting for and reading the shards' rows", WAIT),
        ("jsonb_in: each entity's json text parsed into jsonb for query_entities", {"jsonb_in"}),
        ("qsort_arg: sorting (jsonb_in sorts each object's keys; pages over every node)", {"qsort_arg"}),
        ("all JSON parsing (pg_parse_json)", {"pg_parse_json"}),
    ],
    "shard": [
        ("tablestore.query_page (scan, entity JSON)", {"ExecMakeTableFunctionResult"}),
        ("json ->> on each entity's json text (PartitionKey and RowKey for the router)", {"json_object_field_text"}),
        ("parse, analyze, plan of the statement", PARSE_PLAN),
        ("sending the rows to the router", {"secure_write"}),
        ("all JSON parsing (pg_parse_json)", {"pg_parse_json"}),
    ],
}
name = "stream_router"
secs = float(open(f"{d}/{name}.secs").read())
calls = int(open(f"{d}/{name}.calls").read())
cnt = collections.defaultdict(collections.Counter)
tot = collections.Counter()
for role, syms in stacks(name):
    role = "router" if role == "client" else role
    tot[role] += 1
    for lab, fs in STREAM[role.rstrip("0123456789")]:
        if syms & fs:
            cnt[role][lab] += 1
for role in tot:
    out.writerow(["profile", name, 1, role, "calls", calls, ""])
    out.writerow(["profile", name, 1, role, "cpu_share", round(tot[role] / hz / secs, 3), ""])
    for lab, _ in STREAM[role.rstrip("0123456789")]:
        out.writerow(["profile", name, 1, role, lab, round(100 * cnt[role][lab] / tot[role], 1), ""])
PY
fi

load_after=$(cut -d' ' -f1-3 /proc/loadavg)
total_s=$(($(date +%s) - began))
export M_DATE M_MACHINE M_SERVER M_PLPROXY
M_DATE=$(date -u +%Y-%m-%dT%H:%MZ)
M_MACHINE="$(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -r)"
M_SERVER=$(q "$DIR/c1/router" -c 'SELECT version()' | cut -d, -f1)
M_PLPROXY=$(q "$DIR/c1/router" -c "SELECT extversion FROM pg_extension WHERE extname = 'plproxy'")
export load_before load_after total_s load_s PARTITIONS ROWS ENTITIES RUNS SECONDS_PER_RUN COST_CLIENTS \
	THROUGHPUT_CLIENTS FILTER_REPS filter_expect PROFILE_HZ PROFILE_SECONDS perf_note
python3 - "$CSV" "$OUT/cluster.md" <<'PY'
# cluster.md from cluster.csv: the tables, each ratio against its baseline,
# and what the figures of this run say.
import csv, os, sys
E = os.environ
rows = list(csv.DictReader(open(sys.argv[1])))
def val(section, workload, clients, target, metric):
    for r in rows:
        if (r["section"], r["workload"], r["clients"], r["target"], r["metric"]) == (section, workload, str(clients), target, metric):
            return float(r["value"])
    return None
def num(x):
    return f"{x:.2f}" if x < 10 else f"{x:.1f}" if x < 100 else f"{x:.0f}"
o = []
p = o.append
p("# tablestore_router: what the scale-out router costs")
p("")
p(f"- date: {E['M_DATE']}; machine: {E['M_MACHINE']}; load average before: {E['load_before']}, after: {E['load_after']} (1, 5, 15 min; the machine is shared with other work)")
p(f"- servers: {E['M_SERVER']}, PL/Proxy {E['M_PLPROXY']}; every server started by tools/lib.sh ts_start_cluster (throwaway, Unix sockets, fsync=off, default shared_buffers), the same on every path, so the ratios compare like with like")
p(f"- clusters of 1, 2 and 4 shards, each behind its own router (16 partitions), all running side by side; 'Bench' = {E['PARTITIONS']} PartitionKeys x {E['ROWS']} entities (~250 bytes) loaded through each router; **one node** = the shard of the 1-shard cluster, a single tablestore server holding all of it")
spread = [f"{r['target']} {int(float(r['value']))}" for r in rows if r["section"] == "data"]
p("- entities per shard (routing spreads the data): " + ", ".join(spread))
p(f"- pgbench -M prepared, {E['RUNS']} runs of {E['SECONDS_PER_RUN']} s per cell, the paths alternating within each run, medians (every run's value in cluster.csv); load {E['load_s']} s; the whole command {E['total_s']} s: `bench/cluster.sh`")
p("")

p("## 1. The router's cost per call")
p("")
p("The 1-shard cluster's router against the same call made directly on its shard: the same data on the same server behind. Latency: pgbench's mean per call; CPU: the CPU time of the servers (every process) per call: through the router, the router's server and the shard's; directly, the shard's.")
p("")
p("| call | clients | router µs/call | direct µs/call | latency router/direct | added µs/call | CPU µs/call via router (router + shard) | CPU µs/call direct | CPU router/direct | router ops/s | direct ops/s |")
p("|---|---|---|---|---|---|---|---|---|---|---|")
for w, lab in (("point", "get_entity"), ("write", "insert_or_replace_entity"), ("batch", "execute_batch, 100 inserts")):
    for c in E["COST_CLIENTS"].split():
        rl, dl = val("cost", w, c, "r1", "latency_us"), val("cost", w, c, "one", "latency_us")
        rc, dc = val("cost", w, c, "r1", "cpu_us_per_op"), val("cost", w, c, "one", "cpu_us_per_op")
        rr = val("cost", w, c, "r1", "router_cpu_us_per_op")
        rt, dt = val("cost", w, c, "r1", "ops_per_s"), val("cost", w, c, "one", "ops_per_s")
        if rl is None:
            continue
        p(f"| {lab} | {c} | {rl:.0f} | {dl:.0f} | **{rl / dl:.2f}** | {rl - dl:.0f} | {rc:.0f} ({rr:.0f} + {rc - rr:.0f}) | {dc:.0f} | {rc / dc:.2f} | {rt:.0f} | {dt:.0f} |")
p("")
c1 = E["COST_CLIENTS"].split()[0]
pl, pd = val("cost", "point", c1, "r1", "latency_us"), val("cost", "point", c1, "one", "latency_us")
pc, pdc = val("cost", "point", c1, "r1", "cpu_us_per_op"), val("cost", "point", c1, "one", "cpu_us_per_op")
prc = val("cost", "point", c1, "r1", "router_cpu_us_per_op")
bl, bd = val("cost", "batch", c1, "r1", "latency_us"), val("cost", "batch", c1, "one", "latency_us")
if pl and bl:
    p(f"A routed call costs a roughly fixed amount on top of the shard's own work: at {c1} client a point read takes {pl:.0f} µs through the router against {pd:.0f} µs directly ({pl / pd:.1f}x), and {pc:.0f} µs of CPU against {pdc:.0f} µs, of which {prc:.0f} µs on the router's server. "
      "The call crosses one more backend (pgbench → router backend → PL/Proxy's libpq connection → shard backend, and back): two more socket hand-offs between processes, the router's own statement (bind, executor, commit), and on the shard the statement PL/Proxy sends, which arrives as SQL text and is parsed and planned on every call (section 4). "
      f"The fixed part weighs on small calls and much less on big ones: a batch of 100 inserts takes {bl:.0f} µs against {bd:.0f} µs ({bl / bd:.2f}x). "
      "At 4 clients the 2 cores are saturated (pgbench included), so latency there includes queueing. "
      "On this shared machine a run's latency also moves with the other tenants' load (every run is in cluster.csv); the CPU per call moves much less and is the steadier measure of what the router costs.")
    p("")
    E["ROUTER_CPU"] = str(prc)

p("## 2. Fan-out: queries without a PartitionKey")
p("")
p(f"Time per query, measured server-side in PL/pgSQL (no client cost in either), each run checking the count it saw. **filter**: `count(*) FROM query_entities('Bench', 'Tag eq 7')` ({E['filter_expect']} of {E['ENTITIES']} entities match: a scan of everything that returns 1%; mean of {E['FILTER_REPS']} queries per run); **walk**: every page of `query_entities_page(top 1000)` following the continuations ({E['ENTITIES']} entities); **stream**: `count(*) FROM query_entities('Bench')` ({E['ENTITIES']} entities).")
p("")
p("| query | one node ms | router, 1 shard ms | router, 2 shards ms | router, 4 shards ms | 2 shards / one node | 1 shard / one node | 4 shards / one node |")
p("|---|---|---|---|---|---|---|---|")
for w, lab in (("filter", "filter, 1% match"), ("walk", "walk, pages of 1000"), ("stream", "stream, all")):
    one, r1, r2, r4 = (val("fanout", w, 1, t, "ms") for t in ("one", "r1", "r2", "r4"))
    if one is None:
        continue
    p(f"| {lab} | {num(one)} | {num(r1)} | {num(r2)} | {num(r4)} | **{r2 / one:.2f}** | {r1 / one:.2f} | {r4 / one:.2f} |")
p("")
sent = {t: val("fanout", "first_page", 1, t, "rows_sent") for t in ("r1", "r2", "r4")}
f1, f2 = val("fanout", "filter", 1, "one", "ms"), val("fanout", "filter", 1, "r2", "ms")
w1, w2, wr1 = val("fanout", "walk", 1, "one", "ms"), val("fanout", "walk", 1, "r2", "ms"), val("fanout", "walk", 1, "r1", "ms")
s1, s2, sr1 = val("fanout", "stream", 1, "one", "ms"), val("fanout", "stream", 1, "r2", "ms"), val("fanout", "stream", 1, "r1", "ms")
if f1 and sent["r1"] is not None:
    p(f"- The filter is the one query where 2 shards can beat one node here ({f2 / f1:.2f}x): each shard scans its half in parallel on its own core and sends back little. With 4 shards there are no more cores to scan with.")
    p(f"- A walk or a stream that returns every entity costs the router per entity. Through a router of even 1 shard a walk takes {wr1 / w1:.1f}x and a stream {sr1 / s1:.1f}x the time on one node: each entity is produced as json text on the shard (its keys come from the scan, `tablestore._query_page_keyed`), passes through PL/Proxy as text, and is parsed once into the jsonb result on the router (jsonb_in, most of the router's CPU in section 4), besides the router's own per-row and per-page work.")
    p(f"- A page over N shards asks each node for a whole page and keeps what lies below the smallest continuation (a continuation is one key, so that is inherent to pages): for the first page of 1000 the nodes sent {sent['r1']:.0f} (1 shard), {sent['r2']:.0f} (2 shards) and {sent['r4']:.0f} (4 shards) entities, and the next page asks again from the merged continuation, so the walk slows down as shards are added ({w2 / w1:.1f}x one node with 2 shards). A stream (query_entities) reads each node with its own continuation instead, so each entity crosses the wire once ({s2 / s1:.1f}x one node with 2 shards, against {sr1 / s1:.1f}x through 1 shard).")
    p("")

p("## 3. Throughput with 1, 2 and 4 shards through one router")
p("")
tc = E["THROUGHPUT_CLIENTS"]
p(f"{tc} pgbench clients on one router (and point reads at 1 client, where throughput is 1 / latency); CPU = CPU time of every server of the cluster (router and shards) per call.")
p("")
p("| call | clients | 1 shard ops/s | 2 shards ops/s | 4 shards ops/s | scaling 2 / 1 | scaling 4 / 1 | one node directly ops/s | 1 shard / one node | CPU µs/call: 1, 2, 4 shards, one node |")
p("|---|---|---|---|---|---|---|---|---|---|")
for w, lab, c in (("point", "get_entity", "1"), ("point", "get_entity", tc), ("write", "insert_or_replace_entity", tc)):
    r1, r2, r4, one = (val("throughput", w, c, t, "ops_per_s") for t in ("r1", "r2", "r4", "one"))
    cp = [val("throughput", w, c, t, "cpu_us_per_op") for t in ("r1", "r2", "r4", "one")]
    if r1 is None:
        continue
    p(f"| {lab} | {c} | {r1:.0f} | {r2:.0f} | {r4:.0f} | **{r2 / r1:.2f}** | **{r4 / r1:.2f}** | {one:.0f} | {r1 / one:.2f} | {', '.join(f'{x:.0f}' for x in cp)} |")
p("")
p("What a 2-core machine can and cannot show:")
p("")
p("- Every server (router, shards, and pgbench itself) shares the same 2 cores, so adding shards adds processes, not CPU. Real scale-out (each shard on its own machine, throughput growing with the number of shards) cannot be shown here; these numbers must not be read as the cluster's scaling.")
p("- What it does show: the router's overhead (1 shard / one node: the same server behind, the router's work on top), that routing spreads the data over the shards (entities per shard above), and that a call still runs on one shard only: the CPU per call does not multiply with the number of shards.")
p(f"- Throughput with more shards, and the CPU per call, in this run: see the table. Each shard added brings its own postmaster and one more backend per router connection ({tc} clients x N shards backends in all), all sharing the same 2 cores and their caches; where throughput falls and the CPU per call rises with N, that is the price of more processes on the same cores, which separate machines would not pay. The 1-client row shows one call at a time through 1, 2 or 4 shards (no contention from this benchmark, though the machine is shared).")
p("- The fan-out costs of section 2, on the other hand, are not an artefact of the machine: the over-fetch of pages over N nodes and the parsing of each entity into jsonb on the router are work the router and the shards do wherever they run.")
p("")

prof = [r for r in rows if r["section"] == "profile"]
p("## 4. Where a routed call spends its CPU (perf)")
p("")
if not prof:
    p(E["perf_note"])
else:
    p(f"`perf record -F {E['PROFILE_HZ']} --call-graph dwarf` on the backends serving one pgbench client, for {E['PROFILE_SECONDS']} s; each sample goes to the first category whose functions are on its stack; CPU µs per call = samples / sampling rate / calls completed in the window (counted from pgbench's transaction log). perf slows the calls, so absolute figures are above section 1's; the split is what matters.")
    p("")
    def share(pr, role):
        return float(next(r["value"] for r in pr if r["target"] == role and r["metric"] == "cpu_share"))
    def get(pr, role, prefix):
        return sum(float(r["value"]) for r in pr if r["target"] == role and r["metric"].startswith(prefix))
    for name, title in (("point_router", "get_entity through the router (1 client)"), ("point_direct", "get_entity on the shard directly (1 client, the baseline)")):
        pr = [r for r in prof if r["workload"] == name]
        if not pr:
            continue
        roles = list(dict.fromkeys(r["target"] for r in pr))
        calls = int(float(next(r["value"] for r in pr if r["metric"] == "calls")))
        p(f"**{title}**: {calls} calls in the window; " + "; ".join(f"{role} backend on CPU {100 * share(pr, role):.0f}% of the time" for role in roles))
        p("")
        p("| process | where | CPU µs/call |")
        p("|---|---|---|")
        for r in pr:
            if r["metric"] in ("calls", "cpu_share"):
                continue
            m = f"**{r['metric']}**" if r["metric"].startswith("TOTAL") else r["metric"]
            p(f"| {r['target']} | {m} | {float(r['value']):.1f} |")
        p("")
    pr = [r for r in prof if r["workload"] == "stream_router"]
    if pr:
        roles = list(dict.fromkeys(r["target"] for r in pr))
        p("**query_entities('Bench') streamed through the router of 2 shards (1 client)**: share of each process's CPU samples spent under a function (the lines overlap); " + "; ".join(f"{role} on CPU {100 * share(pr, role):.0f}% of the time" for role in roles))
        p("")
        p("| process | under | % of its samples |")
        p("|---|---|---|")
        for r in pr:
            if r["metric"] in ("calls", "cpu_share"):
                continue
            p(f"| {r['target']} | {r['metric']} | {float(r['value']):.1f} |")
        p("")
    pr = [r for r in prof if r["workload"] == "point_router"]
    pd = [r for r in prof if r["workload"] == "point_direct"]
    if pr and pd:
        rt, st, dt = get(pr, "router", "TOTAL"), get(pr, "shard", "TOTAL"), get(pd, "direct", "TOTAL")
        plp = get(pr, "router", "PL/Proxy")
        pp, dpp = get(pr, "shard", "parse"), get(pd, "direct", "parse")
        ge, dge = get(pr, "shard", "tablestore"), get(pd, "direct", "tablestore")
        p("What the profile says:")
        p("")
        p(f"- A point read through the router costs {rt:.0f} µs of router CPU plus {st:.0f} µs of shard CPU, against {dt:.0f} µs for the same call made directly" +
          (": the shard alone spends more on a routed call than the whole direct call does." if st > dt else "."))
        p(f"- On the shard, parse, analyze and plan take {pp:.1f} µs per routed call ({dpp:.1f} µs direct) while get_entity itself takes {ge:.1f} µs ({dge:.1f} µs direct): PL/Proxy sends `SELECT tablestore.get_entity($1, ...)` as text with PQsendQueryParams (an unnamed statement), never a prepared one, so every call is parsed and planned again. The shard's statement and protocol overheads are those of any call; only get_entity is the work asked for.")
        p(f"- On the router, PL/Proxy accounts for {plp:.0f} µs per call: sending the query (the socket write wakes the shard's backend), waiting in poll for the reply, turning the reply text into the result (jsonb_in parses the entity again), and, on every call, running the `RUN ON part` expression as a query through SPI (PL/Proxy treats an argument after RUN ON as a hash query). The router's own C code (routing, partition lock) is small; the rest is the router's own statement and its protocol with the client.")
        rc = float(E.get("ROUTER_CPU", "0") or 0)
        if rc > 0:
            p(f"- The router's server spent {rc:.0f} µs of CPU per point read in section 1 (without perf): one router core can route at most about {1e6 / rc:,.0f} point reads per second, whatever the number of shards. On separate machines the shards scale out; the routing could scale with more routers, each holding only the configuration (its partition locks, though, are its own: a partition move would then have to pause the calls on every router).")
    if pr:
        p("- For a stream over every node, the shards spend most of their CPU in the scan that builds each entity's JSON (the keys come with it), and the router most of its CPU in jsonb_in, which parses each entity into the jsonb result (with qsort_arg sorting each object's keys); query_entities_json returns the text as it is.")
    p("")
open(sys.argv[2], "w").write("\n".join(o) + "\n")
PY
cat "$OUT/cluster.md"
echo "== bench/cluster.sh: ${total_s}s in all"
