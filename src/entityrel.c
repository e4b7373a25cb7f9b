/*-------------------------------------------------------------------------
 *
 * entityrel.c
 *	  The entity-relation layer: what every reader and both write paths
 *	  need of a table's entity relation.
 *
 * A table's entities live in tablestore_data.<lower-case name>, a relation
 * exactly as create_table makes it.  This layer sits beneath the catalog
 * (tables.c), the queries (query.c), the operations (entityops.c) and both
 * write paths, the SPI one (entityspi.c) and the direct one (entitywrite.c),
 * which are peers: neither calls the other, both call down into this file.
 * It holds:
 *
 *	- opening a table: from its name to its relation, the caller's rights
 *	  checked before the lock is taken (on every call), then the relation's
 *	  shape and key index (ts_table_open, ts_check_entity_relation), checked
 *	  once and kept in the per-relation cache until an invalidation;
 *	- the check of each stored row as read (ts_check_stored_row);
 *	- the per-relation cache: per backend and relation, the checked shape
 *	  and key index, the SPI path's
 *	  prepared statements and the direct path's planned CHECK constraints,
 *	  pinned while a call uses them, invalidated with the relation's
 *	  relcache entry (and the CHECK trees with any function or type),
 *	  bounded by evicting the least recently used;
 *	- the key index's unique violation as the service's EntityAlreadyExists;
 *	- the conditional checks: If-Match values, the ETag against the stored
 *	  Timestamp, and the service's error for a missing entity.
 *
 * Nothing here calls up into the files above it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/amapi.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "rewrite/prs2lock.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "tablestore.h"
#include "errors.h"
#include "edm.h"
#include "entityrel.h"


/* ----------------------------------------------------------------
 * Opening and checking an entity relation
 * ----------------------------------------------------------------
 */

/*
 * ts_table_name_chars_valid: whether a name has only the characters a
 * table name may have: an ASCII letter first, then ASCII letters and digits.
 */
bool
ts_table_name_chars_valid(const char *name, int len)
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
	return len >= 3 && len <= 63 && ts_table_name_chars_valid(name, len);
}

/*
 * ts_relation_name: the relation name of a (valid) table name: its
 * lower-case form.
 */
char *
ts_relation_name(const char *name, int len)
{
	char	   *rel = pnstrdup(name, len);

	for (char *p = rel; *p; p++)
		*p = pg_ascii_tolower((unsigned char) *p);
	return rel;
}

/* ts_key_type_oid: the OID of type tablestore.key, or InvalidOid if none. */
Oid
ts_key_type_oid(void)
{
	Oid			nsp = get_namespace_oid(TS_SCHEMA, true);

	if (!OidIsValid(nsp))
		return InvalidOid;
	return GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("key"),
						   ObjectIdGetDatum(nsp));
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

static void relation_altered(Relation heap, const char *what) pg_attribute_noreturn();
static Oid	rel_shape_index(Oid relid);

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
	Oid			key_type = ts_key_type_oid();
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
 * What is wrong with a row of an entity relation as read (values and nulls
 * of its four columns; isnull may be NULL when the reader knows them not
 * null), or NULL: a null, props that are not a JSON object.
 */
static const char *
stored_row_problem(const Datum *values, const bool *isnull)
{
	Jsonb	   *props;

	if (isnull != NULL)
		for (int att = 0; att < 4; att++)
			if (isnull[att])
				return "a null column";
	props = DatumGetJsonbP(values[TS_ATT_PROPS - 1]);
	if (!JB_ROOT_IS_OBJECT(props) || JB_ROOT_IS_SCALAR(props))
		return "props that are not a JSON object";
	return NULL;
}

/*
 * ts_check_stored_row: check a row of entity relation relname as read (see
 * stored_row_problem).  Rows written with plain SQL into a relation without
 * tablestore's CHECK constraints could hold anything; every reader and
 * writer goes through this check, so none misreads such a row (a merge into
 * array props would lose its properties).
 */
void
ts_check_stored_row(const char *relname, const Datum *values, const bool *isnull)
{
	const char *problem = stored_row_problem(values, isnull);

	if (problem != NULL)
		stored_row_invalid(relname, problem);
}

/*
 * ts_stored_row_valid: whether ts_check_stored_row would accept the row,
 * without raising (for a writer that read a version that may be stale).
 */
