# test/t/001_crash.pl: acknowledged writes survive a crash.
#
# Concurrent writers (single-entity inserts, batches of ten, inserts of long
# CJK RowKeys that split the key index often, and a churner that fills a
# partition, deletes it and VACUUMs, so that leaves are deleted and reused)
# run until each has written enough; then the server is stopped with
# "pg_ctl stop -m immediate" in the middle of the writes and restarted.
# Every write a client saw committed must be there, no batch half-applied,
# the catalog and relations must agree, and the entity relation's tskey
# index must pass verify_index, before and after a VACUUM.
# wal_consistency_checking makes the replay compare every record's result
# (tskey's resource manager, or generic WAL with TS_PRELOAD=0) with a full
# image of the page as the primary wrote it; the WAL must hold the records
# the mode implies.
#
# Each writer is one session running a DO loop that COMMITs each write and
# then raises a NOTICE naming it: a notice is sent only after its commit
# returned, so every notice the client received is an acknowledged write.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use TablestoreNode;

my $node = ts_node('crash');
$node->append_conf('postgresql.conf', qq{
fsync = on
wal_consistency_checking = '@{[ts_wal_check()]}'
wal_keep_size = '1GB'
autovacuum = off
});
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION tablestore;
CREATE EXTENSION pg_walinspect;
SELECT tablestore.create_table('Crash');
});
my $start_lsn = $node->lsn('insert');

# the writers: each a DO loop, one write per transaction, acknowledged by a
# notice after its commit
my %loops = (
	w1 => q{PERFORM tablestore.insert_entity('Crash', jsonb_build_object('PartitionKey', 'w1', 'RowKey', lpad(i::text, 8, '0'), 'N', i));
		COMMIT; RAISE NOTICE 'ack w1 %', lpad(i::text, 8, '0');},
	w2 => q{PERFORM tablestore.insert_entity('Crash', jsonb_build_object('PartitionKey', 'w2', 'RowKey', lpad(i::text, 8, '0'), 'N', i));
		COMMIT; RAISE NOTICE 'ack w2 %', lpad(i::text, 8, '0');},
	w3 => q{PERFORM tablestore.merge_entity('Crash', jsonb_build_object('PartitionKey', 'w3', 'RowKey', lpad(i::text, 8, '0'), 'N', i), NULL);
		COMMIT; RAISE NOTICE 'ack w3 %', lpad(i::text, 8, '0');},
	L1 => q{PERFORM tablestore.insert_entity('Crash', jsonb_build_object('PartitionKey', 'L1', 'RowKey', lpad(i::text, 8, '0') || repeat('字', 400)));
		COMMIT; RAISE NOTICE 'ack L1 %', lpad(i::text, 8, '0') || repeat('字', 400);},
	L2 => q{PERFORM tablestore.insert_entity('Crash', jsonb_build_object('PartitionKey', 'L2', 'RowKey', lpad(i::text, 8, '0') || repeat('字', 400)));
		COMMIT; RAISE NOTICE 'ack L2 %', lpad(i::text, 8, '0') || repeat('字', 400);},
	b1 => q{PERFORM count(*) FROM tablestore.execute_batch('Crash', (SELECT jsonb_agg(jsonb_build_object('op', 'insert',
			'entity', jsonb_build_object('PartitionKey', 'b1', 'RowKey', lpad((i * 10 + k)::text, 8, '0')))) FROM generate_series(0, 9) k));
		COMMIT; RAISE NOTICE 'ack b1 %', i;},
	b2 => q{PERFORM count(*) FROM tablestore.execute_batch('Crash', (SELECT jsonb_agg(jsonb_build_object('op', 'insert',
			'entity', jsonb_build_object('PartitionKey', 'b2', 'RowKey', lpad((i * 10 + k)::text, 8, '0')))) FROM generate_series(0, 9) k));
		COMMIT; RAISE NOTICE 'ack b2 %', i;},
);
# the merge writer's partition is an upsert target: w3 merges with no
# If-Match (NULL), an insert-or-merge
$loops{w3} =~ s/merge_entity\(/insert_or_merge_entity(/;
$loops{w3} =~ s/, NULL\);/);/;

