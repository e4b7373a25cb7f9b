/*-------------------------------------------------------------------------
 *
 * entitywrite.c
 *	  Entity writes through the table and index access methods, without
 *	  SPI: insert, replace, merge, delete and the upserts.
 *
 * The SPI path (entityspi.c), this path's peer beneath the operations
 * (entityops.c), plans and runs an SQL statement per write; this path does
 * what the executor would do for that statement, directly: probe
 * the key index, lock the entity's latest row version, check the If-Match
 * condition on it, and insert, update or delete through table_tuple_* and
 * ExecInsertIndexTuples, with the relation's CHECK constraints checked as
 * ExecConstraints would: planned once per relation, role and search_path
 * (until a function, type or the relation changes), with expression state
 * made for each write in its own executor state (the trees are kept in the
 * entity-relation layer's cache, entityrel.c).  It serves a write
 * when nothing that only the executor applies is in play: the relation has
 * no triggers (nor foreign keys, which are triggers) and row-level security
 * does not apply to the caller, and the caller holds every privilege the
 * statement would need on the whole table (not only on columns).  Otherwise
 * ts_direct_usable says no and the SPI path runs, with the executor's full
 * semantics.
 *
 * What the executor checks for such a statement, this path checks too, as
 * PostgreSQL's own executor-less writer (execReplication.c's
 * ExecSimpleRelationInsert/Update/Delete) does: the transaction may write
 * (standard_ExecutorStart's read-only check: 25006, also on a standby), the
 * constraints (NOT NULL and CHECK, then the partition constraint of a
 * relation attached as a partition: 23514; an UPDATE checks the partition
 * first, as ExecUpdate does), every index through ExecInsertIndexTuples
 * (so a unique or exclusion index the owner added raises its own error,
 * naming it), the replica identity before any row is looked at, for every
 * write but an insert (as for the SPI path's UPDATE or DELETE), and a row
 * changed by the write's own CHECK function (a re-entrant write) is 27000,
 * as ExecUpdate and ExecDelete raise it.  test/sql/write_executor.sql
 * compares the two paths and plain SQL under each of these conditions.
 *
 * Concurrency follows the executor's READ COMMITTED and REPEATABLE READ
 * rules for UPDATE and DELETE: the row version found with the statement's
 * snapshot is changed if the condition holds on it, heap_update or
 * heap_delete locking it (and waiting for its writers) as for the executor;
 * if it was changed meanwhile (or the condition fails on it), nothing is
 * written and the locking path decides, as EvalPlanQual would: under READ
 * COMMITTED the latest version of a row updated meanwhile is locked and the
 * condition is checked on it, a row deleted meanwhile makes the operation
 * look again (the key may have been inserted anew), and under REPEATABLE
 * READ or SERIALIZABLE either is a serialization failure.  The direct
 * writes of one batch share one executor state (ts_direct_begin).
 *
 * An insert is INSERT's: the row goes into the heap and every index, and
 * the key index waits for a concurrent inserter of the key and raises
 * EntityAlreadyExists if that one commits.  Upserts need no subtransaction:
 * an upsert inserts as INSERT ... ON CONFLICT does.  It looks for the key
 * with a dirty snapshot (waiting, holding nothing, for a transaction that is
 * writing it) and updates the entity if it exists; else it inserts
 * speculatively with the key index as the arbiter: the key index checks
 * with UNIQUE_CHECK_PARTIAL, which never waits, and on a conflict (a writer
 * that got in after the look) the new row is killed and the upsert looks
 * again, so it never fails with EntityAlreadyExists.  The key index checks
 * and inserts under its leaf's lock, so of two inserters of a key the
 * second always sees the first.  No lock of tablestore's own is held while
 * a write waits for another transaction, so the waits are those of plain
 * SQL and cannot turn into deadlocks plain SQL would not have.  Under
 * REPEATABLE READ or SERIALIZABLE an upsert whose snapshot sees a version
 * of the key that another transaction has since deleted or replaced fails
 * with 40001, as the SPI path's UPDATE does, instead of inserting.
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
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/memutils.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "tablestore.h"
#include "errors.h"
#include "edm.h"
#include "entity.h"
#include "writepath.h"
#include "entityrel.h"

/* The suffix of a type annotation's name. */
#define ANNOTATION_SUFFIX	"@odata.type"

