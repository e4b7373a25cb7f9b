/*-------------------------------------------------------------------------
 *
 * verify.c
 *	  tablestore.verify_index(index regclass, parent_check boolean,
 *	  heapallindexed boolean): check a tskey index against its invariants
 *	  and its heap.
 *
 * As amcheck's verify_nbtree.c, in two strengths:
 *	- the light check (parent_check false, bt_index_check's level) takes an
 *	  AccessShareLock, so that writers and VACUUM go on: it walks each level
 *	  left to right, keeping the left page share-locked while it locks the
 *	  right one (the access method's lock order), so that no split or
 *	  deletion comes between the two, and checks each page's form, the order
 *	  of its items, its high key, and the pair: the right page's left link,
 *	  and its first entry not below the left page's high key;
 *	- the parent check (parent_check true, the default, bt_index_parent_check's
 *	  level) takes a ShareLock on table and index, and checks besides that
 *	  the pivots of each internal level name exactly the pages of the level
 *	  below in order, each with the next pivot as its high key; that every
 *	  page is in the tree; and, with one MVCC snapshot, that each entry's
 *	  heap tuple (if visible) has the entry's keys, that no key has two
 *	  visible tuples, and that the visible tuples and the entries reaching
 *	  them match one to one.
 * With heapallindexed, either check also fingerprints every leaf entry into
 * a Bloom filter sized from the index's tuple count, then scans the heap
 * with the snapshot taken before the walk and probes the filter with each
 * visible tuple's entry; one missing is reported with its heap TID.  A
 * Bloom filter has false positives, never false negatives: a missing entry
 * may go unseen, but nothing is reported that is not so.
 * The first problem found is raised as an error naming it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "common/pg_prng.h"
#include "lib/bloomfilter.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "tablestore.h"
#include "edm.h"
#include "tskey_int.h"

#define corrupt(index, blkno, ...) \
	ereport(ERROR, \
			(errcode(ERRCODE_INDEX_CORRUPTED), \
			 BlockNumberIsValid(blkno) ? \
			 errmsg("index \"%s\" block %u: %s", RelationGetRelationName(index), (blkno), \
					psprintf(__VA_ARGS__)) : \
			 errmsg("index \"%s\": %s", RelationGetRelationName(index), psprintf(__VA_ARGS__))))

/* A page the level above expects next: its block and high key. */
typedef struct Expected
{
	BlockNumber blkno;
	bool		has_hikey;
	TskEntry	hikey;
} Expected;

typedef struct VerifyState
{
	Relation	index;
	Relation	heap;
	Snapshot	snapshot;
	IndexFetchTableData *fetch;
	TupleTableSlot *slot;
	ItemPointerData *visible;	/* heap TIDs reached, for the 1:1 check */
	int64		nvisible;
	int64		maxvisible;
	TskEntry	lastkey;		/* previous entry, copied */
	bool		have_last;
	int			last_visible;	/* visible tuples with lastkey's (pk, rk) */
	TskEntry   *entries;
	BlockNumber nblocks;		/* of the index */
	BlockNumber heapblocks;		/* of the heap */
	MemoryContext entrycxt;		/* reset per entry checked */
	bool		parent_check;	/* the ShareLock check, else the light one */
	bloom_filter *bloom;		/* heapallindexed: fingerprints of entries */
} VerifyState;

static bool fingerprint(VerifyState *vs, const TskEntry *e, bool add);

/*
 * past_end: whether a link or downlink to blkno leads past the index's
 * end.  The light check lets writers go on, and a split extends the index:
 * a block past the length read before is looked for again in the length
 * now, as amcheck's bt_index_check does, before it is called corrupt (a
 * link is read under its page's lock, so the block it names was added
 * before that).  The parent check's lock keeps the length fixed (its
 * array of pages reached is sized by it); on a hot standby, where replay
 * can extend the index under it, it is exact only while replay is idle.
 */
static bool
past_end(VerifyState *vs, BlockNumber blkno)
{
	if (blkno >= vs->nblocks && !vs->parent_check)
		vs->nblocks = RelationGetNumberOfBlocks(vs->index);
	return blkno >= vs->nblocks;
}

