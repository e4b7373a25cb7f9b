#!/usr/bin/env bash
# test/standby.sh: a streaming standby replays the tskey index and uses it.
# Starts a primary, fills a table (long non-ASCII keys, enough entities for
# many page splits), takes a base backup and starts it as a hot standby,
# then writes more on the primary (inserts that split pages, deletes, a
# VACUUM, leaves emptied, deleted and reused, parents dissolved, a batch)
# while the standby streams.  When the standby has replayed
# everything, its index must pass verify_index and answer the same queries
# with the same entities, in key order, through index scans; and every
# write function must fail on it as plain SQL does, with 25006.
set -u
cd "$(dirname "$0")/.."
. tools/lib.sh

DIR=$(mktemp -d /tmp/tsstandby.XXXXXX)
SBY=$(mktemp -d /tmp/tsstandby.XXXXXX)
cleanup() {
	[ -f "$SBY/data/postmaster.pid" ] && (cd / && runuser -u postgres -- pg_ctl -D "$SBY/data" -m fast -w stop >/dev/null 2>&1)
	ts_stop_server "$DIR"
	rm -rf "$DIR" "$SBY"
}
trap cleanup EXIT
ts_start_server "$DIR" -c wal_level=replica -c max_wal_senders=4 -c wal_consistency_checking=$TS_WAL_CHECK || exit 1
export PGOPTIONS="-c client_min_messages=warning"
p() { psql -X -q -At -v ON_ERROR_STOP=1 -h "$DIR" -d postgres "$@"; }
s() { psql -X -q -At -v ON_ERROR_STOP=1 -h "$SBY" -d postgres "$@"; }

p <<'SQL' >/dev/null || exit 1
CREATE EXTENSION tablestore;
SELECT tablestore.create_table('Replicated');
SELECT count(tablestore.insert_entity('Replicated', jsonb_build_object(
	'PartitionKey', CASE WHEN i % 7 = 0 THEN repeat('東', 300) ELSE 'p' || (i % 20) END,
	'RowKey', lpad(i::text, 8, '0') || repeat('r', i % 50), 'N', i)))
FROM generate_series(1, 4000) i;
SQL

# the standby, from a base backup, streaming from the primary's socket
chown postgres: "$SBY"
(cd / && runuser -u postgres -- pg_basebackup -h "$DIR" -U postgres -D "$SBY/data" -R -X stream) || exit 1
(cd / && runuser -u postgres -- pg_ctl -D "$SBY/data" -l "$SBY/server.log" -w start \
	-o "-c listen_addresses='' -k $SBY -c hot_standby=on -c max_prepared_transactions=10" >/dev/null) || { cat "$SBY/server.log"; exit 1; }

# more work on the primary while the standby streams
p <<'SQL' >/dev/null || exit 1
SELECT count(tablestore.insert_entity('Replicated', jsonb_build_object(
	'PartitionKey', 'p' || (i % 20), 'RowKey', 'n' || lpad(i::text, 8, '0') || repeat('😀', i % 30), 'N', i)))
