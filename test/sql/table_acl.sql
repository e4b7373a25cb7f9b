-- Stored access policies (issue 22 item 8): set_table_acl replaces a table's
-- policies after checking them as the service does, get_table_acl reads
-- them, delete_table removes them, and the rights are the relation's.
\set VERBOSITY terse
-- try(sql): 'ok', or the SQLSTATE and the message of its error
CREATE FUNCTION pg_temp.try(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || left(SQLERRM, 160);
END $$;
GRANT EXECUTE ON FUNCTION pg_temp.try(text) TO PUBLIC;
-- detail(sql): the service code its error names
CREATE FUNCTION pg_temp.code(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE d text;
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
	RETURN SQLSTATE || ' ' || coalesce(d, '');
END $$;

CREATE ROLE regress_acl_owner;
CREATE ROLE regress_acl_reader;
CREATE ROLE regress_acl_nobody;
GRANT CREATE ON SCHEMA tablestore_data TO regress_acl_owner;
SET ROLE regress_acl_owner;
SELECT tablestore.create_table('AclT');
GRANT SELECT ON tablestore_data.aclt TO regress_acl_reader;

-- a table starts with none; set and get round-trip, dates in the service's form
SELECT tablestore.get_table_acl('AclT');
SELECT tablestore.set_table_acl('aclt', '[{"Id": "p1", "Start": "2024-01-01", "Expiry": "2030-01-01T10:20Z", "Permission": "raud"},
	{"Id": "only-read", "Permission": "r"},
	{"Id": "window", "Start": "2024-01-01T00:00:00.1234567Z", "Expiry": "2031-06-30T23:59:59Z"},
	{"Id": "bare"}]');
SELECT jsonb_pretty(tablestore.get_table_acl('AclT'));
-- replace all: the old ones are gone; empty strings and nulls are "not given"
SELECT tablestore.set_table_acl('AclT', '[{"Id": "x", "Permission": "", "Start": null}]');
SELECT tablestore.get_table_acl('AclT');
-- five is the limit
SELECT tablestore.set_table_acl('AclT', '[{"Id": "a"}, {"Id": "b"}, {"Id": "c"}, {"Id": "d"}, {"Id": "e"}]');
SELECT jsonb_array_length(tablestore.get_table_acl('AclT'));
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '[{"Id": "a"}, {"Id": "b"}, {"Id": "c"}, {"Id": "d"}, {"Id": "e"}, {"Id": "f"}]')$$) AS six;
-- what the service refuses: InvalidXmlDocument (SQLSTATE TSX00)
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '[{"Id": "a", "Permission": "rw"}]')$$) AS bad_letter;
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '[{"Id": "a", "Permission": "rr"}]')$$) AS letter_twice;
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '[{"Id": "a", "Permission": "R"}]')$$) AS upper_case;
SELECT pg_temp.code(format($$SELECT tablestore.set_table_acl('AclT', '[{"Id": "%s"}]')$$, repeat('i', 65))) AS id_65;
SELECT pg_temp.code(format($$SELECT tablestore.set_table_acl('AclT', '[{"Id": "%s"}]')$$, repeat('é', 64))) AS id_64_chars;
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '[{"Permission": "r"}]')$$) AS no_id;
-- Ids are counted in UTF-16 code units, as the service counts: 32 emoji
-- are 64 units, 33 are 66 (refused)
SELECT pg_temp.code(format($$SELECT tablestore.set_table_acl('AclT', '[{"Id": "%s"}]')$$, repeat('😀', 33))) AS id_66_units;
-- Ids hold no control characters nor characters XML does not allow, so
-- that Get Table ACL's XML is well-formed and reads back as the Id
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '[{"Id": "p\u0001"}]')$$) AS id_c0;
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '[{"Id": "a\r\nb"}]')$$) AS id_crlf;
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '[{"Id": "a\tb"}]')$$) AS id_tab;
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '[{"Id": "a\u007f"}]')$$) AS id_del;
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '[{"Id": "a\u0085"}]')$$) AS id_c1;
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '[{"Id": "a\ufffe"}]')$$) AS id_fffe;
-- times: exactly the service's UTC forms (upper-case T and Z, Z required,
-- at most 7 digits of fraction), no leap second
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '[{"Id": "a", "Start": "2030-01-01T00:00:00"}]')$$) AS no_z;
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '[{"Id": "a", "Start": "2030-01-01t00:00:00z"}]')$$) AS lower_t_z;
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '[{"Id": "a", "Start": "2030-01-01T00:00+01:00"}]')$$) AS offset;
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '[{"Id": "a", "Start": "2030-01-01T00:00:00.12345678Z"}]')$$) AS fraction_8;
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '[{"Id": "a", "Start": "2016-12-31T23:59:60Z"}]')$$) AS leap_second;
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '[{"Id": "a"}, {"Id": "a"}]')$$) AS id_twice;
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '[{"Id": "a", "Expiry": "tomorrow"}]')$$) AS bad_date;
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '[{"Id": "a", "Start": "2024-02-30"}]')$$) AS no_such_day;
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '[{"Id": "a", "Start": "1600-12-31"}]')$$) AS before_1601;
-- shapes that are not a policy list: InvalidInput
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '{"Id": "a"}')$$) AS not_array;
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '["a"]')$$) AS not_object;
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '[{"Id": "a", "Extra": 1}]')$$) AS unknown_member;
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('AclT', '[{"Id": 7}]')$$) AS id_not_string;
-- nothing of a refused list was applied: the last accepted one (64 characters) stands
SELECT jsonb_array_length(tablestore.get_table_acl('AclT'));
-- a missing table
SELECT pg_temp.code($$SELECT tablestore.get_table_acl('NoSuch')$$) AS get_missing;
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('NoSuch', '[]')$$) AS set_missing;
SELECT pg_temp.code($$SELECT tablestore.set_table_acl('bad name!', '[]')$$) AS set_bad_name;
RESET ROLE;

