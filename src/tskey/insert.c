/*-------------------------------------------------------------------------
 *
 * insert.c
 *	  tskey index: insertion, the unique check, page splits, and the pages
 *	  splits take (reused deleted pages, or new ones).
 *
 * An insert descends with share locks and locks exclusively the first leaf
 * where its key can be; the unique check runs under that lock (every
 * inserter of a key takes the same first leaf), reading equal keys further
 * right one share-locked page at a time; the inserter then moves right to
 * its own leaf with coupled locks and adds the entry before it lets go.  A leaf
 * that is full is not split there: the inserter lets go of everything, runs
 * a split pass that locks exclusively from the root down, splitting every
 * page on the way that could not take one more pivot, and then starts over.
 * Each split is one WAL record of at most four pages, so a crash never
 * leaves a split half done.  See src/tskey/README.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tableam.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "storage/predicate.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "errors.h"
#include "tskey_int.h"

/* What the unique check found. */
typedef enum UniqueResult
{
	UNIQUE_OK,					/* no live duplicate: insert */
	UNIQUE_WAIT,				/* a duplicate's transaction is in progress */
	UNIQUE_CONFLICT				/* a live committed duplicate */
} UniqueResult;

/*
 * check_unique: look for live entries with e's (pk, rk).  first is the
 * first leaf where they can be, exclusively locked by the caller: every
 * inserter of the key locks it, so they check one at a time.  Equal keys
 * that continue past its high key are read on the pages to the right with
 * a share lock on one page at a time, as nbtree's _bt_check_unique does,
 * so a key with any number of versions is checked with two locks.  (An
 * inserter that has checked moves right to its own leaf with coupled
 * locks before it lets go of the first, so a later checker that walks
 * right meets its entry or waits for its lock.)  Each candidate is
 * fetched from the heap with a dirty snapshot, as nbtree does: an
 * in-progress inserter or deleter is returned in *xwait for the caller to
 * wait for once its locks are released.  With UNIQUE_CHECK_PARTIAL a
 * candidate only clears *is_unique.  Returns with first still locked, and
 * nothing else.
 */
static UniqueResult
check_unique(Relation index, Relation heap, const TskEntry *e, Buffer first,
			 IndexUniqueCheck checkUnique, bool *is_unique,
			 TransactionId *xwait, uint32 *speculativeToken)
{
	TskEntry	entries[TSK_MAX_ENTRIES_PER_RUN];
	TskSearchKey sk;
	SnapshotData SnapshotDirty;
	Buffer		buf = first;
	UniqueResult result = UNIQUE_OK;
	TskWalk		walk = TSK_WALK_INIT;

	InitDirtySnapshot(SnapshotDirty);
	sk.nkeys = 2;
	sk.side = -1;
	sk.key = *e;
	for (;;)
	{
		Page		page = BufferGetPage(buf);
		TskPageOpaque op = TskPageGetOpaque(page);
		OffsetNumber off = tsk_leaf_find_run(page, &sk);
		TskPivot	hikey;
		BlockNumber next;
		bool		done = false;

		CHECK_FOR_INTERRUPTS();
		/*
		 * A page deleted after the previous one's right link was read (it
		 * was empty): go on past it.
		 */
		if (TskPageIsDeleted(op))
			off = InvalidOffsetNumber;
		for (; !done && off != InvalidOffsetNumber && off <= PageGetMaxOffsetNumber(page); off++)
		{
			int			n = tsk_run_entries(page, off, entries);

			for (int i = 0; i < n && !done; i++)
			{
				bool		all_dead;

				if (tsk_search_cmp(&sk, &entries[i]) > 0)
					continue;
				if (!tsk_key_eq(entries[i].pk, e->pk) || !tsk_key_eq(entries[i].rk, e->rk))
				{
					done = true;
					break;
				}
				if (!table_index_fetch_tuple_check(heap, &entries[i].tid, &SnapshotDirty, &all_dead))
					continue;
				done = true;
				if (checkUnique == UNIQUE_CHECK_PARTIAL)
				{
					*is_unique = false;
					break;
				}
				*xwait = TransactionIdIsValid(SnapshotDirty.xmin) ? SnapshotDirty.xmin : SnapshotDirty.xmax;
				if (TransactionIdIsValid(*xwait))
				{
					*speculativeToken = SnapshotDirty.speculativeToken;
					result = UNIQUE_WAIT;
				}

				/*
				 * A live committed duplicate; it is an error only if our own
				 * tuple is live (CREATE INDEX CONCURRENTLY inserts dead ones
				 * too).
				 */
				else if (table_index_fetch_tuple_check(heap, (ItemPointer) &e->tid, SnapshotSelf, NULL))
					result = UNIQUE_CONFLICT;
			}
		}
		if (!done && TskPageIsDeleted(op))
			done = TskPageIsRightmost(op);
		else if (!done && !TskPageIsRightmost(op))
		{
			tsk_pivot_read(page, TSK_HIKEY, &hikey);
			done = !tsk_key_eq(hikey.key.pk, e->pk) || !tsk_key_eq(hikey.key.rk, e->rk);
		}
		else
			done = true;
		next = op->next;
		if (buf != first)
			UnlockReleaseBuffer(buf);
		if (done)
			return result;
		tsk_walk_step(index, &walk);
		buf = tsk_getbuf(index, next, BUFFER_LOCK_SHARE);
	}
}

