/*-------------------------------------------------------------------------
 *
 * entityops.c
 *	  The single-entity operations: insert, update (replace), merge,
 *	  insert-or-replace, insert-or-merge, delete and get.
 *
 * Each operation validates its input first (so that bad input changes
 * nothing), locks the table's entity relation, and runs prepared
 * statements through SPI with the caller's rights, so PostgreSQL's
 * privileges on the entity relation decide what a role may do.  The
 * statements of each relation are prepared once per backend and kept in a
 * cache keyed by relation name; they name every object and operator with
 * its schema, so no search_path can change what they do.
 *
 * Concurrency: Replace and Merge are one UPDATE each, with the If-Match
 * condition in its WHERE clause and the merge done by jsonb operators, so the
 * row lock and PostgreSQL's recheck of the latest row version decide: two
 * writers holding the same ETag cannot both succeed.  When no row matched, a
 * read tells a missing entity from a changed one, and a write that waited
 * for a row deleted and re-inserted meanwhile goes round.  An insert just
 * inserts: the relation's unique tskey index waits for a concurrent inserter
 * of the same key and raises EntityAlreadyExists if that one commits (ON
 * CONFLICT is not available, PostgreSQL 15 allows it only with btree
 * indexes).  The upserts loop: update if the entity exists, else insert in a
 * subtransaction; an insert that loses a race is rolled back and goes round
 * again to update the winner's row.  Timestamps are computed in the UPDATE
 * from the clock and the previous Timestamp, so they increase per entity
 * even within a microsecond.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/syscache.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "tablestore.h"

/* Prepared statements of one entity relation. */
struct RelPlans
{
	Oid			relid;			/* hash key: the entity relation */
	char		relname[NAMEDATALEN];
	Oid			keyindex;		/* its key index, as ts_table_open found it */
	bool		stale;			/* the relation changed or was dropped */
	int			pins;			/* calls using the plans now */
	uint64		last_used;		/* for eviction of the least recently used */
	SPIPlanPtr	get;			/* (pk, rk) -> ts, props */
	SPIPlanPtr	insert;			/* (pk, rk, ts, props) */
	SPIPlanPtr	replace;		/* (pk, rk, clock, props, etag ts or NULL) -> ts, props */
	SPIPlanPtr	merge;			/* (pk, rk, clock, props, etag ts or NULL, names) -> ts, props */
	SPIPlanPtr	delete_any;		/* (pk, rk) */
	SPIPlanPtr	delete_if;		/* (pk, rk, ts) */
	TsCheckCache checks;		/* for the direct write path */
};

/*
 * The plan cache: at most PLAN_CACHE_SIZE relations' statements per backend
 * (~80 kB each), the least recently used evicted first.  An entry is marked
 * stale when its relation's relcache entry is invalidated (ALTER, DROP,
 * ANALYZE, ...) and freed at the next lookup unless a call still uses it, so
 * that no dropped relation keeps its statements.  Pins are released at the
 * end of each call, also when it fails (a savepoint may catch the error and
 * the transaction go on to other tables), and all at the end of the
 * transaction.
 */
#define PLAN_CACHE_SIZE		64

static HTAB *plan_cache = NULL;
static uint64 plan_clock = 0;
static bool plan_cache_has_stale = false;

static void check_insert_privilege(RelPlans *plans);

/* The largest number of rounds an upsert makes before giving up. */
#define UPSERT_MAX_ROUNDS	100

/*
 * The Timestamp of a write: the clock ($3), but always after the entity's
 * previous Timestamp, so that it increases even within one microsecond.
 */
#define NEXT_TS "GREATEST($3, ts OPERATOR(pg_catalog.+) '1 microsecond'::pg_catalog.interval)"
/* If-Match: $5 is the ETag's Timestamp, or NULL for '*' */
#define ETAG_MATCH "($5 IS NULL OR ts OPERATOR(pg_catalog.=) $5)"

/* keys are passed as text and compared as tablestore.key (a free cast) */
#define KEY_MATCH "pk OPERATOR(" TS_SCHEMA ".=) $1::" TS_SCHEMA ".key " \
	"AND rk OPERATOR(" TS_SCHEMA ".=) $2::" TS_SCHEMA ".key"

static SPIPlanPtr
prepare(const char *sql, int nargs, Oid *argtypes)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, argtypes);

	if (plan == NULL)
		elog(ERROR, "could not prepare \"%s\": %s", sql, SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "could not keep plan for \"%s\"", sql);
	return plan;
}

/* Free the statements of an entry and remove it. */
static void
plans_remove(RelPlans *p)
{
	SPIPlanPtr *plans[6] = {&p->get, &p->insert, &p->replace, &p->merge, &p->delete_any, &p->delete_if};
	Oid			relid = p->relid;

	for (int i = 0; i < (int) lengthof(plans); i++)
		if (*plans[i] != NULL)
			SPI_freeplan(*plans[i]);
	if (p->checks.cxt != NULL)
		MemoryContextDelete(p->checks.cxt);
	hash_search(plan_cache, &relid, HASH_REMOVE, NULL);
}

