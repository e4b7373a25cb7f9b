/*-------------------------------------------------------------------------
 *
 * entitywrite.c
 *	  Entity writes through the table and index access methods, without
 *	  SPI: insert, replace, merge, delete and the upserts.
 *
 * The SPI path (entityops.c) plans and runs an SQL statement per write; this
 * path does what the executor would do for that statement, directly: probe
 * the key index, lock the entity's latest row version, check the If-Match
 * condition on it, and insert, update or delete through table_tuple_* and
 * ExecInsertIndexTuples, with the relation's CHECK constraints compiled
 * once per relation and checked as ExecConstraints would.  It serves a write when nothing that only the executor
 * applies is in play: the relation has no triggers (nor foreign keys, which
 * are triggers) and row-level security does not apply to the caller, and the
 * caller holds every privilege the statement would need on the whole table
 * (not only on columns).  Otherwise ts_direct_usable says no and the SPI
 * path runs, with the executor's full semantics.
 *
 * Concurrency follows the executor's READ COMMITTED and REPEATABLE READ
 * rules for UPDATE and DELETE: the row version found with the statement's
 * snapshot is locked; under READ COMMITTED the latest version of a row
 * updated meanwhile is locked instead and the condition is checked on it, a
 * row deleted meanwhile makes the operation look again (the key may have
 * been inserted anew), and under REPEATABLE READ or SERIALIZABLE either is a
 * serialization failure.
 *
 * Upserts need no subtransaction.  Every tablestore write that may insert a
 * key first takes a short-lived lock on the key (a lock-manager lock on a
 * hash of relation and key), looks for the key with a dirty snapshot, and
 * inserts only if no version of it exists or is being inserted; the lock is
 * released once the new row is in the key index, where a later writer's
 * dirty look finds it and waits for its transaction.  So no two tablestore
 * writers can insert the same key at once.  The look can still miss a
 * version of an existing key that a concurrent update (which takes no key
 * lock) puts in place while the look runs, so an upsert inserts
 * speculatively, as INSERT ... ON CONFLICT does: the key index checks with
 * UNIQUE_CHECK_PARTIAL, and on a conflict the new row is killed and the
 * upsert looks again; it never fails with EntityAlreadyExists.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/sysattr.h"
#include "catalog/pg_class.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "utils/memutils.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "tablestore.h"

/* The advisory lock tag kind of the key locks (batch.c's partitions use 3). */
#define KEY_LOCK_TAG_KIND	4

/* The suffix of a type annotation's name. */
#define ANNOTATION_SUFFIX	"@odata.type"

/* The state of one direct write. */
typedef struct DirectWrite
{
	RelPlans   *plans;
	Relation	heap;
	Relation	index;			/* the key index */
	RegProcedure eqproc;		/* the key type's equality */
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *oldslot;	/* the row version found or locked */
	TupleTableSlot *newslot;	/* the row version written */
	CommandId	cid;
} DirectWrite;

/*
 * ts_direct_usable: whether a write of kind to the (locked) entity relation
 * may go the direct path (see the file comment).
 */
bool
ts_direct_usable(Oid relid, TsOpKind kind)
{
	Relation	heap;
	bool		usable;
	AclMode		needed;

	switch (kind)
	{
		case TS_OP_INSERT:
			needed = ACL_INSERT;
			break;
		case TS_OP_UPDATE:
		case TS_OP_MERGE:
			needed = ACL_SELECT | ACL_UPDATE;
			break;
		case TS_OP_INSERT_OR_REPLACE:
		case TS_OP_INSERT_OR_MERGE:
			needed = ACL_SELECT | ACL_INSERT | ACL_UPDATE;
			break;
		case TS_OP_DELETE:
			needed = ACL_SELECT | ACL_DELETE;
			break;
		default:
			return false;
	}
	if (pg_class_aclmask(relid, GetUserId(), needed, ACLMASK_ALL) != needed)
		return false;
	if (check_enable_rls(relid, InvalidOid, true) != RLS_NONE)
		return false;
	heap = table_open(relid, NoLock);
	usable = (heap->trigdesc == NULL);
	table_close(heap, NoLock);
	return usable;
}

/*
 * Set up a direct write on an entity relation the caller has locked: the
 * executor state that constraint checks and index insertion need, as the
 * executor would set it up for an INSERT, UPDATE or DELETE of one row.
 */
