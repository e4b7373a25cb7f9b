# test/t/003_dump_restore.pl: tables, entities, stored access policies,
# property indexes and service properties survive pg_dump and
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
SELECT tablestore.set_table_acl('AuditLog', '[{"Id": "audit", "Permission": "a"}]');
SELECT tablestore.set_table_ttl('AuditLog', 86400);
SELECT tablestore.create_property_index('Employees', 'Age', 'Int32');
SELECT tablestore.create_property_index('Employees', 'Name', 'String');
SELECT tablestore.create_table('tab' || i) FROM generate_series(1, 20) i;
SELECT tablestore.set_table_acl('tab' || i, format('[{"Id": "p%s"}]', i)::jsonb) FROM generate_series(1, 20) i;
});
my $dump = PostgreSQL::Test::Utils::tempdir() . '/src.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr('src'), '-f', $dump ], 'pg_dump');
$node->command_ok([ 'pg_restore', '-d', $node->connstr('dst'), $dump ], 'pg_restore');

# A parallel restore loads the catalogs' data in any order: the stored
# access policies (tablestore.table_acl) must not depend on the tables'
# catalog being loaded first (a foreign key lost them all, 1 run in 3)
my $acls = q{SELECT count(*) || ' ' || md5(string_agg(relation_name || acl::text, '|' ORDER BY relation_name))
	FROM tablestore.table_acl};
my $want = $node->safe_psql('src', $acls);
for my $i (1 .. 5)
{
	$node->safe_psql('postgres', "CREATE DATABASE par$i");
	$node->command_ok([ 'pg_restore', '-j', '4', '-d', $node->connstr("par$i"), $dump ], "pg_restore -j 4, run $i");
	is($node->safe_psql("par$i", $acls), $want, "pg_restore -j 4, run $i: every stored access policy");
	$node->safe_psql('postgres', "DROP DATABASE par$i");
}

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
	# a table's time to live (catalog tablestore.tables)
	q{SELECT tablestore.get_table_ttl('AuditLog')},
	# and the account's service properties
	q{SELECT tablestore.get_service_properties()->'Cors' WHERE tablestore.get_service_properties()->'Cors' <> '[]'},
	# the property indexes (catalog tablestore.property_indexes and the
	# indexes themselves), valid, and used by a selective filter
	q{SELECT string_agg(concat_ws(' ', table_name, property, edm_type, index_name, valid), ',' ORDER BY property)
		FROM tablestore.list_property_indexes() WHERE valid},
	q{SELECT tablestore.explain_query('Employees', 'Age eq 30')->>'access'
		|| ' ' || md5(string_agg(e::text, '|')) FROM tablestore.query_entities('Employees', 'Age eq 30 or Age ge 68') e})
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
is($node->safe_psql('dst', q{SELECT string_agg(t, ',' ORDER BY t) FROM tablestore.list_tables() t WHERE t !~ '^tab[0-9]'}),
	'Employees', 'delete_table of a restored table');
# a table's policies go with it (delete_table, DROP TABLE), and a table
# created again, even over a policy row left behind, starts with none
$node->safe_psql('dst', q{SELECT tablestore.delete_table('tab1'); DROP TABLE tablestore_data.tab2;
	SELECT tablestore.create_table('AuditLog')});
is($node->safe_psql('dst', q{SELECT string_agg(relation_name, ',') FROM tablestore.table_acl
	WHERE relation_name IN ('tab1', 'tab2', 'auditlog')}), '', 'policies removed with their tables');
$node->safe_psql('dst', q{ALTER TABLE tablestore.tables DISABLE TRIGGER USER; SELECT tablestore.delete_table('tab3');
	ALTER TABLE tablestore.tables ENABLE TRIGGER USER; SELECT tablestore.create_table('tab3')});
is($node->safe_psql('dst', q{SELECT tablestore.get_table_acl('tab3')::text}), '[]',
	'a table created again over a left-behind policy row starts with none');
$node->stop;
done_testing();
