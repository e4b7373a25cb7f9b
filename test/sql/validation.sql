-- Validation and canonicalization of entities (validate_entity, which every
-- write uses): the edges of each fast path.  An input already in canonical
-- form is kept as it is, any other is brought into form; non-ASCII and
-- supplementary characters at each length limit; names that look alike;
-- annotations without values; values of the wrong JSON type; objects with
-- more members than jsonb's offset stride.  Every stored form must be,
-- byte for byte, what jsonb's own input function makes of its text.

-- val(e, members): the stored form of e (with members, the number of its
-- stored members instead: for large entities), marked if its bytes differ
-- from jsonb_in's for the same text; or the SQLSTATE and message of its
-- error
CREATE FUNCTION pg_temp.val(e jsonb, members boolean DEFAULT false) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	s jsonb;
	same boolean;
BEGIN
	s := tablestore.validate_entity(e);
	SELECT r1 *= r2 INTO same FROM (SELECT s) r1, (SELECT s::text::jsonb) r2;
	RETURN CASE WHEN members THEN 'ok: ' || (SELECT count(*) FROM jsonb_object_keys(s)) || ' members' ELSE s::text END
		|| CASE WHEN same THEN '' ELSE '  <-- NOT THE BYTES jsonb_in MAKES' END;
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
CREATE FUNCTION pg_temp.big(e jsonb) RETURNS text LANGUAGE sql AS $$ SELECT pg_temp.val(e, true) $$;
-- ent(extra): an entity with keys p and r and the members of extra
CREATE FUNCTION pg_temp.ent(extra jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE
	AS $$ SELECT '{"PartitionKey": "p", "RowKey": "r"}'::jsonb || extra $$;

-- Int64: canonical text kept, others rewritten, the wrong JSON types refused
SELECT t, pg_temp.val(pg_temp.ent(jsonb_build_object('N', t, 'N@odata.type', 'Edm.Int64')))
FROM (VALUES ('5'::jsonb), ('"5"'), ('"-5"'), ('"0"'), ('"+5"'), ('"007"'), ('"-0"'), ('"-007"'), ('"+0"'),
	('"9223372036854775807"'), ('"-9223372036854775808"'), ('"9223372036854775808"'), ('"-9223372036854775809"'),
	('5.0'), ('"5.0"'), ('""'), ('"-"'), ('" 5"'), ('"5 "'), ('true'), ('"1e3"'), ('-12')) v(t);

-- Int32: numbers in range kept as they are, text converted, the rest refused
SELECT t, pg_temp.val(pg_temp.ent(jsonb_build_object('N', t, 'N@odata.type', 'Edm.Int32')))
FROM (VALUES ('5'::jsonb), ('1e2'), ('-2147483648'), ('2147483647'), ('2147483648'), ('5.0'), ('"5"'),
	('"+5"'), ('"05"'), ('"-2147483649"'), ('"x"'), ('true'), ('0.5')) v(t);
SELECT t, pg_temp.val(pg_temp.ent(jsonb_build_object('N', t)))
FROM (VALUES ('5'::jsonb), ('1e2'), ('-2147483648'), ('2147483647'), ('-2147483649'), ('1e10'), ('0')) v(t);

-- Double: the shortest round-trip number; annotated when it shows no point
SELECT left(t::text, 30) AS t, pg_temp.val(pg_temp.ent(jsonb_build_object('N', t, 'N@odata.type', 'Edm.Double')))
FROM (VALUES ('1.5'::jsonb), ('1.50'), ('5'), ('1e2'), ('0.30000000000000004'), ('0.1'), ('1.00000000000000001'),
	('123456789012345678'), ('1e-7'), ('0.0001'), ('1e300'), ('1e400'), ('-0.0'), ('0'), ('-1.5'),
	('"1.5"'), ('"NaN"'), ('"Infinity"'), ('"-Infinity"'), ('"INF"'), ('"-INF"'), ('"-0"'), ('"0x1p3"'),
	('" 1"'), ('"1e400"'), ('"nan"'), ('"1."'), ('".5"'), ('"5e"'), ('true'), ('"abc"'),
	('2.2250738585072014e-308'), ('4.9e-324'), ('1.7976931348623157e308'), ('100000000000000000000000'),
	('999999999999999'), ('999999999999999.9'), ('123456789012345'), ('1234567890123456'), ('1e15'), ('1e14'),
	('0.123456789012345'), ('0.1234567890123456'), ('0.00009999'), ('0.0001234'), ('0.001'), ('-0.001'),
	('0.00012345678901234'), ('0.000123456789012345'), ('9007199254740993'), ('100.25'), ('5e-4'), ('-123.456'),
	('12345678901234.5'), ('1234567890123.45'), ('0.1e1'), ('10.0')) v(t);
SELECT t, pg_temp.val(pg_temp.ent(jsonb_build_object('N', t)))
FROM (VALUES ('1.5'::jsonb), ('1.0'), ('0.0'), ('-0.0'), ('1.50'), ('12345.678'), ('0.30000000000000004'),
	('1000000000000000.5')) v(t);

-- Any number: the stored Double is what float8out (shortest round trip)
-- writes, read back as a number; numbers of every digit count, scale,
-- sign and trailing zeros
SET extra_float_digits = 1;
SELECT setseed(0.25);
CREATE TEMP TABLE nums AS
SELECT (sgn || ip || CASE WHEN fp = '' THEN '' ELSE '.' || fp END || 'e' || ex)::numeric AS x
FROM (SELECT CASE WHEN random() < 0.5 THEN '-' ELSE '' END AS sgn,
	floor(random() * 10 ^ floor(random() * 17))::int8::text AS ip,
	CASE WHEN random() < 0.3 THEN '' ELSE
		lpad(floor(random() * 10 ^ floor(random() * 17))::int8::text, floor(random() * 19)::int, '0') END AS fp,
	floor(random() * 13)::int - 6 AS ex
	FROM generate_series(1, 20000)) g;
SELECT count(*) AS numbers, count(*) FILTER (WHERE got IS DISTINCT FROM want) AS differing
FROM (SELECT tablestore.validate_entity(pg_temp.ent(jsonb_build_object('N', x, 'N@odata.type', 'Edm.Double')))::text AS got,
	(CASE WHEN w::text LIKE '%.%' THEN jsonb_build_object('N', w)
		ELSE jsonb_build_object('N', w, 'N@odata.type', 'Edm.Double') END)::text AS want
	FROM (SELECT x, x::float8::text::numeric AS w FROM nums) n) c;
SELECT count(*) AS numbers, count(*) FILTER (WHERE got IS DISTINCT FROM want) AS differing
FROM (SELECT tablestore.validate_entity(pg_temp.ent(jsonb_build_object('N', x)))::text AS got,
	(CASE WHEN w::text LIKE '%.%' THEN jsonb_build_object('N', w)
		ELSE jsonb_build_object('N', w, 'N@odata.type', 'Edm.Double') END)::text AS want
	FROM (SELECT x, x::float8::text::numeric AS w FROM nums WHERE scale(x) > 0) n) c;
RESET extra_float_digits;

-- DateTime: the service's text, trailing zeros of the fraction trimmed
SELECT t, pg_temp.val(pg_temp.ent(jsonb_build_object('N', t, 'N@odata.type', 'Edm.DateTime')))
FROM (VALUES ('"2019-03-01T09:00:00Z"'::jsonb), ('"2019-03-01T09:00:00"'), ('"2019-03-01t09:00:00z"'),
	('"2019-03-01T09:00:00.1000000Z"'), ('"2019-03-01T09:00:00.0000000Z"'), ('"2019-03-01T09:00:00.1234567Z"'),
	('"2019-03-01T09:00:00.12345678Z"'), ('"1601-01-01T00:00:00Z"'), ('"9999-12-31T23:59:59.9999999Z"'),
	('"1600-12-31T23:59:59Z"'), ('"2019-02-29T00:00:00Z"'), ('"2020-02-29T00:00:00Z"'), ('"2019-03-01 09:00:00Z"'),
	('"2019-03-01T09:00:00.Z"'), ('"2019-03-01T24:00:00Z"'), ('20190301'), ('true')) v(t);

-- Guid: lower-case text kept, other case rewritten
SELECT t, pg_temp.val(pg_temp.ent(jsonb_build_object('N', t, 'N@odata.type', 'Edm.Guid')))
FROM (VALUES ('"3f2504e0-4f89-11d3-9a0c-0305e82c3301"'::jsonb), ('"3F2504E0-4F89-11D3-9A0C-0305E82C3301"'),
	('"3f2504E0-4f89-11d3-9a0c-0305e82c330F"'), ('"3f2504e0-4f89-11d3-9a0c-0305e82c330"'),
	('"3f2504e0-4f89-11d3-9a0c-0305e82c33011"'), ('"3f2504e0x4f89-11d3-9a0c-0305e82c3301"'),
	('"3f2504e0-4f89-11d3-9a0c-0305e82c330g"'), ('"{3f2504e0-4f89-11d3-9a0c-0305e82c3301}"'),
	('"3f2504e04f8911d39a0c0305e82c3301"'), ('1'), ('null')) v(t);

-- Binary: strict padded base64; unused bits of the last character cleared
SELECT t, pg_temp.val(pg_temp.ent(jsonb_build_object('N', t, 'N@odata.type', 'Edm.Binary')))
FROM (VALUES ('"AQIDBA=="'::jsonb), ('"AQIDBB=="'), ('"AQI="'), ('"AQJ="'), ('""'), ('"AQID"'), ('"AQI"'),
	('"AQ=="'), ('"A==="'), ('"===="'), ('"AQ*D"'), ('"AQ==AQ=="'), ('"-_8="'), ('5')) v(t);

-- String and Boolean: as given; the annotation is dropped
SELECT t, pg_temp.val(pg_temp.ent(jsonb_build_object('N', t, 'N@odata.type', ty)))
FROM (VALUES ('"x"'::jsonb, 'Edm.String'), ('""', 'Edm.String'), ('5', 'Edm.String'), ('true', 'Edm.String'),
	('true', 'Edm.Boolean'), ('false', 'Edm.Boolean'), ('"true"', 'Edm.Boolean'), ('1', 'Edm.Boolean'),
	('"x"', 'edm.string'), ('"x"', 'Edm.String '), ('"x"', ''), ('{"a": 1}', 'Edm.String'), ('[1]', 'Edm.Int32')) v(t, ty);

-- String length in UTF-16 code units, at the limit of 32,768, with ASCII,
-- two- and three-byte characters and surrogate pairs, mixed so that
-- multi-byte characters straddle every alignment
SELECT label, pg_temp.big(pg_temp.ent(jsonb_build_object('S', s))) FROM (VALUES
	('ascii 32768', repeat('x', 32768)), ('ascii 32769', repeat('x', 32769)),
	('é 32768', repeat('é', 32768)), ('é 32769', repeat('é', 32769)),
	('漢 32768', repeat('漢', 32768)), ('漢 32769', repeat('漢', 32769)),
	('😀 16384', repeat('😀', 16384)), ('😀 16384 + a', repeat('😀', 16384) || 'a'),
	('a + 😀 16383 + b', 'a' || repeat('😀', 16383) || 'b'), ('a + 😀 16383 + bc', 'a' || repeat('😀', 16383) || 'bc'),
	('abcdefg + 😀 16380 + é', 'abcdefg' || repeat('😀', 16380) || 'é'),
	('abcdefg + 😀 16380 + éé', 'abcdefg' || repeat('😀', 16380) || 'éé'),
	('mixed 32768', repeat('abc漢😀é', 4681) || 'a'), ('mixed 32769', repeat('abc漢😀é', 4681) || 'ab'),
	('1234567 + 漢 32761', '1234567' || repeat('漢', 32761)), ('1234567 + 漢 32762', '1234567' || repeat('漢', 32762))
) v(label, s);

-- Keys: forbidden characters in every encoding length, lengths in UTF-16
SELECT label, pg_temp.val(jsonb_build_object('PartitionKey', k, 'RowKey', 'r')) FROM (VALUES
	('empty', ''), ('slash', 'a/b'), ('backslash', 'a\b'), ('hash', 'a#b'), ('question', 'a?b'), ('tab', E'a\tb'),
	('U+001F', 'a' || chr(31)), ('U+007F', 'a' || chr(127)), ('U+0080', 'abcdefghij' || chr(128)),
	('U+009F', chr(159) || 'abcdefghij'), ('U+00A0', 'abcdefgh' || chr(160)), ('U+0100', chr(256)),
	('U+FFFF', chr(65535)), ('U+1F600', '😀'), ('long ASCII then slash', repeat('a', 100) || '/'),
	('long non-ASCII then slash', repeat('é', 100) || '/'), ('é then U+0085', 'é' || chr(133))) v(label, k);
SELECT label, pg_temp.big(jsonb_build_object('PartitionKey', 'p', 'RowKey', k)) FROM (VALUES
	('ascii 512', repeat('k', 512)), ('ascii 513', repeat('k', 513)), ('é 512', repeat('é', 512)),
	('é 513', repeat('é', 513)), ('😀 256', repeat('😀', 256)), ('😀 256 + a', repeat('😀', 256) || 'a'),
	('a + 😀 255 + b', 'a' || repeat('😀', 255) || 'b'), ('a + 😀 255 + bc', 'a' || repeat('😀', 255) || 'bc'),
	('漢 512', repeat('漢', 512)), ('1234567 + 漢 505', '1234567' || repeat('漢', 505)),
	('1234567 + 漢 506', '1234567' || repeat('漢', 506))) v(label, k);
SELECT pg_temp.val('{"PartitionKey": "p", "RowKey": "r", "PartitionKey@odata.type": "Edm.String"}');
SELECT pg_temp.val('{"PartitionKey": "p", "RowKey": "r", "PartitionKey@odata.type": "Edm.Int32"}');
SELECT pg_temp.val('{"PartitionKey": "p", "RowKey": "r", "RowKey@odata.type": 5}');
SELECT pg_temp.val('{"PartitionKey": "p", "RowKey": "r", "RowKey@odata.type": null}');
SELECT pg_temp.val('{"PartitionKey": 5, "RowKey": "r"}');
SELECT pg_temp.val('{"PartitionKey": "p", "RowKey": ["r"]}');
SELECT pg_temp.val('{"PartitionKey": null, "RowKey": null}');
SELECT pg_temp.val('{"PartitionKey": "p", "RowKey": null}');
SELECT pg_temp.val('{"PartitionKey": "p"}');
SELECT pg_temp.val('{"partitionkey": "p", "RowKey": "r"}');
SELECT pg_temp.val('{}');
SELECT pg_temp.val('[]');
SELECT pg_temp.val('"x"');
SELECT pg_temp.val('null');
-- a key's annotation for an absent key is an annotation like any other
SELECT pg_temp.val('{"PartitionKey@odata.type": 5, "RowKey": "r"}');

-- Property names: ASCII and not, at the length limit of 255 UTF-16 units;
-- too long is reported before invalid; an invalid name with a null value
SELECT label, pg_temp.big(pg_temp.ent(jsonb_build_object(n, 1))) FROM (VALUES
	('ascii 255', repeat('n', 255)), ('ascii 256', repeat('n', 256)), ('é 255', repeat('é', 255)),
	('é 256', repeat('é', 256)), ('😀 127 + a', repeat('😀', 127) || 'a'), ('😀 128', repeat('😀', 128)),
	('_ + 漢 254', '_' || repeat('漢', 254)), ('_ + 漢 255', '_' || repeat('漢', 255)),
	('dashes 256', repeat('-', 256)), ('dashes 255', repeat('-', 255))) v(label, n);
SELECT n, pg_temp.val(pg_temp.ent(jsonb_build_object(n, 1))) FROM (VALUES
	('Größe'), ('_x'), ('x1'), ('_'), ('Ab_9'), ('1st'), ('a-b'), ('a b'), ('a.b'), (''), ('@odata.type'),
	('x@odata.typ'), ('a' || chr(133)), ('a' || chr(57344)), ('a' || chr(65534)), ('a' || chr(64976)),
	('a' || chr(160)), ('odata'), ('odatax'), ('odata.'), ('odata.etag'), ('odata.x.y'), ('Odata.etag')) v(n);
SELECT pg_temp.val(pg_temp.ent('{"a-b": null}'));
SELECT pg_temp.val(pg_temp.ent(jsonb_build_object(repeat('-', 300), null)));

-- Names that look alike: case, the annotation suffix, system names
SELECT pg_temp.val(pg_temp.ent('{"Name": "a", "name": "b", "NAME": 1, "Name@odata.type": "Edm.String",
	"name@odata.type": "Edm.Guid", "NAME@Odata.Type": "Edm.Int64"}'));
SELECT pg_temp.val(pg_temp.ent('{"Timestamp": "x", "Timestamp@odata.type": 5, "timestamp": "y", "TimeStamp": 1}'));
SELECT pg_temp.val(pg_temp.ent('{"Timestamp@odata.type": "Edm.Nothing"}'));
SELECT pg_temp.val(pg_temp.ent('{"X@odata.type@odata.type": "Edm.String", "X@odata.type": "Edm.Int64", "X": "5"}'));
SELECT pg_temp.val(pg_temp.ent('{"odata.etag": "W/x", "odata.etag@odata.type": "Edm.String", "odata.metadata": 5}'));
SELECT pg_temp.val(pg_temp.ent('{"odata.etag@odata.type": 5}'));

-- Annotations without values: checked for a string, otherwise ignored
SELECT pg_temp.val(pg_temp.ent('{"A@odata.type": "Edm.Int64"}'));
SELECT pg_temp.val(pg_temp.ent('{"A@odata.type": "Edm.Whatever"}'));
SELECT pg_temp.val(pg_temp.ent('{"A@odata.type": 5}'));
SELECT pg_temp.val(pg_temp.ent('{"A@odata.type": null}'));
SELECT pg_temp.val(pg_temp.ent('{"A": null, "A@odata.type": "Edm.Int64"}'));
SELECT pg_temp.val(pg_temp.ent('{"A": null, "A@odata.type": true}'));
SELECT pg_temp.val(pg_temp.ent('{"A": 1, "A@odata.type": null}'));
SELECT pg_temp.val(pg_temp.ent('{"A": 1, "A@odata.type": ["Edm.Int32"]}'));
SELECT pg_temp.val(pg_temp.ent('{"A": {"b": 1}, "A@odata.type": 5}'));
SELECT pg_temp.val(pg_temp.ent('{"A": 1, "B@odata.type": 5, "C": "x", "C@odata.type": "Edm.Nope"}'));

-- Annotations the canonical form adds, among ones given, in key order
SELECT pg_temp.val(pg_temp.ent('{"A": 1.0, "B": "5", "B@odata.type": "Edm.Int64", "Cc": 2.0, "D@odata.type": "Edm.Guid",
	"Ee": 3.25, "F": 4.0, "F@odata.type": "Edm.Double", "Zzzzzzzzzzzzzzzzzzzzzz": 7.0, "a": 0.0, "b": "x", "b@odata.type": "Edm.String"}'));

-- More members than jsonb's offset stride (32), of every type, in and out
-- of canonical form, so that stored offsets and numeric alignment matter
SELECT pg_temp.val(pg_temp.ent((SELECT jsonb_object_agg(k, v) FROM (
	SELECT 's' || i, to_jsonb('str' || repeat('é', i % 5)) FROM generate_series(1, 12) i
	UNION ALL SELECT 'i' || i, to_jsonb(i * 1000) FROM generate_series(1, 12) i
	UNION ALL SELECT 'd' || i, to_jsonb(i + 0.5) FROM generate_series(1, 12) i
	UNION ALL SELECT 'e' || i, to_jsonb(i::numeric(10, 1)) FROM generate_series(1, 6) i
	UNION ALL SELECT 'b' || i, to_jsonb(i % 2 = 0) FROM generate_series(1, 6) i
	UNION ALL SELECT 'l' || i, to_jsonb(i::text) FROM generate_series(1, 6) i
	UNION ALL SELECT 'l' || i || '@odata.type', '"Edm.Int64"' FROM generate_series(1, 6) i
	UNION ALL SELECT 'g' || i, to_jsonb(CASE WHEN i % 2 = 0 THEN '3F2504E0-4F89-11D3-9A0C-0305E82C330' ELSE
		'3f2504e0-4f89-11d3-9a0c-0305e82c330' END || i) FROM generate_series(1, 6) i
	UNION ALL SELECT 'g' || i || '@odata.type', '"Edm.Guid"' FROM generate_series(1, 6) i
	UNION ALL SELECT 'n' || i, 'null' FROM generate_series(1, 6) i) m(k, v))));

-- Limits: 252 properties (nulls, annotations and odata.* not counted), and
-- the entity size at 1,048,488 bytes by the service's formula
SELECT pg_temp.big(pg_temp.ent((SELECT jsonb_object_agg('p' || i, i) FROM generate_series(1, 252) i) ||
	'{"q": null, "q@odata.type": "Edm.Int32", "odata.etag": "x"}'));
SELECT pg_temp.big(pg_temp.ent((SELECT jsonb_object_agg('p' || i, i) FROM generate_series(1, 253) i)));
SELECT pg_temp.big(pg_temp.ent((SELECT jsonb_object_agg('p' || i, 1.0) FROM generate_series(1, 252) i)));
SELECT label, pg_temp.big(pg_temp.ent((SELECT jsonb_object_agg('S' || lpad(i::text, 2, '0'), repeat('x', 32768))
	FROM generate_series(1, 15) i) || jsonb_build_object('T', t))) FROM (VALUES
	('1048488 bytes', repeat('x', 32578)), ('1048490 bytes', repeat('x', 32579)),
	('1048488 bytes, é', repeat('é', 32578)), ('1048490 bytes, é', repeat('é', 32579))) v(label, t);
-- too many properties is reported before any property's error
SELECT pg_temp.big(pg_temp.ent((SELECT jsonb_object_agg('p' || i, i) FROM generate_series(1, 253) i) ||
	'{"a": {"nested": 1}}'));
-- the first error in key order is the one reported
SELECT pg_temp.val(pg_temp.ent('{"Bb": {"x": 1}, "A": "x", "A@odata.type": "Edm.Int64", "Ccc-": 1}'));
SELECT pg_temp.val(pg_temp.ent('{"Bb": 1, "Bb@odata.type": "Edm.Guid", "Aaa": "x", "Aaa@odata.type": "Edm.Int64"}'));

-- the benchmark's entity: canonical already, kept as given
SELECT pg_temp.val(jsonb_build_object(
	'PartitionKey', 'tenant0001', 'RowKey', '00000001',
	'FirstName', 'First1', 'LastName', 'Last1', 'Email', 'user1@contoso.com',
	'Age', 19, 'Salary', 1001.5, 'Active', false,
	'Visits', '7919', 'Visits@odata.type', 'Edm.Int64',
	'HireDate', '2019-03-01T09:00:00Z', 'HireDate@odata.type', 'Edm.DateTime',
	'Id', '3f2504e0-4f89-11d3-9a0c-0305e82c3301', 'Id@odata.type', 'Edm.Guid',
	'Photo', 'AQIDBAUGBwgJCgsMDQ4PEA==', 'Photo@odata.type', 'Edm.Binary',
	'Notes', repeat('x', 60)));
-- the stored form is valid input, and canonicalizing it again is the identity
SELECT e, tablestore.validate_entity(pg_temp.ent(tablestore.validate_entity(e))) = tablestore.validate_entity(e) AS idempotent
FROM (VALUES (pg_temp.ent('{"A": 1.0, "B": "+5", "B@odata.type": "Edm.Int64", "C": "2019-03-01T09:00:00.500Z",
	"C@odata.type": "Edm.DateTime", "D": "AQJ=", "D@odata.type": "Edm.Binary", "E": "NaN", "E@odata.type": "Edm.Double",
	"F": "3F2504E0-4F89-11D3-9A0C-0305E82C3301", "F@odata.type": "Edm.Guid", "G": 1e300, "G@odata.type": "Edm.Double"}'))) v(e);
