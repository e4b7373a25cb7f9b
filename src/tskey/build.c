/*-------------------------------------------------------------------------
 *
 * build.c
 *	  tskey index: the sorted bottom-up build (CREATE INDEX, REINDEX) and
 *	  the empty index of an unlogged table.
 *
 * The heap's (pk, rk, TID) are sorted in the order of one byte string each
 * whose memcmp order is the index's (sort keys, below): in memory, each
 * PartitionKey stored once and ranked (buildsort.c), or, once the entries
 * outgrow maintenance_work_mem, as the byte strings by the tuplesort (as
 * bytea); then the entries are written left to right: leaves filled to fillfactor, each
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

#include "errors.h"
#include "tskey_int.h"
#include "buildsort.h"

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
	BuildSort  *msort;			/* the in-memory sort, or NULL after a spill */
	Tuplesortstate *sort;		/* the tuplesort, once the entries outgrew memory */
	MemoryContext keycxt;		/* a sort key being formed */
	char	   *scratch;		/* pk' and rk' of the tuple being added */
	Size		scratchlen;
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
	TskEntry	minus_inf;

	if (level >= bs->nlevels)
		start_level(bs, level, key);
	else if (PageGetFreeSpace(bs->levels[level].page) < pivot_space(key) + TSK_MAX_PIVOT_SPACE)
		finish_page(bs, level, key);
	/* a page's first pivot stands for minus infinity: written empty */
	memset(&minus_inf, 0, sizeof(minus_inf));
	if (!tsk_page_add_pivot(bs->levels[level].page, InvalidOffsetNumber, child,
							PageGetMaxOffsetNumber(bs->levels[level].page) == 0 ? &minus_inf : key))
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

/*
 * Sort keys.  A key's UTF-8 bytes in memcmp order are its code points'
 * order; the service's order is by UTF-16 code unit, which differs only in
 * that U+E000..U+FFFF (UTF-8 lead bytes 0xEE and 0xEF) sort after the
 * supplementary characters (lead bytes 0xF0..0xF4).  Mapping the bytes 0xEE
 * and 0xEF to 0xF5 and 0xF6, which no UTF-8 string contains (and which as
 * continuation bytes cannot occur), makes memcmp give the UTF-16 order.  A
 * NUL byte (never in text) ends each key, so a key sorts before its
 * extensions.  The sort key of an entry is then {pk', 0, rk', 0, heap
 * block (4 bytes, big-endian), offset (2), alive (1)}: memcmp on it is the
 * index's order of (pk, rk, TID); the last byte never decides, as TIDs are
 * unique.
 */
static inline void
sortable_copy(char *dst, const char *src, int len)
{
	for (int i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) src[i];

		dst[i] = c == 0xEE ? 0xF5 : c == 0xEF ? 0xF6 : c;
	}
}

static inline void
sortable_undo(char *p, int len)
{
	for (int i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) p[i];

		if (c == 0xF5 || c == 0xF6)
			p[i] = c == 0xF5 ? 0xEE : 0xEF;
	}
}

/*
 * tuplesort_put_key: one entry into the tuplesort as its sort key {pk', 0,
 * rk', 0, tail}, pk' and rk' already sortable, tail the TID's 6 bytes
 * (big-endian) and the liveness byte.
 */
static void
tuplesort_put_key(void *arg, const char *pk, int pklen, const char *rk, int rklen,
				  const char *tail)
{
	BuildState *bs = (BuildState *) arg;
	MemoryContext old = MemoryContextSwitchTo(bs->keycxt);
	bytea	   *key = palloc(VARHDRSZ + pklen + rklen + 9);
	char	   *p = VARDATA(key);

	SET_VARSIZE(key, VARHDRSZ + pklen + rklen + 9);
	memcpy(p, pk, pklen);
	p += pklen;
	*p++ = 0;
	memcpy(p, rk, rklen);
	p += rklen;
	*p++ = 0;
	memcpy(p, tail, 7);
	tuplesort_putdatum(bs->sort, PointerGetDatum(key), false);
	MemoryContextSwitchTo(old);
	MemoryContextReset(bs->keycxt);
}

/*
 * spill: the entries outgrew maintenance_work_mem in memory: start the
 * tuplesort, which can go to disk, and move them there.
 */
static void
spill(BuildState *bs)
{
	bs->sort = tuplesort_begin_datum(BYTEAOID, ByteaLessOperator, InvalidOid, false,
									 maintenance_work_mem, NULL, TUPLESORT_NONE);
	buildsort_spill(bs->msort, tuplesort_put_key, bs);
	bs->msort = NULL;
}

