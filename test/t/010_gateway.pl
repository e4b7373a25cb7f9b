# test/t/010_gateway.pl: tablestore-gateway against a node of its own,
# driven by the Azure SDKs, raw HTTP(S), attacks and fuzzers.
#
# The node gets a database per account (an account's tables are its own):
# gwtest for devstoreaccount1 (role gwt_dev) and gwtest_reader for reader
# (role gwt_reader, which may only read the table readertab another role
# made there), both reached through the login role gwt_auth (NOINHERIT,
# member of gwt_dev and gwt_reader).  Three gateways serve them, built with
# AddressSanitizer, LeakSanitizer and UBSan (a memory error or undefined
# behaviour aborts them; a leak is reported when they stop): the main one
# (a pool of 6), one with a pool of one connection (roles end with their
# request, back-pressure, the statement timeout), one serving HTTPS with a
# throwaway certificate.  Each step is a test of its own, its output kept
# as comments:
#   sdk_test.mjs, sdk_test.py  the JavaScript and Python SDKs
#   http_test.sh   raw HTTP: signatures, malformed requests, limits, with
#                  the account addressed path-style and host-style
#   acl_test.py    Get/Set Table ACL and SAS tokens naming a stored policy
#   oauth_test.py  OAuth bearer tokens, with gateways of its own
#   strict_test.sh strict parsing of batches and bodies
#   batch_parity_test.py  an operation in a batch means what it means alone
#   numbers_test.py  numbers reach the client as the database wrote them
#   ttl_test.py    time to live: expired entities are 404 and absent
#   propindex_test.py  a filter's pages with and without property indexes
#   cors_test.sh   service properties and CORS, with a gateway of its own
#   load_test.mjs  concurrent clients for a bounded time
#   pool_test.sh   the gateway with one connection
#   tls_test.sh    HTTPS; http_test.sh and the JavaScript SDK over it too
#   attack_test.sh a test per finding of issue 20, each with its own gateway
#   fuzz_batch     libFuzzer on the multipart and entity path parsers
#   resource_test.py  its own -O2 gateway under slowloris, unauthenticated
#                  bodies, over-long requests and unread pages
#   fuzz_http.py   signed and raw mutated HTTP(S) requests (an XX000 in the
#                  node's log fails it)
# Then: every gateway is still running, none holds more database
# connections than its pool, and each stops with status 0 and no
# sanitizer report.
#
# It runs in a copy of the checkout's gateway/, test/gateway/ (with the npm
# packages) and tools/ that tools/run-tap.sh makes and names in
# TS_CHECKOUT, with the gateways and the fuzzer built there.  GW_ONLY=TEXT
# runs only the steps whose name holds TEXT (a developer's shortcut).
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use TablestoreNode;

my $co = $ENV{TS_CHECKOUT}
  or plan skip_all => 'TS_CHECKOUT is not set: run it with tools/run-tap.sh';
chdir $co or die "cannot enter $co: $!";

my $node = ts_node('gateway');
$node->start;
my $work = PostgreSQL::Test::Utils::tempdir();
my $only = $ENV{GW_ONLY} // '';

# what every step sees: the node, its log, the builds, the work directory
$ENV{PGHOST} = $node->host;
$ENV{PGPORT} = $node->port;
$ENV{PGUSER} = (getpwuid($<))[0];
delete $ENV{PGDATABASE};
$ENV{TS_SERVER_LOG} = $node->logfile;
$ENV{GW_BIN} = 'gateway/tablestore-gateway';
$ENV{GW_BIN_ASAN} = 'gateway/tablestore-gateway-asan';
$ENV{GW_WORK} = $work;
$ENV{ASAN_OPTIONS} = 'detect_leaks=1';
$ENV{UBSAN_OPTIONS} = 'print_stacktrace=1';

$node->safe_psql('postgres', q{
CREATE DATABASE gwtest;
CREATE DATABASE gwtest_reader;
CREATE ROLE gwt_auth LOGIN NOINHERIT;
CREATE ROLE gwt_dev NOLOGIN;
CREATE ROLE gwt_reader NOLOGIN;
GRANT gwt_dev, gwt_reader TO gwt_auth;
});
$node->safe_psql('gwtest', q{
CREATE EXTENSION tablestore;
ALTER DATABASE gwtest SET log_error_verbosity = verbose;
GRANT CREATE ON SCHEMA tablestore_data TO gwt_dev;
});
# reader's own database: a table made by another role, which reader may read
$node->safe_psql('gwtest_reader', q{
CREATE EXTENSION tablestore;
GRANT CREATE ON SCHEMA tablestore_data TO gwt_dev;
ALTER DEFAULT PRIVILEGES FOR ROLE gwt_dev IN SCHEMA tablestore_data GRANT SELECT ON TABLES TO gwt_reader;
SET ROLE gwt_dev;
SELECT tablestore.create_table('readertab');
SELECT count(tablestore.insert_entity('readertab',
	jsonb_build_object('PartitionKey', 'r', 'RowKey', lpad(i::text, 5, '0'), 'n', i)))
FROM generate_series(1, 20) i;
});
# the databases and roles of attack_test.sh
command_ok([ 'bash', 'test/gateway/attack_test.sh', 'setup' ], 'attack_test.sh setup');

