/*-------------------------------------------------------------------------
 *
 * query.c
 *	  Queries: query_entities, query_entities_page, explain_query and
 *	  list_tables with a $filter.
 *
 * A query parses its filter once, plans the access path (queryplan.c) and
 * then walks the table's key index directly, segment by segment, in key
 * order, checking the residual filter on each entity.  Nothing is planned
 * or executed through SQL per query, so a point query costs one index
 * probe.
 *
 * query_entities streams: its C part (_query_entities) is a value-per-call
 * set-returning function that keeps its index scan open between calls and
 * builds each entity in the caller's per-row memory, and the SQL function
 * query_entities wraps it in a SELECT list, so that PostgreSQL inlines it
 * and a caller's LIMIT or cursor stops the scan early (a set-returning
 * function in FROM would otherwise be run to completion into a tuplestore
 * first).  Memory stays flat however many entities match.
 *
 * Privileges: the scan reads the entity relation without the executor, so
 * it checks SELECT on the relation itself, with PostgreSQL's usual error.
 * Where row-level security applies to the caller it reads through SQL
 * instead, so that the policies apply: a statement per batch of rows, each
 * resuming after the last key read, under the snapshot the scan began with.
 * No cursor is kept between calls: a cursor opened while the caller's
 * subtransaction is open dies with that subtransaction, while the scan,
 * part of the caller's query (a PL/pgSQL cursor, say), lives on.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/amapi.h"
#include "access/genam.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/inval.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "tablestore.h"
#include "errors.h"
#include "entity.h"
#include "entityrel.h"
#include "filter/bind.h"
#include "filter/filter.h"
#include "queryplan.h"
#include "propindex.h"
#include "query.h"
#include "ttl.h"

/* The most entities of one page, and the default (the service's). */
#define TS_MAX_PAGE			1000

/*
 * The most bytes of stored entities one page holds: a page of large
 * entities is cut short, with a continuation, as the service may cut a
 * page, rather than grow past what one jsonb value can hold (1,000
 * entities of 1 MiB would).
 */
#define TS_MAX_PAGE_BYTES	(32 * 1024 * 1024)

/* The rows of one statement of a scan through SQL. */
#define SQL_BATCH_ROWS		100

/* Where the next statement of a scan through SQL resumes in its segment. */
typedef enum SqlResume
{
	SQL_SEGMENT_START,			/* the segment from its start */
	SQL_REST_OF_PARTITION,		/* last_pk's entities after last_rk */
	SQL_LATER_PARTITIONS,		/* the partitions after last_pk */
	SQL_SEGMENT_DONE			/* nothing more in the segment */
} SqlResume;

/* A running scan of a table's entities. */
typedef struct QueryScan
{
	Relation	heap;
	Relation	index;
	IndexScanDesc scan;
	int			scan_nkeys;		/* keys of the open scan, -1: none open */
	TupleTableSlot *slot;
	Snapshot	snapshot;
	RegProcedure procs[2][BTMaxStrategyNumber + 1]; /* comparison per key
													 * column and strategy */
	List	   *segments;		/* TsScanSegment, in key order */
	int			segno;			/* the segment being scanned */
	bool		segment_open;
	FilterNode *residual;
	bool		select_all;
	List	   *select;
	int64		remaining;		/* entities still to return; -1: no limit */

	/*
	 * Under row-level security the scan reads through SQL, so that the
	 * policies apply: a statement per batch of SQL_BATCH_ROWS rows of a
	 * segment, each resuming after the key of the last row read (snapshot
	 * is the scan's, as for the direct scan).
	 */
	bool		via_sql;
	char	   *relname;		/* the relation's name */
	char	   *qualname;		/* quoted, qualified, for SQL text */
	SqlResume	resume;			/* where the segment's next statement starts */
	text	   *last_pk;		/* the key of the last row read, in keycxt */
	text	   *last_rk;
	MemoryContext keycxt;		/* last_pk and last_rk; reset per batch */
	MemoryContext batchcxt;		/* the fetched rows; reset per batch */
	HeapTuple  *batch;
	TupleDesc	batch_desc;
	int			batch_n;
	int			batch_pos;
	MemoryContext scancxt;		/* where the scan lives */
	MemoryContext rowcxt;		/* reset per entity */
	int32		ttl;			/* the table's time to live (ttl.c) */
	TimestampTz ttl_now;		/* the instant expiry is judged at */
} QueryScan;

/* One entity of a scan: its parts, in the scan's row context. */
typedef struct ScanEntity
{
	text	   *pk;
	text	   *rk;
	TimestampTz ts;
	Jsonb	   *props;
} ScanEntity;

static QueryScan *query_open(Oid relid, Oid indexid, TsQueryPlan *plan, text *next_pk,
							 text *next_rk, const char *select_list, int64 top);

/*
 * Resolve a table for a query: its relation, locked, and the caller's
 * SELECT right on it.  Returns whether row-level security applies to the
 * relation (a query scan must not then read it directly).
 */
static bool
query_table(text *table_name, Oid *relid, Oid *indexid, char **relname)
{
	*relid = ts_table_open(table_name, ACL_SELECT, AccessShareLock, relname, indexid);
	return check_enable_rls(*relid, InvalidOid, false) == RLS_ENABLED;
}

/*
 * Open a scan of table_name's entities matching the plan, from the
 * continuation (next_pk, next_rk) if given.
 */