/*
 * Relcache invalidation callback: mark the statements of the relation (of
 * every relation, for InvalidOid) stale.  Nothing is freed here: an
 * invalidation can arrive while the statements run.
 */
static void
plans_invalidate(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS seq;
	RelPlans   *p;

	if (plan_cache == NULL)
		return;
	if (OidIsValid(relid))
	{
		p = hash_search(plan_cache, &relid, HASH_FIND, NULL);
		if (p != NULL)
		{
			p->stale = plan_cache_has_stale = true;
			p->checks.valid = false;
		}
		return;
	}
	hash_seq_init(&seq, plan_cache);
	while ((p = hash_seq_search(&seq)) != NULL)
	{
		p->stale = plan_cache_has_stale = true;
		p->checks.valid = false;
	}
}

/*
 * Syscache invalidation callback for functions and types: the planned CHECK
 * expressions of every relation may have inlined an SQL function or depend
 * on a type (see TsCheckCache); make them all again.  Nothing is freed here
 * (a write may be using them); a write plans from the cache only once and
 * evaluates a copy.
 */
static void
checks_invalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	HASH_SEQ_STATUS seq;
	RelPlans   *p;

	if (plan_cache == NULL)
		return;
	hash_seq_init(&seq, plan_cache);
	while ((p = hash_seq_search(&seq)) != NULL)
		p->checks.valid = false;
}

/* At the end of a transaction no call uses any statements. */
static void
plans_xact_callback(XactEvent event, void *arg)
{
	HASH_SEQ_STATUS seq;
	RelPlans   *p;

	if (plan_cache == NULL || (event != XACT_EVENT_ABORT && event != XACT_EVENT_PARALLEL_ABORT &&
							   event != XACT_EVENT_COMMIT && event != XACT_EVENT_PARALLEL_COMMIT &&
							   event != XACT_EVENT_PREPARE))
		return;
	hash_seq_init(&seq, plan_cache);
	while ((p = hash_seq_search(&seq)) != NULL)
		p->pins = 0;
}

/* qsort comparator: least recently used first */
static int
plans_lru_cmp(const void *a, const void *b)
{
	uint64		x = (*(RelPlans *const *) a)->last_used;
	uint64		y = (*(RelPlans *const *) b)->last_used;

	return (x > y) - (x < y);
}

/*
 * Free the stale entries no call uses and, while the cache is full, the
 * least recently used unused ones, so that it makes room for one more
 * (however far past its size pinned entries took it).
 */
static void
plans_sweep(void)
{
	HASH_SEQ_STATUS seq;
	RelPlans   *p;
	RelPlans  **unused;
	long		nentries = hash_get_num_entries(plan_cache);
	int			nunused = 0;
	List	   *doomed = NIL;
	ListCell   *lc;

	if (!plan_cache_has_stale && nentries < PLAN_CACHE_SIZE)
		return;
	plan_cache_has_stale = false;
	unused = palloc(sizeof(RelPlans *) * nentries);
	hash_seq_init(&seq, plan_cache);
	while ((p = hash_seq_search(&seq)) != NULL)
	{
		if (p->pins > 0)
		{
			if (p->stale)
				plan_cache_has_stale = true;	/* try again later */
			continue;
		}
		if (p->stale)
			doomed = lappend(doomed, p);
		else
			unused[nunused++] = p;
	}
	qsort(unused, nunused, sizeof(RelPlans *), plans_lru_cmp);
	for (int i = 0; i < nunused && nentries - list_length(doomed) >= PLAN_CACHE_SIZE; i++)
		doomed = lappend(doomed, unused[i]);
	foreach(lc, doomed)
		plans_remove(lfirst(lc));
	list_free(doomed);
	pfree(unused);
}

/*
 * ts_get_plans: the prepared statements of an entity relation, pinned until
 * ts_release_plans (or the end of the transaction); call inside
 * SPI_connect.
 */
