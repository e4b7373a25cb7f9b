# test/perl/TablestoreCluster.pm: a tablestore cluster on PostgreSQL's own
# test framework, for the cluster tier's TAP tests (test/t/020_cluster.pl).
#
# A cluster is N shard nodes and a router node made with ts_node
# (TablestoreNode.pm) and configured exactly as tools/lib.sh's
# ts_start_cluster configures its servers: each shard with wal_level =
# logical (partitions move on logical replication), database tablestore and
# the extension; the router with database tablestore, plproxy,
# tablestore_router and dblink, configured over the shards.  Every node
# runs as ts_start_server's servers run: UTF8 without locale, the library
# preloaded, fsync off, max_prepared_transactions = 10, no TCP, and the
# server defaults PostgreSQL::Test::Cluster changes put back (no statement
# logging, restart after a crash, the default log_line_prefix, WAL senders).
#
# The layout is the one the cluster scripts know (tools/lib.sh, "The
# cluster tier's TAP test"): the cluster's directory DIR holds, per node
# NAME, DIR/NAME, a link to the node's own socket directory, which holds
# links "data" (the data directory) and "server.log" (its log).  All nodes
# of a cluster listen on one port, as ts_start_cluster's all listen on
# 5432, so that the router's conninfos "host=DIR/shardN dbname=tablestore"
# need no port (libpq in the router's backends takes the port from the
# PGPORT the nodes were started with).
package TablestoreCluster;

use strict;
use warnings;
use File::Path;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TablestoreNode;

# TablestoreCluster->new(NAME, shards => N, partitions => P, nodes => {NAME
# => 'logical' | ''}, port => PORT): a started cluster of N shards (2
# unless given) over P partitions (16 unless given), plus the named extra
# servers (bare: no database of their own; 'logical' gives them wal_level =
# logical), which a script adds to the cluster when it wants them, all on
# PORT (a free one the framework picks unless given).  NAME is unique in
# the test: it prefixes the nodes' names.
sub new
{
	my ($class, $name, %p) = @_;
	my $self = bless {
		name => $name,
		shards => $p{shards} // 2,
		partitions => $p{partitions} // 16,
		dir => PostgreSQL::Test::Utils::tempdir_short() . '/c',
		nodes => {},
		order => [],
		port => $p{port},
	}, $class;

	mkdir $self->{dir} or die "cannot create $self->{dir}: $!";
	my @conninfo;
	for my $i (0 .. $self->{shards} - 1)
	{
		my $shard = $self->add_node("shard$i", wal_level => 'logical');
		$shard->safe_psql('postgres', 'CREATE DATABASE tablestore');
		$shard->safe_psql('tablestore', 'CREATE EXTENSION tablestore');
		push @conninfo, "'host=$self->{dir}/shard$i dbname=tablestore'";
	}
	my $router = $self->add_node('router');
	$router->safe_psql('postgres', 'CREATE DATABASE tablestore');
	$router->safe_psql('tablestore',
		"CREATE EXTENSION plproxy;\n"
		  . "CREATE EXTENSION tablestore_router;\n"
		  . "CREATE EXTENSION dblink;\n"
		  . 'SELECT tablestore_router.configure(ARRAY['
		  . join(', ', @conninfo)
		  . "], $self->{partitions});");
	my $extra = $p{nodes} // {};
	for my $n (sort keys %$extra)
	{
		$self->add_node($n, $extra->{$n} ? (wal_level => $extra->{$n}) : ());
	}
	return $self;
}

