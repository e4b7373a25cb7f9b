-- Dropping and installing the extension.
-- While a table exists, DROP EXTENSION refuses: the entity relations depend
-- on the extension's schema, so no data goes without CASCADE.
SELECT tablestore.create_table('Kept');
DROP EXTENSION tablestore;
SELECT tablestore.delete_table('Kept');
DROP EXTENSION tablestore;
-- PostgreSQL creates the control file's schema but leaves it at DROP EXTENSION
DROP SCHEMA tablestore;
SELECT count(*) AS leftovers FROM pg_namespace WHERE nspname IN ('tablestore', 'tablestore_data');

-- Installing over objects someone else created first fails instead of
-- adopting them (CVE-2020-14350 style).
CREATE SCHEMA tablestore_data;
CREATE EXTENSION tablestore;
DROP SCHEMA tablestore_data;

CREATE SCHEMA tablestore;
CREATE FUNCTION tablestore.insert_entity(table_name text, entity jsonb) RETURNS jsonb
	LANGUAGE sql AS $$ SELECT entity $$;
CREATE EXTENSION tablestore;
DROP SCHEMA tablestore CASCADE;

CREATE EXTENSION tablestore;
SELECT count(*) AS tables FROM tablestore.list_tables();