RelPlans *
ts_get_plans(Oid relid, const char *relname, Oid keyindex)
{
	RelPlans   *p;
	bool		found;

	if (plan_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(RelPlans);
		ctl.hcxt = AllocSetContextCreate(TopMemoryContext, "tablestore plan cache",
										 ALLOCSET_DEFAULT_SIZES);
		plan_cache = hash_create("tablestore plan cache", PLAN_CACHE_SIZE, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		CacheRegisterRelcacheCallback(plans_invalidate, (Datum) 0);
		CacheRegisterSyscacheCallback(PROCOID, checks_invalidate, (Datum) 0);
		CacheRegisterSyscacheCallback(TYPEOID, checks_invalidate, (Datum) 0);
		RegisterXactCallback(plans_xact_callback, NULL);
	}
	plans_sweep();

	p = hash_search(plan_cache, &relid, HASH_ENTER, &found);
	if (!found)
	{
		const char *rel = quote_qualified_identifier(TS_DATA_SCHEMA, relname);
		Oid			types[6] = {TEXTOID, TEXTOID, TIMESTAMPTZOID, JSONBOID, TIMESTAMPTZOID, TEXTARRAYOID};

		memset((char *) p + sizeof(Oid), 0, sizeof(RelPlans) - sizeof(Oid));

		/*
		 * leave no half-made entry behind if preparing fails; ONLY: an
		 * inheritance child is not part of the table
		 */
		PG_TRY();
		{
			p->get = prepare(psprintf("SELECT ts, props FROM ONLY %s WHERE " KEY_MATCH, rel), 2, types);
			p->insert = prepare(psprintf("INSERT INTO %s (pk, rk, ts, props) VALUES ($1, $2, $3, $4)",
										 rel), 4, types);
			p->replace = prepare(psprintf("UPDATE ONLY %s SET ts = " NEXT_TS ", props = $4 WHERE " KEY_MATCH
										  " AND " ETAG_MATCH " RETURNING ts, props", rel), 5, types);
			p->merge = prepare(psprintf("UPDATE ONLY %s SET ts = " NEXT_TS ", "
										"props = (props OPERATOR(pg_catalog.-) $6) OPERATOR(pg_catalog.||) $4 "
										"WHERE " KEY_MATCH " AND " ETAG_MATCH " RETURNING ts, props", rel),
							   6, types);
			p->delete_any = prepare(psprintf("DELETE FROM ONLY %s WHERE " KEY_MATCH, rel), 2, types);
			p->delete_if = prepare(psprintf("DELETE FROM ONLY %s WHERE " KEY_MATCH
											" AND ts OPERATOR(pg_catalog.=) $3", rel), 3, types);
		}
		PG_CATCH();
		{
			plans_remove(p);
			PG_RE_THROW();
		}
		PG_END_TRY();
	}
	p->pins++;
	p->last_used = ++plan_clock;
	strlcpy(p->relname, relname, NAMEDATALEN);
	p->keyindex = keyindex;
	return p;
}

/* The entity relation of a cache entry. */
Oid
ts_plans_relid(RelPlans *plans)
{
	return plans->relid;
}

/* The key index of a cache entry's relation (ts_get_plans was told it). */
Oid
ts_plans_keyindex(RelPlans *plans)
{
	return plans->keyindex;
}

/* The planned CHECK constraints of a cache entry (see TsCheckCache). */
TsCheckCache *
ts_plans_checks(RelPlans *plans)
{
	return &plans->checks;
}

/* ts_release_plans: unpin the statements of ts_get_plans. */
void
ts_release_plans(RelPlans *plans)
{
	if (plans->pins > 0)
		plans->pins--;
}

/* A stored entity as read back. */
typedef struct StoredEntity
{
	bool		found;
	TimestampTz ts;
	Jsonb	   *props;			/* in the SPI context */
} StoredEntity;

/* Check the props a statement read or wrote (see ts_check_stored_row). */
static void
check_returned_props(RelPlans *plans, Jsonb *props)
{
	Datum		values[4] = {0, 0, 0, JsonbPGetDatum(props)};

	ts_check_stored_row(plans->relname, values, NULL);
}

/*
 * Read the entity (pk, rk) with the relation's get statement.
 */
static StoredEntity
read_entity(RelPlans *plans, text *pk, text *rk, bool read_only)
{
	SPIPlanPtr	plan = plans->get;
	Datum		args[2] = {PointerGetDatum(pk), PointerGetDatum(rk)};
	StoredEntity r = {false, 0, NULL};
	bool		isnull;
	int			ret;

	ret = SPI_execute_plan(plan, args, NULL, read_only, 2);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read entity: %s", SPI_result_code_string(ret));
	if (SPI_processed > 0)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;

		r.found = true;
		r.ts = DatumGetTimestampTz(SPI_getbinval(tup, desc, 1, &isnull));
		r.props = DatumGetJsonbP(SPI_getbinval(tup, desc, 2, &isnull));
		check_returned_props(plans, r.props);
	}
	return r;
}

/*
 * Run a write statement (insert or update) with all four arguments;
 * returns the number of rows written.
 */