/*
 * tskinsert: aminsert.  Adds (pk, rk, heap TID); for a unique index first
 * checks that no live entity has the key, raising EntityAlreadyExists
 * (SQLSTATE 23505) if one does.
 */
bool
tskinsert(Relation index, Datum *values, bool *isnull, ItemPointer ht_ctid,
		  Relation heap, IndexUniqueCheck checkUnique, bool indexUnchanged,
		  IndexInfo *indexInfo)
{
	TskEntry	e;
	TskSearchKey sk;
	TskSearchKey fullkey;
	bool		is_unique = true;
	TskWalk		walk = TSK_WALK_INIT;
	MemoryContext cxt;
	MemoryContext old;

	if (isnull[0] || isnull[1])
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("tskey index \"%s\" cannot hold null keys", RelationGetRelationName(index))));
	if (checkUnique == UNIQUE_CHECK_EXISTING)
		elog(ERROR, "tskey indexes do not support deferred unique checks");

	/*
	 * Everything an insert allocates (the keys' stored forms, a detoasted
	 * key, the scratch of a split) lives in a context of the statement's
	 * index that is reset for the next row, so that the memory of a
	 * statement does not grow with the rows it inserts.
	 */
	if (indexInfo->ii_AmCache == NULL)
		indexInfo->ii_AmCache = AllocSetContextCreate(indexInfo->ii_Context, "tskey insert",
													  ALLOCSET_DEFAULT_SIZES);
	cxt = (MemoryContext) indexInfo->ii_AmCache;
	MemoryContextReset(cxt);
	old = MemoryContextSwitchTo(cxt);

	e.pk = tsk_encode_key(values[0]);
	e.rk = tsk_encode_key(values[1]);
	e.tid = *ht_ctid;
	sk.nkeys = 2;
	sk.side = -1;
	sk.key = e;
	fullkey.nkeys = 3;
	fullkey.side = 0;
	fullkey.key = e;

	for (;;)
	{
		Buffer		buf;
		TskXLogState *state;
		Page		page;
		TskAddResult how;

		buf = tsk_descend(index, &sk, true);
		if (checkUnique != UNIQUE_CHECK_NO)
		{
			TransactionId xwait = InvalidTransactionId;
			uint32		token = 0;

			switch (check_unique(index, heap, &e, buf, checkUnique, &is_unique, &xwait, &token))
			{
				case UNIQUE_OK:
					break;
				case UNIQUE_WAIT:
					/* never sleep holding buffer locks */
					UnlockReleaseBuffer(buf);
					if (token)
						SpeculativeInsertionWait(xwait, token);
					else
						XactLockTableWait(xwait, heap, &e.tid, XLTW_InsertIndex);
					continue;
				case UNIQUE_CONFLICT:
					{
						/* the keys as every message echoes a caller's value */
						char	   *pk = tsk_key_text(e.pk);
						char	   *rk = tsk_key_text(e.rk);

						UnlockReleaseBuffer(buf);
						ts_ereport(ERROR, TS_EntityAlreadyExists,
								   errmsg("entity (\"%s\", \"%s\") already exists",
										  ts_clip(pk, strlen(pk)), ts_clip(rk, strlen(rk))),
								   errtableconstraint(heap, RelationGetRelationName(index)));
					}
			}
		}

		/*
		 * The entry's own leaf: this one, or one further right (among the
		 * versions of its key, by heap TID), reached with coupled locks.
		 */
		while (tsk_beyond_hikey(BufferGetPage(buf), &fullkey))
		{
			Buffer		next;

			CHECK_FOR_INTERRUPTS();
			tsk_walk_step(index, &walk);
			next = tsk_getbuf(index, TskPageGetOpaque(BufferGetPage(buf))->next,
							  BUFFER_LOCK_EXCLUSIVE);
			UnlockReleaseBuffer(buf);
			buf = next;
		}

		state = tsk_xlog_start(index);
		page = tsk_xlog_register(state, 0, buf, 0);
		if (tsk_leaf_add(page, &e, &how))
		{
			/* the record: the entry and what the insertion did */
			xl_tsk_insert xlrec;
			char		edata[10 + 2 * TSK_MAX_KEY_BYTES];

			memset(&xlrec, 0, sizeof(xlrec));
			xlrec.kind = how.kind;
			xlrec.off = how.off;
			tsk_xlog_main_data(state, &xlrec, sizeof(xlrec));
			tsk_xlog_block_data(state, 0, edata, tsk_xlog_entry(edata, &e));
			tsk_xlog_finish(state, XLOG_TSK_INSERT);
			UnlockReleaseBuffer(buf);
			break;
		}
		tsk_xlog_abort(state);
		UnlockReleaseBuffer(buf);
		tsk_split_pass(index, &e);
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(cxt);
	return is_unique;
}

