-- Every error a caller can cause through the table and entity functions
-- raises the SQLSTATE of its service code (tablestore.error_codes()), and
-- every limit holds exactly at the limit and fails one over it.
BEGIN;
SELECT plan(88);

CREATE FUNCTION pg_temp.st(code text) RETURNS text LANGUAGE sql
	AS $$ SELECT sqlstate FROM tablestore.error_codes() WHERE error_codes.code = st.code $$;
CREATE FUNCTION pg_temp.ent(extra jsonb) RETURNS jsonb LANGUAGE sql
	AS $$ SELECT '{"PartitionKey": "p", "RowKey": "r"}'::jsonb || extra $$;

-- the code table itself
SELECT is((SELECT count(*) FROM tablestore.error_codes())::int, 22, 'error_codes() lists 22 codes');
SELECT is((SELECT count(DISTINCT sqlstate) FROM tablestore.error_codes())::int, 22, 'each code has its own SQLSTATE');
SELECT is(pg_temp.st('EntityAlreadyExists'), '23505', 'EntityAlreadyExists is unique_violation');
SELECT is(pg_temp.st('TableNotFound'), '42P01', 'TableNotFound is undefined_table');
SELECT is((SELECT service_message FROM tablestore.error_codes() WHERE code = 'ResourceNotFound'),
	'The specified resource does not exist.', 'the service message is kept');

SELECT lives_ok($$SELECT tablestore.create_table('Errs')$$, 'create_table');

-- tables
SELECT throws_ok($$SELECT tablestore.create_table('Errs')$$, pg_temp.st('TableAlreadyExists'), NULL, 'TableAlreadyExists');
SELECT throws_ok($$SELECT tablestore.create_table('ERRS')$$, pg_temp.st('TableAlreadyExists'), NULL, 'TableAlreadyExists, other case');
SELECT throws_ok($$SELECT tablestore.create_table('invalid_name')$$, pg_temp.st('InvalidResourceName'), NULL, 'InvalidResourceName: underscore');
SELECT throws_ok($$SELECT tablestore.create_table('1abc')$$, pg_temp.st('InvalidResourceName'), NULL, 'InvalidResourceName: digit first');
SELECT throws_ok($$SELECT tablestore.create_table('ab-c')$$, pg_temp.st('InvalidResourceName'), NULL, 'InvalidResourceName: dash');
SELECT throws_ok($$SELECT tablestore.create_table('Tabl€')$$, pg_temp.st('InvalidResourceName'), NULL, 'InvalidResourceName: non-ASCII');
SELECT throws_ok($$SELECT tablestore.create_table('ab')$$, pg_temp.st('OutOfRangeInput'), NULL, 'OutOfRangeInput: 2 characters');
SELECT throws_ok($$SELECT tablestore.create_table(repeat('a', 64))$$, pg_temp.st('OutOfRangeInput'), NULL, 'OutOfRangeInput: 64 characters');
SELECT lives_ok($$SELECT tablestore.create_table('a' || repeat('b', 62))$$, '63 characters is fine');
SELECT lives_ok($$SELECT tablestore.create_table('abc')$$, '3 characters is fine');
SELECT throws_ok($$SELECT tablestore.create_table('tables')$$, pg_temp.st('InvalidInput'), NULL, 'reserved name tables');
SELECT throws_ok($$SELECT tablestore.create_table('TABLES')$$, pg_temp.st('InvalidInput'), NULL, 'reserved name TABLES');
SELECT throws_ok($$SELECT tablestore.delete_table('Nothere')$$, pg_temp.st('ResourceNotFound'), NULL, 'delete_table of a missing table');
SELECT throws_ok($$SELECT tablestore.insert_entity('Nothere', pg_temp.ent('{}'))$$, pg_temp.st('TableNotFound'), NULL, 'TableNotFound');
SELECT throws_ok($$SELECT tablestore.get_entity('no_such', 'p', 'r')$$, pg_temp.st('TableNotFound'), NULL, 'TableNotFound for an invalid name');
SELECT throws_ok($$SELECT tablestore.insert_entity(NULL, pg_temp.ent('{}'))$$, pg_temp.st('InvalidInput'), NULL, 'null table name');

