/*-------------------------------------------------------------------------
 *
 * tsindex.h
 *	  The tskey index access method: a B-link tree on (PartitionKey, RowKey)
 *	  in the service's key order, unique, logged with generic WAL.
 *
 * doc/index-am.md describes the design.  Files:
 *	  tsindex.c			handler, options, validation, cost estimate
 *	  tsindexpage.c		key encoding and comparison, page layout, descent
 *	  tsindexbuild.c	sorted bottom-up build, the empty index
 *	  tsindexinsert.c	insertion, the unique check, page splits
 *	  tsindexscan.c		ordered and bitmap scans
 *	  tsindexvacuum.c	bulk delete, page deletion and cleanup
 *	  tsindexverify.c	tablestore.verify_index()
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSINDEX_H
#define TSINDEX_H

#include "postgres.h"

#include "access/amapi.h"
#include "access/genam.h"
#include "access/itup.h"
#include "access/transam.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "utils/relcache.h"

/* Fixed blocks. */
#define TSK_METAPAGE_BLKNO		0
#define TSK_ROOT_BLKNO			1

#define TSK_MAGIC				0x54534B31	/* "TSK1" */
#define TSK_VERSION				1
#define TSK_PAGE_ID				0xFF8A	/* in every page's special space */

/*
 * A stored key is at most TSK_MAX_KEY_BYTES: 512 UTF-16 code units, in the
 * shorter of UTF-8 and UTF-16BE.  Its length word has TSK_UTF16 set for
 * UTF-16BE.
 */
#define TSK_MAX_KEY_BYTES		1024
#define TSK_UTF16				0x8000
#define TSK_LEN(w)				((w) & 0x7FFF)

/* Bytes of entries a leaf run holds before a new run is started. */
#define TSK_RUN_TARGET			256

/* Page special space. */
typedef struct TskPageOpaqueData
{
	BlockNumber prev;			/* left sibling, or InvalidBlockNumber */
	BlockNumber next;			/* right sibling, or InvalidBlockNumber */
	uint16		level;			/* 0 for leaves */
	uint16		flags;
	uint16		page_id;		/* TSK_PAGE_ID */
} TskPageOpaqueData;

typedef TskPageOpaqueData *TskPageOpaque;

#define TSK_META				0x0001
#define TSK_DELETED				0x0002	/* unlinked; reusable after safexid */

#define TskPageGetOpaque(page) ((TskPageOpaque) PageGetSpecialPointer(page))
#define TskPageIsDeleted(op)	(((op)->flags & TSK_DELETED) != 0)
#define TskPageIsRightmost(op)	((op)->next == InvalidBlockNumber)
/* line pointer of the high key, and of the first data item */
#define TSK_HIKEY				((OffsetNumber) 1)
#define TskFirstData(op)		(TskPageIsRightmost(op) ? TSK_HIKEY : OffsetNumberNext(TSK_HIKEY))

/*
 * The contents of a deleted page: the next transaction ID when it was
 * deleted.  Once no transaction that could still hold a link to it is
 * running, the page may be reused (tsk_page_recyclable).
 */
typedef struct TskDeletedData
{
	FullTransactionId safexid;
} TskDeletedData;

typedef struct TskMetaData
{
	uint32		magic;
	uint32		version;
} TskMetaData;

/* A key in stored form: bytes and length word, pointing into some memory. */
typedef struct TskKey
{
	const char *data;
	uint16		word;			/* length | TSK_UTF16 */
} TskKey;

/* One index entry: (pk, rk, heap TID). */
typedef struct TskEntry
{
	TskKey		pk;
	TskKey		rk;
	ItemPointerData tid;
} TskEntry;

/*
 * A pivot (internal item or high key), as decoded.  The child of a high key
 * is InvalidBlockNumber.
 */
typedef struct TskPivot
{
	BlockNumber child;
	TskEntry	key;
} TskPivot;

/*
 * A search key: a prefix of (pk, rk, tid) of nkeys attributes; when nkeys
 * is under 3, side says whether it sorts before (-1) or after (+1) every
 * entry having that prefix.
 */
typedef struct TskSearchKey
{
	int			nkeys;
	int			side;
	TskEntry	key;
} TskSearchKey;

/*
 * A walk along sibling links, counting its pages so that a cycle of links
 * (which only corrupt pages can make) is an error, not an endless loop.
 */
typedef struct TskWalk
{
	uint32		steps;
	uint32		limit;
} TskWalk;

#define TSK_WALK_INIT	{0, 64}

/* Index reloptions. */
typedef struct TskOptions
{
	int32		vl_len_;
	int			fillfactor;
} TskOptions;