static QueryScan *
query_begin(text *table_name, TsQueryPlan *plan, text *next_pk, text *next_rk,
			const char *select_list, int64 top)
{
	char	   *relname;
	Oid			relid;
	Oid			indexid;
	QueryScan  *qs;

	if (!query_table(table_name, &relid, &indexid, &relname))
	{
		ts_propindex_plan(relid, plan, top);
		return query_open(relid, indexid, plan, next_pk, next_rk, select_list, top);
	}
	ts_propindex_plan(relid, plan, top);

	/* row-level security applies: read through SQL, under the policies */
	qs = palloc0(sizeof(QueryScan));
	qs->via_sql = true;
	qs->relname = relname;
	qs->qualname = quote_qualified_identifier(TS_DATA_SCHEMA, relname);
	qs->select_all = (select_list == NULL);
	qs->select = ts_parse_select_list(select_list);
	qs->residual = plan->residual;
	qs->segments = ts_plan_segments(plan, next_pk, next_rk);
	qs->remaining = top;
	qs->ttl = ts_ttl_of_relation(relid);
	qs->ttl_now = ts_ttl_now();
	/* the same snapshot for every statement, as the direct scan has */
	qs->snapshot = RegisterSnapshot(GetActiveSnapshot());
	qs->scancxt = CurrentMemoryContext;
	qs->rowcxt = AllocSetContextCreate(CurrentMemoryContext, "tablestore query row",
									   ALLOCSET_DEFAULT_SIZES);
	qs->batchcxt = AllocSetContextCreate(CurrentMemoryContext, "tablestore query batch",
										 ALLOCSET_DEFAULT_SIZES);
	qs->keycxt = AllocSetContextCreate(CurrentMemoryContext, "tablestore query resume key",
									   ALLOCSET_SMALL_SIZES);
	return qs;
}

/*
 * The comparison procedures of an operator family for a type, by strategy,
 * as the key index's scan keys need them: looked up once per backend (ten
 * catalog lookups a query otherwise, a point read's largest cost after the
 * probe itself), forgotten when operators or operator families change.
 */
typedef struct KeyProcs
{
	Oid			opfamily;
	Oid			type;
	RegProcedure procs[BTMaxStrategyNumber + 1];
} KeyProcs;

#define KEY_PROCS_CACHED	4

static KeyProcs key_procs_cache[KEY_PROCS_CACHED];
static int	key_procs_n = 0;
static bool key_procs_callbacks = false;

/* Forget the cached procedures: a catalog they come from changed. */
static void
key_procs_invalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	key_procs_n = 0;
}

static const RegProcedure *
key_procs(Oid opfamily, Oid type)
{
	KeyProcs   *kp;

	for (int i = 0; i < key_procs_n; i++)
		if (key_procs_cache[i].opfamily == opfamily && key_procs_cache[i].type == type)
			return key_procs_cache[i].procs;
	if (!key_procs_callbacks)
	{
		CacheRegisterSyscacheCallback(AMOPSTRATEGY, key_procs_invalidate, (Datum) 0);
		CacheRegisterSyscacheCallback(OPEROID, key_procs_invalidate, (Datum) 0);
		key_procs_callbacks = true;
	}
	/* a full cache starts over: tables of more key types are not expected */
	if (key_procs_n == KEY_PROCS_CACHED)
		key_procs_n = 0;
	kp = &key_procs_cache[key_procs_n];
	kp->procs[0] = InvalidOid;
	for (int strategy = 1; strategy <= BTMaxStrategyNumber; strategy++)
	{
		Oid			opno = get_opfamily_member(opfamily, type, type, strategy);

		if (!OidIsValid(opno))
			elog(ERROR, "missing operator %d(%u,%u) in opfamily %u", strategy, type, type, opfamily);
		kp->procs[strategy] = get_opcode(opno);
	}
	/* complete before it is found: an error above leaves it out */
	kp->opfamily = opfamily;
	kp->type = type;
	key_procs_n++;
	return kp->procs;
}

/* Open the scan of query_begin on a resolved relation. */
static QueryScan *
query_open(Oid relid, Oid indexid, TsQueryPlan *plan, text *next_pk, text *next_rk,
		   const char *select_list, int64 top)
{
	QueryScan  *qs = palloc0(sizeof(QueryScan));

	qs->select_all = (select_list == NULL);
	qs->select = ts_parse_select_list(select_list);
	qs->residual = plan->residual;
	qs->segments = ts_plan_segments(plan, next_pk, next_rk);
	qs->remaining = top;
	qs->scan_nkeys = -1;
	qs->ttl = ts_ttl_of_relation(relid);
	qs->ttl_now = ts_ttl_now();

	qs->heap = table_open(relid, NoLock);
	qs->relname = RelationGetRelationName(qs->heap);
	qs->index = index_open(indexid, AccessShareLock);
	for (int col = 0; col < 2; col++)
		memcpy(qs->procs[col], key_procs(qs->index->rd_opfamily[col], qs->index->rd_opcintype[col]),
			   sizeof(qs->procs[col]));
	qs->slot = table_slot_create(qs->heap, NULL);
	qs->snapshot = RegisterSnapshot(GetActiveSnapshot());
	qs->scancxt = CurrentMemoryContext;
	qs->rowcxt = AllocSetContextCreate(CurrentMemoryContext, "tablestore query row",
									   ALLOCSET_DEFAULT_SIZES);
	return qs;
}

