/*-------------------------------------------------------------------------
 *
 * xlog.c
 *	  tskey index: WAL.  The custom resource manager "tskey" (records,
 *	  redo, description, masking) and the wrapper that logs a change either
 *	  by it or by generic WAL.
 *
 * The resource manager can only be registered while shared_preload_libraries
 * is processed (RegisterCustomRmgr).  A server that loaded the library so
 * logs every tskey change with the records below: an insert is the entry
 * and where it went, replayed by the same page operation; a split logs its
 * new right page whole and the rest as what changed.  A server that loaded
 * the library later (CREATE EXTENSION without a restart) has no resource
 * manager and logs the same changes with generic WAL, as before: the choice
 * is made per write from tsk_rmgr_registered, which _PG_init sets in the
 * postmaster and every backend inherits.  src/tskey/README says what the
 * preload obliges.
 *
 * Every replay reproduces the primary's page bytes exactly: the page
 * functions it calls (tsk_leaf_add, tsk_leaf_encode, tsk_fill_page, ...)
 * depend on the page and the record only, and values that do not (the
 * safexid of a deleted page) are in the record.  wal_consistency_checking
 * = 'tskey' checks that.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/bufmask.h"
#include "access/generic_xlog.h"
#include "access/nbtxlog.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xact.h"
#include "access/xloginsert.h"
#include "access/xlogutils.h"
#include "miscadmin.h"
#include "storage/standby.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "tskey_int.h"

/* Set in _PG_init when the library is preloaded and the rmgr registered. */
bool		tsk_rmgr_registered = false;

#define TSK_XLOG_MAX_BLOCKS		4

struct TskXLogState
{
	Relation	index;
	GenericXLogState *generic;	/* when logging with generic WAL */
	int			nblocks;
	struct
	{
		uint8		id;
		int			flags;
		Buffer		buf;
		const void *data;
		Size		len;
		PGAlignedBlock page;	/* the copy the caller changes */
	}			blocks[TSK_XLOG_MAX_BLOCKS];
	const void *main;
	Size		mainlen;
};

/* Memory of the replay, reset after each record. */
static MemoryContext tsk_redo_cxt = NULL;

/*
 * The state of a change is ~33 kB (a copy of each page it may change): too
 * large for a memory context's free lists, so that allocating one per
 * change was a malloc and a free, and the kernel faulted its pages in anew
 * whenever malloc had given them back meanwhile.  One state is kept in
 * TopMemoryContext and reused: changes of the index never nest (a change
 * holds buffer locks and calls no user code), so one is enough; a change
 * under way when an error is raised never finishes, so every
 * (sub)transaction abort marks the state free again.  Should a state be
 * asked for while the kept one is out, it is allocated as before.
 */
static TskXLogState *tsk_kept_state = NULL;
static bool tsk_kept_state_out = false;

/* tsk_xlog_xact_callback: a change an abort interrupted gives the kept state back. */
static void
tsk_xlog_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		tsk_kept_state_out = false;
}

/* tsk_xlog_subxact_callback: as tsk_xlog_xact_callback, for a subtransaction. */
static void
tsk_xlog_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						  SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		tsk_kept_state_out = false;
}

/* alloc_state: the kept state if it is free, else a new one. */
static TskXLogState *
alloc_state(void)
{
	if (tsk_kept_state == NULL)
	{
		tsk_kept_state = MemoryContextAlloc(TopMemoryContext, sizeof(TskXLogState));
		RegisterXactCallback(tsk_xlog_xact_callback, NULL);
		RegisterSubXactCallback(tsk_xlog_subxact_callback, NULL);
	}
	if (tsk_kept_state_out)
		return palloc(sizeof(TskXLogState));
	tsk_kept_state_out = true;
	return tsk_kept_state;
}

/* free_state: give back a state of alloc_state. */
static void
free_state(TskXLogState *state)
{
	if (state == tsk_kept_state)
		tsk_kept_state_out = false;
	else
		pfree(state);
}

/*
 * tsk_use_rmgr: whether a change of the index is logged with the resource
 * manager (the library was preloaded) or with generic WAL.
 */
bool
tsk_use_rmgr(Relation index)
{
	return tsk_rmgr_registered;
}

