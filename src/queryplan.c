/*-------------------------------------------------------------------------
 *
 * queryplan.c
 *	  From a parsed $filter to the cheapest scan of the key index that
 *	  returns exactly the matching entities, and the rest of the filter,
 *	  which is checked on each entity the scan returns.
 *
 * The top-level conjuncts of the filter are examined one by one:
 *	- "PartitionKey op 'string'" and "RowKey op 'string'" with op one of eq,
 *	  gt, ge, lt, le narrow the key bounds and are then fully answered by the
 *	  scan;
 *	- one disjunction whose every branch is a point ("RowKey eq 'x'", or
 *	  "PartitionKey eq 'p' and RowKey eq 'x'") becomes a list of probes;
 *	- everything else is the residual predicate.
 * From the bounds follows the access kind: point, multi-point, range (a
 * partition and RowKey bounds), partition scan, key-range scan
 * (PartitionKey bounds) or table scan, all in key order.
 *
 * A continuation (NextPartitionKey, NextRowKey) becomes the lower bound of
 * the scan, not a filter: the rest of its partition from its RowKey on, then
 * the partitions after it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"

#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "key.h"
#include "filter/filter.h"
#include "queryplan.h"
#include "propindex.h"

/* Narrow the lower bound of r to "> v" or ">= v". */
static void
narrow_lo(TsKeyRange *r, text *v, bool inclusive)
{
	int			c;

	if (r->lo.value == NULL || (c = ts_key_cmp(v, r->lo.value)) > 0)
	{
		r->lo.value = v;
		r->lo.inclusive = inclusive;
	}
	else if (c == 0)
		r->lo.inclusive = r->lo.inclusive && inclusive;
}

/* Narrow the upper bound of r to "< v" or "<= v". */
static void
narrow_hi(TsKeyRange *r, text *v, bool inclusive)
{
	int			c;

	if (r->hi.value == NULL || (c = ts_key_cmp(v, r->hi.value)) < 0)
	{
		r->hi.value = v;
		r->hi.inclusive = inclusive;
	}
	else if (c == 0)
		r->hi.inclusive = r->hi.inclusive && inclusive;
}

/* Whether a range holds no key at all. */
static bool
range_is_empty(const TsKeyRange *r)
{
	int			c;

	if (r->lo.value == NULL || r->hi.value == NULL)
		return false;
	c = ts_key_cmp(r->lo.value, r->hi.value);
	return c > 0 || (c == 0 && !(r->lo.inclusive && r->hi.inclusive));
}

/* ts_key_range_is_point: whether a range is one key. */
bool
ts_key_range_is_point(const TsKeyRange *r)
{
	return r->lo.value != NULL && r->hi.value != NULL &&
		r->lo.inclusive && r->hi.inclusive && ts_key_cmp(r->lo.value, r->hi.value) == 0;
}

/* ts_key_in_range: whether key v lies in range r. */
bool
ts_key_in_range(const TsKeyRange *r, const text *v)
{
	int			c;

	if (r->lo.value != NULL && ((c = ts_key_cmp(v, r->lo.value)) < 0 || (c == 0 && !r->lo.inclusive)))
		return false;
	if (r->hi.value != NULL && ((c = ts_key_cmp(v, r->hi.value)) > 0 || (c == 0 && !r->hi.inclusive)))
		return false;
	return true;
}

/*
 * ts_point_segment: the segment of the one key (pk, rk): a probe.
 */
TsScanSegment *
ts_point_segment(text *pk, text *rk)
{
	TsScanSegment *seg = palloc0(sizeof(TsScanSegment));

	seg->pk.lo.value = seg->pk.hi.value = pk;
	seg->rk.lo.value = seg->rk.hi.value = rk;
	seg->pk.lo.inclusive = seg->pk.hi.inclusive = true;
	seg->rk.lo.inclusive = seg->rk.hi.inclusive = true;
	return seg;
}

/* Which key a comparison constrains: 1 PartitionKey, 2 RowKey, 0 none. */
static int
key_comparison(const FilterNode *n)
{
	if (n->kind != FN_COMPARE || n->lit.type != FLIT_STRING || n->op == FOP_NE)
		return 0;
	if (n->proplen == 12 && memcmp(n->prop, "PartitionKey", 12) == 0)
		return 1;
	if (n->proplen == 6 && memcmp(n->prop, "RowKey", 6) == 0)
		return 2;
	return 0;
}

static text *
literal_text(const FilterNode *n)
{
	return cstring_to_text_with_len(n->lit.v.bytes.data, (int) n->lit.v.bytes.len);
}