/* Release everything a scan holds. */
static void
query_end(QueryScan *qs)
{
	if (qs->via_sql)
	{
		UnregisterSnapshot(qs->snapshot);
		MemoryContextDelete(qs->keycxt);
		MemoryContextDelete(qs->batchcxt);
		MemoryContextDelete(qs->rowcxt);
		return;
	}
	if (qs->scan != NULL)
		index_endscan(qs->scan);
	qs->scan = NULL;
	ExecDropSingleTupleTableSlot(qs->slot);
	index_close(qs->index, AccessShareLock);
	table_close(qs->heap, NoLock);
	UnregisterSnapshot(qs->snapshot);
	MemoryContextDelete(qs->rowcxt);
}

/*
 * Append the conditions of one key column's range to a WHERE clause, with
 * the bounds as parameters.
 */
static void
sql_range(StringInfo sql, const char *col, const TsKeyRange *r, Datum *values, int *n)
{
	if (ts_key_range_is_point(r))
	{
		values[*n] = PointerGetDatum(r->lo.value);
		appendStringInfo(sql, " AND %s OPERATOR(" TS_SCHEMA ".=) $%d::" TS_SCHEMA ".key", col, ++*n);
		return;
	}
	if (r->lo.value != NULL)
	{
		values[*n] = PointerGetDatum(r->lo.value);
		appendStringInfo(sql, " AND %s OPERATOR(" TS_SCHEMA ".%s) $%d::" TS_SCHEMA ".key", col,
						 r->lo.inclusive ? ">=" : ">", ++*n);
	}
	if (r->hi.value != NULL)
	{
		values[*n] = PointerGetDatum(r->hi.value);
		appendStringInfo(sql, " AND %s OPERATOR(" TS_SCHEMA ".%s) $%d::" TS_SCHEMA ".key", col,
						 r->hi.inclusive ? "<=" : "<", ++*n);
	}
}

/* Append "AND col op $n::key" with value as parameter n. */
static void
sql_key_condition(StringInfo sql, const char *col, const char *op, text *value,
				  Datum *values, int *n)
{
	values[*n] = PointerGetDatum(value);
	appendStringInfo(sql, " AND %s OPERATOR(" TS_SCHEMA ".%s) $%d::" TS_SCHEMA ".key", col, op, ++*n);
}

/*
 * Read the next batch of the current segment of a scan through SQL into
 * qs->batch: at most SQL_BATCH_ROWS entities of the segment, in key order,
 * as the caller may see them (row-level security and privileges apply, as
 * to any query), after the last one read.  One statement, run to its end
 * under the scan's snapshot: nothing outlives the call, so a subtransaction
 * of the caller that ends meanwhile takes nothing of the scan with it.
 * After a last row in the middle of a partition, the segment goes on with
 * the rest of that partition, then with the partitions after it: each a
 * range of the key index, so that no statement rereads what an earlier one
 * returned.  Names and operators are qualified and the keys are parameters.
 */
static void
sql_fetch_batch(QueryScan *qs, const TsScanSegment *seg)
{
	StringInfoData sql;
	Datum		values[6];
	Oid			types[6] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	int			n = 0;
	SPIPlanPtr	plan;
	int			ret;
	MemoryContext old;

	MemoryContextReset(qs->batchcxt);
	qs->batch_n = qs->batch_pos = 0;
	old = MemoryContextSwitchTo(qs->batchcxt);

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT pk, rk, ts, props FROM ONLY %s WHERE true", qs->qualname);
	sql_range(&sql, "pk", &seg->pk, values, &n);
	sql_range(&sql, "rk", &seg->rk, values, &n);
	if (qs->resume == SQL_REST_OF_PARTITION)
	{
		sql_key_condition(&sql, "pk", "=", qs->last_pk, values, &n);
		sql_key_condition(&sql, "rk", ">", qs->last_rk, values, &n);
	}
	else if (qs->resume == SQL_LATER_PARTITIONS)
		sql_key_condition(&sql, "pk", ">", qs->last_pk, values, &n);
	/* the key type's default btree operator class orders as the service */
	appendStringInfo(&sql, " ORDER BY pk, rk LIMIT %d", SQL_BATCH_ROWS);

	SPI_connect();
	plan = SPI_prepare(sql.data, n, types);
	if (plan == NULL)
		elog(ERROR, "could not prepare \"%s\": %s", sql.data, SPI_result_code_string(SPI_result));
	ret = SPI_execute_snapshot(plan, values, NULL, qs->snapshot, InvalidSnapshot, true, false, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read \"%s\": %s", sql.data, SPI_result_code_string(ret));

	MemoryContextSwitchTo(qs->batchcxt);
	qs->batch = palloc(sizeof(HeapTuple) * Max(SPI_processed, 1));
	for (uint64 i = 0; i < SPI_processed; i++)
		qs->batch[i] = heap_copytuple(SPI_tuptable->vals[i]);
	qs->batch_desc = CreateTupleDescCopy(SPI_tuptable->tupdesc);
	qs->batch_n = (int) SPI_processed;

	/* where the next statement resumes */
	if (qs->batch_n == SQL_BATCH_ROWS)
	{
		HeapTuple	last = qs->batch[qs->batch_n - 1];
		bool		isnull;
		Datum		pk = heap_getattr(last, TS_ATT_PK, qs->batch_desc, &isnull);
		Datum		rk = heap_getattr(last, TS_ATT_RK, qs->batch_desc, &isnull);

		/* the previous key is no parameter any more: replace it */
		MemoryContextReset(qs->keycxt);
		MemoryContextSwitchTo(qs->keycxt);
		qs->last_pk = DatumGetTextPCopy(pk);
		qs->last_rk = DatumGetTextPCopy(rk);
		qs->resume = SQL_REST_OF_PARTITION;
	}
	else if (qs->resume == SQL_REST_OF_PARTITION && !ts_key_range_is_point(&seg->pk))
		qs->resume = SQL_LATER_PARTITIONS;
	else
		qs->resume = SQL_SEGMENT_DONE;
	/* back to batchcxt, current at SPI_connect, then to the caller's */
	SPI_finish();
	MemoryContextSwitchTo(old);
}

