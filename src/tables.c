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

#include "access/amapi.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "parser/parse_func.h"
#include "rewrite/prs2lock.h"
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

static void prevent_ddl_if_read_only(const char *cmdname);

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

/* The callback's argument: the privileges a caller needs, any of them. */
typedef struct TableAclArg
{
	AclMode		mode;
} TableAclArg;

/*
 * RangeVarGetRelidExtended callback of ts_table_open: before the relation is
 * locked, check that the caller has one of the privileges the operation
 * needs, so that a role with no rights on a table cannot take (and hold)
 * a lock on it and queue its owner's DDL and every other client behind it.
 * INSERT or UPDATE granted on columns counts for a write, as it does for
 * plain SQL: the statements of the SPI path (which serves such a role, see
 * ts_direct_usable) check each column they touch.  A read needs SELECT on
 * the whole relation, as queries read it without SQL.
 */
static void
table_acl_callback(const RangeVar *rv, Oid relid, Oid oldrelid, void *arg)
{
	TableAclArg *a = (TableAclArg *) arg;
	AclMode		colmodes = a->mode & (ACL_INSERT | ACL_UPDATE);

	if (!OidIsValid(relid))
		return;
	if (pg_class_aclmask(relid, GetUserId(), a->mode, ACLMASK_ANY) != 0)
		return;
	/* INSERT or UPDATE on some columns is a right to write (see above) */
	if (colmodes != 0 && pg_attribute_aclcheck_all(relid, GetUserId(), colmodes, ACLMASK_ANY) == ACLCHECK_OK)
		return;
	aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, rv->relname);
}

/* The OID of type tablestore.key, or InvalidOid if there is none. */
static Oid
key_type_oid(void)
{
	Oid			nsp = get_namespace_oid(TS_SCHEMA, true);

	if (!OidIsValid(nsp))
		return InvalidOid;
	return GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("key"),
						   ObjectIdGetDatum(nsp));
}

static void relation_altered(Relation heap, const char *what) pg_attribute_noreturn();

/*
 * Report a relation of schema tablestore_data that is not an entity relation
 * as create_table makes it: altered by its owner, or made by hand.
 */
static void
relation_altered(Relation heap, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("relation \"%s\" is not an entity relation as create_table makes it: %s",
					RelationGetRelationName(heap), what),
			 errdetail("An entity relation is a plain table with the columns pk and rk of type "
					   TS_SCHEMA ".key, ts of type timestamptz and props of type jsonb, all NOT NULL, "
					   "and a unique tskey index on (pk, rk), as create_table made it."),
			 errhint("Restore the relation's definition, or move the entities to a new table.")));
}

/*
 * The key index of an entity relation: a valid, ready, unique index on
 * exactly (pk, rk), without predicate or expressions, of the tskey access
 * method (or the btree primary key of a relation made by 0.1.0 and not yet
 * converted); InvalidOid if there is none.
 */
static Oid
find_key_index(Relation heap)
{
	List	   *indexes = RelationGetIndexList(heap);
	Oid			tskey = get_index_am_oid("tskey", true);
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Oid			indexoid = lfirst_oid(lc);
		Relation	index = index_open(indexoid, AccessShareLock);
		Form_pg_index ind = index->rd_index;
		bool		ok;

		ok = ind->indisunique && ind->indisvalid && ind->indisready && ind->indislive &&
			ind->indnatts == 2 && ind->indnkeyatts == 2 &&
			ind->indkey.values[0] == TS_ATT_PK && ind->indkey.values[1] == TS_ATT_RK &&
			(index->rd_rel->relam == tskey || index->rd_rel->relam == BTREE_AM_OID) &&
			index->rd_indam->amcanorder && index->rd_indam->amgettuple != NULL &&
			heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL) &&
			heap_attisnull(index->rd_indextuple, Anum_pg_index_indexprs, NULL);
		index_close(index, AccessShareLock);
		if (ok)
			return indexoid;
	}
	return InvalidOid;
}

/*
 * ts_check_entity_relation: check that a (locked) relation is an entity
 * relation exactly as create_table made it, so that every reader and writer
 * may rely on its row format: a plain heap table, attributes pk and rk of
 * type tablestore.key, ts timestamptz and props jsonb at attribute numbers
 * 1 to 4, all NOT NULL and none generated, no other live column, no rules
 * (a rule could silently turn a write into nothing), no inheritance
 * children (SQL over the relation would see their rows too).  With need_index, also its key
 * index, whose OID is returned.  Anything else is refused with a clear
 * error: the relation may have been altered by its owner, or made by hand.
 */