/*
 * check_key: a stored key is valid text in its encoding (UTF-8, or UTF-16
 * with paired surrogates) and in the shorter of the two, as equal keys
 * must be byte-equal.  Its length was checked when it was parsed.
 */
static void
check_key(Relation index, BlockNumber blkno, TskKey k, const char *what)
{
	int			len = TSK_LEN(k.word);
	const unsigned char *p = (const unsigned char *) k.data;
	int			utf8len = 0;

	if ((k.word & TSK_UTF16) == 0)
	{
		if (pg_verify_mbstr_len(PG_UTF8, k.data, len, true) < 0 || memchr(k.data, 0, len) != NULL)
			corrupt(index, blkno, "%s is not valid UTF-8", what);
		if (len > 2 * ts_utf16_length(k.data, len))
			corrupt(index, blkno, "%s is stored in UTF-8 although UTF-16 is shorter", what);
		return;
	}
	for (int i = 0; i < len; i += 2)
	{
		uint16		u = (p[i] << 8) | p[i + 1];

		if (u >= 0xD800 && u < 0xDC00)
		{
			uint16		lo = i + 3 < len ? ((p[i + 2] << 8) | p[i + 3]) : 0;

			if (lo < 0xDC00 || lo >= 0xE000)
				corrupt(index, blkno, "%s has an unpaired surrogate", what);
			utf8len += 4;
			i += 2;
		}
		else if (u >= 0xDC00 && u < 0xE000)
			corrupt(index, blkno, "%s has an unpaired surrogate", what);
		else if (u == 0)
			corrupt(index, blkno, "%s contains a zero character", what);
		else
			utf8len += u < 0x80 ? 1 : u < 0x800 ? 2 : 3;
	}
	if (utf8len <= len)
		corrupt(index, blkno, "%s is stored in UTF-16 although UTF-8 is not longer", what);
}

/*
 * check_entry_heap: the entry's heap tuple, if visible, has its keys; note
 * the tuple and count it against the key's others.
 */
static void
check_entry_heap(VerifyState *vs, BlockNumber blkno, const TskEntry *e)
{
	bool		call_again = false;
	bool		all_dead = false;
	ItemPointerData tid = e->tid;

	if (vs->have_last && !(tsk_key_eq(vs->lastkey.pk, e->pk) && tsk_key_eq(vs->lastkey.rk, e->rk)))
		vs->last_visible = 0;
	if (!ItemPointerIsValid(&tid) || ItemPointerGetBlockNumber(&tid) >= vs->heapblocks)
		corrupt(vs->index, blkno, "entry with heap TID (%u,%u) outside the table",
				ItemPointerGetBlockNumberNoCheck(&tid), ItemPointerGetOffsetNumberNoCheck(&tid));
	if (!table_index_fetch_tuple(vs->fetch, &tid, vs->snapshot, vs->slot, &call_again, &all_dead))
		return;
	for (int i = 0; i < 2; i++)
	{
		bool		isnull;
		Datum		d = slot_getattr(vs->slot, vs->index->rd_index->indkey.values[i], &isnull);
		TskKey		k;

		if (isnull)
			corrupt(vs->index, blkno, "entry (%u,%u) reaches a heap tuple with a null key",
					ItemPointerGetBlockNumber(&e->tid), ItemPointerGetOffsetNumber(&e->tid));
		k = tsk_encode_key(d);
		if (!tsk_key_eq(k, i == 0 ? e->pk : e->rk))
			corrupt(vs->index, blkno, "entry (\"%s\", \"%s\") reaches heap tuple (%u,%u) with other keys",
					tsk_key_text(e->pk), tsk_key_text(e->rk),
					ItemPointerGetBlockNumber(&tid), ItemPointerGetOffsetNumber(&tid));
	}
	if (++vs->last_visible > 1 && vs->index->rd_index->indisunique)
		corrupt(vs->index, blkno, "key (\"%s\", \"%s\") has more than one visible tuple",
				tsk_key_text(e->pk), tsk_key_text(e->rk));
	if (vs->nvisible == vs->maxvisible)
	{
		vs->maxvisible *= 2;
		vs->visible = repalloc_huge(vs->visible, vs->maxvisible * sizeof(ItemPointerData));
	}
	vs->visible[vs->nvisible++] = vs->slot->tts_tid;
}