/*
 * The next row of the current segment of a scan through SQL (in the batch
 * context); false when the segment has no more.
 */
static bool
sql_next_row(QueryScan *qs, HeapTuple *tuple)
{
	while (qs->batch_pos == qs->batch_n)
	{
		if (qs->resume == SQL_SEGMENT_DONE)
			return false;
		sql_fetch_batch(qs, list_nth(qs->segments, qs->segno));
	}
	*tuple = qs->batch[qs->batch_pos++];
	return true;
}

/* Add the scan keys of one key column's range. */
static int
range_keys(QueryScan *qs, ScanKey keys, int n, int col, const TsKeyRange *r)
{
	Oid			collation = qs->index->rd_indcollation[col];

	if (ts_key_range_is_point(r))
	{
		ScanKeyEntryInitialize(&keys[n++], 0, col + 1, BTEqualStrategyNumber, InvalidOid, collation,
							   qs->procs[col][BTEqualStrategyNumber], PointerGetDatum(r->lo.value));
		return n;
	}
	if (r->lo.value != NULL)
	{
		StrategyNumber s = r->lo.inclusive ? BTGreaterEqualStrategyNumber : BTGreaterStrategyNumber;

		ScanKeyEntryInitialize(&keys[n++], 0, col + 1, s, InvalidOid, collation,
							   qs->procs[col][s], PointerGetDatum(r->lo.value));
	}
	if (r->hi.value != NULL)
	{
		StrategyNumber s = r->hi.inclusive ? BTLessEqualStrategyNumber : BTLessStrategyNumber;

		ScanKeyEntryInitialize(&keys[n++], 0, col + 1, s, InvalidOid, collation,
							   qs->procs[col][s], PointerGetDatum(r->hi.value));
	}
	return n;
}

/* Position the index scan at the start of segment seg. */
static void
open_segment(QueryScan *qs, const TsScanSegment *seg)
{
	ScanKeyData keys[4];
	int			n = 0;
	MemoryContext old = MemoryContextSwitchTo(qs->scancxt);

	n = range_keys(qs, keys, n, 0, &seg->pk);
	n = range_keys(qs, keys, n, 1, &seg->rk);

	/* the number of keys is fixed per scan: start a new one if it differs */
	if (qs->scan != NULL && qs->scan_nkeys != n)
	{
		index_endscan(qs->scan);
		qs->scan = NULL;
	}
	if (qs->scan == NULL)
	{
		qs->scan = index_beginscan(qs->heap, qs->index, qs->snapshot, n, 0);
		qs->scan_nkeys = n;
	}
	index_rescan(qs->scan, keys, n, NULL, 0);
	qs->segment_open = true;
	MemoryContextSwitchTo(old);
}

/*
 * The next entity of the scan that passes the residual filter, its parts
 * in the row context; false when there are no more.
 */
static bool
query_next(QueryScan *qs, ScanEntity *e)
{
	MemoryContext old;

	if (qs->remaining == 0)
		return false;
	MemoryContextReset(qs->rowcxt);
	old = MemoryContextSwitchTo(qs->rowcxt);
	for (;;)
	{
		TsFilterRow row;
		Datum		values[4];
		bool		isnull[4];

		CHECK_FOR_INTERRUPTS();
		if (!qs->segment_open)
		{
			if (qs->segno >= list_length(qs->segments))
			{
				MemoryContextSwitchTo(old);
				return false;
			}
			if (qs->via_sql)
			{
				qs->resume = SQL_SEGMENT_START;
				qs->batch_n = qs->batch_pos = 0;
				qs->segment_open = true;
			}
			else
				open_segment(qs, list_nth(qs->segments, qs->segno));
		}
		if (qs->via_sql)
		{
			HeapTuple	tuple;

			if (!sql_next_row(qs, &tuple))
			{
				qs->segment_open = false;
				qs->segno++;
				continue;
			}
			for (int att = 0; att < 4; att++)
				values[att] = heap_getattr(tuple, att + 1, qs->batch_desc, &isnull[att]);
		}
		else
		{
			if (!index_getnext_slot(qs->scan, ForwardScanDirection, qs->slot))
			{
				qs->segment_open = false;
				qs->segno++;
				continue;
			}
			slot_getallattrs(qs->slot);
			memcpy(values, qs->slot->tts_values, sizeof(values));
			memcpy(isnull, qs->slot->tts_isnull, sizeof(isnull));
		}
		ts_check_stored_row(qs->relname, values, isnull);
		e->pk = DatumGetTextPP(values[TS_ATT_PK - 1]);
		e->rk = DatumGetTextPP(values[TS_ATT_RK - 1]);
		e->ts = DatumGetTimestampTz(values[TS_ATT_TS - 1]);
		e->props = DatumGetJsonbP(values[TS_ATT_PROPS - 1]);
		/* an expired entity is gone for every read (ttl.c) */
		if (qs->ttl != TS_TTL_OFF && ts_ttl_expired(qs->ttl, e->ts, e->props, qs->ttl_now))
			continue;
		if (qs->residual != NULL)
		{
			row.pk = VARDATA_ANY(e->pk);
			row.pklen = VARSIZE_ANY_EXHDR(e->pk);
			row.rk = VARDATA_ANY(e->rk);
			row.rklen = VARSIZE_ANY_EXHDR(e->rk);
			row.ts = e->ts;
			row.props = e->props;
			row.table_name = NULL;
			row.table_name_len = 0;
			if (!ts_filter_eval(qs->residual, &row))
				continue;
		}
		if (qs->remaining > 0)
			qs->remaining--;
		MemoryContextSwitchTo(old);
		return true;
	}
}