Oid
ts_check_entity_relation(Relation heap, bool need_index)
{
	static const struct
	{
		const char *name;
		Oid			type;		/* InvalidOid: the key type */
	}			columns[4] = {
		{"pk", InvalidOid}, {"rk", InvalidOid}, {"ts", TIMESTAMPTZOID}, {"props", JSONBOID}
	};
	TupleDesc	desc = RelationGetDescr(heap);
	Oid			key_type = key_type_oid();
	Oid			index = InvalidOid;

	if (heap->rd_rel->relkind != RELKIND_RELATION)
		relation_altered(heap, "it is not a plain table");
	if (heap->rd_rel->relam != HEAP_TABLE_AM_OID)
		relation_altered(heap, "it does not use the heap table access method");
	if (heap->rd_rules != NULL && heap->rd_rules->numLocks > 0)
		relation_altered(heap, "it has rules");
	/* relhassubclass may be stale: look at the children themselves */
	if (heap->rd_rel->relhassubclass && find_inheritance_children(RelationGetRelid(heap), NoLock) != NIL)
		relation_altered(heap, "it has inheritance children");
	if (desc->natts < 4)
		relation_altered(heap, "it lacks columns");
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (i >= 4)
		{
			if (!att->attisdropped)
				relation_altered(heap, "it has columns besides pk, rk, ts and props");
			continue;
		}
		if (att->attisdropped || strcmp(NameStr(att->attname), columns[i].name) != 0)
			relation_altered(heap, psprintf("column %d is not \"%s\"", i + 1, columns[i].name));
		if (att->atttypid != (OidIsValid(columns[i].type) ? columns[i].type : key_type) ||
			!OidIsValid(att->atttypid))
			relation_altered(heap, psprintf("column \"%s\" has the wrong type", columns[i].name));
		if (!att->attnotnull)
			relation_altered(heap, psprintf("column \"%s\" allows nulls", columns[i].name));
		if (att->attgenerated != '\0')
			relation_altered(heap, psprintf("column \"%s\" is generated", columns[i].name));
	}
	if (need_index)
	{
		index = find_key_index(heap);
		if (!OidIsValid(index))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("entity relation \"%s\" has no key index", RelationGetRelationName(heap)),
					 errhint("Create it again: CREATE UNIQUE INDEX ON " TS_DATA_SCHEMA ".%s USING tskey (pk, rk).",
							 quote_identifier(RelationGetRelationName(heap)))));
	}
	return index;
}

/* Report a row of entity relation relname that tablestore cannot serve. */
static void
stored_row_invalid(const char *relname, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("entity relation \"%s\" holds a row with %s", relname, what),
			 errdetail("Every row of an entity relation has non-null keys and properties, and props is a JSON object."),
			 errhint("Find the row with SQL and correct or delete it.")));
}

/*
 * ts_check_stored_row: check a row of entity relation relname as read
 * (values and nulls of its four columns; isnull may be NULL when the reader
 * knows them not null): no null, props a JSON object.  Rows written with
 * plain SQL into a relation without tablestore's CHECK constraints could
 * hold anything; every reader and writer goes through this check, so none
 * misreads such a row (a merge into array props would lose its properties).
 */
void
ts_check_stored_row(const char *relname, const Datum *values, const bool *isnull)
{
	Jsonb	   *props;

	if (isnull != NULL)
		for (int att = 0; att < 4; att++)
			if (isnull[att])
				stored_row_invalid(relname, "a null column");
	props = DatumGetJsonbP(values[TS_ATT_PROPS - 1]);
	if (!JB_ROOT_IS_OBJECT(props) || JB_ROOT_IS_SCALAR(props))
		stored_row_invalid(relname, "props that are not a JSON object");
}

/*
 * ts_table_open: the entity relation of a table, locked in lockmode, after
 * checking that the caller has one of the privileges in required (before the
 * lock is taken) and that the relation is an entity relation with its key
 * index; the service's TableNotFound if there is no such table.  The lock is
 * taken before the name is resolved for the last time, so that a concurrent
 * delete_table cannot remove the relation under the caller.  *keyindex, if
 * given, gets the key index.
 */
Oid
ts_table_open(text *table_name, AclMode required, LOCKMODE lockmode, char **relname, Oid *keyindex)
{
	const char *name = VARDATA_ANY(table_name);
	int			len = VARSIZE_ANY_EXHDR(table_name);
	char	   *rel;
	Oid			relid = InvalidOid;
	Oid			index;
	Relation	heap;
	TableAclArg acl = {required};

	if (ts_table_name_is_valid(name, len))
	{
		rel = relation_name(name, len);
		relid = RangeVarGetRelidExtended(makeRangeVar(TS_DATA_SCHEMA, rel, -1),
										 lockmode, RVR_MISSING_OK, table_acl_callback, &acl);
		if (relname)
			*relname = rel;
	}
	if (!OidIsValid(relid))
		ts_ereport(ERROR, TS_TableNotFound,
				   errmsg("table \"%.*s\" does not exist", pg_mbcliplen(name, len, TS_ECHO_LIMIT), name));

	heap = table_open(relid, NoLock);
	index = ts_check_entity_relation(heap, true);
	table_close(heap, NoLock);
	if (keyindex)
		*keyindex = index;
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
	Oid			argtype = key_type_oid();

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
	rel = relation_name(name, len);
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

	rel = relation_name(name, len);
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
