/*-------------------------------------------------------------------------
 *
 * page.c
 *	  tskey index: the stored form of keys and their order, the layout of
 *	  pages (pivots, high keys, leaf runs), the descent of the tree, and the
 *	  page rewrites that both a change and its WAL replay make (a split's
 *	  halves, a vacuumed leaf), so that xlog.c needs nothing above this file.
 *
 * Keys are stored in the shorter of UTF-8 and UTF-16BE so that a key of 512
 * UTF-16 code units never takes more than 1,024 bytes; the order of stored
 * keys is the service's, ordinal by UTF-16 code unit, whatever the two
 * encodings.  Items are read and written with memcpy: their fields are not
 * aligned.  See src/tskey/README.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xloginsert.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relfilenodemap.h"
#include "utils/snapmgr.h"

#include "edm.h"
#include "utf16.h"
#include "tskey_int.h"

/*
 * A cursor over the UTF-16 code units of a stored key, whichever its
 * encoding.  pending holds the low surrogate of a supplementary character
 * read from UTF-8.
 */
typedef struct UnitCursor
{
	const unsigned char *p;
	const unsigned char *end;
	bool		utf16;
	uint16		pending;
} UnitCursor;

/*
 * utf8_decode: the code point at *p (valid UTF-8, as the database's
 * encoding guarantees), advancing *p past it.
 */
static uint32
utf8_decode(const unsigned char **p)
{
	const unsigned char *s = *p;
	uint32		c = s[0];

	if (c < 0x80)
	{
		*p = s + 1;
		return c;
	}
	if (c < 0xE0)
	{
		*p = s + 2;
		return ((c & 0x1F) << 6) | (s[1] & 0x3F);
	}
	if (c < 0xF0)
	{
		*p = s + 3;
		return ((c & 0x0F) << 12) | ((s[1] & 0x3F) << 6) | (s[2] & 0x3F);
	}
	*p = s + 4;
	return ((c & 0x07) << 18) | ((s[1] & 0x3F) << 12) | ((s[2] & 0x3F) << 6) | (s[3] & 0x3F);
}

/* next_unit: the next UTF-16 code unit of the cursor's key, or -1 at its end. */
static int32
next_unit(UnitCursor *c)
{
	uint32		cp;

	if (c->pending)
	{
		uint16		u = c->pending;

		c->pending = 0;
		return u;
	}
	if (c->p >= c->end)
		return -1;
	if (c->utf16)
	{
		uint16		u = (c->p[0] << 8) | c->p[1];

		c->p += 2;
		return u;
	}
	cp = utf8_decode(&c->p);
	if (cp < 0x10000)
		return cp;
	cp -= 0x10000;
	c->pending = 0xDC00 | (cp & 0x3FF);
	return 0xD800 | (cp >> 10);
}

/*
 * tsk_encode_key: the stored form of a key datum (text or tablestore.key):
 * its UTF-8 bytes, unless UTF-16BE is shorter.  The choice depends only on
 * the string, so equal keys have byte-equal stored forms.
 */
TskKey
tsk_encode_key(Datum d)
{
	text	   *t = (text *) PG_DETOAST_DATUM_PACKED(d);

	return tsk_encode_key_bytes(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
}

/*
 * tsk_encode_key_bytes: the stored form of a key given as its UTF-8 bytes
 * (pointing into s when that is the form chosen).
 */
TskKey
tsk_encode_key_bytes(const char *s, int len)
{
	int			units = ts_utf16_length(s, len);
	TskKey		k;

	if (len <= 2 * units)
	{
		k.data = s;
		k.word = len;
	}
	else
	{
		unsigned char *out = palloc(2 * units);
		UnitCursor	c = {(const unsigned char *) s, (const unsigned char *) s + len, false, 0};
		int32		u;
		int			i = 0;

		while ((u = next_unit(&c)) >= 0)
		{
			out[i++] = u >> 8;
			out[i++] = u & 0xFF;
		}
		Assert(i == 2 * units);
		k.data = (const char *) out;
		k.word = i | TSK_UTF16;
		len = i;
	}
	if (len > TSK_MAX_KEY_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("key of %d UTF-16 code units is too long for a tskey index", units),
				 errdetail("A key may have at most %d UTF-16 code units.", TSK_MAX_KEY_BYTES / 2)));
	return k;
}

/*
 * tsk_encode_search_key: the stored form of a key a scan compares with.  A
 * key longer than any stored key (over TSK_MAX_KEY_BYTES / 2 UTF-16 code
 * units) is legal in a comparison, so it is not refused: it is clamped to
 * its first TSK_MAX_KEY_BYTES / 2 units, in UTF-16BE (which may end in half
 * a surrogate pair: the order is by code unit), and *clamped is set.  No
 * stored key equals it, and a stored key is below it exactly when it is at
 * most the clamped key (the caller adjusts its operator accordingly).
 */
TskKey
tsk_encode_search_key(Datum d, bool *clamped)
{
	text	   *t = (text *) PG_DETOAST_DATUM_PACKED(d);
	const char *s = VARDATA_ANY(t);
	int			len = VARSIZE_ANY_EXHDR(t);
	unsigned char *out;
	UnitCursor	c = {(const unsigned char *) s, (const unsigned char *) s + len, false, 0};
	TskKey		k;
	int			i = 0;

	*clamped = ts_utf16_length(s, len) > TSK_MAX_KEY_BYTES / 2;
	if (!*clamped)
		return tsk_encode_key(d);
	out = palloc(TSK_MAX_KEY_BYTES);
	while (i < TSK_MAX_KEY_BYTES)
	{
		int32		u = next_unit(&c);

		Assert(u >= 0);
		out[i++] = u >> 8;
		out[i++] = u & 0xFF;
	}
	k.data = (const char *) out;
	k.word = TSK_MAX_KEY_BYTES | TSK_UTF16;
	return k;
}