static void
direct_begin(DirectWrite *w, RelPlans *plans)
{
	Oid			relid = ts_plans_relid(plans);
	RangeTblEntry *rte = makeNode(RangeTblEntry);
	Oid			opno;

	/* ts_table_open checked the relation and found its key index */
	w->plans = plans;
	w->heap = table_open(relid, NoLock);
	w->index = index_open(ts_plans_keyindex(plans), RowExclusiveLock);
	opno = get_opfamily_member(w->index->rd_opfamily[0], w->index->rd_opcintype[0],
							   w->index->rd_opcintype[0], BTEqualStrategyNumber);
	if (!OidIsValid(opno))
		elog(ERROR, "key index of \"%s\" has no equality operator", RelationGetRelationName(w->heap));
	w->eqproc = get_opcode(opno);

	w->estate = CreateExecutorState();
	rte->rtekind = RTE_RELATION;
	rte->relid = relid;
	rte->relkind = RELKIND_RELATION;
	rte->rellockmode = RowExclusiveLock;
	/* the columns a write sets, for constraint error details and index hints */
	for (int att = TS_ATT_TS; att <= TS_ATT_PROPS; att++)
		rte->updatedCols = bms_add_member(rte->updatedCols, att - FirstLowInvalidHeapAttributeNumber);
	for (int att = TS_ATT_PK; att <= TS_ATT_PROPS; att++)
		rte->insertedCols = bms_add_member(rte->insertedCols, att - FirstLowInvalidHeapAttributeNumber);
	ExecInitRangeTable(w->estate, list_make1(rte));
	w->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(w->rri, w->heap, 1, NULL, 0);
	ExecOpenIndices(w->rri, false);
	w->oldslot = table_slot_create(w->heap, &w->estate->es_tupleTable);
	w->newslot = table_slot_create(w->heap, &w->estate->es_tupleTable);
}

/* Release what direct_begin set up. */
static void
direct_end(DirectWrite *w)
{
	ExecCloseIndices(w->rri);
	ExecResetTupleTable(w->estate->es_tupleTable, false);
	FreeExecutorState(w->estate);
	index_close(w->index, RowExclusiveLock);
	table_close(w->heap, NoLock);
}

/*
 * Start a statement of the write: make the previous writes visible and take
 * the snapshot a statement would (a new one under READ COMMITTED).
 */
static void
statement_begin(DirectWrite *w)
{
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	w->cid = GetCurrentCommandId(true);
	w->estate->es_snapshot = GetActiveSnapshot();
	w->estate->es_output_cid = w->cid;
}

static void
statement_end(void)
{
	PopActiveSnapshot();
	CommandCounterIncrement();
}

/*
 * Find the row version of key (pk, rk) that snapshot sees, through the key
 * index; into w->oldslot, its TID in *tid.
 */
static bool
probe(DirectWrite *w, Snapshot snapshot, text *pk, text *rk, ItemPointer tid)
{
	ScanKeyData keys[2];
	IndexScanDesc scan;
	bool		found;

	ScanKeyEntryInitialize(&keys[0], 0, 1, BTEqualStrategyNumber, InvalidOid,
						   w->index->rd_indcollation[0], w->eqproc, PointerGetDatum(pk));
	ScanKeyEntryInitialize(&keys[1], 0, 2, BTEqualStrategyNumber, InvalidOid,
						   w->index->rd_indcollation[1], w->eqproc, PointerGetDatum(rk));
	scan = index_beginscan(w->heap, w->index, snapshot, 2, 0);
	index_rescan(scan, keys, 2, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, w->oldslot);
	if (found)
		*tid = w->oldslot->tts_tid;
	index_endscan(scan);
	return found;
}

/* Whether the row version in w->oldslot has key (pk, rk). */
static bool
slot_has_key(DirectWrite *w, text *pk, text *rk)
{
	bool		isnull;
	text	   *spk = DatumGetTextPP(slot_getattr(w->oldslot, TS_ATT_PK, &isnull));
	text	   *srk;

	if (isnull || VARSIZE_ANY_EXHDR(spk) != VARSIZE_ANY_EXHDR(pk) ||
		memcmp(VARDATA_ANY(spk), VARDATA_ANY(pk), VARSIZE_ANY_EXHDR(pk)) != 0)
		return false;
	srk = DatumGetTextPP(slot_getattr(w->oldslot, TS_ATT_RK, &isnull));
	return !isnull && VARSIZE_ANY_EXHDR(srk) == VARSIZE_ANY_EXHDR(rk) &&
		memcmp(VARDATA_ANY(srk), VARDATA_ANY(rk), VARSIZE_ANY_EXHDR(rk)) == 0;
}