/*
 * build_callback: one heap tuple into the sort: its keys' sortable bytes,
 * TID and liveness into the in-memory sort, or as its sort key into the
 * tuplesort once the entries have outgrown memory.
 */
static void
build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool tupleIsAlive, void *state)
{
	BuildState *bs = (BuildState *) state;
	MemoryContext old;
	text	   *pk,
			   *rk;
	int			pklen,
				rklen;
	char	   *p;

	if (isnull[0] || isnull[1])
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("tskey index \"%s\" cannot hold null keys", RelationGetRelationName(index))));
	old = MemoryContextSwitchTo(bs->keycxt);
	pk = (text *) PG_DETOAST_DATUM_PACKED(values[0]);
	rk = (text *) PG_DETOAST_DATUM_PACKED(values[1]);
	MemoryContextSwitchTo(old);
	pklen = VARSIZE_ANY_EXHDR(pk);
	rklen = VARSIZE_ANY_EXHDR(rk);
	if (bs->scratchlen < (Size) pklen + rklen)
	{
		bs->scratchlen = Max((Size) pklen + rklen, 2 * bs->scratchlen);
		bs->scratch = repalloc_huge(bs->scratch, bs->scratchlen);
	}
	p = bs->scratch;
	sortable_copy(p, VARDATA_ANY(pk), pklen);
	sortable_copy(p + pklen, VARDATA_ANY(rk), rklen);

	/* keys longer than a stored key can be are refused after the sort, in order */
	if (bs->msort && (rklen > PG_UINT16_MAX ||
					  !buildsort_put(bs->msort, p, pklen, p + pklen, rklen, tid, tupleIsAlive)))
		spill(bs);
	if (!bs->msort)
	{
		BlockNumber blk = ItemPointerGetBlockNumber(tid);
		OffsetNumber off = ItemPointerGetOffsetNumber(tid);
		char		tail[7];

		tail[0] = blk >> 24;
		tail[1] = blk >> 16;
		tail[2] = blk >> 8;
		tail[3] = blk;
		tail[4] = off >> 8;
		tail[5] = off;
		tail[6] = tupleIsAlive;
		tuplesort_put_key(bs, p, pklen, p + pklen, rklen, tail);
	}
	MemoryContextReset(bs->keycxt);
	bs->indtuples++;
}

/*
 * read_sort_key: the entry of a sort key (keys pointing into it, whose
 * bytes are mapped back in place), and whether its tuple is alive.
 */
static void
read_sort_key(bytea *key, TskEntry *e, bool *alive)
{
	char	   *p = VARDATA(key);
	char	   *end = p + VARSIZE(key) - VARHDRSZ;
	int			pklen = strnlen(p, end - p);
	char	   *r = p + pklen + 1;
	int			rklen;
	const unsigned char *t;

	if (r >= end)
		elog(ERROR, "tskey build: malformed sort key");
	rklen = strnlen(r, end - r);
	t = (const unsigned char *) r + rklen + 1;
	if ((const char *) t + 7 != end)
		elog(ERROR, "tskey build: malformed sort key");
	sortable_undo(p, pklen);
	sortable_undo(r, rklen);
	e->pk = tsk_encode_key_bytes(p, pklen);
	e->rk = tsk_encode_key_bytes(r, rklen);
	ItemPointerSet(&e->tid, ((BlockNumber) t[0] << 24) | ((BlockNumber) t[1] << 16) |
				   ((BlockNumber) t[2] << 8) | t[3], ((OffsetNumber) t[4] << 8) | t[5]);
	*alive = t[6] != 0;
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

/* The entry written last, for the unique check. */
typedef struct PrevEntry
{
	TskEntry	e;
	bool		alive;			/* any of the entries with its keys is */
	bool		valid;
} PrevEntry;

/*
 * write_entry: the next entry in order into the leaf level, after checking
 * that a unique index gets no second live tuple with its keys.
 */
static void
write_entry(BuildState *bs, IndexInfo *indexInfo, PrevEntry *prev, const TskEntry *e, bool alive)
{
	if (prev->valid && tsk_key_eq(prev->e.pk, e->pk) && tsk_key_eq(prev->e.rk, e->rk))
	{
		if (alive && prev->alive && indexInfo->ii_Unique)
		{
			/* the keys clipped, as every message echoes a key */
			char	   *pk = tsk_key_text(e->pk);
			char	   *rk = tsk_key_text(e->rk);

			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("could not create unique index \"%s\"", RelationGetRelationName(bs->index)),
					 errdetail("Key (\"%s\", \"%s\") is duplicated.",
							   ts_clip(pk, strlen(pk)), ts_clip(rk, strlen(rk)))));
		}
		prev->alive = prev->alive || alive;
	}
	else
		prev->alive = alive;
	add_entry(bs, e);
	prev->e = bs->entries[bs->n - 1];
	prev->valid = true;
}