/*
 * split_point: where to split n items (n >= 2) of the given sizes: the m
 * in [1, n - 1] that makes the larger half smallest, counting the high
 * keys too: the left half gets items[0..m) and items[m]'s key as its high
 * key, the right half items[m..n) and the page's high key (hikey_size
 * bytes, 0 for the rightmost page).  With keys of up to 2 KiB, a split at
 * half of the items' bytes alone could leave one half as full as the page
 * was.
 */
static int
split_point(const TskPivot *items, const Size *sizes, int n, Size hikey_size,
			bool internal)
{
	TskEntry	minus_inf;
	Size		first_size;

	Size		total = 0,
				left = 0,
				best_cost = 0;
	int			best = 1;
	int			m;

	if (n < 2)
		elog(ERROR, "tskey page to split has %d items", n);
	memset(&minus_inf, 0, sizeof(minus_inf));
	first_size = MAXALIGN(tsk_pivot_size(&minus_inf)) + sizeof(ItemIdData);
	for (m = 0; m < n; m++)
		total += sizes[m];
	for (m = 1; m < n; m++)
	{
		Size		lcost,
					rcost,
					cost;

		left += sizes[m - 1];
		lcost = left + MAXALIGN(tsk_pivot_size(&items[m].key)) + sizeof(ItemIdData);
		rcost = total - left + hikey_size;
		/* items[m] becomes the right page's first pivot, written empty */
		if (internal)
			rcost -= sizes[m] - first_size;
		cost = Max(lcost, rcost);
		if (m == 1 || cost < best_cost)
		{
			best = m;
			best_cost = cost;
		}
	}
	return best;
}

/*
 * rightmost_split_point: where to split the rightmost page of a level, as
 * nbtree does: the left half filled as far as a build fills a page (a leaf
 * to fillfactor, an internal page keeping room for one maximal pivot, so
 * that it is safe), the rest going right, where keys that grow keep
 * arriving.  A split in the middle left every left half of an ascending
 * workload half empty for good, and with 2 KiB pivots one child per
 * internal page: the tree grew a level every few entries (attack report,
 * finding 3).  Returns 0 when no left half fits the target.
 */