/*
 * The state of direct writes to one relation: of one write, or of all the
 * direct writes of a batch (ts_direct_begin), which open the relation, its
 * indexes and the executor state once instead of once per operation.
 */
typedef struct DirectWrite
{
	TsEntityRel *rel;
	Relation	heap;
	Relation	index;			/* the key index */
	RegProcedure eqproc;		/* the key type's equality */
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *oldslot;	/* the row version found or locked */
	TupleTableSlot *newslot;	/* the row version written */
	CommandId	cid;
	bool		checks_ready;	/* the CHECK constraints' state is made */
	int			nchecks;
	ExprState **checks;			/* made for this write, in estate */
	char	  **checknames;
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
direct_begin(DirectWrite *w, TsEntityRel *rel)
{
	Oid			relid = ts_rel_relid(rel);
	RangeTblEntry *rte = makeNode(RangeTblEntry);
	Oid			opno;

	/* ts_table_open checked the relation and found its key index */
	w->rel = rel;
	w->heap = table_open(relid, NoLock);
	w->index = index_open(ts_rel_keyindex(rel), RowExclusiveLock);
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
	w->checks_ready = false;
	w->nchecks = 0;
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

/* End a statement of the write: its snapshot goes, its writes are seen. */
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
static void changed_by_own_write(DirectWrite *w, const char *what, TM_FailureData *tmfd, text *pk,
								 text *rk) pg_attribute_noreturn();

/*
 * The error of a row version changed (result) by a transaction the
 * REPEATABLE READ or SERIALIZABLE snapshot does not see: 40001, as the
 * executor's.
 */
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
 * A row version to change was changed meanwhile by this transaction: by a
 * later command (a CHECK constraint's function that wrote the entity while
 * the write was checking its new row), as ExecUpdate and ExecDelete report
 * it, 27000; by this very command, which writes one row once, never.
 */
static void
changed_by_own_write(DirectWrite *w, const char *what, TM_FailureData *tmfd, text *pk, text *rk)
{
	if (tmfd->cmax == w->cid)
		elog(ERROR, "entity row to be %s was already changed by the same command", what);
	ereport(ERROR,
			(errcode(ERRCODE_TRIGGERED_DATA_CHANGE_VIOLATION),
			 errmsg("entity (\"%s\", \"%s\") to be %s was already changed by an operation triggered by the current write",
					ts_clip_text(pk), ts_clip_text(rk), what),
			 errhint("A CHECK constraint's function of the entity relation writes the entity it checks.")));
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
			changed_by_own_write(w, "locked", &tmfd, pk, rk);
			break;
		default:
			elog(ERROR, "unexpected result %d locking an entity row", (int) result);
	}
	return false;
}

/*
 * Make this write's state of the relation's CHECK constraints, as the
 * executor makes it for each statement: from the planned trees of the
 * entity-relation layer's cache (ts_rel_check_exprs: copies of this write's
 * own), initialized in the write's executor state.  Initializing checks
 * the EXECUTE privilege of each function and looks up domains' constraints;
 * the state belongs to this write only, so a write that a CHECK's function
 * makes (of this very relation) or a later write, by any role, never shares
 * it.
 */
static void
prepare_checks(DirectWrite *w)
{
	MemoryContext old = MemoryContextSwitchTo(w->estate->es_query_cxt);
	Expr	  **trees;
	int			n;

	n = ts_rel_check_exprs(w->rel, w->heap, &trees, &w->checknames);
	w->checks = palloc(sizeof(ExprState *) * Max(n, 1));
	for (int i = 0; i < n; i++)
		w->checks[i] = ExecInitExpr(trees[i], NULL);
	MemoryContextSwitchTo(old);
	w->nchecks = n;
	w->checks_ready = true;
}

/*
 * Check the relation's constraints on the row in slot, as ExecConstraints
 * does: the NOT NULL columns hold values (entity rows never have NULLs in
 * them), and every CHECK constraint is true or null.
 */
static void
check_constraints(DirectWrite *w, TupleTableSlot *slot)
{
	ExprContext *econtext;

	if (w->heap->rd_att->constr == NULL)
		return;
	if (!w->checks_ready)
		prepare_checks(w);
	econtext = GetPerTupleExprContext(w->estate);
	econtext->ecxt_scantuple = slot;
	for (int i = 0; i < w->nchecks; i++)
	{
		if (!ExecCheck(w->checks[i], econtext))
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("new row for relation \"%s\" violates check constraint \"%s\"",
							RelationGetRelationName(w->heap), w->checknames[i]),
					 errtableconstraint(w->heap, w->checknames[i])));
	}
	ResetExprContext(econtext);
}

