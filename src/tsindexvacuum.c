/*-------------------------------------------------------------------------
 *
 * tsindexvacuum.c
 *	  tskey index: VACUUM's bulk delete, page deletion and cleanup.
 *
 * The leaf level is walked left to right by right links; a concurrent split
 * moves entries only to the right, to pages the walk has yet to reach.
 * Every leaf is taken with a cleanup lock, so no scan that keeps its pin
 * is between reading its TIDs and fetching them from the heap, and the
 * heap may then reuse the TIDs removed.  A page that loses entries is
 * rewritten compactly, one generic WAL record per page.
 *
 * Leaves left empty are then deleted: unlinked from their parent and
 * siblings in one record, their key range given to a sibling under the
 * same parent, and marked with a safexid.  amvacuumcleanup records the
 * deleted pages no running transaction can still reach in the free space
 * map, from where splits reuse them.  See doc/index-am.md.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "storage/indexfsm.h"
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
			  IndexBulkDeleteCallback callback, void *callback_state,
			  BlockNumber **empty, int *nempty)
{
	int			maxempty = 64;
	Relation	index = info->index;
	BlockNumber blkno = leftmost_leaf(index);
	TskEntry   *entries = palloc(TSK_MAX_ENTRIES_PER_PAGE * sizeof(TskEntry));
	TskEntry   *kept = palloc(TSK_MAX_ENTRIES_PER_PAGE * sizeof(TskEntry));
	TskWalk		walk = TSK_WALK_INIT;

	*nempty = 0;
	*empty = palloc(maxempty * sizeof(BlockNumber));
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
		if (nkept == 0 && blkno != TSK_ROOT_BLKNO)
		{
			if (*nempty == maxempty)
			{
				maxempty *= 2;
				*empty = repalloc_huge(*empty, maxempty * sizeof(BlockNumber));
			}
			(*empty)[(*nempty)++] = blkno;
		}
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

/* Which sibling takes the key range of a leaf being deleted. */
typedef enum MergeSide
{
	MERGE_RIGHT,				/* the right sibling, under the same parent */
	MERGE_LEFT					/* the left sibling, under the same parent */
} MergeSide;

/* lock_leaf: an exclusively locked live leaf, or InvalidBuffer. */
static Buffer
lock_leaf(Relation index, BlockNumber blkno)
{
	Buffer		buf = ReadBuffer(index, blkno);
	TskPageOpaque op;

	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	tsk_check_page(index, buf);
	op = TskPageGetOpaque(BufferGetPage(buf));
	if (op->level != 0 || TskPageIsDeleted(op))
	{
		UnlockReleaseBuffer(buf);
		return InvalidBuffer;
	}
	return buf;
}

/*
 * delete_leaf: delete the leaf blkno if it is still empty, and return
 * whether it was.  Its parent is locked first, then the leaves left to
 * right (the order of every lock in the tree): left sibling, the leaf,
 * right sibling.  The leaf's key range goes to its right sibling if that
 * is a child of the same parent (the leaf's downlink then leads to it and
 * the sibling's downlink goes), else to its left sibling under the same
 * parent (the leaf's downlink goes, and the left sibling takes the leaf's
 * high key).  A leaf that is its parent's only child stays (deleting the
 * parent as well is not done).  One generic WAL record of at most four
 * pages: parent, left sibling, leaf, right sibling; the leaf becomes a
 * deleted page keeping its links, for scans that land on it, and its
 * safexid.
 */