static int
rightmost_split_point(Relation index, const TskPivot *items, const Size *sizes,
					  int n, bool internal)
{
	Size		usable = BLCKSZ - SizeOfPageHeaderData - MAXALIGN(sizeof(TskPageOpaqueData));
	Size		target;
	int			m;

	if (internal)
	{
		Size		left = 0;
		int			best = 0;

		target = usable - TSK_MAX_PIVOT_SPACE;
		for (m = 1; m < n; m++)
		{
			left += sizes[m - 1];
			if (left + MAXALIGN(tsk_pivot_size(&items[m].key)) + sizeof(ItemIdData) <= target)
				best = m;
		}
		return best;
	}
	else
	{
		TskEntry   *entries = palloc(n * sizeof(TskEntry));
		int			best = 0;

		target = usable * tsk_fillfactor(index) / 100;
		for (m = 0; m < n; m++)
			entries[m] = items[m].key;
		for (m = n - 1; m >= 1; m--)
		{
			if (tsk_leaf_size(entries, m) + MAXALIGN(tsk_pivot_size(&items[m].key)) +
				sizeof(ItemIdData) <= target)
			{
				best = m;
				break;
			}
		}
		pfree(entries);
		return best;
	}
}

/*
 * path_split_point: where to split an internal page on the path of search
 * key sk so that the half the path goes on into gets as few children as
 * can be while both halves stay safe, and the other half keeps the rest.
 * With pivots of up to 2 KiB a safe page holds two or three children, and
 * a split in the middle of three left one child on the half the inserts
 * had passed and two on the half they go on into, which split again at the
 * next insert: inserts moving through the middle of the key space left a
 * chain of one-child pages on every level and the tree grew a level every
 * few entries (attack report, finding 3).  Now the half left behind keeps
 * two children or more, so the height stays logarithmic.  Returns 0 when
 * no split leaves both halves safe.
 */
static int
path_split_point(const TskPivot *items, const Size *sizes, int n, Size hikey_size,
				 const TskSearchKey *sk)
{
	Size		usable = BLCKSZ - SizeOfPageHeaderData - MAXALIGN(sizeof(TskPageOpaqueData));
	Size		target = usable - TSK_MAX_PIVOT_SPACE;
	Size		total = 0,
				left = 0;
	TskEntry	minus_inf;
	Size		first_size;
	int			pos = 0;
	int			best = 0,
				best_count = 0;
	int			m;

	memset(&minus_inf, 0, sizeof(minus_inf));
	first_size = MAXALIGN(tsk_pivot_size(&minus_inf)) + sizeof(ItemIdData);
	for (m = 0; m < n; m++)
	{
		total += sizes[m];
		if (m > 0 && tsk_search_cmp(sk, &items[m].key) >= 0)
			pos = m;
	}
	for (m = 1; m < n; m++)
	{
		Size		lcost,
					rcost;
		int			count;

		left += sizes[m - 1];
		lcost = left + MAXALIGN(tsk_pivot_size(&items[m].key)) + sizeof(ItemIdData);
		rcost = total - left - sizes[m] + first_size + hikey_size;
		if (lcost > target || rcost > target)
			continue;
		count = pos >= m ? n - m : m;
		if (best == 0 || count < best_count)
		{
			best = m;
			best_count = count;
		}
	}
	return best;
}

/*
 * split_page: split the exclusively locked page buf, whose parent is
 * exclusively locked and has room for one more pivot, moving its upper half
 * to a new right sibling.  One WAL record: parent, page, new page, old right
 * sibling (its left link), registered in lock order.  With the resource
 * manager only the new page is logged whole: the replay rebuilds the page
 * from its items and the split point, and adds the downlink logged.
 * sk is the split pass's search key (path_split_point).  Returns the new
 * page, still locked.
 */
