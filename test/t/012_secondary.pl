# test/t/012_secondary.pl: the gateway's read-access secondary on a real
# streaming standby (issue 26, part 3).
#
# A primary and a hot standby made from its base backup; a gateway (the
# ASan build) with --db on the primary and --secondary-db on the standby,
# its login role gws an ordinary role (replication_status() needs no grant).
# Checked: what is written at the primary becomes readable at
# <account>-secondary once replayed (waits on the replay LSN); reads at the
# secondary go to the standby (while its replay is paused a new entity is
# 404 there and 200 at the primary); writes there are refused; Get Service
# Stats says live with a LastSyncTime that advances with writes, stays put
# while the replay is paused however much the primary writes, advances
# again when it resumes, and advances on an idle primary too; the
# JavaScript SDK reads the secondary endpoint and calls getStatistics();
# with the standby stopped the secondary is 503 ServerBusy and its stats
# "unavailable" while the primary serves, a gateway starts without it, and
# the secondary serves again once it is back; promoted, it still refuses
# writes and its stats say "unavailable".  A --secondary-db that reaches
# another database than the account's stops the start-up; a standby frozen
# (SIGSTOP) on the connections the gateway holds makes the secondary's reads
# 503 within --db-timeout-ms while the primary serves.
use strict;
use warnings;
use Digest::SHA qw(hmac_sha256_base64);
use HTTP::Tiny;
use IO::Socket::INET;
use IPC::Run;
use MIME::Base64;
use POSIX qw(strftime);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use Time::Local qw(timegm);
use TablestoreNode;

my $co = $ENV{TS_CHECKOUT}
  or plan skip_all => 'TS_CHECKOUT is not set: run it with tools/run-tap.sh';
chdir $co or die "cannot enter $co: $!";

my $primary = ts_node('primary', allows_streaming => 1);
# the WAL the standby needs is kept however slowly it starts; the standby
# (which keeps this postgresql.conf) pings an idle primary every 2.5 s, so
# that LastSyncTime advances on an idle primary within the test's bound
$primary->append_conf('postgresql.conf', "wal_keep_size = '1GB'\nwal_receiver_timeout = '5s'\n");
$primary->start;
$primary->safe_psql('postgres', q{
CREATE ROLE gws LOGIN;
CREATE DATABASE sec;
});
$primary->safe_psql('sec', q{
CREATE EXTENSION tablestore;
GRANT CREATE ON SCHEMA tablestore_data TO gws;
});
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;

my $work = PostgreSQL::Test::Utils::tempdir();
my $bin = 'gateway/tablestore-gateway-asan';
$ENV{ASAN_OPTIONS} = 'detect_leaks=1';
$ENV{UBSAN_OPTIONS} = 'print_stacktrace=1';
my $pdb = 'host=' . $primary->host . ' port=' . $primary->port . ' dbname=sec user=gws';
my $sdb = 'host=' . $standby->host . ' port=' . $standby->port . ' dbname=sec user=gws';

# start_gateway(NAME, OPTIONS...): a gateway for devstoreaccount1; its port
# (undef, when it is not listening within 30 s: the caller fails)
my %gateways;
sub start_gateway
{
	my ($name, @opts) = @_;
	my $portfile = "$work/$name.port";
	my $h = IPC::Run::start([ $bin, '--db', $pdb, '--port', '0', '--port-file', $portfile, @opts ],
		'>', "$work/$name.log", '2>&1');
	$gateways{$name} = $h;
	for (1 .. 300)
	{
		return PostgreSQL::Test::Utils::slurp_file($portfile) + 0 if -s $portfile;
		last unless $h->pumpable;
		usleep(100_000);
	}
	diag("gateway $name did not start: " . PostgreSQL::Test::Utils::slurp_file("$work/$name.log"));
	return undef;
}

# refused_start(OPTIONS...): a gateway that must refuse to start: (its
# exit status, undef if it was still running after 30 s; its output)
sub refused_start
{
	my (@opts) = @_;
	my $out = '';
	my $h = IPC::Run::start([ $bin, '--db', $pdb, '--port', '0', @opts ], '>', \$out, '2>&1',
		IPC::Run::timeout(30));
	my $rc = eval { $h->finish; $h->result(0) };
	$h->kill_kill unless defined $rc;
	return ($rc, $out);
}