/*
 * tsk_xlog_start: begin a logged change of the index.  As GenericXLogStart,
 * the caller changes only the copies tsk_xlog_register returns, so that it
 * may still give up (tsk_xlog_abort) without having changed anything.
 */
TskXLogState *
tsk_xlog_start(Relation index)
{
	TskXLogState *state = alloc_state();

	state->index = index;
	state->generic = tsk_use_rmgr(index) ? NULL : GenericXLogStart(index);
	state->nblocks = 0;
	state->main = NULL;
	state->mainlen = 0;
	return state;
}

/*
 * tsk_xlog_register: add a locked buffer to the change as block block_id of
 * the record and return the copy of its page to change.  TSK_XLOG_IMAGE
 * logs the page whole (new pages), TSK_XLOG_GENERIC_IMAGE does so under
 * generic WAL only (pages the resource manager rebuilds in its replay).
 */
Page
tsk_xlog_register(TskXLogState *state, uint8 block_id, Buffer buf, int flags)
{
	int			i = state->nblocks;

	if (state->generic)
		return GenericXLogRegisterBuffer(state->generic, buf,
										 (flags & (TSK_XLOG_IMAGE | TSK_XLOG_GENERIC_IMAGE)) ?
										 GENERIC_XLOG_FULL_IMAGE : 0);
	/* registered already: the same copy, as GenericXLogRegisterBuffer */
	for (int j = 0; j < state->nblocks; j++)
		if (state->blocks[j].buf == buf)
			return (Page) state->blocks[j].page.data;
	if (i >= TSK_XLOG_MAX_BLOCKS)
		elog(ERROR, "too many tskey WAL blocks");
	state->blocks[i].id = block_id;
	state->blocks[i].flags = flags;
	state->blocks[i].buf = buf;
	state->blocks[i].data = NULL;
	state->blocks[i].len = 0;
	memcpy(state->blocks[i].page.data, BufferGetPage(buf), BLCKSZ);
	state->nblocks++;
	return (Page) state->blocks[i].page.data;
}

/*
 * tsk_xlog_block_data: data for the replay of block block_id (kept by
 * reference until tsk_xlog_finish).  Ignored under generic WAL.
 */
void
tsk_xlog_block_data(TskXLogState *state, uint8 block_id, const void *data, Size len)
{
	for (int i = 0; i < state->nblocks; i++)
		if (state->blocks[i].id == block_id)
		{
			state->blocks[i].data = data;
			state->blocks[i].len = len;
			return;
		}
	if (!state->generic)
		elog(ERROR, "tskey WAL block %u is not registered", block_id);
}

/* tsk_xlog_main_data: the record's main data (kept by reference). */
void
tsk_xlog_main_data(TskXLogState *state, const void *data, Size len)
{
	state->main = data;
	state->mainlen = len;
}

/*
 * tsk_xlog_finish: apply the changed copies to the buffers and log them,
 * in one critical section, as a record of type info (or a generic record).
 */
void
tsk_xlog_finish(TskXLogState *state, uint8 info)
{
	int			i;

	if (state->generic)
	{
		GenericXLogFinish(state->generic);
		free_state(state);
		return;
	}
	START_CRIT_SECTION();
	for (i = 0; i < state->nblocks; i++)
	{
		Page		page = BufferGetPage(state->blocks[i].buf);

		/*
		 * Keep the page's LSN until the record's: XLogInsert takes a
		 * full-page image only of a page whose LSN is before the last
		 * checkpoint, and a page rebuilt from PageInit (a split's left
		 * half) has none.
		 */
		PageSetLSN((Page) state->blocks[i].page.data, PageGetLSN(page));
		memcpy(page, state->blocks[i].page.data, BLCKSZ);
		MarkBufferDirty(state->blocks[i].buf);
	}
	if (RelationNeedsWAL(state->index))
	{
		XLogRecPtr	lsn;

		XLogBeginInsert();
		if (state->mainlen > 0)
			XLogRegisterData((char *) state->main, state->mainlen);
		for (i = 0; i < state->nblocks; i++)
		{
			uint8		flags = REGBUF_STANDARD;

			if (state->blocks[i].flags & TSK_XLOG_IMAGE)
				flags |= REGBUF_FORCE_IMAGE;
			XLogRegisterBuffer(state->blocks[i].id, state->blocks[i].buf, flags);
			if (state->blocks[i].len > 0)
				XLogRegisterBufData(state->blocks[i].id, (char *) state->blocks[i].data,
									state->blocks[i].len);
		}
		lsn = XLogInsert(TSK_RMGR_ID, info);
		for (i = 0; i < state->nblocks; i++)
			PageSetLSN(BufferGetPage(state->blocks[i].buf), lsn);
	}
	END_CRIT_SECTION();
	free_state(state);
}