bool
ts_stored_row_valid(const Datum *values, const bool *isnull)
{
	return stored_row_problem(values, isnull) == NULL;
}

/*
 * ts_table_open: the entity relation of a table, locked in lockmode, after
 * checking that the caller has one of the privileges in required (before the
 * lock is taken) and that the relation is an entity relation with its key
 * index; the service's TableNotFound if there is no such table.  The lock is
 * taken before the name is resolved for the last time, so that a concurrent
 * delete_table cannot remove the relation under the caller.  *keyindex, if
 * given, gets the key index.
 *
 * The name is resolved and the privileges checked on every call: a role
 * changes with SET ROLE or SECURITY DEFINER without any invalidation, and
 * resolving the name under the lock is what makes a dropped and re-created
 * table (same name, new relation) safe.  The shape check is kept per
 * relation (rel_shape_index) until an invalidation reaches it.
 */
Oid
ts_table_open(text *table_name, AclMode required, LOCKMODE lockmode, char **relname, Oid *keyindex)
{
	const char *name = VARDATA_ANY(table_name);
	int			len = VARSIZE_ANY_EXHDR(table_name);
	char	   *rel;
	Oid			relid = InvalidOid;
	Oid			index;
	TableAclArg acl = {required};

	if (ts_table_name_is_valid(name, len))
	{
		rel = ts_relation_name(name, len);
		relid = RangeVarGetRelidExtended(makeRangeVar(TS_DATA_SCHEMA, rel, -1),
										 lockmode, RVR_MISSING_OK, table_acl_callback, &acl);
		if (relname)
			*relname = rel;
	}
	if (!OidIsValid(relid))
		ts_ereport(ERROR, TS_TableNotFound,
				   errmsg("table \"%.*s\" does not exist", pg_mbcliplen(name, len, TS_ECHO_LIMIT), name));

	index = rel_shape_index(relid);
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


/* ----------------------------------------------------------------
 * The per-relation cache
 * ----------------------------------------------------------------
 */

/*
 * The planned CHECK constraints of an entity relation for the direct write
 * path: their expression trees.  Only the trees are cached; each write makes
 * its own expression state from a copy of them in its own executor state, as
 * each statement does (ExecRelCheck), so privileges are checked and
 * functions, domains and whole-row values looked up for every write.  What
 * planning read decides when the trees are made again: the relation
 * (relcache), every function and type (the planner inlines SQL functions,
 * whose EXECUTE privilege it checks, parsing them with the search_path), the
 * role and the search_path.
 */
typedef struct CheckCache
{
	bool		valid;			/* false: make the trees again */
	bool		building;		/* being made (planning may run code) */
	void	   *constr;			/* the TupleConstr they were made from */
	Oid			userid;			/* the role they were planned for */
	OverrideSearchPath *search_path;	/* and the search_path */
	MemoryContext cxt;			/* of all the above; NULL: none */
	int			n;
	Expr	  **exprs;			/* the planned CHECK expressions */
	char	  **names;
} CheckCache;

/* The cache entry of one entity relation. */
struct TsEntityRel
{
	Oid			relid;			/* hash key: the entity relation */
	char		relname[NAMEDATALEN];
	Oid			keyindex;		/* its key index, as ts_table_open found it */
	bool		shape_valid;	/* checked, keyindex found, no invalidation since */
	bool		stale;			/* the relation changed or was dropped */
	int			pins;			/* calls using the entry now */
	uint64		last_used;		/* for eviction of the least recently used */
	SPIPlanPtr	statements[TS_REL_STATEMENTS];	/* the SPI path's, or NULL */
	CheckCache	checks;			/* the direct path's */
};

/*
 * At most REL_CACHE_SIZE relations per backend (~80 kB each with all
 * statements prepared), the least recently used evicted first.  An entry is
 * marked stale when its relation's relcache entry is invalidated (ALTER,
 * DROP, ANALYZE, ...) and freed at the next lookup unless a call still uses
 * it, so that no dropped relation keeps its statements.  Its checked shape
 * (shape_valid) is forgotten with it, and also when the key index's own
 * relcache entry is invalidated (see rel_shape_index).  Pins are released
 * at the end of each call, also when it fails (a savepoint may catch the
 * error and the transaction go on to other tables), and all at the end of
 * the transaction.
 */
#define REL_CACHE_SIZE		64

static HTAB *rel_cache = NULL;
static uint64 rel_clock = 0;
static bool rel_cache_has_stale = false;

/* relcache invalidations seen, for a check to tell whether one came meanwhile */
static uint64 rel_inval_count = 0;

/*
 * ts_rel_drop_statements: free the prepared statements of an entry, so that
 * the SPI path prepares them again (it calls this when preparing fails).
 */
void
ts_rel_drop_statements(TsEntityRel *rel)
{
	for (int i = 0; i < TS_REL_STATEMENTS; i++)
	{
		if (rel->statements[i] != NULL)
			SPI_freeplan(rel->statements[i]);
		rel->statements[i] = NULL;
	}
}

/* Free what an entry holds and remove it. */
static void
rel_remove(TsEntityRel *rel)
{
	Oid			relid = rel->relid;

	ts_rel_drop_statements(rel);
	if (rel->checks.cxt != NULL)
		MemoryContextDelete(rel->checks.cxt);
	hash_search(rel_cache, &relid, HASH_REMOVE, NULL);
}

/*
 * Relcache invalidation callback: mark the entry of the relation (of every
 * relation, for InvalidOid) stale, and forget the checked shape of the
 * relations whose key index it is (a pg_index change, such as the index
 * made invalid, invalidates only the index's entry).  Nothing is freed here:
 * an invalidation can arrive while the statements run.
 */
static void
rel_invalidate(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS seq;
	TsEntityRel *rel;

	rel_inval_count++;
	if (rel_cache == NULL)
		return;
	hash_seq_init(&seq, rel_cache);
	while ((rel = hash_seq_search(&seq)) != NULL)
	{
		if (!OidIsValid(relid) || rel->relid == relid)
		{
			rel->stale = rel_cache_has_stale = true;
			rel->checks.valid = false;
			rel->shape_valid = false;
		}
		else if (rel->keyindex == relid)
			rel->shape_valid = false;
	}
}

/*
 * Syscache invalidation callback for functions and types: the planned CHECK
 * expressions of every relation may have inlined an SQL function or depend
 * on a type (see CheckCache); make them all again.  Nothing is freed here
 * (a write may be using them); a write plans from the cache only once and
 * evaluates a copy.
 */
static void
checks_invalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	HASH_SEQ_STATUS seq;
	TsEntityRel *rel;

	if (rel_cache == NULL)
		return;
	hash_seq_init(&seq, rel_cache);
	while ((rel = hash_seq_search(&seq)) != NULL)
		rel->checks.valid = false;
}