/*
 * verify_page: check one page of a level walk: form, level, left link,
 * what the level above expects of it, order of its items, and (leaves) the
 * heap.  Appends what it expects of the level below to *below.
 */
static void
verify_page(VerifyState *vs, Buffer buf, uint16 level, BlockNumber prevblk,
			const Expected *exp, const TskEntry *lowkey, Expected **below, int *nbelow, int *maxbelow)
{
	Relation	index = vs->index;
	BlockNumber blkno = BufferGetBlockNumber(buf);
	Page		page = BufferGetPage(buf);
	TskPageOpaque op;
	TskPivot	hikey;
	OffsetNumber off;

	tsk_check_page(index, buf);
	op = TskPageGetOpaque(page);
	if (TskPageIsDeleted(op))
		corrupt(index, blkno, "a deleted page is still linked into the tree");
	if (op->level != level)
		corrupt(index, blkno, "level %u where %u was expected", op->level, level);
	if (op->prev != prevblk)
		corrupt(index, blkno, "left link %u where %u was expected", op->prev, prevblk);
	if (!TskPageIsRightmost(op))
	{
		tsk_pivot_read(page, TSK_HIKEY, &hikey);
		check_key(index, blkno, hikey.key.pk, "the high key's PartitionKey");
		check_key(index, blkno, hikey.key.rk, "the high key's RowKey");
	}
	if (exp)					/* parent_check only */
	{
		if (exp->blkno != blkno)
			corrupt(index, blkno, "reached by a right link where the parent has block %u", exp->blkno);
		if (exp->has_hikey == TskPageIsRightmost(op) ||
			(exp->has_hikey && tsk_entry_cmp(&exp->hikey, &hikey.key) != 0))
			corrupt(index, blkno, "high key (\"%s\", \"%s\", (%u,%u)) differs from the parent's next pivot (\"%s\", \"%s\", (%u,%u))",
					TskPageIsRightmost(op) ? "" : tsk_key_text(hikey.key.pk),
					TskPageIsRightmost(op) ? "" : tsk_key_text(hikey.key.rk),
					TskPageIsRightmost(op) ? 0 : ItemPointerGetBlockNumberNoCheck(&hikey.key.tid),
					TskPageIsRightmost(op) ? 0 : ItemPointerGetOffsetNumberNoCheck(&hikey.key.tid),
					exp->has_hikey ? tsk_key_text(exp->hikey.pk) : "",
					exp->has_hikey ? tsk_key_text(exp->hikey.rk) : "",
					exp->has_hikey ? ItemPointerGetBlockNumberNoCheck(&exp->hikey.tid) : 0,
					exp->has_hikey ? ItemPointerGetOffsetNumberNoCheck(&exp->hikey.tid) : 0);
	}

	if (level == 0)
	{
		int			n = tsk_leaf_entries(page, vs->entries);

		for (int i = 0; i < n; i++)
		{
			const TskEntry *e = &vs->entries[i];

			MemoryContext old;

			check_key(index, blkno, e->pk, "a PartitionKey");
			check_key(index, blkno, e->rk, "a RowKey");
			if (i > 0 && tsk_entry_cmp(&vs->entries[i - 1], e) >= 0)
				corrupt(index, blkno, "entries %d and %d out of order", i - 1, i);
			if (i == 0 && lowkey && tsk_entry_cmp(lowkey, e) > 0)
				corrupt(index, blkno, "first entry below the left sibling's high key");
			if (!TskPageIsRightmost(op) && tsk_entry_cmp(e, &hikey.key) >= 0)
				corrupt(index, blkno, "entry %d not below the high key", i);
			old = MemoryContextSwitchTo(vs->entrycxt);
			if (vs->parent_check)
				check_entry_heap(vs, blkno, e);
			if (vs->bloom)
				fingerprint(vs, e, true);
			MemoryContextSwitchTo(old);
			MemoryContextReset(vs->entrycxt);
			vs->lastkey = *e;
			vs->have_last = true;
		}
		if (vs->have_last)
			vs->lastkey = tsk_copy_entry(&vs->lastkey);
		return;
	}

	for (off = TskFirstData(op); off <= PageGetMaxOffsetNumber(page); off++)
	{
		TskPivot	pivot,
					nextpivot;
		Expected   *x;

		tsk_pivot_read(page, off, &pivot);
		if (off > TskFirstData(op))
		{
			check_key(index, blkno, pivot.key.pk, "a pivot's PartitionKey");
			check_key(index, blkno, pivot.key.rk, "a pivot's RowKey");
		}
		if (pivot.child == TSK_METAPAGE_BLKNO || pivot.child == TSK_ROOT_BLKNO || past_end(vs, pivot.child))
			corrupt(index, blkno, "pivot %u has a downlink to block %u", off, pivot.child);
		if (off < PageGetMaxOffsetNumber(page))
		{
			tsk_pivot_read(page, off + 1, &nextpivot);
			if (off > TskFirstData(op) && tsk_entry_cmp(&pivot.key, &nextpivot.key) >= 0)
				corrupt(index, blkno, "pivots %u and %u out of order", off, off + 1);
		}
		if (!vs->parent_check)
		{
			/* the light check goes down by the leftmost downlink only */
			if (*nbelow == 0)
			{
				(*below)[0].blkno = pivot.child;
				*nbelow = 1;
			}
			continue;
		}
		if (*nbelow == *maxbelow)
		{
			*maxbelow *= 2;
			*below = repalloc_huge(*below, *maxbelow * sizeof(Expected));
		}
		x = &(*below)[(*nbelow)++];
		x->blkno = pivot.child;
		if (off < PageGetMaxOffsetNumber(page))
		{
			x->has_hikey = true;
			x->hikey = tsk_copy_entry(&nextpivot.key);
		}
		else
		{
			x->has_hikey = !TskPageIsRightmost(op);
			if (x->has_hikey)
				x->hikey = tsk_copy_entry(&hikey.key);
		}
	}
	if (PageGetMaxOffsetNumber(page) < TskFirstData(op))
		corrupt(index, blkno, "internal page without pivots");
}

