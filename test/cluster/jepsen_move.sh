#!/usr/bin/env bash
# test/cluster/jepsen_move.sh: a Jepsen-style test of online partition moves
# (issue 23): a cluster of three shards and 8 partitions, four clients
# writing through the router while partitions move back and forth, a move
# killed half-way and at its cutover, a source node restarted with
# -m immediate during a move, table operations during moves; then every
# acknowledged write is checked (test/cluster/jepsen_move.py says what).
# Fixed seed (JEPSEN_SEED, default 23); about a minute.
set -u
cd "$(dirname "$0")/../.."
. tools/lib.sh
SEED=${JEPSEN_SEED:-23}

DIR=$(ts_cluster_dir tsjepsen)
trap 'ts_stop_cluster "$DIR"; ts_rm_cluster_dir "$DIR"' EXIT
ts_start_cluster "$DIR" 3 8 >/dev/null || exit 1
psql -X -q -d tablestore -c "SELECT tablestore.create_table('Jep')" >/dev/null || exit 1
chmod 777 "$DIR"
status=0
timeout 240 python3 test/cluster/jepsen_move.py "$DIR" "$SEED" || status=1
for d in "$DIR"/router "$DIR"/shard*; do
	if out=$(python3 test/logcheck.py "$d/server.log" src); then :; else echo "$d: $out"; status=1; fi
done
exit $status