my $acct = 'devstoreaccount1';
my $key = decode_base64('Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==');
my $http = HTTP::Tiny->new(timeout => 30);

# call(PORT, METHOD, PATH, BODY): a Shared Key Lite request on PATH (as
# sent, "/<account>[-secondary]/..."), signed over the path as sent;
# returns the response (status, content, headers)
sub call
{
	my ($port, $method, $path, $body) = @_;
	my $date = strftime('%a, %d %b %Y %H:%M:%S GMT', gmtime);
	my ($p, $q) = split /\?/, $path, 2;
	my $res = "/$acct$p";
	$res .= "?comp=$1" if defined $q && $q =~ /(?:^|&)comp=([^&]*)/;
	my $sig = hmac_sha256_base64("$date\n$res", $key);
	$sig .= '=' while length($sig) % 4;
	my %h = (
		'x-ms-date' => $date,
		'x-ms-version' => '2019-02-02',
		'Accept' => 'application/json;odata=nometadata',
		'DataServiceVersion' => '3.0',
		'Authorization' => "SharedKeyLite $acct:$sig");
	$h{'Content-Type'} = $body =~ /^--batch_q/ ? 'multipart/mixed; boundary=batch_q'
	  : $body =~ /^<\?xml/ ? 'application/xml' : 'application/json'
	  if defined $body;
	return $http->request($method, "http://127.0.0.1:$port$path",
		{ headers => \%h, defined $body ? (content => $body) : () });
}