/*
 * fingerprint: add an entry's (pk, rk, heap TID) to the Bloom filter, or
 * (add false) probe for it; returns whether it may be present.  Keys are
 * in stored form, which is a function of the string, so a heap tuple's
 * keys encoded again give the same bytes.
 */
static bool
fingerprint(VerifyState *vs, const TskEntry *e, bool add)
{
	unsigned char buf[2 * (sizeof(uint16) + TSK_MAX_KEY_BYTES) + sizeof(ItemPointerData)];
	Size		n = 0;

	memcpy(buf + n, &e->pk.word, sizeof(uint16));
	n += sizeof(uint16);
	memcpy(buf + n, e->pk.data, TSK_LEN(e->pk.word));
	n += TSK_LEN(e->pk.word);
	memcpy(buf + n, &e->rk.word, sizeof(uint16));
	n += sizeof(uint16);
	memcpy(buf + n, e->rk.data, TSK_LEN(e->rk.word));
	n += TSK_LEN(e->rk.word);
	memcpy(buf + n, &e->tid, sizeof(ItemPointerData));
	n += sizeof(ItemPointerData);
	if (add)
	{
		bloom_add_element(vs->bloom, buf, n);
		return true;
	}
	return !bloom_lacks_element(vs->bloom, buf, n);
}

/*
 * heap_tuple_present: table_index_build_scan's callback for heapallindexed:
 * the entry the index must hold for a heap tuple visible to the snapshot
 * (tid is the root of its HOT chain, as the index's entries are).
 */
static void
heap_tuple_present(Relation index, ItemPointer tid, Datum *values, bool *isnull,
				   bool tupleIsAlive, void *arg)
{
	VerifyState *vs = (VerifyState *) arg;
	MemoryContext old = MemoryContextSwitchTo(vs->entrycxt);
	TskEntry	e;

	CHECK_FOR_INTERRUPTS();
	if (isnull[0] || isnull[1])
		corrupt(index, InvalidBlockNumber, "heap tuple (%u,%u) has a null key",
				ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid));
	e.pk = tsk_encode_key(values[0]);
	e.rk = tsk_encode_key(values[1]);
	e.tid = *tid;
	if (!fingerprint(vs, &e, false))
		corrupt(index, InvalidBlockNumber, "heap tuple (%u,%u) with keys (\"%s\", \"%s\") has no index entry",
				ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid),
				tsk_key_text(e.pk), tsk_key_text(e.rk));
	MemoryContextSwitchTo(old);
	MemoryContextReset(vs->entrycxt);
}