#define TSK_DEFAULT_FILLFACTOR	90
#define TSK_MIN_FILLFACTOR		50

/* Upper bound of a pivot's size (two maximal keys), line pointer included. */
#define TSK_PIVOT_HDR			14
#define TSK_MAX_PIVOT_SPACE		(MAXALIGN(TSK_PIVOT_HDR + 2 * TSK_MAX_KEY_BYTES) + sizeof(ItemIdData))
/* Sizes in a run: header, and per entry TID + rk length word. */
#define TSK_RUN_HDR				4
#define TSK_RUN_ENTRY_HDR		8
#define TSK_MAX_ENTRIES_PER_PAGE (BLCKSZ / TSK_RUN_ENTRY_HDR)
/* the most entries of one run: its target, plus the one that overflows it */
#define TSK_MAX_ENTRIES_PER_RUN	(TSK_RUN_TARGET / TSK_RUN_ENTRY_HDR + 2)

/* tsindex.c */
extern int	tsk_fillfactor(Relation index);

/* tsindexpage.c */
extern TskKey tsk_encode_key(Datum d);
extern TskKey tsk_encode_search_key(Datum d, bool *clamped);
extern int	tsk_key_cmp(TskKey a, TskKey b);
extern bool tsk_key_eq(TskKey a, TskKey b);
extern int	tsk_entry_cmp(const TskEntry *a, const TskEntry *b);
extern int	tsk_search_cmp(const TskSearchKey *sk, const TskEntry *e);
extern char *tsk_key_text(TskKey k);
extern TskEntry tsk_copy_entry(const TskEntry *e);
extern void tsk_init_page(Page page, uint16 level, BlockNumber prev, BlockNumber next);
extern void tsk_init_metapage(Page page);
extern void tsk_check_page(Relation index, Buffer buf);
extern void tsk_corrupt(const char *what) pg_attribute_noreturn();
extern const char *tsk_item(Page page, OffsetNumber off, Size *len);
extern void tsk_walk_step(Relation index, TskWalk *walk);
extern Size tsk_pivot_size(const TskEntry *key);
extern void tsk_pivot_form(char *dst, BlockNumber child, const TskEntry *key);
extern void tsk_pivot_read(Page page, OffsetNumber off, TskPivot *pivot);
extern bool tsk_page_add_pivot(Page page, OffsetNumber off, BlockNumber child, const TskEntry *key);
extern int	tsk_leaf_entries(Page page, TskEntry *entries);
extern int	tsk_run_entries(Page page, OffsetNumber off, TskEntry *entries);
extern OffsetNumber tsk_leaf_find_run(Page page, const TskSearchKey *sk);
extern bool tsk_leaf_encode(Page page, const TskEntry *hikey, const TskEntry *entries, int n);
extern Size tsk_leaf_size(const TskEntry *entries, int n);
extern bool tsk_leaf_add(Page page, const TskEntry *e);
extern BlockNumber tsk_choose_child(Page page, const TskSearchKey *sk);
extern bool tsk_beyond_hikey(Page page, const TskSearchKey *sk);
extern Buffer tsk_descend(Relation index, const TskSearchKey *sk, bool exclusive_leaf);
extern Buffer tsk_descend_level(Relation index, const TskSearchKey *sk, uint16 target, bool exclusive);
extern void tsk_init_deleted(Page page, BlockNumber prev, BlockNumber next);
extern bool tsk_page_recyclable(Page page);
extern Buffer tsk_new_buffer(Relation index);

/* tsindexbuild.c */
extern IndexBuildResult *tskbuild(Relation heap, Relation index, IndexInfo *indexInfo);
extern void tskbuildempty(Relation index);

/* tsindexinsert.c */
extern bool tskinsert(Relation index, Datum *values, bool *isnull, ItemPointer ht_ctid,
					  Relation heap, IndexUniqueCheck checkUnique, bool indexUnchanged,
					  IndexInfo *indexInfo);
extern void tsk_split_pass(Relation index, const TskEntry *e);

/* tsindexscan.c */
extern IndexScanDesc tskbeginscan(Relation index, int nkeys, int norderbys);
extern void tskrescan(IndexScanDesc scan, ScanKey keys, int nkeys, ScanKey orderbys, int norderbys);
extern bool tskgettuple(IndexScanDesc scan, ScanDirection dir);
extern int64 tskgetbitmap(IndexScanDesc scan, TIDBitmap *tbm);
extern void tskendscan(IndexScanDesc scan);

/* tsindexvacuum.c */
extern IndexBulkDeleteResult *tskbulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
											IndexBulkDeleteCallback callback, void *callback_state);
extern IndexBulkDeleteResult *tskvacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats);

#endif							/* TSINDEX_H */
