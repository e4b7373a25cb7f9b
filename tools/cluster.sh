#!/usr/bin/env bash
# tools/cluster.sh [N]: build and install tablestore, start a local
# tablestore cluster of throwaway servers (N shards, default 2, and a
# router, each as the postgres OS user on a Unix socket in a temporary
# directory), run the demo through the router, and print how to connect,
# how to add a node and move partitions to it, and how to stop.
set -eu
cd "$(dirname "$0")/.."
. tools/lib.sh
N=${1:-2}

ts_install_build_deps
ts_apt_install postgresql-15-plproxy
ts_build_install
DIR=$(mktemp -d /tmp/tscluster.XXXXXX)
ts_start_cluster "$DIR" "$N"
echo "== the cluster: partitions and their nodes"
psql -X -d tablestore -c "SELECT node, count(*) AS partitions, string_agg(partition::text, ' ' ORDER BY partition) FROM tablestore_router.partitions() GROUP BY node ORDER BY node"
echo "== running the employee demo (tools/demo.sql) through the router"
psql -X -d tablestore -e -f tools/demo.sql
echo "== twelve more departments, and where each department's entities are"
psql -X -q -d tablestore -c "SELECT count(tablestore.insert_or_replace_entity('Employees',
	jsonb_build_object('PartitionKey', 'Dept' || lpad(d::text, 2, '0'), 'RowKey', lpad(e::text, 5, '0'), 'Age', 20 + e)))
	FROM generate_series(1, 12) d, generate_series(1, 10) e" >/dev/null
for d in "$DIR"/shard*; do
	echo "$d: $(psql -X -At -h "$d" -d tablestore -c "SELECT string_agg(DISTINCT pk, ', ' ORDER BY pk) FROM tablestore_data.employees")"
done
echo "== a query over every node, merged in key order"
psql -X -d tablestore -c "SELECT e->>'PartitionKey' AS pk, e->>'RowKey' AS rk, e->>'Age' AS age
	FROM tablestore.query_entities('Employees', 'Age gt 29') e"

cat <<MSG

== the cluster is running
   connect to the router:  psql -h $DIR/router -U postgres tablestore
   a shard:                psql -h $DIR/shard0 -U postgres tablestore
   add a node:             mkdir $DIR/shard$N && chown postgres: $DIR/shard$N &&
                           runuser -u postgres -- $PGBIN/initdb -D $DIR/shard$N/data -A trust -E UTF8 -U postgres &&
                           runuser -u postgres -- $PGBIN/pg_ctl -D $DIR/shard$N/data -l $DIR/shard$N/server.log \\
                               -o "-c listen_addresses='' -k $DIR/shard$N -c wal_level=logical" start &&
                           psql -h $DIR/shard$N -U postgres -c 'CREATE DATABASE tablestore' &&
                           psql -h $DIR/shard$N -U postgres tablestore -c 'CREATE EXTENSION tablestore'
   move partitions to it:  tools/cluster-move.sh "host=$DIR/router dbname=tablestore user=postgres" \\
                               "host=$DIR/shard$N dbname=tablestore" 1 5 9
   stop:                   for d in $DIR/router $DIR/shard*; do runuser -u postgres -- $PGBIN/pg_ctl -D \$d/data stop; done; rm -rf $DIR
MSG