/* The entity as the service returns it, in the current memory context. */
static Jsonb *
query_output(QueryScan *qs, const ScanEntity *e)
{
	return ts_entity_output_list(e->pk, e->rk, e->ts, e->props, qs->select_all, qs->select);
}

/*
 * ts_point_read: read entity (pk, rk) of a table with one probe of its key
 * index, as get_entity returns it (*result NULL: no such entity).  Returns
 * false, reading nothing, if row-level security applies to the table's
 * relation: the caller then reads through SQL, which applies the policies.
 */
bool
ts_point_read(text *table_name, text *pk, text *rk, const char *select_list, Jsonb **result)
{
	TsQueryPlan plan = {0};
	char	   *relname;
	Oid			relid;
	Oid			indexid;
	QueryScan  *qs;
	ScanEntity	e;

	if (query_table(table_name, &relid, &indexid, &relname))
		return false;
	plan.kind = TS_ACCESS_POINT;
	plan.points = list_make1(ts_point_segment(pk, rk));

	qs = query_open(relid, indexid, &plan, NULL, NULL, select_list, 1);
	*result = query_next(qs, &e) ? query_output(qs, &e) : NULL;
	query_end(qs);
	return true;
}

/*
 * ts_key_exists_raw: whether entity (pk, rk) of an entity relation (locked
 * by the caller) is visible to snapshot, row-level security not applied.
 * Only for telling a key that policies hide from one that does not exist;
 * nothing of the entity is returned.
 */
bool
ts_key_exists_raw(Oid relid, text *pk, text *rk, Snapshot snapshot)
{
	TsQueryPlan plan = {0};
	Relation	heap = table_open(relid, NoLock);
	Oid			indexid = ts_check_entity_relation(heap, true);
	QueryScan  *qs;
	ScanEntity	e;
	bool		found;

	table_close(heap, NoLock);
	plan.kind = TS_ACCESS_POINT;
	plan.points = list_make1(ts_point_segment(pk, rk));
	PushActiveSnapshot(snapshot);
	qs = query_open(relid, indexid, &plan, NULL, NULL, NULL, 1);
	found = query_next(qs, &e);
	query_end(qs);
	PopActiveSnapshot();
	return found;
}

/* A copy of a (detoasted) varlena in the current memory context. */
static text *
copy_text(const text *t)
{
	text	   *copy = palloc(VARSIZE_ANY(t));

	memcpy(copy, t, VARSIZE_ANY(t));
	return copy;
}

/* Argument n as a C string, or NULL. */
static char *
arg_cstring(FunctionCallInfo fcinfo, int n)
{
	return PG_ARGISNULL(n) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(n));
}

/* Parse and plan the filter of argument n. */
static TsQueryPlan *
arg_plan(FunctionCallInfo fcinfo, int n)
{
	text	   *filter = PG_ARGISNULL(n) ? NULL : PG_GETARG_TEXT_PP(n);

	return ts_plan_query(ts_filter_parse(filter ? VARDATA_ANY(filter) : NULL,
										 filter ? VARSIZE_ANY_EXHDR(filter) : 0));
}

/*
 * The $top of argument n: NULL gives dflt; negative or above max is
 * invalid.  Zero is legal, as in the service: no entities, and (for a page)
 * no continuation.
 */
static int64
arg_top(FunctionCallInfo fcinfo, int n, int64 dflt, int64 max)
{
	int32		top;

	if (PG_ARGISNULL(n))
		return dflt;
	top = PG_GETARG_INT32(n);
	if (top < 0 || (max > 0 && top > max))
		ts_ereport(ERROR, TS_InvalidInput,
				   max > 0 ?
				   errmsg("top must be between 0 and " INT64_FORMAT ", not %d", max, top) :
				   errmsg("top must be at least 0, not %d", top));
	return top;
}

/*
 * The limit of a page's scan: one entity more than the page (its key is
 * the continuation), except for an empty page ($top=0), which reads
 * nothing and has no continuation.
 */
static int64
page_scan_limit(int64 top)
{
	return top == 0 ? 0 : top + 1;
}

/* Shut a streaming scan down when its query ends before the scan does. */
static void
query_shutdown(Datum arg)
{
	query_end((QueryScan *) DatumGetPointer(arg));
}

/*
 * An entity as JSON text (entityjson.c), as a json datum in the current
 * memory context: the text is written after room for the varlena header.
 */
static Datum
query_output_json(QueryScan *qs, const ScanEntity *e)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoSpaces(&buf, VARHDRSZ);
	ts_entity_json(&buf, e->pk, e->rk, e->ts, e->props, qs->select_all, qs->select);
	SET_VARSIZE(buf.data, buf.len);
	return PointerGetDatum(buf.data);
}

