#!/usr/bin/env bash
# tools/cluster-move.sh: move partitions of a tablestore cluster to another
# node (README "Scale-out: growing the cluster").
#
#   tools/cluster-move.sh ROUTER TARGET PARTITION...
#
# ROUTER and TARGET are libpq connection strings: the router database and
# the tablestore database of the node that takes the partitions (a new node
# needs only CREATE EXTENSION tablestore; the tables are created here).
# Run as a role that may read and write every entity relation on the nodes
# and ALTER SERVER tablestore_cluster on the router (a superuser, say).
#
# TARGET is taken as the router spells it (tablestore_router.node_string):
# a node already in the cluster keeps the one connection string it has.
#
# For each partition, in one router session:
#   1. take the router's locks of the partition and of "all partitions"
#      (tablestore_router.lock_partition_for_move, superuser only; waiting
#      at most MOVE_LOCK_TIMEOUT, 10s: the calls that queue behind the
#      mover wait no longer): every routed call on the partition, and every
#      call on all nodes (queries without a PartitionKey, table
#      operations), waits from now on; calls in flight finish first.
#      Calls on other partitions go on as before.
#   2. copy the partition's entities (pk, rk, ts, props: ETags and
#      Timestamps unchanged) of every table from its node to TARGET, after
#      removing what an earlier, interrupted move left there, and compare
#      the counts, all tables in one transaction on TARGET;
#   3. ALTER SERVER tablestore_cluster OPTIONS (SET p<partition> TARGET);
#   4. delete the partition's entities on the old node (one transaction);
#   5. release the lock: the waiting calls run, on TARGET.
# If step 2 or 3 fails, the lock is released with the partition still on
# its old node, which still has all of it, and nothing of it on TARGET; run
# the script again.
#
# The lock is the router's: with several routers, stop the others' traffic
# to the partitions being moved, or move through each of them in turn.
set -eu
INNER=
if [ "${1:-}" = "--inner" ]; then
	INNER=1
	shift
fi
[ $# -ge 3 ] || { sed -n '2,12p' "$0"; exit 2; }
ROUTER=$1
TARGET=$2
shift 2
PARTS="$*"

rq() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$ROUTER" "$@"; }
tq() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$TARGET" "$@"; }

NPARTS=$(rq -c "SELECT count(*) FROM tablestore_router.partitions()")
# the target as the partition map spells it (checked by the router)
TARGET=$(rq -v node="$TARGET" <<<"SELECT tablestore_router.node_string(:'node')")
for p in $PARTS; do
	case $p in *[!0-9]*) echo "not a partition number: $p" >&2; exit 2 ;; esac
	[ "$p" -lt "$NPARTS" ] || { echo "partition $p: the cluster has $NPARTS" >&2; exit 2; }
done

# the tables (the outer call lists them for the inner one, which must not
# call the router's API: it would wait for the lock its own session holds)
if [ -z "$INNER" ]; then
	TABLES=$(rq -c "SELECT * FROM tablestore.list_tables()")
	export CLUSTER_MOVE_TABLES="$TABLES"
else
	TABLES=$CLUSTER_MOVE_TABLES
fi