/*
 * Check the partition constraint of a relation attached as a partition (an
 * owner may attach an entity relation to a partitioned table of theirs), as
 * ExecInsert and ExecUpdate do for a row written to a partition directly:
 * 23514 for a row outside the partition's bound.
 */
static void
check_partition(DirectWrite *w, TupleTableSlot *slot)
{
	if (w->heap->rd_rel->relispartition)
		(void) ExecPartitionCheck(w->rri, slot, w->estate, true);
}

/*
 * Fill w->newslot with an entity row and check it in the executor's order:
 * an insert checks the constraints then the partition, an update the
 * partition first.
 */
static void
store_row(DirectWrite *w, text *pk, text *rk, TimestampTz ts, Jsonb *props, bool update)
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
	if (update)
		check_partition(w, slot);
	check_constraints(w, slot);
	if (!update)
		check_partition(w, slot);
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
 * Replace or merge the row version in w->oldslot (TID *tid) with e.  When
 * locked, the caller locked it (lock_entity) and any other outcome than
 * success is an error; else it is the version the statement's snapshot
 * sees, which heap_update locks itself, as for the executor's UPDATE, and
 * false says that it was changed or deleted meanwhile (nothing written; the
 * caller locks the latest version and decides on it, as the executor's
 * EvalPlanQual does, or fails to serialize).
 *
 * What the row written depends on, the version it is made from, may be
 * stale when not locked: then no check of tablestore's own that depends on
 * it raises an error before the update has found it the latest version.
 * The stored row's form and the new Timestamp's range are tested, and a
 * failure returns false (nothing written: the locking path checks the
 * latest version and raises what it raises); the limits of a merge are
 * checked once the update succeeded, on either path, as the SPI path checks
 * them on what its UPDATE returned (the error undoes the update).  The
 * relation's CHECK and partition constraints are the executor's: checked
 * before the update, on the row made from the version found, as ExecUpdate
 * checks them before heap_update.
 */
static bool
update_row(DirectWrite *w, TsOpKind kind, TsEntity *e, ItemPointer tid, TsOpResult *result,
		   bool locked)
{
	bool		merge = (kind == TS_OP_MERGE || kind == TS_OP_INSERT_OR_MERGE);
	bool		isnull;
	TimestampTz old_ts = DatumGetTimestampTz(slot_getattr(w->oldslot, TS_ATT_TS, &isnull));
	Jsonb	   *props = e->props;
	TM_FailureData tmfd;
	LockTupleMode lockmode;
	bool		update_indexes;
	TM_Result	res;

	if (merge)
	{
		slot_getallattrs(w->oldslot);
		if (!locked && !ts_stored_row_valid(w->oldslot->tts_values, w->oldslot->tts_isnull))
			return false;
		ts_check_stored_row(RelationGetRelationName(w->heap), w->oldslot->tts_values, w->oldslot->tts_isnull);
		props = merge_props(DatumGetJsonbP(w->oldslot->tts_values[TS_ATT_PROPS - 1]), e->props);
	}
	/*
	 * Timestamps increase per entity, even within one microsecond, and
	 * never leave the service's range (ts_write_timestamp)
	 */
	result->ts = ts_next_write_timestamp(old_ts);
	if (!locked && !ts_timestamptz_in_range(result->ts))
		return false;
	ts_check_write_timestamp(result->ts, e->partition_key, e->row_key);
	result->props = props;

	store_row(w, e->partition_key, e->row_key, result->ts, props, true);
	res = table_tuple_update(w->heap, tid, w->newslot, w->cid, w->estate->es_snapshot, InvalidSnapshot,
							 true, &tmfd, &lockmode, &update_indexes);
	if (res == TM_SelfModified)
		changed_by_own_write(w, "updated", &tmfd, e->partition_key, e->row_key);
	if (!locked && (res == TM_Updated || res == TM_Deleted))
	{
		if (IsolationUsesXactSnapshot())
			serialization_failure(res, e->partition_key, e->row_key);
		return false;
	}
	if (res != TM_Ok)
		elog(ERROR, "unexpected result %d updating a locked entity row", (int) res);
	/* a merge can take the entity over the limits; the error undoes it */
	if (merge)
		ts_entity_check_limits(props, ts_entity_key_size(e->partition_key, e->row_key));
	if (update_indexes)
		(void) ExecInsertIndexTuples(w->rri, w->newslot, w->estate, true, false, NULL, NIL);
	return true;
}

