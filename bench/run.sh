#!/usr/bin/env bash
# bench/run.sh: tablestore against hand-written SQL on a plain table, side by
# side in one run, on a throwaway server.  Writes bench/results/results.csv,
# results.md and (with python3-matplotlib) throughput.png.
#
#   bench/run.sh                      # 1,000 partitions x 1,000 entities
#   PARTITIONS=100 ROWS=100 SECONDS_PER_RUN=3 RUNS=1 bench/run.sh   # a quick look
set -eu
cd "$(dirname "$0")/.."
. tools/lib.sh

PARTITIONS=${PARTITIONS:-1000}
ROWS=${ROWS:-1000}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-8}
RUNS=${RUNS:-3}
CLIENTS=${CLIENTS:-"2 8"}
WORKLOADS=${WORKLOADS:-"point insert merge upsert batch"}
SETTINGS="-c shared_buffers=2GB -c synchronous_commit=off -c max_wal_size=8GB -c checkpoint_timeout=30min -c max_connections=50"

ts_install_deps
dpkg-query -W -f='${Status}' python3-matplotlib 2>/dev/null | grep -q "ok installed" ||
	{ apt-get install -y -qq python3-matplotlib >/dev/null 2>&1 || echo "(no python3-matplotlib: no plot)"; }
ts_build_install

DIR=$(mktemp -d /tmp/tsbench.XXXXXX)
trap 'ts_stop_server "$DIR"; rm -rf "$DIR"' EXIT
# ts_start_server adds fsync=off for tests; benchmarks keep fsync on
ts_start_server "$DIR" $SETTINGS -c fsync=on
OUT=bench/results
mkdir -p "$OUT"
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d postgres "$@"; }

{
	echo "# tablestore benchmark"
	echo
	echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -r)"
	echo "- server: $(q -c 'SELECT version()' | cut -d, -f1); settings: \`$SETTINGS -c fsync=on\`"
	echo "- data: $PARTITIONS partitions x $ROWS entities (~300 bytes); pgbench -M prepared, $RUNS runs of ${SECONDS_PER_RUN}s per cell, medians"
	echo
} >"$OUT/results.md"
cat "$OUT/results.md"

echo "== loading $((PARTITIONS * ROWS)) entities through execute_batch"
start=$(date +%s)
q <<SQL
CREATE EXTENSION tablestore;
SELECT tablestore.create_table('Employees');
CREATE PROCEDURE load(partitions int, nrows int) LANGUAGE plpgsql AS \$\$
BEGIN
	FOR p IN 0 .. partitions - 1 LOOP
		PERFORM count(*) FROM generate_series(0, (nrows - 1) / 100) c,
			LATERAL tablestore.execute_batch('Employees', (
				SELECT jsonb_agg(jsonb_build_object('op', 'insert', 'entity', jsonb_build_object(
					'PartitionKey', 'tenant' || lpad(p::text, 4, '0'), 'RowKey', lpad(i::text, 8, '0'),
					'FirstName', 'First' || i, 'LastName', 'Last' || p, 'Email', 'user' || i || '@contoso.com',
					'Age', 18 + i % 50, 'Salary', 1000.5 + i,
					'HireDate', '2019-03-01T09:00:00Z', 'HireDate@odata.type', 'Edm.DateTime',
					'Notes', repeat('x', 120))))
				FROM generate_series(c * 100, least(c * 100 + 99, nrows - 1)) i));
		COMMIT;
	END LOOP;
END \$\$;
CALL load($PARTITIONS, $ROWS);
CREATE TABLE employees_base (pk text COLLATE "C", rk text COLLATE "C", ts timestamptz, props jsonb, PRIMARY KEY (pk, rk));
INSERT INTO employees_base SELECT pk, rk, ts, props FROM tablestore_data.employees;
VACUUM ANALYZE;
SQL
load_s=$(( $(date +%s) - start ))
echo "loaded in ${load_s}s: tablestore $(q -c "SELECT pg_size_pretty(pg_total_relation_size('tablestore_data.employees'))"), baseline $(q -c "SELECT pg_size_pretty(pg_total_relation_size('employees_base'))")"

tps() {
	pgbench -n -M prepared -c "$2" -j "$2" -T "$SECONDS_PER_RUN" -D partitions="$PARTITIONS" -D rows="$ROWS" \
		-f "bench/sql/$1.sql" postgres 2>&1 | sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

echo "workload,clients,tablestore_tps,baseline_tps,ratio,entities_per_op" >"$OUT/results.csv"
for w in $WORKLOADS; do
	per=1; [ "$w" = batch ] && per=100
	for c in $CLIENTS; do
		ts_runs="" base_runs=""
		for r in $(seq "$RUNS"); do
			# alternate the two paths so that drift hits both alike
			ts_runs="$ts_runs $(tps ts_$w "$c")"
			base_runs="$base_runs $(tps base_$w "$c")"
		done
		t=$(echo $ts_runs | tr ' ' '\n' | median)
		b=$(echo $base_runs | tr ' ' '\n' | median)
		ratio=$(awk -v t="$t" -v b="$b" 'BEGIN {printf "%.2f", t / b}')
		echo "$w,$c,$t,$b,$ratio,$per" | tee -a "$OUT/results.csv"
	done
done

{
	echo "| workload | clients | tablestore ops/s | hand-written SQL ops/s | ratio | entities/s (tablestore) |"
	echo "|---|---|---|---|---|---|"
	tail -n +2 "$OUT/results.csv" | while IFS=, read -r w c t b r per; do
		printf '| %s | %s | %.0f | %.0f | %s | %.0f |\n' "$w" "$c" "$t" "$b" "$r" "$(awk -v t="$t" -v p="$per" 'BEGIN {print t * p}')"
	done
	echo
	echo "Load: $((PARTITIONS * ROWS)) entities through execute_batch in ${load_s}s. Ratio = tablestore / hand-written SQL throughput (higher is better for tablestore). The service's published targets: 2,000 entities/s per partition, 20,000 transactions/s per account."
} >>"$OUT/results.md"
cat "$OUT/results.md"

/usr/bin/python3 - "$OUT" <<'PY' || echo "(plot skipped)"
import csv, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
out = sys.argv[1]
rows = list(csv.DictReader(open(out + "/results.csv")))
labels = [f"{r['workload']}\n{r['clients']} clients" for r in rows]
x = range(len(rows))
fig, ax = plt.subplots(figsize=(max(6, len(rows) * 0.9), 4))
ax.bar([i - 0.2 for i in x], [float(r["tablestore_tps"]) for r in rows], 0.4, label="tablestore")
ax.bar([i + 0.2 for i in x], [float(r["baseline_tps"]) for r in rows], 0.4, label="hand-written SQL")
ax.set_xticks(list(x)); ax.set_xticklabels(labels, fontsize=8)
ax.set_ylabel("operations per second"); ax.set_yscale("log"); ax.legend()
ax.set_title("tablestore vs hand-written SQL (median of runs)")
fig.tight_layout(); fig.savefig(out + "/throughput.png", dpi=110)
PY
