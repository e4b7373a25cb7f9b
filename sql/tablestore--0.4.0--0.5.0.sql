-- tablestore 0.4.0 -> 0.5.0: every entity relation gets the CHECK constraint
-- entity_ts_in_range that create_table now gives: ts (the Timestamp) within
-- the service's DateTime range, 1601-01-01 to 9999-12-31, no infinities.

\echo Use "ALTER EXTENSION tablestore UPDATE TO '0.5.0'" to load this file. \quit

-- NOT VALID, and not validated here: rows written with plain SQL before may
-- lie outside the range, and the update must neither fail on them nor scan
-- every table.  New and updated rows are checked from now on; reads of an
-- older row outside the range report it (README "Stored form"), and
-- ALTER TABLE ... VALIDATE CONSTRAINT entity_ts_in_range checks the old rows
-- when wanted.  A relation that has the constraint already (made by
-- create_table while this version's library served the old installation)
-- keeps it.
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT c.oid::regclass AS rel
		FROM tablestore.tables t
		JOIN pg_catalog.pg_class c ON c.relname OPERATOR(pg_catalog.=) t.relation_name
			AND c.relnamespace OPERATOR(pg_catalog.=) 'tablestore_data'::regnamespace
		WHERE c.relkind OPERATOR(pg_catalog.=) 'r'
			AND NOT EXISTS (SELECT FROM pg_catalog.pg_constraint k
				WHERE k.conrelid OPERATOR(pg_catalog.=) c.oid
					AND k.conname OPERATOR(pg_catalog.=) 'entity_ts_in_range')
	LOOP
		EXECUTE pg_catalog.format('ALTER TABLE %s ADD CONSTRAINT entity_ts_in_range '
			'CHECK (ts OPERATOR(pg_catalog.>=) ''1601-01-01 00:00:00+00''::pg_catalog.timestamptz '
			'AND ts OPERATOR(pg_catalog.<) ''10000-01-01 00:00:00+00''::pg_catalog.timestamptz) NOT VALID', r.rel);
	END LOOP;
END
$$;
