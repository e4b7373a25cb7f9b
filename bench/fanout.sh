#!/usr/bin/env bash
# bench/fanout.sh [NODES...]: queries over every node through the router,
# for clusters of 2 and 3 shards (default), with the build installed in
# $PGBIN's tree (NO build here: install the build to measure first, e.g.
# an older commit into another PGBIN, to compare).  Each cluster has 16
# partitions and 100,000 entities (1,000 PartitionKeys x 100, written on
# the shards directly, each on the node of its partition); timed in
# PL/pgSQL on the router (no client cost), medians of 5:
#   filter: count(*) FROM query_entities('Bench', 'Tag eq 7') (1% match)
#   stream: count(*) FROM query_entities('Bench') (every entity)
#   walk:   every page of query_entities_page(top 1000), by continuation
set -eu
cd "$(dirname "$0")/.."
. tools/lib.sh
NODES=${*:-2 3}
export PGUSER=postgres
for n in $NODES; do
	DIR=$(mktemp -d /tmp/tsfanout.XXXXXX)
	ts_start_cluster "$DIR" "$n" 16 >/dev/null
	psql -X -q -c "SELECT tablestore.create_table('Bench')" >/dev/null
	for i in $(seq 0 $((n - 1))); do
		psql -X -q -h "$DIR/shard$i" -d tablestore -c "SELECT count(tablestore.insert_or_replace_entity('Bench', jsonb_build_object('PartitionKey', pk, 'RowKey', lpad(r::text, 5, '0'), 'Tag', (p + r) % 100)))
			FROM generate_series(0, 999) p, LATERAL (SELECT 'p' || lpad(p::text, 4, '0') AS pk) k, generate_series(0, 99) r
			WHERE ((tablestore.partition_hash(pk) & 15) % $n) = $i" >/dev/null
	done
	psql -X -q <<'SQL'
CREATE FUNCTION pg_temp.t(q text, reps integer) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	ms float8[] := '{}';
	t0 timestamptz;
	n bigint;
BEGIN
	FOR i IN 1 .. reps LOOP
		t0 := clock_timestamp();
		EXECUTE q INTO n;
		ms := ms || extract(epoch FROM clock_timestamp() - t0) * 1000;
	END LOOP;
	RETURN format('%s ms (%s rows)', round((SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY v) FROM unnest(ms) v)::numeric, 1), n);
END $$;
CREATE FUNCTION pg_temp.walk() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	npk text; nrk text; total bigint := 0; k bigint;
BEGIN
	LOOP
		SELECT jsonb_array_length(p.entities), p.next_partition_key, p.next_row_key INTO k, npk, nrk
		FROM tablestore.query_entities_page('Bench', NULL, NULL, 1000, npk, nrk) p;
		total := total + k;
		EXIT WHEN npk IS NULL;
	END LOOP;
	RETURN total;
END $$;
\pset format unaligned
\pset tuples_only on
SELECT 'filter ' || pg_temp.t($q$SELECT count(*) FROM tablestore.query_entities('Bench', 'Tag eq 7')$q$, 5);
SELECT 'stream ' || pg_temp.t($q$SELECT count(*) FROM tablestore.query_entities('Bench')$q$, 5);
SELECT 'walk   ' || pg_temp.t($q$SELECT pg_temp.walk()$q$, 5);
SQL
	echo "(router of $n shards)"
	ts_stop_cluster "$DIR"
	rm -rf "$DIR"
done
