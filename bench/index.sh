#!/usr/bin/env bash
# bench/index.sh: the tskey index against a btree on (pk COLLATE "C",
# rk COLLATE "C"), side by side in one run on a throwaway server: index
# size, build time, point lookups, inserts, WAL per insert (steady state,
# and the index's part of it: less a table without index) and 100-row
# range scans, on
# 1,000,000 entities in 1,000 partitions, with short keys (tenant0042 /
# 00000042) and with 36-character GUID keys.  Writes
# bench/results/index.md.  The server preloads the library, so tskey logs
# with its WAL resource manager; TS_PRELOAD=0 measures it on generic WAL.
#
#   bench/index.sh                                   # the full run, ~6 minutes
#   ROWS=100000 SECONDS_PER_RUN=3 bench/index.sh     # a quick look
set -eu
cd "$(dirname "$0")/.."
. tools/lib.sh

ROWS=${ROWS:-1000000}
PARTITIONS=${PARTITIONS:-1000}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
# WAL per insert is measured over INSERTS inserts: long enough to span the
# wave of leaf splits a freshly built index (every leaf filled to 90%) goes
# through, so that neither index's wave falls inside or outside a short
# window by chance (with 20,000, the index part of either index varied four-
# to six-fold between runs)
INSERTS=${INSERTS:-100000}
SETTINGS="-c shared_buffers=1GB -c synchronous_commit=off -c max_wal_size=8GB -c checkpoint_timeout=30min -c maintenance_work_mem=512MB"

ts_build_install
DIR=$(mktemp -d /tmp/tsbenchidx.XXXXXX)
trap 'ts_stop_server "$DIR"; rm -rf "$DIR"' EXIT
ts_start_server "$DIR" $SETTINGS -c fsync=on
OUT=bench/results
mkdir -p "$OUT"
export PGOPTIONS="-c search_path=public,tablestore -c client_min_messages=warning"
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d postgres "$@"; }
q -c "CREATE EXTENSION tablestore"

# ms SQL: the time one statement takes, in milliseconds
ms() { q -c '\timing on' -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1; }
# tps SCRIPT: pgbench throughput of a script, one client
tps() {
	pgbench -n -M prepared -c 1 -T "$SECONDS_PER_RUN" -D rows="$ROWS" -D parts="$PARTITIONS" -f "$1" postgres 2>/dev/null |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

{
	echo "# tskey against btree"
	echo
	echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); machine: $(nproc) cores, $(uname -r); server: $(q -c 'SELECT version()' | cut -d, -f1)"
	echo "- settings: \`$SETTINGS -c fsync=on\`; pgbench -M prepared, 1 client, ${SECONDS_PER_RUN}s per cell"
	echo "- tskey's WAL: $([ "$TS_PRELOAD" = 1 ] && echo "its resource manager (shared_preload_libraries = 'tablestore')" || echo "generic WAL (not preloaded, TS_PRELOAD=0)")"
	echo "- data: $ROWS entities in $PARTITIONS partitions; tskey on (pk, rk) of type tablestore.key, btree on (pk, rk) of text COLLATE \"C\", both unique"
	echo
	echo "| keys | measure | tskey | btree | tskey/btree |"
	echo "|---|---|---|---|---|"
} >"$OUT/index.md"