static bool
delete_leaf(Relation index, BlockNumber blkno)
{
	Buffer		buf,
				pbuf,
				lbuf = InvalidBuffer,
				rbuf = InvalidBuffer;
	Page		page;
	TskPageOpaque op;
	TskSearchKey sk;
	BlockNumber lblk,
				rblk,
				sibling;
	OffsetNumber off,
				first,
				maxoff;
	TskPivot	pivot;
	MergeSide	side;
	GenericXLogState *state;
	PGAlignedBlock scratch;
	bool		ok = false;

	/* where the leaf is: a search key just below its high key */
	buf = ReadBuffer(index, blkno);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	tsk_check_page(index, buf);
	page = BufferGetPage(buf);
	op = TskPageGetOpaque(page);
	if (op->level != 0 || TskPageIsDeleted(op) || PageGetMaxOffsetNumber(page) >= TskFirstData(op))
	{
		UnlockReleaseBuffer(buf);
		return false;
	}
	memset(&sk, 0, sizeof(sk));
	if (TskPageIsRightmost(op))
	{
		sk.nkeys = 0;
		sk.side = 1;
	}
	else
	{
		BlockNumber tblk;
		OffsetNumber toff;

		/*
		 * Just below the high key: the high key with the TID before its
		 * own (or, for the first TID, before every TID of its keys).
		 */
		tsk_pivot_read(page, TSK_HIKEY, &pivot);
		sk.key = tsk_copy_entry(&pivot.key);
		tblk = ItemPointerGetBlockNumberNoCheck(&sk.key.tid);
		toff = ItemPointerGetOffsetNumberNoCheck(&sk.key.tid);
		if (toff > 1)
			ItemPointerSet(&sk.key.tid, tblk, toff - 1);
		else if (tblk > 0)
			ItemPointerSet(&sk.key.tid, tblk - 1, MaxOffsetNumber);
		sk.nkeys = (toff > 1 || tblk > 0) ? 3 : 2;
		sk.side = -1;
	}
	lblk = op->prev;
	UnlockReleaseBuffer(buf);

	pbuf = tsk_descend_level(index, &sk, 1, true);
	if (!BufferIsValid(pbuf))
		return false;
	page = BufferGetPage(pbuf);
	first = TskFirstData(TskPageGetOpaque(page));
	maxoff = PageGetMaxOffsetNumber(page);
	for (off = first; off <= maxoff; off++)
	{
		tsk_pivot_read(page, off, &pivot);
		if (pivot.child == blkno)
			break;
	}
	if (off > maxoff)
		goto done;
	if (off < maxoff)
	{
		side = MERGE_RIGHT;
		tsk_pivot_read(page, off + 1, &pivot);
	}
	else if (off > first)
	{
		side = MERGE_LEFT;
		tsk_pivot_read(page, off - 1, &pivot);
	}
	else
		goto done;
	sibling = pivot.child;
	if (side == MERGE_LEFT && lblk != sibling)
		goto done;

	/* the leaves, left to right, each checked again under its lock */
	if (lblk != InvalidBlockNumber)
	{
		lbuf = lock_leaf(index, lblk);
		if (!BufferIsValid(lbuf) || TskPageGetOpaque(BufferGetPage(lbuf))->next != blkno)
			goto done;
	}
	buf = lock_leaf(index, blkno);
	if (!BufferIsValid(buf))
		goto done;
	page = BufferGetPage(buf);
	op = TskPageGetOpaque(page);
	if (op->prev != lblk || PageGetMaxOffsetNumber(page) >= TskFirstData(op))
		goto unlock;
	rblk = op->next;
	if (side == MERGE_RIGHT && rblk != sibling)
		goto unlock;
	if (rblk != InvalidBlockNumber)
	{
		rbuf = lock_leaf(index, rblk);
		if (!BufferIsValid(rbuf) || TskPageGetOpaque(BufferGetPage(rbuf))->prev != blkno)
			goto unlock;
	}

	/*
	 * Merging left, the left sibling takes the leaf's high key (or becomes
	 * the rightmost): rewritten in a scratch page first, as the longer key
	 * may not fit.
	 */
	if (side == MERGE_LEFT)
	{
		Page		lpage = BufferGetPage(lbuf);
		TskEntry   *entries = palloc(TSK_MAX_ENTRIES_PER_PAGE * sizeof(TskEntry));
		int			n = tsk_leaf_entries(lpage, entries);
		TskPivot	hikey;

		if (!TskPageIsRightmost(op))
			tsk_pivot_read(page, TSK_HIKEY, &hikey);
		memcpy(scratch.data, lpage, BLCKSZ);
		TskPageGetOpaque((Page) scratch.data)->next = rblk;
		if (!tsk_leaf_encode((Page) scratch.data, TskPageIsRightmost(op) ? NULL : &hikey.key, entries, n))
		{
			pfree(entries);
			goto unlock;
		}
		pfree(entries);
	}

	state = GenericXLogStart(index);
	{
		Page		ppage = GenericXLogRegisterBuffer(state, pbuf, 0);
		Page		dpage = GenericXLogRegisterBuffer(state, buf, 0);

		if (side == MERGE_RIGHT)
		{
			Size		len;
			char	   *item = (char *) tsk_item(ppage, off, &len);

			/* the leaf's downlink leads to the right sibling, whose own goes */
			memcpy(item, &rblk, sizeof(BlockNumber));
			PageIndexTupleDelete(ppage, off + 1);
		}
		else
			PageIndexTupleDelete(ppage, off);
		if (BufferIsValid(lbuf))
		{
			Page		lpage = GenericXLogRegisterBuffer(state, lbuf, 0);

			if (side == MERGE_LEFT)
				memcpy(lpage, scratch.data, BLCKSZ);
			else
				TskPageGetOpaque(lpage)->next = rblk;
		}
		if (BufferIsValid(rbuf))
			TskPageGetOpaque(GenericXLogRegisterBuffer(state, rbuf, 0))->prev = lblk;
		tsk_init_deleted(dpage, lblk, rblk);
	}
	GenericXLogFinish(state);
	ok = true;

unlock:
	if (BufferIsValid(rbuf))
		UnlockReleaseBuffer(rbuf);
	if (BufferIsValid(buf))
		UnlockReleaseBuffer(buf);
done:
	if (BufferIsValid(lbuf))
		UnlockReleaseBuffer(lbuf);
	UnlockReleaseBuffer(pbuf);
	return ok;
}