/* tsk_xlog_abort: give up a change; no buffer was changed. */
void
tsk_xlog_abort(TskXLogState *state)
{
	if (state->generic)
		GenericXLogAbort(state->generic);
	free_state(state);
}

/*
 * tsk_xlog_entry: an entry as logged: {tid, pk word, rk word, pk, rk};
 * dst has room for 10 + 2 * TSK_MAX_KEY_BYTES bytes.  Returns the size.
 */
Size
tsk_xlog_entry(char *dst, const TskEntry *e)
{
	Size		pklen = TSK_LEN(e->pk.word);

	memcpy(dst, &e->tid, 6);
	memcpy(dst + 6, &e->pk.word, 2);
	memcpy(dst + 8, &e->rk.word, 2);
	memcpy(dst + 10, e->pk.data, pklen);
	memcpy(dst + 10 + pklen, e->rk.data, TSK_LEN(e->rk.word));
	return 10 + pklen + TSK_LEN(e->rk.word);
}

/* read_entry: decode an entry logged by tsk_xlog_entry (pointing into p). */
static void
read_entry(const char *p, Size len, TskEntry *e)
{
	if (len < 10)
		elog(ERROR, "tskey WAL entry too short");
	memcpy(&e->tid, p, 6);
	memcpy(&e->pk.word, p + 6, 2);
	memcpy(&e->rk.word, p + 8, 2);
	if ((Size) 10 + TSK_LEN(e->pk.word) + TSK_LEN(e->rk.word) != len)
		elog(ERROR, "tskey WAL entry has the wrong length");
	e->pk.data = p + 10;
	e->rk.data = p + 10 + TSK_LEN(e->pk.word);
}

/*
 * tsk_xlog_reuse: log that a deleted page is about to be reused, so that a
 * hot standby cancels the queries that could still hold a link to it (those
 * older than its safexid).  With the resource manager that is its own
 * record; under generic WAL, which carries no recovery conflict, nbtree's
 * XLOG_BTREE_REUSE_PAGE, whose replay does only that.
 */
void
tsk_xlog_reuse(Relation index, BlockNumber blkno, FullTransactionId safexid)
{
	if (tsk_use_rmgr(index))
	{
		xl_tsk_reuse xlrec;

		xlrec.node = index->rd_node;
		xlrec.block = blkno;
		xlrec.safexid = safexid;
		XLogBeginInsert();
		XLogRegisterData((char *) &xlrec, sizeof(xlrec));
		XLogInsert(TSK_RMGR_ID, XLOG_TSK_REUSE);
	}
	else
	{
		xl_btree_reuse_page xlrec;

		xlrec.node = index->rd_node;
		xlrec.block = blkno;
		xlrec.latestRemovedFullXid = safexid;
		XLogBeginInsert();
		XLogRegisterData((char *) &xlrec, SizeOfBtreeReusePage);
		XLogInsert(RM_BTREE_ID, XLOG_BTREE_REUSE_PAGE);
	}
}

/* ---------------------------------------------------------------- redo */

/*
 * Buffers of a record being replayed: all are read (and locked) in block
 * order first, the order the primary locked them in, and released only
 * after every page is changed, so that a hot standby reader, which holds
 * one lock at a time, never sees a change half replayed.
 */
typedef struct RedoBlocks
{
	Buffer		buf[TSK_XLOG_MAX_BLOCKS];
	XLogRedoAction action[TSK_XLOG_MAX_BLOCKS];
} RedoBlocks;