static void serialization_failure(TM_Result result, text *pk, text *rk) pg_attribute_noreturn();

static void
serialization_failure(TM_Result result, text *pk, text *rk)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not serialize access due to concurrent %s of entity (\"%s\", \"%s\")",
					result == TM_Deleted ? "delete" : "update", ts_clip_text(pk), ts_clip_text(rk)),
			 errhint("Retry the transaction.")));
}

/*
 * Find and lock the latest version of entity (pk, rk), as UPDATE and DELETE
 * lock the row they change.  Returns false if there is none (it does not
 * exist, or under READ COMMITTED it was deleted after the snapshot: the
 * caller looks again with a new snapshot when *retry).  The locked version
 * is in w->oldslot, its TID in *tid.
 */
static bool
lock_entity(DirectWrite *w, text *pk, text *rk, LockTupleMode mode, ItemPointer tid, bool *retry)
{
	TM_FailureData tmfd;
	TM_Result	result;

	*retry = false;
	if (!probe(w, w->estate->es_snapshot, pk, rk, tid))
		return false;
	result = table_tuple_lock(w->heap, tid, w->estate->es_snapshot, w->oldslot, w->cid, mode,
							  LockWaitBlock,
							  IsolationUsesXactSnapshot() ? 0 : TUPLE_LOCK_FLAG_FIND_LAST_VERSION,
							  &tmfd);
	switch (result)
	{
		case TM_Ok:
			/* a later version (READ COMMITTED) could have another key */
			if (tmfd.traversed && !slot_has_key(w, pk, rk))
			{
				*retry = true;
				return false;
			}
			return true;
		case TM_Deleted:
		case TM_Updated:
			if (IsolationUsesXactSnapshot())
				serialization_failure(result, pk, rk);
			*retry = true;
			return false;
		case TM_SelfModified:
			/* changed by a later command of ours: cannot happen here */
			elog(ERROR, "entity row was modified by a later command of this transaction");
			break;
		default:
			elog(ERROR, "unexpected result %d locking an entity row", (int) result);
	}
	return false;
}

/*
 * Compile the CHECK constraints of the relation into the cache, as
 * ExecRelCheck would for each statement.
 */
static void
build_checks(TsCheckCache *cache, Relation heap)
{
	TupleConstr *constr = heap->rd_att->constr;
	MemoryContext old;

	if (cache->cxt != NULL)
		MemoryContextDelete(cache->cxt);
	cache->cxt = NULL;
	cache->n = 0;
	cache->constr = constr;
	if (constr == NULL || constr->num_check == 0)
		return;
	cache->cxt = AllocSetContextCreate(TopMemoryContext, "tablestore check constraints",
									   ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(cache->cxt);
	cache->states = palloc(sizeof(ExprState *) * constr->num_check);
	cache->names = palloc(sizeof(char *) * constr->num_check);
	for (int i = 0; i < constr->num_check; i++)
	{
		Expr	   *expr = expression_planner(stringToNode(constr->check[i].ccbin));

		cache->states[i] = ExecInitExpr(expr, NULL);
		cache->names[i] = pstrdup(constr->check[i].ccname);
	}
	cache->n = constr->num_check;
	MemoryContextSwitchTo(old);
}

/*
 * Check the relation's constraints on the row in slot, as ExecConstraints
 * does: the NOT NULL columns hold values (entity rows never have NULLs in
 * them), and every CHECK constraint is true or null.
 */
static void
check_constraints(DirectWrite *w, TupleTableSlot *slot)
{
	TsCheckCache *cache = ts_plans_checks(w->plans);
	ExprContext *econtext;

	if (w->heap->rd_att->constr == NULL)
		return;
	if (cache->constr != w->heap->rd_att->constr || (cache->cxt == NULL && w->heap->rd_att->constr->num_check > 0))
		build_checks(cache, w->heap);
	econtext = GetPerTupleExprContext(w->estate);
	econtext->ecxt_scantuple = slot;
	for (int i = 0; i < cache->n; i++)
	{
		if (!ExecCheck(cache->states[i], econtext))
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("new row for relation \"%s\" violates check constraint \"%s\"",
							RelationGetRelationName(w->heap), cache->names[i]),
					 errtableconstraint(w->heap, cache->names[i])));
	}
	ResetExprContext(econtext);
}