static Buffer
split_page(Relation index, Buffer parent, Buffer buf, const TskSearchKey *sk)
{
	Page		page = BufferGetPage(buf);
	TskPageOpaqueData op = *TskPageGetOpaque(page);
	BlockNumber blkno = BufferGetBlockNumber(buf);
	TskPivot   *items = palloc(TSK_MAX_ENTRIES_PER_PAGE * sizeof(TskPivot));
	Size	   *sizes = palloc(TSK_MAX_ENTRIES_PER_PAGE * sizeof(Size));
	int			n = tsk_page_items(page, items, sizes);
	int			m;
	TskPivot	hikey;
	Buffer		rbuf;
	Buffer		obuf = InvalidBuffer;
	BlockNumber rblkno;
	TskXLogState *state;
	xl_tsk_split xlrec;
	char		kdata[10 + 2 * TSK_MAX_KEY_BYTES];
	Page		ppage,
				lpage,
				rpage;
	Page		parentpage = BufferGetPage(parent);
	OffsetNumber off;
	TskPivot	pivot;

	if (!TskPageIsRightmost(&op))
		tsk_pivot_read(page, TSK_HIKEY, &hikey);
	m = TskPageIsRightmost(&op) ?
		rightmost_split_point(index, items, sizes, n, op.level > 0) : 0;
	if (m == 0 && op.level > 0)
		m = path_split_point(items, sizes, n, TskPageIsRightmost(&op) ? 0 :
							 MAXALIGN(tsk_pivot_size(&hikey.key)) + sizeof(ItemIdData), sk);
	if (m == 0)
		m = split_point(items, sizes, n, TskPageIsRightmost(&op) ? 0 :
						MAXALIGN(tsk_pivot_size(&hikey.key)) + sizeof(ItemIdData),
						op.level > 0);

	/* the downlink to this page in the parent */
	for (off = TskFirstData(TskPageGetOpaque(parentpage)); off <= PageGetMaxOffsetNumber(parentpage); off++)
	{
		tsk_pivot_read(parentpage, off, &pivot);
		if (pivot.child == blkno)
			break;
	}
	if (off > PageGetMaxOffsetNumber(parentpage))
		elog(ERROR, "tskey parent of block %u has no downlink to it", blkno);
	/* checked before the index is extended: a failure leaves no orphan page */
	if (PageGetFreeSpace(parentpage) < MAXALIGN(tsk_pivot_size(&items[m].key)))
		elog(ERROR, "tskey parent page has no room for a downlink");

	rbuf = tsk_new_buffer(index);
	rblkno = BufferGetBlockNumber(rbuf);
	if (op.next != InvalidBlockNumber)
	{
		obuf = tsk_getbuf(index, op.next, BUFFER_LOCK_EXCLUSIVE);
	}

	state = tsk_xlog_start(index);
	ppage = tsk_xlog_register(state, 0, parent, 0);
	lpage = tsk_xlog_register(state, 1, buf, TSK_XLOG_GENERIC_IMAGE);
	rpage = tsk_xlog_register(state, 2, rbuf, TSK_XLOG_IMAGE);

	tsk_init_page(lpage, op.level, op.prev, rblkno);
	tsk_fill_page(lpage, &items[m].key, items, m);
	tsk_init_page(rpage, op.level, blkno, op.next);
	tsk_fill_page(rpage, TskPageIsRightmost(&op) ? NULL : &hikey.key, items + m, n - m);
	if (!tsk_page_add_pivot(ppage, off + 1, rblkno, &items[m].key))
		elog(ERROR, "tskey parent page has no room for a downlink");
	if (BufferIsValid(obuf))
	{
		Page		opage = tsk_xlog_register(state, 3, obuf, 0);

		TskPageGetOpaque(opage)->prev = rblkno;
	}
	memset(&xlrec, 0, sizeof(xlrec));
	xlrec.rblkno = rblkno;
	xlrec.poff = off + 1;
	xlrec.split = m;
	tsk_xlog_main_data(state, &xlrec, sizeof(xlrec));
	tsk_xlog_block_data(state, 0, kdata, tsk_xlog_entry(kdata, &items[m].key));
	tsk_xlog_finish(state, XLOG_TSK_SPLIT);

	if (BufferIsValid(obuf))
		UnlockReleaseBuffer(obuf);
	pfree(items);
	pfree(sizes);
	return rbuf;
}

/*
 * split_root: split the root, keeping it at block 1: its items go to two
 * new pages, and it becomes their parent, one level up.  One WAL record of
 * three pages, all logged whole (the root holds two pivots).
 */
