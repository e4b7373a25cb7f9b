/*-------------------------------------------------------------------------
 *
 * scan.c
 *	  tskey index: ordered scans, forward and backward, and bitmap scans.
 *
 * The scan keys are reduced to a range per column (rescan).  A scan
 * descends to the leaf of its first entry, then reads a page at a time: it
 * copies the TIDs of the page's matching entries under a share lock, notes
 * the sibling links, and lets go of the lock, and of the pin as well for an
 * MVCC scan that visits the heap (keep_pin), so that an open cursor never
 * holds VACUUM up.
 * Forward it follows the right link noted when the page was read, so a
 * split after that moves only entries it already has; backward it goes left
 * and then right until the page whose right link is the one it read.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/tableam.h"
#include "access/visibilitymap.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/tidbitmap.h"
#include "pgstat.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "tskey_int.h"

/* The range of one column: bounds and whether each includes its value. */
typedef struct ColumnRange
{
	bool		has_lo;
	bool		lo_incl;
	TskKey		lo;
	bool		has_hi;
	bool		hi_incl;
	TskKey		hi;
} ColumnRange;

/*
 * Where the keys of a returned entry are in the scan's copy of its page,
 * for index-only scans.
 */
typedef struct ItemKeys
{
	uint16		pkoff;
	uint16		pkword;
	uint16		rkoff;
	uint16		rkword;
} ItemKeys;

typedef struct TskScanOpaqueData
{
	MemoryContext keycxt;		/* the scan keys' stored forms, reset per rescan */
	MemoryContext tupcxt;		/* the tuple returned, reset per tuple */
	ColumnRange range[2];		/* pk, rk */
	bool		pk_fixed;		/* pk range is one value */
	bool		empty;			/* contradictory keys: nothing matches */
	bool		started;
	bool		done;			/* no page left in the scan's direction */
	ScanDirection dir;
	Buffer		buf;			/* pinned current leaf, or InvalidBuffer */
	BlockNumber curblk;			/* the current leaf */
	BlockNumber next;			/* its right link when it was read */
	BlockNumber prev;			/* its left link when it was read */
	TskWalk		walk;			/* pages read, against a cycle of links */
	int			nitems;
	int			item;
	ItemPointerData items[TSK_MAX_ENTRIES_PER_PAGE];
	/* index-only scans: a copy of the page read, and the items' keys in it */
	char	   *keypage;
	ItemKeys   *itemkeys;
	/* index-only MVCC scans: what checks the heap while a leaf is locked */
	Buffer		vmbuf;
	IndexFetchTableData *fetch;
	TupleTableSlot *slot;
} TskScanOpaqueData;

typedef TskScanOpaqueData *TskScanOpaque;

/* tskbeginscan: ambeginscan. */
IndexScanDesc
tskbeginscan(Relation index, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(index, nkeys, norderbys);
	TskScanOpaque so = palloc0(sizeof(TskScanOpaqueData));

	so->buf = InvalidBuffer;
	so->vmbuf = InvalidBuffer;
	so->keycxt = AllocSetContextCreate(CurrentMemoryContext, "tskey scan keys",
									   ALLOCSET_SMALL_SIZES);
	so->tupcxt = AllocSetContextCreate(CurrentMemoryContext, "tskey scan tuple",
									   ALLOCSET_DEFAULT_SIZES);
	scan->opaque = so;
	return scan;
}

/* release_page: drop the pin on the current leaf. */
static void
release_page(TskScanOpaque so)
{
	if (BufferIsValid(so->buf))
		ReleaseBuffer(so->buf);
	so->buf = InvalidBuffer;
}

/*
 * add_bound: narrow a column's range by one scan key, keeping the tighter
 * of two bounds on the same side (the exclusive one if their values are
 * equal).
 */