/*
 * vacuum_pass: the leaf walk, then the deletion of the leaves it left
 * empty (concurrent inserts may have filled some again: each is checked
 * under its lock).
 */
static void
vacuum_pass(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
			IndexBulkDeleteCallback callback, void *callback_state)
{
	BlockNumber *empty;
	int			nempty;

	vacuum_leaves(info, stats, callback, callback_state, &empty, &nempty);
	for (int i = 0; i < nempty; i++)
	{
		vacuum_delay_point();
		if (delete_leaf(info->index, empty[i]))
			stats->pages_newly_deleted++;
	}
	pfree(empty);
}

/*
 * record_free_pages: read every page, and record in the free space map
 * the deleted ones no running transaction can reach any more (and any
 * page never initialised, as a crash after an extension leaves).
 */
static void
record_free_pages(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	Relation	index = info->index;
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);

	stats->pages_deleted = 0;
	stats->pages_free = 0;
	for (BlockNumber blkno = TSK_ROOT_BLKNO + 1; blkno < nblocks; blkno++)
	{
		Buffer		buf;
		Page		page;

		vacuum_delay_point();
		buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_NORMAL, info->strategy);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (PageIsNew(page) ||
			(PageGetSpecialSize(page) == MAXALIGN(sizeof(TskPageOpaqueData)) &&
			 TskPageGetOpaque(page)->page_id == TSK_PAGE_ID &&
			 TskPageIsDeleted(TskPageGetOpaque(page))))
		{
			stats->pages_deleted++;
			if (tsk_page_recyclable(page))
			{
				RecordFreeIndexPage(index, blkno);
				stats->pages_free++;
			}
		}
		UnlockReleaseBuffer(buf);
	}
	IndexFreeSpaceMapVacuum(index);
}

/* tskbulkdelete: ambulkdelete. */
IndexBulkDeleteResult *
tskbulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
			  IndexBulkDeleteCallback callback, void *callback_state)
{
	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));
	stats->num_index_tuples = 0;
	vacuum_pass(info, stats, callback, callback_state);
	stats->num_pages = RelationGetNumberOfBlocks(info->index);
	return stats;
}

/*
 * tskvacuumcleanup: amvacuumcleanup.  Counts the entries (and deletes
 * empty leaves) if no bulk delete ran, then records the reusable pages in
 * the free space map; nothing to do for ANALYZE.
 */
IndexBulkDeleteResult *
tskvacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	if (info->analyze_only)
		return stats;
	if (stats == NULL)
	{
		stats = palloc0(sizeof(IndexBulkDeleteResult));
		vacuum_pass(info, stats, NULL, NULL);
	}
	record_free_pages(info, stats);
	stats->num_pages = RelationGetNumberOfBlocks(info->index);
	stats->estimated_count = false;
	return stats;
}
