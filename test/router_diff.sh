#!/usr/bin/env bash
# test/router_diff.sh: the same random calls on one node and through a
# router with 2 shards must give the same output (test/router_diff.py says
# what is generated).  Timestamps and ETags are masked: they are clocks.
#   ROUTER_DIFF_SEED (default: random, printed), ROUTER_DIFF_STATEMENTS
#   (default 3000)
# The cluster is DIR (router, shard0, shard1), the single node DIR/single:
# run alone it starts them; as a step of test/t/015_router.pl it takes the
# TAP test's (tools/lib.sh, ts_given; the node "single" bare, without
# database tablestore, which is made here either way).
set -u
cd "$(dirname "$0")/.."
. tools/lib.sh
SEED=$(ts_seed ROUTER_DIFF_SEED 1)
N=${ROUTER_DIFF_STATEMENTS:-3000}
DIR=$(ts_cluster_dir tsdiff)
chmod 755 "$DIR"
trap 'ts_stop_server "$DIR/single"; ts_stop_cluster "$DIR"; ts_rm_cluster_dir "$DIR"' EXIT
mkdir -p "$DIR/single"
ts_start_server "$DIR/single" >/dev/null || exit 1
psql -X -q -h "$DIR/single" -d postgres -c "CREATE DATABASE tablestore" || exit 1
psql -X -q -h "$DIR/single" -d tablestore -c "CREATE EXTENSION tablestore" || exit 1
ts_start_cluster "$DIR" 2 >/dev/null || exit 1

echo "router_diff: seed $SEED (ROUTER_DIFF_SEED=$SEED repeats, =random tries a new one)"
python3 test/router_diff.py "$SEED" "$N" > "$DIR/script.sql" || exit 1
run() {
	psql -X -A -h "$1" -d tablestore -v ON_ERROR_STOP=0 -f "$DIR/script.sql" 2>&1 | ts_mask_clock
}
run "$DIR/single" > "$DIR/single.out"
run "$DIR/router" > "$DIR/router.out"
stmts=$(grep -c '^SELECT' "$DIR/script.sql")
errors=$(grep -c '^psql:.*ERROR:' "$DIR/single.out")
if diff -u "$DIR/single.out" "$DIR/router.out" > "$DIR/diff"; then
	echo "router_diff: seed $SEED: $stmts statements ($errors errors), the same output on one node and through the router"
	exit 0
fi
echo "router_diff: seed $SEED: the outputs differ (first differences):"
head -n 80 "$DIR/diff"
exit 1
