/*-------------------------------------------------------------------------
 *
 * vacuum.c
 *	  tskey index: VACUUM's bulk delete, page deletion and cleanup.
 *
 * The leaf level is walked left to right by right links; a concurrent split
 * moves entries only to the right, to pages the walk has yet to reach.
 * Every leaf is taken with a cleanup lock, so no scan that keeps its pin
 * is between reading its TIDs and fetching them from the heap, and the
 * heap may then reuse the TIDs removed.  A page that loses entries is
 * rewritten compactly, one WAL record per page (with the resource manager,
 * the positions of the entries removed).
 *
 * Leaves left empty are then deleted: unlinked from their parent and
 * siblings in one record, their key range given to a sibling under the
 * same parent, and marked with a safexid; a parent whose only child such a
 * leaf is gets dissolved into a sibling first.  amvacuumcleanup records the
 * deleted pages no running transaction can still reach in the free space
 * map, from where splits reuse them.  See src/tskey/README.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "storage/bufpage.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "utils/rel.h"

#include "tskey_int.h"

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
	uint16	   *removed = palloc(TSK_MAX_ENTRIES_PER_PAGE * sizeof(uint16));
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
			{
				stats->tuples_removed++;
				removed[i - nkept] = i;
			}
			else
				nkept++;
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
			TskXLogState *state = tsk_xlog_start(index);
			Page		copy = tsk_xlog_register(state, 0, buf, 0);
			xl_tsk_vacuum xlrec;

			tsk_vacuum_page(copy, removed, n - nkept);
			xlrec.nremoved = n - nkept;
			tsk_xlog_main_data(state, &xlrec, sizeof(xlrec));
			tsk_xlog_block_data(state, 0, removed, (n - nkept) * sizeof(uint16));
			tsk_xlog_finish(state, XLOG_TSK_VACUUM);
		}
		blkno = op->next;
		UnlockReleaseBuffer(buf);
	}
	pfree(entries);
	pfree(removed);
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
	Buffer		buf = tsk_getbuf(index, blkno, BUFFER_LOCK_EXCLUSIVE);
	TskPageOpaque op;

	op = TskPageGetOpaque(BufferGetPage(buf));
	if (op->level != 0 || TskPageIsDeleted(op))
	{
		UnlockReleaseBuffer(buf);
		return InvalidBuffer;
	}
	return buf;
}

/*
 * key_below_hikey: a search key inside the key range of a page: just below
 * its high key (the high key with the TID before its own, or before every
 * TID of its keys for the first TID), or +infinity for the rightmost page.
 * Any key of the range leads a descent to the page's parent.
 */
static void
key_below_hikey(Page page, TskSearchKey *sk)
{
	TskPivot	pivot;
	BlockNumber tblk;
	OffsetNumber toff;

	memset(sk, 0, sizeof(*sk));
	if (TskPageIsRightmost(TskPageGetOpaque(page)))
	{
		sk->nkeys = 0;
		sk->side = 1;
		return;
	}
	tsk_pivot_read(page, TSK_HIKEY, &pivot);
	sk->key = tsk_copy_entry(&pivot.key);
	tblk = ItemPointerGetBlockNumberNoCheck(&sk->key.tid);
	toff = ItemPointerGetOffsetNumberNoCheck(&sk->key.tid);
	if (toff > 1)
		ItemPointerSet(&sk->key.tid, tblk, toff - 1);
	else if (tblk > 0)
		ItemPointerSet(&sk->key.tid, tblk - 1, MaxOffsetNumber);
	sk->nkeys = (toff > 1 || tblk > 0) ? 3 : 2;
	sk->side = -1;
}

/*
 * delete_leaf: delete the leaf blkno if it is still empty, and return
 * whether it was.  Its parent is locked first, then the leaves left to
 * right (the order of every lock in the tree): left sibling, the leaf,
 * right sibling.  The leaf's key range goes to its right sibling if that
 * is a child of the same parent (the leaf's downlink then leads to it and
 * the sibling's downlink goes), else to its left sibling under the same
 * parent (the leaf's downlink goes, and the left sibling takes the leaf's
 * high key).  A leaf that is its parent's only child is not deleted: its
 * parent's block is returned in *lone_parent, to be dissolved first.  One
 * WAL record of at most four
 * pages: parent, left sibling, leaf, right sibling; the leaf becomes a
 * deleted page keeping its links, for scans that land on it, and its
 * safexid.
 */
