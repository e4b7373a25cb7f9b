/*-------------------------------------------------------------------------
 *
 * tskey_int.h
 *	  The tskey index access method: a B-link tree on (PartitionKey, RowKey)
 *	  in the service's key order, unique, logged by a custom WAL resource
 *	  manager when the library is preloaded, else with generic WAL.
 *
 * Private to src/tskey/ (the rest of the extension includes tskey.h).
 * src/tskey/README describes the design.  Files:
 *	  handler.c		handler, options, validation, cost estimate, tsk_init
 *	  page.c		key encoding and comparison, page layout, descent
 *	  build.c		sorted bottom-up build, the empty index
 *	  insert.c		insertion, the unique check, page splits
 *	  scan.c		ordered and bitmap scans
 *	  vacuum.c		bulk delete, page deletion and cleanup
 *	  verify.c		tablestore.verify_index()
 *	  xlog.c		WAL: the custom resource manager and generic WAL
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSKEY_INT_H
#define TSKEY_INT_H


#include "postgres.h"

#include "access/amapi.h"
#include "access/genam.h"
#include "access/itup.h"
#include "access/transam.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "storage/relfilenode.h"
#include "utils/relcache.h"

#include "tskey.h"

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

/*
 * What tsk_leaf_add did: the kind of change and the line pointer of the
 * run it wrote (its first one for TSK_ADD_RUN_SPLIT).  Logged in the
 * insert record, and checked by its replay.
 */
typedef enum TskAddKind
{
	TSK_ADD_NEW_RUN = 1,		/* a run of its own, added at off */
	TSK_ADD_RUN,				/* the run at off, rewritten with the entry */
	TSK_ADD_RUN_SPLIT,			/* the run at off grew over its target and
								 * is now two, at off and off + 1 */
	TSK_ADD_COMPACT				/* the page rewritten compactly with it */
} TskAddKind;

typedef struct TskAddResult
{
	TskAddKind	kind;
	OffsetNumber off;
} TskAddResult;

/*
 * WAL.  TskXLogState wraps the two ways a tskey change is logged: records
 * of the resource manager "tskey" (when the library was preloaded, see
 * tsk_rmgr_registered), or generic WAL.  A caller registers its buffers,
 * changes the returned copies of their pages, describes the change for the
 * resource manager (main data and per-block data, ignored by generic WAL)
 * and finishes with the record type.
 */
#define TSK_RMGR_NAME			"tskey"
#ifndef TSK_RMGR_ID
#define TSK_RMGR_ID				128 /* RM_EXPERIMENTAL_ID; src/tskey/README */
#endif

/* record types (the high bits of xl_info) */
#define XLOG_TSK_INSERT			0x00	/* an entry added to a leaf */
#define XLOG_TSK_SPLIT			0x10	/* a page split, with its parent */
#define XLOG_TSK_NEWROOT		0x20	/* the root split into two new pages */
#define XLOG_TSK_VACUUM			0x30	/* entries removed from a leaf */
#define XLOG_TSK_DELETE			0x40	/* an empty leaf deleted */
#define XLOG_TSK_DISSOLVE		0x50	/* an internal page dissolved */
#define XLOG_TSK_REUSE			0x60	/* a deleted page about to be reused */

/* register flags */
#define TSK_XLOG_IMAGE			0x01	/* log the page whole (both ways) */
#define TSK_XLOG_GENERIC_IMAGE	0x02	/* whole under generic WAL only */

typedef struct TskXLogState TskXLogState;

/* XLOG_TSK_INSERT: block 0 the leaf, its data the entry (tsk_xlog_entry) */
typedef struct xl_tsk_insert
{
	uint8		kind;			/* TskAddKind */
	OffsetNumber off;
} xl_tsk_insert;

/*
 * XLOG_TSK_SPLIT: block 0 the parent (data: the new pivot's key), 1 the page
 * split (rebuilt from its items by the replay), 2 the new right page
 * (logged whole), 3 the old right sibling (its left link), if any.
 */
typedef struct xl_tsk_split
{
	BlockNumber rblkno;			/* the new right page */
	OffsetNumber poff;			/* the new downlink's offset in the parent */
	uint16		split;			/* items before the split point */
} xl_tsk_split;

/*
 * XLOG_TSK_VACUUM: block 0 the leaf, its data the positions (in key order)
 * of the entries removed, as uint16.
 */
