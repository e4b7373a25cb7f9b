# test/t/020_cluster.pl: the cluster tier, a router (tablestore_router over
# PL/Proxy) and its shards under what one node never sees.
#
# Each step runs one of the cluster scripts on a cluster of its own that
# this test makes, owns and stops (test/perl/TablestoreCluster.pm: the
# shape the script asks tools/lib.sh's ts_start_cluster for, and the extra
# servers it starts itself); the script takes those servers from the
# environment instead of starting its own (tools/lib.sh, ts_given).  A
# step is a test named by its script, its output kept as comments (the
# last lines of a failed one as diagnostics, the whole in the log
# directory), followed by a test that no server of its cluster crashed.
#   robustness.sh     merge order, paging under writes, streaming memory, a
#                     stopped and a crashed shard, privileges, locks
#   lock_table.sh     concurrent queries over every node and the lock table
#   cluster_grow.sh   growing from 2 to 4 nodes under writes
#   move_findings.sh  issue 23's findings of the copy-based mover
#   move_attack.sh    the attack on online moves
#   move_whitelist.sh a moved table holds only what create_table made
#   move_leftover.sh  a cleanup an owner refuses leaves rows, not a stalled move
#   jepsen_move.sh    moves under writes and faults (fixed seed)
#   rebalance.sh      adding and draining a node
#   move_ttl.sh       a moved partition keeps its table's time to live
#   fuzz_router.sh    random arguments for every function of the router
#
# It runs in a copy of the checkout's tools/ and test/ that tools/run-tap.sh
# makes and names in TS_CHECKOUT.  CL_ONLY=TEXT runs only the steps whose
# name holds TEXT (a developer's shortcut).  A new script is one more
# cluster_step line: its name, its path, and the cluster it wants.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TablestoreCluster;

my $co = $ENV{TS_CHECKOUT}
  or plan skip_all => 'TS_CHECKOUT is not set: run it with tools/run-tap.sh';
chdir $co or die "cannot enter $co: $!";
my $only = $ENV{CL_ONLY} // '';

# cluster_step(SCRIPT, CLUSTER...): run test/SCRIPT on a new cluster of the
# shape CLUSTER gives (TablestoreCluster->new: shards, partitions, nodes),
# its two tests (TablestoreCluster::step); skipped unless its name holds
# CL_ONLY.
my $stepno = 0;
sub cluster_step
{
	my ($script, %shape) = @_;
	$stepno++;
  SKIP:
	{
		skip "CL_ONLY=$only", 2 if $only ne '' && index($script, $only) < 0;
		TablestoreCluster::step($stepno, $script, %shape);
	}
	return;
}

cluster_step('cluster/robustness.sh', shards => 2, nodes => { one => '' });
cluster_step('cluster/lock_table.sh', shards => 3, partitions => $ENV{PARTITIONS} // 256);
cluster_step('cluster_grow.sh', shards => 2, nodes => { shard2 => '', shard3 => '' });
cluster_step('cluster/move_findings.sh', shards => 2, partitions => 8, nodes => { shard2 => 'logical' });
cluster_step('cluster/move_attack.sh', shards => 3, partitions => 8);
cluster_step('cluster/move_whitelist.sh', shards => 2, partitions => 8);
cluster_step('cluster/move_leftover.sh', shards => 3, partitions => 8);
cluster_step('cluster/jepsen_move.sh', shards => 3, partitions => 8);
cluster_step('cluster/rebalance.sh', shards => 2, partitions => 8, nodes => { shard2 => 'logical' });
cluster_step('cluster/move_ttl.sh', shards => 2, partitions => 8, nodes => { shard2 => 'logical' });
cluster_step('cluster/fuzz_router.sh', shards => 2);

done_testing();