/*
 * tsk_key_cmp: compare two stored keys ordinally by UTF-16 code unit.
 * memcmp on UTF-16BE is that order; UTF-8 against UTF-8 is ts_utf16_cmp;
 * only mixed pairs are compared unit by unit.
 */
int
tsk_key_cmp(TskKey a, TskKey b)
{
	int			alen = TSK_LEN(a.word);
	int			blen = TSK_LEN(b.word);
	bool		a16 = (a.word & TSK_UTF16) != 0;
	bool		b16 = (b.word & TSK_UTF16) != 0;

	if (!a16 && !b16)
		return ts_utf16_cmp(a.data, alen, b.data, blen);
	if (a16 && b16)
	{
		int			c = memcmp(a.data, b.data, Min(alen, blen));

		if (c != 0)
			return c < 0 ? -1 : 1;
		return (alen > blen) - (alen < blen);
	}
	else
	{
		UnitCursor	ca = {(const unsigned char *) a.data, (const unsigned char *) a.data + alen, a16, 0};
		UnitCursor	cb = {(const unsigned char *) b.data, (const unsigned char *) b.data + blen, b16, 0};

		for (;;)
		{
			int32		ua = next_unit(&ca);
			int32		ub = next_unit(&cb);

			if (ua != ub)
				return ua < ub ? -1 : 1;
			if (ua < 0)
				return 0;
		}
	}
}

/* tsk_key_eq: whether two stored keys are the same key. */
bool
tsk_key_eq(TskKey a, TskKey b)
{
	return a.word == b.word && memcmp(a.data, b.data, TSK_LEN(a.word)) == 0;
}

/* tsk_entry_cmp: the order of entries, (pk, rk, heap TID). */
int
tsk_entry_cmp(const TskEntry *a, const TskEntry *b)
{
	int			c = tsk_key_cmp(a->pk, b->pk);

	if (c == 0)
		c = tsk_key_cmp(a->rk, b->rk);
	if (c == 0)
		c = ItemPointerCompare((ItemPointer) &a->tid, (ItemPointer) &b->tid);
	return c;
}

/*
 * tsk_search_cmp: compare a search key with an entry; a search key shorter
 * than three attributes that equals the entry on its prefix sorts on its
 * side of it.
 */
int
tsk_search_cmp(const TskSearchKey *sk, const TskEntry *e)
{
	int			c;

	if (sk->nkeys >= 1 && (c = tsk_key_cmp(sk->key.pk, e->pk)) != 0)
		return c;
	if (sk->nkeys >= 2 && (c = tsk_key_cmp(sk->key.rk, e->rk)) != 0)
		return c;
	if (sk->nkeys >= 3)
		return ItemPointerCompare((ItemPointer) &sk->key.tid, (ItemPointer) &e->tid);
	return sk->side;
}

/* copy_key: a palloc'd copy of a stored key (bytes, which may contain NULs). */
static TskKey
copy_key(TskKey k)
{
	TskKey		c;
	char	   *data = palloc(Max(TSK_LEN(k.word), 1));

	memcpy(data, k.data, TSK_LEN(k.word));
	c.data = data;
	c.word = k.word;
	return c;
}

/* tsk_copy_entry: an entry whose keys are palloc'd copies. */
TskEntry
tsk_copy_entry(const TskEntry *e)
{
	TskEntry	c = *e;

	c.pk = copy_key(e->pk);
	c.rk = copy_key(e->rk);
	return c;
}

/* tsk_key_text: a stored key as a palloc'd UTF-8 string, for messages. */
char *
tsk_key_text(TskKey k)
{
	int			len = TSK_LEN(k.word);
	UnitCursor	c = {(const unsigned char *) k.data, (const unsigned char *) k.data + len,
	(k.word & TSK_UTF16) != 0, 0};
	StringInfoData buf;
	int32		u;

	if (!c.utf16)
		return pnstrdup(k.data, len);
	initStringInfo(&buf);
	while ((u = next_unit(&c)) >= 0)
	{
		uint32		cp = u;
		unsigned char enc[4];
		int			n;

		if (u >= 0xD800 && u < 0xDC00)
			cp = 0x10000 + ((u - 0xD800) << 10) + (next_unit(&c) - 0xDC00);
		unicode_to_utf8(cp, enc);
		n = pg_utf_mblen(enc);
		appendBinaryStringInfo(&buf, (char *) enc, n);
	}
	return buf.data;
}

/* tsk_init_page: an empty tree page of the given level and siblings. */
void
tsk_init_page(Page page, uint16 level, BlockNumber prev, BlockNumber next)
{
	TskPageOpaque op;

	PageInit(page, BLCKSZ, sizeof(TskPageOpaqueData));
	op = TskPageGetOpaque(page);
	op->prev = prev;
	op->next = next;
	op->level = level;
	op->flags = 0;
	op->page_id = TSK_PAGE_ID;
}

/*
 * tsk_init_metapage: the metapage.  pd_lower covers its contents, as
 * generic WAL ignores the bytes between pd_lower and pd_upper.
 */