# stats(PORT): Get Service Stats at the secondary: (status, LastSyncTime
# as seconds since the epoch, or undef when empty)
sub stats
{
	my ($port) = @_;
	my $r = call($port, 'GET', "/$acct-secondary/?restype=service&comp=stats");
	is($r->{status}, 200, 'Get Service Stats at the secondary: 200') or diag($r->{content});
	my ($st) = $r->{content} =~ m{<Status>([^<]*)</Status>};
	my ($ls) = $r->{content} =~ m{<LastSyncTime>([^<]*)</LastSyncTime>};
	my $t;
	my %mon = (Jan => 0, Feb => 1, Mar => 2, Apr => 3, May => 4, Jun => 5,
		Jul => 6, Aug => 7, Sep => 8, Oct => 9, Nov => 10, Dec => 11);
	$t = timegm($6, $5, $4, $1, $mon{$2}, $3)
	  if defined $ls && $ls =~ /^\w{3}, (\d\d) (\w{3}) (\d{4}) (\d\d):(\d\d):(\d\d) GMT$/;
	return ($st // '', $t);
}

# insert(PORT, PATH_PREFIX, RK): insert entity (p, RK) into table sec
sub insert
{
	my ($port, $prefix, $rk) = @_;
	return call($port, 'POST', "$prefix/sec", qq({"PartitionKey": "p", "RowKey": "$rk", "N": 1}))->{status};
}

# get(PORT, PATH_PREFIX, RK): the status of reading entity (p, RK)
sub get
{
	my ($port, $prefix, $rk) = @_;
	return call($port, 'GET', "$prefix/sec(PartitionKey='p',RowKey='$rk')")->{status};
}

# batch_get(PORT, PATH_PREFIX, RK): the status line of the answer to a
# $batch (at PATH_PREFIX) whose one operation reads entity (p, RK): the
# service's query in a batch, the one batch a secondary serves
sub batch_get
{
	my ($port, $prefix, $rk) = @_;
	my $body = "--batch_q\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
	  . "GET http://127.0.0.1:$port/$acct/sec(PartitionKey='p',RowKey='$rk') HTTP/1.1\r\n"
	  . "Accept: application/json;odata=nometadata\r\n\r\n\r\n--batch_q--\r\n";
	my $r = call($port, 'POST', "$prefix/\$batch", $body);
	return "$r->{status} " . ($r->{content} =~ m{HTTP/1\.1 (\d+)} ? $1 : '?');
}

# preflight(PORT, PATH_PREFIX): the status of a CORS preflight of origin
# http://a.example for GET (unauthenticated, answered from the account's
# CORS rules)
sub preflight
{
	my ($port, $prefix) = @_;
	return $http->request('OPTIONS', "http://127.0.0.1:$port$prefix/Tables",
		{ headers => { 'Origin' => 'http://a.example', 'Access-Control-Request-Method' => 'GET' } })->{status};
}

# catch_up: wait until the standby has replayed all the primary wrote
sub catch_up
{
	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
}

# a --secondary-db that is no standby of --db's database is refused: the
# primary itself, the primary's own server with another database, and
# another cluster
$primary->safe_psql('postgres', 'CREATE DATABASE other');
$primary->safe_psql('other', 'CREATE EXTENSION tablestore');
my $stranger = ts_node('stranger');
$stranger->start;
$stranger->safe_psql('postgres', 'CREATE ROLE gws LOGIN; CREATE DATABASE sec');
$stranger->safe_psql('sec', 'CREATE EXTENSION tablestore');
for my $case (
	[ 'the primary itself', $pdb ],
	[ 'another database of the primary', 'host=' . $primary->host . ' port=' . $primary->port . ' dbname=other user=gws' ],
	[ 'another cluster', 'host=' . $stranger->host . ' port=' . $stranger->port . ' dbname=sec user=gws' ])
{
	my ($rc, $out) = refused_start('--secondary-db', $case->[1]);
	ok(defined $rc && $rc == 2 && $out =~ /not a standby's copy|must be a hot standby|the primary itself/,
		"--secondary-db naming $case->[0]: the start-up is refused")
	  or diag($rc // 'still running', "\n", $out);
}
$stranger->stop;
# the secondary must be the standby's copy of the account's own database:
# a --secondary-db that reaches another database (of the standby, or one
# the conninfo names) stops the start-up (status 2), as two accounts
# sharing a database do
{
	my $other = 'host=' . $standby->host . ' port=' . $standby->port . ' dbname=postgres user=gws';
	my $out = '';
	# a gateway that does start is stopped by the timeout (the test fails)
	my $exited = eval {
		IPC::Run::run([ $bin, '--db', $pdb, '--secondary-db', $other, '--port', '0' ],
			'>', \$out, '2>&1', IPC::Run::timeout(20));
		1;
	} || $@ !~ /timeout/;
	ok($exited && $? >> 8 == 2, 'a --secondary-db reaching another database: the start-up is refused');
	like($out, qr/not a standby's copy of the account's database/, 'and says why') or diag($out);
}

my $port = start_gateway('gw', '--secondary-db', $sdb, '--pool', '2', '--pool-wait-ms', '3000')
  // BAIL_OUT('the gateway did not start');
my $P = "/$acct";
my $S = "/$acct-secondary";

# written at the primary, read at the secondary once replayed
is(call($port, 'POST', "$P/Tables", '{"TableName": "sec"}')->{status}, 201, 'create a table at the primary');
is(insert($port, $P, '1'), 201, 'insert an entity at the primary');
catch_up();
is(get($port, $S, '1'), 200, 'the entity is read at the secondary');
my $r = call($port, 'GET', "$S/sec()?\$filter=N%20eq%201");
ok($r->{status} == 200 && $r->{content} =~ /"RowKey":"1"/, 'a query at the secondary') or diag($r->{content});
$r = call($port, 'GET', "$S/Tables");
ok($r->{status} == 200 && $r->{content} =~ /"TableName":"sec"/, 'the table list at the secondary') or diag($r->{content});
is(insert($port, $S, 'w'), 403, 'an insert at the secondary is refused');
is(call($port, 'DELETE', "$S/sec(PartitionKey='p',RowKey='1')")->{status}, 403, 'a delete at the secondary is refused');

# the statistics: live, and LastSyncTime advances with the primary's writes
my ($st, $t0) = stats($port);
is($st, 'live', 'the secondary is live');
ok(defined $t0 && abs($t0 - time) < 600, 'LastSyncTime is about now');
my $t1 = $t0;
for my $i (1 .. 100)
{
	last if defined $t1 && $t1 > $t0;
	insert($port, $P, "adv$i");
	catch_up();
	($st, $t1) = stats($port);
	usleep(100_000);
}
ok(defined $t1 && $t1 > $t0, 'LastSyncTime advances with the writes replayed');

# the JavaScript SDK at the secondary endpoint
{
	my $out = '';
	my $ok = IPC::Run::run([ 'node', 'test/gateway/secondary_sdk.mjs' ], '>', \$out, '2>&1',
		init => sub { $ENV{GW_PORT} = $port; $ENV{SEC_TABLE} = 'sec'; });
	note($out);
	ok($ok, 'the JavaScript SDK reads the secondary and calls getStatistics()') or diag($out);
}

# the replay paused: the secondary reads the standby (a new entity is not
# there yet), and LastSyncTime stays put while the primary goes on writing
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
$standby->poll_query_until('postgres', "SELECT pg_get_wal_replay_pause_state() = 'paused'")
  or die 'the replay did not pause';
my ($st2, $tp) = stats($port);
is(insert($port, $P, '2'), 201, 'insert at the primary while the replay is paused');
is(get($port, $P, '2'), 200, 'read at the primary');
is(get($port, $S, '2'), 404, 'not yet at the secondary: its reads go to the standby');
is(batch_get($port, $P, '2'), '202 200', 'a batch query at the primary finds it');
is(batch_get($port, $S, '2'), '202 404', 'a batch query at the secondary does not: it reads the standby');
for my $i (1 .. 100)
{
	last if time > $tp + 2;
	insert($port, $P, "paused$i");
	usleep(100_000);
}
my $lsn = $primary->lsn('insert');
$standby->poll_query_until('sec', "SELECT primary_lsn >= '$lsn' FROM tablestore.replication_status()")
  or die 'the standby did not receive the writes';
my ($st3, $tq) = stats($port);
is($tq, $tp, 'LastSyncTime stays put while the replay is paused and the primary writes');
is($standby->safe_psql('sec',
	"SELECT replay_paused AND last_sync_time <= to_timestamp($tp + 1) FROM tablestore.replication_status()"),
	't', 'replication_status(): paused, its last_sync_time not past the one reported');
# CORS rules set at the primary while the replay is paused: the primary
# answers preflights by them at once, the secondary by the standby's (none
# yet), and the secondary's reading of its rules never replaces the
# primary's (the rules are cached for 5 s per account: the loop outlives
# that)
is(call($port, 'PUT', "$P/?restype=service&comp=properties",
	'<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties><Cors><CorsRule>'
	  . '<AllowedOrigins>http://a.example</AllowedOrigins><AllowedMethods>GET</AllowedMethods>'
	  . '<MaxAgeInSeconds>5</MaxAgeInSeconds><ExposedHeaders></ExposedHeaders><AllowedHeaders></AllowedHeaders>'
	  . '</CorsRule></Cors></StorageServiceProperties>')->{status}, 202, 'CORS rules set at the primary');
{
	my ($ps, $ss) = ('', '');
	my $t = time;
	while (time <= $t + 6)
	{
		$ss .= preflight($port, $S) . ' ';
		$ps .= preflight($port, $P) . ' ';
		usleep(250_000);
	}
	unlike($ps, qr/403/, 'the primary\'s preflights follow its rules throughout') or diag($ps);
	unlike($ss, qr/200/, 'the secondary\'s follow the standby\'s (none yet)') or diag($ss);
}
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
catch_up();
is(get($port, $S, '2'), 200, 'the entity is at the secondary once replayed');
{
	my $st = 0;
	for (1 .. 100)
	{
		last if ($st = preflight($port, $S)) == 200;
		usleep(200_000);
	}
	is($st, 200, 'the secondary follows the rules once replayed');
}
my ($st4, $tr) = stats($port);
ok(defined $tr && $tr > $tp, 'LastSyncTime advances again when the replay resumes');

# an idle primary: LastSyncTime still advances (the primary's keepalives)
my $ti = $tr;
for (1 .. 100)
{
	(undef, $ti) = stats($port);
	last if $ti > $tr;
	usleep(200_000);
}
ok($ti > $tr, 'LastSyncTime advances on an idle primary');

# the standby down: the secondary is 503, the primary serves, and a gateway
# starts without the standby
$standby->stop;
$r = call($port, 'GET', "$S/sec(PartitionKey='p',RowKey='1')");
ok($r->{status} == 503 && $r->{content} =~ /ServerBusy/, 'the standby down: 503 ServerBusy at the secondary')
  or diag("$r->{status} $r->{content}");
is(get($port, $P, '1'), 200, 'the primary still serves');
my ($st5, $t5) = stats($port);
ok($st5 eq 'unavailable' && !defined $t5, 'stats: unavailable, no LastSyncTime');
my $port2 = start_gateway('gw2', '--secondary-db', $sdb) // BAIL_OUT('gw2 did not start');
is(get($port2, $P, '1'), 200, 'a gateway started with the standby down serves the primary');
is(get($port2, $S, '1'), 503, 'and answers 503 at the secondary');

# a standby that does not answer at all (a listener that never speaks, as
# a host cut off by the network): the gateway starts (its connection
# attempts time out), the secondary's reads are 503 within a bound, and
# its threads stay free for the primary's requests
{
	my $hole = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0, Listen => 64, ReuseAddr => 1)
	  or die "cannot listen: $!";
	my $t = time;
	my $port3 = start_gateway('gw3', '--secondary-db',
		'host=127.0.0.1 port=' . $hole->sockport . ' dbname=sec user=gws', '--threads', '2', '--pool', '2');
	ok(defined $port3, 'a gateway starts although its standby does not answer (' . (time - $t) . ' s)');
  SKIP:
	{
		skip 'gw3 did not start', 3 unless defined $port3;
		my @kids;
		for (1 .. 4)
		{
			my $pid = fork;
			die "fork: $!" unless defined $pid;
			if ($pid == 0)
			{
				get($port3, $S, '1');
				POSIX::_exit(0);
			}
			push @kids, $pid;
		}
		$t = time;
		is(get($port3, $P, '1'), 200, 'the primary serves meanwhile');
		cmp_ok(time - $t, '<=', 8, 'promptly (' . (time - $t) . ' s)');
		$t = time;
		is(get($port3, $S, '1'), 503, 'a read at the secondary: 503');
		cmp_ok(time - $t, '<=', 8, 'within a bound (' . (time - $t) . ' s)');
		waitpid($_, 0) for @kids;
	}
	close $hole;
}

# back, first with its replay of commits held (recovery_min_apply_delay)
# while the primary has written since it stopped: it streams that write
# but has not replayed it, so it is not readable there and LastSyncTime
# (if known: the last commit replayed) is not after it
my $before = time;
is(insert($port, $P, 'whiledown'), 201, 'a write at the primary while the standby is down');
$lsn = $primary->lsn('insert');
$standby->append_conf('postgresql.conf', "recovery_min_apply_delay = '1h'\n");
$standby->start;
$standby->poll_query_until('sec', "SELECT primary_lsn >= '$lsn' FROM tablestore.replication_status()")
  or die 'the standby did not receive the write';
is(get($port, $S, 'whiledown'), 404, 'back, its replay held: the write is not at the secondary');
{
	my ($st, $t) = stats($port);
	ok(($st eq 'live' || $st eq 'bootstrap') && (!defined $t || $t <= $before),
		"and LastSyncTime is not after it ($st, " . ($t // 'empty') . " <= $before)");
}
$standby->append_conf('postgresql.conf', "recovery_min_apply_delay = 0\n");
$standby->reload;
catch_up();
is(get($port, $S, '1'), 200, 'the standby back: the secondary serves again');
is(get($port, $S, 'whiledown'), 200, 'with what was written while it was down');
is((stats($port))[0], 'live', 'live again');
is(get($port2, $S, '1'), 200, 'in the gateway started without it too');

# the primary down (RA-GRS's case): the secondary still serves reads from
# the standby, whose statistics say unavailable (no WAL receiver) with the
# LastSyncTime of what it replayed; the primary back, live again
$primary->stop;
is(get($port, $S, 'whiledown'), 200, 'the primary down: the secondary still serves');
{
	my ($st, $t) = ('', undef);
	for (1 .. 150)
	{
		($st, $t) = stats($port);
		last if $st eq 'unavailable';
		usleep(200_000);
	}
	ok($st eq 'unavailable' && defined $t && $t <= time, "its stats: unavailable, with a LastSyncTime ($st)");
}
$primary->start;
{
	my $st = '';
	for (1 .. 150)
	{
		last if ($st = (stats($port))[0]) eq 'live';
		usleep(200_000);
	}
	is($st, 'live', 'the primary back: live again');
}
# a standby that stops answering on the connections the gateway holds
# (frozen: SIGSTOP of all its processes, as a hung host or VM; the kernel
# still accepts and acknowledges): every read at the secondary is 503
# within --db-timeout-ms (plus a margin for the ASan build), its stats say
# "unavailable", the primary is served meanwhile, and the secondary serves
# again once the standby answers (SIGCONT)
{
	my $port4 = start_gateway('gw4', '--secondary-db', $sdb, '--threads', '4', '--pool', '2',
		'--db-timeout-ms', '2000') // BAIL_OUT('gw4 did not start');
	is(get($port4, $S, '1'), 200, 'gw4 reads at the secondary');
	my $pm = $standby->{_pid};
	my @frozen = ($pm, grep { /^\d+$/ } split /\s+/, `pgrep -P $pm`);
	kill 'STOP', @frozen;
	my @kids;
	for my $k (1 .. 3)
	{
		my $pid = fork;
		die "fork: $!" unless defined $pid;
		if ($pid == 0)
		{
			my $t = Time::HiRes::time();
			my $st = get($port4, $S, '1');
			open my $f, '>', "$work/frozen.$k" or POSIX::_exit(1);
			printf $f "%d %.1f\n", $st, Time::HiRes::time() - $t;
			close $f;
			POSIX::_exit(0);
		}
		push @kids, $pid;
	}
	my $t = Time::HiRes::time();
	is(get($port4, $P, '1'), 200, 'the standby frozen: the primary serves');
	cmp_ok(Time::HiRes::time() - $t, '<=', 5, 'promptly');
	waitpid($_, 0) for @kids;
	for my $k (1 .. 3)
	{
		my $line = -e "$work/frozen.$k" ? PostgreSQL::Test::Utils::slurp_file("$work/frozen.$k") : 'none';
		chomp $line;
		like($line, qr/^503 (\d+\.\d)$/, "frozen standby: read $k at the secondary is 503 ($line)");
		my ($secs) = $line =~ /^\d+ (\S+)/;
		cmp_ok($secs // 99, '<=', 6, "within the deadline and a margin (read $k)");
	}
	$t = Time::HiRes::time();
	my ($stf, $tf) = stats($port4);
	ok($stf eq 'unavailable' && !defined $tf, "stats of a frozen standby: unavailable ($stf)");
	cmp_ok(Time::HiRes::time() - $t, '<=', 6, 'within the deadline and a margin');
	kill 'CONT', @frozen;
	my $st = 0;
	for (1 .. 100)
	{
		last if ($st = get($port4, $S, '1')) == 200;
		usleep(100_000);
	}
	is($st, 200, 'the standby answers again: the secondary serves');
}

# promoted: still read-only at the gateway, and no longer replicating
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die 'no promotion';
is(get($port, $S, '1'), 200, 'the promoted standby still serves reads at the secondary');
is(insert($port, $S, 'promoted'), 403, 'a write at the secondary is still refused');
my ($st6, $t6) = stats($port);
ok($st6 eq 'unavailable' && !defined $t6, 'stats of a promoted standby: unavailable, no LastSyncTime');

# a clean stop: exit status 0 and no sanitizer report (leaks included)
for my $name (sort keys %gateways)
{
	my $h = $gateways{$name};
	ok($h->pumpable, "gateway $name is still running");
	$h->signal('TERM');
	$h->finish;
	is(($h->full_results)[0], 0, "gateway $name stops with status 0");
	my $log = PostgreSQL::Test::Utils::slurp_file("$work/$name.log");
	unlike($log, qr/Sanitizer|runtime error/, "no sanitizer report from gateway $name") or diag($log);
}
$standby->stop;
$primary->stop;
done_testing();