/* At the end of a transaction no call uses any entry. */
static void
rel_xact_callback(XactEvent event, void *arg)
{
	HASH_SEQ_STATUS seq;
	TsEntityRel *rel;

	if (rel_cache == NULL || (event != XACT_EVENT_ABORT && event != XACT_EVENT_PARALLEL_ABORT &&
							  event != XACT_EVENT_COMMIT && event != XACT_EVENT_PARALLEL_COMMIT &&
							  event != XACT_EVENT_PREPARE))
		return;
	hash_seq_init(&seq, rel_cache);
	while ((rel = hash_seq_search(&seq)) != NULL)
		rel->pins = 0;
}

/* qsort comparator: least recently used first */
static int
rel_lru_cmp(const void *a, const void *b)
{
	uint64		x = (*(TsEntityRel *const *) a)->last_used;
	uint64		y = (*(TsEntityRel *const *) b)->last_used;

	return (x > y) - (x < y);
}

/*
 * Free the stale entries no call uses and, while the cache is full, the
 * least recently used unused ones, so that it makes room for one more
 * (however far past its size pinned entries took it).
 */
static void
rel_sweep(void)
{
	HASH_SEQ_STATUS seq;
	TsEntityRel *rel;
	TsEntityRel **unused;
	long		nentries = hash_get_num_entries(rel_cache);
	int			nunused = 0;
	List	   *doomed = NIL;
	ListCell   *lc;

	if (!rel_cache_has_stale && nentries < REL_CACHE_SIZE)
		return;
	rel_cache_has_stale = false;
	unused = palloc(sizeof(TsEntityRel *) * nentries);
	hash_seq_init(&seq, rel_cache);
	while ((rel = hash_seq_search(&seq)) != NULL)
	{
		if (rel->pins > 0)
		{
			if (rel->stale)
				rel_cache_has_stale = true; /* try again later */
			continue;
		}
		if (rel->stale)
			doomed = lappend(doomed, rel);
		else
			unused[nunused++] = rel;
	}
	qsort(unused, nunused, sizeof(TsEntityRel *), rel_lru_cmp);
	for (int i = 0; i < nunused && nentries - list_length(doomed) >= REL_CACHE_SIZE; i++)
		doomed = lappend(doomed, unused[i]);
	foreach(lc, doomed)
		rel_remove(lfirst(lc));
	list_free(doomed);
	pfree(unused);
}