static void
add_bound(ColumnRange *r, StrategyNumber strategy, TskKey k)
{
	int			c;

	if (strategy == BTEqualStrategyNumber || strategy == BTGreaterStrategyNumber ||
		strategy == BTGreaterEqualStrategyNumber)
	{
		bool		incl = strategy != BTGreaterStrategyNumber;

		if (!r->has_lo || (c = tsk_key_cmp(k, r->lo)) > 0 || (c == 0 && !incl))
		{
			r->lo = k;
			r->lo_incl = incl;
			r->has_lo = true;
		}
	}
	if (strategy == BTEqualStrategyNumber || strategy == BTLessStrategyNumber ||
		strategy == BTLessEqualStrategyNumber)
	{
		bool		incl = strategy != BTLessStrategyNumber;

		if (!r->has_hi || (c = tsk_key_cmp(k, r->hi)) < 0 || (c == 0 && !incl))
		{
			r->hi = k;
			r->hi_incl = incl;
			r->has_hi = true;
		}
	}
}

/*
 * tskrescan: amrescan.  Reduces the scan keys to one range per column and
 * notes a contradiction (an empty range, or a NULL comparison value).  A
 * comparison value longer than any key the index can store is clamped
 * (tsk_encode_search_key), never refused.
 */
void
tskrescan(IndexScanDesc scan, ScanKey keys, int nkeys, ScanKey orderbys, int norderbys)
{
	TskScanOpaque so = (TskScanOpaque) scan->opaque;
	MemoryContext old;
	int			i;

	release_page(so);
	if (keys && scan->numberOfKeys > 0)
		memmove(scan->keyData, keys, scan->numberOfKeys * sizeof(ScanKeyData));
	memset(so->range, 0, sizeof(so->range));
	so->empty = false;
	so->started = false;
	so->done = false;
	so->walk.steps = 0;
	so->walk.limit = 64;
	so->nitems = so->item = 0;

	/* the keys' stored forms of the previous rescan go */
	MemoryContextReset(so->keycxt);
	old = MemoryContextSwitchTo(so->keycxt);
	for (i = 0; i < scan->numberOfKeys; i++)
	{
		ScanKey		sk = &scan->keyData[i];
		StrategyNumber strategy;
		TskKey		key;
		bool		clamped;

		if (sk->sk_flags & SK_ISNULL)
		{
			so->empty = true;
			continue;
		}
		if (sk->sk_attno < 1 || sk->sk_attno > 2 || sk->sk_strategy < 1 ||
			sk->sk_strategy > BTMaxStrategyNumber)
			elog(ERROR, "unexpected tskey scan key: column %d, strategy %d",
				 sk->sk_attno, sk->sk_strategy);
		key = tsk_encode_search_key(sk->sk_argument, &clamped);
		strategy = sk->sk_strategy;
		if (clamped)
		{
			/*
			 * Longer than any stored key: nothing equals it; below it is
			 * what is at most its clamped form, above it what is above that.
			 */
			if (strategy == BTEqualStrategyNumber)
			{
				so->empty = true;
				continue;
			}
			strategy = (strategy == BTLessStrategyNumber || strategy == BTLessEqualStrategyNumber) ?
				BTLessEqualStrategyNumber : BTGreaterStrategyNumber;
		}
		add_bound(&so->range[sk->sk_attno - 1], strategy, key);
	}
	for (i = 0; i < 2; i++)
	{
		ColumnRange *r = &so->range[i];
		int			c;

		if (r->has_lo && r->has_hi &&
			((c = tsk_key_cmp(r->lo, r->hi)) > 0 || (c == 0 && !(r->lo_incl && r->hi_incl))))
			so->empty = true;
	}
	so->pk_fixed = so->range[0].has_lo && so->range[0].has_hi &&
		tsk_key_cmp(so->range[0].lo, so->range[0].hi) == 0;
	MemoryContextSwitchTo(old);
}

/* below_lo, above_hi: whether a key is outside its column's range. */
static inline bool
below_lo(const ColumnRange *r, TskKey k)
{
	int			c;

	return r->has_lo && ((c = tsk_key_cmp(k, r->lo)) < 0 || (c == 0 && !r->lo_incl));
}

