#!/usr/bin/env bash
# bench/gateway.sh: tablestore-gateway against the same operations as direct
# SQL calls of the extension (pgbench -M prepared), and against Azurite 3.x
# (npm, in-memory) driven by the same load generator (bench/gateway_load.mjs).
# Writes bench/results/gateway.csv and gateway.md.
#
#   bench/gateway.sh                       # 20 partitions x 1,000 entities, 5 s per cell
#   SECONDS_PER_RUN=2 CLIENTS="1 4" bench/gateway.sh
#   AZURITE=0 bench/gateway.sh             # without Azurite
#
# Workloads: point (one entity by key), insert (one entity, return-no-content),
# query (one page of 100 entities of a partition), batch (100 inserts in one
# entity group transaction).  The gateway's overhead per request is its mean
# latency minus direct SQL's at one client.
set -eu
cd "$(dirname "$0")/.."
. tools/lib.sh

PARTITIONS=${PARTITIONS:-20}
ROWS=${ROWS:-1000}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-5}
CLIENTS=${CLIENTS:-"1 8"}
OPS=${OPS:-"point insert query batch"}
AZURITE=${AZURITE:-1}
SETTINGS="-c shared_buffers=1GB -c synchronous_commit=off -c max_connections=50"

ts_install_deps
ts_build_install
make -s -C gateway

. bench/gwsetup.sh
gw_setup tsgwbench $SETTINGS
gw_start_gateway 8
node bench/gateway_load.mjs "$GW" bench load 8 0 "$PARTITIONS" "$ROWS"

# the same operations as direct SQL calls of the extension's functions
cat >"$DIR/point.sql" <<EOF
\set p random(0, $((PARTITIONS - 1)))
\set r random(0, $((ROWS - 1)))
SELECT tablestore.get_entity('bench', 'p' || lpad(:p::text, 3, '0'), lpad(:r::text, 5, '0'));
EOF
cat >"$DIR/insert.sql" <<'EOF'
SELECT tablestore.insert_entity('bench', jsonb_build_object('PartitionKey', 'sqlins' || :client_id,
  'RowKey', (extract(epoch FROM clock_timestamp()) * 1000000)::bigint::text, 'FirstName', 'Name1', 'LastName', 'Smith',
  'Age', 42, 'Email', 'user1@example.com', 'Active', true, 'Score', 1.5));
