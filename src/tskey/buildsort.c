/*-------------------------------------------------------------------------
 *
 * buildsort.c
 *	  tskey index build: the in-memory sort of the heap's entries with the
 *	  PartitionKey stored and compared once per partition.
 *
 * The build's order is that of one byte string per entry, {pk', 0, rk', 0,
 * TID} (build.c, sort keys).  Sorted as bytea by the tuplesort, a
 * partition's entries share the first bytes of that string: bytea's
 * abbreviated key (its first 8 bytes) cannot tell them apart and is given
 * up, and every comparison follows two pointers and runs memcmp over the
 * whole PartitionKey (36 bytes for a GUID) before the RowKey decides.
 *
 * Here the heap scan interns each distinct pk' once (a hash table), and
 * each entry keeps only its pk's number, rk' and TID.  After the scan the
 * distinct pks are sorted and numbered in order (their rank), and each
 * entry gets a 64-bit abbreviated key: the rank in the high bits (as many as
 * the number of distinct pks needs) and the first bytes of rk' below, big-
 * endian.  Comparing (rank, rk', TID) is comparing the byte strings: two
 * strings with different pks are ordered by pk' (a NUL ends it, below any
 * byte of text), and the ranks are that order.  So the abbreviated key
 * decides nearly every comparison, within a partition as across them, with
 * no pointer followed; on a tie the comparator runs memcmp on rk' and then
 * the TID.  The entries are 24-byte structs sorted in place by a
 * specialised quicksort (lib/sort_template.h), and the writer reads each
 * entry's keys where they lie (no copy out of a sort).  The order is the
 * tuplesort's exactly (TIDs are unique, so it is total), hence the index is
 * byte for byte the one the tuplesort gives.
 *
 * All of this is in memory: when the entries would take more than
 * maintenance_work_mem, buildsort_spill hands those collected so far to the
 * caller as byte strings for the tuplesort, which can spill to disk, and
 * the build goes on that way.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "utils/memutils.h"

#include "tskey_int.h"
#include "buildsort.h"

/* A distinct pk' (its bytes in the arena), its number and rank. */
typedef struct PkKey
{
	const char *s;
	int			len;
} PkKey;

typedef struct PkEntry
{
	PkKey		key;
	uint32		hash;
	uint32		id;
	char		status;
} PkEntry;

#define SH_PREFIX		pkhash
#define SH_ELEMENT_TYPE	PkEntry
#define SH_KEY_TYPE		PkKey
#define SH_KEY			key
#define SH_HASH_KEY(tb, k)	hash_bytes((const unsigned char *) (k).s, (k).len)
#define SH_EQUAL(tb, a, b)	((a).len == (b).len && memcmp((a).s, (b).s, (a).len) == 0)
#define SH_STORE_HASH
#define SH_GET_HASH(tb, a)	((a)->hash)
#define SH_SCOPE		static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/*
 * One entry: abbreviated key, rk' followed by the TID's 6 bytes (big-
 * endian) and liveness in the arena, pk number, rk' length.
 */
typedef struct SortItem
{
	uint64		abbrev;
	const char *rk;
	uint32		pk;
	uint16		rklen;
} SortItem;

#define TAIL_BYTES	7			/* block (4), offset (2), alive (1) */
#define ARENA_CHUNK	(1024 * 1024)
#define PREFETCH_AHEAD	8		/* entries read ahead of the writer */

struct BuildSort
{
	MemoryContext cxt;
	Size		limit;			/* maintenance_work_mem in bytes */
	Size		used;			/* bytes of arena, items and the pk table */
	/* the arena: rk' and tails, pk' bytes, in chunks of ARENA_CHUNK */
	char	   *chunk;
	Size		chunkfree;
	/* entries */
	SortItem   *items;
	Size		nitems;
	Size		maxitems;
	Size		next;			/* next item to return */
	/* distinct pks: by bytes, and by number */
	pkhash_hash *pks;
	PkKey	   *pkbyid;
	uint32		npk;
	uint32		maxpk;
	uint32	   *rank;			/* rank of each pk number, after the sort */
	uint32		lastpk;			/* the previous tuple's pk number */
	bool		havelast;
};

/* arena_alloc: n bytes (unaligned) from the arena. */
static char *
arena_alloc(BuildSort *s, Size n)
{
	char	   *p;

	if (n > s->chunkfree)
	{
		Size		sz = Max(n, ARENA_CHUNK);

		s->chunk = MemoryContextAlloc(s->cxt, sz);
		s->chunkfree = sz;
		s->used += sz;
	}
	p = s->chunk;
	s->chunk += n;
	s->chunkfree -= n;
	return p;
}

/*
 * buildsort_begin: an empty in-memory sort, within maintenance_work_mem,
 * in a memory context of its own under the current one.
 */
