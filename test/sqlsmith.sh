#!/usr/bin/env bash
# test/sqlsmith.sh: random SQL against a database holding tablestore tables.
# Starts its own server (log_error_verbosity=verbose, so every error in the
# log carries its SQLSTATE and source location), loads test/fuzz_fixture.sql
# (tables with every Edm type, longest keys, row-level security, a table
# granted to nobody, value pools of names, filters, entities and ETags, and
# wrappers of the set-returning functions), then runs Debian's sqlsmith in
# three phases, SQLSMITH_SECONDS (default 60) in all:
#   1. half the time as ts_fz_user, a role with ordinary table rights, with
#      sqlsmith's view of pg_proc narrowed to tablestore's functions, the
#      wrappers and a few dozen text/jsonb functions that feed them (schema
#      fz shadows pg_proc on the search_path of the schema-loading
#      connection), so that most statements reach the extension;
#   2. a quarter as ts_fz_user with the whole catalog of functions;
#   3. a quarter as superuser, narrowed as in 1.
# sqlsmith rolls back every statement it sends, so the data stays as loaded.
# The run fails on any backend crash, PANIC or failed assertion, or an
# internal error (XX000) from tablestore's code (test/logcheck.py), and
# reports how many statements each phase ran and how many called tablestore.
# The seed is 1 unless SQLSMITH_SEED gives one (N, or random for a new one;
# printed on every run).
set -u
cd "$(dirname "$0")/.."
. tools/lib.sh

TOTAL=${SQLSMITH_SECONDS:-60}
SEED=$(ts_seed SQLSMITH_SEED 1)
command -v sqlsmith >/dev/null || { echo "sqlsmith is not installed (apt-get install sqlsmith)"; exit 1; }
DIR=$(mktemp -d /tmp/tssmith.XXXXXX)
status=0
finish() {
	ts_stop_server "$DIR"
	if [ $status -eq 0 ]; then
		rm -rf "$DIR"
	else
		echo "sqlsmith: statements (*.sql) and server log kept in $DIR"
	fi
}
trap finish EXIT
ts_start_server "$DIR" -c log_error_verbosity=verbose -c log_min_error_statement=error \
	-c "log_line_prefix='%m [%p] '" || { status=1; exit 1; }
export PGOPTIONS="-c client_min_messages=warning"
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

q -d postgres -c "CREATE DATABASE fz" >/dev/null || { status=1; exit 1; }
q -d fz -c "CREATE EXTENSION tablestore" -o /dev/null -f test/fuzz_fixture.sql || { status=1; exit 1; }
# the odd relations the extension let the fixture make (ideally none)
q -d fz -c "SELECT 'fixture: relations in tablestore_data: ' || string_agg(relname, ' ' ORDER BY relname) FROM pg_class WHERE relnamespace = 'tablestore_data'::regnamespace AND relkind IN ('r', 'p', 'v')"
q -d fz <<'SQL' >/dev/null || { status=1; exit 1; }
-- regclass values for verify_index: the tskey indexes, a btree, a table, a sequence
CREATE TABLE fz.relations (rel regclass);
CREATE SEQUENCE fz.seq;
INSERT INTO fz.relations SELECT indexrelid FROM pg_index WHERE indrelid IN (SELECT oid FROM pg_class WHERE relnamespace = 'tablestore_data'::regnamespace);
INSERT INTO fz.relations VALUES ('tablestore.tables_pkey'), ('tablestore_data.alpha'), ('fz.seq'), ('tablestore.tables');
GRANT SELECT ON fz.relations TO PUBLIC;
-- sqlsmith reads "pg_proc" unqualified: this view shadows it where fz comes
-- before pg_catalog on the search_path
CREATE VIEW fz.pg_proc AS
	SELECT * FROM pg_catalog.pg_proc p
	WHERE p.pronamespace IN ('tablestore'::regnamespace, 'fz'::regnamespace)
		OR (p.pronamespace = 'pg_catalog'::regnamespace AND p.proname IN (
			'repeat', 'concat', 'lpad', 'rpad', 'left', 'right', 'substr', 'replace', 'upper', 'lower', 'chr',
			'md5', 'btrim', 'reverse', 'textcat', 'quote_literal', 'quote_ident', 'translate', 'split_part',
			'jsonb_set', 'jsonb_insert', 'jsonb_strip_nulls', 'jsonb_object_field', 'jsonb_array_element',
			'jsonb_concat', 'jsonb_delete', 'jsonb_build_array', 'to_jsonb', 'jsonb_typeof', 'jsonb_agg',
			'jsonb_object_agg', 'string_agg', 'count', 'max', 'min', 'length', 'octet_length', 'int4', 'int8',
			'text', 'jsonb_pretty', 'encode', 'decode', 'convert_to', 'gen_random_uuid', 'now', 'to_regclass',
			'jsonb_object_field_text', 'array_to_string', 'format', 'initcap', 'ltrim', 'rtrim', 'overlay'));