static uint64
write_entity(SPIPlanPtr plan, text *pk, text *rk, TimestampTz ts, Jsonb *props)
{
	Datum		args[4] = {PointerGetDatum(pk), PointerGetDatum(rk),
	TimestampTzGetDatum(ts), JsonbPGetDatum(props)};
	int			ret = SPI_execute_plan(plan, args, NULL, false, 0);

	if (ret != SPI_OK_INSERT && ret != SPI_OK_UPDATE)
		elog(ERROR, "could not write entity: %s", SPI_result_code_string(ret));
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_TRIGGERED_ACTION_EXCEPTION),
				 errmsg("entity (\"%s\", \"%s\") was not stored", ts_clip_text(pk), ts_clip_text(rk)),
				 errdetail("A trigger of the entity relation skipped the write."),
				 errhint("An entity relation's BEFORE triggers must return the row.")));
	return SPI_processed;
}

/*
 * The name of the relation's key index, looked up before a write that may
 * violate it (not in the error handler, where the catalog is best left
 * alone).
 */
static pg_noinline char *
key_index_name(RelPlans *plans)
{
	char	   *name = get_rel_name(plans->keyindex);

	if (name == NULL)
		elog(ERROR, "cache lookup failed for index %u", plans->keyindex);
	return name;
}

/*
 * Whether edata is a unique violation of the key index named keyname
 * (rather than of another unique index the owner added, whose error is the
 * caller's to see as it is, naming that index, as plain SQL's is).
 */
static bool
is_key_violation(const char *keyname, ErrorData *edata)
{
	return edata->sqlerrcode == ERRCODE_UNIQUE_VIOLATION && edata->constraint_name != NULL &&
		strcmp(edata->constraint_name, keyname) == 0;
}

/*
 * In a PG_CATCH block: if the error being handled is a unique violation of
 * key (pk, rk) in the key index keyname, raise EntityAlreadyExists instead
 * (without the internal statement as context, naming the index as the
 * index's own error does).  Otherwise return, for the caller to re-throw.
 */
static void
raise_if_key_violation(RelPlans *plans, const char *keyname, text *pk, text *rk)
{
	ErrorData  *edata = CopyErrorData();

	if (!is_key_violation(keyname, edata))
	{
		FreeErrorData(edata);
		return;
	}
	FlushErrorState();
	ts_ereport(ERROR, TS_EntityAlreadyExists,
			   errmsg("entity (\"%s\", \"%s\") already exists", ts_clip_text(pk), ts_clip_text(rk)),
			   err_generic_string(PG_DIAG_SCHEMA_NAME, TS_DATA_SCHEMA),
			   err_generic_string(PG_DIAG_TABLE_NAME, plans->relname),
			   err_generic_string(PG_DIAG_CONSTRAINT_NAME, keyname));
}

/*
 * Insert an entity; EntityAlreadyExists if its key exists.  The key index
 * detects the conflict (after waiting for a concurrent inserter of the key);
 * its unique violation is reported as the service's error, without the
 * internal statement as context (and the same for a relation still indexed
 * by a btree primary key, before ALTER EXTENSION UPDATE converts it).
 */
static void
insert_one(RelPlans *plans, text *pk, text *rk, TimestampTz ts, Jsonb *props)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	char	   *keyname = key_index_name(plans);

	PG_TRY();
	{
		write_entity(plans->insert, pk, rk, ts, props);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcontext);
		raise_if_key_violation(plans, keyname, pk, rk);
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/*
 * ts_run_in_subtransaction: run fn(arg) in an internal subtransaction.
 * Returns NULL if it succeeded; otherwise the subtransaction is rolled back
 * and the error fn raised is returned, flushed, for the caller to look at
 * or raise again.
 */
ErrorData *
ts_run_in_subtransaction(void (*fn) (void *arg), void *arg)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcontext);
	PG_TRY();
	{
		fn(arg);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcontext);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
	}
	PG_END_TRY();
	return edata;
}

/* The arguments of an insert run by try_insert. */
typedef struct InsertArgs
{
	RelPlans   *plans;
	text	   *pk;
	text	   *rk;
	TimestampTz ts;
	Jsonb	   *props;
} InsertArgs;

static void
insert_args(void *arg)
{
	InsertArgs *a = (InsertArgs *) arg;

	write_entity(a->plans->insert, a->pk, a->rk, a->ts, a->props);
}

/*
 * Insert an entity unless its key exists: the insert in an internal
 * subtransaction, rolled back on a unique violation of the key index (which
 * raises it after waiting for a concurrent inserter that then commits; no
 * lock of ours is held meanwhile).  A violation of another unique index is
 * raised as it is.  Returns whether the entity was inserted.
 */
static bool
try_insert(RelPlans *plans, text *pk, text *rk, TimestampTz ts, Jsonb *props)
{
	InsertArgs	args = {plans, pk, rk, ts, props};
	ErrorData  *edata;

	edata = ts_run_in_subtransaction(insert_args, &args);
	if (edata == NULL)
		return true;
	if (!is_key_violation(key_index_name(plans), edata))
		ReThrowError(edata);
	FreeErrorData(edata);
	return false;
}

