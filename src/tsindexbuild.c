/*-------------------------------------------------------------------------
 *
 * tsindexbuild.c
 *	  tskey index: the sorted bottom-up build (CREATE INDEX, REINDEX) and
 *	  the empty index of an unlogged table.
 *
 * The heap's (pk, rk, TID) are sorted by a tuplesort with the operator
 * class's own "<" (the key type's, whose btree family gives the service's
 * order), then written left to right: leaves filled to fillfactor, each
 * finished page's first key passed up as a pivot to the level above, and
 * the one page of the top level written to block 1, the root.  Pages go
 * through shared buffers unlogged and the whole index is WAL-logged once at
 * the end.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tableam.h"
#include "access/xloginsert.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/smgr.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/tuplesort.h"

#include "tablestore.h"
#include "tsindex.h"

#define TSK_MAX_LEVELS	32

/* The page being filled on one level. */
typedef struct BuildLevel
{
	Page		page;
	BlockNumber blkno;			/* InvalidBlockNumber while it is the level's only page */
	TskEntry	lowkey;			/* its first key: its pivot in the level above */
	int			npages;
} BuildLevel;

typedef struct BuildState
{
	Relation	index;
	Tuplesortstate *sort;
	TupleTableSlot *slot;
	double		indtuples;
	BlockNumber nextblk;		/* next block number to hand out */
	Size		usable;			/* bytes for items on a page */
	Size		leaf_target;	/* leaf bytes to fill to (fillfactor) */
	int			nlevels;
	BuildLevel	levels[TSK_MAX_LEVELS];
	/* the current leaf's entries, their copies in leafcxt */
	TskEntry   *entries;
	int			n;
	Size		used;			/* bytes of entries[0..n) as runs */
	Size		runbody;		/* bytes of entries in the last run */
	MemoryContext leafcxt;
} BuildState;

/* pivot_space: the bytes a pivot for the key takes on a page. */
static Size
pivot_space(const TskEntry *key)
{
	return MAXALIGN(tsk_pivot_size(key)) + sizeof(ItemIdData);
}

/*
 * write_page: write a finished page at blkno through shared buffers,
 * extending the relation with empty pages up to it if need be (block
 * numbers are handed out before the pages are written).
 */
static void
write_page(BuildState *bs, BlockNumber blkno, Page page)
{
	Buffer		buf;

	while (RelationGetNumberOfBlocks(bs->index) <= blkno)
	{
		buf = ReadBufferExtended(bs->index, MAIN_FORKNUM, P_NEW, RBM_ZERO_AND_LOCK, NULL);
		UnlockReleaseBuffer(buf);
	}
	buf = ReadBufferExtended(bs->index, MAIN_FORKNUM, blkno, RBM_ZERO_AND_LOCK, NULL);
	memcpy(BufferGetPage(buf), page, BLCKSZ);
	MarkBufferDirty(buf);
	UnlockReleaseBuffer(buf);
}

static void add_pivot(BuildState *bs, int level, BlockNumber child, const TskEntry *key);

/*
 * finish_page: the level's current page is full and next starts the next
 * page: give both block numbers, link them, write the current page with
 * next as its high key, pass its pivot up, and start the next one.
 */
static void
finish_page(BuildState *bs, int level, const TskEntry *next)
{
	BuildLevel *lv = &bs->levels[level];
	TskPageOpaque op = TskPageGetOpaque(lv->page);
	BlockNumber nextblk;

	if (lv->blkno == InvalidBlockNumber)
		lv->blkno = bs->nextblk++;
	nextblk = bs->nextblk++;
	op->next = nextblk;
	if (level > 0 && !tsk_page_add_pivot(lv->page, TSK_HIKEY, InvalidBlockNumber, next))
		elog(ERROR, "tskey build: high key does not fit");
	write_page(bs, lv->blkno, lv->page);
	add_pivot(bs, level + 1, lv->blkno, &lv->lowkey);

	tsk_init_page(lv->page, level, lv->blkno, InvalidBlockNumber);
	lv->blkno = nextblk;
	lv->lowkey = tsk_copy_entry(next);
	lv->npages++;
}

/* start_level: the first page of a new level. */
static void
start_level(BuildState *bs, int level, const TskEntry *lowkey)
{
	BuildLevel *lv = &bs->levels[level];

	if (level >= TSK_MAX_LEVELS)
		elog(ERROR, "tskey build: too many levels");
	lv->page = palloc(BLCKSZ);
	tsk_init_page(lv->page, level, InvalidBlockNumber, InvalidBlockNumber);
	lv->blkno = InvalidBlockNumber;
	lv->lowkey = tsk_copy_entry(lowkey);
	lv->npages = 1;
	bs->nlevels = level + 1;
}

