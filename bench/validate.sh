#!/usr/bin/env bash
# bench/validate.sh: the validation micro-benchmark (issue 12: at most 1 µs
# for a ~300-byte entity of mixed types).  tablestore.validate_entity runs
# the validation and canonicalization of every write, without writing; the
# cost per entity is its time over 100,000 entities minus that of reading
# the same entities (the baseline), median of RUNS runs.  Writes
# bench/results/validate.md.
set -eu
cd "$(dirname "$0")/.."
. tools/lib.sh
RUNS=${RUNS:-5}
N=${N:-100000}

ts_install_deps
[ -n "${NO_BUILD:-}" ] || ts_build_install
DIR=$(mktemp -d /tmp/tsval.XXXXXX)
trap 'ts_stop_server "$DIR"; rm -rf "$DIR"' EXIT
ts_start_server "$DIR"
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d postgres "$@"; }
q <<SQL
CREATE EXTENSION tablestore;
CREATE TABLE ents AS SELECT jsonb_build_object(
	'PartitionKey', 'tenant' || lpad((i % 1000)::text, 4, '0'), 'RowKey', lpad(i::text, 8, '0'),
	'FirstName', 'First' || i, 'LastName', 'Last' || (i % 977), 'Email', 'user' || i || '@contoso.com',
	'Age', 18 + i % 50, 'Salary', 1000.5 + i, 'Active', i % 2 = 0,
	'Visits', (i * 7919)::text, 'Visits@odata.type', 'Edm.Int64',
	'HireDate', '2019-03-01T09:00:00Z', 'HireDate@odata.type', 'Edm.DateTime',
	'Id', '3f2504e0-4f89-11d3-9a0c-0305e82c3301', 'Id@odata.type', 'Edm.Guid',
	'Photo', 'AQIDBAUGBwgJCgsMDQ4PEA==', 'Photo@odata.type', 'Edm.Binary',
	'Notes', repeat('x', 60)) AS e
FROM generate_series(1, $N) i;
VACUUM ANALYZE ents;
CREATE FUNCTION timed(sql text) RETURNS float8 LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
	EXECUTE sql;
	RETURN extract(epoch FROM clock_timestamp() - t0);
END \$\$;
SQL
size=$(q -c "SELECT round(avg(octet_length(e::text))) FROM ents")
q -c "SELECT timed('SELECT count(tablestore.validate_entity(e)) FROM ents')" >/dev/null # warm up
v="" b=""
for r in $(seq "$RUNS"); do
	v="$v $(q -c "SELECT timed('SELECT count(tablestore.validate_entity(e)) FROM ents')")"
	b="$b $(q -c "SELECT timed('SELECT count(e->''Notes'') FROM ents')")"
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
vm=$(echo $v | median)
bm=$(echo $b | median)
us=$(awk -v v="$vm" -v b="$bm" -v n="$N" 'BEGIN {printf "%.2f", (v - b) / n * 1e6}')
{
	echo "# validation micro-benchmark"
	echo
	echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "- $N entities of $size bytes of JSON text each: 10 custom properties of every type (String, Int32, Double, Boolean, Int64, DateTime, Guid, Binary), 4 annotations"
	echo "- validate_entity over all: median ${vm}s; reading them: ${bm}s; $RUNS runs"
	echo
	echo "**Validation: $us µs per entity** (goal: ≤ 1 µs)."
} | tee bench/results/validate.md