/*
 * The cache entry of a relation, made (empty) if there is none, after freeing
 * the stale and surplus entries no call uses.
 */
static TsEntityRel *
rel_entry(Oid relid)
{
	TsEntityRel *rel;
	bool		found;

	if (rel_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(TsEntityRel);
		ctl.hcxt = AllocSetContextCreate(TopMemoryContext, "tablestore relation cache",
										 ALLOCSET_DEFAULT_SIZES);
		rel_cache = hash_create("tablestore relation cache", REL_CACHE_SIZE, &ctl,
								HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		CacheRegisterRelcacheCallback(rel_invalidate, (Datum) 0);
		CacheRegisterSyscacheCallback(PROCOID, checks_invalidate, (Datum) 0);
		CacheRegisterSyscacheCallback(TYPEOID, checks_invalidate, (Datum) 0);
		RegisterXactCallback(rel_xact_callback, NULL);
	}
	rel_sweep();

	rel = hash_search(rel_cache, &relid, HASH_ENTER, &found);
	if (!found)
		memset((char *) rel + sizeof(Oid), 0, sizeof(TsEntityRel) - sizeof(Oid));
	rel->last_used = ++rel_clock;
	return rel;
}

/*
 * Check the (locked, open) relation's shape and find its key index; keep the
 * result in the entry unless an invalidation arrived during the check (the
 * check takes locks, which accept invalidations), so that the next check
 * runs again.
 */
static Oid
rel_check_shape(TsEntityRel *rel)
{
	uint64		seen = rel_inval_count;
	Relation	heap = table_open(rel->relid, NoLock);
	Oid			index = ts_check_entity_relation(heap, true);

	table_close(heap, NoLock);
	if (rel_inval_count == seen)
		rel->shape_valid = true;
	return index;
}

/*
 * The key index of a relation that ts_table_open has locked, its shape
 * checked (ts_check_entity_relation), or known checked: the result is kept
 * per backend and relation until an invalidation reaches the relation's
 * relcache entry or its key index's.  Everything the check reads is in those
 * two entries, and every change to it invalidates one of them:
 *
 *	- the kind, access method, rules, columns (names, types, NOT NULL,
 *	  generated, dropped) and index list of the relation are the relation's
 *	  relcache entry, rebuilt on any pg_class, pg_attribute, pg_rewrite or
 *	  pg_index change of it, and on CREATE/DROP INDEX;
 *	- an inheritance child: adding one (CREATE TABLE ... INHERITS, ALTER
 *	  TABLE ... INHERIT) invalidates the parent's entry even when
 *	  relhassubclass is already set (SetRelationHasSubclass);
 *	- the key index's flags (valid, ready, live) are its pg_index row, whose
 *	  change invalidates the index's own entry only (hence keyindex);
 *	- the key type's OID: a column's type cannot change without invalidating
 *	  the relation, and the type cannot be dropped while a column has it.
 *
 * An invalidation made by another session is accepted here, on every call
 * (before, the check saw another session's change only once this
 * transaction took the lock, mostly); one made in this transaction is
 * processed at its next command.  Only a success is kept: a relation refused
 * is checked (and refused) again on each call.
 */
static Oid
rel_shape_index(Oid relid)
{
	TsEntityRel *rel;
	Oid			index;

	/*
	 * Take the invalidations other sessions committed since, even when this
	 * transaction held its lock already (the lock then accepts none): an
	 * inheritance child can be added under a RowExclusiveLock.  Cheap when
	 * there are none.
	 */
	AcceptInvalidationMessages();
	rel = rel_entry(relid);
	if (rel->shape_valid)
		return rel->keyindex;
	index = rel_check_shape(rel);
	/* a call under way (pinned) keeps the key index it found */
	if (rel->pins > 0 && index != rel->keyindex)
	{
		Relation	heap = table_open(relid, NoLock);

		rel->shape_valid = false;
		relation_altered(heap, "its key index was replaced");
	}
	rel->keyindex = index;
	return index;
}

/*
 * ts_rel_pin: the cache entry of an entity relation that ts_table_open
 * opened (relname and keyindex as it found them), pinned until ts_rel_unpin
 * (or the end of the transaction).
 */
TsEntityRel *
ts_rel_pin(Oid relid, const char *relname, Oid keyindex)
{
	TsEntityRel *rel = rel_entry(relid);

	rel->pins++;
	strlcpy(rel->relname, relname, NAMEDATALEN);
	if (rel->keyindex != keyindex)
		rel->shape_valid = false;
	rel->keyindex = keyindex;
	return rel;
}

/* ts_rel_unpin: unpin an entry of ts_rel_pin. */
void
ts_rel_unpin(TsEntityRel *rel)
{
	if (rel->pins > 0)
		rel->pins--;
}

/* ts_rel_relid: the entity relation of a cache entry. */
Oid
ts_rel_relid(TsEntityRel *rel)
{
	return rel->relid;
}

/* ts_rel_relname: the relation's name (in schema tablestore_data). */
const char *
ts_rel_relname(TsEntityRel *rel)
{
	return rel->relname;
}

/* ts_rel_keyindex: the relation's key index (ts_rel_pin was told it). */
Oid
ts_rel_keyindex(TsEntityRel *rel)
{
	return rel->keyindex;
}

/*
 * ts_rel_recheck: check again that the (locked, open) entity relation of rel
 * is one tablestore serves, with the key index it was found with, as
 * ts_table_open checked it: for the operations of a batch after the first,
 * since an operation may change the relation under the batch (an owner's
 * CHECK function that runs CREATE RULE, DROP INDEX or the like in the same
 * transaction; other sessions only add inheritance children, the rest
 * conflicting with the batch's lock).  The check runs only when an invalidation of the relation or its key index
 * arrived since the last one (rel_shape_index): DDL of the same transaction
 * is accepted at its next command, so it is seen before the next operation.
 * What each write path relies on beyond the relation's form (triggers,
 * row-level security, privileges) ts_direct_usable decides for each
 * operation; ALTER TABLE and CREATE INDEX refuse a relation the batch holds
 * open.
 */
void
ts_rel_recheck(TsEntityRel *rel)
{
	Oid			index;

	AcceptInvalidationMessages();	/* as rel_shape_index */
	if (rel->shape_valid)
		return;
	index = rel_check_shape(rel);
	if (index != rel->keyindex)
	{
		Relation	heap = table_open(rel->relid, NoLock);

		rel->shape_valid = false;
		relation_altered(heap, "its key index was replaced");
	}
}

/*
 * ts_rel_statements: the slots of the relation's prepared statements, kept
 * with the entry and freed with it.  The SPI path fills them (with
 * SPI_keepplan'd plans) and calls ts_rel_drop_statements if it fails
 * half-way.
 */
SPIPlanPtr *
ts_rel_statements(TsEntityRel *rel)
{
	return rel->statements;
}

/*
 * Plan the CHECK constraints of the relation into the cache, as ExecRelCheck
 * plans them for each statement (ExecPrepareExpr): for the current role and
 * search_path.  Whatever fails leaves no trees behind, so that the next
 * write plans them again.  An invalidation arriving while planning leaves
 * the trees marked invalid: the write uses them, the next one plans again.
 * Planning can run code (an immutable function of constant arguments is
 * evaluated), even a write of this relation: that write finds the cache
 * being built and plans its own (ts_rel_check_exprs).
 */
static void
build_checks(CheckCache *cache, Relation heap)
{
	TupleConstr *constr = heap->rd_att->constr;
	MemoryContext cxt;
	MemoryContext old;

	if (cache->cxt != NULL)
		MemoryContextDelete(cache->cxt);
	cache->cxt = NULL;
	cache->n = 0;
	cache->valid = false;
	if (constr == NULL || constr->num_check == 0)
	{
		cache->constr = constr;
		cache->userid = InvalidOid;
		cache->valid = true;
		return;
	}
	cxt = AllocSetContextCreate(TopMemoryContext, "tablestore check constraints",
								ALLOCSET_SMALL_SIZES);
	cache->valid = true;
	cache->building = true;
	PG_TRY();
	{
		old = MemoryContextSwitchTo(cxt);
		cache->exprs = palloc(sizeof(Expr *) * constr->num_check);
		cache->names = palloc(sizeof(char *) * constr->num_check);
		for (int i = 0; i < constr->num_check; i++)
		{
			cache->exprs[i] = expression_planner(stringToNode(constr->check[i].ccbin));
			cache->names[i] = pstrdup(constr->check[i].ccname);
		}
		cache->search_path = GetOverrideSearchPath(cxt);
		MemoryContextSwitchTo(old);
	}
	PG_CATCH();
	{
		cache->valid = false;
		cache->building = false;
		MemoryContextDelete(cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	cache->building = false;
	cache->cxt = cxt;
	cache->constr = constr;
	cache->userid = GetUserId();
	cache->n = constr->num_check;
}

/*
 * ts_rel_check_exprs: the planned CHECK constraints of the entry's relation
 * (open as heap), as trees of the write's own in the current memory context
 * for it to initialize, and their names; returns how many.  They come from
 * the cache, valid for the relation, the role and the search_path, else
 * planned again; a write made while the cache is being planned (by code
 * that planning runs) plans its own, as ExecRelCheck would.  The trees are
 * copied before the caller initializes them: initializing may run code that
 * plans the cache again.
 */
int
ts_rel_check_exprs(TsEntityRel *rel, Relation heap, Expr ***exprs, char ***names)
{
	CheckCache *cache = &rel->checks;
	TupleConstr *constr = heap->rd_att->constr;
	int			n;

	if (cache->building)
	{
		n = constr ? constr->num_check : 0;
		*exprs = palloc(sizeof(Expr *) * Max(n, 1));
		*names = palloc(sizeof(char *) * Max(n, 1));
		for (int i = 0; i < n; i++)
		{
			(*exprs)[i] = expression_planner(stringToNode(constr->check[i].ccbin));
			(*names)[i] = pstrdup(constr->check[i].ccname);
		}
		return n;
	}
	if (!cache->valid || cache->constr != (void *) constr ||
		(cache->n > 0 && (cache->userid != GetUserId() ||
						  !OverrideSearchPathMatchesCurrent(cache->search_path))))
		build_checks(cache, heap);
	n = cache->n;
	*exprs = palloc(sizeof(Expr *) * Max(n, 1));
	*names = palloc(sizeof(char *) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		(*exprs)[i] = copyObject(cache->exprs[i]);
		(*names)[i] = pstrdup(cache->names[i]);
	}
	return n;
}


/* ----------------------------------------------------------------
 * The key index's unique violation
 * ----------------------------------------------------------------
 */

/*
 * ts_rel_key_index_name: the name of the relation's key index, looked up
 * before a write that may violate it (not in the error handler, where the
 * catalog is best left alone).
 */
pg_noinline char *
ts_rel_key_index_name(TsEntityRel *rel)
{
	char	   *name = get_rel_name(rel->keyindex);

	if (name == NULL)
		elog(ERROR, "cache lookup failed for index %u", rel->keyindex);
	return name;
}

/*
 * ts_rel_is_key_violation: whether edata is a unique violation of the key
 * index named keyname (rather than of another unique index the owner added,
 * whose error is the caller's to see as it is, naming that index, as plain
 * SQL's is).
 */
bool
ts_rel_is_key_violation(const char *keyname, ErrorData *edata)
{
	return edata->sqlerrcode == ERRCODE_UNIQUE_VIOLATION && edata->constraint_name != NULL &&
		strcmp(edata->constraint_name, keyname) == 0;
}

/*
 * ts_rel_raise_if_key_violation: in a PG_CATCH block, if the error being
 * handled is a unique violation of key (pk, rk) in the key index keyname,
 * raise EntityAlreadyExists instead (without the internal statement as
 * context, naming the index as the index's own error does).  Otherwise
 * return, for the caller to re-throw.
 */
void
ts_rel_raise_if_key_violation(TsEntityRel *rel, const char *keyname, text *pk, text *rk)
{
	ErrorData  *edata = CopyErrorData();

	if (!ts_rel_is_key_violation(keyname, edata))
	{
		FreeErrorData(edata);
		return;
	}
	FlushErrorState();
	ts_ereport(ERROR, TS_EntityAlreadyExists,
			   errmsg("entity (\"%s\", \"%s\") already exists", ts_clip_text(pk), ts_clip_text(rk)),
			   err_generic_string(PG_DIAG_SCHEMA_NAME, TS_DATA_SCHEMA),
			   err_generic_string(PG_DIAG_TABLE_NAME, rel->relname),
			   err_generic_string(PG_DIAG_CONSTRAINT_NAME, keyname));
}


/* ----------------------------------------------------------------
 * The conditional checks and the missing entity
 * ----------------------------------------------------------------
 */

/*
 * is_entity_tag: whether s is an RFC 7232 entity-tag: an optional weak
 * prefix W/ (w/ too, as the service takes it), then a quoted string of
 * etagc characters (no '"', no controls or space).
 */
static bool
is_entity_tag(const char *s)
{
	size_t		n;

	if ((s[0] == 'W' || s[0] == 'w') && s[1] == '/')
		s += 2;
	n = strlen(s);
	if (n < 2 || s[0] != '"' || s[n - 1] != '"')
		return false;
	for (size_t i = 1; i < n - 1; i++)
	{
		unsigned char c = (unsigned char) s[i];

		if (c <= 0x20 || c == '"' || c == 0x7f)
			return false;
	}
	return true;
}

/*
 * ts_parse_if_match: parse an If-Match value: "*" (any version: returns
 * false) or an entity tag (returns true with the ticks it stands for, or
 * TS_TICKS_NO_MATCH for a tag that is not one of ours).
 */
bool
ts_parse_if_match(const char *s, int64 *ticks)
{
	if (s == NULL)
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("if_match must not be null"),
				   errhint("Pass an ETag, or '*' to match any version."));
	if (strcmp(s, "*") == 0)
		return false;
	if (ts_parse_etag(s, ticks))
		return true;
	/*
	 * An entity tag that is not one of ours (W/"wrong", a lower-case w/, a
	 * strong tag) is a condition no entity meets, as the service answers it:
	 * the write fails with UpdateConditionNotSatisfied, or ResourceNotFound
	 * when there is no entity.  Only what is not an entity tag at all is
	 * malformed input.
	 */
	if (is_entity_tag(s))
	{
		*ticks = TS_TICKS_NO_MATCH;
		return true;
	}
	ts_ereport(ERROR, TS_InvalidInput,
			   errmsg("ETag value \"%s\" is not valid", ts_clip(s, strlen(s))),
			   errhint("ETags look like W/\"datetime'2024-01-01T00%%3A00%%3A00.123456Z'\"; use the odata.etag of an entity, or '*'."));
	return true;				/* not reached */
}

/*
 * ts_if_match_timestamp: the Timestamp an If-Match ETag of these ticks
 * stands for, for a statement to compare with the stored one: an ETag finer
 * than a microsecond (or not one of ours) matches no Timestamp of ours, so
 * it stands for -infinity, which no entity has.
 */
TimestampTz
ts_if_match_timestamp(int64 ticks)
{
	TimestampTz ts = ts_ticks_to_timestamptz(ticks);

	return ts_timestamptz_to_ticks(ts) == ticks ? ts : DT_NOBEGIN;
}

/* ts_entity_not_found: the service's error for a missing entity. */
void
ts_entity_not_found(text *pk, text *rk)
{
	ts_ereport(ERROR, TS_ResourceNotFound,
			   errmsg("entity (\"%s\", \"%s\") does not exist", ts_clip_text(pk), ts_clip_text(rk)));
}

/*
 * ts_check_if_match: the If-Match condition (conditional, ticks of the
 * ETag) against the Timestamp of the entity as stored now.
 */
void
ts_check_if_match(TimestampTz stored_ts, bool conditional, int64 ticks, text *pk, text *rk)
{
	if (conditional && ts_timestamptz_to_ticks(stored_ts) != ticks)
		ts_ereport(ERROR, TS_UpdateConditionNotSatisfied,
				   errmsg("entity (\"%s\", \"%s\") does not match the ETag of if_match",
						  ts_clip_text(pk), ts_clip_text(rk)),
				   errhint("The entity has changed since that ETag was read; read it again."));
}
