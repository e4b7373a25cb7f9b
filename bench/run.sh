#!/usr/bin/env bash
# bench/run.sh: tablestore against hand-written SQL on a plain table, side by
# side in one run, on a throwaway server.  Writes bench/results/results.csv,
# results.md and (with python3-matplotlib) throughput.png; then runs
# bench/index.sh (the tskey index against a btree: bench/results/index.md).
#
#   bench/run.sh                      # 1,000 partitions x 1,000 entities
#   PARTITIONS=20 ROWS=200 SECONDS_PER_RUN=2 RUNS=1 bench/run.sh   # a quick look
#
# Workloads (bench/sql/ts_W.sql against bench/sql/base_W.sql):
#   point   get_entity                       vs SELECT by key
#   qpoint  query_entities, PK eq and RK eq  vs SELECT by key (and vs get_entity)
#   range   query_entities, 100 RowKeys      vs WHERE pk = AND rk >= AND rk < ORDER BY rk
#   filter  query_entities, PK eq, Age gt 42 vs WHERE pk = AND (props->>'Age')::int > 42
#           (Age is 18 + i % 50, so half of a partition's entities match)
#   filter50  the same with Age gt 50, issue 3's case (17 in 50 match)
#   filterjson  the filter workload against SQL that returns what
#           query_entities returns: each entity as the service's JSON
#           (props || PartitionKey, RowKey, Timestamp, odata.etag)
#   paging  query_entities_page, one page of 1,000 from a random key of the
#           'Paged' table vs keyset LIMIT 1001; plus whole-table walks
#   insert, merge, upsert, replace: single writes
#   delete  insert_entity then delete_entity of the same new key, against
#           INSERT then DELETE (a delete needs an entity to delete)
#   batch   a 100-insert batch against 100 INSERTs in one transaction
# Every read returns the entities to the client: tablestore the entity jsonb
# (one row each; for paging one row with the page's array), hand-written SQL
# the row (pk, rk, ts, props).
set -eu
cd "$(dirname "$0")/.."
. tools/lib.sh
began=$(date +%s)

PARTITIONS=${PARTITIONS:-1000}
ROWS=${ROWS:-1000}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-4}
PAGED_PARTITIONS=${PAGED_PARTITIONS:-100}
RUNS=${RUNS:-3}
CLIENTS=${CLIENTS:-"2 8"}
WORKLOADS=${WORKLOADS:-"point qpoint range filter filter50 filterjson paging insert merge upsert replace delete batch"}
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
	echo "- load average before the run: $(cut -d' ' -f1-3 /proc/loadavg) (the machine is shared; 1, 5, 15 min)"
	echo "- data: 'Employees' $PARTITIONS partitions x $ROWS entities (~300 bytes), 'Paged' $PAGED_PARTITIONS x $ROWS, each copied to a plain table for hand-written SQL; pgbench -M prepared, $RUNS runs of ${SECONDS_PER_RUN}s per cell, the two paths alternating, medians"
	echo
} >"$OUT/results.md"
cat "$OUT/results.md"