static inline bool
above_hi(const ColumnRange *r, TskKey k)
{
	int			c;

	return r->has_hi && ((c = tsk_key_cmp(k, r->hi)) > 0 || (c == 0 && !r->hi_incl));
}

/*
 * start_key: where the scan starts: at the lower bounds going forward, at
 * the upper bounds going backward (the rk bound counts only with one pk).
 */
static void
start_key(TskScanOpaque so, ScanDirection dir, TskSearchKey *sk)
{
	bool		fwd = ScanDirectionIsForward(dir);
	const ColumnRange *pk = &so->range[0];
	const ColumnRange *rk = &so->range[1];

	memset(sk, 0, sizeof(*sk));
	sk->nkeys = 0;
	sk->side = fwd ? -1 : 1;
	if (fwd ? pk->has_lo : pk->has_hi)
	{
		bool		incl = fwd ? pk->lo_incl : pk->hi_incl;

		sk->nkeys = 1;
		sk->key.pk = fwd ? pk->lo : pk->hi;
		sk->side = (incl == fwd) ? -1 : 1;
		if (so->pk_fixed && (fwd ? rk->has_lo : rk->has_hi))
		{
			incl = fwd ? rk->lo_incl : rk->hi_incl;
			sk->nkeys = 2;
			sk->key.rk = fwd ? rk->lo : rk->hi;
			sk->side = (incl == fwd) ? -1 : 1;
		}
	}
}

/*
 * take_entry: note one entry of the page being read, in scan order (and,
 * for an index-only scan, where its keys are); returns false once an entry
 * past the end of the range is met.
 */
static bool
take_entry(TskScanOpaque so, bool fwd, const TskEntry *e, Page page)
{
	const ColumnRange *pk = &so->range[0];
	const ColumnRange *rk = &so->range[1];

	if (fwd ? above_hi(pk, e->pk) : below_lo(pk, e->pk))
		return false;
	if (so->pk_fixed && (fwd ? above_hi(rk, e->rk) : below_lo(rk, e->rk)))
		return false;
	if (!below_lo(pk, e->pk) && !above_hi(pk, e->pk) &&
		!below_lo(rk, e->rk) && !above_hi(rk, e->rk))
	{
		if (so->nitems >= TSK_MAX_ENTRIES_PER_PAGE)
			tsk_corrupt(e->pk.data, "too many entries");
		if (so->itemkeys)
		{
			ItemKeys   *k = &so->itemkeys[so->nitems];

			k->pkoff = e->pk.data - (const char *) page;
			k->pkword = e->pk.word;
			k->rkoff = e->rk.data - (const char *) page;
			k->rkword = e->rk.word;
		}
		so->items[so->nitems++] = e->tid;
	}
	return true;
}

/*
 * keep_pin: whether the scan keeps the pin on the leaf whose TIDs it is
 * returning (cf. nbtree's _bt_drop_lock_and_maybe_pin).  An MVCC scan need
 * not: if VACUUM removes an entry it has copied and the heap reuses the
 * TID, the new tuple is one its snapshot cannot see.  Holding the pin
 * would make VACUUM wait for an open cursor indefinitely.  Other snapshots
 * may see such a tuple, so they keep the pin, which VACUUM's cleanup lock
 * waits for before removing the page's entries.  An index-only MVCC scan
 * (which may not visit the heap at all) drops it too, having kept only
 * entries it knows visible (keep_visible); nbtree in PostgreSQL 15 keeps
 * the pin there.  (kill_prior_tuple, which in nbtree must check that the
 * page did not change since, is not used.)
 */
static inline bool
keep_pin(IndexScanDesc scan)
{
	return !IsMVCCSnapshot(scan->xs_snapshot) ||
		(scan->xs_want_itup && scan->heapRelation == NULL);
}

