/*-------------------------------------------------------------------------
 *
 * tables.c
 *	  The table catalog: create_table, delete_table, and finding a table's
 *	  entity relation.
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
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "commands/defrem.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/tablecmds.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "tablestore.h"

/*
 * Whether a name has only the characters a table name may have: an ASCII
 * letter first, then ASCII letters and digits.
 */
static bool
has_valid_characters(const char *name, int len)
{
	if (len == 0 || !((name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z')))
		return false;
	for (int i = 1; i < len; i++)
		if (!((name[i] >= 'A' && name[i] <= 'Z') || (name[i] >= 'a' && name[i] <= 'z') ||
			  (name[i] >= '0' && name[i] <= '9')))
			return false;
	return true;
}

/*
 * ts_table_name_is_valid: whether a name could be a table's:
 * ^[A-Za-z][A-Za-z0-9]{2,62}$.
 */
bool
ts_table_name_is_valid(const char *name, int len)
{
	return len >= 3 && len <= 63 && has_valid_characters(name, len);
}

/*
 * Check a table name for create_table and delete_table, with the service's
 * error for each way it can be wrong.
 */
static void
check_table_name(const char *name, int len)
{
	if (len > 0 && !has_valid_characters(name, len))
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

/* The relation name of a (valid) table name: its lower-case form. */
static char *
relation_name(const char *name, int len)
{
	char	   *rel = pnstrdup(name, len);

	for (char *p = rel; *p; p++)
		*p = pg_ascii_tolower((unsigned char) *p);
	return rel;
}

/*
 * ts_table_open: the entity relation of a table, locked in lockmode; the
 * service's TableNotFound if there is no such table.  The lock is taken
 * before the name is resolved for the last time, so that a concurrent
 * delete_table cannot remove the relation under the caller.
 */
Oid
ts_table_open(text *table_name, LOCKMODE lockmode, char **relname)
{
	const char *name = VARDATA_ANY(table_name);
	int			len = VARSIZE_ANY_EXHDR(table_name);
	char	   *rel;
	Oid			relid = InvalidOid;

	if (ts_table_name_is_valid(name, len))
	{
		rel = relation_name(name, len);
		relid = RangeVarGetRelidExtended(makeRangeVar(TS_DATA_SCHEMA, rel, -1),
										 lockmode, RVR_MISSING_OK, NULL, NULL);
		if (relname)
			*relname = rel;
	}
	if (!OidIsValid(relid))
		ts_ereport(ERROR, TS_TableNotFound,
				   errmsg("table \"%.*s\" does not exist", pg_mbcliplen(name, len, 100), name));
	return relid;
}

/*
 * ts_arg_table_name: the table_name argument (argument 0) of an entity or
 * query function, which must not be NULL.
 */
text *
ts_arg_table_name(FunctionCallInfo fcinfo)
{
	if (PG_ARGISNULL(0))
		ts_ereport(ERROR, TS_InvalidInput, errmsg("table_name must not be null"));
	return PG_GETARG_TEXT_PP(0);
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
 * tablestore.create_table(table_name text) RETURNS void
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(create_table);

Datum
create_table(PG_FUNCTION_ARGS)
{
	text	   *table_name = PG_GETARG_TEXT_PP(0);
	const char *name = VARDATA_ANY(table_name);
	int			len = VARSIZE_ANY_EXHDR(table_name);
	char	   *rel;
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		values[2];
	int			ret;
	bool		tskey;

	if (GetDatabaseEncoding() != PG_UTF8)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tablestore requires a database with UTF8 encoding")));

	check_table_name(name, len);
	rel = relation_name(name, len);

	/*
	 * Claim the name in the catalog first: a concurrent create of the same
	 * name waits here for us and then finds the name taken.
	 */
	SPI_connect();
	values[0] = PointerGetDatum(table_name);
	values[1] = CStringGetTextDatum(rel);
	ret = exec_catalog("INSERT INTO " TS_SCHEMA ".tables (table_name, relation_name) "
					   "VALUES ($1, $2) ON CONFLICT DO NOTHING",
					   2, argtypes, values);
	if (ret != SPI_OK_INSERT)
		elog(ERROR, "could not insert into the tablestore catalog: %s", SPI_result_code_string(ret));
	if (SPI_processed == 0)
		ts_ereport(ERROR, TS_TableAlreadyExists,
				   errmsg("table \"%.*s\" already exists", len, name));

	/*
	 * The entity relation, created with the caller's rights, and its only
	 * index: the unique tskey index on the keys (doc/index-am.md).  Until
	 * ALTER EXTENSION UPDATE has created the access method (this library
	 * serving an installation of 0.1.0), a btree primary key instead.
	 */
	tskey = OidIsValid(get_index_am_oid("tskey", true));
	ret = SPI_execute(psprintf("CREATE TABLE " TS_DATA_SCHEMA ".%s ("
							   "pk " TS_SCHEMA ".key NOT NULL, "
							   "rk " TS_SCHEMA ".key NOT NULL, "
							   "ts pg_catalog.timestamptz NOT NULL, "
							   "props pg_catalog.jsonb NOT NULL%s)",
							   quote_identifier(rel), tskey ? "" : ", PRIMARY KEY (pk, rk)"),
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
 * tablestore.delete_table(table_name text) RETURNS void
 *
 * Drops the table's relation: one catalog operation whatever its size.
 * Only the relation's owner (or a member of the owning role) may do it.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(delete_table);

Datum
delete_table(PG_FUNCTION_ARGS)
{
	text	   *table_name = PG_GETARG_TEXT_PP(0);
	const char *name = VARDATA_ANY(table_name);
	int			len = VARSIZE_ANY_EXHDR(table_name);
	char	   *rel;
	Oid			relid;
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];
	int			ret;

	check_table_name(name, len);
	rel = relation_name(name, len);

	/* ownership is checked before the lock is taken */
	relid = RangeVarGetRelidExtended(makeRangeVar(TS_DATA_SCHEMA, rel, -1),
									 AccessExclusiveLock, RVR_MISSING_OK,
									 RangeVarCallbackOwnsRelation, NULL);
	if (!OidIsValid(relid))
		ts_ereport(ERROR, TS_ResourceNotFound,
				   errmsg("table \"%.*s\" does not exist", len, name));

	SPI_connect();
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
