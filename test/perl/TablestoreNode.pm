# test/perl/TablestoreNode.pm: what the TAP tests of tablestore share.
#
# The multi-server tests (test/t/*.pl) run on PostgreSQL's own test
# framework, PostgreSQL::Test::Cluster from the server's pgxs.  This module
# makes a node the way the rest of the suite's servers are made
# (tools/lib.sh): the library preloaded unless TS_PRELOAD=0, so that tskey
# logs with its resource manager, and wal_consistency_checking covering
# tskey's records either way.
package TablestoreNode;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Exporter 'import';

our @EXPORT = qw(ts_node ts_preload ts_wal_check);

# ts_preload: whether the servers preload tablestore (TS_PRELOAD, default 1).
sub ts_preload
{
	return ($ENV{TS_PRELOAD} // '1') eq '1';
}

# ts_wal_check: the wal_consistency_checking value that covers tskey's
# records, its resource manager's or generic WAL's.
sub ts_wal_check
{
	return ts_preload() ? 'generic,tskey' : 'generic';
}

# ts_node(NAME, INIT_PARAMS...): an initialised node, not started, with the
# library preloaded unless TS_PRELOAD=0 (in postgresql.conf, so that a
# restart and a standby made from a backup keep it: a server must have the
# resource manager to replay tskey's records).  The parameters own_host
# and port go to PostgreSQL::Test::Cluster->new (a socket directory of the
# node's own, a given port: TablestoreCluster.pm), the others to init.
sub ts_node
{
	my ($name, %params) = @_;
	my %new = map { $_ => delete $params{$_} } grep { exists $params{$_} } qw(own_host port);
	my $node = PostgreSQL::Test::Cluster->new($name, %new);

	$node->init(%params);
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'tablestore'") if ts_preload();
	$node->append_conf('postgresql.conf', "max_prepared_transactions = 10");
	return $node;
}

1;