/* Apply a key comparison (key_comparison(n) != 0) to range r. */
static void
apply_comparison(TsKeyRange *r, const FilterNode *n)
{
	text	   *v = literal_text(n);

	switch (n->op)
	{
		case FOP_EQ:
			narrow_lo(r, v, true);
			narrow_hi(r, v, true);
			break;
		case FOP_GT:
			narrow_lo(r, v, false);
			break;
		case FOP_GE:
			narrow_lo(r, v, true);
			break;
		case FOP_LT:
			narrow_hi(r, v, false);
			break;
		case FOP_LE:
			narrow_hi(r, v, true);
			break;
		case FOP_NE:
			Assert(false);
			break;
	}
}

/* Append the operands of nested kind nodes (AND or OR) to list. */
static List *
flatten(FilterNode *n, FilterNodeKind kind, List *list)
{
	check_stack_depth();
	if (n->kind == kind)
	{
		list = flatten(n->left, kind, list);
		return flatten(n->right, kind, list);
	}
	return lappend(list, n);
}

/*
 * A branch of a disjunction as a point: "RowKey eq 'x'" (*pk set to NULL:
 * the partition comes from elsewhere) or "PartitionKey eq 'p' and RowKey eq
 * 'x'" in either order.  False if the branch is anything else.
 */
static bool
branch_point(FilterNode *n, text **pk, text **rk)
{
	*pk = NULL;
	*rk = NULL;
	if (n->kind == FN_AND)
	{
		List	   *parts = flatten(n, FN_AND, NIL);
		ListCell   *lc;

		if (list_length(parts) != 2)
			return false;
		foreach(lc, parts)
		{
			FilterNode *p = lfirst(lc);
			int			which = key_comparison(p);

			if (which == 0 || p->op != FOP_EQ)
				return false;
			if (which == 1 && *pk == NULL)
				*pk = literal_text(p);
			else if (which == 2 && *rk == NULL)
				*rk = literal_text(p);
			else
				return false;
		}
		return *pk != NULL && *rk != NULL;
	}
	if (key_comparison(n) == 2 && n->op == FOP_EQ)
	{
		*rk = literal_text(n);
		return true;
	}
	return false;
}

/* Order points (segments of one key each) by key. */
static int
point_cmp(const ListCell *a, const ListCell *b)
{
	const TsScanSegment *pa = lfirst(a);
	const TsScanSegment *pb = lfirst(b);

	return ts_key_pair_cmp(pa->pk.lo.value, pa->rk.lo.value, pb->pk.lo.value, pb->rk.lo.value);
}

/*
 * Whether every branch of disjunction n is a point, the partition of each
 * "RowKey eq" branch being pk_eq (NULL: unknown, so such a branch is not a
 * point).  If so, *points gets the points inside the bounds pkr and rkr
 * (the conjunction with the bounds excludes the others), sorted, without
 * duplicates.
 */
static bool
disjunction_points(FilterNode *n, text *pk_eq, const TsKeyRange *pkr, const TsKeyRange *rkr,
				   List **points)
{
	List	   *all = NIL;
	ListCell   *lc;

	*points = NIL;
	foreach(lc, flatten(n, FN_OR, NIL))
	{
		text	   *pk;
		text	   *rk;

		if (!branch_point(lfirst(lc), &pk, &rk))
			return false;
		if (pk == NULL)
		{
			if (pk_eq == NULL)
				return false;
			pk = pk_eq;
		}
		if (!ts_key_in_range(pkr, pk) || !ts_key_in_range(rkr, rk))
			continue;
		all = lappend(all, ts_point_segment(pk, rk));
	}
	list_sort(all, point_cmp);
	foreach(lc, all)
		if (*points == NIL || point_cmp(list_last_cell(*points), lc) != 0)
			*points = lappend(*points, lfirst(lc));
	return true;
}

/* Join conjuncts with AND; NULL for none. */
static FilterNode *
conjunction(List *conjuncts)
{
	FilterNode *result = NULL;
	ListCell   *lc;

	foreach(lc, conjuncts)
	{
		FilterNode *n;

		if (result == NULL)
		{
			result = lfirst(lc);
			continue;
		}
		n = palloc0(sizeof(FilterNode));
		n->kind = FN_AND;
		n->left = result;
		n->right = lfirst(lc);
		result = n;
	}
	return result;
}

/*
 * ts_plan_query: the access path of a filter (see the file comment).
 */