/*
 * After an upsert's insert found its key taken: whether the key exists but
 * row-level security hides it from the caller's update (rather than a
 * concurrent session having inserted it).  Under REPEATABLE READ and
 * SERIALIZABLE the update saw what the transaction's snapshot sees, so the
 * key is hidden if that snapshot sees it; under READ COMMITTED each
 * statement sees the latest committed rows, so the key is hidden if it
 * exists and the update of a second round did not find it either.
 */
static bool
key_hidden(Oid relid, text *pk, text *rk, int round)
{
	if (check_enable_rls(relid, InvalidOid, true) != RLS_ENABLED)
		return false;
	if (IsolationUsesXactSnapshot())
		return ts_key_exists_raw(relid, pk, rk, GetTransactionSnapshot());
	return round > 0 && ts_key_exists_raw(relid, pk, rk, GetLatestSnapshot());
}

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

/* The If-Match condition against the stored entity, which must exist. */
static void
check_condition(const StoredEntity *old, bool conditional, int64 ticks, text *pk, text *rk)
{
	if (!old->found)
		ts_entity_not_found(pk, rk);
	ts_check_if_match(old->ts, conditional, ticks, pk, rk);
}

/*
 * The names a merge of new_props removes from the stored properties before
 * adding new_props: each new property and its annotation, so that a merged
 * property takes the new value and type.
 */