void
tsk_init_metapage(Page page)
{
	TskMetaData *meta;

	tsk_init_page(page, 0, InvalidBlockNumber, InvalidBlockNumber);
	TskPageGetOpaque(page)->flags = TSK_META;
	meta = (TskMetaData *) PageGetContents(page);
	meta->magic = TSK_MAGIC;
	meta->version = TSK_VERSION;
	((PageHeader) page)->pd_lower = ((char *) meta + sizeof(TskMetaData)) - (char *) page;
}

/*
 * tsk_check_page: refuse a page that is not a tskey tree page, before
 * anything of it is interpreted.
 */
void
tsk_check_page(Relation index, Buffer buf)
{
	Page		page = BufferGetPage(buf);

	PageHeader	ph = (PageHeader) page;

	if (PageIsNew(page) ||
		PageGetPageSize(page) != BLCKSZ ||
		ph->pd_special != BLCKSZ - MAXALIGN(sizeof(TskPageOpaqueData)) ||
		ph->pd_lower < SizeOfPageHeaderData || ph->pd_lower > ph->pd_upper ||
		ph->pd_upper > ph->pd_special ||
		TskPageGetOpaque(page)->page_id != TSK_PAGE_ID ||
		(TskPageGetOpaque(page)->flags & TSK_META) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" contains unexpected page at block %u",
						RelationGetRelationName(index), BufferGetBlockNumber(buf)),
				 errhint("Please REINDEX it.")));
}

/*
 * tsk_getbuf: read block blkno of the index, lock it in mode
 * (BUFFER_LOCK_SHARE or BUFFER_LOCK_EXCLUSIVE), and check that it is a tree
 * page before anything of it is interpreted.  Every page reached by a link
 * is read through here (as nbtree's _bt_getbuf), so that no unchecked
 * page is ever read.
 */
Buffer
tsk_getbuf(Relation index, BlockNumber blkno, int mode)
{
	Buffer		buf = ReadBuffer(index, blkno);

	LockBuffer(buf, mode);
	tsk_check_page(index, buf);
	return buf;
}

/*
 * tsk_corrupt: raise the error of a page whose bytes contradict the
 * layout, naming the index and the block.  Pages are read only through
 * checked accessors (tsk_check_page, tsk_item, run_parse, tsk_pivot_read),
 * so that corrupt bytes give this error rather than reads or writes out of
 * bounds.  at is any address inside the page: the accessors see pages, not
 * buffers, so the block is found from where the page lies in the shared
 * buffer pool (a private copy of a page, as a scan or generic WAL makes
 * one, cannot be named).
 */
void
tsk_corrupt(const void *at, const char *what)
{
	const char *p = (const char *) at;
	char	   *where = NULL;

	if (p >= BufferBlocks && p < BufferBlocks + (Size) NBuffers * BLCKSZ)
	{
		Buffer		buf = (Buffer) ((p - BufferBlocks) / BLCKSZ) + 1;
		RelFileNode rnode;
		ForkNumber	fork;
		BlockNumber blkno;
		Oid			relid = InvalidOid;
		char	   *name = NULL;

		BufferGetTag(buf, &rnode, &fork, &blkno);
		if (IsTransactionState())
			relid = RelidByRelfilenode(rnode.spcNode, rnode.relNode);
		if (OidIsValid(relid))
			name = get_rel_name(relid);
		if (name)
			where = psprintf("index \"%s\" block %u", name, blkno);
		else
			where = psprintf("index %s block %u", relpathperm(rnode, fork), blkno);
	}
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 where ?
			 errmsg("corrupted tskey page, %s: %s", where, what) :
			 errmsg("corrupted tskey index page: %s", what),
			 errhint("Please REINDEX it.")));
}

/*
 * tsk_item: the item at off of a checked tree page, and its length; the
 * line pointer must be in use and the item lie between pd_upper and the
 * special space.
 */
const char *
tsk_item(Page page, OffsetNumber off, Size *len)
{
	PageHeader	ph = (PageHeader) page;
	ItemId		id;

	if (off < FirstOffsetNumber || off > PageGetMaxOffsetNumber(page))
		tsk_corrupt(page, "item number out of range");
	id = PageGetItemId(page, off);
	if (!ItemIdIsNormal(id) || ItemIdGetOffset(id) < ph->pd_upper ||
		ItemIdGetOffset(id) + ItemIdGetLength(id) > ph->pd_special)
		tsk_corrupt(page, "line pointer out of range");
	*len = ItemIdGetLength(id);
	return (const char *) page + ItemIdGetOffset(id);
}

/*
 * tsk_walk_step: count one more page of a walk along sibling links.  A walk
 * may read each page of the index once, and again the pages concurrent
 * splits add; one that has read more than twice as many pages as the index
 * has is going round a cycle of links.
 */
void
tsk_walk_step(Relation index, TskWalk *walk)
{
	if (++walk->steps > walk->limit)
	{
		walk->limit = 2 * RelationGetNumberOfBlocks(index) + 64;
		if (walk->steps > walk->limit)
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("corrupted tskey index \"%s\": a cycle of sibling links",
							RelationGetRelationName(index)),
					 errhint("Please REINDEX it.")));
	}
}

/* key_ok: whether a stored key's length word is possible. */
static inline bool
key_ok(uint16 word)
{
	return TSK_LEN(word) <= TSK_MAX_KEY_BYTES &&
		((word & TSK_UTF16) == 0 || TSK_LEN(word) % 2 == 0);
}

/* tsk_pivot_size: the size of a pivot item for the key. */
Size
tsk_pivot_size(const TskEntry *key)
{
	return TSK_PIVOT_HDR + TSK_LEN(key->pk.word) + TSK_LEN(key->rk.word);
}