my $dev_key = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
my $reader_key = `openssl rand -base64 32`;
chomp $reader_key;
PostgreSQL::Test::Utils::append_to_file("$work/accounts",
	"# name key role [database]; no database: --db's\n"
	  . "devstoreaccount1 $dev_key gwt_dev\n"
	  . "reader $reader_key gwt_reader gwtest_reader\n");

# start_gateway(NAME, OPTIONS...): an ASan gateway; its port once it listens
my %gateways;
sub start_gateway
{
	my ($name, @opts) = @_;
	my $portfile = "$work/$name.port";
	my $h = IPC::Run::start(
		[
			$ENV{GW_BIN_ASAN}, '--db',
			"host=$ENV{PGHOST} port=$ENV{PGPORT} dbname=gwtest user=gwt_auth",
			'--accounts-file', "$work/accounts", '--port', '0', '--port-file', $portfile, @opts
		],
		'>', "$work/$name.log", '2>&1');
	$gateways{$name} = $h;
	for (1 .. 300)
	{
		return PostgreSQL::Test::Utils::slurp_file($portfile) + 0 if -s $portfile;
		last unless $h->pumpable;
		usleep(100_000);
	}
	BAIL_OUT("gateway $name did not start: " . PostgreSQL::Test::Utils::slurp_file("$work/$name.log"));
}

my $pool = 6;
my $gw_port = start_gateway('gw', '--pool', $pool, '--threads', '4', '--pool-wait-ms', '10000');
$ENV{GW_PORT} = $gw_port;
$ENV{GW_READER_KEY} = $reader_key;
$ENV{GW_DEV_KEY} = $dev_key;

# tail(TEXT, N): its last N lines
sub tail
{
	my ($text, $n) = @_;
	my @l = split /\n/, $text;
	splice(@l, 0, @l - $n) if @l > $n;
	return join("\n", @l) . "\n";
}

# step(NAME, {ENV}, CMD...): one step, its output as comments, its time in
# its name; skipped unless NAME holds GW_ONLY
sub step
{
	my ($name, $env, @cmd) = @_;
  SKIP:
	{
		skip "GW_ONLY=$only", 1 if $only ne '' && index($name, $only) < 0;
		local @ENV{ keys %$env } = values %$env;
		my $t0 = time;
		my $out = '';
		my $ok = IPC::Run::run(\@cmd, '>', \$out, '2>&1');
		note($out);
		diag(tail($out, 40)) if !$ok;
		ok($ok, "$name (" . (time - $t0) . " s)");
	}
	return;
}

step('JavaScript SDK', {}, 'node', 'test/gateway/sdk_test.mjs');
step('Python SDK', {}, '/usr/bin/python3', 'test/gateway/sdk_test.py');
step('raw HTTP', {}, 'bash', 'test/gateway/http_test.sh');
step('table ACLs and SAS with si (raw HTTP)', {}, '/usr/bin/python3', 'test/gateway/acl_test.py');
step('OAuth bearer tokens (own gateways; HTTPS, HTTP, both SDKs)', {},
	'/usr/bin/python3', 'test/gateway/oauth_test.py');
step('strict parsing: batch framing, JSON bodies, a batch without database', {},
	'bash', 'test/gateway/strict_test.sh');
step('a batch operation means what the request alone means (parity)', {},
	'/usr/bin/python3', 'test/gateway/batch_parity_test.py');
step('numbers as the database wrote them, in every answer', {},
	'/usr/bin/python3', 'test/gateway/numbers_test.py');
step('time to live: expired entities are gone through the gateway', {},
	'/usr/bin/python3', 'test/gateway/ttl_test.py');
step('property indexes: the same pages with and without them', {},
	'/usr/bin/python3', 'test/gateway/propindex_test.py');
step('service properties and CORS (own gateway, restarted)', {}, 'bash', 'test/gateway/cors_test.sh');
step('service properties and CORS, host-style', { GW_STYLE => 'host' }, 'bash', 'test/gateway/cors_test.sh');
step('load', {}, 'node', 'test/gateway/load_test.mjs');
step('raw HTTP, host-style', { GW_STYLE => 'host' }, 'bash', 'test/gateway/http_test.sh');

# one pooled connection: roles end with their request, back-pressure, timeout
my $pool1_port = start_gateway('pool1', '--pool', '1', '--pool-wait-ms', '300', '--statement-timeout-ms', '1500');
step('pool of one', { GW_PORT => $pool1_port }, 'bash', 'test/gateway/pool_test.sh');

# HTTPS with a throwaway certificate for 127.0.0.1 and the host-style names
command_ok(
	[
		'openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
		'-addext', 'subjectAltName=IP:127.0.0.1,DNS:*.table.tstest',
		'-keyout', "$work/tls.key", '-out', "$work/tls.crt"
	],
	'a throwaway certificate');