# add_node(NAME, wal_level => LEVEL): a new started node of the cluster,
# bare (no database tablestore), on the cluster's port, reached as
# DIR/NAME; wal_level replica unless given (the server's default).
sub add_node
{
	my ($self, $name, %p) = @_;
	die "node $name exists" if $self->{nodes}{$name};
	my $node = ts_node(
		"$self->{name}_$name",
		own_host => 1,
		(defined $self->{port} ? (port => $self->{port}) : ()),
		extra => [ '-E', 'UTF8', '--no-locale' ]);
	$self->{port} //= $node->port;
	$node->append_conf('postgresql.conf',
		"log_statement = none\n"
		  . "log_line_prefix = '%m [%p] '\n"
		  . "log_replication_commands = off\n"
		  . "restart_after_crash = on\n"
		  . 'wal_level = ' . ($p{wal_level} // 'replica') . "\n"
		  . "max_wal_senders = 10\n");
	my $link = "$self->{dir}/$name";
	symlink($node->host, $link) or die "cannot link $link: $!";
	symlink($node->data_dir, $node->host . '/data') or die "cannot link data of $name: $!";
	symlink($node->logfile, $node->host . '/server.log') or die "cannot link log of $name: $!";
	$node->start;
	$self->{nodes}{$name} = $node;
	push @{ $self->{order} }, $name;
	return $node;
}

# node(NAME): the PostgreSQL::Test::Cluster node NAME (router, shard0, ...).
sub node
{
	my ($self, $name) = @_;
	return $self->{nodes}{$name} // die "no node $name";
}

# dir, port: the cluster's directory and the port all its nodes listen on.
sub dir  { return $_[0]->{dir}; }
sub port { return $_[0]->{port}; }

# env: the environment that gives a script this cluster (tools/lib.sh:
# ts_cluster_dir, ts_given): its directory and shape, and the router's
# database as the default connection.
sub env
{
	my ($self) = @_;
	return (
		TS_CLUSTER_DIR => $self->{dir},
		TS_CLUSTER_SHAPE => "$self->{shards} $self->{partitions}",
		PGHOST => "$self->{dir}/router",
		PGPORT => $self->{port},
		PGUSER => scalar((getpwuid($<))[0]),
		PGDATABASE => 'tablestore');
}

# crash(NAME): stop node NAME with -m immediate (its shared memory and
# unflushed state lost, as in a crash); restart(NAME) starts it again.
sub crash
{
	my ($self, $name) = @_;
	$self->node($name)->stop('immediate');
	return;
}

sub restart
{
	my ($self, $name) = @_;
	$self->node($name)->start;
	return;
}

# poll(NAME, SQL, EXPECTED): until SQL in database tablestore of node NAME
# answers EXPECTED ('t' unless given), for at most the framework's timeout;
# whether it did (poll_query_until: a test waits for a condition, never
# for a fixed time).
sub poll
{
	my ($self, $name, $sql, $expected) = @_;
	return $self->node($name)->poll_query_until('tablestore', $sql, $expected // 't');
}

# crashes: the lines of the nodes' logs that show a crash (a backend killed by a
# signal, a crash restart, a PANIC, a failed assertion), as NAME: LINE.
sub crashes
{
	my ($self) = @_;
	my @found;
	for my $name (@{ $self->{order} })
	{
		my $log = PostgreSQL::Test::Utils::slurp_file($self->{nodes}{$name}->logfile);
		for my $line (split /\n/, $log)
		{
			push @found, "$name: $line"
			  if $line =~ /was terminated by signal|terminating any other active server processes|PANIC:|^TRAP:/;
		}
	}
	return @found;
}

# stop: stop every node that still runs, whatever a script did to it
# (stopped it, or started it again with pg_ctl itself): a fast shutdown, and
# an immediate one for a server a backend keeps from stopping.
sub stop
{
	my ($self) = @_;
	for my $name (@{ $self->{order} })
	{
		my $node = $self->{nodes}{$name};
		# with fail_ok, a node a script left stopped is one the framework
		# then knows stopped (and does not stop again at the end)
		$node->stop('fast', fail_ok => 1);
		$node->stop('immediate', fail_ok => 1)
		  if -f $node->data_dir . '/postmaster.pid';
	}
	return;
}

# clean: remove the stopped nodes' data directories and the cluster's
# directory (a passed step's; a script leaves the latter to the test,
# tools/lib.sh ts_rm_cluster_dir).
sub clean
{
	my ($self) = @_;
	$self->{nodes}{$_}->clean_node for @{ $self->{order} };
	File::Path::rmtree($self->{dir});
	return;
}

# tail(TEXT, N): its last N lines
sub tail
{
	my ($text, $n) = @_;
	my @l = split /\n/, $text;
	splice(@l, 0, @l - $n) if @l > $n;
	return join("\n", @l) . "\n";
}

# step(N, SCRIPT, CLUSTER...): step N of a test (test/t/015_router.pl,
# 020_cluster.pl): bash test/SCRIPT, run from the current directory (the
# checkout's copy), on a new cluster of the shape CLUSTER gives (new:
# shards, partitions, nodes), given to it in the environment (env).  Two
# tests: the script passed, named by it and its time, its output kept as
# comments (its last 40 lines as diagnostics when it failed, the whole in
# the log directory as stepN.out); then no server of its cluster crashed.
# The servers are stopped after it, and removed if both passed.
sub step
{
	my ($stepno, $script, %shape) = @_;
	my $t0 = time;
	my $cluster = TablestoreCluster->new("c$stepno", %shape);
	my $outfile = "$PostgreSQL::Test::Utils::log_path/step$stepno.out";
	my $ok;
	{
		local %ENV = (%ENV, $cluster->env);
		$ok = IPC::Run::run([ 'bash', "test/$script" ], '<', \undef, '>', $outfile, '2>&1');
	}
	my $out = PostgreSQL::Test::Utils::slurp_file($outfile);
	note($out);
	diag(tail($out, 40)) if !$ok;
	ok($ok, "$script (" . (time - $t0) . " s)");
	$cluster->stop;
	my @crashes = $cluster->crashes;
	diag(join("\n", @crashes)) if @crashes;
	is(scalar(@crashes), 0, "$script: no server of its cluster crashed");
	$cluster->clean if $ok && !@crashes;
	return;
}

1;
