# test/t/005_ttl_worker.pl: the time to live background worker (doc/ttl.md).
#
# With the library preloaded (always here: the worker needs it, whatever
# TS_PRELOAD says) and a naptime of one second, the worker deletes the
# expired entities of every table with time to live, in batches, in every
# database, and keeps those with TimeToLive -1; tablestore.ttl_sweeps shows
# its progress.  The clock is moved with tablestore.clock_offset (ALTER
# SYSTEM, which the worker reads at its next round): nothing sleeps.
#
# The worker is caught mid-round deterministically: a session locks a
# table (SHARE) so that the worker's next batch waits for it, and then,
# while the worker waits, the table is deleted, the extension dropped, or
# the database dropped (WITH (FORCE), which ends the worker).  Each time
# the worker (or the launcher) carries on with the rest, and a table made
# afterwards is swept.  The worker waits at most its lock_timeout: a table
# locked for long is skipped and recorded, the next table and database are
# swept, and a DROP DATABASE without FORCE does not fail because of it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use TablestoreNode;

my $node = ts_node('ttl');
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'tablestore'") unless ts_preload();
$node->append_conf('postgresql.conf', qq{
tablestore.ttl_naptime = 1
tablestore.ttl_batch_size = 50
});
$node->start;

# n entities (the first k of them with TimeToLive -1) in a new table with
# a time to live of 100 s
sub make_table
{
	my ($db, $table, $n, $k) = @_;
	$node->safe_psql($db, qq{
SELECT tablestore.create_table('$table');
SELECT count(*) FROM (SELECT tablestore.insert_entity('$table', jsonb_build_object('PartitionKey', 'p', 'RowKey', lpad(i::text, 6, '0'))
	|| CASE WHEN i <= $k THEN '{"TimeToLive": -1}'::jsonb ELSE '{}'::jsonb END) FROM generate_series(1, $n) i) s;
SELECT tablestore.set_table_ttl('$table', 100);
});
}

# a psql session kept open, and a way to run a statement in it
sub session
{
	my ($db) = @_;
	my %s = (in => '', out => '', err => '');
	$s{h} = IPC::Run::start([ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr($db) ],
		'<', \$s{in}, '>', \$s{out}, '2>', \$s{err});
	return \%s;
}

sub session_run
{
	my ($s, $sql, $marker) = @_;
	my $t = IPC::Run::timer($PostgreSQL::Test::Utils::timeout_default);
	$s->{in} .= "$sql\nSELECT '$marker';\n";
	$s->{h}->pump until $s->{out} =~ /\Q$marker\E/ || $t->is_expired || !$s->{h}->pumpable;
	ok($s->{out} =~ /\Q$marker\E/, "session: $marker") or diag($s->{err});
}

# the worker waits for a lock (it is in the middle of a round)
sub worker_waits
{
	my ($what) = @_;
	ok( $node->poll_query_until('postgres',
			q{SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'tablestore ttl sweep' AND wait_event_type = 'Lock'}),
		"the worker waits for the lock of $what");
}

$node->safe_psql('postgres', 'CREATE EXTENSION tablestore');
make_table('postgres', 'Keep', 300, 10);
make_table('postgres', 'Big', 2000, 0);
$node->safe_psql('postgres', q{CREATE DATABASE db2; CREATE DATABASE db3;});
for my $db (qw(db2 db3))
{
	$node->safe_psql($db, 'CREATE EXTENSION tablestore');
	make_table($db, 'Other', 500, 0);
}

# the launcher runs; with the real clock nothing has expired
ok($node->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'tablestore ttl launcher'}),
	'the launcher runs');
is($node->safe_psql('postgres', 'SELECT count(*) FROM tablestore_data.keep'), '300', 'nothing expired yet');

# 1. A table deleted while the worker waits for it.
my $s = session('postgres');
session_run($s, 'BEGIN; LOCK TABLE tablestore_data.big IN SHARE MODE;', 'big locked');
$node->safe_psql('postgres', q{ALTER SYSTEM SET tablestore.clock_offset = '200s'; SELECT pg_reload_conf();});
worker_waits('Big');
session_run($s, q{SELECT tablestore.delete_table('Big'); COMMIT;}, 'big deleted');

# the rest of the database is swept: Keep keeps its 10 entities of
# TimeToLive -1, the view shows the pass
ok($node->poll_query_until('postgres', q{SELECT count(*) = 10 FROM tablestore_data.keep}), 'Keep swept');
ok( $node->poll_query_until('postgres',
		q{SELECT total_deleted = 290 AND last_end IS NOT NULL AND errors = 0 FROM tablestore.ttl_sweeps WHERE table_name = 'Keep'}),
	'the view shows the pass over Keep');
is($node->safe_psql('postgres', q{SELECT string_agg(table_name, ',') FROM tablestore.ttl_sweeps}), 'Keep',
	'the deleted table is gone from the view');
is($node->safe_psql('postgres', q{SELECT min(rk) || '..' || max(rk) FROM tablestore_data.keep}), '000001..000010',
	'the entities with TimeToLive -1 are kept');

# 2. The extension dropped while the worker waits for a table of db2.
my $s2 = session('db2');
session_run($s2, 'BEGIN; LOCK TABLE tablestore_data.other IN SHARE MODE;', 'db2 locked');
worker_waits('db2 Other');
session_run($s2, 'DROP EXTENSION tablestore CASCADE; COMMIT;', 'extension dropped');

