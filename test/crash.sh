#!/usr/bin/env bash
# test/crash.sh: acknowledged writes survive a crash.
# Starts its own server, runs concurrent writers (single-entity inserts and
# merges, batches, and inserts of long CJK RowKeys that split the key index
# often, and a churner that fills a partition, deletes it and VACUUMs, so
# that leaves are deleted and reused), stops the server with
# "pg_ctl stop -m immediate" in the middle of
# the writes, restarts it, and checks that every write a client saw succeed
# is there, that the catalog and relations agree, and that the entity
# relation's tskey index passes verify_index.  wal_consistency_checking makes
# the replay compare every record's result (tskey's resource manager, or
# generic WAL) with a full image of the page as the primary wrote it.
# The server preloads the library, so tskey logs with its resource manager;
# TS_PRELOAD=0 runs it without (generic WAL), CRASH_SECONDS sets how long the
# writers run before the crash (4).  The WAL must hold the kind of records
# the mode implies.
set -u
export LC_ALL=C
cd "$(dirname "$0")/.."
. tools/lib.sh

DIR=$(mktemp -d /tmp/tscrash.XXXXXX)
trap 'ts_stop_server "$DIR"; rm -rf "$DIR"' EXIT
# wal_keep_size keeps the WAL of the run (for pg_walinspect at the end)
ts_start_server "$DIR" -c fsync=on -c wal_consistency_checking=$TS_WAL_CHECK -c wal_keep_size=1GB || exit 1
export PGOPTIONS="-c client_min_messages=warning"
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d postgres "$@"; }

q -c "CREATE EXTENSION tablestore" -c "CREATE EXTENSION pg_walinspect" -c "SELECT tablestore.create_table('Crash')" >/dev/null
START_LSN=$(q -c "SELECT pg_current_wal_lsn()")

# writer N: single inserts into partition wN, logging each acknowledged key
writer() {
	local n=$1 i=0
	while :; do
		i=$((i + 1))
		q -c "SELECT tablestore.insert_entity('Crash', jsonb_build_object('PartitionKey', 'w$n', 'RowKey', lpad('$i', 8, '0'), 'N', $i))" \
			>/dev/null 2>&1 || break
		echo "w$n $(printf %08d $i)" >>"$DIR/acked.$n"
	done
}
# batcher: batches of 10 inserts into partition bN, logging each batch's keys
batcher() {
	local n=$1 i=0
	while :; do
		i=$((i + 1))
		q -c "SELECT count(*) FROM tablestore.execute_batch('Crash', (SELECT jsonb_agg(jsonb_build_object('op', 'insert', 'entity', jsonb_build_object('PartitionKey', 'b$n', 'RowKey', lpad(($i * 10 + k)::text, 8, '0')))) FROM generate_series(0, 9) k))" \
			>/dev/null 2>&1 || break
		for k in 0 1 2 3 4 5 6 7 8 9; do echo "b$n $(printf %08d $((i * 10 + k)))" >>"$DIR/acked.b$n"; done
	done
}

# long writer N: inserts with RowKeys of 408 characters, 400 of them CJK
longwriter() {
	local n=$1 i=0
	while :; do
		i=$((i + 1))
		q -c "SELECT tablestore.insert_entity('Crash', jsonb_build_object('PartitionKey', 'L$n', 'RowKey', lpad('$i', 8, '0') || repeat('字', 400)))" \
			>/dev/null 2>&1 || break
		echo "L$n $(printf %08d $i)$(printf '字%.0s' $(seq 400))" >>"$DIR/acked.L$n"
	done
}

# churner: fills partition D, deletes it all and VACUUMs, so that leaves
# are deleted and reused (by the writers' splits) while the crash comes
churner() {
	local i=0
	while :; do
		i=$((i + 1))
		q -c "SELECT count(tablestore.insert_entity('Crash', jsonb_build_object('PartitionKey', 'D', 'RowKey', lpad(g::text, 8, '0') || repeat('x', 40)))) FROM generate_series($i * 1000, $i * 1000 + 399) g" \
			-c "DELETE FROM tablestore_data.crash WHERE pk OPERATOR(tablestore.=) 'D'" \
			-c "VACUUM tablestore_data.crash" >/dev/null 2>&1 || break
		echo "$i" >"$DIR/churned"
	done
}

