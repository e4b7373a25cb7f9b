/*-------------------------------------------------------------------------
 *
 * tables.c
 *	  The table catalog: create_table, delete_table, and the event
 *	  triggers' check of an entity relation.
 *
 * Each table's entities live in a relation of their own,
 * tablestore_data.<lower-case table name>, owned by the role that created
 * the table, so that deleting a table is one DROP TABLE whatever its size
 * and PostgreSQL's privileges on that relation decide who may read and
 * write its entities.  The catalog tablestore.tables keeps the name as
 * created (the service preserves case) and is dumped by pg_dump as
 * extension configuration.
 *
 * The catalog is written with the rights of its owner (the extension's
 * owner), never the caller's, so that callers need no rights on it; the
 * entity relation is created and dropped with the caller's rights.
 * Opening a table's relation for its entities, and the rules of its shape,
 * are the entity-relation layer's (entityrel.c), beneath this file.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "parser/parse_func.h"
#include "commands/tablecmds.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "tablestore.h"
#include "errors.h"
#include "entity.h"
#include "entityrel.h"
#include "tables.h"

static void prevent_ddl_if_read_only(const char *cmdname);

/*
 * Check a table name for create_table and delete_table, with the service's
 * error for each way it can be wrong.
 */
static void
check_table_name(const char *name, int len)
{
	if (len > 0 && !ts_table_name_chars_valid(name, len))
		ts_ereport(ERROR, TS_InvalidResourceName,
				   errmsg("table name \"%.*s\" contains invalid characters", pg_mbcliplen(name, len, 100), name),
				   errhint("A table name consists of ASCII letters and digits and starts with a letter."));
	if (len < 3 || len > 63)
		ts_ereport(ERROR, TS_OutOfRangeInput,
				   errmsg("table name \"%.*s\" is %d characters long, outside the permitted 3 to 63",
						  pg_mbcliplen(name, len, 100), name, len));
	if (len == 6 && pg_strncasecmp(name, "tables", len) == 0)
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("table name \"%.*s\" is reserved", len, name));
}

/* The owner of a relation. */
static Oid
relation_owner(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * Run a catalog statement with the rights of the catalog's owner.
 */
static int
exec_catalog(const char *sql, int nargs, Oid *argtypes, Datum *values)
{
	Oid			save_userid;
	int			save_sec;
	Oid			catalog;
	int			ret;

	catalog = get_relname_relid("tables", get_namespace_oid(TS_SCHEMA, false));
	if (!OidIsValid(catalog))
		elog(ERROR, "tablestore catalog is missing");
	GetUserIdAndSecContext(&save_userid, &save_sec);
	SetUserIdAndSecContext(relation_owner(catalog),
						   save_sec | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
	ret = SPI_execute_with_args(sql, nargs, argtypes, values, NULL, false, 0);
	SetUserIdAndSecContext(save_userid, save_sec);
	return ret;
}

/*
 * ts_exec_catalog: exec_catalog for the other catalogs of the extension
 * (tableacl.c's stored access policies), after the caller's own rights
 * were checked.
 */
int
ts_exec_catalog(const char *sql, int nargs, Oid *argtypes, Datum *values)
{
	return exec_catalog(sql, nargs, argtypes, values);
}

/*
 * The table_name argument of create_table and delete_table, checked with the
 * service's error for each way it can be wrong.
 */
static text *
arg_checked_table_name(FunctionCallInfo fcinfo)
{
	text	   *table_name;

	if (PG_ARGISNULL(0))
		ts_ereport(ERROR, TS_InvalidInput, errmsg("table_name must not be null"));
	table_name = PG_GETARG_TEXT_PP(0);
	check_table_name(VARDATA_ANY(table_name), VARSIZE_ANY_EXHDR(table_name));
	return table_name;
}

/* The OID of a relation of schema tablestore_data, or InvalidOid. */
static Oid
data_relation(const char *rel)
{
	Oid			nsp = get_namespace_oid(TS_DATA_SCHEMA, false);

	return get_relname_relid(rel, nsp);
}

/*
 * Remove the catalog row of relation rel if its relation is gone: the row of
 * a table whose relation was dropped while event triggers did not fire
 * (they do not in single-user mode, nor for a superuser who disabled them).
 * Returns whether a stale row was removed.
 */
static bool
remove_stale_row(const char *rel)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(rel)};
	int			ret;

	if (OidIsValid(data_relation(rel)))
		return false;
	ret = exec_catalog("DELETE FROM " TS_SCHEMA ".tables WHERE relation_name OPERATOR(pg_catalog.=) $1",
					   1, argtypes, values);
	if (ret != SPI_OK_DELETE)
		elog(ERROR, "could not delete from the tablestore catalog: %s", SPI_result_code_string(ret));
	return SPI_processed > 0;
}