static void
split_root(Relation index, Buffer root)
{
	Page		page = BufferGetPage(root);
	uint16		level = TskPageGetOpaque(page)->level;
	TskPivot   *items = palloc(TSK_MAX_ENTRIES_PER_PAGE * sizeof(TskPivot));
	Size	   *sizes = palloc(TSK_MAX_ENTRIES_PER_PAGE * sizeof(Size));
	int			n = tsk_page_items(page, items, sizes);
	int			m = rightmost_split_point(index, items, sizes, n, level > 0);
	Buffer		lbuf = tsk_new_buffer(index);
	Buffer		rbuf = tsk_new_buffer(index);
	BlockNumber lblkno = BufferGetBlockNumber(lbuf);
	BlockNumber rblkno = BufferGetBlockNumber(rbuf);
	TskXLogState *state = tsk_xlog_start(index);
	Page		rootpage = tsk_xlog_register(state, 0, root, TSK_XLOG_IMAGE);
	Page		lpage = tsk_xlog_register(state, 1, lbuf, TSK_XLOG_IMAGE);
	Page		rpage = tsk_xlog_register(state, 2, rbuf, TSK_XLOG_IMAGE);
	TskEntry	minus_inf;

	if (m == 0)
		m = split_point(items, sizes, n, 0, level > 0);
	tsk_init_page(lpage, level, InvalidBlockNumber, rblkno);
	tsk_fill_page(lpage, &items[m].key, items, m);
	tsk_init_page(rpage, level, lblkno, InvalidBlockNumber);
	tsk_fill_page(rpage, NULL, items + m, n - m);

	/* the first pivot stands for minus infinity: its key is never read */
	memset(&minus_inf, 0, sizeof(minus_inf));
	tsk_init_page(rootpage, level + 1, InvalidBlockNumber, InvalidBlockNumber);
	if (!tsk_page_add_pivot(rootpage, InvalidOffsetNumber, lblkno, &minus_inf) ||
		!tsk_page_add_pivot(rootpage, InvalidOffsetNumber, rblkno, &items[m].key))
		elog(ERROR, "tskey root split does not fit its page");
	tsk_xlog_finish(state, XLOG_TSK_NEWROOT);

	UnlockReleaseBuffer(lbuf);
	UnlockReleaseBuffer(rbuf);
	pfree(items);
	pfree(sizes);
}

/*
 * leaf_has_room: whether the leaf, rewritten compactly, takes e as well
 * (what tsk_leaf_add falls back to).
 */
static bool
leaf_has_room(Page page, const TskEntry *e)
{
	TskPageOpaque op = TskPageGetOpaque(page);
	TskEntry   *entries = palloc((TSK_MAX_ENTRIES_PER_PAGE + 1) * sizeof(TskEntry));
	int			n = tsk_leaf_entries(page, entries);
	int			pos = n;
	Size		used;

	while (pos > 0 && tsk_entry_cmp(&entries[pos - 1], e) > 0)
		pos--;
	memmove(entries + pos + 1, entries + pos, (n - pos) * sizeof(TskEntry));
	entries[pos] = *e;
	used = SizeOfPageHeaderData + MAXALIGN(sizeof(TskPageOpaqueData)) + tsk_leaf_size(entries, n + 1);
	if (!TskPageIsRightmost(op))
		used += MAXALIGN(ItemIdGetLength(PageGetItemId(page, TSK_HIKEY))) + sizeof(ItemIdData);
	pfree(entries);
	return used <= BLCKSZ;
}

/* internal_is_safe: whether an internal page can take one more pivot. */
static inline bool
internal_is_safe(Page page)
{
	return PageGetFreeSpace(page) >= TSK_MAX_PIVOT_SPACE;
}

/*
 * tsk_split_pass: make room for entry e.  Locks exclusively from the root
 * down the path to e's leaf, splitting on the way every internal page that
 * could not take one more pivot (its parent, held, can), then splits the
 * leaf if it still has no room for e.  The half of a split page the path
 * goes on into is checked again: if it still could not take a pivot (long
 * keys make halves uneven), the pass lets go and starts over from the root,
 * which splits it in turn with its parent made safe first.  Every split
 * leaves pages with fewer items, so the passes end.  The caller holds no
 * lock and retries its insert afterwards.
 */