/*
 * keep_visible: for an index-only MVCC scan, keep of the entries just
 * copied from the leaf only those whose tuples the snapshot sees, checked
 * while the leaf is still share-locked.
 *
 * An index-only scan returns an entry without visiting the heap when the
 * visibility map says its heap page is all-visible.  If the scan let go of
 * its leaf while still holding the entry of a dead tuple, VACUUM could
 * remove that entry, free the tuple's line pointer and mark the page
 * all-visible, and the executor would return the dead tuple's keys.  So
 * the check is made here, before the leaf is released: an entry on an
 * all-visible page, or whose tuple the snapshot sees, stays visible to the
 * snapshot for good, whatever VACUUM does next.  It is made under the
 * leaf's share lock, not just its pin, because a standby replays VACUUM of
 * the index (generic WAL) without a cleanup lock; the lock orders the
 * check before the replay of the entry's removal, and so before the heap
 * records that follow it.  The scan then keeps no pin (keep_pin), and an
 * open cursor does not hold VACUUM up.  The heap is visited twice only for
 * entries on pages not all-visible, which an index-only scan is planned
 * for only when they are few.
 */
static void
keep_visible(IndexScanDesc scan)
{
	TskScanOpaque so = (TskScanOpaque) scan->opaque;
	BlockNumber lastblk = InvalidBlockNumber;
	bool		allvisible = false;
	int			n = 0;

	for (int i = 0; i < so->nitems; i++)
	{
		ItemPointerData tid = so->items[i];
		BlockNumber blk = ItemPointerGetBlockNumber(&tid);
		bool		visible;

		if (blk != lastblk)
		{
			allvisible = VM_ALL_VISIBLE(scan->heapRelation, blk, &so->vmbuf);
			lastblk = blk;
		}
		visible = allvisible;
		if (!visible)
		{
			bool		call_again = false;
			bool		all_dead = false;

			if (so->fetch == NULL)
			{
				MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(so));

				so->fetch = table_index_fetch_begin(scan->heapRelation);
				so->slot = table_slot_create(scan->heapRelation, NULL);
				MemoryContextSwitchTo(old);
			}
			visible = table_index_fetch_tuple(so->fetch, &tid, scan->xs_snapshot, so->slot,
											  &call_again, &all_dead);
			ExecClearTuple(so->slot);
		}
		if (visible)
		{
			so->items[n] = so->items[i];
			so->itemkeys[n] = so->itemkeys[i];
			n++;
		}
	}
	so->nitems = n;
}

/*
 * read_page: copy the TIDs of the matching entries of the share-locked leaf
 * in the scan's direction (on the first page, from the start key on; runs
 * before it are not decoded), note its links, and release the lock, and
 * the pin unless keep_pin.  Sets so->done when an entry past the range's
 * end was seen, or there is no page further.
 */
static void
read_page(IndexScanDesc scan, Buffer buf, const TskSearchKey *start)
{
	TskScanOpaque so = (TskScanOpaque) scan->opaque;
	Page		page = BufferGetPage(buf);
	TskPageOpaque op = TskPageGetOpaque(page);
	bool		fwd = ScanDirectionIsForward(so->dir);
	OffsetNumber first = TskFirstData(op);
	OffsetNumber maxoff = PageGetMaxOffsetNumber(page);
	OffsetNumber off;
	TskEntry	entries[TSK_MAX_ENTRIES_PER_RUN];

	if (scan->xs_want_itup)
	{
		/* the keys are returned from a copy of the page, taken under the lock */
		if (so->keypage == NULL)
		{
			MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(so));

			so->keypage = palloc(BLCKSZ);
			so->itemkeys = palloc(TSK_MAX_ENTRIES_PER_PAGE * sizeof(ItemKeys));
			MemoryContextSwitchTo(old);
		}
		memcpy(so->keypage, page, BLCKSZ);
	}
	so->curblk = BufferGetBlockNumber(buf);
	so->next = op->next;
	so->prev = op->prev;
	so->nitems = so->item = 0;
	/*
	 * A deleted page (a step may land on one) has no entries: its contents
	 * are the deletion's safexid, which PageGetMaxOffsetNumber would count
	 * as line pointers.
	 */
	if (TskPageIsDeleted(op))
		maxoff = InvalidOffsetNumber;
	if (start && maxoff >= first)
		off = tsk_leaf_find_run(page, start);
	else
		off = fwd ? first : maxoff;
	for (; off >= first && off <= maxoff && !so->done; off += fwd ? 1 : -1)
	{
		int			n = tsk_run_entries(page, off, entries);

		for (int k = 0; k < n; k++)
		{
			const TskEntry *e = &entries[fwd ? k : n - 1 - k];

			/* forward from the first entry not before start, backward from the last before it */
			if (start && (fwd ? tsk_search_cmp(start, e) > 0 : tsk_search_cmp(start, e) <= 0))
				continue;
			if (!take_entry(so, fwd, e, page))
			{
				so->done = true;
				break;
			}
		}
	}
	if ((fwd ? so->next : so->prev) == InvalidBlockNumber)
		so->done = true;
	if (scan->xs_want_itup && !keep_pin(scan))
		keep_visible(scan);
	release_page(so);
	if (keep_pin(scan))
	{
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		so->buf = buf;
	}
	else
		UnlockReleaseBuffer(buf);
}