/*
 * The CHECK constraints of an entity relation: keys by the rules of keys
 * (as tablestore.key_is_valid decides), props a JSON object, ts in the
 * service's DateTime range (1601-01-01 to 9999-12-31, no infinities; the
 * bounds are constants with their zone, so no setting changes them).  They
 * bind rows written with plain SQL; tablestore's own writes validate more.
 * sql/tablestore--0.4.0--0.5.0.sql adds entity_ts_in_range with the same
 * text to relations made before it.
 */
#define ENTITY_CHECKS \
	", CONSTRAINT entity_keys_valid CHECK (" TS_SCHEMA ".key_is_valid(pk) AND " TS_SCHEMA ".key_is_valid(rk))" \
	", CONSTRAINT entity_props_object CHECK (pg_catalog.jsonb_typeof(props) OPERATOR(pg_catalog.=) 'object'::pg_catalog.text)" \
	", CONSTRAINT entity_ts_in_range CHECK (ts OPERATOR(pg_catalog.>=) '1601-01-01 00:00:00+00'::pg_catalog.timestamptz" \
	" AND ts OPERATOR(pg_catalog.<) '10000-01-01 00:00:00+00'::pg_catalog.timestamptz)"

/*
 * Whether tablestore.key_is_valid exists: not while this library serves an
 * installation of an earlier version, before ALTER EXTENSION UPDATE.
 */
static bool
entity_checks_available(void)
{
	Oid			argtype = ts_key_type_oid();

	return OidIsValid(argtype) &&
		OidIsValid(LookupFuncName(list_make2(makeString(TS_SCHEMA), makeString("key_is_valid")),
								  1, &argtype, true));
}

/*
 * tablestore.key_is_valid(key) RETURNS boolean
 *
 * Whether a value may be a PartitionKey or RowKey: no forbidden character,
 * at most 512 UTF-16 code units.  The CHECK constraint of entity relations.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(key_is_valid);

Datum
key_is_valid(PG_FUNCTION_ARGS)
{
	text	   *key = PG_GETARG_TEXT_PP(0);

	PG_RETURN_BOOL(ts_key_is_valid(VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key)));
}

/*
 * tablestore._check_entity_relation(oid) RETURNS void
 *
 * The event trigger's check of a relation in schema tablestore_data after
 * DDL: an error unless it is an entity relation as create_table makes it
 * (its key index is not required: CREATE TABLE runs before CREATE INDEX).
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(check_entity_relation);

Datum
check_entity_relation(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Relation	heap = try_relation_open(relid, AccessShareLock);

	if (heap == NULL)
		PG_RETURN_VOID();
	ts_check_entity_relation(heap, false);
	relation_close(heap, AccessShareLock);
	PG_RETURN_VOID();
}

/*
 * tablestore.create_table(table_name text) RETURNS void
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(create_table);

Datum
create_table(PG_FUNCTION_ARGS)
{
	text	   *table_name;
	const char *name;
	int			len;
	char	   *rel;
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		values[2];
	int			ret;
	bool		tskey;
	AclResult	aclresult;

	if (GetDatabaseEncoding() != PG_UTF8)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tablestore requires a database with UTF8 encoding")));

	table_name = arg_checked_table_name(fcinfo);
	name = VARDATA_ANY(table_name);
	len = VARSIZE_ANY_EXHDR(table_name);
	rel = ts_relation_name(name, len);
	prevent_ddl_if_read_only("CREATE TABLE");

	/*
	 * The entity relation is created with the caller's rights: check them
	 * first, so that the error names the right and not an internal statement.
	 */
	aclresult = pg_namespace_aclcheck(get_namespace_oid(TS_DATA_SCHEMA, false), GetUserId(), ACL_CREATE);
	if (aclresult != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to create table \"%.*s\"", len, name),
				 errdetail("Creating a table needs the CREATE privilege on schema " TS_DATA_SCHEMA "."),
				 errhint("GRANT CREATE ON SCHEMA " TS_DATA_SCHEMA " TO the role.")));

	/*
	 * Claim the name in the catalog first: a concurrent create of the same
	 * name waits here for us and then finds the name taken.  A row left
	 * behind by a relation dropped without the event trigger is repaired.
	 */
	SPI_connect();
	values[0] = PointerGetDatum(table_name);
	values[1] = CStringGetTextDatum(rel);
	for (int attempt = 0;; attempt++)
	{
		ret = exec_catalog("INSERT INTO " TS_SCHEMA ".tables (table_name, relation_name) "
						   "VALUES ($1, $2) ON CONFLICT DO NOTHING",
						   2, argtypes, values);
		if (ret != SPI_OK_INSERT)
			elog(ERROR, "could not insert into the tablestore catalog: %s", SPI_result_code_string(ret));
		if (SPI_processed > 0)
			break;
		if (attempt > 0 || !remove_stale_row(rel))
			ts_ereport(ERROR, TS_TableAlreadyExists,
					   errmsg("table \"%.*s\" already exists", len, name));
	}

	/*
	 * A new table has no stored access policies: a row left for the name
	 * (its table's catalog row deleted while triggers did not fire, or
	 * restored alone) goes.  An installation not yet updated to 0.6.0 has
	 * no such catalog.
	 */
	if (OidIsValid(RangeVarGetRelid(makeRangeVar(TS_SCHEMA, "table_acl", -1), NoLock, true)))
	{
		ret = exec_catalog("DELETE FROM " TS_SCHEMA ".table_acl WHERE relation_name OPERATOR(pg_catalog.=) $1",
						   1, argtypes + 1, values + 1);
		if (ret != SPI_OK_DELETE)
			elog(ERROR, "could not delete from the tablestore catalog: %s", SPI_result_code_string(ret));
	}

	/*
	 * The entity relation, created with the caller's rights, and its only
	 * index: the unique tskey index on the keys (doc/index-am.md).  Until
	 * ALTER EXTENSION UPDATE has created the access method (this library
	 * serving an installation of 0.1.0), a btree primary key instead.  The
	 * CHECK constraints hold rows written with plain SQL to the rules of
	 * keys, and props to a JSON object.
	 */
	if (OidIsValid(data_relation(rel)))
		ts_ereport(ERROR, TS_TableAlreadyExists,
				   errmsg("table \"%.*s\" already exists", len, name),
				   errdetail("A relation named \"%s\" exists in schema " TS_DATA_SCHEMA " without a table.", rel));
	tskey = OidIsValid(get_index_am_oid("tskey", true));
	ret = SPI_execute(psprintf("CREATE TABLE " TS_DATA_SCHEMA ".%s ("
							   "pk " TS_SCHEMA ".key NOT NULL, "
							   "rk " TS_SCHEMA ".key NOT NULL, "
							   "ts pg_catalog.timestamptz NOT NULL, "
							   "props pg_catalog.jsonb NOT NULL%s%s)",
							   quote_identifier(rel),
							   entity_checks_available() ? ENTITY_CHECKS : "",
							   tskey ? "" : ", PRIMARY KEY (pk, rk)"),
					  false, 0);
	if (ret != SPI_OK_UTILITY)
		elog(ERROR, "could not create entity relation: %s", SPI_result_code_string(ret));
	if (tskey)
	{
		ret = SPI_execute(psprintf("CREATE UNIQUE INDEX ON " TS_DATA_SCHEMA ".%s USING tskey (pk, rk)",
								   quote_identifier(rel)),
						  false, 0);
		if (ret != SPI_OK_UTILITY)
			elog(ERROR, "could not create entity relation's index: %s", SPI_result_code_string(ret));
	}
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * Refuse a catalog change where PostgreSQL refuses the DDL it runs, with the
 * same errors and before anything else (a lock that recovery cannot grant
 * would fail otherwise with 55000): in a read-only transaction and on a hot
 * standby 25006, as ProcessUtility checks a command that is not read-only.
 */