EOF
cat >"$DIR/query.sql" <<EOF
\set p random(0, $((PARTITIONS - 1)))
SELECT entities FROM tablestore.query_entities_page('bench', 'PartitionKey eq ''p' || lpad(:p::text, 3, '0') || '''', NULL, 100);
EOF
cat >"$DIR/batch.sql" <<'EOF'
SELECT count(*) FROM tablestore.execute_batch('bench', (SELECT jsonb_agg(jsonb_build_object('op', 'insert',
  'entity', jsonb_build_object('PartitionKey', k.pk, 'RowKey', lpad(i::text, 5, '0'), 'FirstName', 'Name' || i,
  'LastName', 'Smith', 'Age', 18 + i % 50, 'Email', 'user' || i || '@example.com', 'Active', true, 'Score', 1.5 * i)))
  FROM (SELECT 'sqlb' || :client_id || '-' || (extract(epoch FROM clock_timestamp()) * 1000000)::bigint AS pk OFFSET 0) AS k,
       generate_series(0, 99) AS i));
EOF
sql_run() {	# sql_run OP CLIENTS -> "ops_per_s,mean_ms"
	pgbench -n -M prepared -c "$2" -j "$2" -T "$SECONDS_PER_RUN" -f "$DIR/$1.sql" bench 2>&1 |
		awk '/^latency average/ {lat = $4} /^tps/ {tps = $3} END {printf "%.0f,%.3f\n", tps, lat}'
}

if [ "$AZURITE" = 1 ]; then
	gw_start_azurite
	node bench/gateway_load.mjs "$AZ" bench load 8 0 "$PARTITIONS" "$ROWS"
fi

# cpu_us TICKS OPS: server CPU microseconds per operation
cpu_us() { awk -v t="$1" -v n="$2" -v hz="$hz" 'BEGIN { printf "%.0f", n ? t * 1e6 / hz / n : 0 }'; }

OUT=bench/results
mkdir -p "$OUT"
echo "target,op,clients,seconds,ops,ops_per_s,mean_ms,p50_ms,p99_ms,errors,server_cpu_us_per_op" >"$OUT/gateway.csv"
for c in $CLIENTS; do
	for op in $OPS; do
		t0=$(($(ticks $gwpid) + $(pg_ticks)))
		g=$(node bench/gateway_load.mjs "$GW" bench "$op" "$c" "$SECONDS_PER_RUN" "$PARTITIONS" "$ROWS")
		t1=$(($(ticks $gwpid) + $(pg_ticks)))
		echo "gateway,$g,$(cpu_us $((t1 - t0)) "$(cut -d, -f4 <<<"$g")")" | tee -a "$OUT/gateway.csv"
		t0=$(pg_ticks)
		s=$(sql_run "$op" "$c")
		sleep 0.2	# the backends are reaped
		t1=$(pg_ticks)
		n=$(awk -F, -v d="$SECONDS_PER_RUN" '{printf "%.0f", $1 * d}' <<<"$s")
		echo "sql,$op,$c,$SECONDS_PER_RUN,$n,${s%,*},${s#*,},,,0,$(cpu_us $((t1 - t0)) "$n")" | tee -a "$OUT/gateway.csv"
		if [ "$AZURITE" = 1 ]; then
			t0=$(ticks $azpid)
			a=$(node bench/gateway_load.mjs "$AZ" bench "$op" "$c" "$SECONDS_PER_RUN" "$PARTITIONS" "$ROWS")
			t1=$(ticks $azpid)
			echo "azurite,$a,$(cpu_us $((t1 - t0)) "$(cut -d, -f4 <<<"$a")")" | tee -a "$OUT/gateway.csv"
		fi
	done
done

python3 - "$OUT/gateway.csv" "$AZURITE" >"$OUT/gateway.md" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
az = sys.argv[2] == "1"
cell = {(r["target"], r["op"], r["clients"]): r for r in rows}
print("| op | clients | gateway ops/s | SQL ops/s | gateway / SQL | gateway mean ms | SQL mean ms | gateway CPU µs/op (gateway + PostgreSQL) | SQL CPU µs/op | gateway's CPU overhead µs/op |"
      + (" Azurite ops/s | gateway / Azurite | Azurite CPU µs/op | Azurite CPU / gateway CPU |" if az else "") + " errors |")
print("|---|---|---|---|---|---|---|---|---|---|" + ("---|---|---|---|" if az else "") + "---|")
for (t, op, c), g in cell.items():
    if t != "gateway":
        continue
    s = cell[("sql", op, c)]
    gt, st = float(g["ops_per_s"]), float(s["ops_per_s"])
    gc, sc = float(g["server_cpu_us_per_op"]), float(s["server_cpu_us_per_op"])
    line = (f"| {op} | {c} | {gt:.0f} | {st:.0f} | {gt / st:.2f} | {float(g['mean_ms']):.3f} | {float(s['mean_ms']):.3f} |"
            f" {gc:.0f} | {sc:.0f} | {gc - sc:.0f} |")
    errs = int(g["errors"])
    if az:
        a = cell[("azurite", op, c)]
        at, ac = float(a["ops_per_s"]), float(a["server_cpu_us_per_op"])
        line += f" {at:.0f} | {gt / at if at else float('inf'):.1f} | {ac:.0f} | {ac / gc if gc else float('inf'):.1f} |"
        errs += int(a["errors"])
    print(line + f" {errs} |")
PY
{
	echo
	echo "- $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load average before: $(cut -d' ' -f1-3 /proc/loadavg); $PARTITIONS x $ROWS entities, ${SECONDS_PER_RUN} s per cell"
	[ "$AZURITE" = 1 ] && echo "- Azurite $azver, in memory, same load generator"
} >>"$OUT/gateway.md"
cat "$OUT/gateway.md"