static void
redo_read(XLogReaderState *record, RedoBlocks *rb, bool cleanup)
{
	for (uint8 id = 0; id < TSK_XLOG_MAX_BLOCKS; id++)
	{
		rb->buf[id] = InvalidBuffer;
		rb->action[id] = BLK_NOTFOUND;
		if (XLogRecHasBlockRef(record, id))
			rb->action[id] = XLogReadBufferForRedoExtended(record, id, RBM_NORMAL, cleanup,
														   &rb->buf[id]);
	}
}

/* redo_needs: the page of block id if the replay must change it, or NULL. */
static Page
redo_needs(RedoBlocks *rb, uint8 id)
{
	return rb->action[id] == BLK_NEEDS_REDO ? BufferGetPage(rb->buf[id]) : NULL;
}

static void
redo_release(XLogReaderState *record, RedoBlocks *rb)
{
	for (uint8 id = 0; id < TSK_XLOG_MAX_BLOCKS; id++)
	{
		if (rb->action[id] == BLK_NEEDS_REDO)
		{
			PageSetLSN(BufferGetPage(rb->buf[id]), record->EndRecPtr);
			MarkBufferDirty(rb->buf[id]);
		}
		if (BufferIsValid(rb->buf[id]))
			UnlockReleaseBuffer(rb->buf[id]);
	}
}

static void
redo_insert(XLogReaderState *record)
{
	xl_tsk_insert *xlrec = (xl_tsk_insert *) XLogRecGetData(record);
	RedoBlocks	rb;
	Page		page;

	redo_read(record, &rb, false);
	if ((page = redo_needs(&rb, 0)) != NULL)
	{
		TskEntry	e;
		TskAddResult how;
		Size		len;
		char	   *data = XLogRecGetBlockData(record, 0, &len);

		read_entry(data, len, &e);
		if (!tsk_leaf_add(page, &e, &how) || how.kind != xlrec->kind ||
			(how.kind != TSK_ADD_COMPACT && how.off != xlrec->off))
			elog(PANIC, "tskey insert replay did not reproduce the change logged");
	}
	redo_release(record, &rb);
}

static void
redo_split(XLogReaderState *record)
{
	xl_tsk_split *xlrec = (xl_tsk_split *) XLogRecGetData(record);
	RedoBlocks	rb;
	Page		page;

	redo_read(record, &rb, false);
	if ((page = redo_needs(&rb, 0)) != NULL)
	{
		TskEntry	key;
		Size		len;
		char	   *data = XLogRecGetBlockData(record, 0, &len);

		read_entry(data, len, &key);
		if (!tsk_page_add_pivot(page, xlrec->poff, xlrec->rblkno, &key))
			elog(PANIC, "tskey split replay: no room for the downlink");
	}
	if ((page = redo_needs(&rb, 1)) != NULL)
	{
		PGAlignedBlock old;
		TskPageOpaqueData op = *TskPageGetOpaque(page);
		TskPivot   *items = palloc(TSK_MAX_ENTRIES_PER_PAGE * sizeof(TskPivot));
		Size	   *sizes = palloc(TSK_MAX_ENTRIES_PER_PAGE * sizeof(Size));
		int			n;
		BlockNumber blkno;

		XLogRecGetBlockTag(record, 1, NULL, NULL, &blkno);
		memcpy(old.data, page, BLCKSZ);
		n = tsk_page_items((Page) old.data, items, sizes);
		if (xlrec->split < 1 || xlrec->split >= n)
			elog(PANIC, "tskey split replay: split point %u of %d items", xlrec->split, n);
		tsk_init_page(page, op.level, op.prev, xlrec->rblkno);
		tsk_fill_page(page, &items[xlrec->split].key, items, xlrec->split);
	}
	/* block 2, the new right page, is always a full image */
	if ((page = redo_needs(&rb, 3)) != NULL)
		TskPageGetOpaque(page)->prev = xlrec->rblkno;
	redo_release(record, &rb);
}

/*
 * redo_vacuum: with a cleanup lock, as VACUUM took on the primary (and as
 * nbtree's replay does), so that no standby scan holding a pin on the leaf
 * is between reading its TIDs and fetching them when they are removed.
 */