/*
 * verify_heapallindexed: every heap tuple visible to the check's snapshot
 * has its entry in the Bloom filter of the index's entries (amcheck's
 * heapallindexed).  The heap is read as an index build reads it, so that
 * a HOT chain is looked for under its root's TID.
 */
static void
verify_heapallindexed(VerifyState *vs)
{
	IndexInfo  *ii = BuildIndexInfo(vs->index);
	TableScanDesc scan;

	ii->ii_Concurrent = true;	/* an MVCC snapshot, not SnapshotAny */
	scan = table_beginscan_strat(vs->heap, vs->snapshot, 0, NULL, true, true);
	table_index_build_scan(vs->heap, vs->index, ii, true, false,
						   heap_tuple_present, vs, scan);
}

/*
 * verify_levels: walk the tree level by level from the root, left to
 * right by right links, checking every page (verify_page).  The parent
 * check compares each level with what the level above names and marks the
 * pages reached; the light check couples the locks of each pair of
 * neighbours and goes down by the leftmost downlink.  Returns the pages
 * walked.
 */
static BlockNumber
verify_levels(VerifyState *vs, int level, bool *reached)
{
	Relation	index = vs->index;
	Expected   *above = NULL;
	int			nabove = 0;
	BlockNumber npages = 0;
	BlockNumber leftmost = TSK_ROOT_BLKNO;
	bool		top = true;

	for (; level >= 0; level--)
	{
		BlockNumber blkno = leftmost;
		BlockNumber prevblk = InvalidBlockNumber;
		Buffer		prevbuf = InvalidBuffer;
		int			maxbelow = 64,
					nbelow = 0,
					i = 0;
		Expected   *below = palloc(maxbelow * sizeof(Expected));
		TskEntry	lowkey;
		bool		has_lowkey = false;
		TskWalk		walk = TSK_WALK_INIT;

		while (blkno != InvalidBlockNumber)
		{
			TskPageOpaque op;
			Buffer		buf;

			CHECK_FOR_INTERRUPTS();
			if (above && i >= nabove)
				corrupt(index, blkno, "on level %d but not named by the level above", level);
			if (blkno == TSK_METAPAGE_BLKNO || past_end(vs, blkno))
				corrupt(index, prevblk, "link to block %u, which is not a tree page", blkno);
			if (vs->parent_check)
			{
				if (reached[blkno])
					corrupt(index, blkno, "reached twice (a cycle of links)");
				reached[blkno] = true;
			}
			else
				tsk_walk_step(index, &walk);
			buf = tsk_getbuf(index, blkno, BUFFER_LOCK_SHARE);
			op = TskPageGetOpaque(BufferGetPage(buf));
			if (!vs->parent_check && !BufferIsValid(prevbuf))
			{
				if (TskPageIsDeleted(op))
				{
					/* a leftmost page deleted since its downlink was read */
					blkno = op->next;
					UnlockReleaseBuffer(buf);
					continue;
				}
				if (top)
					level = op->level;	/* the root may have split since */
			}
			verify_page(vs, buf, level, prevblk, above ? &above[i] : NULL,
						has_lowkey ? &lowkey : NULL, &below, &nbelow, &maxbelow);
			if (BufferIsValid(prevbuf))
				UnlockReleaseBuffer(prevbuf);
			if (!TskPageIsRightmost(op))
			{
				TskPivot	hikey;

				tsk_pivot_read(BufferGetPage(buf), TSK_HIKEY, &hikey);
				lowkey = tsk_copy_entry(&hikey.key);
				has_lowkey = true;
			}
			prevblk = blkno;
			blkno = op->next;
			if (vs->parent_check)
				UnlockReleaseBuffer(buf);
			else
				prevbuf = buf;	/* held until its right neighbour is locked */
			i++;
			npages++;
		}
		if (BufferIsValid(prevbuf))
			UnlockReleaseBuffer(prevbuf);
		if (above && i != nabove)
			corrupt(index, prevblk, "level %d has %d pages, the level above names %d", level, i, nabove);
		if (vs->parent_check)
		{
			above = below;
			nabove = nbelow;
			leftmost = nbelow > 0 ? below[0].blkno : InvalidBlockNumber;
		}
		else
			leftmost = nbelow > 0 ? below[0].blkno : InvalidBlockNumber;
		top = false;
	}
	return npages;
}