/*
 * tsk_pivot_form: write a pivot item {child, tid, pk word, rk word, pk, rk}
 * at dst (tsk_pivot_size bytes).
 */
void
tsk_pivot_form(char *dst, BlockNumber child, const TskEntry *key)
{
	int			pklen = TSK_LEN(key->pk.word);

	memcpy(dst, &child, 4);
	memcpy(dst + 4, &key->tid, 6);
	memcpy(dst + 10, &key->pk.word, 2);
	memcpy(dst + 12, &key->rk.word, 2);
	memcpy(dst + TSK_PIVOT_HDR, key->pk.data, pklen);
	memcpy(dst + TSK_PIVOT_HDR + pklen, key->rk.data, TSK_LEN(key->rk.word));
}

/* tsk_pivot_read: decode the pivot at off; its keys point into the page. */
void
tsk_pivot_read(Page page, OffsetNumber off, TskPivot *pivot)
{
	Size		len;
	const char *p = tsk_item(page, off, &len);

	if (len < TSK_PIVOT_HDR)
		tsk_corrupt(page, "pivot too short");
	memcpy(&pivot->child, p, 4);
	memcpy(&pivot->key.tid, p + 4, 6);
	memcpy(&pivot->key.pk.word, p + 10, 2);
	memcpy(&pivot->key.rk.word, p + 12, 2);
	pivot->key.pk.data = p + TSK_PIVOT_HDR;
	pivot->key.rk.data = p + TSK_PIVOT_HDR + TSK_LEN(pivot->key.pk.word);
	if (!key_ok(pivot->key.pk.word) || !key_ok(pivot->key.rk.word) ||
		(Size) (TSK_PIVOT_HDR + TSK_LEN(pivot->key.pk.word) + TSK_LEN(pivot->key.rk.word)) != len)
		tsk_corrupt(page, "pivot keys do not match its length");
}

/* tsk_page_add_pivot: add a pivot at off; false if it does not fit. */
bool
tsk_page_add_pivot(Page page, OffsetNumber off, BlockNumber child, const TskEntry *key)
{
	Size		sz = tsk_pivot_size(key);
	char	   *item = palloc(sz);
	bool		ok;

	tsk_pivot_form(item, child, key);
	ok = PageAddItem(page, (Item) item, sz, off, false, false) != InvalidOffsetNumber;
	pfree(item);
	return ok;
}

static void run_first(Page page, OffsetNumber off, TskEntry *e);

/*
 * Leaf runs: {pk word, n, pk, n x {tid, rk word, rk}}.  run_parse decodes
 * the run of len bytes at p into entries (pointing into p; room for
 * max of them), returning their number.  Every length is checked against
 * the item's, so a corrupt run is an error, never a read or write beyond
 * it.
 */
static int
run_parse(const char *p, Size len, TskEntry *entries, int max)
{
	TskKey		pk;
	uint16		n;
	const char *q;
	const char *end = p + len;
	int			i;

	if (len < TSK_RUN_HDR)
		tsk_corrupt(p, "run too short");
	memcpy(&pk.word, p, 2);
	memcpy(&n, p + 2, 2);
	if (n < 1 || n > max || !key_ok(pk.word) || (Size) (TSK_RUN_HDR + TSK_LEN(pk.word)) > len)
		tsk_corrupt(p, "run header does not match the run");
	pk.data = p + TSK_RUN_HDR;
	q = pk.data + TSK_LEN(pk.word);
	for (i = 0; i < n; i++)
	{
		if (end - q < TSK_RUN_ENTRY_HDR)
			tsk_corrupt(p, "run entries do not match the run's length");
		entries[i].pk = pk;
		memcpy(&entries[i].tid, q, 6);
		memcpy(&entries[i].rk.word, q + 6, 2);
		entries[i].rk.data = q + TSK_RUN_ENTRY_HDR;
		if (!key_ok(entries[i].rk.word) || end - entries[i].rk.data < TSK_LEN(entries[i].rk.word))
			tsk_corrupt(p, "run entries do not match the run's length");
		q += TSK_RUN_ENTRY_HDR + TSK_LEN(entries[i].rk.word);
	}
	if (q != end)
		tsk_corrupt(p, "run entries do not match the run's length");
	return n;
}

/* run_entry_size: the bytes one entry takes in a run. */
static inline Size
run_entry_size(const TskEntry *e)
{
	return TSK_RUN_ENTRY_HDR + TSK_LEN(e->rk.word);
}

/*
 * run_length: how many of entries[0..n) (starting a run) go in one run:
 * entries of the first one's pk, up to TSK_RUN_TARGET bytes of entries but
 * at least one.  *size is the run's item size.
 */
static int
run_length(const TskEntry *entries, int n, Size *size)
{
	Size		body = run_entry_size(&entries[0]);
	int			i = 1;

	while (i < n && tsk_key_eq(entries[i].pk, entries[0].pk) &&
		   body + run_entry_size(&entries[i]) <= TSK_RUN_TARGET)
		body += run_entry_size(&entries[i++]);
	*size = TSK_RUN_HDR + TSK_LEN(entries[0].pk.word) + body;
	return i;
}