/*
 * The streaming scan behind query_entities (jsonb) and query_entities_json
 * (json): value per call, the scan kept open between calls.
 */
static Datum
query_entities_stream(FunctionCallInfo fcinfo, bool json)
{
	FuncCallContext *funcctx;
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	QueryScan  *qs;
	ScanEntity	e;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext old;
		text	   *table_name = ts_arg_table_name(fcinfo);
		int64		top = arg_top(fcinfo, 3, -1, 0);

		if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) || rsinfo->econtext == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("set-valued function called in context that cannot accept a set")));
		funcctx = SRF_FIRSTCALL_INIT();
		old = MemoryContextSwitchTo(funcctx->multi_call_memory_ctx);
		qs = query_begin(table_name, arg_plan(fcinfo, 1), NULL, NULL, arg_cstring(fcinfo, 2), top);
		MemoryContextSwitchTo(old);
		funcctx->user_fctx = qs;
		RegisterExprContextCallback(rsinfo->econtext, query_shutdown, PointerGetDatum(qs));
	}
	funcctx = SRF_PERCALL_SETUP();
	qs = funcctx->user_fctx;

	if (query_next(qs, &e))
		SRF_RETURN_NEXT(funcctx, json ? query_output_json(qs, &e) : JsonbPGetDatum(query_output(qs, &e)));

	UnregisterExprContextCallback(rsinfo->econtext, query_shutdown, PointerGetDatum(qs));
	query_end(qs);
	SRF_RETURN_DONE(funcctx);
}

/*
 * tablestore._query_entities(table_name text, filter text, select_list
 * text, top integer) RETURNS SETOF jsonb
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(query_entities_scan);

Datum
query_entities_scan(PG_FUNCTION_ARGS)
{
	return query_entities_stream(fcinfo, false);
}

/*
 * tablestore._query_entities_json(table_name text, filter text, select_list
 * text, top integer) RETURNS SETOF json
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(query_entities_scan_json);

Datum
query_entities_scan_json(PG_FUNCTION_ARGS)
{
	return query_entities_stream(fcinfo, true);
}

/*
 * A continuation key argument: both or neither.  A continuation is only a
 * position in key order, so any key is accepted, even one that breaks the
 * rules of keys (a row written with plain SQL before the entity relation had
 * its CHECK constraints can hold one, and its key comes back as a
 * continuation): paging must never get stuck on it.
 */
static void
arg_continuation(FunctionCallInfo fcinfo, int n, text **pk, text **rk)
{
	*pk = PG_ARGISNULL(n) ? NULL : PG_GETARG_TEXT_PP(n);
	*rk = PG_ARGISNULL(n + 1) ? NULL : PG_GETARG_TEXT_PP(n + 1);
	if ((*pk == NULL) != (*rk == NULL))
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("next_partition_key and next_row_key must be given together"));
}

/*
 * tablestore.query_entities_page(table_name text, filter text, select_list
 * text, top integer, next_partition_key text, next_row_key text)
 * RETURNS TABLE (entities jsonb, next_partition_key text, next_row_key text)
 *
 * One page as the service serves it: at most top (default and at most
 * 1,000) entities, and the key of the next matching entity as the
 * continuation (NULLs when there is none).  query_entities_page_json is the
 * same with the page as json text.
 */
