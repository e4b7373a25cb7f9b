-- Service properties (Get/Set Table Service Properties, issue 22 item 7):
-- defaults, partial update, validation as the service validates, and who
-- may set them.
\set SHOW_CONTEXT never
SELECT tablestore.get_service_properties();
-- a Set with only CORS rules keeps logging and metrics; values may be XML text
SELECT jsonb_pretty(tablestore.set_service_properties('{"Cors": [
	{"AllowedOrigins": "http://www.contoso.com,http://www.fabrikam.com", "AllowedMethods": "GET,HEAD,POST,OPTIONS,MERGE,PUT",
	 "AllowedHeaders": "x-ms-meta-abc,x-ms-meta-data*,x-ms-meta-target*", "ExposedHeaders": "x-ms-meta-*", "MaxAgeInSeconds": "100"},
	{"AllowedOrigins": "*", "AllowedMethods": "GET", "AllowedHeaders": "*", "ExposedHeaders": "*", "MaxAgeInSeconds": 2}]}'));
-- then metrics alone: the rules stay
SELECT tablestore.set_service_properties('{"HourMetrics": {"Version": "1.0", "Enabled": "true", "IncludeAPIs": true,
	"RetentionPolicy": {"Enabled": true, "Days": "7"}}}')->'HourMetrics' AS hour,
	jsonb_array_length(tablestore.get_service_properties()->'Cors') AS rules;
-- logging; an empty Cors removes every rule
SELECT tablestore.set_service_properties('{"Logging": {"Version": "1.0", "Delete": true, "Read": "false", "Write": true,
	"RetentionPolicy": {"Enabled": false, "Days": 3}}, "Cors": []}') - 'MinuteMetrics';
-- refusals: InvalidXmlDocument for the document's shape, InvalidXmlNodeValue for values
SELECT tablestore.set_service_properties('[]');
SELECT tablestore.set_service_properties('{"DefaultServiceVersion": "2019-02-02"}');
SELECT tablestore.set_service_properties('{"Logging": {"Version": "1.0", "Delete": true, "Read": true}}');
SELECT tablestore.set_service_properties('{"Logging": {"Version": "1.0", "Delete": true, "Read": true, "Write": true, "Extra": 1, "RetentionPolicy": {"Enabled": false}}}');
SELECT tablestore.set_service_properties('{"Logging": {"Version": "2.0", "Delete": true, "Read": true, "Write": true, "RetentionPolicy": {"Enabled": false}}}');
SELECT tablestore.set_service_properties('{"Logging": {"Version": "1.0", "Delete": "yes", "Read": true, "Write": true, "RetentionPolicy": {"Enabled": false}}}');
SELECT tablestore.set_service_properties('{"Logging": {"Version": "1.0", "Delete": true, "Read": true, "Write": true, "RetentionPolicy": {"Enabled": true}}}');
SELECT tablestore.set_service_properties('{"Logging": {"Version": "1.0", "Delete": true, "Read": true, "Write": true, "RetentionPolicy": {"Enabled": true, "Days": 366}}}');
SELECT tablestore.set_service_properties('{"Logging": {"Version": "1.0", "Delete": true, "Read": true, "Write": true, "RetentionPolicy": {"Enabled": true, "Days": 0}}}');
SELECT tablestore.set_service_properties('{"MinuteMetrics": {"Version": "1.0", "Enabled": true, "RetentionPolicy": {"Enabled": false}}}');
SELECT tablestore.set_service_properties('{"MinuteMetrics": {"Version": "1.0", "Enabled": false, "IncludeAPIs": true, "RetentionPolicy": {"Enabled": false}}}');
SELECT tablestore.set_service_properties('{"MinuteMetrics": {"Version": "1.0", "Enabled": false, "IncludeAPIs": false, "RetentionPolicy": {"Enabled": false}}}')->'MinuteMetrics' AS minute;
SELECT tablestore.set_service_properties(jsonb_build_object('Cors', (SELECT jsonb_agg(jsonb_build_object('AllowedOrigins', '*',
	'AllowedMethods', 'GET', 'AllowedHeaders', '', 'ExposedHeaders', '', 'MaxAgeInSeconds', 1)) FROM generate_series(1, 6))));