typedef struct xl_tsk_vacuum
{
	uint16		nremoved;
} xl_tsk_vacuum;

/*
 * XLOG_TSK_DELETE and XLOG_TSK_DISSOLVE, blocks in lock order: 0 the parent
 * (an empty leaf's) or grandparent (a dissolved page's), 1 the left sibling,
 * 2 the page deleted, 3 the right sibling.  The sibling that takes the
 * page's key range or child is rebuilt and logged whole; the other gets its
 * link past the page.
 */
typedef struct xl_tsk_delete
{
	FullTransactionId safexid;
	BlockNumber prev;			/* the deleted page's links */
	BlockNumber next;
	OffsetNumber poff;			/* its downlink in the parent */
	uint8		right;			/* its range went right (else left) */
} xl_tsk_delete;

/* XLOG_TSK_REUSE: no blocks; the replay resolves the standby conflict */
typedef struct xl_tsk_reuse
{
	RelFileNode node;
	BlockNumber block;
	FullTransactionId safexid;
} xl_tsk_reuse;

extern bool tsk_rmgr_registered;

/* xlog.c */
extern void tsk_register_rmgr(void);
extern bool tsk_use_rmgr(Relation index);
extern TskXLogState *tsk_xlog_start(Relation index);
extern Page tsk_xlog_register(TskXLogState *state, uint8 block_id, Buffer buf, int flags);
extern void tsk_xlog_block_data(TskXLogState *state, uint8 block_id, const void *data, Size len);
extern void tsk_xlog_main_data(TskXLogState *state, const void *data, Size len);
extern void tsk_xlog_finish(TskXLogState *state, uint8 info);
extern void tsk_xlog_abort(TskXLogState *state);
extern Size tsk_xlog_entry(char *dst, const TskEntry *e);
extern void tsk_xlog_reuse(Relation index, BlockNumber blkno, FullTransactionId safexid);

/* handler.c */
extern int	tsk_fillfactor(Relation index);

/* page.c */
extern TskKey tsk_encode_key(Datum d);
extern TskKey tsk_encode_key_bytes(const char *s, int len);
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
extern Buffer tsk_getbuf(Relation index, BlockNumber blkno, int mode);
extern void tsk_corrupt(const void *at, const char *what) pg_attribute_noreturn();
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
extern bool tsk_leaf_add(Page page, const TskEntry *e, TskAddResult *how);
extern BlockNumber tsk_choose_child(Page page, const TskSearchKey *sk);
extern bool tsk_beyond_hikey(Page page, const TskSearchKey *sk);
extern Buffer tsk_descend(Relation index, const TskSearchKey *sk, bool exclusive_leaf);
extern Buffer tsk_descend_level(Relation index, const TskSearchKey *sk, uint16 target, bool exclusive);
extern void tsk_init_deleted(Page page, BlockNumber prev, BlockNumber next, FullTransactionId safexid);
extern bool tsk_page_recyclable(Page page);
extern int	tsk_page_items(Page page, TskPivot *items, Size *sizes);
extern void tsk_fill_page(Page page, const TskEntry *hikey, const TskPivot *items, int n);
extern void tsk_vacuum_page(Page page, const uint16 *removed, int nremoved);

/* build.c */
extern IndexBuildResult *tskbuild(Relation heap, Relation index, IndexInfo *indexInfo);
extern void tskbuildempty(Relation index);

/* insert.c */
extern bool tskinsert(Relation index, Datum *values, bool *isnull, ItemPointer ht_ctid,
					  Relation heap, IndexUniqueCheck checkUnique, bool indexUnchanged,
					  IndexInfo *indexInfo);
extern void tsk_split_pass(Relation index, const TskEntry *e);
extern Buffer tsk_new_buffer(Relation index);

/* scan.c */
extern IndexScanDesc tskbeginscan(Relation index, int nkeys, int norderbys);
extern void tskrescan(IndexScanDesc scan, ScanKey keys, int nkeys, ScanKey orderbys, int norderbys);
extern bool tskgettuple(IndexScanDesc scan, ScanDirection dir);
extern int64 tskgetbitmap(IndexScanDesc scan, TIDBitmap *tbm);
extern void tskendscan(IndexScanDesc scan);

/* vacuum.c */
extern IndexBulkDeleteResult *tskbulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
											IndexBulkDeleteCallback callback, void *callback_state);
extern IndexBulkDeleteResult *tskvacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats);

#endif							/* TSKEY_INT_H */