/*
 * verify_all_pages: every page is in the tree, or deleted (waiting to be
 * reused), or new (an extension a crash interrupted): a failed split
 * leaves none behind.  Parent check only: a concurrent split adds pages.
 */
static void
verify_all_pages(VerifyState *vs, const bool *reached, BlockNumber npages)
{
	BlockNumber nfree = 0;

	for (BlockNumber b = 0; b < vs->nblocks; b++)
	{
		Buffer		buf;
		Page		page;

		if (reached[b])
			continue;
		CHECK_FOR_INTERRUPTS();
		buf = ReadBuffer(vs->index, b);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (!PageIsNew(page))
		{
			tsk_check_page(vs->index, buf);
			if (!TskPageIsDeleted(TskPageGetOpaque(page)))
				corrupt(vs->index, b, "a live page not in the tree");
		}
		nfree++;
		UnlockReleaseBuffer(buf);
	}
	if (npages + nfree != vs->nblocks)
		elog(ERROR, "tskey verify: %u pages counted of %u", npages + nfree, vs->nblocks);
}

/* tid_cmp: qsort comparator of heap TIDs. */
static int
tid_cmp(const void *a, const void *b)
{
	return ItemPointerCompare((ItemPointer) a, (ItemPointer) b);
}

/*
 * verify_heap_match: every visible heap tuple is reached by exactly one
 * entry (parent check: the entries' tuples were noted by check_entry_heap).
 */
static void
verify_heap_match(VerifyState *vs)
{
	TableScanDesc hscan;
	int64		nheap = 0;

	qsort(vs->visible, vs->nvisible, sizeof(ItemPointerData), tid_cmp);
	for (int64 j = 1; j < vs->nvisible; j++)
		if (ItemPointerEquals(&vs->visible[j - 1], &vs->visible[j]))
			corrupt(vs->index, InvalidBlockNumber, "heap tuple (%u,%u) is reached by two entries",
					ItemPointerGetBlockNumber(&vs->visible[j]), ItemPointerGetOffsetNumber(&vs->visible[j]));
	hscan = table_beginscan(vs->heap, vs->snapshot, 0, NULL);
	while (table_scan_getnextslot(hscan, ForwardScanDirection, vs->slot))
	{
		CHECK_FOR_INTERRUPTS();
		nheap++;
	}
	table_endscan(hscan);
	if (nheap != vs->nvisible)
		corrupt(vs->index, InvalidBlockNumber, "the heap has " INT64_FORMAT " visible tuples, the index reaches " INT64_FORMAT,
				nheap, vs->nvisible);
}

/*
 * open_checked: open the index of indexoid and its table in lockmode,
 * after checking that it is an index, of tskey, on two key columns, and
 * that the caller may read the table.
 */
static void
open_checked(Oid indexoid, LOCKMODE lockmode, Relation *heap, Relation *index)
{
	Oid			heapoid;
	AclResult	aclresult;

	/* a regclass can hold any OID: one of nothing, or of a dropped relation */
	if (get_rel_relkind(indexoid) == '\0' ||
		!OidIsValid(heapoid = IndexGetRelation(indexoid, true)))
	{
		char	   *name = get_rel_name(indexoid);

		if (name == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("relation with OID %u does not exist", indexoid)));
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an index", name)));
	}
	/* it reads every entity of the table: only for those who may */
	aclresult = pg_class_aclcheck(heapoid, GetUserId(), ACL_SELECT);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_TABLE, get_rel_name(heapoid));
	*heap = table_open(heapoid, lockmode);
	*index = index_open(indexoid, lockmode);
	if ((*index)->rd_indam->aminsert != tskinsert)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a tskey index", RelationGetRelationName(*index))));
	if ((*index)->rd_indexprs != NIL || (*index)->rd_index->indkey.values[0] == 0 ||
		(*index)->rd_index->indkey.values[1] == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("verify_index does not support expression indexes")));
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(verify_index);

