/*-------------------------------------------------------------------------
 *
 * locks.c
 *	  The scale-out router: the locks of routed calls (a share lock on the
 *	  partition while a call runs), the mover's locks, and the router-wide
 *	  lock on a table name.
 *
 * The router's design is in router.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "nodes/makefuncs.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/formatting.h"
#include "utils/inval.h"

#include "tablestore.h"
#include "errors.h"
#include "router/router.h"

/* the tag of a partition's lock (-1: all partitions) */
static void
partition_tag(LOCKTAG *tag, int part)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, ROUTER_LOCK_KEY, (uint32) part, ROUTER_LOCK_CLASS);
}

/*
 * router_call_lock: the lock a call on one partition (part >= 0) or on every
 * node (part < 0) holds while it runs: a share lock, so that a mover's
 * exclusive lock waits for the call and the call waits for a move; then
 * the configuration the mover may have changed while we waited is read.
 * Released by router_call_unlock when the call returns (by the abort of the
 * (sub)transaction if it fails): no role holds it longer than its call.
 */
void
router_call_lock(int part)
{
	LOCKTAG		tag;

	(void) router_cluster_shape(NULL);	/* "not configured", if it is not */
	router_mapping_check();
	partition_tag(&tag, part < 0 ? -1 : part);
	(void) LockAcquire(&tag, ShareLock, false, false);
	AcceptInvalidationMessages();
	router_mapping_check();
}

/* router_call_unlock: release the lock router_call_lock took */
void
router_call_unlock(int part)
{
	LOCKTAG		tag;

	partition_tag(&tag, part < 0 ? -1 : part);
	(void) LockRelease(&tag, ShareLock, false);
}

/*
 * tablestore_router.lock_partition_for_move(partition integer) RETURNS void:
 * a mover's locks (session level): the partition's, then that of all
 * partitions, exclusively.  Calls on the partition wait from the first on,
 * calls on every node from the second; the move begins with both.  Waits
 * at most lock_timeout for each (a call in flight must end first; the calls
 * that queue behind the mover wait no longer than that), and holds neither
 * if it fails.  Superuser only (EXECUTE revoked from PUBLIC).
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_lock_partition_for_move);
Datum
router_lock_partition_for_move(PG_FUNCTION_ARGS)
{
	int			part = PG_GETARG_INT32(0);
	LOCKTAG		one;
	LOCKTAG		all;

	if (part < 0 || part >= router_cluster_shape(NULL))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the cluster has no partition %d", part)));
	partition_tag(&one, part);
	partition_tag(&all, -1);
	(void) LockAcquire(&one, ExclusiveLock, true, false);
	PG_TRY();
	{
		(void) LockAcquire(&all, ExclusiveLock, true, false);
	}
	PG_CATCH();
	{
		(void) LockRelease(&one, ExclusiveLock, true);
		PG_RE_THROW();
	}
	PG_END_TRY();
	PG_RETURN_VOID();
}

/*
 * tablestore_router.unlock_partition_for_move(partition integer) RETURNS
 * boolean: a mover's locks released; false if it did not hold them.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_unlock_partition_for_move);
Datum
router_unlock_partition_for_move(PG_FUNCTION_ARGS)
{
	int			part = PG_GETARG_INT32(0);
	LOCKTAG		one;
	LOCKTAG		all;
	bool		held;

	partition_tag(&one, part);
	partition_tag(&all, -1);
	held = LockHeldByMe(&all, ExclusiveLock) && LockHeldByMe(&one, ExclusiveLock);
	if (held)
	{
		(void) LockRelease(&all, ExclusiveLock, true);
		(void) LockRelease(&one, ExclusiveLock, true);
	}
	PG_RETURN_BOOL(held);
}

/*
 * tablestore_router._move_session_lock(take boolean) RETURNS boolean: the
 * mover's own lock (session level, the router's lock class, key "tsrp"+2),
 * held by move_partition for its whole run so that no two runs of a move
 * are alive at once (issue 23, attack F2).  take: acquire it without
 * waiting; false if another session holds it (true if this one does
 * already: a run of this session that failed left it).  Not take: release
 * it; false if this session did not hold it.  Superuser only (EXECUTE
 * revoked from PUBLIC).
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_move_session_lock);
Datum
router_move_session_lock(PG_FUNCTION_ARGS)
{
	bool		take = PG_GETARG_BOOL(0);
	LOCKTAG		tag;
	bool		held;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, ROUTER_LOCK_KEY + 2, 0, ROUTER_LOCK_CLASS);
	held = LockHeldByMe(&tag, ExclusiveLock);
	if (take)
	{
		if (held)
			PG_RETURN_BOOL(true);
		PG_RETURN_BOOL(LockAcquire(&tag, ExclusiveLock, true, true) != LOCKACQUIRE_NOT_AVAIL);
	}
	if (held)
		(void) LockRelease(&tag, ExclusiveLock, true);
	PG_RETURN_BOOL(held);
}

/*
 * Tables.  create_table and delete_table take a router-wide lock on the
 * name, so that calls through this router on one name run one at a time,
 * then run the idempotent function on every node; if no node did anything,
 * the call is repeated on one node for the error one node gives.
 */
bool
router_table_name_tag(text *name, LOCKTAG *tag)
{
	char	   *lower;

	if (name == NULL)
		return false;
	lower = asc_tolower(VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name));
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, ROUTER_LOCK_KEY + 1,
						 ts_partition_hash(lower, strlen(lower)), ROUTER_LOCK_CLASS);
	return true;
}

/*
 * Refuse create_table and delete_table while a partition move is unfinished
 * (tablestore_router.move_partition, issue 23): a move replicates the tables
 * it listed when it began, so a table created or deleted under it would be
 * stranded on one node or resurrected.  Called under the lock of "all
 * partitions", which a move takes (and releases) after recording itself and
 * before listing the tables: a call that passed this check has finished
 * before the move lists them.
 */
void
router_refuse_during_move(void)
{
	int			ret;

	/* a router database not yet updated to 0.6.0 has no moves */
	if (!OidIsValid(RangeVarGetRelid(makeRangeVar("tablestore_router", "_moves", -1), NoLock, true)))
		return;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	ret = SPI_execute("SELECT partition::text, target FROM tablestore_router._moves "
					  "WHERE finished_at IS NULL ORDER BY id LIMIT 1", true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute failed: %d", ret);
	if (SPI_processed > 0)
	{
		char	   *part = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		ts_ereport(ERROR, TS_ServerBusy,
				   errmsg("tables cannot be created or deleted while partition %s of the cluster is being moved", part),
				   errhint("Retry when the move is done (tablestore_router.moves); an interrupted move completes when tablestore_router.move_partition is called again."));
	}
	SPI_finish();
}

