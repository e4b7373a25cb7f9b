# test/t/015_router.pl: the router tier, tablestore_router over PL/Proxy
# with 2 shards answering as one node does.
#
# Each step runs one of the router scripts on a cluster of its own that
# this test makes, owns and stops (test/perl/TablestoreCluster.pm, step);
# the script takes those servers from the environment instead of starting
# its own (tools/lib.sh, ts_given).  A step is a test named by its script,
# its output kept as comments (the last lines of a failed one as
# diagnostics, the whole in the log directory), followed by a test that no
# server of its cluster crashed.
#   router_regress.sh       the regress suites through the router (the
#                           node's expected output, patched where a router
#                           differs), its API against a node's, stored
#                           access policies, the router's upgrade path, the
#                           pgTAP files of the API
#   router_diff.sh          the same random calls (fixed seed) on a single
#                           node (the extra server "single") and through
#                           the router: the same output
#   gateway/router_test.sh  the Azure SDKs and raw HTTP through the gateway
#                           in front of the router
#
# Every cluster listens on port 5432 (in sockets of its own): the router's
# default port (its backends' libpq's: PGPORT of the environment the
# framework starts it in, else the compiled 5432) is then the compiled
# one, as on the servers ts_start_cluster starts, which the router test's
# checks of how a node string is normalised assume (a missing port and
# port='' are one address only then; test/router/sql/router.sql).
#
# It runs in a copy of the checkout's tools/, test/ (with the gateway's npm
# packages), expected/ and gateway/ (with the gateway built) that
# tools/run-tap.sh makes and names in TS_CHECKOUT.  RT_ONLY=TEXT runs only
# the steps whose name holds TEXT (a developer's shortcut).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TablestoreCluster;

my $co = $ENV{TS_CHECKOUT}
  or plan skip_all => 'TS_CHECKOUT is not set: run it with tools/run-tap.sh';
chdir $co or die "cannot enter $co: $!";
my $only = $ENV{RT_ONLY} // '';

# router_step(SCRIPT, CLUSTER...): run test/SCRIPT on a new cluster of the
# shape CLUSTER gives (TablestoreCluster->new: shards, partitions, nodes),
# its two tests (TablestoreCluster::step); skipped unless its name holds
# RT_ONLY.
my $stepno = 0;
sub router_step
{
	my ($script, %shape) = @_;
	$stepno++;
  SKIP:
	{
		skip "RT_ONLY=$only", 2 if $only ne '' && index($script, $only) < 0;
		TablestoreCluster::step($stepno, $script, %shape);
	}
	return;
}

router_step('router_regress.sh', shards => 2, port => 5432);
router_step('router_diff.sh', shards => 2, nodes => { single => '' }, port => 5432);
router_step('gateway/router_test.sh', shards => 2, port => 5432);

done_testing();