/*
 * tablestore.verify_index(index regclass, parent_check boolean DEFAULT
 * true, heapallindexed boolean DEFAULT false) RETURNS void
 *
 * Raises an error (SQLSTATE XX002, index_corrupted) naming the first
 * problem found; returns quietly if there is none.  Called with one
 * argument (the 0.5.0 definition), it is the parent check.
 */
Datum
verify_index(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	bool		parent_check = PG_NARGS() > 1 ? PG_GETARG_BOOL(1) : true;
	bool		heapallindexed = PG_NARGS() > 2 ? PG_GETARG_BOOL(2) : false;
	Relation	heap;
	Relation	index;
	VerifyState vs;
	Buffer		buf;
	TskMetaData *meta;
	int			level;
	BlockNumber npages;
	bool	   *reached = NULL;
	LOCKMODE	lockmode;

	/*
	 * The parent check, as amcheck's bt_index_parent_check: a ShareLock on
	 * both keeps inserts, splits and VACUUM out while the levels are
	 * compared, so that nothing found is a change in progress.  A hot
	 * standby cannot take it (nor stop replay): there the check is exact
	 * only while replay of the index is idle.  The light check, as
	 * bt_index_check, lets them run.
	 */
	lockmode = (parent_check && !RecoveryInProgress()) ? ShareLock : AccessShareLock;
	open_checked(indexoid, lockmode, &heap, &index);

	memset(&vs, 0, sizeof(vs));
	vs.index = index;
	vs.heap = heap;
	vs.parent_check = parent_check;
	vs.snapshot = RegisterSnapshot(GetTransactionSnapshot());
	vs.fetch = table_index_fetch_begin(heap);
	vs.slot = table_slot_create(heap, NULL);
	vs.maxvisible = 1024;
	vs.visible = palloc(vs.maxvisible * sizeof(ItemPointerData));
	vs.entries = palloc(TSK_MAX_ENTRIES_PER_PAGE * sizeof(TskEntry));
	vs.nblocks = RelationGetNumberOfBlocks(index);
	vs.heapblocks = RelationGetNumberOfBlocks(heap);
	vs.entrycxt = AllocSetContextCreate(CurrentMemoryContext, "tskey verify entry",
										ALLOCSET_DEFAULT_SIZES);
	if (vs.nblocks < 2)
		corrupt(index, InvalidBlockNumber, "%u blocks, fewer than a metapage and a root", vs.nblocks);
	if (heapallindexed)
	{
		/* sized from the index's tuple count, at least a few per page */
		int64		total = Max((int64) index->rd_rel->reltuples, (int64) vs.nblocks * 64);

		vs.bloom = bloom_create(total, maintenance_work_mem,
								pg_prng_uint64(&pg_global_prng_state));
	}
	if (parent_check)
	{
		reached = palloc0(vs.nblocks * sizeof(bool));
		reached[TSK_METAPAGE_BLKNO] = true;
	}

	buf = ReadBuffer(index, TSK_METAPAGE_BLKNO);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	meta = (TskMetaData *) PageGetContents(BufferGetPage(buf));
	if (PageIsNew(BufferGetPage(buf)) || meta->magic != TSK_MAGIC || meta->version != TSK_VERSION)
		corrupt(index, TSK_METAPAGE_BLKNO, "not a tskey metapage");
	UnlockReleaseBuffer(buf);

	buf = tsk_getbuf(index, TSK_ROOT_BLKNO, BUFFER_LOCK_SHARE);
	level = TskPageGetOpaque(BufferGetPage(buf))->level;
	if (TskPageGetOpaque(BufferGetPage(buf))->next != InvalidBlockNumber)
		corrupt(index, TSK_ROOT_BLKNO, "the root has a right sibling");
	UnlockReleaseBuffer(buf);

	npages = 1 + verify_levels(&vs, level, reached);	/* and the metapage */
	if (parent_check)
	{
		verify_all_pages(&vs, reached, npages);
		verify_heap_match(&vs);
	}
	if (heapallindexed)
	{
		verify_heapallindexed(&vs);
		bloom_free(vs.bloom);
	}

	table_index_fetch_end(vs.fetch);
	ExecDropSingleTupleTableSlot(vs.slot);
	UnregisterSnapshot(vs.snapshot);
	MemoryContextDelete(vs.entrycxt);
	index_close(index, lockmode);
	table_close(heap, lockmode);
	PG_RETURN_VOID();
}
