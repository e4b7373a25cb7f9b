-- Every type survives every round trip exactly, with edge values; output
-- annotations follow the service's rules; keys of every kind work.
BEGIN;
SELECT plan(47);

SELECT lives_ok($$SELECT tablestore.create_table('Types')$$, 'create_table');

-- properties as stored and returned, without system properties
CREATE FUNCTION pg_temp.props(e jsonb) RETURNS jsonb LANGUAGE sql
	AS $$ SELECT e - 'PartitionKey' - 'RowKey' - 'Timestamp' - 'odata.etag' $$;
-- insert one property on its own entity and return what get_entity gives back
CREATE FUNCTION pg_temp.back(rk text, prop jsonb) RETURNS jsonb LANGUAGE sql AS $$
	SELECT tablestore.insert_entity('Types', jsonb_build_object('PartitionKey', 'rt', 'RowKey', rk) || prop);
	SELECT pg_temp.props(tablestore.get_entity('Types', 'rt', rk)) $$;

SELECT is(pg_temp.back('i32min', '{"V": -2147483648}'), '{"V": -2147483648}', 'Int32 minimum, unannotated');
SELECT is(pg_temp.back('i32max', '{"V": 2147483647}'), '{"V": 2147483647}', 'Int32 maximum');
SELECT is(pg_temp.back('i32ann', '{"V": "7", "V@odata.type": "Edm.Int32"}'), '{"V": 7}', 'annotated Int32 given as a string');
SELECT is(pg_temp.back('i64min', '{"V": "-9223372036854775808", "V@odata.type": "Edm.Int64"}'),
	'{"V": "-9223372036854775808", "V@odata.type": "Edm.Int64"}', 'Int64 minimum');
SELECT is(pg_temp.back('i64max', '{"V": "9223372036854775807", "V@odata.type": "Edm.Int64"}'),
	'{"V": "9223372036854775807", "V@odata.type": "Edm.Int64"}', 'Int64 maximum');
SELECT is(pg_temp.back('i64small', '{"V": "5", "V@odata.type": "Edm.Int64"}'),
	'{"V": "5", "V@odata.type": "Edm.Int64"}', 'a small Int64 stays Int64');
SELECT is(pg_temp.back('d2', '{"V": 2.0}'), '{"V": 2, "V@odata.type": "Edm.Double"}', 'integral Double is annotated');
SELECT is(pg_temp.back('d01', '{"V": 0.1}'), '{"V": 0.1}', 'Double 0.1, unannotated');
SELECT is(pg_temp.back('dbig', '{"V": 1e300, "V@odata.type": "Edm.Double"}')->'V@odata.type', '"Edm.Double"', 'Double 1e300 is annotated (shown without a point)');
SELECT is((pg_temp.back('dbig2', '{"V": 1e300, "V@odata.type": "Edm.Double"}')->>'V')::float8, 1e300::float8, 'Double 1e300 value');
SELECT is((pg_temp.back('dtiny', '{"V": -1e-300}')->>'V')::float8, -1e-300::float8, 'Double -1e-300');
SELECT is((pg_temp.back('dden', '{"V": 5e-324}')->>'V')::float8, 5e-324::float8, 'Double 5e-324 (denormal)');
SELECT is((pg_temp.back('dpi', '{"V": 3.141592653589793}')->>'V')::float8, pi(), 'Double pi, all digits');
SELECT is(pg_temp.back('dnan', '{"V": "NaN", "V@odata.type": "Edm.Double"}'), '{"V": "NaN", "V@odata.type": "Edm.Double"}', 'NaN');
SELECT is(pg_temp.back('dinf', '{"V": "Infinity", "V@odata.type": "Edm.Double"}'), '{"V": "Infinity", "V@odata.type": "Edm.Double"}', 'Infinity');
SELECT is(pg_temp.back('dninf', '{"V": "-Infinity", "V@odata.type": "Edm.Double"}'), '{"V": "-Infinity", "V@odata.type": "Edm.Double"}', '-Infinity');
SELECT is(pg_temp.back('dnzero', '{"V": "-0", "V@odata.type": "Edm.Double"}'), '{"V": "-0", "V@odata.type": "Edm.Double"}', '-0 keeps its sign');
SELECT is(pg_temp.back('dt1601', '{"V": "1601-01-01T00:00:00Z", "V@odata.type": "Edm.DateTime"}'),
	'{"V": "1601-01-01T00:00:00Z", "V@odata.type": "Edm.DateTime"}', 'DateTime minimum');
SELECT is(pg_temp.back('dt9999', '{"V": "9999-12-31T23:59:59.9999999Z", "V@odata.type": "Edm.DateTime"}'),
	'{"V": "9999-12-31T23:59:59.9999999Z", "V@odata.type": "Edm.DateTime"}', 'DateTime maximum, 7 digits');
SELECT is(pg_temp.back('dt7', '{"V": "2013-08-09T18:55:48.3402073Z", "V@odata.type": "Edm.DateTime"}')->>'V',
	'2013-08-09T18:55:48.3402073Z', 'DateTime with 7 fractional digits');
SELECT is(pg_temp.back('dttrim', '{"V": "2012-10-02T03:03:15.5000000Z", "V@odata.type": "Edm.DateTime"}')->>'V',
	'2012-10-02T03:03:15.5Z', 'trailing zeros trimmed');
SELECT is(pg_temp.back('dtnoz', '{"V": "2012-10-02T03:03:15", "V@odata.type": "Edm.DateTime"}')->>'V',
	'2012-10-02T03:03:15Z', 'DateTime without Z is UTC');
