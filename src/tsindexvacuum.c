/*-------------------------------------------------------------------------
 *
 * tsindexvacuum.c
 *	  tskey index: VACUUM's bulk delete and cleanup.
 *
 * The leaf level is walked left to right by right links; a concurrent split
 * moves entries only to the right, to pages the walk has yet to reach.
 * Every leaf is taken with a cleanup lock, so no scan holds a pin on it
 * between reading its TIDs and fetching them from the heap, and the heap
 * may then reuse the TIDs removed.  A page that loses entries is rewritten
 * compactly, one generic WAL record per page.  Pages are never deleted: an
 * empty leaf stays in the chain and takes later inserts in its key range.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "utils/rel.h"

#include "tablestore.h"
#include "tsindex.h"

/*
 * leftmost_leaf: the block of the leftmost leaf, descending by first
 * pivots.
 */
static BlockNumber
leftmost_leaf(Relation index)
{
	TskSearchKey sk;
	Buffer		buf;
	BlockNumber blkno;

	memset(&sk, 0, sizeof(sk));
	sk.nkeys = 0;
	sk.side = -1;
	buf = tsk_descend(index, &sk, false);
	blkno = BufferGetBlockNumber(buf);
	UnlockReleaseBuffer(buf);
	return blkno;
}

/*
 * vacuum_leaves: walk the leaves, removing the entries callback names (if
 * any), counting the rest.
 */
static void
vacuum_leaves(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
			  IndexBulkDeleteCallback callback, void *callback_state)
{
	Relation	index = info->index;
	BlockNumber blkno = leftmost_leaf(index);
	TskEntry   *entries = palloc(TSK_MAX_ENTRIES_PER_PAGE * sizeof(TskEntry));
	TskEntry   *kept = palloc(TSK_MAX_ENTRIES_PER_PAGE * sizeof(TskEntry));
	TskWalk		walk = TSK_WALK_INIT;

	while (blkno != InvalidBlockNumber)
	{
		Buffer		buf;
		Page		page;
		TskPageOpaque op;
		int			n,
					nkept = 0,
					i;

		vacuum_delay_point();
		tsk_walk_step(index, &walk);
		buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_NORMAL, info->strategy);
		if (callback)
			LockBufferForCleanup(buf);
		else
			LockBuffer(buf, BUFFER_LOCK_SHARE);
		tsk_check_page(index, buf);
		page = BufferGetPage(buf);
		op = TskPageGetOpaque(page);
		if (op->level != 0)
		{
			/* the root was a leaf and has split since: start again */
			UnlockReleaseBuffer(buf);
			stats->num_index_tuples = 0;
			blkno = leftmost_leaf(index);
			continue;
		}
		n = tsk_leaf_entries(page, entries);
		for (i = 0; i < n; i++)
		{
			if (callback && callback(&entries[i].tid, callback_state))
				stats->tuples_removed++;
			else
				kept[nkept++] = entries[i];
		}
		stats->num_index_tuples += nkept;
		if (nkept < n)
		{
			GenericXLogState *state = GenericXLogStart(index);
			Page		copy = GenericXLogRegisterBuffer(state, buf, 0);
			PGAlignedBlock scratch;
			TskPivot	hikey;

			if (!TskPageIsRightmost(op))
				tsk_pivot_read(page, TSK_HIKEY, &hikey);
			memcpy(scratch.data, page, BLCKSZ);
			if (!tsk_leaf_encode((Page) scratch.data, TskPageIsRightmost(op) ? NULL : &hikey.key, kept, nkept))
				elog(ERROR, "tskey vacuum: page no longer fits");
			memcpy(copy, scratch.data, BLCKSZ);
			GenericXLogFinish(state);
		}
		blkno = op->next;
		UnlockReleaseBuffer(buf);
	}
	pfree(entries);
	pfree(kept);
}

/* tskbulkdelete: ambulkdelete. */
IndexBulkDeleteResult *
tskbulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
			  IndexBulkDeleteCallback callback, void *callback_state)
{
	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));
	stats->num_index_tuples = 0;
	vacuum_leaves(info, stats, callback, callback_state);
	stats->num_pages = RelationGetNumberOfBlocks(info->index);
	return stats;
}

/*
 * tskvacuumcleanup: amvacuumcleanup.  Counts the entries if no bulk delete
 * ran (VACUUM with nothing to remove); nothing to do for ANALYZE.
 */
IndexBulkDeleteResult *
tskvacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	if (info->analyze_only)
		return stats;
	if (stats == NULL)
	{
		stats = palloc0(sizeof(IndexBulkDeleteResult));
		vacuum_leaves(info, stats, NULL, NULL);
	}
	stats->num_pages = RelationGetNumberOfBlocks(info->index);
	stats->estimated_count = false;
	return stats;
}