BuildSort *
buildsort_begin(void)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "tskey build sort",
											  ALLOCSET_DEFAULT_SIZES);
	BuildSort  *s = MemoryContextAllocZero(cxt, sizeof(BuildSort));

	s->cxt = cxt;
	s->limit = (Size) maintenance_work_mem * 1024;
	s->maxitems = 1024;
	s->items = MemoryContextAlloc(cxt, s->maxitems * sizeof(SortItem));
	s->maxpk = 256;
	s->pkbyid = MemoryContextAlloc(cxt, s->maxpk * sizeof(PkKey));
	s->pks = pkhash_create(cxt, 256, NULL);
	s->used = s->maxitems * sizeof(SortItem) + s->maxpk * sizeof(PkKey);
	return s;
}

/*
 * buildsort_put: one entry, pk' and rk' being the sortable bytes of its
 * keys (build.c's sortable_copy).  Returns false, having added nothing,
 * when the sort would go beyond maintenance_work_mem: the caller then
 * spills.
 */
bool
buildsort_put(BuildSort *s, const char *pk, int pklen, const char *rk, int rklen,
			  ItemPointer tid, bool alive)
{
	uint32		id;
	SortItem   *it;
	char	   *p;
	BlockNumber blk = ItemPointerGetBlockNumber(tid);
	OffsetNumber off = ItemPointerGetOffsetNumber(tid);

	/* room for this entry at worst: a new arena chunk, items and pk table doubled */
	if (s->used +
		(s->chunkfree < (Size) pklen + rklen + TAIL_BYTES ? Max((Size) pklen + rklen + TAIL_BYTES, ARENA_CHUNK) : 0) +
		(s->nitems == s->maxitems ? s->maxitems * sizeof(SortItem) : 0) +
		(s->npk == s->maxpk ? s->maxpk * (sizeof(PkKey) + 2 * sizeof(PkEntry)) : 0) > s->limit)
		return false;

	/* the pk's number: the previous tuple's (tables are often in pk order), else the table's */
	if (s->havelast && s->pkbyid[s->lastpk].len == pklen &&
		memcmp(s->pkbyid[s->lastpk].s, pk, pklen) == 0)
		id = s->lastpk;
	else
	{
		PkKey		k = {pk, pklen};
		PkEntry    *e;
		bool		found;
		uint32		oldsize = s->pks->size;

		e = pkhash_insert(s->pks, k, &found);
		if (!found)
		{
			char	   *copy = arena_alloc(s, pklen);

			memcpy(copy, pk, pklen);
			e->key.s = copy;
			if (s->npk == s->maxpk)
			{
				s->used += s->maxpk * sizeof(PkKey);
				s->maxpk *= 2;
				s->pkbyid = repalloc_huge(s->pkbyid, s->maxpk * sizeof(PkKey));
			}
			e->id = s->npk;
			s->pkbyid[s->npk++] = e->key;
		}
		if (s->pks->size != oldsize)
			s->used += (s->pks->size - oldsize) * sizeof(PkEntry);
		id = e->id;
		s->lastpk = id;
		s->havelast = true;
	}

	if (s->nitems == s->maxitems)
	{
		s->used += s->maxitems * sizeof(SortItem);
		s->maxitems *= 2;
		s->items = repalloc_huge(s->items, s->maxitems * sizeof(SortItem));
	}
	p = arena_alloc(s, rklen + TAIL_BYTES);
	memcpy(p, rk, rklen);
	p[rklen] = blk >> 24;
	p[rklen + 1] = blk >> 16;
	p[rklen + 2] = blk >> 8;
	p[rklen + 3] = blk;
	p[rklen + 4] = off >> 8;
	p[rklen + 5] = off;
	p[rklen + 6] = alive;
	it = &s->items[s->nitems++];
	it->abbrev = 0;
	it->rk = p;
	it->pk = id;
	it->rklen = rklen;
	return true;
}

/*
 * buildsort_spill: the entries collected so far, in no order, as the byte
 * strings of build.c ({pk', 0, rk', 0, TID, alive}), passed to put one by
 * one; then the sort is freed.
 */
void
buildsort_spill(BuildSort *s, void (*put) (void *arg, const char *pk, int pklen,
										   const char *rk, int rklen, const char *tail),
				void *arg)
{
	for (Size i = 0; i < s->nitems; i++)
	{
		SortItem   *it = &s->items[i];
		PkKey	   *pk = &s->pkbyid[it->pk];

		CHECK_FOR_INTERRUPTS();
		put(arg, pk->s, pk->len, it->rk, it->rklen, it->rk + it->rklen);
	}
	MemoryContextDelete(s->cxt);
}