SELECT is(pg_temp.back('dtleap', '{"V": "2000-02-29T00:00:00Z", "V@odata.type": "Edm.DateTime"}')->>'V',
	'2000-02-29T00:00:00Z', 'leap day');
SELECT is(pg_temp.back('guid', '{"V": "C9DA6455-213D-42C9-9A79-3E9149A57833", "V@odata.type": "Edm.Guid"}'),
	'{"V": "c9da6455-213d-42c9-9a79-3e9149a57833", "V@odata.type": "Edm.Guid"}', 'Guid comes back in lower case');
SELECT is(pg_temp.back('binempty', '{"V": "", "V@odata.type": "Edm.Binary"}'), '{"V": "", "V@odata.type": "Edm.Binary"}', 'empty Binary');
SELECT is(pg_temp.back('bin', '{"V": "AAEC/w==", "V@odata.type": "Edm.Binary"}'), '{"V": "AAEC/w==", "V@odata.type": "Edm.Binary"}', 'Binary bytes 00 01 02 ff');
SELECT is(pg_temp.back('strempty', '{"V": ""}'), '{"V": ""}', 'empty String');
SELECT is(pg_temp.back('strann', '{"V": "x", "V@odata.type": "Edm.String"}'), '{"V": "x"}', 'annotated String loses the optional annotation');
SELECT is(pg_temp.back('strnum', '{"V": "123"}'), '{"V": "123"}', 'a numeric-looking String stays a String');
SELECT is(pg_temp.back('struni', '{"V": "Zoë Ωμέγα 漢字 😀"}'), '{"V": "Zoë Ωμέγα 漢字 😀"}', 'non-ASCII and supplementary-plane String');
SELECT is(pg_temp.back('bool', '{"T": true, "F": false}'), '{"F": false, "T": true}', 'Booleans, unannotated');
SELECT is(pg_temp.back('null', '{"V": null, "W": 1}'), '{"W": 1}', 'null means absent');

-- feeding every returned entity back in stores exactly the same properties
-- (read through the API, so that the test runs through a router too)
SELECT is((SELECT count(*) FROM tablestore.query_entities('Types') t
	WHERE pg_temp.props(tablestore.insert_or_replace_entity('Types',
		tablestore.get_entity('Types', t->>'PartitionKey', t->>'RowKey'))) IS DISTINCT FROM pg_temp.props(t))::int,
	0, 'every entity fed back through insert_or_replace_entity is unchanged');
SELECT is((SELECT count(*) FROM tablestore.query_entities('Types') t
	WHERE pg_temp.props(tablestore.update_entity('Types',
		tablestore.get_entity('Types', t->>'PartitionKey', t->>'RowKey'))) IS DISTINCT FROM pg_temp.props(t))::int,
	0, 'and through update_entity');
SELECT is((SELECT count(*) FROM tablestore.query_entities('Types') t
	WHERE pg_temp.props(tablestore.merge_entity('Types',
		tablestore.get_entity('Types', t->>'PartitionKey', t->>'RowKey'))) IS DISTINCT FROM pg_temp.props(t))::int,
	0, 'and through merge_entity');

-- keys: empty, non-ASCII, supplementary plane, quotes
SELECT is(tablestore.insert_entity('Types', '{"PartitionKey": "", "RowKey": ""}')->>'RowKey', '', 'empty keys');
SELECT is(tablestore.get_entity('Types', '', '')->>'PartitionKey', '', 'get with empty keys');
SELECT is(tablestore.insert_entity('Types', '{"PartitionKey": "Ünïcödé", "RowKey": "漢字"}')->>'RowKey', '漢字', 'non-ASCII keys');
SELECT is(tablestore.get_entity('Types', 'Ünïcödé', '漢字')->>'PartitionKey', 'Ünïcödé', 'get with non-ASCII keys');
SELECT is(tablestore.insert_entity('Types', '{"PartitionKey": "😀", "RowKey": "𝄞"}')->>'RowKey', '𝄞', 'supplementary-plane keys');
SELECT lives_ok($$SELECT tablestore.delete_entity('Types', '😀', '𝄞')$$, 'delete with supplementary-plane keys');
SELECT is(tablestore.insert_entity('Types', $${"PartitionKey": "O'Brien", "RowKey": "a\"b"}$$)->>'PartitionKey', 'O''Brien', 'quotes in keys');
SELECT is(tablestore.get_entity('Types', 'O''Brien', 'a"b')->>'RowKey', 'a"b', 'get with quotes in keys');

-- Timestamp and odata.etag
SELECT matches(tablestore.get_entity('Types', 'rt', 'bool')->>'Timestamp', '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,7})?Z$', 'Timestamp form');
SELECT is((SELECT e->>'odata.etag' FROM tablestore.get_entity('Types', 'rt', 'bool') e),
	(SELECT 'W/"datetime''' || replace(e->>'Timestamp', ':', '%3A') || '''"' FROM tablestore.get_entity('Types', 'rt', 'bool') e),
	'the ETag is the Timestamp');
SELECT is(tablestore.insert_entity('Types', '{"PartitionKey": "t", "RowKey": "1", "Timestamp": "2000-01-01T00:00:00Z",
	"odata.etag": "W/\"x\"", "odata.metadata": "m"}') - 'Timestamp' - 'odata.etag', '{"PartitionKey": "t", "RowKey": "1"}',
	'a client-sent Timestamp and odata.* members are ignored');

SELECT * FROM finish();
ROLLBACK;
