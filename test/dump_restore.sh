#!/usr/bin/env bash
# test/dump_restore.sh: tables and entities survive pg_dump / pg_restore.
# Runs against the server of PGHOST (tools/run-tests.sh starts one).
set -eu
src=ts_dump_src dst=ts_dump_dst
dump=$(mktemp /tmp/tsdump.XXXXXX)
trap 'rm -f "$dump"' EXIT
export PGOPTIONS="-c client_min_messages=warning"
psql() { command psql -X -q -v ON_ERROR_STOP=1 "$@"; }

psql -d postgres -c "DROP DATABASE IF EXISTS $src" -c "DROP DATABASE IF EXISTS $dst" -c "CREATE DATABASE $src" -c "CREATE DATABASE $dst"
psql -d $src -o /dev/null <<'SQL'
CREATE EXTENSION tablestore;
SELECT tablestore.create_table('Employees');
SELECT tablestore.create_table('AuditLog');
SELECT tablestore.insert_entity('Employees', jsonb_build_object(
	'PartitionKey', 'Sales', 'RowKey', lpad(i::text, 5, '0'), 'Age', 20 + i,
	'Big', (i * 1000000000000)::text, 'Big@odata.type', 'Edm.Int64',
	'When', '2020-01-01T00:00:00.1234567Z', 'When@odata.type', 'Edm.DateTime',
	'Rate', 1.0, 'Name', 'Ünïcode 😀'))
	FROM generate_series(1, 50) i;
SELECT tablestore.insert_entity('AuditLog', '{"PartitionKey": "", "RowKey": "", "Empty": ""}');
SELECT tablestore.set_service_properties('{"Cors": [{"AllowedOrigins": "http://app", "AllowedMethods": "GET",
	"AllowedHeaders": "", "ExposedHeaders": "", "MaxAgeInSeconds": 60}]}');
SQL
pg_dump -Fc -d $src -f "$dump"
pg_restore -d $dst "$dump"

# The same tables, the same entities (Timestamps and ETags included).
q="SELECT string_agg(t, ',') FROM tablestore.list_tables() t"
e="SELECT md5(string_agg(tablestore.get_entity('Employees', 'Sales', lpad(i::text, 5, '0'))::text, '|'))
   FROM generate_series(1, 50) i"
# and the restored key index serves queries in key order
f="SELECT md5(string_agg(e::text, '|')) FROM tablestore.query_entities('Employees', 'PartitionKey eq ''Sales'' and RowKey ge ''00010'' and Age lt 60') e"
# and the account's service properties
for sql in "$q" "$e" "$f" "SELECT tablestore.get_entity('AuditLog', '', '')::text" \
	"SELECT tablestore.get_service_properties()->'Cors' WHERE tablestore.get_service_properties()->'Cors' <> '[]'"; do
	a=$(psql -At -d $src -c "$sql")
	b=$(psql -At -d $dst -c "$sql")
	if [ "$a" != "$b" ] || [ -z "$a" ]; then
		echo "dump/restore mismatch for: $sql"; echo " source:   $a"; echo " restored: $b"; exit 1
	fi
done
# The restored tables work: the catalog knows them, writes and errors behave.
psql -d $dst -o /dev/null <<'SQL'
SELECT tablestore.insert_entity('Employees', '{"PartitionKey": "Sales", "RowKey": "99999"}');
DO $$
BEGIN
	PERFORM tablestore.create_table('employees');
	RAISE EXCEPTION 'create_table of a restored table succeeded';
EXCEPTION WHEN duplicate_table THEN NULL;
END $$;
SELECT tablestore.delete_table('AuditLog');
SQL
psql -d postgres -c "DROP DATABASE $src" -c "DROP DATABASE $dst"
echo "dump/restore: ok (2 tables, 51 entities, the service properties)"
