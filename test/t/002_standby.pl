# test/t/002_standby.pl: a streaming standby replays the tskey index and
# uses it.
#
# A primary fills a table (long non-ASCII keys, enough entities for many
# page splits); a hot standby is made from a base backup; then the primary
# writes more while the standby streams: inserts that split pages, deletes,
# VACUUM, leaves emptied, deleted and reused, parents dissolved, a batch.
# Both run wal_consistency_checking over tskey's records.  Once the standby
# has replayed everything, its index must pass verify_index and answer the
# same queries with the same entities, in key order, through index scans;
# and every write function must fail on it as plain SQL does, with 25006.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TablestoreNode;

my $primary = ts_node('primary', allows_streaming => 1);
$primary->append_conf('postgresql.conf',
	"wal_consistency_checking = '@{[ts_wal_check()]}'");
# the WAL the standby still needs is kept however slowly it starts (on a
# loaded machine the primary recycled a segment before the standby asked
# for it, and the test waited for ever)
$primary->append_conf('postgresql.conf', "wal_keep_size = '1GB'");
$primary->start;
$primary->safe_psql('postgres', q{
CREATE EXTENSION tablestore;
SELECT tablestore.create_table('Replicated');
SELECT count(tablestore.insert_entity('Replicated', jsonb_build_object(
	'PartitionKey', CASE WHEN i % 7 = 0 THEN repeat('東', 300) ELSE 'p' || (i % 20) END,
	'RowKey', lpad(i::text, 8, '0') || repeat('r', i % 50), 'N', i)))
FROM generate_series(1, 4000) i;
});

# the standby, from a base backup, streaming; it keeps the primary's
# postgresql.conf, so it preloads the library too
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;

# more work on the primary while the standby streams; a property index
# (a btree) replays with the rest
$primary->safe_psql('postgres', q{
SELECT tablestore.create_property_index('Replicated', 'N', 'Int32');
SELECT count(tablestore.insert_entity('Replicated', jsonb_build_object(
	'PartitionKey', 'p' || (i % 20), 'RowKey', 'n' || lpad(i::text, 8, '0') || repeat('😀', i % 30), 'N', i)))
FROM generate_series(1, 6000) i;
SELECT count(tablestore.delete_entity('Replicated', 'p' || (i % 20), lpad(i::text, 8, '0') || repeat('r', i % 50)))
FROM generate_series(1, 4000) i WHERE i % 7 <> 0 AND i % 3 = 0;
VACUUM tablestore_data.replicated;
-- empty whole leaves (the 'n' keys of ten partitions): VACUUM deletes the
-- pages; once a transaction ID has passed, the next VACUUM makes them
-- reusable, and new keys take them (the reuse record for the standby)
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
});

# wait until the standby has replayed all the primary has written
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));

my ($rc, $out, $err) = $standby->psql('postgres', q{
	SELECT tablestore.verify_index(indexrelid::regclass) FROM pg_index
		WHERE indrelid = 'tablestore_data.replicated'::regclass
		AND indexrelid IN (SELECT c.oid FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE a.amname = 'tskey');
	SELECT tablestore.verify_index('tdx_key');});
is($rc, 0, 'verify_index passes on the standby') or diag($err);

# the same answers, through the index, on both
for my $q (
	q{SELECT md5(string_agg(e::text, '|')) FROM tablestore.query_entities('Replicated') e},
	q{SELECT md5(string_agg(e::text, '|')) FROM tablestore.query_entities('Replicated', 'PartitionKey eq ''p7'' and RowKey ge ''n00003000''') e},
	q{SELECT md5(string_agg(e::text, '|')) FROM tablestore.query_entities('Replicated', 'PartitionKey gt ''p1'' and N lt 100') e},
	q{SELECT tablestore.get_entity('Replicated', 'p1', 'batch42')::text},
	# through the property index (explain says so) on both
	q{SELECT tablestore.explain_query('Replicated', 'N lt 10 or N eq 2999')->>'access' || ' '
		|| md5(string_agg(e::text, '|')) FROM tablestore.query_entities('Replicated', 'N lt 10 or N eq 2999') e},
	q{SELECT count(*) FROM tablestore_data.replicated},
	q{SET enable_seqscan = off; SELECT md5(string_agg(v::text, ',' ORDER BY pk DESC, rk DESC)) FROM tdx})
{
	my $a = $primary->safe_psql('postgres', $q);
	my $b = $standby->safe_psql('postgres', $q);
	ok($a ne '' && $a eq $b, "the same answer on both: $q");
}
like($standby->safe_psql('postgres', q{SELECT tablestore.explain_query('Replicated', 'N lt 10 or N eq 2999')->>'access'}),
	qr/^property index$/, 'the standby uses the replayed property index');
like(
	$standby->safe_psql('postgres', q{
		SET enable_seqscan = off; SET enable_bitmapscan = off; SET search_path = public, tablestore;
		EXPLAIN (COSTS OFF) SELECT * FROM tablestore_data.replicated WHERE pk = 'p3' ORDER BY rk DESC}),
	qr/Index Scan Backward using/, 'the standby scans the index backward');

# a write on the standby is refused as plain SQL's is: 25006
# (read_only_sql_transaction), on every write path and by create_table and
# delete_table (as DROP TABLE), never XX000 or 55000
for my $w (
	q{SELECT tablestore.insert_entity('Replicated', '{"PartitionKey": "s", "RowKey": "1"}')},
	q{SELECT tablestore.update_entity('Replicated', '{"PartitionKey": "p1", "RowKey": "batch1", "A": 1}')},
	q{SELECT tablestore.merge_entity('Replicated', '{"PartitionKey": "p1", "RowKey": "batch1", "A": 1}')},
	q{SELECT tablestore.insert_or_replace_entity('Replicated', '{"PartitionKey": "p1", "RowKey": "batch1", "A": 1}')},
	q{SELECT tablestore.insert_or_merge_entity('Replicated', '{"PartitionKey": "s", "RowKey": "2", "A": 1}')},
	q{SELECT tablestore.delete_entity('Replicated', 'p1', 'batch2')},
	q{SELECT * FROM tablestore.execute_batch('Replicated', '[{"op": "insert_or_merge", "entity": {"PartitionKey": "p1", "RowKey": "b"}}]')},
	q{INSERT INTO tablestore_data.replicated VALUES ('s', '3', now(), '{}')},
	q{SELECT tablestore.delete_table('Replicated')},
	q{DROP TABLE tablestore_data.replicated},
	q{SELECT tablestore.create_table('Standby')},
	q{SELECT tablestore.create_property_index('Replicated', 'M', 'Int32')},
	q{SELECT tablestore.drop_property_index('Replicated', 'N', 'Int32')})
{
	($rc, $out, $err) = $standby->psql('postgres', "\\set VERBOSITY sqlstate\n$w");
	like($err, qr/^(psql:<stdin>:\d+: )?ERROR:  25006$/, "refused with 25006 on the standby: $w");
}

ok(!grep(/inconsistent page/, slurp_file($primary->logfile), slurp_file($standby->logfile)),
	'wal_consistency_checking found no inconsistency');
$standby->stop;
$primary->stop;
done_testing();