/*
 * Delete the row version at *tid: locked by the caller, or (not locked) the
 * one the statement's snapshot sees, with false when it was changed or
 * deleted meanwhile, as update_row.
 */
static bool
delete_row(DirectWrite *w, ItemPointer tid, text *pk, text *rk, bool locked)
{
	TM_FailureData tmfd;
	TM_Result	res;

	res = table_tuple_delete(w->heap, tid, w->cid, w->estate->es_snapshot, InvalidSnapshot,
							 true, &tmfd, false);
	if (res == TM_SelfModified)
		changed_by_own_write(w, "deleted", &tmfd, pk, rk);
	if (!locked && (res == TM_Updated || res == TM_Deleted))
	{
		if (IsolationUsesXactSnapshot())
			serialization_failure(res, pk, rk);
		return false;
	}
	if (res != TM_Ok)
		elog(ERROR, "unexpected result %d deleting a locked entity row", (int) res);
	return true;
}

/*
 * Replace, merge or delete entity e without locking its row first, as the
 * executor's UPDATE and DELETE do (heap_update and heap_delete lock the row
 * they change, and wait for its other writers): the version the statement's
 * snapshot sees, if the If-Match condition holds on it.  Returns false,
 * having written nothing, when there is no such version, the condition
 * fails on it, or it was changed or deleted meanwhile: the caller then
 * locks the latest version and decides on that (lock_entity), so that the
 * outcome and the errors are those of the locking path.  No check of
 * tablestore's own raises an error here on the version read before the
 * update found it the latest (see update_row), so a write that races a
 * replace is never refused for what the replaced version held.  This saves a
 * lock's WAL record and buffer change per write.
 */
static bool
change_unlocked(DirectWrite *w, TsOpKind kind, TsEntity *e, bool conditional, int64 ticks,
				TsOpResult *result)
{
	ItemPointerData tid;
	bool		isnull;

	if (!probe(w, w->estate->es_snapshot, e->partition_key, e->row_key, &tid))
		return false;
	if (conditional &&
		ts_timestamptz_to_ticks(DatumGetTimestampTz(slot_getattr(w->oldslot, TS_ATT_TS, &isnull))) != ticks)
		return false;
	if (kind == TS_OP_DELETE)
	{
		if (!delete_row(w, &tid, e->partition_key, e->row_key, false))
			return false;
		result->props = NULL;
		return true;
	}
	return update_row(w, kind, e, &tid, result, false);
}

/* The If-Match condition against the locked version's Timestamp. */
static void
check_etag(DirectWrite *w, bool conditional, int64 ticks, text *pk, text *rk)
{
	bool		isnull;

	ts_check_if_match(DatumGetTimestampTz(slot_getattr(w->oldslot, TS_ATT_TS, &isnull)),
					  conditional, ticks, pk, rk);
}

/* What upsert_insert did. */
typedef enum NewRow
{
	NEW_INSERTED,				/* the new row is in */
	NEW_EXISTS,					/* a live version of the key exists, in w->oldslot */
	NEW_RETRY					/* waited for another writer of the key, or lost
								 * the race to one: look again */
} NewRow;

/*
 * Insert the entity row into the heap and every index of the relation, as
 * INSERT does: the key index waits for a concurrent inserter of the key and
 * raises EntityAlreadyExists if that one commits.
 */
static void
insert_row(DirectWrite *w, text *pk, text *rk, TimestampTz ts, Jsonb *props)
{
	store_row(w, pk, rk, ts, props, false);
	table_tuple_insert(w->heap, w->newslot, w->cid, 0, NULL);
	(void) ExecInsertIndexTuples(w->rri, w->newslot, w->estate, false, false, NULL, NIL);
}

/*
 * An upsert: insert e as a new entity if no version of its key exists, as
 * INSERT ... ON CONFLICT does (see the file comment).  The row is checked
 * only once the key is found free: otherwise the row written is a merge.
 */