/*
 * add_pivot: add a child's pivot to an internal level, starting a new page
 * when this one would keep less room than a maximal pivot (for its high key,
 * and so that it is safe for the first split below it).
 */
static void
add_pivot(BuildState *bs, int level, BlockNumber child, const TskEntry *key)
{
	MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(bs));

	if (level >= bs->nlevels)
		start_level(bs, level, key);
	else if (PageGetFreeSpace(bs->levels[level].page) < pivot_space(key) + TSK_MAX_PIVOT_SPACE)
		finish_page(bs, level, key);
	if (!tsk_page_add_pivot(bs->levels[level].page, InvalidOffsetNumber, child, key))
		elog(ERROR, "tskey build: pivot does not fit");
	MemoryContextSwitchTo(old);
}

/*
 * flush_leaf: write the current leaf with next (if any) as its high key.
 * Entries that would leave no room for the high key move to the next page.
 * Returns how many entries were kept back, now at entries[0..).
 */
static int
flush_leaf(BuildState *bs, const TskEntry *next)
{
	BuildLevel *lv = &bs->levels[0];
	TskEntry	hikey;
	BlockNumber nextblk = InvalidBlockNumber;
	int			keep = bs->n;
	int			carried;
	MemoryContext newcxt,
				old;
	int			i;

	if (next)
	{
		hikey = *next;
		while (keep > 1 && tsk_leaf_size(bs->entries, keep) + pivot_space(&hikey) > bs->usable)
			hikey = bs->entries[--keep];
		if (lv->blkno == InvalidBlockNumber)
			lv->blkno = bs->nextblk++;
		nextblk = bs->nextblk++;
		TskPageGetOpaque(lv->page)->next = nextblk;
	}
	if (!tsk_leaf_encode(lv->page, next ? &hikey : NULL, bs->entries, keep))
		elog(ERROR, "tskey build: leaf does not fit");
	if (!next)
		return 0;

	write_page(bs, lv->blkno, lv->page);
	old = MemoryContextSwitchTo(GetMemoryChunkContext(bs));
	add_pivot(bs, 1, lv->blkno, &lv->lowkey);
	tsk_init_page(lv->page, 0, lv->blkno, InvalidBlockNumber);
	lv->blkno = nextblk;
	lv->npages++;
	MemoryContextSwitchTo(old);

	/* the carried entries and the new low key into a fresh context */
	carried = bs->n - keep;
	newcxt = AllocSetContextCreate(GetMemoryChunkContext(bs), "tskey build leaf", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(newcxt);
	for (i = 0; i < carried; i++)
		bs->entries[i] = tsk_copy_entry(&bs->entries[keep + i]);
	lv->lowkey = tsk_copy_entry(carried > 0 ? &bs->entries[0] : next);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(bs->leafcxt);
	bs->leafcxt = newcxt;
	bs->n = carried;
	bs->used = tsk_leaf_size(bs->entries, carried);
	bs->runbody = 0;
	for (i = carried - 1; i >= 0 && tsk_key_eq(bs->entries[i].pk, bs->entries[carried - 1].pk); i--)
		bs->runbody += TSK_RUN_ENTRY_HDR + TSK_LEN(bs->entries[i].rk.word);
	return carried;
}

/*
 * add_entry: add the next entry in order to the leaf level, tracking the
 * size of the runs as tsk_leaf_encode will group them (a run grows while it
 * has one pk and stays within TSK_RUN_TARGET bytes of entries).
 */
static void
add_entry(BuildState *bs, const TskEntry *e)
{
	Size		esz = TSK_RUN_ENTRY_HDR + TSK_LEN(e->rk.word);
	Size		delta;
	Size		runhdr;
	MemoryContext old;

	if (bs->nlevels == 0)
	{
		old = MemoryContextSwitchTo(GetMemoryChunkContext(bs));
		start_level(bs, 0, e);
		MemoryContextSwitchTo(old);
	}
	for (;;)
	{
		runhdr = TSK_RUN_HDR + TSK_LEN(e->pk.word);
		if (bs->n > 0 && tsk_key_eq(bs->entries[bs->n - 1].pk, e->pk) &&
			bs->runbody + esz <= TSK_RUN_TARGET)
			delta = MAXALIGN(runhdr + bs->runbody + esz) - MAXALIGN(runhdr + bs->runbody);
		else
			delta = MAXALIGN(runhdr + esz) + sizeof(ItemIdData);
		if (bs->n == 0 || bs->used + delta <= bs->leaf_target)
			break;
		flush_leaf(bs, e);
	}
	if (bs->n > 0 && tsk_key_eq(bs->entries[bs->n - 1].pk, e->pk) &&
		bs->runbody + esz <= TSK_RUN_TARGET)
		bs->runbody += esz;
	else
		bs->runbody = esz;
	bs->used += delta;
	old = MemoryContextSwitchTo(bs->leafcxt);
	bs->entries[bs->n++] = tsk_copy_entry(e);
	MemoryContextSwitchTo(old);
}

/*
 * finish_levels: write the last page of every level; the top level's only
 * page is the root, at block 1.
 */
static void
finish_levels(BuildState *bs)
{
	int			level;

	if (bs->nlevels == 0)
	{
		PGAlignedBlock root;

		tsk_init_page(root.data, 0, InvalidBlockNumber, InvalidBlockNumber);
		write_page(bs, TSK_ROOT_BLKNO, root.data);
		return;
	}
	flush_leaf(bs, NULL);
	for (level = 0; level < bs->nlevels; level++)
	{
		BuildLevel *lv = &bs->levels[level];

		if (lv->blkno == InvalidBlockNumber)
		{
			Assert(level == bs->nlevels - 1);
			write_page(bs, TSK_ROOT_BLKNO, lv->page);
			break;
		}
		write_page(bs, lv->blkno, lv->page);
		add_pivot(bs, level + 1, lv->blkno, &lv->lowkey);
	}
}

/* build_callback: one heap tuple into the sort. */
static void
build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool tupleIsAlive, void *state)
{
	BuildState *bs = (BuildState *) state;
	TupleTableSlot *slot = bs->slot;

	if (isnull[0] || isnull[1])
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("tskey index \"%s\" cannot hold null keys", RelationGetRelationName(index))));
	ExecClearTuple(slot);
	slot->tts_values[0] = values[0];
	slot->tts_values[1] = values[1];
	slot->tts_values[2] = PointerGetDatum(tid);
	slot->tts_values[3] = BoolGetDatum(tupleIsAlive);
	memset(slot->tts_isnull, 0, 4 * sizeof(bool));
	ExecStoreVirtualTuple(slot);
	tuplesort_puttupleslot(bs->sort, slot);
	bs->indtuples++;
}