my $tls_port = start_gateway('tls', '--tls-cert', "$work/tls.crt", '--tls-key', "$work/tls.key", '--pool', '2');
my %tls = (GW_PORT => $tls_port, GW_TLS_CA => "$work/tls.crt");
step('HTTPS, path-style', { %tls, GW_STYLE => 'path' }, 'bash', 'test/gateway/tls_test.sh');
step('HTTPS, host-style', { %tls, GW_STYLE => 'host' }, 'bash', 'test/gateway/tls_test.sh');
step('raw HTTPS, path-style',
	{ %tls, GW_SCHEME => 'https', GW_STYLE => 'path', FUZZ_HTTP_SEED => $ENV{FUZZ_HTTPS_SEED} // 2 },
	'bash', 'test/gateway/http_test.sh');
step('raw HTTPS, host-style', { %tls, GW_SCHEME => 'https', GW_STYLE => 'host' },
	'bash', 'test/gateway/http_test.sh');
step('JavaScript SDK over HTTPS, host-style',
	{ %tls, GW_SCHEME => 'https', GW_STYLE => 'host', NODE_EXTRA_CA_CERTS => "$work/tls.crt" },
	'node', 'test/gateway/sdk_test.mjs');

# a test per finding of issue 20, each with the gateway it needs (logs in
# the work directory: the sanitizer scan below covers them too)
for my $f (
	[ 1, 'host-style HTTPS under ASan' ],
	[ 2, 'over-long request lines' ],
	[ 3, 'slow headers, connections per client' ],
	[ 4, 'unauthenticated bodies are not buffered' ],
	[ 6, 'the published key off loopback' ],
	[ 7, 'one answer for unknown account and bad signature' ],
	[ 8, 'accounts are isolated' ],
	[ 9, 'Shared Key signs the method on the wire' ],
	[ 13, 'strict framing, $top and continuation tokens' ],
	[ 14, "an outside attack's findings: SAS and memory, header names, percent-encoding, Content-MD5" ])
{
	my ($n, $what) = @$f;
	step($n == 14 ? $what : "finding $n: $what", {}, 'bash', 'test/gateway/attack_test.sh', $n);
}

# the parsers of untrusted bytes under libFuzzer (built by tools/run-tap.sh),
# seeded with JavaScript- and Python-style batches and an entity path
my $corpus = PostgreSQL::Test::Utils::tempdir();
step('fuzzing the batch and path parsers', {},
	"$co/gateway/fuzz_batch", "-artifact_prefix=$corpus/", $corpus, "$co/gateway/fuzz-corpus",
	'-seed=' . ($ENV{GW_FUZZ_SEED} // 1),
	'-max_total_time=' . ($ENV{GW_FUZZ_SECONDS} // 15), '-print_final_stats=1');
step('resources: slow headers, bodies, long requests, unread pages (-O2 build)', {},
	'/usr/bin/python3', 'test/gateway/resource_test.py', $ENV{GW_BIN});
step('fuzzing HTTP requests (FUZZ_HTTP_SECONDS, FUZZ_HTTP_SEED)', {}, '/usr/bin/python3', 'test/gateway/fuzz_http.py');
step('fuzzing HTTPS requests, host- and path-style',
	{ %tls, GW_SCHEME => 'https', FUZZ_HTTP_SECONDS => $ENV{FUZZ_HTTPS_SECONDS} // 15 },
	'/usr/bin/python3', 'test/gateway/fuzz_http.py');

# still alive (no request crashed them), and no connection leaked: to each
# database at most the three gateways' pools
for my $name (sort keys %gateways)
{
	ok($gateways{$name}->pumpable, "gateway $name is still running");
}
my $conns = $node->safe_psql('postgres',
	q{SELECT datname || ' ' || count(*) FROM pg_stat_activity WHERE usename = 'gwt_auth' GROUP BY datname ORDER BY 1});
for my $line (split /\n/, $conns)
{
	my ($db, $n) = split / /, $line;
	cmp_ok($n, '<=', $pool + 3, "$n database connections to $db (pools $pool + 1 + 2)");
}

# a clean stop: exit status 0 and no sanitizer report (leaks included)
for my $name (sort keys %gateways)
{
	my $h = $gateways{$name};
	$h->signal('TERM');
	$h->finish;
	is(($h->full_results)[0], 0, "gateway $name stops with status 0");
}
my @reports;
opendir(my $dh, $work) or die;
for my $log (grep { /\.log$/ } readdir $dh)
{
	my $text = PostgreSQL::Test::Utils::slurp_file("$work/$log");
	if ($text =~ /Sanitizer|runtime error/)
	{
		push @reports, $log;
		diag("$log:\n$text");
	}
}
closedir $dh;
is_deeply(\@reports, [], 'no sanitizer report in any gateway log');
# on failure, each gateway's log tail
if (!Test::More->builder->is_passing)
{
	for my $name (sort keys %gateways)
	{
		diag("==== $name.log (tail)\n" . tail(PostgreSQL::Test::Utils::slurp_file("$work/$name.log"), 30));
	}
}

$node->stop;
done_testing();