for keys in short guid; do
	if [ $keys = short ]; then
		PK="'tenant' || lpad((%P)::text, 4, '0')"
		RK="lpad((%R)::text, 8, '0')"
	else
		PK="md5('p' || (%P))::uuid::text"
		RK="md5('r' || (%R))::uuid::text"
	fi
	pk() { local e=${PK//%P/$1}; echo "${e//%R/$2}"; }
	rk() { local e=${RK//%P/$1}; echo "${e//%R/$2}"; }

	q -c "DROP TABLE IF EXISTS ta, tb" \
		-c "CREATE TABLE ta (pk tablestore.key NOT NULL, rk tablestore.key NOT NULL, v int NOT NULL)" \
		-c "CREATE TABLE tb (pk text COLLATE \"C\" NOT NULL, rk text COLLATE \"C\" NOT NULL, v int NOT NULL)" \
		-c "INSERT INTO ta SELECT $(pk "g % $PARTITIONS" g), $(rk "g % $PARTITIONS" g), g FROM generate_series(1, $ROWS) g" \
		-c "INSERT INTO tb SELECT pk, rk, v FROM ta" -c "VACUUM ANALYZE ta" -c "VACUUM ANALYZE tb" -c "CHECKPOINT"
	build_a=$(ms "CREATE UNIQUE INDEX ta_key ON ta USING tskey (pk, rk)")
	build_b=$(ms "CREATE UNIQUE INDEX tb_key ON tb (pk, rk)")
	size_a=$(q -c "SELECT pg_relation_size('ta_key')")
	size_b=$(q -c "SELECT pg_relation_size('tb_key')")
	q -c "ANALYZE ta" -c "ANALYZE tb" -c "CHECKPOINT"

	# point lookups and 100-row range scans of random keys that exist
	for t in ta tb; do
		# ta's keys compare as tablestore.key, tb's as text in "C"
		if [ $t = ta ]; then cast="::tablestore.key"; else cast=""; fi
		cat >"$DIR/point_$t.sql" <<EOF
\set g random(1, :rows)
SELECT v FROM $t WHERE pk = ($(pk "(:g)::int % (:parts)::int" "(:g)::int"))$cast AND rk = ($(rk "(:g)::int % (:parts)::int" "(:g)::int"))$cast;
EOF
		cat >"$DIR/range_$t.sql" <<EOF
\set g random(1, :rows)
SELECT count(*) FROM (SELECT v FROM $t WHERE pk = ($(pk "(:g)::int % (:parts)::int" "(:g)::int"))$cast AND rk >= ($(rk "(:g)::int % (:parts)::int" "(:g)::int"))$cast ORDER BY rk LIMIT 100) s;
EOF
		cat >"$DIR/insert_$t.sql" <<EOF
\set g random(1, :rows)
\set n random(:rows + 1, 1000000000000)
INSERT INTO $t VALUES ($(pk "(:g)::int % (:parts)::int" "(:g)::int"), $(rk "(:g)::int % (:parts)::int" "(:n)::bigint"), 0);
EOF
	done
	point_a=$(tps "$DIR/point_ta.sql"); point_b=$(tps "$DIR/point_tb.sql")
	range_a=$(tps "$DIR/range_ta.sql"); range_b=$(tps "$DIR/range_tb.sql")
	insert_a=$(tps "$DIR/insert_ta.sql"); insert_b=$(tps "$DIR/insert_tb.sql")
	# WAL per insert in steady state (the pages the insert runs touched
	# already carry their full image since the checkpoint): the WAL of
	# INSERTS more inserts, less that of the same inserts into a table
	# without an index (heap and commit), is the index's part
	q -c "CREATE TABLE IF NOT EXISTS tn (pk text, rk text, v int)" -c "TRUNCATE tn" \
		-c "INSERT INTO tn SELECT pk, rk, v FROM tb LIMIT 1000"
	sed 's/INSERT INTO tb /INSERT INTO tn /' "$DIR/insert_tb.sql" >"$DIR/insert_tn.sql"
	# (divided by the inserts pgbench made: a random short RowKey, cut to 8
	# digits, now and then repeats one, and pgbench stops at the error)
	walper() {
		local before after nins
		before=$(q -c "SELECT pg_current_wal_insert_lsn()")
		nins=$(pgbench -n -M prepared -c 1 -t "$INSERTS" -D rows="$ROWS" -D parts="$PARTITIONS" -f "$1" postgres 2>/dev/null |
			sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p')
		after=$(q -c "SELECT pg_current_wal_insert_lsn()")
		q -c "SELECT round(pg_wal_lsn_diff('$after', '$before') / greatest(0${nins}, 1))"
	}
	pgbench -n -M prepared -c 1 -t "$INSERTS" -D rows="$ROWS" -D parts="$PARTITIONS" -f "$DIR/insert_tn.sql" postgres >/dev/null 2>&1
	wal_a=$(walper "$DIR/insert_ta.sql"); wal_b=$(walper "$DIR/insert_tb.sql"); wal_n=$(walper "$DIR/insert_tn.sql")
	q -c "SELECT tablestore.verify_index('ta_key')" >/dev/null

	{
		echo "| $keys | index size (MB) | $(ratio "$size_a" 1048576) | $(ratio "$size_b" 1048576) | $(ratio "$size_a" "$size_b") |"
		echo "| $keys | build (s) | $(ratio "$build_a" 1000) | $(ratio "$build_b" 1000) | $(ratio "$build_a" "$build_b") |"
		echo "| $keys | point lookups (tps) | $point_a | $point_b | $(ratio "$point_a" "$point_b") |"
		echo "| $keys | 100-row range scans (tps) | $range_a | $range_b | $(ratio "$range_a" "$range_b") |"
		echo "| $keys | inserts (tps) | $insert_a | $insert_b | $(ratio "$insert_a" "$insert_b") |"
		echo "| $keys | WAL per insert, all (bytes) | $wal_a | $wal_b | $(ratio "$wal_a" "$wal_b") |"
		echo "| $keys | WAL per insert, index part (bytes) | $((wal_a - wal_n)) | $((wal_b - wal_n)) | $(ratio $((wal_a - wal_n)) $((wal_b - wal_n))) |"
	} >>"$OUT/index.md"
done
cat "$OUT/index.md"