SELECT tablestore.set_service_properties('{"Cors": [{"AllowedOrigins": "*", "AllowedMethods": "GET,TRACE", "AllowedHeaders": "", "ExposedHeaders": "", "MaxAgeInSeconds": 1}]}');
SELECT tablestore.set_service_properties('{"Cors": [{"AllowedOrigins": "*", "AllowedMethods": "", "AllowedHeaders": "", "ExposedHeaders": "", "MaxAgeInSeconds": 1}]}');
SELECT tablestore.set_service_properties('{"Cors": [{"AllowedOrigins": "", "AllowedMethods": "GET", "AllowedHeaders": "", "ExposedHeaders": "", "MaxAgeInSeconds": 1}]}');
SELECT tablestore.set_service_properties('{"Cors": [{"AllowedOrigins": "*", "AllowedMethods": "GET", "AllowedHeaders": "", "ExposedHeaders": "", "MaxAgeInSeconds": -1}]}');
SELECT tablestore.set_service_properties('{"Cors": [{"AllowedOrigins": "*", "AllowedMethods": "GET", "AllowedHeaders": "", "ExposedHeaders": "", "MaxAgeInSeconds": 2147483648}]}');
SELECT tablestore.set_service_properties('{"Cors": [{"AllowedOrigins": "*", "AllowedMethods": "GET", "AllowedHeaders": "", "ExposedHeaders": ""}]}');
SELECT tablestore.set_service_properties('{"Cors": [{"AllowedOrigins": "*", "AllowedMethods": "GET", "AllowedHeaders": "a*,b*,c*", "ExposedHeaders": "", "MaxAgeInSeconds": 1}]}');
SELECT tablestore.set_service_properties(jsonb_build_object('Cors', jsonb_build_array(jsonb_build_object('AllowedOrigins', '*',
	'AllowedMethods', 'GET', 'AllowedHeaders', '', 'MaxAgeInSeconds', 1,
	'ExposedHeaders', (SELECT string_agg('h' || i, ',') FROM generate_series(1, 65) i)))));
SELECT tablestore.set_service_properties(jsonb_build_object('Cors', jsonb_build_array(jsonb_build_object('AllowedHeaders', '',
	'AllowedMethods', 'GET', 'ExposedHeaders', '', 'MaxAgeInSeconds', 1,
	'AllowedOrigins', (SELECT string_agg('http://o' || i, ',') FROM generate_series(1, 65) i)))));
SELECT tablestore.set_service_properties(jsonb_build_object('Cors', jsonb_build_array(jsonb_build_object('AllowedHeaders', '',
	'AllowedMethods', 'GET', 'ExposedHeaders', '', 'MaxAgeInSeconds', 1, 'AllowedOrigins', repeat('o', 257)))));