static void
redo_vacuum(XLogReaderState *record)
{
	RedoBlocks	rb;
	Page		page;

	redo_read(record, &rb, true);
	if ((page = redo_needs(&rb, 0)) != NULL)
	{
		Size		len;
		char	   *data = XLogRecGetBlockData(record, 0, &len);
		uint16	   *removed = palloc(len + sizeof(uint16));

		memcpy(removed, data, len);
		tsk_vacuum_page(page, removed, len / sizeof(uint16));
	}
	redo_release(record, &rb);
}

/*
 * redo_delete: XLOG_TSK_DELETE and XLOG_TSK_DISSOLVE.  The parent loses a
 * downlink (the right sibling's, taken over by the deleted page's, or the
 * deleted page's own); the page becomes a deleted page; the sibling that
 * takes its range (or child) is a full image, and the other one gets its
 * link past the page.
 */
static void
redo_delete(XLogReaderState *record)
{
	xl_tsk_delete *xlrec = (xl_tsk_delete *) XLogRecGetData(record);
	RedoBlocks	rb;
	Page		page;

	redo_read(record, &rb, false);
	if ((page = redo_needs(&rb, 0)) != NULL)
	{
		if (xlrec->right)
		{
			Size		len;
			char	   *item = (char *) tsk_item(page, xlrec->poff, &len);

			memcpy(item, &xlrec->next, sizeof(BlockNumber));
			PageIndexTupleDelete(page, xlrec->poff + 1);
		}
		else
			PageIndexTupleDelete(page, xlrec->poff);
	}
	if ((page = redo_needs(&rb, 1)) != NULL)
		TskPageGetOpaque(page)->next = xlrec->next;
	if ((page = redo_needs(&rb, 2)) != NULL)
		tsk_init_deleted(page, xlrec->prev, xlrec->next, xlrec->safexid);
	if ((page = redo_needs(&rb, 3)) != NULL)
		TskPageGetOpaque(page)->prev = xlrec->prev;
	redo_release(record, &rb);
}

static void
redo_reuse(XLogReaderState *record)
{
	xl_tsk_reuse *xlrec = (xl_tsk_reuse *) XLogRecGetData(record);

	if (InHotStandby)
		ResolveRecoveryConflictWithSnapshotFullXid(xlrec->safexid, xlrec->node);
}

static void tsk_startup(void);