/* Fill w->newslot with an entity row. */
static void
store_row(DirectWrite *w, text *pk, text *rk, TimestampTz ts, Jsonb *props)
{
	TupleTableSlot *slot = w->newslot;
	int			natts = slot->tts_tupleDescriptor->natts;

	ExecClearTuple(slot);
	for (int i = 0; i < natts; i++)
		slot->tts_isnull[i] = true; /* dropped columns */
	slot->tts_values[TS_ATT_PK - 1] = PointerGetDatum(pk);
	slot->tts_values[TS_ATT_RK - 1] = PointerGetDatum(rk);
	slot->tts_values[TS_ATT_TS - 1] = TimestampTzGetDatum(ts);
	slot->tts_values[TS_ATT_PROPS - 1] = JsonbPGetDatum(props);
	for (int i = 0; i < 4; i++)
		slot->tts_isnull[i] = false;
	ExecStoreVirtualTuple(slot);
	check_constraints(w, slot);
}

/* The key lock of entity (pk, rk) of a relation. */
static void
key_lock_tag(LOCKTAG *tag, Oid relid, text *pk, text *rk)
{
	uint32		h = DatumGetUInt32(hash_any((const unsigned char *) VARDATA_ANY(pk), VARSIZE_ANY_EXHDR(pk)));

	h = hash_combine(h, DatumGetUInt32(hash_any((const unsigned char *) VARDATA_ANY(rk),
												VARSIZE_ANY_EXHDR(rk))));
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) relid, h, KEY_LOCK_TAG_KIND);
}

/*
 * ts_lock_key: take the key lock of entity (pk, rk) before an insert
 * (see the file comment); ts_unlock_key releases it once the row is in the
 * key index.  Also used by the SPI path, so that both serialize alike.
 */