TsQueryPlan *
ts_plan_query(FilterNode *filter)
{
	TsQueryPlan *plan = palloc0(sizeof(TsQueryPlan));
	List	   *conjuncts = flatten(filter, FN_AND, NIL);
	List	   *residual = NIL;
	List	   *disjunctions = NIL;
	FilterNode *points_from = NULL;
	ListCell   *lc;

	foreach(lc, conjuncts)
	{
		FilterNode *n = lfirst(lc);

		switch (key_comparison(n))
		{
			case 1:
				apply_comparison(&plan->pk, n);
				break;
			case 2:
				apply_comparison(&plan->rk, n);
				break;
			default:
				if (n->kind == FN_CONST && n->value)
					break;		/* "true" constrains nothing */
				if (n->kind == FN_CONST)
					plan->empty = true;
				if (n->kind == FN_OR)
					disjunctions = lappend(disjunctions, n);
				else
					residual = lappend(residual, n);
				break;
		}
	}

	/* the first disjunction of points becomes probes; the others stay */
	foreach(lc, disjunctions)
	{
		FilterNode *n = lfirst(lc);

		if (points_from == NULL &&
			disjunction_points(n, ts_key_range_is_point(&plan->pk) ? plan->pk.lo.value : NULL,
							   &plan->pk, &plan->rk, &plan->points))
		{
			points_from = n;
			if (plan->points == NIL)
				plan->empty = true;
		}
		else
			residual = lappend(residual, n);
	}

	if (range_is_empty(&plan->pk) || range_is_empty(&plan->rk))
		plan->empty = true;

	if (points_from != NULL)
		plan->kind = list_length(plan->points) == 1 ? TS_ACCESS_POINT : TS_ACCESS_MULTI_POINT;
	else if (ts_key_range_is_point(&plan->pk))
	{
		if (ts_key_range_is_point(&plan->rk))
			plan->kind = TS_ACCESS_POINT;
		else if (plan->rk.lo.value != NULL || plan->rk.hi.value != NULL)
			plan->kind = TS_ACCESS_RANGE;
		else
			plan->kind = TS_ACCESS_PARTITION;
	}
	else if (plan->pk.lo.value != NULL || plan->pk.hi.value != NULL)
		plan->kind = TS_ACCESS_KEY_RANGE;
	else
		plan->kind = TS_ACCESS_TABLE;

	/* a single point found by bounds is a probe like the others */
	if (plan->kind == TS_ACCESS_POINT && points_from == NULL)
	{
		TsScanSegment *seg = palloc0(sizeof(TsScanSegment));

		seg->pk = plan->pk;
		seg->rk = plan->rk;
		plan->points = list_make1(seg);
	}

	plan->residual = conjunction(residual);
	return plan;
}

/*
 * ts_plan_segments: the stretches of the key index a query scans, in key
 * order, starting at the continuation (next_pk, next_rk) if given.
 */
List *
ts_plan_segments(const TsQueryPlan *plan, text *next_pk, text *next_rk)
{
	List	   *segments = NIL;
	ListCell   *lc;

	if (plan->empty)
		return NIL;

	if (plan->points != NIL)
	{
		foreach(lc, plan->points)
		{
			TsScanSegment *p = lfirst(lc);
			int			c = 0;

			if (next_pk != NULL)
			{
				c = ts_key_cmp(p->pk.lo.value, next_pk);
				if (c == 0)
					c = ts_key_cmp(p->rk.lo.value, next_rk);
			}
			if (c >= 0)
				segments = lappend(segments, p);
		}
		return segments;
	}

	if (next_pk == NULL)
	{
		TsScanSegment *seg = palloc0(sizeof(TsScanSegment));

		seg->pk = plan->pk;
		seg->rk = plan->rk;
		return list_make1(seg);
	}
	else
	{
		/* the rest of the continuation's partition, from its RowKey on */
		TsScanSegment *first = palloc0(sizeof(TsScanSegment));
		TsScanSegment *rest = palloc0(sizeof(TsScanSegment));

		first->pk = plan->pk;
		narrow_lo(&first->pk, next_pk, true);
		narrow_hi(&first->pk, next_pk, true);
		first->rk = plan->rk;
		narrow_lo(&first->rk, next_rk, true);
		if (!range_is_empty(&first->pk) && !range_is_empty(&first->rk))
			segments = lappend(segments, first);

		/* then the partitions after it */
		rest->pk = plan->pk;
		narrow_lo(&rest->pk, next_pk, false);
		rest->rk = plan->rk;
		if (!range_is_empty(&rest->pk) && !range_is_empty(&rest->rk))
			segments = lappend(segments, rest);
	}
	return segments;
}