static bool
delete_leaf(Relation index, BlockNumber blkno, BlockNumber *lone_parent)
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
	TskXLogState *state;
	xl_tsk_delete xlrec;
	PGAlignedBlock scratch;
	bool		ok = false;

	/* where the leaf is: a search key just below its high key */
	buf = tsk_getbuf(index, blkno, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	op = TskPageGetOpaque(page);
	if (op->level != 0 || TskPageIsDeleted(op) || PageGetMaxOffsetNumber(page) >= TskFirstData(op))
	{
		UnlockReleaseBuffer(buf);
		return false;
	}
	key_below_hikey(page, &sk);
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
	{
		/* the parent's only child: the parent must go first (dissolve) */
		*lone_parent = BufferGetBlockNumber(pbuf);
		goto done;
	}
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

	/* blocks in lock order: parent, left sibling, leaf, right sibling */
	state = tsk_xlog_start(index);
	{
		Page		ppage = tsk_xlog_register(state, 0, pbuf, 0);
		Page		lpage = BufferIsValid(lbuf) ?
			tsk_xlog_register(state, 1, lbuf, side == MERGE_LEFT ? TSK_XLOG_IMAGE : 0) : NULL;
		Page		dpage = tsk_xlog_register(state, 2, buf, 0);

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
		if (lpage)
		{
			if (side == MERGE_LEFT)
				memcpy(lpage, scratch.data, BLCKSZ);
			else
				TskPageGetOpaque(lpage)->next = rblk;
		}
		if (BufferIsValid(rbuf))
		{
			Page		rpage = tsk_xlog_register(state, 3, rbuf, 0);

			TskPageGetOpaque(rpage)->prev = lblk;
		}
		memset(&xlrec, 0, sizeof(xlrec));
		xlrec.safexid = ReadNextFullTransactionId();
		xlrec.prev = lblk;
		xlrec.next = rblk;
		xlrec.poff = off;
		xlrec.right = side == MERGE_RIGHT;
		tsk_init_deleted(dpage, lblk, rblk, xlrec.safexid);
	}
	tsk_xlog_main_data(state, &xlrec, sizeof(xlrec));
	tsk_xlog_finish(state, XLOG_TSK_DELETE);
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

/* lock_internal: an exclusively locked live page of the level, or InvalidBuffer. */
static Buffer
lock_internal(Relation index, BlockNumber blkno, uint16 level)
{
	Buffer		buf = tsk_getbuf(index, blkno, BUFFER_LOCK_EXCLUSIVE);
	TskPageOpaque op;

	op = TskPageGetOpaque(BufferGetPage(buf));
	if (op->level != level || TskPageIsDeleted(op))
	{
		UnlockReleaseBuffer(buf);
		return InvalidBuffer;
	}
	return buf;
}

/*
 * rebuild_internal: write into scratch the internal page src with its
 * pivots replaced by the n given (the first one's key stands for minus
 * infinity and is written as such) and the given high key (or none) and
 * right link.  Returns false if they do not fit.
 */
static bool
rebuild_internal(Page src, char *scratch, const TskPivot *pivots, int n,
				 const TskEntry *hikey, BlockNumber next)
{
	TskPageOpaque op = TskPageGetOpaque(src);
	TskEntry	minus_inf;

	memcpy(scratch, src, BLCKSZ);
	tsk_init_page((Page) scratch, op->level, op->prev, next);
	PageSetLSN((Page) scratch, PageGetLSN(src));
	if (hikey && !tsk_page_add_pivot((Page) scratch, TSK_HIKEY, InvalidBlockNumber, hikey))
		return false;
	memset(&minus_inf, 0, sizeof(minus_inf));
	for (int i = 0; i < n; i++)
		if (!tsk_page_add_pivot((Page) scratch, InvalidOffsetNumber, pivots[i].child,
								i == 0 ? &minus_inf : &pivots[i].key))
			return false;
	return true;
}

/* page_pivots: the pivots of an internal page, keys copied. */
static int
page_pivots(Page page, TskPivot *pivots)
{
	TskPageOpaque op = TskPageGetOpaque(page);
	int			n = 0;

	if (PageGetMaxOffsetNumber(page) > TSK_MAX_ENTRIES_PER_PAGE)
		tsk_corrupt(page, "too many pivots");
	for (OffsetNumber off = TskFirstData(op); off <= PageGetMaxOffsetNumber(page); off++, n++)
	{
		tsk_pivot_read(page, off, &pivots[n]);
		pivots[n].key = tsk_copy_entry(&pivots[n].key);
	}
	return n;
}

/*
 * dissolve: delete the internal page blkno (of the given level), whose only
 * child is an empty leaf's ancestor, giving that child to a sibling under
 * the same parent: prepended to the right sibling (whose old first child
 * gets the sibling's low key as its pivot), or appended to the left one
 * (which takes the page's high key).  The parent's pivots change as for a
 * leaf's deletion, and the key ranges of the child and everything below it
 * stay as they are.  If the page is its parent's only child, the parent is
 * dissolved first (up to the root's children; the root is never deleted).
 * Locks: parent, then the page's level left to right (left sibling, page,
 * right sibling); one WAL record of those four pages.  A split
 * pass or descent that reaches the deleted page starts over from the root.
 */
static bool
dissolve(Relation index, BlockNumber blkno, uint16 level, int depth)
{
	Buffer		buf,
				gbuf,
				lbuf = InvalidBuffer,
				rbuf = InvalidBuffer;
	Page		page,
				gpage;
	TskPageOpaque op;
	TskSearchKey sk;
	OffsetNumber off,
				first,
				maxoff;
	TskPivot	pivot,
				lowpivot;
	BlockNumber lblk,
				rblk,
				child;
	bool		right;
	bool		ok = false;
	TskPivot   *pivots = NULL;
	PGAlignedBlock scratch;
	TskXLogState *state;
	xl_tsk_delete xlrec;

	check_stack_depth();
	CHECK_FOR_INTERRUPTS();
	if (blkno == TSK_ROOT_BLKNO || depth > 16)
		return false;
	buf = tsk_getbuf(index, blkno, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	op = TskPageGetOpaque(page);
	if (op->level != level || TskPageIsDeleted(op) ||
		PageGetMaxOffsetNumber(page) != TskFirstData(op))
	{
		UnlockReleaseBuffer(buf);
		return false;
	}
	key_below_hikey(page, &sk);
	UnlockReleaseBuffer(buf);

again:
	gbuf = tsk_descend_level(index, &sk, level + 1, true);
	if (!BufferIsValid(gbuf))
		return false;
	gpage = BufferGetPage(gbuf);
	first = TskFirstData(TskPageGetOpaque(gpage));
	maxoff = PageGetMaxOffsetNumber(gpage);
	for (off = first; off <= maxoff; off++)
	{
		tsk_pivot_read(gpage, off, &pivot);
		if (pivot.child == blkno)
			break;
	}
	if (off > maxoff)
		goto done;
	if (first == maxoff)
	{
		/* the parent's only child: dissolve the parent first */
		BlockNumber gblk = BufferGetBlockNumber(gbuf);

		UnlockReleaseBuffer(gbuf);
		if (dissolve(index, gblk, level + 1, depth + 1))
			goto again;
		return false;
	}
	right = off < maxoff;
	/* the low key of the right sibling, or of this page */
	tsk_pivot_read(gpage, right ? off + 1 : off, &lowpivot);
	lowpivot.key = tsk_copy_entry(&lowpivot.key);
	tsk_pivot_read(gpage, right ? off + 1 : off - 1, &pivot);

	/* this level, left to right */
	buf = tsk_getbuf(index, blkno, BUFFER_LOCK_SHARE);
	lblk = TskPageGetOpaque(BufferGetPage(buf))->prev;
	UnlockReleaseBuffer(buf);
	buf = InvalidBuffer;
	if (!right && lblk != pivot.child)
		goto done;
	if (lblk != InvalidBlockNumber)
	{
		lbuf = lock_internal(index, lblk, level);
		if (!BufferIsValid(lbuf) || TskPageGetOpaque(BufferGetPage(lbuf))->next != blkno)
			goto done;
	}
	buf = lock_internal(index, blkno, level);
	if (!BufferIsValid(buf))
		goto done;
	page = BufferGetPage(buf);
	op = TskPageGetOpaque(page);
	if (op->prev != lblk || PageGetMaxOffsetNumber(page) != TskFirstData(op))
		goto done;
	rblk = op->next;
	if (right && rblk != pivot.child)
		goto done;
	if (rblk != InvalidBlockNumber)
	{
		rbuf = lock_internal(index, rblk, level);
		if (!BufferIsValid(rbuf) || TskPageGetOpaque(BufferGetPage(rbuf))->prev != blkno)
			goto done;
	}
	tsk_pivot_read(page, TskFirstData(op), &pivot);
	child = pivot.child;

	/* the sibling that takes the child, rebuilt in scratch */
	pivots = palloc((TSK_MAX_ENTRIES_PER_PAGE + 1) * sizeof(TskPivot));
	if (right)
	{
		Page		rpage = BufferGetPage(rbuf);
		TskPageOpaque rop = TskPageGetOpaque(rpage);
		int			n = page_pivots(rpage, pivots + 1);
		TskPivot	rhikey;

		if (n < 1)
			goto done;
		pivots[0].child = child;
		pivots[1].key = lowpivot.key;	/* its old first child's lower bound */
		if (!TskPageIsRightmost(rop))
			tsk_pivot_read(rpage, TSK_HIKEY, &rhikey);
		if (!rebuild_internal(rpage, scratch.data, pivots, n + 1,
							  TskPageIsRightmost(rop) ? NULL : &rhikey.key, rop->next))
			goto done;
		TskPageGetOpaque((Page) scratch.data)->prev = lblk;
	}
	else
	{
		Page		lpage = BufferGetPage(lbuf);
		int			n = page_pivots(lpage, pivots);
		TskPivot	hikey;

		pivots[n].child = child;
		pivots[n].key = lowpivot.key;	/* this page's lower bound */
		if (!TskPageIsRightmost(op))
			tsk_pivot_read(page, TSK_HIKEY, &hikey);
		if (!rebuild_internal(lpage, scratch.data, pivots, n + 1,
							  TskPageIsRightmost(op) ? NULL : &hikey.key, rblk))
			goto done;
	}

	/* blocks in lock order: grandparent, left sibling, page, right sibling */
	state = tsk_xlog_start(index);
	{
		Page		g = tsk_xlog_register(state, 0, gbuf, 0);
		Page		l = BufferIsValid(lbuf) ?
			tsk_xlog_register(state, 1, lbuf, right ? 0 : TSK_XLOG_IMAGE) : NULL;
		Page		d = tsk_xlog_register(state, 2, buf, 0);
		Page		r = BufferIsValid(rbuf) ?
			tsk_xlog_register(state, 3, rbuf, right ? TSK_XLOG_IMAGE : 0) : NULL;

		if (right)
		{
			Size		len;
			char	   *item = (char *) tsk_item(g, off, &len);

			memcpy(item, &rblk, sizeof(BlockNumber));
			PageIndexTupleDelete(g, off + 1);
			memcpy(r, scratch.data, BLCKSZ);
			if (l)
				TskPageGetOpaque(l)->next = rblk;
		}
		else
		{
			PageIndexTupleDelete(g, off);
			memcpy(l, scratch.data, BLCKSZ);
			if (r)
				TskPageGetOpaque(r)->prev = lblk;
		}
		memset(&xlrec, 0, sizeof(xlrec));
		xlrec.safexid = ReadNextFullTransactionId();
		xlrec.prev = lblk;
		xlrec.next = rblk;
		xlrec.poff = off;
		xlrec.right = right;
		tsk_init_deleted(d, lblk, rblk, xlrec.safexid);
	}
	tsk_xlog_main_data(state, &xlrec, sizeof(xlrec));
	tsk_xlog_finish(state, XLOG_TSK_DISSOLVE);
	ok = true;

done:
	if (pivots)
		pfree(pivots);
	if (BufferIsValid(rbuf))
		UnlockReleaseBuffer(rbuf);
	if (BufferIsValid(buf))
		UnlockReleaseBuffer(buf);
	if (BufferIsValid(lbuf))
		UnlockReleaseBuffer(lbuf);
	UnlockReleaseBuffer(gbuf);
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
		BlockNumber lone_parent = InvalidBlockNumber;

		vacuum_delay_point();
		if (delete_leaf(info->index, empty[i], &lone_parent))
			stats->pages_newly_deleted++;
		else if (lone_parent != InvalidBlockNumber && lone_parent != TSK_ROOT_BLKNO &&
				 dissolve(info->index, lone_parent, 1, 0))
		{
			stats->pages_newly_deleted++;
			lone_parent = InvalidBlockNumber;
			if (delete_leaf(info->index, empty[i], &lone_parent))
				stats->pages_newly_deleted++;
		}
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
	bool		needLock = !RELATION_IS_LOCAL(index);
	BlockNumber nblocks;

	/*
	 * The length under the extension lock, as btvacuumscan reads it: an
	 * extender locks its new page before it lets go of that lock, so a new
	 * page counted here is either being initialised (its lock makes us
	 * wait) or was left so by an error, and may be reused.
	 */
	if (needLock)
		LockRelationForExtension(index, ExclusiveLock);
	nblocks = RelationGetNumberOfBlocks(index);
	if (needLock)
		UnlockRelationForExtension(index, ExclusiveLock);
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