/*
 * check_columns: refuse an index the access method cannot serve: exactly
 * two key columns, in ascending order (DESC and NULLS FIRST are not
 * implemented).
 */
static void
check_columns(Relation index)
{
	int			i;

	if (IndexRelationGetNumberOfKeyAttributes(index) != 2 ||
		IndexRelationGetNumberOfAttributes(index) != 2)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a tskey index must have exactly two key columns, (PartitionKey, RowKey)")));
	for (i = 0; i < 2; i++)
		if (index->rd_indoption[i] != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("tskey indexes support neither DESC nor NULLS FIRST")));
}

/*
 * tskbuild: ambuild.  Sorts the heap's keys and writes the tree bottom up;
 * a unique index refuses two live tuples with one key.
 */
IndexBuildResult *
tskbuild(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result;
	BuildState *bs;
	TupleDesc	desc;
	AttrNumber	attnums[3] = {1, 2, 3};
	Oid			sortops[3];
	Oid			colls[3];
	bool		nullsfirst[3] = {false, false, false};
	TupleTableSlot *outslot;
	double		heap_tuples;
	PGAlignedBlock meta;
	TskEntry	prev;
	bool		prev_alive = false;
	bool		have_prev = false;
	MemoryContext tmpcxt,
				old;
	int			i;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data", RelationGetRelationName(index));
	check_columns(index);

	bs = palloc0(sizeof(BuildState));
	bs->index = index;
	bs->nextblk = TSK_ROOT_BLKNO + 1;
	bs->usable = BLCKSZ - SizeOfPageHeaderData - MAXALIGN(sizeof(TskPageOpaqueData));
	bs->leaf_target = bs->usable * tsk_fillfactor(index) / 100;
	bs->entries = palloc(TSK_MAX_ENTRIES_PER_PAGE * sizeof(TskEntry));
	bs->leafcxt = AllocSetContextCreate(CurrentMemoryContext, "tskey build leaf", ALLOCSET_DEFAULT_SIZES);

	desc = CreateTemplateTupleDesc(4);
	for (i = 0; i < 2; i++)
	{
		Oid			type = index->rd_opcintype[i];

		TupleDescInitEntry(desc, i + 1, NULL, type, -1, 0);
		sortops[i] = get_opfamily_member(index->rd_opfamily[i], type, type, BTLessStrategyNumber);
		if (!OidIsValid(sortops[i]))
			elog(ERROR, "operator family %u has no \"<\" for type %u", index->rd_opfamily[i], type);
		colls[i] = index->rd_indcollation[i];
	}
	TupleDescInitEntry(desc, 3, NULL, TIDOID, -1, 0);
	TupleDescInitEntry(desc, 4, NULL, BOOLOID, -1, 0);
	sortops[2] = TIDLessOperator;
	colls[2] = InvalidOid;
	bs->slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
	outslot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	bs->sort = tuplesort_begin_heap(desc, 3, attnums, sortops, colls, nullsfirst,
									maintenance_work_mem, NULL, TUPLESORT_NONE);

	/* block 0 now, so that the metapage comes first */
	tsk_init_metapage(meta.data);
	write_page(bs, TSK_METAPAGE_BLKNO, meta.data);

	heap_tuples = table_index_build_scan(heap, index, indexInfo, true, true,
										 build_callback, bs, NULL);
	tuplesort_performsort(bs->sort);

	tmpcxt = AllocSetContextCreate(CurrentMemoryContext, "tskey build tuple", ALLOCSET_DEFAULT_SIZES);
	while (tuplesort_gettupleslot(bs->sort, true, false, outslot, NULL))
	{
		TskEntry	e;
		bool		isnull;
		bool		alive;

		CHECK_FOR_INTERRUPTS();
		old = MemoryContextSwitchTo(tmpcxt);
		e.pk = tsk_encode_key(slot_getattr(outslot, 1, &isnull));
		e.rk = tsk_encode_key(slot_getattr(outslot, 2, &isnull));
		e.tid = *(ItemPointer) DatumGetPointer(slot_getattr(outslot, 3, &isnull));
		alive = DatumGetBool(slot_getattr(outslot, 4, &isnull));
		MemoryContextSwitchTo(old);

		if (have_prev && tsk_key_eq(prev.pk, e.pk) && tsk_key_eq(prev.rk, e.rk))
		{
			if (alive && prev_alive && indexInfo->ii_Unique)
			{
				/* the keys clipped, as every message echoes a key */
				char	   *pk = tsk_key_text(e.pk);
				char	   *rk = tsk_key_text(e.rk);

				ereport(ERROR,
						(errcode(ERRCODE_UNIQUE_VIOLATION),
						 errmsg("could not create unique index \"%s\"", RelationGetRelationName(index)),
						 errdetail("Key (\"%s\", \"%s\") is duplicated.",
								   ts_clip(pk, strlen(pk)), ts_clip(rk, strlen(rk)))));
			}
			prev_alive = prev_alive || alive;
		}
		else
			prev_alive = alive;
		add_entry(bs, &e);
		prev = bs->entries[bs->n - 1];
		have_prev = true;
		MemoryContextReset(tmpcxt);
	}
	tuplesort_end(bs->sort);
	finish_levels(bs);

	if (RelationNeedsWAL(index))
		log_newpage_range(index, MAIN_FORKNUM, 0, RelationGetNumberOfBlocks(index), true);

	ExecDropSingleTupleTableSlot(bs->slot);
	ExecDropSingleTupleTableSlot(outslot);
	result = palloc(sizeof(IndexBuildResult));
	result->heap_tuples = heap_tuples;
	result->index_tuples = bs->indtuples;
	return result;
}

/*
 * tskbuildempty: the init fork of an unlogged index: metapage and an empty
 * root, WAL-logged so that the fork survives a crash.
 */
void
tskbuildempty(Relation index)
{
	PGAlignedBlock page;
	SMgrRelation srel = RelationGetSmgr(index);

	tsk_init_metapage(page.data);
	PageSetChecksumInplace(page.data, TSK_METAPAGE_BLKNO);
	smgrextend(srel, INIT_FORKNUM, TSK_METAPAGE_BLKNO, page.data, true);
	log_newpage(&srel->smgr_rnode.node, INIT_FORKNUM, TSK_METAPAGE_BLKNO, page.data, true);

	tsk_init_page(page.data, 0, InvalidBlockNumber, InvalidBlockNumber);
	PageSetChecksumInplace(page.data, TSK_ROOT_BLKNO);
	smgrextend(srel, INIT_FORKNUM, TSK_ROOT_BLKNO, page.data, true);
	log_newpage(&srel->smgr_rnode.node, INIT_FORKNUM, TSK_ROOT_BLKNO, page.data, true);

	smgrimmedsync(srel, INIT_FORKNUM);
}