/*
 * live_origin: the page whose left neighbour a backward step looks for,
 * given the page last read.  If that page has been deleted since, its key
 * range went to a neighbour, and the step looks for the left neighbour of
 * the live page its right link leads to (nbtree's _bt_walk_left does the
 * same).  The deleted page cannot have been reused: the scan's snapshot
 * holds back its safexid (on a standby, reuse cancels the scan).
 */
static BlockNumber
live_origin(IndexScanDesc scan, BlockNumber origin)
{
	TskScanOpaque so = (TskScanOpaque) scan->opaque;

	while (origin != InvalidBlockNumber)
	{
		Buffer		buf;
		TskPageOpaque op;
		bool		deleted;

		tsk_walk_step(scan->indexRelation, &so->walk);
		buf = tsk_getbuf(scan->indexRelation, origin, BUFFER_LOCK_SHARE);
		op = TskPageGetOpaque(BufferGetPage(buf));
		deleted = TskPageIsDeleted(op);
		if (deleted)
			origin = op->next;
		UnlockReleaseBuffer(buf);
		if (!deleted)
			break;
	}
	return origin;
}

/*
 * step_left: share-lock the left neighbour of the page last read.  The
 * left link noted may be stale if that page split since: move right from it
 * until the page whose right link is the page last read.  If the first
 * page tried does not link to it, the page last read may have been
 * deleted (live_origin).  The page returned may be a deleted one (it has
 * no entries; the next step goes on from it).
 */
static Buffer
step_left(IndexScanDesc scan)
{
	TskScanOpaque so = (TskScanOpaque) scan->opaque;
	BlockNumber blkno = so->prev;
	BlockNumber origin = so->curblk;
	bool		checked = false;

	for (;;)
	{
		Buffer		buf;
		TskPageOpaque op;

		tsk_walk_step(scan->indexRelation, &so->walk);
		buf = tsk_getbuf(scan->indexRelation, blkno, BUFFER_LOCK_SHARE);
		op = TskPageGetOpaque(BufferGetPage(buf));
		if (op->next == origin)
			return buf;
		if (!checked)
		{
			checked = true;
			LockBuffer(buf, BUFFER_LOCK_UNLOCK);
			origin = live_origin(scan, origin);
			LockBuffer(buf, BUFFER_LOCK_SHARE);
			op = TskPageGetOpaque(BufferGetPage(buf));
			if (op->next == origin)
				return buf;
		}
		if (op->next == InvalidBlockNumber)
			elog(ERROR, "tskey index \"%s\": no left sibling found for block %u",
				 RelationGetRelationName(scan->indexRelation), so->curblk);
		blkno = op->next;
		UnlockReleaseBuffer(buf);
	}
}

/*
 * next_tid: the scan's next TID, reading pages as needed; false at the end.
 */