void
tsk_split_pass(Relation index, const TskEntry *e)
{
	TskSearchKey sk;
	Buffer		parent;
	Page		page;

	sk.nkeys = 3;
	sk.side = 0;
	sk.key = *e;

restart:
	CHECK_FOR_INTERRUPTS();
	parent = tsk_getbuf(index, TSK_ROOT_BLKNO, BUFFER_LOCK_EXCLUSIVE);
	page = BufferGetPage(parent);
	if (TskPageGetOpaque(page)->level == 0)
	{
		if (!leaf_has_room(page, e))
			split_root(index, parent);
		UnlockReleaseBuffer(parent);
		return;
	}
	/* a split root holds two pivots: safe */
	if (!internal_is_safe(page))
		split_root(index, parent);

	for (;;)
	{
		BlockNumber child = tsk_choose_child(BufferGetPage(parent), &sk);
		Buffer		buf = tsk_getbuf(index, child, BUFFER_LOCK_EXCLUSIVE);
		page = BufferGetPage(buf);
		if (TskPageIsDeleted(TskPageGetOpaque(page)))
		{
			/*
			 * Cannot happen while the parent is held (deleting a page
			 * takes its parent's lock), but a descent that meets a deleted
			 * page starts over.
			 */
			UnlockReleaseBuffer(buf);
			UnlockReleaseBuffer(parent);
			goto restart;
		}
		if (TskPageGetOpaque(page)->level == 0)
		{
			if (!leaf_has_room(page, e))
				UnlockReleaseBuffer(split_page(index, parent, buf, &sk));
			UnlockReleaseBuffer(buf);
			UnlockReleaseBuffer(parent);
			return;
		}
		if (!internal_is_safe(page))
		{
			Buffer		right = split_page(index, parent, buf, &sk);

			if (tsk_beyond_hikey(BufferGetPage(buf), &sk))
			{
				UnlockReleaseBuffer(buf);
				buf = right;
			}
			else
				UnlockReleaseBuffer(right);
			if (!internal_is_safe(BufferGetPage(buf)))
			{
				UnlockReleaseBuffer(buf);
				UnlockReleaseBuffer(parent);
				goto restart;
			}
		}
		UnlockReleaseBuffer(parent);
		parent = buf;
	}
}

/*
 * log_reuse: before a deleted page is reused, make a hot standby cancel
 * the queries that could still hold a link to it: those whose snapshot is
 * older than the page's safexid (tsk_xlog_reuse).
 */
static void
log_reuse(Relation index, BlockNumber blkno, Page page)
{
	TskDeletedData d;

	if (!RelationNeedsWAL(index) || !XLogStandbyInfoActive() || PageIsNew(page))
		return;
	memcpy(&d, PageGetContents(page), sizeof(d));
	tsk_xlog_reuse(index, blkno, d.safexid);
}

/*
 * tsk_new_buffer: a page for a split, pinned and locked exclusively: a
 * recyclable deleted page from the free space map (where VACUUM records
 * them), or a new page at the end of the index.  The caller initialises it
 * and logs it whole.  Free space map entries may be stale, so each page
 * is checked under its lock; a page another backend has locked is passed
 * over (the caller holds locks of its own).
 */
Buffer
tsk_new_buffer(Relation index)
{
	bool		needLock = !RELATION_IS_LOCAL(index);
	Buffer		buf;

	for (;;)
	{
		BlockNumber blkno = GetFreeIndexPage(index);

		if (blkno == InvalidBlockNumber)
			break;
		if (blkno <= TSK_ROOT_BLKNO || blkno >= RelationGetNumberOfBlocks(index))
			continue;
		buf = ReadBuffer(index, blkno);
		if (ConditionalLockBuffer(buf))
		{
			Page		page = BufferGetPage(buf);

			if (PageIsNew(page) ||
				(PageGetSpecialSize(page) == MAXALIGN(sizeof(TskPageOpaqueData)) &&
				 TskPageGetOpaque(page)->page_id == TSK_PAGE_ID &&
				 tsk_page_recyclable(page)))
			{
				log_reuse(index, blkno, page);
				return buf;
			}
			LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		}
		ReleaseBuffer(buf);
	}

	if (needLock)
		LockRelationForExtension(index, ExclusiveLock);
	buf = ReadBuffer(index, P_NEW);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	if (needLock)
		UnlockRelationForExtension(index, ExclusiveLock);
	return buf;
}