void
ts_lock_key(Oid relid, text *pk, text *rk)
{
	LOCKTAG		tag;

	key_lock_tag(&tag, relid, pk, rk);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

void
ts_unlock_key(Oid relid, text *pk, text *rk)
{
	LOCKTAG		tag;

	key_lock_tag(&tag, relid, pk, rk);
	LockRelease(&tag, ExclusiveLock, false);
}

/* Insert the entity row into the heap and every index of the relation. */
static void
insert_row(DirectWrite *w, text *pk, text *rk, TimestampTz ts, Jsonb *props)
{
	store_row(w, pk, rk, ts, props);
	table_tuple_insert(w->heap, w->newslot, w->cid, 0, NULL);
	(void) ExecInsertIndexTuples(w->rri, w->newslot, w->estate, false, false, NULL, NIL);
}

/*
 * Whether the stored property named key (of an old entity) is replaced by a
 * merge of new_props: the property itself or its type annotation.
 */
static bool
merged_away(Jsonb *new_props, const char *key, int len)
{
	int			suffix = sizeof(ANNOTATION_SUFFIX) - 1;

	if (getKeyJsonValueFromContainer(&new_props->root, key, len, NULL) != NULL)
		return true;
	return len > suffix && memcmp(key + len - suffix, ANNOTATION_SUFFIX, suffix) == 0 &&
		getKeyJsonValueFromContainer(&new_props->root, key, len - suffix, NULL) != NULL;
}

/*
 * The properties of a merge: the stored ones that new_props does not name
 * (nor their annotations), then new_props.
 */
static Jsonb *
merge_props(Jsonb *old_props, Jsonb *new_props)
{
	JsonbParseState *st = NULL;
	JsonbIterator *it;
	JsonbIteratorToken tok;
	JsonbValue	k;
	JsonbValue	v;

	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	it = JsonbIteratorInit(&old_props->root);
	while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
	{
		if (tok != WJB_KEY)
			continue;
		tok = JsonbIteratorNext(&it, &v, true);
		Assert(tok == WJB_VALUE);
		if (merged_away(new_props, k.val.string.val, k.val.string.len))
			continue;
		pushJsonbValue(&st, WJB_KEY, &k);
		pushJsonbValue(&st, WJB_VALUE, &v);
	}
	it = JsonbIteratorInit(&new_props->root);
	while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
	{
		if (tok != WJB_KEY)
			continue;
		tok = JsonbIteratorNext(&it, &v, true);
		pushJsonbValue(&st, WJB_KEY, &k);
		pushJsonbValue(&st, WJB_VALUE, &v);
	}
	return JsonbValueToJsonb(pushJsonbValue(&st, WJB_END_OBJECT, NULL));
}

/*
 * Replace or merge the locked row version in w->oldslot (TID *tid) with e.
 */
static void
update_locked(DirectWrite *w, TsOpKind kind, TsEntity *e, ItemPointer tid, TsOpResult *result)
{
	bool		merge = (kind == TS_OP_MERGE || kind == TS_OP_INSERT_OR_MERGE);
	bool		isnull;
	TimestampTz old_ts = DatumGetTimestampTz(slot_getattr(w->oldslot, TS_ATT_TS, &isnull));
	TimestampTz next_ts = old_ts + 1;
	TimestampTz now = GetCurrentTimestamp();
	Jsonb	   *props = e->props;
	TM_FailureData tmfd;
	LockTupleMode lockmode;
	bool		update_indexes;
	TM_Result	res;

	if (merge)
	{
		Jsonb	   *old_props = DatumGetJsonbP(slot_getattr(w->oldslot, TS_ATT_PROPS, &isnull));

		slot_getallattrs(w->oldslot);
		ts_check_stored_row(RelationGetRelationName(w->heap), w->oldslot->tts_values, w->oldslot->tts_isnull);
		props = merge_props(old_props, e->props);
		/* a merge can take the entity over the limits; the error undoes it */
		ts_entity_check_limits(props, ts_entity_key_size(e->partition_key, e->row_key));
	}
	/* Timestamps increase per entity, even within one microsecond */
	result->ts = Max(now, next_ts);
	result->props = props;

	store_row(w, e->partition_key, e->row_key, result->ts, props);
	CheckCmdReplicaIdentity(w->heap, CMD_UPDATE);
	res = table_tuple_update(w->heap, tid, w->newslot, w->cid, w->estate->es_snapshot, InvalidSnapshot,
							 true, &tmfd, &lockmode, &update_indexes);
	if (res != TM_Ok)
		elog(ERROR, "unexpected result %d updating a locked entity row", (int) res);
	if (update_indexes)
		(void) ExecInsertIndexTuples(w->rri, w->newslot, w->estate, true, false, NULL, NIL);
}

/* The If-Match condition against the locked version's Timestamp. */
static void
check_etag(DirectWrite *w, bool conditional, int64 ticks, text *pk, text *rk)
{
	bool		isnull;

	ts_check_if_match(DatumGetTimestampTz(slot_getattr(w->oldslot, TS_ATT_TS, &isnull)),
					  conditional, ticks, pk, rk);
}

/*
 * An upsert: under the key lock, look for any version of the key with a
 * dirty snapshot.  Returns true if it inserted e; false if the entity
 * exists (the caller updates it), or was being written by another
 * transaction (waited for), or the key index found a version the look
 * missed (the caller looks again in both cases).
 */
static bool
upsert_insert(DirectWrite *w, TsEntity *e, TsOpResult *result, bool *exists)
{
	SnapshotData dirty;
	ItemPointerData tid;
	TransactionId wait_xid;
	Oid			relid = RelationGetRelid(w->heap);

	*exists = false;
	ts_lock_key(relid, e->partition_key, e->row_key);
	InitDirtySnapshot(dirty);
	if (probe(w, &dirty, e->partition_key, e->row_key, &tid))
	{
		wait_xid = TransactionIdIsValid(dirty.xmin) ? dirty.xmin : dirty.xmax;
		ts_unlock_key(relid, e->partition_key, e->row_key);
		if (TransactionIdIsValid(wait_xid))
		{
			/* being inserted or deleted: wait, then look again */
			XactLockTableWait(wait_xid, w->heap, &tid, XLTW_InsertIndex);
			return false;
		}

		/*
		 * It exists.  Under REPEATABLE READ or SERIALIZABLE it must be one
		 * the transaction's snapshot sees, or the update cannot be right.
		 */
		if (IsolationUsesXactSnapshot() &&
			!table_tuple_satisfies_snapshot(w->heap, w->oldslot, GetTransactionSnapshot()))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("could not serialize access due to a concurrent insert of entity (\"%s\", \"%s\")",
							ts_clip_text(e->partition_key), ts_clip_text(e->row_key)),
					 errhint("Retry the transaction.")));
		*exists = true;
		return false;
	}

	/*
	 * Not found: insert, speculatively, as INSERT ... ON CONFLICT does.  The
	 * dirty look can miss a version of the key that a concurrent update
	 * (which takes no key lock) is putting in place of the one it had
	 * found, so the key index's own check decides: on a conflict the new
	 * row is killed and the caller looks again.
	 */
	result->ts = GetCurrentTimestamp();
	result->props = e->props;
	store_row(w, e->partition_key, e->row_key, result->ts, e->props);
	{
		TransactionId xid = GetCurrentTransactionId();
		uint32		token = SpeculativeInsertionLockAcquire(xid);
		bool		conflict = false;

		table_tuple_insert_speculative(w->heap, w->newslot, w->cid, 0, NULL, token);
		(void) ExecInsertIndexTuples(w->rri, w->newslot, w->estate, false, true, &conflict,
									 list_make1_oid(RelationGetRelid(w->index)));
		table_tuple_complete_speculative(w->heap, w->newslot, token, !conflict);
		SpeculativeInsertionLockRelease(xid);
		ts_unlock_key(relid, e->partition_key, e->row_key);
		if (conflict)
			return false;		/* *exists is false: the caller looks again */
	}
	return true;
}