-- entity existence and ETags
SELECT lives_ok($$SELECT tablestore.insert_entity('Errs', pg_temp.ent('{"A": 1}'))$$, 'insert');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', pg_temp.ent('{}'))$$, pg_temp.st('EntityAlreadyExists'), NULL, 'EntityAlreadyExists');
SELECT throws_ok($$SELECT tablestore.get_entity('Errs', 'p', 'x')$$, pg_temp.st('ResourceNotFound'), NULL, 'get of a missing entity');
SELECT throws_ok($$SELECT tablestore.update_entity('Errs', '{"PartitionKey": "p", "RowKey": "x"}')$$, pg_temp.st('ResourceNotFound'), NULL, 'update of a missing entity');
SELECT throws_ok($$SELECT tablestore.merge_entity('Errs', '{"PartitionKey": "p", "RowKey": "x"}')$$, pg_temp.st('ResourceNotFound'), NULL, 'merge of a missing entity');
SELECT throws_ok($$SELECT tablestore.delete_entity('Errs', 'p', 'x')$$, pg_temp.st('ResourceNotFound'), NULL, 'delete of a missing entity');
CREATE TEMP TABLE stale AS SELECT tablestore.get_entity('Errs', 'p', 'r')->>'odata.etag' AS etag;
SELECT lives_ok($$SELECT tablestore.merge_entity('Errs', pg_temp.ent('{"A": 2}'), (SELECT etag FROM stale))$$, 'merge with the current ETag');
SELECT throws_ok($$SELECT tablestore.update_entity('Errs', pg_temp.ent('{}'), (SELECT etag FROM stale))$$, pg_temp.st('UpdateConditionNotSatisfied'), NULL, 'update with a stale ETag');
SELECT throws_ok($$SELECT tablestore.merge_entity('Errs', pg_temp.ent('{}'), (SELECT etag FROM stale))$$, pg_temp.st('UpdateConditionNotSatisfied'), NULL, 'merge with a stale ETag');
SELECT throws_ok($$SELECT tablestore.delete_entity('Errs', 'p', 'r', (SELECT etag FROM stale))$$, pg_temp.st('UpdateConditionNotSatisfied'), NULL, 'delete with a stale ETag');
SELECT is((tablestore.get_entity('Errs', 'p', 'r')->>'A')::int, 2, 'the failed writes changed nothing');
SELECT throws_ok($$SELECT tablestore.update_entity('Errs', pg_temp.ent('{}'), 'W/"0x8D1"')$$, pg_temp.st('UpdateConditionNotSatisfied'), NULL, 'an entity tag that is not ours: the condition fails');
SELECT throws_ok($$SELECT tablestore.update_entity('Errs', pg_temp.ent('{}'), 'W/0x8D1')$$, pg_temp.st('InvalidInput'), NULL, 'not an entity tag: malformed');
SELECT throws_ok($$SELECT tablestore.delete_entity('Errs', 'p', 'r', NULL)$$, pg_temp.st('InvalidInput'), NULL, 'null if_match');

-- malformed entities
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', '[1]')$$, pg_temp.st('InvalidInput'), NULL, 'array entity');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', '"x"')$$, pg_temp.st('InvalidInput'), NULL, 'scalar entity');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', pg_temp.ent('{"N": {"a": 1}}'))$$, pg_temp.st('InvalidInput'), NULL, 'nested object value');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', pg_temp.ent('{"N": [1]}'))$$, pg_temp.st('InvalidInput'), NULL, 'array value');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', pg_temp.ent('{"N": 1, "N@odata.type": "Edm.Single"}'))$$, pg_temp.st('InvalidInput'), NULL, 'unrecognized type');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', pg_temp.ent('{"N": 1, "N@odata.type": 5}'))$$, pg_temp.st('InvalidInput'), NULL, 'annotation not a string');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', pg_temp.ent('{"N": 2147483648}'))$$, pg_temp.st('InvalidInput'), NULL, 'Int32 out of range');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', pg_temp.ent('{"N": "abc", "N@odata.type": "Edm.Int64"}'))$$, pg_temp.st('InvalidInput'), NULL, 'Int64 not a number');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', pg_temp.ent('{"N": "9223372036854775808", "N@odata.type": "Edm.Int64"}'))$$, pg_temp.st('InvalidInput'), NULL, 'Int64 out of range');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', pg_temp.ent('{"N": "c9da6455-213d-42c9-9a79-3e9149a5783", "N@odata.type": "Edm.Guid"}'))$$, pg_temp.st('InvalidInput'), NULL, 'bad Guid');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', pg_temp.ent('{"N": "AQI*", "N@odata.type": "Edm.Binary"}'))$$, pg_temp.st('InvalidInput'), NULL, 'bad base64');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', pg_temp.ent('{"N": "2020-01-01 00:00:00", "N@odata.type": "Edm.DateTime"}'))$$, pg_temp.st('InvalidInput'), NULL, 'bad DateTime form');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', pg_temp.ent('{"N": true, "N@odata.type": "Edm.String"}'))$$, pg_temp.st('InvalidInput'), NULL, 'Boolean declared String');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', pg_temp.ent('{"N": "1600-12-31T23:59:59Z", "N@odata.type": "Edm.DateTime"}'))$$, pg_temp.st('OutOfRangeInput'), NULL, 'DateTime before 1601');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', pg_temp.ent('{"N": "0001-01-01T00:00:00Z", "N@odata.type": "Edm.DateTime"}'))$$, pg_temp.st('OutOfRangeInput'), NULL, 'DateTime 0001-01-01');