static NewRow
upsert_insert(DirectWrite *w, TsEntity *e, TsOpResult *result)
{
	text	   *pk = e->partition_key;
	text	   *rk = e->row_key;
	SnapshotData dirty;
	ItemPointerData tid;
	TransactionId xid;
	uint32		token;
	bool		conflict = false;

	InitDirtySnapshot(dirty);
	if (probe(w, &dirty, pk, rk, &tid))
	{
		if (TransactionIdIsValid(dirty.xmin) && dirty.speculativeToken != 0)
		{
			/* being inserted speculatively: wait for that insertion only */
			SpeculativeInsertionWait(dirty.xmin, dirty.speculativeToken);
			return NEW_RETRY;
		}
		if (TransactionIdIsValid(dirty.xmin) || TransactionIdIsValid(dirty.xmax))
		{
			/* being inserted or deleted: wait, holding nothing of ours */
			XactLockTableWait(TransactionIdIsValid(dirty.xmin) ? dirty.xmin : dirty.xmax,
							  w->heap, &tid, XLTW_InsertIndex);
			return NEW_RETRY;
		}
		return NEW_EXISTS;
	}

	/*
	 * Under REPEATABLE READ or SERIALIZABLE, an upsert of a key the
	 * transaction's snapshot still sees, deleted since by a transaction that
	 * committed, would silently insert where the SPI path's UPDATE fails to
	 * serialize: fail as it does.
	 */
	if (IsolationUsesXactSnapshot() && probe(w, w->estate->es_snapshot, pk, rk, &tid))
		serialization_failure(TM_Deleted, pk, rk);

	result->ts = GetCurrentTimestamp();
	result->props = e->props;
	store_row(w, pk, rk, result->ts, e->props, false);
	xid = GetCurrentTransactionId();
	token = SpeculativeInsertionLockAcquire(xid);
	table_tuple_insert_speculative(w->heap, w->newslot, w->cid, 0, NULL, token);
	(void) ExecInsertIndexTuples(w->rri, w->newslot, w->estate, false, true, &conflict,
								 list_make1_oid(RelationGetRelid(w->index)));
	table_tuple_complete_speculative(w->heap, w->newslot, token, !conflict);
	SpeculativeInsertionLockRelease(xid);
	return conflict ? NEW_RETRY : NEW_INSERTED;
}

/*
 * The command the SPI path runs first for a write of kind (and the plain
 * SQL of it): what a read-only transaction refuses to execute.
 */
static const char *
command_name(TsOpKind kind)
{
	switch (kind)
	{
		case TS_OP_INSERT:
			return "INSERT";
		case TS_OP_DELETE:
			return "DELETE";
		default:
			return "UPDATE";
	}
}

/*
 * Carry out a write (see ts_direct_apply), the key index's violation as it
 * is.
 */