/*
 * ts_direct_apply: carry out a write (not a retrieve) on the entity
 * relation relid, which the caller has locked and ts_direct_usable
 * accepted, as ts_apply_op does through SPI: same results, same errors.
 */
void
ts_direct_apply(RelPlans *plans, TsOpKind kind, TsEntity *e, bool conditional, int64 ticks,
				TsOpResult *result)
{
	Oid			relid = ts_plans_relid(plans);
	DirectWrite w;
	text	   *pk = e->partition_key;
	text	   *rk = e->row_key;
	ItemPointerData tid;
	bool		retry;
	bool		exists;

	result->props = e->props;
	result->ts = 0;
	direct_begin(&w, plans);
	for (int round = 0;; round++)
	{
		retry = false;
		CHECK_FOR_INTERRUPTS();
		statement_begin(&w);
		switch (kind)
		{
			case TS_OP_INSERT:
				/* the key index raises the unique violation of an existing key */
				result->ts = GetCurrentTimestamp();
				ts_lock_key(relid, pk, rk);
				insert_row(&w, pk, rk, result->ts, e->props);
				ts_unlock_key(relid, pk, rk);
				break;

			case TS_OP_UPDATE:
			case TS_OP_MERGE:
				if (!lock_entity(&w, pk, rk, LockTupleNoKeyExclusive, &tid, &retry))
				{
					if (retry)
						break;
					ts_entity_not_found(pk, rk);
				}
				check_etag(&w, conditional, ticks, pk, rk);
				update_locked(&w, kind, e, &tid, result);
				break;

			case TS_OP_INSERT_OR_REPLACE:
			case TS_OP_INSERT_OR_MERGE:
				if (upsert_insert(&w, e, result, &exists))
					break;
				if (!exists)
				{
					retry = true;	/* waited for another writer */
					break;
				}
				if (!lock_entity(&w, pk, rk, LockTupleNoKeyExclusive, &tid, &retry))
				{
					retry = true;	/* deleted meanwhile: look again */
					break;
				}
				update_locked(&w, kind, e, &tid, result);
				break;

			case TS_OP_DELETE:
				if (!lock_entity(&w, pk, rk, LockTupleExclusive, &tid, &retry))
				{
					if (retry)
						break;
					ts_entity_not_found(pk, rk);
				}
				check_etag(&w, conditional, ticks, pk, rk);
				{
					TM_FailureData tmfd;
					TM_Result	res;

					CheckCmdReplicaIdentity(w.heap, CMD_DELETE);
					res = table_tuple_delete(w.heap, &tid, w.cid, w.estate->es_snapshot, InvalidSnapshot,
											 true, &tmfd, false);
					if (res != TM_Ok)
						elog(ERROR, "unexpected result %d deleting a locked entity row", (int) res);
				}
				result->props = NULL;
				break;

			case TS_OP_RETRIEVE:
				elog(ERROR, "a retrieve is not a direct write");
		}
		statement_end();
		if (!retry)
			break;
		if (round == 100)
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("could not write entity (\"%s\", \"%s\") because of concurrent writes of its key",
							ts_clip_text(pk), ts_clip_text(rk)),
					 errhint("Retry the operation.")));
	}
	direct_end(&w);
}