static bool
next_tid(IndexScanDesc scan, ScanDirection dir, ItemPointer tid)
{
	TskScanOpaque so = (TskScanOpaque) scan->opaque;

	if (!so->started)
	{
		TskSearchKey sk;
		Buffer		buf;

		so->started = true;
		so->dir = dir;
		if (so->empty)
			return false;
		pgstat_count_index_scan(scan->indexRelation);
		start_key(so, dir, &sk);
		buf = tsk_descend(scan->indexRelation, &sk, false);
		read_page(scan, buf, &sk);
	}
	else if (ScanDirectionIsForward(dir) != ScanDirectionIsForward(so->dir))
		elog(ERROR, "tskey index scans cannot change direction");

	while (so->item >= so->nitems)
	{
		Buffer		buf;

		if (so->done || so->empty)
		{
			release_page(so);
			return false;
		}
		CHECK_FOR_INTERRUPTS();
		if (ScanDirectionIsForward(dir))
		{
			tsk_walk_step(scan->indexRelation, &so->walk);
			buf = tsk_getbuf(scan->indexRelation, so->next, BUFFER_LOCK_SHARE);
		}
		else
			buf = step_left(scan);
		read_page(scan, buf, NULL);
	}
	*tid = so->items[so->item++];
	return true;
}

/* key_datum: a stored key as a value of the key type (UTF-8 text). */
static Datum
key_datum(const char *data, uint16 word)
{
	TskKey		k;

	if ((word & TSK_UTF16) == 0)
		return PointerGetDatum(cstring_to_text_with_len(data, TSK_LEN(word)));
	k.data = data;
	k.word = word;
	return PointerGetDatum(cstring_to_text(tsk_key_text(k)));
}

/*
 * form_tuple: the index tuple of an index-only scan, (pk, rk) of the entry
 * just returned, in the scan's per-tuple context.  It is returned as a heap
 * tuple of the index's descriptor, so that long keys are not compressed.
 */
static void
form_tuple(IndexScanDesc scan, const ItemKeys *k)
{
	TskScanOpaque so = (TskScanOpaque) scan->opaque;
	MemoryContext old;
	Datum		values[2];
	bool		isnull[2] = {false, false};

	MemoryContextReset(so->tupcxt);
	old = MemoryContextSwitchTo(so->tupcxt);
	values[0] = key_datum(so->keypage + k->pkoff, k->pkword);
	values[1] = key_datum(so->keypage + k->rkoff, k->rkword);
	scan->xs_hitupdesc = RelationGetDescr(scan->indexRelation);
	scan->xs_hitup = heap_form_tuple(scan->xs_hitupdesc, values, isnull);
	MemoryContextSwitchTo(old);
}

/*
 * tskgettuple: amgettuple.  The keys are exact, so no recheck; dead entries
 * are left for VACUUM (kill_prior_tuple is not used).
 */
bool
tskgettuple(IndexScanDesc scan, ScanDirection dir)
{
	TskScanOpaque so = (TskScanOpaque) scan->opaque;

	scan->xs_recheck = false;
	if (!next_tid(scan, dir, &scan->xs_heaptid))
		return false;
	if (scan->xs_want_itup)
		form_tuple(scan, &so->itemkeys[so->item - 1]);
	return true;
}

/* tskgetbitmap: amgetbitmap, every matching TID into the bitmap. */
int64
tskgetbitmap(IndexScanDesc scan, TIDBitmap *tbm)
{
	ItemPointerData tid;
	int64		ntids = 0;

	while (next_tid(scan, ForwardScanDirection, &tid))
	{
		tbm_add_tuples(tbm, &tid, 1, false);
		ntids++;
	}
	return ntids;
}

/* tskendscan: amendscan. */
void
tskendscan(IndexScanDesc scan)
{
	TskScanOpaque so = (TskScanOpaque) scan->opaque;

	release_page(so);
	if (BufferIsValid(so->vmbuf))
		ReleaseBuffer(so->vmbuf);
	if (so->fetch)
	{
		table_index_fetch_end(so->fetch);
		ExecDropSingleTupleTableSlot(so->slot);
	}
	MemoryContextDelete(so->keycxt);
	MemoryContextDelete(so->tupcxt);
	if (so->keypage)
	{
		pfree(so->keypage);
		pfree(so->itemkeys);
	}
	pfree(so);
}