/* run_form: the run item of entries[0..n) (one pk) in palloc'd memory. */
static char *
run_form(const TskEntry *entries, int n, Size size)
{
	char	   *run = palloc(size);
	char	   *q;
	uint16		nn = n;
	int			i;

	memcpy(run, &entries[0].pk.word, 2);
	memcpy(run + 2, &nn, 2);
	memcpy(run + TSK_RUN_HDR, entries[0].pk.data, TSK_LEN(entries[0].pk.word));
	q = run + TSK_RUN_HDR + TSK_LEN(entries[0].pk.word);
	for (i = 0; i < n; i++)
	{
		memcpy(q, &entries[i].tid, 6);
		memcpy(q + 6, &entries[i].rk.word, 2);
		memcpy(q + TSK_RUN_ENTRY_HDR, entries[i].rk.data, TSK_LEN(entries[i].rk.word));
		q += run_entry_size(&entries[i]);
	}
	Assert((Size) (q - run) == size);
	return run;
}

/*
 * tsk_leaf_entries: the entries of a leaf page in order, pointing into the
 * page; entries must have room for TSK_MAX_ENTRIES_PER_PAGE.
 */
int
tsk_leaf_entries(Page page, TskEntry *entries)
{
	TskPageOpaque op = TskPageGetOpaque(page);
	OffsetNumber off;
	OffsetNumber maxoff = PageGetMaxOffsetNumber(page);
	int			n = 0;

	for (off = TskFirstData(op); off <= maxoff; off++)
	{
		Size		len;
		const char *p = tsk_item(page, off, &len);

		n += run_parse(p, len, entries + n, Min(TSK_MAX_ENTRIES_PER_RUN, TSK_MAX_ENTRIES_PER_PAGE - n));
	}
	return n;
}

/* tsk_run_entries: the entries of the run at off, pointing into the page. */
int
tsk_run_entries(Page page, OffsetNumber off, TskEntry *entries)
{
	Size		len;
	const char *p = tsk_item(page, off, &len);

	return run_parse(p, len, entries, TSK_MAX_ENTRIES_PER_RUN);
}

/*
 * tsk_leaf_find_run: the run where entries not below the search key may
 * begin: the last run whose first entry is below it (the first run if
 * none is).  Returns InvalidOffsetNumber on a page without runs.
 */