echo "== loading $(((PARTITIONS + PAGED_PARTITIONS) * ROWS)) entities through execute_batch"
start=$(date +%s)
q <<SQL
CREATE EXTENSION tablestore;
SELECT tablestore.create_table('Employees');
SELECT tablestore.create_table('Paged');
CREATE PROCEDURE load(tname text, partitions int, nrows int) LANGUAGE plpgsql AS \$\$
BEGIN
	FOR p IN 0 .. partitions - 1 LOOP
		PERFORM count(*) FROM generate_series(0, (nrows - 1) / 100) c,
			LATERAL tablestore.execute_batch(tname, (
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
CALL load('Employees', $PARTITIONS, $ROWS);
CALL load('Paged', $PAGED_PARTITIONS, $ROWS);
CREATE TABLE employees_base (pk text COLLATE "C", rk text COLLATE "C", ts timestamptz, props jsonb, PRIMARY KEY (pk, rk));
INSERT INTO employees_base SELECT pk, rk, ts, props FROM tablestore_data.employees;
CREATE TABLE paged_base (pk text COLLATE "C", rk text COLLATE "C", ts timestamptz, props jsonb, PRIMARY KEY (pk, rk));
INSERT INTO paged_base SELECT pk, rk, ts, props FROM tablestore_data.paged;
VACUUM ANALYZE;
SQL
load_s=$(( $(date +%s) - start ))
echo "loaded in ${load_s}s: tablestore $(q -c "SELECT pg_size_pretty(pg_total_relation_size('tablestore_data.employees'))"), baseline $(q -c "SELECT pg_size_pretty(pg_total_relation_size('employees_base'))")"

# memory QUERY: run QUERY in a fresh backend and sample that backend's
# /proc/PID/status every 20 ms; prints "peak_rss_anon_mb peak_vmrss_mb
# vmhwm_mb seconds".  RssAnon is the backend's private memory (what
# streaming must keep flat); VmRSS and VmHWM also count the shared buffers
# the backend has touched, which grow with the data read whatever the query.
memory() {
	local app="tsmem$$" pid="" anon=0 rss=0 hwm=0 t0 t1 qpid
	t0=$(date +%s.%N)
	PGAPPNAME=$app psql -X -q -At -v ON_ERROR_STOP=1 -d postgres -c "SELECT pg_sleep(0.5)" -c "$1" >/dev/null &
	qpid=$!
	while [ -z "$pid" ] && kill -0 "$qpid" 2>/dev/null; do
		pid=$(q -c "SELECT pid FROM pg_stat_activity WHERE application_name = '$app'")
	done
	while [ -n "$pid" ] && [ -r "/proc/$pid/status" ] && kill -0 "$qpid" 2>/dev/null; do
		read -r a r h < <(awk '/^RssAnon:/ {a = $2} /^VmRSS:/ {r = $2} /^VmHWM:/ {h = $2} END {print a + 0, r + 0, h + 0}' "/proc/$pid/status" 2>/dev/null || echo "0 0 0")
		[ "$a" -gt "$anon" ] && anon=$a
		[ "$r" -gt "$rss" ] && rss=$r
		[ "$h" -gt "$hwm" ] && hwm=$h
		sleep 0.02
	done
	wait "$qpid"
	t1=$(date +%s.%N)
	awk -v a="$anon" -v r="$rss" -v h="$hwm" -v t="$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a - 0.5}')" \
		'BEGIN {printf "%.1f %.1f %.1f %.2f\n", a / 1024, r / 1024, h / 1024, t}'
}

echo "== backend memory (RssAnon peak, VmRSS peak, VmHWM in MB; seconds)"
all=$((PARTITIONS * ROWS))
echo "query,entities,peak_rss_anon_mb,peak_vmrss_mb,vmhwm_mb,seconds" >"$OUT/memory.csv"
while IFS='|' read -r label n sql; do
	m=$(memory "$sql")
	echo "$label,$n,${m// /,}" | tee -a "$OUT/memory.csv"
done <<EOF
query_entities all|$all|SELECT count(*) FROM tablestore.query_entities('Employees')
query_entities one partition|$ROWS|SELECT count(*) FROM tablestore.query_entities('Employees', 'PartitionKey eq ''tenant0001''')
query_entities all (entity text)|$all|SELECT sum(length(e::text)) FROM tablestore.query_entities('Employees') e
hand-written SQL all|$all|SELECT count(*) FROM employees_base
hand-written SQL all (row text)|$all|SELECT sum(length(b::text)) FROM employees_base b
EOF

PGBENCH_LOG=$DIR/pgbench.log
tps() {
	pgbench -n -M prepared -c "$2" -j "$2" -T "$SECONDS_PER_RUN" -D partitions="$PARTITIONS" -D rows="$ROWS" \
		-D paged_partitions="$PAGED_PARTITIONS" -f "bench/sql/$1.sql" postgres >"$PGBENCH_LOG" 2>&1 || true
	if grep -q "^tps = " "$PGBENCH_LOG" && ! grep -q "aborted\|ERROR" "$PGBENCH_LOG"; then
		sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$PGBENCH_LOG"
	else
		echo "pgbench $1 with $2 clients failed:" >&2
		cat "$PGBENCH_LOG" >&2
		exit 1
	fi
}
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
ratio() { awk -v t="$1" -v b="$2" 'BEGIN {printf "%.2f", t / b}'; }

echo "workload,clients,tablestore_tps,baseline_tps,ratio,entities_per_op" >"$OUT/results.csv"
echo "clients,query_entities_tps,get_entity_tps,ratio" >"$OUT/qpoint.csv"
for w in $WORKLOADS; do
	per=1 base=base_$w ts=ts_$w
	case $w in
	range) per=100 ;;
	filter) per=$((ROWS / 2)) ;;
	filter50) per=$((ROWS * 17 / 50)) ;;
	filterjson) per=$((ROWS / 2)) ts=ts_filter ;;
	paging) per=1000 ;;
	batch) per=100 ;;
	qpoint) base=base_point ;;
	esac
	for c in $CLIENTS; do
		ts_runs="" base_runs="" get_runs=""
		for r in $(seq "$RUNS"); do
			# alternate the paths so that drift hits them alike
			ts_runs="$ts_runs $(tps "$ts" "$c")"
			base_runs="$base_runs $(tps "$base" "$c")"
			# a query_entities point query against get_entity, in the same run
			if [ "$w" = qpoint ]; then get_runs="$get_runs $(tps ts_point "$c")"; fi
		done
		t=$(echo $ts_runs | tr ' ' '\n' | median)
		b=$(echo $base_runs | tr ' ' '\n' | median)
		echo "$w,$c,$t,$b,$(ratio "$t" "$b"),$per" | tee -a "$OUT/results.csv"
		if [ "$w" = qpoint ]; then
			g=$(echo $get_runs | tr ' ' '\n' | median)
			echo "$c,$t,$g,$(ratio "$t" "$g")" | tee -a "$OUT/qpoint.csv"
		fi
	done