/* The name of an access kind, as explain_query shows it. */
static const char *
access_kind_name(TsAccessKind kind)
{
	static const char *const names[] = {
		"point", "multi-point", "range", "partition scan", "key range scan", "table scan",
		"property index"
	};

	return names[kind];
}

static void
push_key(JsonbParseState **st, const char *key, const char *val, int len)
{
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.val = (char *) key;
	v.val.string.len = strlen(key);
	pushJsonbValue(st, WJB_KEY, &v);
	if (val == NULL)
		v.type = jbvNull;
	else
	{
		v.val.string.val = (char *) val;
		v.val.string.len = len;
	}
	pushJsonbValue(st, WJB_VALUE, &v);
}

/* {"ge": "a", "lt": "b"}-style bounds of a range, or null if unbounded. */
static void
push_range(JsonbParseState **st, const char *name, const TsKeyRange *r)
{
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.val = (char *) name;
	v.val.string.len = strlen(name);
	pushJsonbValue(st, WJB_KEY, &v);
	if (r->lo.value == NULL && r->hi.value == NULL)
	{
		v.type = jbvNull;
		pushJsonbValue(st, WJB_VALUE, &v);
		return;
	}
	pushJsonbValue(st, WJB_BEGIN_OBJECT, NULL);
	if (ts_key_range_is_point(r))
		push_key(st, "eq", VARDATA_ANY(r->lo.value), VARSIZE_ANY_EXHDR(r->lo.value));
	else
	{
		if (r->lo.value != NULL)
			push_key(st, r->lo.inclusive ? "ge" : "gt", VARDATA_ANY(r->lo.value),
					 VARSIZE_ANY_EXHDR(r->lo.value));
		if (r->hi.value != NULL)
			push_key(st, r->hi.inclusive ? "le" : "lt", VARDATA_ANY(r->hi.value),
					 VARSIZE_ANY_EXHDR(r->hi.value));
	}
	pushJsonbValue(st, WJB_END_OBJECT, NULL);
}

/*
 * ts_explain_plan: the plan as JSON: {"access", "partition_key",
 * "row_key", "points", "residual", "property_index", "empty"}.
 */
Jsonb *
ts_explain_plan(const TsQueryPlan *plan)
{
	JsonbParseState *st = NULL;
	JsonbValue	v;
	JsonbValue *res;
	const char *kind = access_kind_name(plan->kind);

	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	push_key(&st, "access", kind, strlen(kind));
	push_range(&st, "partition_key", &plan->pk);
	push_range(&st, "row_key", &plan->rk);

	v.type = jbvString;
	v.val.string.val = "points";
	v.val.string.len = 6;
	pushJsonbValue(&st, WJB_KEY, &v);
	if (plan->kind == TS_ACCESS_POINT || plan->kind == TS_ACCESS_MULTI_POINT)
	{
		ListCell   *lc;

		pushJsonbValue(&st, WJB_BEGIN_ARRAY, NULL);
		foreach(lc, plan->points)
		{
			TsScanSegment *p = lfirst(lc);

			pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
			push_key(&st, "PartitionKey", VARDATA_ANY(p->pk.lo.value), VARSIZE_ANY_EXHDR(p->pk.lo.value));
			push_key(&st, "RowKey", VARDATA_ANY(p->rk.lo.value), VARSIZE_ANY_EXHDR(p->rk.lo.value));
			pushJsonbValue(&st, WJB_END_OBJECT, NULL);
		}
		pushJsonbValue(&st, WJB_END_ARRAY, NULL);
	}
	else
	{
		v.type = jbvNull;
		pushJsonbValue(&st, WJB_VALUE, &v);
	}

	if (plan->residual != NULL)
	{
		size_t		n = filter_format(plan->residual, NULL, 0);
		char	   *buf = palloc(n + 1);

		filter_format(plan->residual, buf, n + 1);
		push_key(&st, "residual", buf, (int) n);
	}
	else
		push_key(&st, "residual", NULL, 0);

	ts_propindex_explain(&st, plan);

	v.type = jbvString;
	v.val.string.val = "empty";
	v.val.string.len = 5;
	pushJsonbValue(&st, WJB_KEY, &v);
	v.type = jbvBool;
	v.val.boolean = plan->empty;
	pushJsonbValue(&st, WJB_VALUE, &v);

	res = pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	return JsonbValueToJsonb(res);
}