OffsetNumber
tsk_leaf_find_run(Page page, const TskSearchKey *sk)
{
	OffsetNumber first = TskFirstData(TskPageGetOpaque(page));
	OffsetNumber lo = first,
				hi = PageGetMaxOffsetNumber(page) + 1;

	if (lo >= hi)
		return InvalidOffsetNumber;
	/* lo = the first run whose first entry is not below the key */
	while (lo < hi)
	{
		OffsetNumber mid = lo + (hi - lo) / 2;
		TskEntry	f;

		run_first(page, mid, &f);
		if (tsk_search_cmp(sk, &f) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > first ? lo - 1 : first;
}

/*
 * tsk_leaf_size: the bytes entries[0..n) take on a leaf page as runs, line
 * pointers included.
 */
Size
tsk_leaf_size(const TskEntry *entries, int n)
{
	Size		total = 0;
	int			i = 0;

	while (i < n)
	{
		Size		sz;

		i += run_length(entries + i, n - i, &sz);
		total += MAXALIGN(sz) + sizeof(ItemIdData);
	}
	return total;
}

/*
 * tsk_leaf_encode: rewrite a leaf page, keeping its special space, with the
 * high key (or none) and the entries as runs.  Returns false if they do not
 * fit, leaving the page unusable: callers encode into a scratch page.
 */
bool
tsk_leaf_encode(Page page, const TskEntry *hikey, const TskEntry *entries, int n)
{
	TskPageOpaqueData op = *TskPageGetOpaque(page);
	XLogRecPtr	lsn = PageGetLSN(page);
	int			i = 0;

	/*
	 * Keep the LSN: generic WAL decides from the buffer's LSN whether the
	 * page needs a full image after a checkpoint.
	 */
	tsk_init_page(page, op.level, op.prev, op.next);
	PageSetLSN(page, lsn);
	*TskPageGetOpaque(page) = op;
	if (hikey && !tsk_page_add_pivot(page, TSK_HIKEY, InvalidBlockNumber, hikey))
		return false;
	while (i < n)
	{
		Size		sz;
		int			k = run_length(entries + i, n - i, &sz);
		char	   *run = run_form(entries + i, k, sz);
		bool		ok = PageAddItem(page, (Item) run, sz, InvalidOffsetNumber, false, false) != InvalidOffsetNumber;

		pfree(run);
		if (!ok)
			return false;
		i += k;
	}
	return true;
}

/* run_first: the first entry of the run at off. */
static void
run_first(Page page, OffsetNumber off, TskEntry *e)
{
	Size		len;
	const char *p = tsk_item(page, off, &len);

	if (len < TSK_RUN_HDR)
		tsk_corrupt(page, "run too short");
	memcpy(&e->pk.word, p, 2);
	if (!key_ok(e->pk.word) || (Size) (TSK_RUN_HDR + TSK_LEN(e->pk.word) + TSK_RUN_ENTRY_HDR) > len)
		tsk_corrupt(page, "run header does not match the run");
	e->pk.data = p + TSK_RUN_HDR;
	memcpy(&e->tid, e->pk.data + TSK_LEN(e->pk.word), 6);
	memcpy(&e->rk.word, e->pk.data + TSK_LEN(e->pk.word) + 6, 2);
	e->rk.data = e->pk.data + TSK_LEN(e->pk.word) + TSK_RUN_ENTRY_HDR;
	if (!key_ok(e->rk.word) || (Size) ((e->rk.data - p) + TSK_LEN(e->rk.word)) > len)
		tsk_corrupt(page, "run entries do not match the run's length");
}

/*
 * replace_item: point line pointer off at a new copy of item, written below
 * pd_upper.  The old copy stays as dead space until the page is next
 * rewritten whole; this keeps the generic WAL delta of an insert to the new
 * item and a few header bytes instead of every item moved by a compaction.
 */
static void
replace_item(Page page, OffsetNumber off, const char *item, Size size)
{
	PageHeader	ph = (PageHeader) page;

	Assert((Size) (ph->pd_upper - ph->pd_lower) >= MAXALIGN(size));
	ph->pd_upper -= MAXALIGN(size);
	memcpy((char *) page + ph->pd_upper, item, size);
	ItemIdSetNormal(PageGetItemId(page, off), ph->pd_upper, size);
}

/* leaf_compact_add: rewrite the page whole with e added; false if it won't fit. */
static bool
leaf_compact_add(Page page, const TskEntry *e, TskAddResult *how)
{
	TskPageOpaque op = TskPageGetOpaque(page);
	TskEntry   *entries = palloc((TSK_MAX_ENTRIES_PER_PAGE + 1) * sizeof(TskEntry));
	TskPivot	hikey;
	PGAlignedBlock scratch;
	int			n = tsk_leaf_entries(page, entries);
	int			pos = n;
	bool		ok;

	while (pos > 0 && tsk_entry_cmp(&entries[pos - 1], e) > 0)
		pos--;
	memmove(entries + pos + 1, entries + pos, (n - pos) * sizeof(TskEntry));
	entries[pos] = *e;
	if (!TskPageIsRightmost(op))
		tsk_pivot_read(page, TSK_HIKEY, &hikey);
	memcpy(scratch.data, page, BLCKSZ);
	ok = tsk_leaf_encode((Page) scratch.data, TskPageIsRightmost(op) ? NULL : &hikey.key, entries, n + 1);
	if (ok)
		memcpy(page, scratch.data, BLCKSZ);
	pfree(entries);
	how->kind = TSK_ADD_COMPACT;
	how->off = InvalidOffsetNumber;
	return ok;
}

/*
 * tsk_leaf_add: add the entry to a leaf page whose key range holds it.
 * Adds it to the run of its pk it belongs in (splitting the run when over
 * TSK_RUN_TARGET), or as a run of its own; if the free space is short,
 * rewrites the page compactly.  Returns false, page unchanged, if the page
 * must be split.  *how says what it did.  The result is a function of the
 * page and the entry only: the replay of an insert record calls it again
 * on the same page and must get the same bytes.
 */
bool
tsk_leaf_add(Page page, const TskEntry *e, TskAddResult *how)
{
	TskPageOpaque op = TskPageGetOpaque(page);
	OffsetNumber first = TskFirstData(op);
	OffsetNumber maxoff = PageGetMaxOffsetNumber(page);
	OffsetNumber lo = first,
				hi = maxoff + 1,
				target = InvalidOffsetNumber;
	PageHeader	ph = (PageHeader) page;
	TskEntry	f;
	Size		free = ph->pd_upper - ph->pd_lower;

	/* lo = the first run whose first entry is above e */
	while (lo < hi)
	{
		OffsetNumber mid = lo + (hi - lo) / 2;

		run_first(page, mid, &f);
		if (tsk_entry_cmp(&f, e) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > first)
	{
		run_first(page, lo - 1, &f);
		if (tsk_key_eq(f.pk, e->pk))
			target = lo - 1;
	}
	if (target == InvalidOffsetNumber && lo <= maxoff)
	{
		run_first(page, lo, &f);
		if (tsk_key_eq(f.pk, e->pk))
			target = lo;
	}

	if (target == InvalidOffsetNumber)
	{
		Size		sz;
		char	   *run;

		run_length(e, 1, &sz);
		if (MAXALIGN(sz) + sizeof(ItemIdData) <= free)
		{
			run = run_form(e, 1, sz);
			if (PageAddItem(page, (Item) run, sz, lo, false, false) == InvalidOffsetNumber)
				elog(ERROR, "failed to add run to tskey leaf page");
			pfree(run);
			how->kind = TSK_ADD_NEW_RUN;
			how->off = lo;
			return true;
		}
	}
	else
	{
		TskEntry	entries[TSK_MAX_ENTRIES_PER_RUN];
		int			n = tsk_run_entries(page, target, entries);
		int			pos = n;
		Size		sz1,
					sz2 = 0;
		int			k;

		while (pos > 0 && tsk_entry_cmp(&entries[pos - 1], e) > 0)
			pos--;
		memmove(entries + pos + 1, entries + pos, (n - pos) * sizeof(TskEntry));
		entries[pos] = *e;
		n++;
		k = run_length(entries, n, &sz1);
		/*
		 * An over-full run splits in two; if the rest is not one run either
		 * (a long key arrived), the page is rewritten whole.
		 */
		if (k < n && run_length(entries + k, n - k, &sz2) < n - k)
			return leaf_compact_add(page, e, how);
		if (MAXALIGN(sz1) + (k < n ? MAXALIGN(sz2) + sizeof(ItemIdData) : 0) <= free)
		{
			char	   *run = run_form(entries, k, sz1);

			/* build the second run before the first overwrites its source */
			if (k < n)
			{
				char	   *run2 = run_form(entries + k, n - k, sz2);

				replace_item(page, target, run, sz1);
				if (PageAddItem(page, (Item) run2, sz2, target + 1, false, false) == InvalidOffsetNumber)
					elog(ERROR, "failed to add run to tskey leaf page");
				pfree(run2);
			}
			else
				replace_item(page, target, run, sz1);
			pfree(run);
			how->kind = k < n ? TSK_ADD_RUN_SPLIT : TSK_ADD_RUN;
			how->off = target;
			return true;
		}
	}
	return leaf_compact_add(page, e, how);
}

/*
 * tsk_choose_child: on an internal page, the child whose key range holds
 * the search key: that of the last pivot not above it (the first pivot
 * stands for minus infinity).
 */
BlockNumber
tsk_choose_child(Page page, const TskSearchKey *sk)
{
	TskPageOpaque op = TskPageGetOpaque(page);
	OffsetNumber first = TskFirstData(op);
	OffsetNumber lo = first + 1,
				hi = PageGetMaxOffsetNumber(page) + 1;
	TskPivot	pivot;

	/* lo = the first pivot above the search key */
	while (lo < hi)
	{
		OffsetNumber mid = lo + (hi - lo) / 2;

		tsk_pivot_read(page, mid, &pivot);
		if (tsk_search_cmp(sk, &pivot.key) >= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	tsk_pivot_read(page, lo - 1, &pivot);
	return pivot.child;
}

/*
 * tsk_beyond_hikey: whether the search key is at or above the page's high
 * key, i.e. belongs to a page further right.
 */
bool
tsk_beyond_hikey(Page page, const TskSearchKey *sk)
{
	TskPivot	hikey;

	if (TskPageIsRightmost(TskPageGetOpaque(page)))
		return false;
	tsk_pivot_read(page, TSK_HIKEY, &hikey);
	return tsk_search_cmp(sk, &hikey.key) >= 0;
}

/*
 * tsk_descend: the leaf whose key range holds the search key, pinned and
 * locked (exclusively if asked).  See tsk_descend_level.
 */
Buffer
tsk_descend(Relation index, const TskSearchKey *sk, bool exclusive_leaf)
{
	return tsk_descend_level(index, sk, 0, exclusive_leaf);
}

/*
 * tsk_descend_level: the page of the given level whose key range holds the
 * search key, pinned and locked (exclusively if asked), or InvalidBuffer if
 * the tree has no such level.  Descends from the root with one share lock
 * at a time, moving right past concurrent splits (Lehman-Yao); the target
 * page is locked directly from its parent, and moving right on its level
 * couples the locks.  A deleted page (reached through a downlink read
 * before its deletion) sends the descent back to the root: its key range
 * may have gone to its left sibling, which moving right cannot reach.
 */
Buffer
tsk_descend_level(Relation index, const TskSearchKey *sk, uint16 target, bool exclusive)
{
	Buffer		buf;
	int			mode;
	TskWalk		walk = TSK_WALK_INIT;
	int			target_mode = exclusive ? BUFFER_LOCK_EXCLUSIVE : BUFFER_LOCK_SHARE;

restart:
	CHECK_FOR_INTERRUPTS();
	mode = BUFFER_LOCK_SHARE;
	buf = tsk_getbuf(index, TSK_ROOT_BLKNO, mode);
	for (;;)
	{
		Page		page;
		TskPageOpaque op;
		BlockNumber child;

		page = BufferGetPage(buf);
		op = TskPageGetOpaque(page);
		if (TskPageIsDeleted(op))
		{
			UnlockReleaseBuffer(buf);
			tsk_walk_step(index, &walk);
			goto restart;
		}
		while (tsk_beyond_hikey(page, sk))
		{
			Buffer		next;

			tsk_walk_step(index, &walk);
			if (mode == BUFFER_LOCK_EXCLUSIVE)
			{
				/* coupled: the next page is locked before this one is let go */
				next = tsk_getbuf(index, op->next, mode);
				UnlockReleaseBuffer(buf);
			}
			else
			{
				BlockNumber nextblk = op->next;

				UnlockReleaseBuffer(buf);
				next = tsk_getbuf(index, nextblk, mode);
			}
			buf = next;
			page = BufferGetPage(buf);
			op = TskPageGetOpaque(page);
			if (TskPageIsDeleted(op))
			{
				UnlockReleaseBuffer(buf);
				goto restart;
			}
		}
		if (op->level < target)
		{
			/* the tree is lower than the level asked for */
			UnlockReleaseBuffer(buf);
			return InvalidBuffer;
		}
		if (op->level == target)
		{
			if (mode != target_mode)
			{
				/* the root is the target: relock, and start over if it split */
				LockBuffer(buf, BUFFER_LOCK_UNLOCK);
				LockBuffer(buf, target_mode);
				mode = target_mode;
				if (TskPageGetOpaque(page)->level != target)
				{
					UnlockReleaseBuffer(buf);
					goto restart;
				}
				continue;
			}
			return buf;
		}
		child = tsk_choose_child(page, sk);
		mode = (op->level == target + 1) ? target_mode : BUFFER_LOCK_SHARE;
		UnlockReleaseBuffer(buf);
		buf = tsk_getbuf(index, child, mode);
	}
}

/*
 * tsk_init_deleted: make a page a deleted one: no items, its sibling links
 * kept (so that a scan that lands on it moves on) and the deletion's
 * safexid (the next transaction ID when it was deleted; the caller reads
 * it, so that the replay writes the same).
 */
void
tsk_init_deleted(Page page, BlockNumber prev, BlockNumber next, FullTransactionId safexid)
{
	TskDeletedData *d;

	tsk_init_page(page, 0, prev, next);
	TskPageGetOpaque(page)->flags = TSK_DELETED;
	d = (TskDeletedData *) PageGetContents(page);
	d->safexid = safexid;
	((PageHeader) page)->pd_lower = ((char *) d + sizeof(TskDeletedData)) - (char *) page;
}

/*
 * tsk_page_recyclable: whether a deleted page may be reused: no
 * transaction that was running when it was deleted (and so may still hold
 * a link to it in a scan) is running now.  As nbtree's BTPageIsRecyclable.
 */
bool
tsk_page_recyclable(Page page)
{
	TskDeletedData d;

	if (PageIsNew(page))
		return true;
	if (!TskPageIsDeleted(TskPageGetOpaque(page)) ||
		((PageHeader) page)->pd_lower < SizeOfPageHeaderData + sizeof(TskDeletedData))
		return false;
	memcpy(&d, PageGetContents(page), sizeof(d));
	return GlobalVisCheckRemovableFullXid(NULL, d.safexid);
}

/*
 * tsk_page_items: the items of a tree page (entries of a leaf, or pivots of
 * an internal page, as pivots whose child is unused) pointing into the
 * page.  Also returns each item's size in *sizes, for choosing a split
 * point.  (Also the replay of a split.)
 */
int
tsk_page_items(Page page, TskPivot *items, Size *sizes)
{
	TskPageOpaque op = TskPageGetOpaque(page);
	int			n = 0;

	if (op->level == 0)
	{
		TskEntry   *entries = palloc(TSK_MAX_ENTRIES_PER_PAGE * sizeof(TskEntry));
		int			i;

		n = tsk_leaf_entries(page, entries);
		for (i = 0; i < n; i++)
		{
			items[i].child = InvalidBlockNumber;
			items[i].key = entries[i];
			sizes[i] = TSK_RUN_ENTRY_HDR + TSK_LEN(entries[i].rk.word);
		}
		pfree(entries);
	}
	else
	{
		OffsetNumber off;

		if (PageGetMaxOffsetNumber(page) > TSK_MAX_ENTRIES_PER_PAGE)
			tsk_corrupt(page, "too many pivots");
		for (off = TskFirstData(op); off <= PageGetMaxOffsetNumber(page); off++, n++)
		{
			tsk_pivot_read(page, off, &items[n]);
			sizes[n] = MAXALIGN(tsk_pivot_size(&items[n].key)) + sizeof(ItemIdData);
		}
	}
	return n;
}

/*
 * tsk_fill_page: write items[0..n) and the high key (or none) onto a page
 * initialised with its level and links.  Both halves of a split always fit:
 * each holds at most what the page held.  (Also the replay of a split.)
 * The first pivot of an internal page stands for minus infinity and is
 * written with empty keys, as nbtree truncates it: written in full, a pair
 * of 2 KiB keys on a page that must keep room for a maximal pivot and a
 * high key left room for one child only, and the tree grew a level per
 * few entries (attack report, finding 3).
 */
void
tsk_fill_page(Page page, const TskEntry *hikey, const TskPivot *items, int n)
{
	TskPageOpaque op = TskPageGetOpaque(page);
	TskEntry	minus_inf;
	int			i;

	if (op->level == 0)
	{
		TskEntry   *entries = palloc(Max(n, 1) * sizeof(TskEntry));

		for (i = 0; i < n; i++)
			entries[i] = items[i].key;
		if (!tsk_leaf_encode(page, hikey, entries, n))
			elog(ERROR, "tskey leaf split does not fit its page");
		pfree(entries);
		return;
	}
	if (hikey && !tsk_page_add_pivot(page, TSK_HIKEY, InvalidBlockNumber, hikey))
		elog(ERROR, "tskey split high key does not fit its page");
	memset(&minus_inf, 0, sizeof(minus_inf));
	for (i = 0; i < n; i++)
		if (!tsk_page_add_pivot(page, InvalidOffsetNumber, items[i].child,
								i == 0 ? &minus_inf : &items[i].key))
			elog(ERROR, "tskey internal split does not fit its page");
}

/*
 * tsk_vacuum_page: rewrite a leaf compactly without the entries at the
 * given positions (in key order, ascending).  VACUUM and its replay.
 */
void
tsk_vacuum_page(Page page, const uint16 *removed, int nremoved)
{
	TskPageOpaque op = TskPageGetOpaque(page);
	TskEntry   *entries = palloc(TSK_MAX_ENTRIES_PER_PAGE * sizeof(TskEntry));
	TskEntry   *kept = palloc(TSK_MAX_ENTRIES_PER_PAGE * sizeof(TskEntry));
	int			n = tsk_leaf_entries(page, entries);
	int			nkept = 0,
				r = 0;
	PGAlignedBlock scratch;
	TskPivot	hikey;

	for (int i = 0; i < n; i++)
	{
		if (r < nremoved && removed[r] == i)
			r++;
		else
			kept[nkept++] = entries[i];
	}
	if (r != nremoved)
		elog(ERROR, "tskey vacuum: entries to remove not on the page");
	if (!TskPageIsRightmost(op))
		tsk_pivot_read(page, TSK_HIKEY, &hikey);
	memcpy(scratch.data, page, BLCKSZ);
	if (!tsk_leaf_encode((Page) scratch.data, TskPageIsRightmost(op) ? NULL : &hikey.key, kept, nkept))
		elog(ERROR, "tskey vacuum: page no longer fits");
	memcpy(page, scratch.data, BLCKSZ);
	pfree(entries);
	pfree(kept);
}
