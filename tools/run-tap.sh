#!/usr/bin/env bash
# tools/run-tap.sh [test/t/NNN_name.pl ...]: the multi-server tests, on
# PostgreSQL's own TAP framework (PostgreSQL::Test::Cluster from the
# server's pgxs), as the postgres OS user: initdb refuses to run as root,
# and the checkout may not be readable by postgres, so the tests and their
# module are copied into a throwaway directory that postgres owns.  The
# extension must be installed (tools/lib.sh ts_build_install).  Each test's
# logs are kept in that directory when it fails.
set -u
cd "$(dirname "$0")/.."
. tools/lib.sh

PGXS_PERL="$("$PGBIN/pg_config" --pkglibdir)/pgxs/src/test/perl"
WORK=$(mktemp -d /tmp/tstap.XXXXXX)
cp -r test/t test/perl "$WORK/"
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(test/t/*.pl)
rel=()
for t in "${tests[@]}"; do rel+=("t/$(basename "$t")"); done
# the gateway's test (test/t/*_gateway.pl), its secondary's
# (test/t/*_secondary.pl) and the router's (test/t/*_router.pl, whose
# test/gateway/router_test.sh puts the gateway in front of a router) run the gateway and the scripts of test/gateway/ with
# the npm packages its lockfile pins: they are built and installed here, as
# root, and copied with the tools they source into $WORK/checkout
# (TS_CHECKOUT)
if [[ " ${rel[*]}" == *_gateway.pl* || " ${rel[*]}" == *_router.pl* || " ${rel[*]}" == *_secondary.pl* ]]; then
	gw_targets=tablestore-gateway
	[[ " ${rel[*]}" != *_gateway.pl* ]] || gw_targets="$gw_targets tablestore-gateway-asan fuzz_batch"
	[[ " ${rel[*]}" != *_secondary.pl* ]] || gw_targets="$gw_targets tablestore-gateway-asan"
	make -s -C gateway $gw_targets || exit 1
	if [ ! -d test/gateway/node_modules/@azure/data-tables ]; then
		(cd test/gateway && npm ci --no-audit --no-fund --silent) || { echo "npm ci failed"; exit 1; }
	fi
	mkdir -p "$WORK/checkout/test"
	cp -a gateway tools "$WORK/checkout/"
	cp -a test/gateway "$WORK/checkout/test/"
fi
# the cluster tier's test (test/t/*_cluster.pl) runs the scripts of
# test/cluster/ (and test/cluster_grow.sh) with what they run and source:
# tools/, test/ (without the gateway's npm packages) and src/ (whose C files
# test/logcheck.py tells tablestore's internal errors by) in TS_CHECKOUT;
# the router's (test/t/*_router.pl) runs test/router_regress.sh and
# test/router_diff.sh, which also read expected/ (the node's expected
# output that the router's is made from)
if [[ " ${rel[*]}" == *_cluster.pl* || " ${rel[*]}" == *_router.pl* ]]; then
	mkdir -p "$WORK/checkout/test"
	cp -a src tools expected "$WORK/checkout/"
	tar -C test --exclude=./gateway/node_modules -cf - . | tar -C "$WORK/checkout/test" -xf - || exit 1
fi
chown -R postgres: "$WORK"
(cd "$WORK" && runuser -u postgres -- env PATH="$PGBIN:$PATH" TESTDIR="$WORK" PG_REGRESS="$("$PGBIN/pg_config" --pkglibdir)/pgxs/src/test/regress/pg_regress" \
	PGBIN="$PGBIN" TS_PRELOAD="${TS_PRELOAD:-1}" TS_CHECKOUT="$WORK/checkout" PGHOST= PGPORT= PGUSER= PGDATABASE= \
	prove -v -I "$PGXS_PERL" -I perl "${rel[@]}")
rc=$?
if [ $rc -eq 0 ]; then
	rm -rf "$WORK"
else
	echo "TAP tests failed: logs in $WORK/tmp_check/log"
fi
exit $rc