done

# Paging through the whole 'Paged' table in one session, 1,000 a page,
# following the continuation (query_entities_page) or the last key
# (keyset pagination), server-side in PL/pgSQL so that no client cost is in
# either; each walk checks that it saw every entity.
echo "== whole-table walks of 'Paged' ($((PAGED_PARTITIONS * ROWS)) entities), $RUNS each"
q <<'SQL'
CREATE FUNCTION walk_tablestore() RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE
	npk text; nrk text; page jsonb; n bigint := 0; t0 timestamptz := clock_timestamp();
BEGIN
	LOOP
		SELECT p.entities, p.next_partition_key, p.next_row_key INTO page, npk, nrk
			FROM tablestore.query_entities_page('Paged', NULL, NULL, 1000, npk, nrk) p;
		n := n + jsonb_array_length(page);
		EXIT WHEN npk IS NULL;
	END LOOP;
	IF n <> (SELECT count(*) FROM paged_base) THEN RAISE 'walked % entities', n; END IF;
	RETURN extract(epoch FROM clock_timestamp() - t0);
END $$;
CREATE FUNCTION walk_baseline() RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE
	npk text := ''; nrk text := ''; r record; got int; n bigint := 0; t0 timestamptz := clock_timestamp();
BEGIN
	LOOP
		got := 0;
		FOR r IN SELECT pk, rk, ts, props FROM paged_base WHERE (pk, rk) >= (npk, nrk) ORDER BY pk, rk LIMIT 1001 LOOP
			got := got + 1;
			IF got <= 1000 THEN n := n + 1; END IF;
			npk := r.pk; nrk := r.rk;
		END LOOP;
		EXIT WHEN got <= 1000;
	END LOOP;
	IF n <> (SELECT count(*) FROM paged_base) THEN RAISE 'walked % entities', n; END IF;
	RETURN extract(epoch FROM clock_timestamp() - t0);
END $$;
SQL
walk_ts="" walk_base=""
for r in $(seq "$RUNS"); do
	walk_ts="$walk_ts $(q -c 'SELECT walk_tablestore()')"
	walk_base="$walk_base $(q -c 'SELECT walk_baseline()')"
done
wt=$(echo $walk_ts | tr ' ' '\n' | median)
wb=$(echo $walk_base | tr ' ' '\n' | median)
# as walks per second, so that the ratio reads like the others
echo "paging_walk,1,$(awk -v s="$wt" 'BEGIN {print 1 / s}'),$(awk -v s="$wb" 'BEGIN {print 1 / s}'),$(ratio "$wb" "$wt"),$((PAGED_PARTITIONS * ROWS))" |
	tee -a "$OUT/results.csv"