-- list items are what a header carries (attack F4, F5, F7): an origin is
-- visible ASCII (Azurite's tests store "test" and "https://host/*"), a
-- header name a token, a method one of the
-- service's in its case; no control character (CR, LF, tab), U+FFFE or
-- other non-ASCII character is stored, so Get's XML stays well-formed
SELECT tablestore.set_service_properties(jsonb_build_object('Cors', jsonb_build_array(jsonb_build_object('AllowedOrigins', 'http://a.com' || chr(65534),
	'AllowedMethods', 'GET', 'AllowedHeaders', '', 'ExposedHeaders', '', 'MaxAgeInSeconds', 1))));
SELECT tablestore.set_service_properties(jsonb_build_object('Cors', jsonb_build_array(jsonb_build_object('AllowedOrigins', 'http://a.com',
	'AllowedMethods', 'GET', 'AllowedHeaders', '', 'ExposedHeaders', 'x-a' || chr(10) || 'Set-Cookie: evil=1', 'MaxAgeInSeconds', 1))));
SELECT tablestore.set_service_properties(jsonb_build_object('Cors', jsonb_build_array(jsonb_build_object('AllowedOrigins', 'http://a.com',
	'AllowedMethods', 'GET', 'AllowedHeaders', 'x-a,' || chr(9) || 'x-b', 'ExposedHeaders', '', 'MaxAgeInSeconds', 1))));
SELECT tablestore.set_service_properties(jsonb_build_object('Cors', jsonb_build_array(jsonb_build_object('AllowedOrigins', 'http://a.com,' || chr(13) || 'http://b.com',
	'AllowedMethods', 'GET', 'AllowedHeaders', '', 'ExposedHeaders', '', 'MaxAgeInSeconds', 1))));
SELECT tablestore.set_service_properties(jsonb_build_object('Cors', jsonb_build_array(jsonb_build_object('AllowedOrigins', 'http://a.com',
	'AllowedMethods', 'GET,' || chr(9) || 'PUT', 'AllowedHeaders', '', 'ExposedHeaders', '', 'MaxAgeInSeconds', 1))));
SELECT tablestore.set_service_properties('{"Cors": [{"AllowedOrigins": "http://a.com", "AllowedMethods": "get", "AllowedHeaders": "", "ExposedHeaders": "", "MaxAgeInSeconds": 1}]}');
SELECT tablestore.set_service_properties('{"Cors": [{"AllowedOrigins": "http://a .com", "AllowedMethods": "GET", "AllowedHeaders": "", "ExposedHeaders": "", "MaxAgeInSeconds": 1}]}');
SELECT tablestore.set_service_properties('{"Cors": [{"AllowedOrigins": "http://ä.com", "AllowedMethods": "GET", "AllowedHeaders": "", "ExposedHeaders": "", "MaxAgeInSeconds": 1}]}');
SELECT tablestore.set_service_properties('{"Cors": [{"AllowedOrigins": "http://a.com", "AllowedMethods": "GET", "AllowedHeaders": "x a", "ExposedHeaders": "", "MaxAgeInSeconds": 1}]}');
-- nothing of the refused Sets was stored
SELECT tablestore.get_service_properties()->'Logging' AS logging, tablestore.get_service_properties()->'Cors' AS cors;
-- privileges: anyone reads; setting needs CREATE on schema tablestore_data,
-- through the function and through a direct UPDATE alike
CREATE ROLE sp_reader;
CREATE ROLE sp_admin;
GRANT CREATE ON SCHEMA tablestore_data TO sp_admin;
SET ROLE sp_reader;
SELECT tablestore.get_service_properties()->'Logging'->'Delete' AS delete_logged;
SELECT tablestore.set_service_properties('{"Cors": []}');
UPDATE tablestore.service_properties SET properties = '{}';
INSERT INTO tablestore.service_properties VALUES (true, '{}') ON CONFLICT DO NOTHING;
RESET ROLE;
SET ROLE sp_admin;
SELECT tablestore.set_service_properties('{"Cors": [{"AllowedOrigins": "http://app", "AllowedMethods": "GET", "AllowedHeaders": "", "ExposedHeaders": "", "MaxAgeInSeconds": 5}]}')->'Cors' AS cors;
-- a direct write is held to the same validation
UPDATE tablestore.service_properties SET properties = '{"Cors": [{"AllowedOrigins": "*"}]}';
RESET ROLE;
-- a role without the right cannot lock the table in a mode that blocks
-- readers or writers (attack F1: it stalled the gateway's CORS read), nor
-- lock the row
SET ROLE sp_reader;
BEGIN;
LOCK TABLE tablestore.service_properties IN ACCESS EXCLUSIVE MODE;
ROLLBACK;
BEGIN;
LOCK TABLE tablestore.service_properties IN SHARE MODE;
ROLLBACK;
BEGIN;
LOCK TABLE tablestore.service_properties IN SHARE UPDATE EXCLUSIVE MODE;
ROLLBACK;
SELECT count(*) AS rows_locked FROM (SELECT 1 FROM tablestore.service_properties FOR UPDATE) s;
SELECT count(*) AS rows_locked FROM (SELECT 1 FROM tablestore.service_properties FOR KEY SHARE) s;
SELECT count(*) AS rows_seen FROM tablestore.service_properties;
RESET ROLE;
-- well-formed lists are kept as given: spaces around items, ports, IPv6
SET ROLE sp_admin;
SELECT tablestore.set_service_properties('{"Cors": [{"AllowedOrigins": "http://a.com:8080, https://[::1]:443,*", "AllowedMethods": "GET, PUT", "AllowedHeaders": "x-ms-*, Content-Type", "ExposedHeaders": "*", "MaxAgeInSeconds": 5}]}')->'Cors' AS cors;
RESET ROLE;
SELECT count(*) FROM tablestore.service_properties;
DELETE FROM tablestore.service_properties;
DROP ROLE sp_reader;
REVOKE CREATE ON SCHEMA tablestore_data FROM sp_admin;
DROP ROLE sp_admin;
-- NULL is InvalidInput; a caller's value that a message echoes is clipped
SELECT tablestore.set_service_properties(NULL);
SELECT tablestore.set_service_properties(jsonb_build_object(repeat('x', 1000), 1));
-- an origin need not be scheme://host: Azurite's tests (and so the SDKs'
-- users) store "test" and "https://host/*"; a rule matches an Origin that
-- equals an item, so such an item matches nothing but itself
SELECT tablestore.set_service_properties('{"Cors": [{"AllowedOrigins": "test,https://www.fabrikam.com/*", "AllowedMethods": "GET", "AllowedHeaders": "header", "ExposedHeaders": "*", "MaxAgeInSeconds": 1}]}');
SELECT tablestore.get_service_properties()->'Cors'->0->>'AllowedOrigins' AS origins;
SELECT tablestore.set_service_properties('{"Cors": []}');
