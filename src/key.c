/*-------------------------------------------------------------------------
 *
 * key.c
 *	  The key type tablestore.key: text that orders as the Table service
 *	  orders PartitionKeys and RowKeys.
 *
 * The service compares keys ordinally by UTF-16 code unit.  PostgreSQL's
 * text in the "C" collation compares UTF-8 bytes, that is code points, which
 * differs where a supplementary character (U+10000 and up) meets one in
 * U+E000..U+FFFF.  The entity relations' pk and rk columns are therefore of
 * type tablestore.key: the same bytes as text (so the casts both ways cost
 * nothing), with comparison operators and a default btree operator class of
 * its own that compare by UTF-16 code unit.  A user's ORDER BY pk, rk and key
 * predicates then mean what they mean in the service, and an index on the
 * keys (the btree, or the extension's access method, whose operator class
 * reuses these operators) returns entities in the service's order.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "fmgr.h"
#include "utils/sortsupport.h"

#include "tablestore.h"
#include "key.h"
#include "utf16.h"

/*
 * ts_key_cmp: compare two keys (PartitionKey or RowKey values) in the
 * service's order, by UTF-16 code unit: the one comparison of keys as text
 * that the key type, the query planner and the scans share.
 */
int
ts_key_cmp(const text *a, const text *b)
{
	return ts_utf16_cmp(VARDATA_ANY(a), VARSIZE_ANY_EXHDR(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b));
}

/*
 * ts_key_pair_cmp: compare two entities' keys, PartitionKey first, then
 * RowKey, each by ts_key_cmp: the order of the key index and of a query's
 * results, in which the router merges the nodes' pages.
 */
int
ts_key_pair_cmp(const text *apk, const text *ark, const text *bpk, const text *brk)
{
	int			c = ts_key_cmp(apk, bpk);

	return c != 0 ? c : ts_key_cmp(ark, brk);
}

/* Compare two key datums by UTF-16 code unit, freeing what detoasting made. */
static int
key_compare(Datum a, Datum b)
{
	text	   *ta = DatumGetTextPP(a);
	text	   *tb = DatumGetTextPP(b);
	int			r;

	r = ts_key_cmp(ta, tb);
	if ((Pointer) ta != DatumGetPointer(a))
		pfree(ta);
	if ((Pointer) tb != DatumGetPointer(b))
		pfree(tb);
	return r;
}

/* The sort support comparator: the same order without the fmgr call. */
static int
key_fastcmp(Datum a, Datum b, SortSupport ssup)
{
	return key_compare(a, b);
}

/*
 * tablestore.key_cmp(key, key) RETURNS int4: btree support function 1.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(key_cmp);

Datum
key_cmp(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(key_compare(PG_GETARG_DATUM(0), PG_GETARG_DATUM(1)));
}

/*
 * tablestore.key_sortsupport(internal): btree support function 2, so that
 * sorts by key (ORDER BY without an index, index builds) skip fmgr.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(key_sortsupport);

Datum
key_sortsupport(PG_FUNCTION_ARGS)
{
	SortSupport ssup = (SortSupport) PG_GETARG_POINTER(0);

	ssup->comparator = key_fastcmp;
	PG_RETURN_VOID();
}

/*
 * tablestore.key_hash(key) RETURNS int4: hash support, for hash joins and
 * hash aggregation on keys.  Equal keys are equal bytes, so hashing the
 * bytes is consistent with key equality.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(key_hash);

Datum
key_hash(PG_FUNCTION_ARGS)
{
	text	   *t = PG_GETARG_TEXT_PP(0);

	PG_RETURN_DATUM(hash_any((const unsigned char *) VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)));
}

/*
 * The comparison operators' functions.  Equality needs no UTF-16 logic:
 * two keys are equal exactly when their bytes are.
 */
#define KEY_COMPARISON(name, test) \
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(name); \
Datum \
name(PG_FUNCTION_ARGS) \
{ \
	int			c = key_compare(PG_GETARG_DATUM(0), PG_GETARG_DATUM(1)); \
	PG_RETURN_BOOL(test); \
}

KEY_COMPARISON(key_lt, c < 0)
KEY_COMPARISON(key_le, c <= 0)
KEY_COMPARISON(key_eq, c == 0)
KEY_COMPARISON(key_ne, c != 0)
KEY_COMPARISON(key_ge, c >= 0)
KEY_COMPARISON(key_gt, c > 0)