# ops/s to print: whole numbers, or two decimals below 100
num() { awk -v x="$1" 'BEGIN {printf (x < 100 ? "%.2f" : "%.0f"), x}'; }
goal() {
	# the goals of issue 12: as fast as the SQL a user would write by hand
	case $1 in
	batch) echo "≥ 1.5" ;;
	qpoint) echo "—" ;;
	*) echo "≥ 1.0" ;;
	esac
}
{
	echo "| workload | clients | tablestore ops/s | hand-written SQL ops/s | ratio | goal | entities/op | entities/s (tablestore) |"
	echo "|---|---|---|---|---|---|---|---|"
	tail -n +2 "$OUT/results.csv" | while IFS=, read -r w c t b r per; do
		printf '| %s | %s | %s | %s | %s | %s | %s | %.0f |\n' "$w" "$c" "$(num "$t")" "$(num "$b")" "$r" "$(goal "$w")" "$per" \
			"$(awk -v t="$t" -v p="$per" 'BEGIN {print t * p}')"
	done
	echo
	echo "Ratio = tablestore / hand-written SQL throughput (higher is better for tablestore); goals from issue 12."
	echo "Reads return the entities to pgbench: tablestore the entity jsonb (for paging, one row holding the page's array and the continuation), hand-written SQL the rows (pk, rk, ts, props)."
	echo "paging: one page of 1,000 from a random key of 'Paged' per transaction (query_entities_page vs \`WHERE (pk, rk) >= (\$1, \$2) ORDER BY pk, rk LIMIT 1001\`);"
	echo "paging_walk: whole walks of 'Paged' per second in one session, server-side in PL/pgSQL, following continuations (median of $RUNS walks: tablestore ${wt}s, hand-written ${wb}s)."
	echo "The service's published targets: 2,000 entities/s per partition, 20,000 transactions/s per account."
	echo
	echo "query_entities point query against get_entity (goal: ratio ≥ 0.83, i.e. cost ≤ 1.2×):"
	echo
	echo "| clients | query_entities ops/s | get_entity ops/s | ratio |"
	echo "|---|---|---|---|"
	tail -n +2 "$OUT/qpoint.csv" | while IFS=, read -r c t g r; do
		printf '| %s | %.0f | %.0f | %s |\n' "$c" "$t" "$g" "$r"
	done
	echo
	echo "Backend memory of one query (sampled every 20 ms from /proc/PID/status; RssAnon = private memory, VmRSS/VmHWM include the shared buffers touched):"
	echo
	echo "| query | entities | peak RssAnon MB | peak VmRSS MB | VmHWM MB | seconds |"
	echo "|---|---|---|---|---|---|"
	tail -n +2 "$OUT/memory.csv" | while IFS=, read -r l n a r h s; do
		echo "| $l | $n | $a | $r | $h | $s |"
	done
	echo
	echo "Load average after the run: $(cut -d' ' -f1-3 /proc/loadavg)."
	echo "Load: $(((PARTITIONS + PAGED_PARTITIONS) * ROWS)) entities through execute_batch, then copied to the plain tables, in ${load_s}s. Whole command, build included: $(( $(date +%s) - began ))s."
} >>"$OUT/results.md"
cat "$OUT/results.md"

/usr/bin/python3 - "$OUT" <<'PY' || echo "(plot skipped)"
import csv, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
out = sys.argv[1]
rows = list(csv.DictReader(open(out + "/results.csv")))
labels = [f"{r['workload']}\n{r['clients']} cl." for r in rows]
x = range(len(rows))
fig, ax = plt.subplots(figsize=(max(6, len(rows) * 0.75), 4.5))
ax.bar([i - 0.2 for i in x], [float(r["tablestore_tps"]) for r in rows], 0.4, label="tablestore")
ax.bar([i + 0.2 for i in x], [float(r["baseline_tps"]) for r in rows], 0.4, label="hand-written SQL")
for i, r in zip(x, rows):
	ax.annotate(r["ratio"], (i, max(float(r["tablestore_tps"]), float(r["baseline_tps"]))),
		ha="center", va="bottom", fontsize=7)
ax.set_xticks(list(x)); ax.set_xticklabels(labels, fontsize=7)
ax.set_ylabel("operations per second (log)"); ax.set_yscale("log"); ax.legend(fontsize=8)
ax.set_title("tablestore vs hand-written SQL (median of runs; ratio above the bars)")
fig.tight_layout(); fig.savefig(out + "/throughput.png", dpi=110)
PY

# Workload 9: the tskey access method against a btree, on its own server
# (bench/index.sh; INDEX=0 skips it).
ts_stop_server "$DIR"
if [ "${INDEX:-1}" != 0 ]; then
	SECONDS_PER_RUN=${INDEX_SECONDS_PER_RUN:-5} bench/index.sh
fi
echo "== bench/run.sh: $(( $(date +%s) - began ))s in all"