-- keys
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', '{"RowKey": "r"}')$$, pg_temp.st('PropertiesNeedValue'), NULL, 'missing PartitionKey');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', '{"PartitionKey": "p"}')$$, pg_temp.st('PropertiesNeedValue'), NULL, 'missing RowKey');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', '{"PartitionKey": null, "RowKey": "r"}')$$, pg_temp.st('PropertiesNeedValue'), NULL, 'null PartitionKey');
SELECT throws_ok($$SELECT tablestore.get_entity('Errs', NULL, 'r')$$, pg_temp.st('PropertiesNeedValue'), NULL, 'null key argument');
SELECT throws_ok(format($$SELECT tablestore.insert_entity('Errs', jsonb_build_object('PartitionKey', %L, 'RowKey', 'r'))$$, 'a' || c),
	pg_temp.st('OutOfRangeInput'), NULL, format('forbidden key character U+%s', lpad(to_hex(ascii(c)), 4, '0')))
	FROM unnest(ARRAY['/', '\', '#', '?', E'\t', E'\n', chr(1), chr(31), chr(127), chr(159)]) c;
SELECT lives_ok($$SELECT tablestore.insert_entity('Errs', jsonb_build_object('PartitionKey', repeat('k', 512), 'RowKey', 'r'))$$, 'PartitionKey of 512 units');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', jsonb_build_object('PartitionKey', repeat('k', 513), 'RowKey', 'r'))$$, pg_temp.st('PropertyValueTooLarge'), NULL, 'PartitionKey of 513 units');
SELECT lives_ok($$SELECT tablestore.insert_entity('Errs', jsonb_build_object('PartitionKey', 'p', 'RowKey', repeat('😀', 256)))$$, 'RowKey of 256 supplementary characters (512 units)');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', jsonb_build_object('PartitionKey', 'p', 'RowKey', repeat('😀', 257)))$$, pg_temp.st('PropertyValueTooLarge'), NULL, 'RowKey of 257 supplementary characters');
SELECT lives_ok($$SELECT tablestore.insert_entity('Errs', jsonb_build_object('PartitionKey', repeat('漢', 512), 'RowKey', repeat('字', 512)))$$, 'the longest keys, which a btree could not hold, are accepted');

-- property names
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', pg_temp.ent('{"1abc": 1}'))$$, pg_temp.st('PropertyNameInvalid'), NULL, 'name starting with a digit');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', pg_temp.ent('{"a-b": 1}'))$$, pg_temp.st('PropertyNameInvalid'), NULL, 'name with a dash');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', pg_temp.ent('{"a b": 1}'))$$, pg_temp.st('PropertyNameInvalid'), NULL, 'name with a space');
SELECT lives_ok($$SELECT tablestore.insert_entity('Errs', jsonb_build_object('PartitionKey', 'n', 'RowKey', '255', repeat('n', 255), 1))$$, 'name of 255 characters');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', jsonb_build_object('PartitionKey', 'n', 'RowKey', '256', repeat('n', 256), 1))$$, pg_temp.st('PropertyNameTooLong'), NULL, 'name of 256 characters');