static Datum
query_page(FunctionCallInfo fcinfo, bool json)
{
	text	   *table_name = ts_arg_table_name(fcinfo);
	TsQueryPlan *plan = arg_plan(fcinfo, 1);
	int64		top = arg_top(fcinfo, 3, TS_MAX_PAGE, TS_MAX_PAGE);
	text	   *next_pk;
	text	   *next_rk;
	QueryScan  *qs;
	ScanEntity	e;
	StringInfoData buf;
	int			jentries = 0;
	int64		n = 0;
	int64		bytes = 0;
	TupleDesc	desc;
	Datum		values[3];
	bool		nulls[3] = {false, true, true};

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	arg_continuation(fcinfo, 4, &next_pk, &next_rk);

	/*
	 * One entity more than the page: its key is the continuation.  As json
	 * the page is written as text entity by entity; as jsonb it is assembled
	 * in binary form the same way, each entity's object container appended
	 * straight from its stored form (ts_entity_append_jsonb), after room for
	 * the array's header and a JEntry per entity the page can hold: no
	 * in-memory array of the entities, no copies of their stored parts, and
	 * no serialization of the whole.  Each entity's temporary values live in
	 * the scan's row memory, reset entity by entity.
	 */
	qs = query_begin(table_name, plan, next_pk, next_rk, arg_cstring(fcinfo, 2), page_scan_limit(top));

	/*
	 * Room for a page of typical entities at once: growing a large buffer by
	 * doubling copies it and faults in fresh memory each time.
	 */
	initStringInfo(&buf);
	enlargeStringInfo(&buf, (int) Min(top * 512, 4 * 1024 * 1024));
	appendStringInfoSpaces(&buf, VARHDRSZ);
	if (json)
		appendStringInfoCharMacro(&buf, '[');
	else
	{
		/* the array's header, then its JEntries, written at the end */
		jentries = buf.len + sizeof(uint32);
		appendStringInfoSpaces(&buf, sizeof(uint32) + sizeof(JEntry) * top);
	}
	while (query_next(qs, &e))
	{
		bytes = json ? (int64) buf.len : bytes + (int64) (VARSIZE_ANY(e.props) + VARSIZE_ANY(e.pk) + VARSIZE_ANY(e.rk) + 128);
		if (n == top || (n > 0 && bytes > TS_MAX_PAGE_BYTES))
		{
			values[1] = PointerGetDatum(copy_text(e.pk));
			values[2] = PointerGetDatum(copy_text(e.rk));
			nulls[1] = nulls[2] = false;
			break;
		}
		n++;
		if (json)
		{
			if (n > 1)
				appendStringInfoCharMacro(&buf, ',');
			ts_entity_json(&buf, e.pk, e.rk, e.ts, e.props, qs->select_all, qs->select);
		}
		else
		{
			MemoryContext old = MemoryContextSwitchTo(qs->rowcxt);
			int			start PG_USED_FOR_ASSERTS_ONLY = buf.len;
			JEntry		je = ts_entity_append_jsonb(&buf, e.pk, e.rk, e.ts, e.props,
													qs->select_all, qs->select);

			/* every JB_OFFSET_STRIDE'th member's JEntry holds its end offset */
			if ((n - 1) % JB_OFFSET_STRIDE == 0)
				je = JENTRY_ISCONTAINER | JENTRY_HAS_OFF |
					(buf.len - (jentries + (int) (sizeof(JEntry) * top)));
			memcpy(buf.data + jentries + sizeof(JEntry) * (n - 1), &je, sizeof(JEntry));
			Assert((int) JBE_OFFLENFLD(je) == buf.len - start || (je & JENTRY_HAS_OFF));
			MemoryContextSwitchTo(old);
		}
	}
	query_end(qs);
	if (json)
		appendStringInfoCharMacro(&buf, ']');
	else
	{
		uint32		header = (uint32) n | JB_FARRAY;
		int			unused = sizeof(JEntry) * (top - n);
		int			data = jentries + sizeof(JEntry) * top;

		/*
		 * The JEntries of members the page did not get go: the members move
		 * down by a multiple of 4 bytes, which keeps every padding in them
		 * right.
		 */
		memcpy(buf.data + VARHDRSZ, &header, sizeof(uint32));
		if (unused > 0)
		{
			memmove(buf.data + data - unused, buf.data + data, buf.len - data);
			buf.len -= unused;
		}
		if (buf.len - (jentries + (int) (sizeof(JEntry) * n)) > JENTRY_OFFLENMASK)
			elog(ERROR, "page of %d bytes too large for jsonb", buf.len);
	}
	SET_VARSIZE(buf.data, buf.len);
	values[0] = PointerGetDatum(buf.data);

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(query_entities_page);

Datum
query_entities_page(PG_FUNCTION_ARGS)
{
	return query_page(fcinfo, false);
}

/*
 * tablestore.query_entities_page_json(...): query_entities_page, the page
 * as json text.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(query_entities_page_json);

Datum
query_entities_page_json(PG_FUNCTION_ARGS)
{
	return query_page(fcinfo, true);
}

/* The state of a query_page scan between calls. */
typedef struct PageScan
{
	QueryScan  *qs;
	int64		top;
	int64		returned;		/* entities returned so far */
	int64		bytes;			/* their JSON text */
	TupleDesc	desc;
} PageScan;

/* Shut a query_page scan down when its query ends before the scan does. */
static void
page_shutdown(Datum arg)
{
	query_end(((PageScan *) DatumGetPointer(arg))->qs);
}

/*
 * tablestore.query_page(table_name text, filter text, select_list text,
 * top integer, next_partition_key text, next_row_key text)
 * RETURNS TABLE (entity json, next_partition_key text, next_row_key text)
 *
 * One page as rows, streamed: a row per entity (the continuation columns
 * NULL), then, if the query goes on, one row with entity NULL and the
 * continuation.  The same page as query_entities_page_json, without any
 * value the size of the page: memory stays that of one entity.
 *
 * tablestore._query_page_keyed, with the same arguments, adds the columns
 * partition_key and row_key: each entity's keys, which a scale-out router
 * merges pages by, so that it need not parse the entity to find them.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(query_page_rows);

Datum
query_page_rows(PG_FUNCTION_ARGS)
{
	FuncCallContext *funcctx;
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PageScan   *ps;
	ScanEntity	e;
	Datum		values[5];
	bool		nulls[5] = {false, true, true, true, true};

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext old;
		text	   *table_name = ts_arg_table_name(fcinfo);
		TsQueryPlan *plan;
		int64		top = arg_top(fcinfo, 3, TS_MAX_PAGE, TS_MAX_PAGE);
		text	   *next_pk;
		text	   *next_rk;
		TupleDesc	desc;

		if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) || rsinfo->econtext == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("set-valued function called in context that cannot accept a set")));
		if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "return type must be a row type");
		arg_continuation(fcinfo, 4, &next_pk, &next_rk);
		funcctx = SRF_FIRSTCALL_INIT();
		/* everything the scan uses across calls lives in the multi-call memory */
		old = MemoryContextSwitchTo(funcctx->multi_call_memory_ctx);
		plan = arg_plan(fcinfo, 1);
		ps = palloc0(sizeof(PageScan));
		ps->top = top;
		ps->desc = BlessTupleDesc(CreateTupleDescCopy(desc));
		/* one entity more than the page: its key is the continuation */
		ps->qs = query_begin(table_name, plan, next_pk ? copy_text(next_pk) : NULL,
							 next_rk ? copy_text(next_rk) : NULL, arg_cstring(fcinfo, 2),
							 page_scan_limit(top));
		MemoryContextSwitchTo(old);
		funcctx->user_fctx = ps;
		RegisterExprContextCallback(rsinfo->econtext, page_shutdown, PointerGetDatum(ps));
	}
	funcctx = SRF_PERCALL_SETUP();
	ps = funcctx->user_fctx;

	if (ps->qs != NULL && query_next(ps->qs, &e))
	{
		if (ps->returned == ps->top || (ps->returned > 0 && ps->bytes > TS_MAX_PAGE_BYTES))
		{
			/* the continuation row, and the end */
			nulls[0] = true;
			nulls[1] = nulls[2] = false;
			values[1] = PointerGetDatum(copy_text(e.pk));
			values[2] = PointerGetDatum(copy_text(e.rk));
			UnregisterExprContextCallback(rsinfo->econtext, page_shutdown, PointerGetDatum(ps));
			query_end(ps->qs);
			ps->qs = NULL;
			SRF_RETURN_NEXT(funcctx, HeapTupleGetDatum(heap_form_tuple(ps->desc, values, nulls)));
		}
		values[0] = query_output_json(ps->qs, &e);
		if (ps->desc->natts == 5)
		{
			/* _query_page_keyed: each entity's keys too, for a router's merge */
			values[3] = PointerGetDatum(copy_text(e.pk));
			values[4] = PointerGetDatum(copy_text(e.rk));
			nulls[3] = nulls[4] = false;
		}
		ps->returned++;
		ps->bytes += VARSIZE(DatumGetPointer(values[0]));
		SRF_RETURN_NEXT(funcctx, HeapTupleGetDatum(heap_form_tuple(ps->desc, values, nulls)));
	}
	if (ps->qs != NULL)
	{
		UnregisterExprContextCallback(rsinfo->econtext, page_shutdown, PointerGetDatum(ps));
		query_end(ps->qs);
		ps->qs = NULL;
	}
	SRF_RETURN_DONE(funcctx);
}