static void
direct_apply(DirectWrite *w, TsOpKind kind, TsEntity *e, bool conditional, int64 ticks,
			 TsOpResult *result)
{
	text	   *pk = e->partition_key;
	text	   *rk = e->row_key;
	ItemPointerData tid;
	bool		retry;

	result->props = e->props;
	result->ts = 0;

	/*
	 * ExecInitModifyTable's check of the replica identity, before any row is
	 * looked at: for the UPDATE or DELETE the SPI path runs (first, for an
	 * upsert, whether or not the key exists)
	 */
	if (kind != TS_OP_INSERT)
		CheckCmdReplicaIdentity(w->heap, kind == TS_OP_DELETE ? CMD_DELETE : CMD_UPDATE);
	for (int round = 0;; round++)
	{
		retry = false;
		CHECK_FOR_INTERRUPTS();
		statement_begin(w);
		switch (kind)
		{
			case TS_OP_INSERT:
				result->ts = GetCurrentTimestamp();
				insert_row(w, pk, rk, result->ts, e->props);
				break;

			case TS_OP_UPDATE:
			case TS_OP_MERGE:
				if (round == 0 && change_unlocked(w, kind, e, conditional, ticks, result))
					break;
				if (!lock_entity(w, pk, rk, LockTupleNoKeyExclusive, &tid, &retry))
				{
					if (retry)
						break;
					ts_entity_not_found(pk, rk);
				}
				check_etag(w, conditional, ticks, pk, rk);
				(void) update_row(w, kind, e, &tid, result, true);
				break;

			case TS_OP_INSERT_OR_REPLACE:
			case TS_OP_INSERT_OR_MERGE:
				switch (upsert_insert(w, e, result))
				{
					case NEW_INSERTED:
						break;
					case NEW_RETRY:
						retry = true;
						break;
					case NEW_EXISTS:

						/*
						 * Under REPEATABLE READ or SERIALIZABLE it must be a
						 * version the transaction's snapshot sees, or the
						 * update cannot be right.
						 */
						if (IsolationUsesXactSnapshot() &&
							!table_tuple_satisfies_snapshot(w->heap, w->oldslot, GetTransactionSnapshot()))
							ereport(ERROR,
									(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
									 errmsg("could not serialize access due to a concurrent insert of entity (\"%s\", \"%s\")",
											ts_clip_text(pk), ts_clip_text(rk)),
									 errhint("Retry the transaction.")));
						if (!lock_entity(w, pk, rk, LockTupleNoKeyExclusive, &tid, &retry))
						{
							retry = true;	/* deleted meanwhile: look again */
							break;
						}
						(void) update_row(w, kind, e, &tid, result, true);
						break;
				}
				break;

			case TS_OP_DELETE:
				if (round == 0 && change_unlocked(w, kind, e, conditional, ticks, result))
					break;
				if (!lock_entity(w, pk, rk, LockTupleExclusive, &tid, &retry))
				{
					if (retry)
						break;
					ts_entity_not_found(pk, rk);
				}
				check_etag(w, conditional, ticks, pk, rk);
				(void) delete_row(w, &tid, pk, rk, true);
				result->props = NULL;
				break;

			case TS_OP_RETRIEVE:
				elog(ERROR, "a retrieve is not a direct write");
		}
		statement_end();
		if (!retry)
			break;
		if (round == TS_WRITE_MAX_ROUNDS)
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("could not write entity (\"%s\", \"%s\") because of concurrent writes of its key",
							ts_clip_text(pk), ts_clip_text(rk)),
					 errhint("Retry the operation.")));
	}
	/* what the write's checks and index insertions left, as per row */
	ResetPerTupleExprContext(w->estate);
}

/*
 * ts_direct_begin: set up the direct writes of a batch to the entity
 * relation of rel, which the caller has locked; each is then made by
 * ts_direct_apply with the state returned, and ts_direct_end releases it.
 * The relation stays open throughout, so that its shape cannot change
 * meanwhile (ALTER TABLE and CREATE INDEX refuse a relation in use).  An
 * error abandons the state to the (sub)transaction's abort.
 */
TsDirectWrite *
ts_direct_begin(TsEntityRel *rel)
{
	DirectWrite *w = palloc(sizeof(DirectWrite));

	direct_begin(w, rel);
	return w;
}

/* ts_direct_end: release what ts_direct_begin set up. */
void
ts_direct_end(TsDirectWrite *w)
{
	direct_end(w);
	pfree(w);
}

/*
 * ts_direct_apply: carry out a write (not a retrieve) on the entity
 * relation of rel, which the caller has locked and ts_direct_usable
 * accepted, as the SPI path does (ts_spi_apply): same results, same errors.
 * An insert's unique violation of the key index is EntityAlreadyExists.
 * batch is the state of ts_direct_begin, or NULL for a write on its own.
 */
void
ts_direct_apply(TsEntityRel *rel, TsDirectWrite *batch, TsOpKind kind, TsEntity *e,
				bool conditional, int64 ticks, TsOpResult *result)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	DirectWrite own;
	DirectWrite *volatile w = batch;
	char	   *keyname;

	/* standard_ExecutorStart's checks of the statement the SPI path runs */
	if (XactReadOnly)
		PreventCommandIfReadOnly(command_name(kind));
	PreventCommandIfParallelMode(command_name(kind));

	if (w == NULL)
	{
		w = &own;
		direct_begin(w, rel);
	}
	if (kind != TS_OP_INSERT)
		direct_apply(w, kind, e, conditional, ticks, result);
	else
	{
		keyname = ts_rel_key_index_name(rel);
		PG_TRY();
		{
			direct_apply(w, kind, e, conditional, ticks, result);
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(oldcontext);
			ts_rel_raise_if_key_violation(rel, keyname, e->partition_key, e->row_key);
			PG_RE_THROW();
		}
		PG_END_TRY();
	}
	if (batch == NULL)
		direct_end(w);
}
