#!/usr/bin/env bash
# tools/cluster-rebalance.sh: add nodes, drain nodes, and even out the
# entities per node of a tablestore cluster, one partition move at a time
# (README "Scale-out: growing the cluster").
#
#   tools/cluster-rebalance.sh ROUTER [--add NODE]... [--drain NODE]... [--dry-run]
#
# ROUTER is the router's connection string (a superuser); a NODE is a node
# string (a new node needs CREATE EXTENSION tablestore and wal_level =
# logical).  The plan is tablestore_router.rebalance_plan(adds, drains):
# every partition of a drained node moves off it, then partitions move
# from the heaviest node to the lightest while that evens them out.  Each
# move is CALL tablestore_router.move_partition; progress is printed
# (move i of n, the move's step, tables copied, lag).  Interrupted, the
# command run again (once the interrupted run's session is gone: a second
# run while it lives is refused) completes the unfinished move and plans the
# rest anew.
set -eu
[ $# -ge 1 ] || { sed -n '2,17p' "$0"; exit 2; }
ROUTER=$1
shift
adds="{}"
drains="{}"
dry=
arr() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$ROUTER" -v a="$1" -v n="$2" <<<"SELECT (:'a'::text[] || :'n'::text)::text"; }
while [ $# -gt 0 ]; do
	case $1 in
	--add) adds=$(arr "$adds" "$2"); shift 2 ;;
	--drain) drains=$(arr "$drains" "$2"); shift 2 ;;
	--dry-run) dry=1; shift ;;
	*) echo "unknown argument: $1" >&2; exit 2 ;;
	esac
done
rq() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$ROUTER" "$@"; }

# an unfinished move first
un=$(rq -c "SELECT partition || ' ' || target FROM tablestore_router.moves WHERE finished_at IS NULL")
if [ -n "$un" ]; then
	echo "completing the unfinished move of partition ${un%% *}"
	[ -n "$dry" ] || rq -v p="${un%% *}" -v t="${un#* }" <<<"CALL tablestore_router.move_partition(:p, :'t')"
fi
plan=$(rq -F '|' -v a="$adds" -v d="$drains" <<<"SELECT partition, target, source, entities FROM tablestore_router.rebalance_plan(:'a', :'d') ORDER BY step")
n=$(printf '%s' "$plan" | grep -c . || true)
echo "$n moves planned"
[ -z "$dry" ] || { printf '%s\n' "$plan" | awk -F'|' '{ printf "partition %s (%s entities): %s -> %s\n", $1, $4, $3, $2 }'; exit 0; }
i=0
while IFS='|' read -r p target source entities; do
	[ -n "$p" ] || continue
	i=$((i + 1))
	echo "move $i of $n: partition $p ($entities entities) from $source to $target"
	# progress while it runs
	( while sleep 2; do rq -c "SELECT format('  partition %s: %s %s', partition, step, coalesce(detail, '')) FROM tablestore_router.moves WHERE finished_at IS NULL" 2>/dev/null || true; done ) &
	poller=$!
	if ! rq -v p="$p" -v t="$target" <<<"CALL tablestore_router.move_partition(:p, :'t')"; then
		kill $poller 2>/dev/null
		echo "move $i of $n failed; every entity is on one node: run the command again to complete it" >&2
		exit 1
	fi
	kill $poller 2>/dev/null
	rq -v p="$p" <<<"SELECT format('  done: %s entities, %s, cutover pause %s ms', rows_moved, elapsed, cutover_ms) FROM tablestore_router.moves WHERE partition = :p ORDER BY id DESC LIMIT 1"
done <<<"$plan"
echo "partitions per node:"
rq -c "SELECT node, count(*) FROM tablestore_router.partitions() GROUP BY node ORDER BY node"