/* pk_cmp: byte order of two pk' (a prefix first: a NUL follows each). */
static int
pk_cmp(const void *a, const void *b, void *arg)
{
	const PkKey *pkbyid = (const PkKey *) arg;
	const PkKey *x = &pkbyid[*(const uint32 *) a];
	const PkKey *y = &pkbyid[*(const uint32 *) b];
	int			c = memcmp(x->s, y->s, Min(x->len, y->len));

	if (c != 0)
		return c;
	return (x->len > y->len) - (x->len < y->len);
}

/*
 * item_cmp: the order of two entries' byte strings.  The abbreviated keys
 * hold the pk ranks whole, so on a tie the pks are equal and rk' decides
 * (a prefix first, as a NUL follows it in the string), then the TID.
 */
static inline int
item_cmp(const SortItem *a, const SortItem *b)
{
	int			c;

	if (a->abbrev != b->abbrev)
		return a->abbrev < b->abbrev ? -1 : 1;
	c = memcmp(a->rk, b->rk, Min(a->rklen, b->rklen));
	if (c != 0)
		return c;
	if (a->rklen != b->rklen)
		return a->rklen < b->rklen ? -1 : 1;
	return memcmp(a->rk + a->rklen, b->rk + b->rklen, 6);
}

#define ST_SORT			sort_items
#define ST_ELEMENT_TYPE	SortItem
#define ST_COMPARE(a, b)	item_cmp(a, b)
#define ST_SCOPE		static
#define ST_DEFINE
#include "lib/sort_template.h"

/*
 * buildsort_perform: rank the distinct pks, give every entry its
 * abbreviated key, and sort the entries.
 */
void
buildsort_perform(BuildSort *s)
{
	uint32	   *order;
	int			rankbits;

	/* the pks in byte order, and each one's rank */
	order = MemoryContextAlloc(s->cxt, Max(s->npk, 1) * sizeof(uint32));
	for (uint32 i = 0; i < s->npk; i++)
		order[i] = i;
	qsort_arg(order, s->npk, sizeof(uint32), pk_cmp, s->pkbyid);
	s->rank = MemoryContextAlloc(s->cxt, Max(s->npk, 1) * sizeof(uint32));
	for (uint32 i = 0; i < s->npk; i++)
		s->rank[order[i]] = i;
	pfree(order);
	pkhash_destroy(s->pks);
	s->pks = NULL;

	/* rank in the top rankbits bits, the first bytes of rk' below */
	rankbits = s->npk > 1 ? pg_leftmost_one_pos32(s->npk - 1) + 1 : 0;
	for (Size i = 0; i < s->nitems; i++)
	{
		SortItem   *it = &s->items[i];
		uint64		prefix = 0;
		int			n = Min(it->rklen, 8);

		for (int j = 0; j < n; j++)
			prefix |= (uint64) (unsigned char) it->rk[j] << (56 - 8 * j);
		if (rankbits == 0)
			it->abbrev = prefix;
		else
			it->abbrev = ((uint64) s->rank[it->pk] << (64 - rankbits)) | (prefix >> rankbits);
	}
	sort_items(s->items, s->nitems);
}

/*
 * buildsort_next: the next entry in order: its pk' and rk' (in the sort's
 * memory, which the caller may change in place: each is returned once, a
 * pk' once per partition as *newpk tells), the TID and liveness.  Returns
 * false at the end.
 */
bool
buildsort_next(BuildSort *s, char **pk, int *pklen, bool *newpk,
			   char **rk, int *rklen, ItemPointer tid, bool *alive)
{
	SortItem   *it;
	const unsigned char *t;

	if (s->next >= s->nitems)
		return false;
#ifdef __GNUC__
	/* the arena is read in sorted order, at random: ask for a key ahead */
	if (s->next + PREFETCH_AHEAD < s->nitems)
		__builtin_prefetch(s->items[s->next + PREFETCH_AHEAD].rk);
#endif
	it = &s->items[s->next++];
	*newpk = s->next == 1 || it->pk != s->items[s->next - 2].pk;
	*pk = (char *) s->pkbyid[it->pk].s;
	*pklen = s->pkbyid[it->pk].len;
	*rk = (char *) it->rk;
	*rklen = it->rklen;
	t = (const unsigned char *) it->rk + it->rklen;
	ItemPointerSet(tid, ((BlockNumber) t[0] << 24) | ((BlockNumber) t[1] << 16) |
				   ((BlockNumber) t[2] << 8) | t[3], ((OffsetNumber) t[4] << 8) | t[5]);
	*alive = t[6] != 0;
	return true;
}

/* buildsort_end: free the sort's memory. */
void
buildsort_end(BuildSort *s)
{
	MemoryContextDelete(s->cxt);
}