static Datum
merge_removals(Jsonb *new_props)
{
	JsonbIterator *it = JsonbIteratorInit(&new_props->root);
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			n = 0;
	Datum	   *names = palloc(sizeof(Datum) * (2 * JB_ROOT_COUNT(new_props) + 1));

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok != WJB_KEY)
			continue;
		names[n++] = PointerGetDatum(cstring_to_text_with_len(v.val.string.val, v.val.string.len));
		names[n++] = CStringGetTextDatum(psprintf("%.*s@odata.type",
												  v.val.string.len, v.val.string.val));
	}
	return PointerGetDatum(construct_array(names, n, TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * Replace or merge the existing entity e in one UPDATE, under an If-Match
 * condition (etag_ticks, if conditional).  Returns false if no row matched
 * (missing, or changed); else fills *result with the stored entity.
 */
static bool
update_one(RelPlans *plans, TsOpKind kind, TsEntity *e, bool conditional, int64 etag_ticks,
		   TsOpResult *result)
{
	bool		merge = (kind == TS_OP_MERGE || kind == TS_OP_INSERT_OR_MERGE);
	Datum		args[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};
	bool		isnull;
	int			ret;

	args[0] = PointerGetDatum(e->partition_key);
	args[1] = PointerGetDatum(e->row_key);
	args[2] = TimestampTzGetDatum(GetCurrentTimestamp());
	args[3] = JsonbPGetDatum(e->props);
	if (conditional)
	{
		TimestampTz ts = ts_ticks_to_timestamptz(etag_ticks);

		/* an ETag finer than a microsecond matches no Timestamp of ours */
		args[4] = TimestampTzGetDatum(ts_timestamptz_to_ticks(ts) == etag_ticks ? ts : DT_NOBEGIN);
	}
	else
	{
		args[4] = (Datum) 0;
		nulls[4] = 'n';
	}
	if (merge)
		args[5] = merge_removals(e->props);

	ret = SPI_execute_plan(merge ? plans->merge : plans->replace, args, nulls, false, 0);
	if (ret != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not update entity: %s", SPI_result_code_string(ret));
	if (SPI_processed == 0)
		return false;
	result->ts = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	ts_check_write_timestamp(result->ts, e->partition_key, e->row_key);
	result->props = DatumGetJsonbP(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	check_returned_props(plans, result->props);

	/* a merge can take the entity over the limits; the error undoes it */
	if (merge)
		ts_entity_check_limits(result->props, ts_entity_key_size(e->partition_key, e->row_key));
	return true;
}

/*
 * Delete the entity (pk, rk), under an If-Match condition.
 */
static void
delete_one(RelPlans *plans, text *pk, text *rk, bool conditional, int64 ticks)
{
	Datum		args[3] = {PointerGetDatum(pk), PointerGetDatum(rk), (Datum) 0};

	if (conditional)
	{
		/* an ETag finer than a microsecond matches no Timestamp of ours */
		args[2] = TimestampTzGetDatum(ts_ticks_to_timestamptz(ticks));
		if (ts_timestamptz_to_ticks(ts_ticks_to_timestamptz(ticks)) != ticks)
			args[2] = TimestampTzGetDatum(DT_NOBEGIN);
	}

	for (int round = 0;; round++)
	{
		int			ret = SPI_execute_plan(conditional ? plans->delete_if : plans->delete_any,
										   args, NULL, false, 0);
		StoredEntity old;

		if (ret != SPI_OK_DELETE)
			elog(ERROR, "could not delete entity: %s", SPI_result_code_string(ret));
		if (SPI_processed > 0)
			return;

		/*
		 * Tell a missing entity from a changed one.  If it exists and matches
		 * now, the row our DELETE waited for was deleted and the key inserted
		 * again meanwhile (READ COMMITTED): go round and delete that one.
		 */
		old = read_entity(plans, pk, rk, false);
		check_condition(&old, conditional, ticks, pk, rk);
		if (round == UPSERT_MAX_ROUNDS)
			ts_ereport(ERROR, TS_UpdateConditionNotSatisfied,
					   errmsg("entity (\"%s\", \"%s\") changed while it was being deleted",
							  ts_clip_text(pk), ts_clip_text(rk)));
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * ts_apply_op: carry out one entity operation on a table whose plans are
 * given; call inside SPI_connect.  For a write, e is the validated entity;
 * for delete and retrieve only its keys are used.  conditional and ticks
 * are the If-Match condition of update, merge and delete.  Returns the
 * entity as stored now (props in the SPI context) in *result, except after
 * a delete.
 */
void
ts_apply_op(RelPlans *plans, TsOpKind kind, TsEntity *e, bool conditional, int64 ticks,
			TsOpResult *result)
{
	text	   *pk = e->partition_key;
	text	   *rk = e->row_key;
	StoredEntity old;
	int			round;

	result->props = e->props;
	result->ts = 0;

	/* without SPI where nothing but the executor's own work is in play */
	if (kind != TS_OP_RETRIEVE && ts_direct_usable(plans->relid, kind))
	{
		MemoryContext oldcontext = CurrentMemoryContext;
		char	   *keyname = kind == TS_OP_INSERT ? key_index_name(plans) : NULL;

		PG_TRY();
		{
			ts_direct_apply(plans, kind, e, conditional, ticks, result);
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(oldcontext);
			if (kind == TS_OP_INSERT)
				raise_if_key_violation(plans, keyname, pk, rk);
			PG_RE_THROW();
		}
		PG_END_TRY();
		return;
	}

	/*
	 * An upsert needs INSERT as much as UPDATE (and SELECT) whether or not
	 * the entity exists, as on the direct path; here the INSERT statement
	 * (whose executor would check it) runs only for a new entity: check it
	 * as that executor would, on the table or on every column it writes.
	 */
	if (kind == TS_OP_INSERT_OR_REPLACE || kind == TS_OP_INSERT_OR_MERGE)
		check_insert_privilege(plans);

	switch (kind)
	{
		case TS_OP_INSERT:
			result->ts = GetCurrentTimestamp();
			insert_one(plans, pk, rk, result->ts, e->props);
			break;

		case TS_OP_UPDATE:
		case TS_OP_MERGE:

			/*
			 * No row matched: tell a missing entity from a changed one.  If
			 * it exists and matches now, the row our UPDATE waited for was
			 * deleted and the key inserted again meanwhile (READ COMMITTED):
			 * go round and write the entity that exists now.
			 */
			for (round = 0; !update_one(plans, kind, e, conditional, ticks, result); round++)
			{
				old = read_entity(plans, pk, rk, false);
				check_condition(&old, conditional, ticks, pk, rk);
				if (round == UPSERT_MAX_ROUNDS)
					ts_ereport(ERROR, TS_UpdateConditionNotSatisfied,
							   errmsg("entity (\"%s\", \"%s\") changed while it was being written",
									  ts_clip_text(pk), ts_clip_text(rk)));
				CHECK_FOR_INTERRUPTS();
			}
			break;

		case TS_OP_INSERT_OR_REPLACE:
		case TS_OP_INSERT_OR_MERGE:

			/*
			 * Change the entity if it exists, insert it if not.  If another
			 * session inserts the key between our update and our insert, the
			 * insert fails (after waiting for that session) and is rolled
			 * back, and we go round again and update that session's row
			 * (READ COMMITTED: the next statement sees it).  Under REPEATABLE
			 * READ or SERIALIZABLE our snapshot never will: that is a
			 * serialization failure, for the caller to retry.  A key that
			 * exists but that row-level security hides from the caller can
			 * be neither updated nor inserted.
			 */
			for (round = 0;; round++)
			{
				if (update_one(plans, kind, e, false, 0, result))
					break;
				result->ts = GetCurrentTimestamp();
				result->props = e->props;
				if (try_insert(plans, pk, rk, result->ts, e->props))
					break;
				if (key_hidden(plans->relid, pk, rk, round))
					ts_ereport(ERROR, TS_EntityAlreadyExists,
							   errmsg("entity (\"%s\", \"%s\") exists but row-level security does not let the caller change it",
									  ts_clip_text(pk), ts_clip_text(rk)));
				if (IsolationUsesXactSnapshot())
					ereport(ERROR,
							(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
							 errmsg("could not serialize access due to a concurrent insert of entity (\"%s\", \"%s\")",
									ts_clip_text(pk), ts_clip_text(rk)),
							 errhint("Retry the transaction.")));
				if (round == UPSERT_MAX_ROUNDS)
					ereport(ERROR,
							(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
							 errmsg("could not write entity (\"%s\", \"%s\") because of concurrent inserts and deletes of its key",
									ts_clip_text(pk), ts_clip_text(rk)),
							 errhint("Retry the operation.")));
				CHECK_FOR_INTERRUPTS();
			}
			break;

		case TS_OP_DELETE:
			delete_one(plans, pk, rk, conditional, ticks);
			result->props = NULL;
			break;

		case TS_OP_RETRIEVE:
			old = read_entity(plans, pk, rk, true);
			if (!old.found)
				ts_entity_not_found(pk, rk);
			result->ts = old.ts;
			result->props = old.props;
			break;
	}
}

/*
 * Raise the error of INSERT's privilege check unless the role may insert
 * entity rows into the relation: INSERT on it, or on each of its columns.
 */
static void
check_insert_privilege(RelPlans *plans)
{
	Oid			userid = GetUserId();

	if (pg_class_aclcheck(plans->relid, userid, ACL_INSERT) == ACLCHECK_OK)
		return;
	for (AttrNumber att = TS_ATT_PK; att <= TS_ATT_PROPS; att++)
		if (pg_attribute_aclcheck(plans->relid, att, userid, ACL_INSERT) != ACLCHECK_OK)
			aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, plans->relname);
}

/*
 * ts_op_privileges: the privileges on the entity relation of which an
 * operation needs at least one (it needs them all; the statements check
 * that): a role with none may not even lock the relation.
 */
AclMode
ts_op_privileges(TsOpKind kind)
{
	switch (kind)
	{
		case TS_OP_INSERT:
			return ACL_INSERT;
		case TS_OP_UPDATE:
		case TS_OP_MERGE:
			return ACL_UPDATE;
		case TS_OP_INSERT_OR_REPLACE:
		case TS_OP_INSERT_OR_MERGE:
			return ACL_INSERT | ACL_UPDATE;
		case TS_OP_DELETE:
			return ACL_DELETE;
		case TS_OP_RETRIEVE:
			return ACL_SELECT;
	}
	return ACL_SELECT;			/* keep the compiler quiet */
}

/*
 * ts_apply_op with the plans pinned by the caller, unpinned when it ends,
 * also after an error, which a savepoint may catch.
 */
static void
apply_pinned(RelPlans *plans, TsOpKind kind, TsEntity *e, bool conditional, int64 ticks,
			 TsOpResult *result)
{
	PG_TRY();
	{
		ts_apply_op(plans, kind, e, conditional, ticks, result);
	}
	PG_CATCH();
	{
		ts_release_plans(plans);
		PG_RE_THROW();
	}
	PG_END_TRY();
	ts_release_plans(plans);
}

/*
 * The body of the SQL functions: run one operation on the table named by
 * argument 0 and return the entity as now stored (NULL after a delete).
 */
static Jsonb *
run_single(text *table, TsOpKind kind, TsEntity *e, bool conditional, int64 ticks,
		   const char *select_list)
{
	MemoryContext callerctx = CurrentMemoryContext;
	char	   *relname;
	Oid			relid;
	Oid			keyindex;
	TsOpResult	r;
	Jsonb	   *result = NULL;
	RelPlans   *plans;

	relid = ts_table_open(table, ts_op_privileges(kind),
						  kind == TS_OP_RETRIEVE ? AccessShareLock : RowExclusiveLock, &relname, &keyindex);
	SPI_connect();
	plans = ts_get_plans(relid, relname, keyindex);
	apply_pinned(plans, kind, e, conditional, ticks, &r);

	/* build the result where it outlives SPI_finish */
	MemoryContextSwitchTo(callerctx);
	if (r.props != NULL)
		result = ts_entity_output(e->partition_key, e->row_key, r.ts, r.props, select_list);
	SPI_finish();
	return result;
}

static text *
arg_text(FunctionCallInfo fcinfo, int n)
{
	return PG_ARGISNULL(n) ? NULL : PG_GETARG_TEXT_PP(n);
}

static TsEntity *
arg_entity(FunctionCallInfo fcinfo, int n)
{
	if (PG_ARGISNULL(n))
		ts_ereport(ERROR, TS_InvalidInput, errmsg("entity must not be null"));
	return ts_entity_from_json(PG_GETARG_JSONB_P(n));
}

/* The If-Match argument n: returns whether it is a condition. */
static bool
arg_if_match(FunctionCallInfo fcinfo, int n, int64 *ticks)
{
	return ts_parse_if_match(PG_ARGISNULL(n) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(n)),
							 ticks);
}

/* The key arguments of delete_entity and get_entity, checked. */
static TsEntity *
arg_keys(FunctionCallInfo fcinfo)
{
	TsEntity   *e = palloc0(sizeof(TsEntity));

	if (PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ts_ereport(ERROR, TS_PropertiesNeedValue,
				   errmsg("%s must not be null", PG_ARGISNULL(1) ? "PartitionKey" : "RowKey"));
	e->partition_key = PG_GETARG_TEXT_PP(1);
	e->row_key = PG_GETARG_TEXT_PP(2);
	ts_validate_key("PartitionKey", VARDATA_ANY(e->partition_key), VARSIZE_ANY_EXHDR(e->partition_key));
	ts_validate_key("RowKey", VARDATA_ANY(e->row_key), VARSIZE_ANY_EXHDR(e->row_key));
	return e;
}

/*
 * A write function of signature (table_name text, entity jsonb[, if_match
 * text]).
 */
static Datum
write_function(FunctionCallInfo fcinfo, TsOpKind kind, bool has_if_match)
{
	text	   *table = ts_arg_table_name(fcinfo);
	TsEntity   *e = arg_entity(fcinfo, 1);
	int64		ticks = 0;
	bool		conditional = has_if_match && arg_if_match(fcinfo, 2, &ticks);

	PG_RETURN_JSONB_P(run_single(table, kind, e, conditional, ticks, NULL));
}

/*
 * tablestore.insert_entity(table_name text, entity jsonb) RETURNS jsonb
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(insert_entity);

Datum
insert_entity(PG_FUNCTION_ARGS)
{
	return write_function(fcinfo, TS_OP_INSERT, false);
}

/*
 * tablestore.update_entity(table_name text, entity jsonb, if_match text
 * DEFAULT '*') RETURNS jsonb: replace the whole entity.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(update_entity);

Datum
update_entity(PG_FUNCTION_ARGS)
{
	return write_function(fcinfo, TS_OP_UPDATE, true);
}

/*
 * tablestore.merge_entity(table_name text, entity jsonb, if_match text
 * DEFAULT '*') RETURNS jsonb: overwrite the given properties, keep others.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(merge_entity);

Datum
merge_entity(PG_FUNCTION_ARGS)
{
	return write_function(fcinfo, TS_OP_MERGE, true);
}

/*
 * tablestore.insert_or_replace_entity(table_name text, entity jsonb)
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(insert_or_replace_entity);

Datum
insert_or_replace_entity(PG_FUNCTION_ARGS)
{
	return write_function(fcinfo, TS_OP_INSERT_OR_REPLACE, false);
}

/*
 * tablestore.insert_or_merge_entity(table_name text, entity jsonb)
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(insert_or_merge_entity);

Datum
insert_or_merge_entity(PG_FUNCTION_ARGS)
{
	return write_function(fcinfo, TS_OP_INSERT_OR_MERGE, false);
}

/*
 * tablestore.delete_entity(table_name text, partition_key text, row_key
 * text, if_match text DEFAULT '*') RETURNS void
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(delete_entity);

Datum
delete_entity(PG_FUNCTION_ARGS)
{
	text	   *table = ts_arg_table_name(fcinfo);
	TsEntity   *e = arg_keys(fcinfo);
	int64		ticks = 0;
	bool		conditional = arg_if_match(fcinfo, 3, &ticks);

	run_single(table, TS_OP_DELETE, e, conditional, ticks, NULL);
	PG_RETURN_VOID();
}

/*
 * tablestore.get_entity(table_name text, partition_key text, row_key text,
 * select_list text DEFAULT NULL) RETURNS jsonb
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(get_entity);

Datum
get_entity(PG_FUNCTION_ARGS)
{
	text	   *table = ts_arg_table_name(fcinfo);
	TsEntity   *e = arg_keys(fcinfo);
	text	   *select = arg_text(fcinfo, 3);
	char	   *select_list = select ? text_to_cstring(select) : NULL;
	Jsonb	   *result;

	/* one probe of the key index; through SQL where row-level security applies */
	if (ts_point_read(table, e->partition_key, e->row_key, select_list, &result))
	{
		if (result == NULL)
			ts_entity_not_found(e->partition_key, e->row_key);
		PG_RETURN_JSONB_P(result);
	}
	PG_RETURN_JSONB_P(run_single(table, TS_OP_RETRIEVE, e, false, 0, select_list));
}

/*
 * tablestore.validate_entity(entity jsonb) RETURNS jsonb
 *
 * Validate an entity as a write would, without writing it: the service's
 * error if it is not valid, else its properties in the stored form (see
 * README "Stored form").  For clients that check input before sending it,
 * and the validation micro-benchmark (bench/validate.sh).
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(validate_entity);

Datum
validate_entity(PG_FUNCTION_ARGS)
{
	PG_RETURN_JSONB_P(arg_entity(fcinfo, 0)->props);
}