churner &
for n in 1 2 3; do writer $n & done
for n in 1 2; do longwriter $n & done
for n in 1 2; do batcher $n & done
sleep "${CRASH_SECONDS:-4}"
(cd / && runuser -u postgres -- pg_ctl -D "$DIR/data" -m immediate -w stop >/dev/null)
wait
(cd / && runuser -u postgres -- pg_ctl -D "$DIR/data" -l "$DIR/server.log" \
	-o "-c listen_addresses='' -k $DIR -c wal_keep_size=1GB" -w start >/dev/null) || { tail -20 "$DIR/server.log"; exit 1; }

cat "$DIR"/acked.* | sort >"$DIR/acked"
acked=$(wc -l <"$DIR/acked")
q -c "SELECT pk || ' ' || rk FROM tablestore_data.crash ORDER BY 1" >"$DIR/present"
missing=$(comm -23 "$DIR/acked" "$DIR/present" | wc -l)
present=$(wc -l <"$DIR/present")
# a batch is all or nothing: each batch partition holds whole batches only
partial=$(q -c "SELECT count(*) FROM (SELECT pk, (rk::int / 10) b, count(*) c FROM tablestore_data.crash
	WHERE pk LIKE 'b%' GROUP BY 1, 2) s WHERE c <> 10")
catalog=$(q -c "SELECT string_agg(t, ',') FROM tablestore.list_tables() t")
works=$(q -c "SELECT tablestore.insert_entity('Crash', '{\"PartitionKey\": \"after\", \"RowKey\": \"1\"}') ? 'odata.etag'")
verified=$(q -c "SELECT tablestore.verify_index(indexrelid::regclass) FROM pg_index WHERE indrelid = 'tablestore_data.crash'::regclass" \
	>/dev/null 2>&1 && echo ok || echo FAILED)
# and after VACUUM, which deletes what the churner left empty
q -c "DELETE FROM tablestore_data.crash WHERE pk OPERATOR(tablestore.=) 'D'" -c "VACUUM tablestore_data.crash" >/dev/null
verified2=$(q -c "SELECT tablestore.verify_index(indexrelid::regclass) FROM pg_index WHERE indrelid = 'tablestore_data.crash'::regclass" \
	>/dev/null 2>&1 && echo ok || echo FAILED)
churned=$(cat "$DIR/churned" 2>/dev/null || echo 0)
# the records replayed: tskey's own with the preload, generic ones without
wal=$(q -c "SELECT string_agg(r || '=' || count, ' ' ORDER BY r) FROM (SELECT \"resource_manager/record_type\" r, count
	FROM pg_get_wal_stats('$START_LSN', pg_current_wal_flush_lsn())) s WHERE r IN ('tskey', 'Generic') AND count > 0")
if [ "$TS_PRELOAD" = 1 ]; then
	case "$wal" in *tskey=*) walok=ok ;; *) walok=FAILED ;; esac
else
	case "$wal" in *tskey=*) walok=FAILED ;; *Generic=*) walok=ok ;; *) walok=FAILED ;; esac
fi

echo "crash: $acked writes acknowledged, $present entities after restart, $missing missing, $partial partial batches, $churned churn cycles (insert, delete, VACUUM), verify_index $verified, after VACUUM $verified2, preload $TS_PRELOAD, WAL records $wal $walok"
if [ "$acked" -lt 10 ] || [ "$missing" -ne 0 ] || [ "$partial" -ne 0 ] || [ "$catalog" != "Crash" ] || [ "$works" != "t" ] ||
	[ "$verified" != "ok" ] || [ "$verified2" != "ok" ] || [ "$churned" -lt 1 ] || [ "$walok" != ok ]; then
	echo "crash test FAILED"; comm -23 "$DIR/acked" "$DIR/present" | head
	exit 1
fi
echo "crash: ok"