/*
 * write_from_memory: the entries of the in-memory sort in order into the
 * tree.  Each pk' is mapped back and encoded once per partition; a key is
 * read where the sort holds it.
 */
static void
write_from_memory(BuildState *bs, IndexInfo *indexInfo)
{
	MemoryContext tmpcxt = AllocSetContextCreate(CurrentMemoryContext, "tskey build tuple",
												 ALLOCSET_DEFAULT_SIZES);
	MemoryContext pkcxt = AllocSetContextCreate(CurrentMemoryContext, "tskey build pk",
												ALLOCSET_DEFAULT_SIZES);
	MemoryContext old;
	PrevEntry	prev = {0};
	TskEntry	e;
	char	   *pk,
			   *rk;
	int			pklen,
				rklen;
	bool		newpk,
				alive;

	buildsort_perform(bs->msort);
	while (buildsort_next(bs->msort, &pk, &pklen, &newpk, &rk, &rklen, &e.tid, &alive))
	{
		CHECK_FOR_INTERRUPTS();
		if (newpk)
		{
			MemoryContextReset(pkcxt);
			old = MemoryContextSwitchTo(pkcxt);
			sortable_undo(pk, pklen);
			e.pk = tsk_encode_key_bytes(pk, pklen);
			MemoryContextSwitchTo(old);
		}
		old = MemoryContextSwitchTo(tmpcxt);
		sortable_undo(rk, rklen);
		e.rk = tsk_encode_key_bytes(rk, rklen);
		MemoryContextSwitchTo(old);
		write_entry(bs, indexInfo, &prev, &e, alive);
		MemoryContextReset(tmpcxt);
	}
	buildsort_end(bs->msort);
	bs->msort = NULL;
	MemoryContextDelete(pkcxt);
	MemoryContextDelete(tmpcxt);
}

/* write_from_tuplesort: the tuplesort's entries in order into the tree. */
static void
write_from_tuplesort(BuildState *bs, IndexInfo *indexInfo)
{
	MemoryContext tmpcxt = AllocSetContextCreate(CurrentMemoryContext, "tskey build tuple",
												 ALLOCSET_DEFAULT_SIZES);
	MemoryContext old;
	PrevEntry	prev = {0};

	tuplesort_performsort(bs->sort);
	for (;;)
	{
		TskEntry	e;
		bool		alive;
		bool		more;
		Datum		d;
		bool		isnull;

		CHECK_FOR_INTERRUPTS();
		/* the sort returns a copy, in tmpcxt */
		old = MemoryContextSwitchTo(tmpcxt);
		more = tuplesort_getdatum(bs->sort, true, &d, &isnull, NULL);
		if (more)
			read_sort_key(DatumGetByteaP(d), &e, &alive);
		MemoryContextSwitchTo(old);
		if (!more)
			break;
		write_entry(bs, indexInfo, &prev, &e, alive);
		MemoryContextReset(tmpcxt);
	}
	tuplesort_end(bs->sort);
	bs->sort = NULL;
	MemoryContextDelete(tmpcxt);
}

/*
 * tskbuild: ambuild.  Sorts the heap's keys (in memory, or by the
 * tuplesort when they outgrow maintenance_work_mem) and writes the tree
 * bottom up; a unique index refuses two live tuples with one key.
 */
IndexBuildResult *
tskbuild(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result;
	BuildState *bs;
	double		heap_tuples;
	PGAlignedBlock meta;

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

	bs->keycxt = AllocSetContextCreate(CurrentMemoryContext, "tskey build key", ALLOCSET_DEFAULT_SIZES);
	bs->scratchlen = 1024;
	bs->scratch = palloc(bs->scratchlen);
	bs->msort = buildsort_begin();

	/* block 0 now, so that the metapage comes first */
	tsk_init_metapage(meta.data);
	write_page(bs, TSK_METAPAGE_BLKNO, meta.data);

	heap_tuples = table_index_build_scan(heap, index, indexInfo, true, true,
										 build_callback, bs, NULL);
	if (bs->msort)
		write_from_memory(bs, indexInfo);
	else
		write_from_tuplesort(bs, indexInfo);
	finish_levels(bs);

	if (RelationNeedsWAL(index))
		log_newpage_range(index, MAIN_FORKNUM, 0, RelationGetNumberOfBlocks(index), true);

	MemoryContextDelete(bs->keycxt);
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