GRANT SELECT ON fz.pg_proc TO PUBLIC;
SQL

# tablestore functions callable through sqlsmith (after the narrowing)
echo "sqlsmith: seed $SEED (SQLSMITH_SEED=$SEED repeats, SQLSMITH_SEED=random tries a new one), $TOTAL s; $(q -d fz -c "SET search_path = fz, pg_catalog" -c "SELECT count(*) FILTER (WHERE pronamespace = 'tablestore'::regnamespace AND NOT proretset) || ' tablestore functions, ' || count(*) || ' functions in the narrowed catalog' FROM pg_proc")"

total_q=0
total_ts=0
# phase NAME SECONDS SEED CONNINFO: one bounded sqlsmith run; stops early when
# the server log shows a crash
phase() {
	local name=$1 secs=$2 seed=$3 conn=$4
	local out="$DIR/$name.sql" err="$DIR/$name.err"
	(cd "$DIR" && exec timeout -s INT "$secs" sqlsmith --target="$conn" --exclude-catalog --seed="$seed" \
		--dump-all-queries >"$out" 2>"$err") &
	local pid=$! t=0
	while kill -0 $pid 2>/dev/null; do
		sleep 1	# the period of a watch over the log, not a wait
		t=$((t + 1))
		if grep -q "terminated by signal" "$DIR/server.log"; then
			echo "sqlsmith $name: the server crashed after ${t}s, stopping"
			kill -INT $pid 2>/dev/null
			break
		fi
	done
	wait $pid
	# sqlsmith prints each statement followed by ";" at the end of a line
	local n ts
	n=$(grep -c ';$' "$out")
	ts=$(grep -E ';$|tablestore\.[a-z_]+\(|fz\.[a-z_]+\(' "$out" | awk '/tablestore\.[a-z_]+\(|fz\.[a-z_]+\(/ {hit=1} /;$/ {if (hit) c++; hit=0} END {print c+0}')
	echo "sqlsmith $name: $n statements in ${secs}s, $ts of them calling tablestore (directly or through a wrapper)"
	echo "  calls: $(grep -oE 'tablestore\.[a-z_]+\(|fz\.[a-z_]+\(' "$out" | sort | uniq -c | sort -rn | awk '{printf "%s %s ", $2, $1}' | tr -d '(')"
	grep -q "^Loading routines...done" "$err" || { echo "sqlsmith $name did not start:"; tail -n 20 "$err"; status=1; }
	total_q=$((total_q + n))
	total_ts=$((total_ts + ts))
}

narrow="options='-c search_path=fz,pg_catalog'"
phase user-narrowed $((TOTAL / 2)) "$SEED" "host=$DIR dbname=fz user=ts_fz_user $narrow"
phase user-whole-catalog $((TOTAL / 4)) $((SEED + 1)) "host=$DIR dbname=fz user=ts_fz_user"
phase superuser-narrowed $((TOTAL - TOTAL / 2 - TOTAL / 4)) $((SEED + 2)) "host=$DIR dbname=fz user=postgres $narrow"
echo "sqlsmith: $total_q statements, $total_ts calling tablestore (seed $SEED)"

python3 test/logcheck.py "$DIR/server.log" src || status=1
exit $status
