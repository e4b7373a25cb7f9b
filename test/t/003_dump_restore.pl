# test/t/003_dump_restore.pl: tables, entities, stored access policies and
# service properties survive pg_dump and
# pg_restore into another database, and the restored tables work: the
# catalog knows them, the key index serves queries in key order, writes and
# errors behave as before.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TablestoreNode;

my $node = ts_node('dump');
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE src; CREATE DATABASE dst');
$node->safe_psql('src', q{
CREATE EXTENSION tablestore;
SELECT tablestore.create_table('Employees');
SELECT tablestore.create_table('AuditLog');
SELECT count(tablestore.insert_entity('Employees', jsonb_build_object(
	'PartitionKey', 'Sales', 'RowKey', lpad(i::text, 5, '0'), 'Age', 20 + i,
	'Big', (i * 1000000000000)::text, 'Big@odata.type', 'Edm.Int64',
	'When', '2020-01-01T00:00:00.1234567Z', 'When@odata.type', 'Edm.DateTime',
	'Rate', 1.0, 'Name', 'Ünïcode 😀')))
	FROM generate_series(1, 50) i;
SELECT tablestore.insert_entity('AuditLog', '{"PartitionKey": "", "RowKey": "", "Empty": ""}');
SELECT tablestore.set_service_properties('{"Cors": [{"AllowedOrigins": "http://app", "AllowedMethods": "GET",
	"AllowedHeaders": "", "ExposedHeaders": "", "MaxAgeInSeconds": 60}]}');
SELECT tablestore.set_table_acl('Employees', '[{"Id": "readers", "Expiry": "2099-01-01T00:00:00.1234567Z", "Permission": "r"}]');
});
my $dump = PostgreSQL::Test::Utils::tempdir() . '/src.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr('src'), '-f', $dump ], 'pg_dump');
$node->command_ok([ 'pg_restore', '-d', $node->connstr('dst'), $dump ], 'pg_restore');

# the same tables, the same entities (Timestamps and ETags included), and
# the restored key index serves queries in key order
for my $q (
	q{SELECT string_agg(t, ',') FROM tablestore.list_tables() t},
	q{SELECT md5(string_agg(tablestore.get_entity('Employees', 'Sales', lpad(i::text, 5, '0'))::text, '|'))
		FROM generate_series(1, 50) i},
	q{SELECT md5(string_agg(e::text, '|')) FROM tablestore.query_entities('Employees',
		'PartitionKey eq ''Sales'' and RowKey ge ''00010'' and Age lt 60') e},
	q{SELECT tablestore.get_entity('AuditLog', '', '')::text},
	# the stored access policies (catalog tablestore.table_acl)
	q{SELECT tablestore.get_table_acl('Employees')::text},
	# and the account's service properties
	q{SELECT tablestore.get_service_properties()->'Cors' WHERE tablestore.get_service_properties()->'Cors' <> '[]'})
{
	my $a = $node->safe_psql('src', $q);
	my $b = $node->safe_psql('dst', $q);
	ok($a ne '' && $a eq $b, "restored: $q");
}
# the restored tables work: writes, a duplicate name, delete_table
ok( $node->safe_psql('dst', q{SELECT tablestore.insert_entity('Employees',
		'{"PartitionKey": "Sales", "RowKey": "99999"}') ? 'odata.etag'}) eq 't',
	'a restored table takes writes');
my ($rc, $out, $err) = $node->psql('dst',
	"\\set VERBOSITY sqlstate\nSELECT tablestore.create_table('employees')");
like($err, qr/ERROR:  42P07/, 'create_table of a restored table: TableAlreadyExists');
$node->safe_psql('dst', q{SELECT tablestore.delete_table('AuditLog')});
is($node->safe_psql('dst', q{SELECT string_agg(t, ',') FROM tablestore.list_tables() t}),
	'Employees', 'delete_table of a restored table');
$node->stop;
done_testing();