-- privileges: set needs ownership, get SELECT on the relation
SET ROLE regress_acl_reader;
SELECT jsonb_array_length(tablestore.get_table_acl('AclT')) AS reader_gets;
SELECT pg_temp.try($$SELECT tablestore.set_table_acl('AclT', '[]')$$) AS reader_sets;
SELECT pg_temp.try($$DELETE FROM tablestore.table_acl$$) AS reader_writes_catalog;
SELECT pg_temp.try($$SELECT * FROM tablestore.table_acl$$) AS reader_reads_catalog;
RESET ROLE;
SET ROLE regress_acl_nobody;
SELECT pg_temp.try($$SELECT tablestore.get_table_acl('AclT')$$) AS nobody_gets;
SELECT pg_temp.try($$SELECT tablestore.set_table_acl('AclT', '[]')$$) AS nobody_sets;
RESET ROLE;

-- [] (or NULL) removes them all
SET ROLE regress_acl_owner;
SELECT tablestore.set_table_acl('AclT', NULL);
SELECT tablestore.get_table_acl('AclT');
SELECT tablestore.set_table_acl('AclT', '[{"Id": "keep"}]');
SELECT tablestore.set_table_acl('AclT', '[]');
SELECT tablestore.get_table_acl('AclT');
-- delete_table removes them; the name created again starts with none
SELECT tablestore.set_table_acl('AclT', '[{"Id": "old", "Permission": "r"}]');
SELECT tablestore.delete_table('AclT');
SELECT tablestore.create_table('ACLT');
SELECT tablestore.get_table_acl('AclT');
-- a relation dropped with plain SQL takes its policies along (event trigger)
SELECT tablestore.set_table_acl('AclT', '[{"Id": "old"}]');
DROP TABLE tablestore_data.aclt;
RESET ROLE;
SELECT count(*) AS policies_left FROM tablestore.table_acl;

-- a read-only transaction cannot set them
SET ROLE regress_acl_owner;
SELECT tablestore.create_table('AclRo');
BEGIN READ ONLY;
SELECT pg_temp.try($$SELECT tablestore.set_table_acl('AclRo', '[]')$$) AS read_only;
ROLLBACK;
SELECT tablestore.delete_table('AclRo');
RESET ROLE;
REVOKE CREATE ON SCHEMA tablestore_data FROM regress_acl_owner;
DROP ROLE regress_acl_owner, regress_acl_reader, regress_acl_nobody;