my (%h, %errfile);
my $connstr = $node->connstr('postgres');
my $tmp = PostgreSQL::Test::Utils::tempdir();
for my $w (sort keys %loops)
{
	my $sql = "DO \$\$ BEGIN FOR i IN 1..100000000 LOOP $loops{$w} END LOOP; END \$\$;\n";
	# files, not scalars: nobody pumps these harnesses while they run
	$errfile{$w} = "$tmp/$w.notices";
	$h{$w} = IPC::Run::start(
		[ 'psql', '-X', '-q', '-d', $connstr, '-c', $sql ],
		'>', '/dev/null', '2>', $errfile{$w});
}
# the churner: fill partition D, delete it, VACUUM, again and again
my $churn = '';
for my $c (1 .. 2000)
{
	$churn .= "SELECT count(tablestore.insert_entity('Crash', jsonb_build_object('PartitionKey', 'D', 'RowKey', lpad(g::text, 8, '0') || repeat('x', 40)))) FROM generate_series($c * 1000, $c * 1000 + 399) g;\n"
	  . "DELETE FROM tablestore_data.crash WHERE pk OPERATOR(tablestore.=) 'D';\n"
	  . "VACUUM tablestore_data.crash;\n";
}
append_to_file("$tmp/churn.sql", $churn);
my $churner = IPC::Run::start(
	[ 'psql', '-X', '-q', '-At', '-d', $connstr, '-v', 'ON_ERROR_STOP=1', '-f', "$tmp/churn.sql" ],
	'>', '/dev/null', '2>', "$tmp/churn.err");

# crash once every writer has written enough and the churner has vacuumed
# twice (a condition, not a time)
ok( $node->poll_query_until('postgres', q{
	SELECT (SELECT count(DISTINCT pk) FROM tablestore_data.crash
			WHERE pk::text IN ('w1', 'w2', 'w3', 'L1', 'L2', 'b1', 'b2')) = 7
		AND (SELECT count(*) FROM tablestore_data.crash WHERE pk::text LIKE 'w%') >= 600
		AND (SELECT count(*) FROM tablestore_data.crash WHERE pk::text LIKE 'L%') >= 100
		AND (SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = 'tablestore_data.crash'::regclass) >= 2}),
	'the writers and the churner are under way');
$node->stop('immediate');
for my $hh (values %h, $churner)
{
	eval { $hh->finish; };
}
$node->start;

# the acknowledged writes: every notice a writer received
my @acked;
for my $w (sort keys %errfile)
{
	for my $line (split /\n/, slurp_file($errfile{$w}))
	{
		next unless $line =~ /^NOTICE:  ack (\S+) (.*)$/;
		my ($pk, $what) = ($1, $2);
		if ($pk =~ /^b/)
		{
			push @acked, map { sprintf("%s %08d", $pk, $what * 10 + $_) } 0 .. 9;
		}
		else
		{
			push @acked, "$pk $what";
		}
	}
}
my %present = map { $_ => 1 } split /\n/,
  $node->safe_psql('postgres', 'SELECT pk || \' \' || rk FROM tablestore_data.crash');
my @missing = grep { !$present{$_} } @acked;
cmp_ok(scalar(@acked), '>=', 1000, scalar(@acked) . ' writes acknowledged');
is(scalar(@missing), 0, 'every acknowledged write survived the crash')
  or diag(join("\n", @missing[ 0 .. ($#missing < 9 ? $#missing : 9) ]));

is( $node->safe_psql('postgres', q{
	SELECT count(*) FROM (SELECT pk, (rk::text::int / 10) b, count(*) c FROM tablestore_data.crash
		WHERE pk::text LIKE 'b%' GROUP BY 1, 2) s WHERE c <> 10}),
	'0', 'no batch half-applied');
is($node->safe_psql('postgres', 'SELECT string_agg(t, \',\') FROM tablestore.list_tables() t'),
	'Crash', 'the catalog lists the table');
is( $node->safe_psql('postgres',
		q{SELECT tablestore.insert_entity('Crash', '{"PartitionKey": "after", "RowKey": "1"}') ? 'odata.etag'}),
	't', 'the table takes writes after the restart');
my $verify = q{SELECT tablestore.verify_index(indexrelid::regclass) FROM pg_index
	WHERE indrelid = 'tablestore_data.crash'::regclass};
my ($rc, $out, $stderr) = $node->psql('postgres', $verify);
is($rc, 0, 'verify_index passes after the replay') or diag($stderr);
$node->safe_psql('postgres',
	"DELETE FROM tablestore_data.crash WHERE pk OPERATOR(tablestore.=) 'D'; VACUUM tablestore_data.crash");
($rc, $out, $stderr) = $node->psql('postgres', $verify);
is($rc, 0, 'and after a VACUUM') or diag($stderr);

# the records replayed: tskey's own with the preload, generic ones without
my $wal = $node->safe_psql('postgres', qq{
	SELECT string_agg(r || '=' || count, ' ' ORDER BY r) FROM (SELECT "resource_manager/record_type" r, count
		FROM pg_get_wal_stats('$start_lsn', pg_current_wal_flush_lsn())) s
	WHERE r IN ('tskey', 'Generic') AND count > 0});
if (ts_preload())
{
	like($wal, qr/tskey=/, "the WAL holds tskey's records ($wal)");
}
else
{
	unlike($wal, qr/tskey=/, "no tskey record without the preload ($wal)");
	like($wal, qr/Generic=/, 'generic WAL records instead');
}
ok(!grep(/inconsistent page/, slurp_file($node->logfile)),
	'wal_consistency_checking found no inconsistency');

$node->stop;
done_testing();