# one partition: the steps 2 to 4 (called from the router session below)
move_one() {
	local p=$1 source rel rels="" t n cond copy="BEGIN;" drop="BEGIN;"
	source=$(rq -c "SELECT node FROM tablestore_router.partitions() WHERE partition = $p")
	if [ "$source" = "$TARGET" ]; then
		echo "partition $p: already on the target"
		return 0
	fi
	cond="tablestore.partition_hash(pk) & $((NPARTS - 1)) = $p"
	# Step 2 is one transaction on the target for all tables: whatever
	# fails, nothing of the partition is left there (the target may be a
	# node that queries over all nodes read already).  psql runs the
	# source's COPY TO STDOUT as the program of each \copy FROM PROGRAM.
	export CLUSTER_MOVE_SOURCE=$source
	for t in $TABLES; do
		rel=$(psql -X -q -At -v ON_ERROR_STOP=1 -d "$source" \
			-c "SELECT quote_ident(relation_name) FROM tablestore.tables WHERE table_name = \$\$$t\$\$")
		rels="$rels $rel"
		n=$(psql -X -q -At -v ON_ERROR_STOP=1 -d "$source" -c "SELECT count(*) FROM tablestore_data.$rel WHERE $cond")
		copy="$copy
DELETE FROM tablestore_data.$rel WHERE $cond;
\\copy tablestore_data.$rel (pk, rk, ts, props) FROM PROGRAM 'psql -X -q -v ON_ERROR_STOP=1 -d \"\$CLUSTER_MOVE_SOURCE\" -c \"COPY (SELECT pk, rk, ts, props FROM tablestore_data.$rel WHERE $cond) TO STDOUT (FORMAT binary)\"' (FORMAT binary)
DO \$\$BEGIN
	IF (SELECT count(*) FROM tablestore_data.$rel WHERE $cond) <> $n THEN
		RAISE 'partition $p, table $t: % entities copied of $n', (SELECT count(*) FROM tablestore_data.$rel WHERE $cond);
	END IF;
END\$\$;
\\echo partition $p, table $t: $n entities copied"
		drop="$drop
DELETE FROM tablestore_data.$rel WHERE $cond;"
	done
	tq <<<"$copy
COMMIT;" || { echo "partition $p: the copy failed; nothing of it is on the target" >&2; return 1; }
	sleep "${MOVE_HOLD:-0}"
	# MOVE_WAIT_FILE (tests): hold the lock, after the copy, while it exists
	if [ -n "${MOVE_WAIT_FILE:-}" ]; then
		for _ in $(seq 1 600); do [ -e "$MOVE_WAIT_FILE" ] || break; sleep 0.1; done
	fi
	if ! rq -c "ALTER SERVER tablestore_cluster OPTIONS (SET p$p \$\$$TARGET\$\$)"; then
		tq <<<"$drop
COMMIT;" && echo "partition $p: the router was not changed; its copy on the target is removed" >&2
		return 1
	fi
	psql -X -q -v ON_ERROR_STOP=1 -d "$source" <<<"$drop
COMMIT;" || {
		echo "partition $p is on the target, but its old copy on $source is not deleted:" >&2
		echo "queries over all nodes return it twice until you run there, for each of$rels," >&2
		echo "  DELETE FROM tablestore_data.<relation> WHERE $cond" >&2
		return 1
	}
	echo "partition $p: now on the target"
}

if [ -n "$INNER" ]; then
	move_one "$PARTS"
	exit
fi

# the tables, created on TARGET if it lacks them, with the stored access
# policies every node keeps (as the router answers them)
for t in $TABLES; do
	tq -c "SELECT tablestore.create_table_if_absent(\$\$$t\$\$)" >/dev/null
	acl=$(rq -c "SELECT tablestore.get_table_acl(\$\$$t\$\$)") || exit 1
	printf '%s\n' "SELECT tablestore.set_table_acl(:'t', :'acl')" | tq -v t="$t" -v acl="$acl" >/dev/null || exit 1
done

for p in $PARTS; do
	# the router session that holds the partition's lock while the steps run
	# (MOVE_HOLD: seconds to hold it after the copy, for tests)
	psql -X -q -v ON_ERROR_STOP=1 -d "$ROUTER" >/dev/null <<SQL
SET lock_timeout = '${MOVE_LOCK_TIMEOUT:-10s}';
SELECT tablestore_router.lock_partition_for_move($p);
\\! bash "$0" --inner "$ROUTER" "$TARGET" $p >&2
SELECT tablestore_router.unlock_partition_for_move($p);
SQL
	node=$(rq -c "SELECT node FROM tablestore_router.partitions() WHERE partition = $p")
	if [ "$node" != "$TARGET" ]; then
		echo "partition $p was not moved; it stays on $node, which holds all of it: run the script again" >&2
		exit 1
	fi
done