-- value sizes
SELECT lives_ok($$SELECT tablestore.insert_entity('Errs', jsonb_build_object('PartitionKey', 's', 'RowKey', '1', 'S', repeat('x', 32768)))$$, 'String of 32,768 units');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', jsonb_build_object('PartitionKey', 's', 'RowKey', '2', 'S', repeat('x', 32769)))$$, pg_temp.st('PropertyValueTooLarge'), NULL, 'String of 32,769 units');
SELECT lives_ok($$SELECT tablestore.insert_entity('Errs', jsonb_build_object('PartitionKey', 's', 'RowKey', '3', 'S', repeat('😀', 16384)))$$, 'String of 16,384 supplementary characters');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', jsonb_build_object('PartitionKey', 's', 'RowKey', '4', 'S', repeat('😀', 16385)))$$, pg_temp.st('PropertyValueTooLarge'), NULL, 'String of 16,385 supplementary characters');
SELECT lives_ok($$SELECT tablestore.insert_entity('Errs', jsonb_build_object('PartitionKey', 's', 'RowKey', '5', 'B@odata.type', 'Edm.Binary',
	'B', translate(encode(decode(repeat('ab', 65536), 'hex'), 'base64'), E'\n', '')))$$, 'Binary of 65,536 bytes');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', jsonb_build_object('PartitionKey', 's', 'RowKey', '6', 'B@odata.type', 'Edm.Binary',
	'B', translate(encode(decode(repeat('ab', 65537), 'hex'), 'base64'), E'\n', '')))$$, pg_temp.st('PropertyValueTooLarge'), NULL, 'Binary of 65,537 bytes');

-- property count
SELECT lives_ok($$SELECT tablestore.insert_entity('Errs', '{"PartitionKey": "c", "RowKey": "252"}'::jsonb ||
	(SELECT jsonb_object_agg('p' || i, i) FROM generate_series(1, 252) i))$$, '252 properties');
SELECT throws_ok($$SELECT tablestore.insert_entity('Errs', '{"PartitionKey": "c", "RowKey": "253"}'::jsonb ||
	(SELECT jsonb_object_agg('p' || i, i) FROM generate_series(1, 253) i))$$, pg_temp.st('TooManyProperties'), NULL, '253 properties');
SELECT throws_ok($$SELECT tablestore.merge_entity('Errs', '{"PartitionKey": "c", "RowKey": "252", "extra": 1}')$$,
	pg_temp.st('TooManyProperties'), NULL, 'a merge that would make 253 properties');

-- entity size: 4 + 2*(1 + 1) + 32 strings named p01..p32 (18 + 2*len each)
--   = 8 + 576 + 2 * 523952 = 1,048,488 exactly; one byte over adds a Boolean
--   (8 + 2 + 1 = 11) and takes 5 characters off the last string (-10)
CREATE FUNCTION pg_temp.sized(lastlen int, with_bool bool) RETURNS jsonb LANGUAGE sql AS $$
	SELECT '{"PartitionKey": "p", "RowKey": "z"}'::jsonb
		|| (SELECT jsonb_object_agg('p' || lpad(i::text, 2, '0'), repeat('x', CASE WHEN i = 32 THEN lastlen ELSE 16373 END))
			FROM generate_series(1, 32) i)
		|| CASE WHEN with_bool THEN '{"b": true}'::jsonb ELSE '{}'::jsonb END $$;
SELECT lives_ok($$SELECT tablestore.insert_entity('Errs', pg_temp.sized(16389, false))$$, 'entity of exactly 1,048,488 bytes');
SELECT throws_ok($$SELECT tablestore.insert_or_replace_entity('Errs', pg_temp.sized(16384, true))$$, pg_temp.st('EntityTooLarge'), NULL, 'entity of 1,048,489 bytes');
SELECT throws_ok($$SELECT tablestore.merge_entity('Errs', '{"PartitionKey": "p", "RowKey": "z", "b": true}')$$, pg_temp.st('EntityTooLarge'), NULL, 'a merge that would pass the size limit');

-- a select list with an empty name
SELECT throws_ok($$SELECT tablestore.get_entity('Errs', 'p', 'r', 'A,,B')$$, pg_temp.st('InvalidInput'), NULL, 'empty name in a select list');

SELECT * FROM finish();
ROLLBACK;