/* tsk_redo: rm_redo. */
static void
tsk_redo(XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
	MemoryContext old;

	if (tsk_redo_cxt == NULL)
		tsk_startup();
	old = MemoryContextSwitchTo(tsk_redo_cxt);

	switch (info)
	{
		case XLOG_TSK_INSERT:
			redo_insert(record);
			break;
		case XLOG_TSK_SPLIT:
			redo_split(record);
			break;
		case XLOG_TSK_NEWROOT:
			{
				/* three full images */
				RedoBlocks	rb;

				redo_read(record, &rb, false);
				redo_release(record, &rb);
			}
			break;
		case XLOG_TSK_VACUUM:
			redo_vacuum(record);
			break;
		case XLOG_TSK_DELETE:
		case XLOG_TSK_DISSOLVE:
			redo_delete(record);
			break;
		case XLOG_TSK_REUSE:
			redo_reuse(record);
			break;
		default:
			elog(PANIC, "tskey redo: unknown record type %u", info);
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(tsk_redo_cxt);
}

/* tsk_startup / tsk_cleanup: the replay's memory context. */
static void
tsk_startup(void)
{
	tsk_redo_cxt = AllocSetContextCreate(CurrentMemoryContext, "tskey redo",
										 ALLOCSET_DEFAULT_SIZES);
}

static void
tsk_cleanup(void)
{
	MemoryContextDelete(tsk_redo_cxt);
	tsk_redo_cxt = NULL;
}

/* ------------------------------------------------- desc, identify, mask */

static const char *const add_kinds[] = {"?", "new run", "run", "run split", "compact"};

/* tsk_desc: rm_desc, for pg_walinspect and wal_consistency_checking. */
static void
tsk_desc(StringInfo buf, XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
	char	   *rec = XLogRecGetData(record);

	switch (info)
	{
		case XLOG_TSK_INSERT:
			{
				xl_tsk_insert *x = (xl_tsk_insert *) rec;
				Size		len;
				char	   *data = XLogRecHasBlockRef(record, 0) ?
					XLogRecGetBlockData(record, 0, &len) : NULL;

				appendStringInfo(buf, "%s, off %u", add_kinds[x->kind <= TSK_ADD_COMPACT ? x->kind : 0], x->off);
				if (data && len >= 10)
				{
					ItemPointerData tid;
					uint16		pw,
								rw;

					memcpy(&tid, data, 6);
					memcpy(&pw, data + 6, 2);
					memcpy(&rw, data + 8, 2);
					appendStringInfo(buf, ", tid (%u,%u), pk %u bytes%s, rk %u bytes%s",
									 ItemPointerGetBlockNumberNoCheck(&tid),
									 ItemPointerGetOffsetNumberNoCheck(&tid),
									 TSK_LEN(pw), (pw & TSK_UTF16) ? " utf16" : "",
									 TSK_LEN(rw), (rw & TSK_UTF16) ? " utf16" : "");
				}
				break;
			}
		case XLOG_TSK_SPLIT:
			{
				xl_tsk_split *x = (xl_tsk_split *) rec;

				appendStringInfo(buf, "right %u, split at item %u, downlink off %u",
								 x->rblkno, x->split, x->poff);
				break;
			}
		case XLOG_TSK_VACUUM:
			appendStringInfo(buf, "removed %u", ((xl_tsk_vacuum *) rec)->nremoved);
			break;
		case XLOG_TSK_DELETE:
		case XLOG_TSK_DISSOLVE:
			{
				xl_tsk_delete *x = (xl_tsk_delete *) rec;

				appendStringInfo(buf, "range to the %s, links %u/%u, downlink off %u, safexid %u:%u",
								 x->right ? "right" : "left", x->prev, x->next, x->poff,
								 EpochFromFullTransactionId(x->safexid),
								 XidFromFullTransactionId(x->safexid));
				break;
			}
		case XLOG_TSK_REUSE:
			{
				xl_tsk_reuse *x = (xl_tsk_reuse *) rec;

				appendStringInfo(buf, "rel %u/%u/%u, block %u, safexid %u:%u",
								 x->node.spcNode, x->node.dbNode, x->node.relNode, x->block,
								 EpochFromFullTransactionId(x->safexid),
								 XidFromFullTransactionId(x->safexid));
				break;
			}
	}
}

/* tsk_identify: rm_identify. */
static const char *
tsk_identify(uint8 info)
{
	switch (info & ~XLR_INFO_MASK)
	{
		case XLOG_TSK_INSERT:
			return "INSERT";
		case XLOG_TSK_SPLIT:
			return "SPLIT";
		case XLOG_TSK_NEWROOT:
			return "NEWROOT";
		case XLOG_TSK_VACUUM:
			return "VACUUM";
		case XLOG_TSK_DELETE:
			return "DELETE";
		case XLOG_TSK_DISSOLVE:
			return "DISSOLVE";
		case XLOG_TSK_REUSE:
			return "REUSE_PAGE";
	}
	return NULL;
}

/*
 * tsk_mask: rm_mask.  Only the LSN, checksum, hint bits and the hole
 * between pd_lower and pd_upper (not in a compressed full image) may
 * differ; every other byte, dead space of replaced runs included, the
 * replay reproduces.
 */
static void
tsk_mask(char *pagedata, BlockNumber blkno)
{
	Page		page = (Page) pagedata;

	mask_page_lsn_and_checksum(page);
	mask_page_hint_bits(page);
	if (!PageIsNew(page))
		mask_unused_space(page);
}

static RmgrData tsk_rmgr = {
	.rm_name = TSK_RMGR_NAME,
	.rm_redo = tsk_redo,
	.rm_desc = tsk_desc,
	.rm_identify = tsk_identify,
	.rm_startup = tsk_startup,
	.rm_cleanup = tsk_cleanup,
	.rm_mask = tsk_mask,
	.rm_decode = NULL,
};

/*
 * tsk_register_rmgr: register the resource manager, when the library is
 * being preloaded (the only time PostgreSQL allows it); otherwise tskey
 * logs with generic WAL.
 */
void
tsk_register_rmgr(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	RegisterCustomRmgr(TSK_RMGR_ID, &tsk_rmgr);
	tsk_rmgr_registered = true;
}