static void
prevent_ddl_if_read_only(const char *cmdname)
{
	PreventCommandIfReadOnly(cmdname);
	PreventCommandIfParallelMode(cmdname);
	PreventCommandDuringRecovery(cmdname);
}

/*
 * tablestore.delete_table(table_name text) RETURNS void
 *
 * Drops the table's relation: one catalog operation whatever its size.
 * Only the relation's owner (or a member of the owning role) may do it.
 * A table listed in the catalog whose relation is gone (dropped while event
 * triggers did not fire) is removed from the catalog.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(delete_table);

Datum
delete_table(PG_FUNCTION_ARGS)
{
	text	   *table_name = arg_checked_table_name(fcinfo);
	const char *name = VARDATA_ANY(table_name);
	int			len = VARSIZE_ANY_EXHDR(table_name);
	char	   *rel;
	Oid			relid;
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];
	int			ret;

	rel = ts_relation_name(name, len);
	prevent_ddl_if_read_only("DROP TABLE");

	/* ownership is checked before the lock is taken */
	relid = RangeVarGetRelidExtended(makeRangeVar(TS_DATA_SCHEMA, rel, -1),
									 AccessExclusiveLock, RVR_MISSING_OK,
									 RangeVarCallbackOwnsRelation, NULL);
	SPI_connect();
	if (!OidIsValid(relid))
	{
		if (!remove_stale_row(rel))
			ts_ereport(ERROR, TS_ResourceNotFound,
					   errmsg("table \"%.*s\" does not exist", len, name));
		SPI_finish();
		PG_RETURN_VOID();
	}

	ret = SPI_execute(psprintf("DROP TABLE " TS_DATA_SCHEMA ".%s", quote_identifier(rel)), false, 0);
	if (ret != SPI_OK_UTILITY)
		elog(ERROR, "could not drop entity relation: %s", SPI_result_code_string(ret));
	values[0] = CStringGetTextDatum(rel);
	ret = exec_catalog("DELETE FROM " TS_SCHEMA ".tables WHERE relation_name OPERATOR(pg_catalog.=) $1",
					   1, argtypes, values);
	if (ret != SPI_OK_DELETE)
		elog(ERROR, "could not delete from the tablestore catalog: %s", SPI_result_code_string(ret));
	SPI_finish();
	PG_RETURN_VOID();
}
