#!/usr/bin/env bash
# tools/cluster-move.sh: move partitions of a tablestore cluster to another
# node, online (README "Scale-out: growing the cluster").
#
#   tools/cluster-move.sh ROUTER TARGET PARTITION...
#
# ROUTER and TARGET are libpq connection strings: the router database (as
# a superuser) and the tablestore database of the node that takes the
# partitions (a new node needs CREATE EXTENSION tablestore and
# wal_level = logical, as every node; the tables are created there).
#
# Each partition is moved by CALL tablestore_router.move_partition(p,
# TARGET) on the router: a publication on its node, a subscription on
# TARGET that copies its tables and then streams their changes while
# writes to the partition go on, and a cutover under the partition's lock
# (the target applies the source's last writes, the partition map
# switches, the source's copy is deleted).  Every step is recorded in
# tablestore_router.moves.  A move that failed or was interrupted at any
# step leaves every entity on one node; this command, run again once the
# interrupted run's session is gone (a second run while it lives is refused),
# completes it; SELECT tablestore_router.abort_move() abandons it instead
# (a lost target).  The partitions move one at a time; progress is printed.
#
# MOVE_WAIT_FILE (tests): the move waits half-way while this file exists:
# at MOVE_WAIT_STEP, "copying" (the default: the replication is set up),
# "cutover" (before the lock) or "locked" (holding the partition's lock).
set -eu
[ $# -ge 3 ] || { sed -n '2,24p' "$0"; exit 2; }
ROUTER=$1
TARGET=$2
shift 2

rq() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$ROUTER" "$@"; }
NPARTS=$(rq -c "SELECT count(*) FROM tablestore_router.partitions()")
for p in "$@"; do
	case $p in '' | *[!0-9]*) echo "not a partition number: $p" >&2; exit 2 ;; esac
	[ "$p" -lt "$NPARTS" ] || { echo "partition $p: the cluster has $NPARTS" >&2; exit 2; }
done
opts=""
if [ -n "${MOVE_WAIT_FILE:-}" ]; then
	opts="-c tablestore_router.move_pause_at=${MOVE_WAIT_STEP:-copying} -c tablestore_router.move_pause_file=$MOVE_WAIT_FILE"
fi
i=0
for p in "$@"; do
	i=$((i + 1))
	echo "partition $p ($i of $#): moving"
	PGOPTIONS="${PGOPTIONS:-} $opts" rq -v p="$p" -v t="$TARGET" <<<"CALL tablestore_router.move_partition(:p, :'t')" || {
		echo "partition $p: the move failed (see tablestore_router.moves); every entity is on one node: run the command again to complete it" >&2
		exit 1
	}
	rq -v p="$p" <<<"SELECT format('partition %s: now on %s; %s entities, %s, cutover pause %s ms', partition, target, rows_moved, elapsed, cutover_ms)
		FROM tablestore_router.moves WHERE partition = :p ORDER BY id DESC LIMIT 1"
done