/*
 * tablestore.explain_query(table_name text, filter text) RETURNS jsonb
 *
 * How a filter on a table will be executed: the access kind, the key
 * bounds, the points probed and the residual filter.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(explain_query);

Datum
explain_query(PG_FUNCTION_ARGS)
{
	text	   *table_name = ts_arg_table_name(fcinfo);
	TsQueryPlan *plan = arg_plan(fcinfo, 1);
	Oid			relid;

	/* the table must exist and be readable; no lock is kept */
	relid = ts_table_open(table_name, ACL_SELECT, AccessShareLock, NULL, NULL);
	ts_propindex_plan(relid, plan, -1);
	UnlockRelationOid(relid, AccessShareLock);
	PG_RETURN_JSONB_P(ts_explain_plan(plan));
}

/*
 * tablestore.list_tables(filter text DEFAULT NULL) RETURNS SETOF text
 *
 * The names of the tables, as created, in ordinal order, that match a
 * $filter on the property TableName.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(list_tables);

Datum
list_tables(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	text	   *filter = PG_ARGISNULL(0) ? NULL : PG_GETARG_TEXT_PP(0);
	FilterNode *tree;
	MemoryContext rowcxt;
	int			ret;

	tree = ts_filter_parse(filter ? VARDATA_ANY(filter) : NULL, filter ? VARSIZE_ANY_EXHDR(filter) : 0);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	rowcxt = AllocSetContextCreate(CurrentMemoryContext, "tablestore list_tables row",
								   ALLOCSET_DEFAULT_SIZES);

	SPI_connect();
	/*
	 * The tables are the relations of schema tablestore_data (so that the
	 * list agrees with create_table and delete_table whatever happened to
	 * the catalog), named as the catalog remembers them.
	 */
	ret = SPI_execute("SELECT COALESCE(t.table_name, c.relname::pg_catalog.text) AS name "
					  "FROM pg_catalog.pg_class c "
					  "LEFT JOIN " TS_SCHEMA ".tables t ON t.relation_name OPERATOR(pg_catalog.=) c.relname::pg_catalog.text "
					  "WHERE c.relnamespace OPERATOR(pg_catalog.=) '" TS_DATA_SCHEMA "'::pg_catalog.regnamespace "
					  "AND c.relkind OPERATOR(pg_catalog.=) 'r' "
					  "AND c.relname::pg_catalog.text OPERATOR(pg_catalog.~) '^[a-z][a-z0-9]{2,62}$' "
					  "ORDER BY COALESCE(t.table_name, c.relname::pg_catalog.text) COLLATE pg_catalog.\"C\"",
					  true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read the tablestore catalog: %s", SPI_result_code_string(ret));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		name = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
		MemoryContext old = MemoryContextSwitchTo(rowcxt);
		text	   *t = DatumGetTextPP(name);
		TsFilterRow row = {0};
		bool		match;

		row.table_name = VARDATA_ANY(t);
		row.table_name_len = VARSIZE_ANY_EXHDR(t);
		row.props = NULL;
		match = ts_filter_eval(tree, &row);
		MemoryContextSwitchTo(old);
		if (match)
		{
			bool		nullflag = false;

			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &name, &nullflag);
		}
		MemoryContextReset(rowcxt);
	}
	SPI_finish();
	MemoryContextDelete(rowcxt);
	return (Datum) 0;
}
