-- The upgrade path: an installation created at 0.1.0 and updated with
-- ALTER EXTENSION tablestore UPDATE keeps its data and ends up with exactly
-- the objects of a fresh installation of the current version.
DROP EXTENSION tablestore;
DROP SCHEMA tablestore;
CREATE EXTENSION tablestore VERSION '0.1.0';
SELECT tablestore.create_table('Upgraded');
SELECT tablestore.insert_entity('Upgraded', '{"PartitionKey": "p", "RowKey": "1", "N": 1}')->>'N' AS n;
-- a row written with plain SQL, its ts outside the service's range
INSERT INTO tablestore_data.upgraded VALUES ('p', 'old', '1500-01-01 00:00:00+00', '{}');
SELECT extversion FROM pg_extension WHERE extname = 'tablestore';
ALTER EXTENSION tablestore UPDATE;
-- the version the control file names
SELECT e.extversion = a.default_version AS at_default_version
FROM pg_extension e JOIN pg_available_extensions a ON a.name = e.extname
WHERE e.extname = 'tablestore';
-- the data and the new functions work on it
SELECT e->>'RowKey' AS rk, e->>'N' AS n FROM tablestore.query_entities('Upgraded', 'N eq 1') e;
SELECT tablestore.list_tables('TableName eq ''Upgraded''') AS listed;
-- the entity relation is converted: indexed by tskey alone, which holds its
-- entities and enforces its keys
SELECT c.relname AS index, am.amname, i.indisunique
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
WHERE i.indrelid = 'tablestore_data.upgraded'::regclass;
SELECT tablestore.verify_index('tablestore_data.upgraded_pk_rk_idx');
SELECT tablestore.insert_entity('Upgraded', '{"PartitionKey": "p", "RowKey": "1"}');
SELECT tablestore.insert_or_merge_entity('Upgraded', '{"PartitionKey": "p", "RowKey": "1", "M": 2}')->>'M' AS m;
-- the update gave the existing entity relation the CHECK constraints of
-- 0.3.0 and 0.5.0, NOT VALID (older rows are not checked), and they hold
-- new rows; the older row outside the range is kept, and reading it is an
-- error naming it
SELECT conname, convalidated FROM pg_constraint
WHERE conrelid = 'tablestore_data.upgraded'::regclass AND contype = 'c' ORDER BY 1;
\set VERBOSITY terse
INSERT INTO tablestore_data.upgraded VALUES ('p', 'a/b', now(), '{}');
INSERT INTO tablestore_data.upgraded VALUES ('p', 'inf', 'infinity', '{}');
SELECT tablestore.get_entity('Upgraded', 'p', 'old');
ALTER TABLE tablestore_data.upgraded VALIDATE CONSTRAINT entity_ts_in_range;
SELECT tablestore.delete_entity('Upgraded', 'p', 'old');
ALTER TABLE tablestore_data.upgraded VALIDATE CONSTRAINT entity_ts_in_range;
\set VERBOSITY default
-- and the event triggers guard it
ALTER TABLE tablestore_data.upgraded RENAME TO elsewhere;

-- the objects of the extension, their definitions and comments, after the
-- update ...
CREATE TEMP VIEW members AS
SELECT pg_describe_object(classid, objid, objsubid) AS object,
	CASE WHEN classid = 'pg_proc'::regclass THEN pg_get_functiondef(objid) END AS definition,
	obj_description(objid, classid::regclass::text) AS comment
FROM pg_depend
WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
	AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'tablestore');
CREATE TEMP TABLE upgraded AS SELECT * FROM members;
SELECT tablestore.delete_table('Upgraded');
DROP EXTENSION tablestore;
DROP SCHEMA tablestore;
-- ... are those of a fresh installation
CREATE EXTENSION tablestore;
CREATE TEMP TABLE fresh AS SELECT * FROM members;
SELECT 'only after update' AS side, object FROM (SELECT * FROM upgraded EXCEPT SELECT * FROM fresh) d
UNION ALL
SELECT 'only in fresh', object FROM (SELECT * FROM fresh EXCEPT SELECT * FROM upgraded) d
ORDER BY 1, 2;
SELECT count(*) > 40 AS compared FROM fresh;

-- A table made while this version's library served an installation of
-- 0.4.0 has entity_ts_in_range already: the update keeps it, once.
DROP EXTENSION tablestore;
DROP SCHEMA tablestore;
CREATE EXTENSION tablestore VERSION '0.4.0';
SELECT tablestore.create_table('Made040');
ALTER EXTENSION tablestore UPDATE;
SELECT conname, convalidated FROM pg_constraint
WHERE conrelid = 'tablestore_data.made040'::regclass AND contype = 'c' ORDER BY 1;
SELECT tablestore.delete_table('Made040');
-- Only the oldest version (0.1.0) has an install script of its own: any
-- other is installed from it up the chain of upgrade scripts, and is that
-- version (0.5.0 had no service properties: 0.6.0 added them).
DROP EXTENSION tablestore;
DROP SCHEMA tablestore;
CREATE EXTENSION tablestore VERSION '0.5.0';
SELECT extversion, to_regproc('tablestore.get_service_properties') IS NULL AS before_060
FROM pg_extension WHERE extname = 'tablestore';
-- leave a fresh installation to the tests after this one
DROP EXTENSION tablestore;
DROP SCHEMA tablestore;
CREATE EXTENSION tablestore;