FROM generate_series(1, 6000) i;
SELECT count(tablestore.delete_entity('Replicated', 'p' || (i % 20), lpad(i::text, 8, '0') || repeat('r', i % 50)))
FROM generate_series(1, 4000) i WHERE i % 7 <> 0 AND i % 3 = 0;
VACUUM tablestore_data.replicated;
-- empty whole leaves (the 'n' keys of ten partitions): VACUUM deletes the
-- pages; once a transaction ID has passed, the next VACUUM makes them
-- reusable, and new keys take them (nbtree's reuse record for the standby)
SELECT count(tablestore.delete_entity('Replicated', 'p' || (i % 20), 'n' || lpad(i::text, 8, '0') || repeat('😀', i % 30)))
FROM generate_series(1, 6000) i WHERE i % 20 >= 10;
VACUUM tablestore_data.replicated;
SELECT txid_current() > 0;
VACUUM tablestore_data.replicated;
SELECT count(tablestore.insert_entity('Replicated', jsonb_build_object(
	'PartitionKey', 'p' || (i % 20), 'RowKey', 'm' || lpad(i::text, 8, '0'), 'N', i)))
FROM generate_series(1, 3000) i;
-- a table of long keys (five levels): scattered deletions, then all but
-- the ends, VACUUM deleting leaves and dissolving their parents, then new
-- rows taking the pages
CREATE TABLE tdx (pk tablestore.key NOT NULL, rk tablestore.key NOT NULL, v int NOT NULL);
CREATE UNIQUE INDEX tdx_key ON tdx USING tskey (pk, rk);
INSERT INTO tdx SELECT 'p' || lpad((g / 1000)::text, 3, '0'), lpad(g::text, 8, '0') || repeat('k', 300), g FROM generate_series(1, 20000) g;
DELETE FROM tdx WHERE (v / 40) % 3 <> 0;
VACUUM tdx;
DELETE FROM tdx WHERE v > 1000 AND v < 19000;
VACUUM tdx;
SELECT txid_current() > 0;
VACUUM tdx;
INSERT INTO tdx SELECT 'q' || lpad((g / 1000)::text, 3, '0'), lpad(g::text, 8, '0') || repeat('z', 300), g FROM generate_series(1, 8000) g;
SELECT count(*) FROM tablestore.execute_batch('Replicated', (SELECT jsonb_agg(jsonb_build_object('op', 'insert',
	'entity', jsonb_build_object('PartitionKey', 'p1', 'RowKey', 'batch' || i))) FROM generate_series(1, 100) i));
SQL

# wait until the standby has replayed all the primary has written
target=$(p -c "SELECT pg_current_wal_lsn()")
for _ in $(seq 1 300); do
	done=$(s -c "SELECT pg_last_wal_replay_lsn() >= '$target'::pg_lsn" 2>/dev/null)
	[ "$done" = t ] && break
	sleep 0.2
done
[ "$done" = t ] || { echo "standby did not catch up"; tail -20 "$SBY/server.log"; exit 1; }

status=0
verified=$(s -o /dev/null -c "SELECT tablestore.verify_index(indexrelid::regclass) FROM pg_index WHERE indrelid = 'tablestore_data.replicated'::regclass" \
	-c "SELECT tablestore.verify_index('tdx_key')" 2>&1 && echo ok)
[ "$verified" = ok ] || { echo "standby: verify_index failed: $verified"; status=1; }

# the same answers, through the index, on both
queries=(
	"SELECT md5(string_agg(e::text, '|')) FROM tablestore.query_entities('Replicated') e"
	"SELECT md5(string_agg(e::text, '|')) FROM tablestore.query_entities('Replicated', 'PartitionKey eq ''p7'' and RowKey ge ''n00003000''') e"
	"SELECT md5(string_agg(e::text, '|')) FROM tablestore.query_entities('Replicated', 'PartitionKey gt ''p1'' and N lt 100') e"
	"SELECT tablestore.get_entity('Replicated', 'p1', 'batch42')::text"
	"SELECT count(*) FROM tablestore_data.replicated"
	"SET enable_seqscan = off; SELECT md5(string_agg(v::text, ',' ORDER BY pk DESC, rk DESC)) FROM tdx"
)
for q in "${queries[@]}"; do
	a=$(p -c "$q")
	b=$(s -c "$q")
	if [ "$a" != "$b" ] || [ -z "$a" ]; then
		echo "standby differs for: $q"; echo " primary: $a"; echo " standby: $b"; status=1
	fi
done
plan=$(s -c "SET enable_seqscan = off" -c "SET enable_bitmapscan = off" -c "SET search_path = public, tablestore" \
	-c "EXPLAIN (COSTS OFF) SELECT * FROM tablestore_data.replicated WHERE pk = 'p3' ORDER BY rk DESC")
echo "$plan" | grep -q "Index Scan Backward using" || { echo "standby: no backward index scan: $plan"; status=1; }
if grep -q "inconsistent page" "$DIR/server.log" "$SBY/server.log"; then
	echo "standby: wal_consistency_checking found an inconsistency"; status=1
fi

# a write on the standby is refused as plain SQL's is: 25006
# (read_only_sql_transaction), on every write path and by create_table and
# delete_table (as DROP TABLE), never XX000 or 55000
writes=$(psql -X -q -At -h "$SBY" -d postgres 2>&1 <<'SQL'
\set VERBOSITY sqlstate
SELECT tablestore.insert_entity('Replicated', '{"PartitionKey": "s", "RowKey": "1"}');
SELECT tablestore.update_entity('Replicated', '{"PartitionKey": "p1", "RowKey": "batch1", "A": 1}');
SELECT tablestore.merge_entity('Replicated', '{"PartitionKey": "p1", "RowKey": "batch1", "A": 1}');
SELECT tablestore.insert_or_replace_entity('Replicated', '{"PartitionKey": "p1", "RowKey": "batch1", "A": 1}');
SELECT tablestore.insert_or_merge_entity('Replicated', '{"PartitionKey": "s", "RowKey": "2", "A": 1}');
SELECT tablestore.delete_entity('Replicated', 'p1', 'batch2');
SELECT * FROM tablestore.execute_batch('Replicated', '[{"op": "insert_or_merge", "entity": {"PartitionKey": "p1", "RowKey": "b"}}]');
INSERT INTO tablestore_data.replicated VALUES ('s', '3', now(), '{}');
SELECT tablestore.delete_table('Replicated');
DROP TABLE tablestore_data.replicated;
SELECT tablestore.create_table('Standby');
SQL
)
if [ "$(echo "$writes" | grep -c '^ERROR:  25006$')" != 11 ] || [ "$(echo "$writes" | wc -l)" != 11 ]; then
	echo "standby: writes not refused with 25006:"; echo "$writes"; status=1
fi

n=$(s -c "SELECT count(*) FROM tablestore_data.replicated")
if [ $status -eq 0 ]; then echo "standby: ok ($n entities replayed, verify_index ok, ${#queries[@]} queries equal)"; fi
exit $status