# 3. The database dropped while the worker waits in it.
my $s3 = session('db3');
session_run($s3, 'BEGIN; LOCK TABLE tablestore_data.other IN SHARE MODE;', 'db3 locked');
worker_waits('db3 Other');
$node->safe_psql('postgres', 'DROP DATABASE db3 WITH (FORCE)');
$s3->{h}->kill_kill;
$s->{in} .= "\\q\n";
$s2->{in} .= "\\q\n";
$s->{h}->finish;
$s2->{h}->finish;

# the launcher and the next rounds carry on: a new table is swept
make_table('postgres', 'After', 200, 0);
ok($node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM tablestore_data.after}), 'a new table is swept');
ok( $node->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'tablestore ttl launcher'}),
	'the launcher still runs');

# 4. A lock held for long stalls nothing but its table (attack F4): the
# worker gives up on the locked table after its lock_timeout, records it
# in tablestore.ttl_sweeps and sweeps the next table and database.
make_table('postgres', 'Aalocked', 100, 0);    # first of the round
my $s4 = session('postgres');
session_run($s4, 'BEGIN; LOCK TABLE tablestore_data.aalocked IN SHARE MODE;', 'aalocked locked');
$node->safe_psql('postgres', 'CREATE DATABASE db4');
$node->safe_psql('db4', 'CREATE EXTENSION tablestore');
make_table('db4', 'Other', 100, 0);
make_table('postgres', 'Later', 100, 0);
ok($node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM tablestore_data.later}),
	'a table after a locked one is swept');
ok($node->poll_query_until('db4', q{SELECT count(*) = 0 FROM tablestore_data.other}),
	'another database is swept while a table is locked');
ok( $node->poll_query_until('postgres',
		q{SELECT errors > 0 AND last_error LIKE '%lock timeout%' FROM tablestore.ttl_sweeps WHERE table_name = 'Aalocked'}),
	'the view records the locked table');
is($node->safe_psql('postgres', 'SELECT count(*) FROM tablestore_data.aalocked'), '100', 'the locked table is untouched');
session_run($s4, 'COMMIT;', 'aalocked unlocked');
ok($node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM tablestore_data.aalocked}),
	'the table is swept once unlocked');

# 5. DROP DATABASE (without FORCE) of a database the worker is in: the
# worker waits for a lock there; the drop waits for the database's sessions
# (at most 5 s) and the lock's holder leaves: the worker leaves too.
my $s5 = session('db4');
session_run($s5, 'BEGIN; LOCK TABLE tablestore_data.other IN SHARE MODE;', 'db4 locked');
worker_waits('db4 Other');
my ($dout, $derr) = ('', '');
my $drop = IPC::Run::start([ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c', 'DROP DATABASE db4' ],
	'>', \$dout, '2>', \$derr);
ok( $node->poll_query_until('postgres',
		q{SELECT count(*) > 0 FROM pg_stat_activity WHERE query = 'DROP DATABASE db4'}),
	'DROP DATABASE db4 runs');
$s5->{in} .= "COMMIT;\n\\q\n";
$s5->{h}->finish;
ok($drop->finish, 'DROP DATABASE of a database the worker was in succeeds') or diag($derr);
$s4->{in} .= "\\q\n";
$s4->{h}->finish;

# the worker leaves a database that opts out alone
$node->safe_psql('postgres', q{ALTER DATABASE db2 SET tablestore.ttl_worker = off;});
$node->safe_psql('db2', 'CREATE EXTENSION tablestore');
make_table('db2', 'Optout', 100, 0);
# two rounds later (each ends a pass over After), db2 is untouched
for my $round (1, 2)
{
	my $ends = $node->safe_psql('postgres', q{SELECT last_end FROM tablestore.ttl_sweeps WHERE table_name = 'After'});
	ok( $node->poll_query_until('postgres',
			qq{SELECT last_end > '$ends'::timestamptz FROM tablestore.ttl_sweeps WHERE table_name = 'After'}),
		"round $round went by");
}
is($node->safe_psql('db2', 'SELECT count(*) FROM tablestore_data.optout'), '100', 'an opted-out database is not swept');

# a sweep_expired whose transaction is open holds its table's progress: the
# worker leaves that table to a later round instead of waiting (which
# stopped the round: the tables after it, here Zafter, were never swept)
$node->safe_psql('postgres', q{ALTER DATABASE postgres SET tablestore.ttl_worker = off});
make_table('postgres', 'Hold', 50, 0);
make_table('postgres', 'Zafter', 50, 0);
my $h = session('postgres');
session_run($h, q{BEGIN; SELECT tablestore.sweep_expired('Hold', 1);}, 'hold swept once');
$node->safe_psql('postgres', q{ALTER DATABASE postgres RESET tablestore.ttl_worker});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM tablestore_data.zafter}),
	'a table after one whose progress is held is swept');
is($node->safe_psql('postgres', q{SELECT count(*) FROM tablestore_data.hold}), '50',
	'the held table is left alone meanwhile');
session_run($h, 'COMMIT;', 'hold committed');
$h->{in} .= "\\q\n";
$h->{h}->finish;
ok($node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM tablestore_data.hold}),
	'the held table is swept once released');

# no process died abnormally
my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal|PANIC|TRAP/, 'no crash in the server log');

$node->stop;
done_testing();
