/*-------------------------------------------------------------------------
 *
 * queryplan.h
 *	  From a filter to the cheapest scan of the key index (queryplan.c):
 *	  point, multi-point, range, partition and table scans; continuation
 *	  bounds; explain.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_QUERYPLAN_H
#define TS_QUERYPLAN_H

#include "nodes/pg_list.h"
#include "utils/jsonb.h"
#include "filter/filter.h"

/* The access kinds, cheapest first (doc/queries.md, "Access paths"). */
typedef enum TsAccessKind
{
	TS_ACCESS_POINT,			/* PartitionKey eq and RowKey eq: one probe */
	TS_ACCESS_MULTI_POINT,		/* a disjunction of points: one probe each */
	TS_ACCESS_RANGE,			/* PartitionKey eq and RowKey bounds */
	TS_ACCESS_PARTITION,		/* PartitionKey eq */
	TS_ACCESS_KEY_RANGE,		/* PartitionKey bounds */
	TS_ACCESS_TABLE,			/* everything, in key order */
	TS_ACCESS_PROPERTY_INDEX	/* the keys a property index yields, probed
								 * in key order (propindex.c) */
} TsAccessKind;

/* One end of a key range; value NULL: unbounded. */
typedef struct TsKeyBound
{
	text	   *value;
	bool		inclusive;
} TsKeyBound;

typedef struct TsKeyRange
{
	TsKeyBound	lo;
	TsKeyBound	hi;
} TsKeyRange;

/*
 * A contiguous stretch of the key index: PartitionKey in pk and RowKey in
 * rk.  A query runs a list of segments in key order.
 */
typedef struct TsScanSegment
{
	TsKeyRange	pk;
	TsKeyRange	rk;
} TsScanSegment;

typedef struct TsQueryPlan
{
	TsAccessKind kind;
	TsKeyRange	pk;				/* bounds of PartitionKey */
	TsKeyRange	rk;				/* bounds of RowKey */
	List	   *points;			/* TsScanSegment per point, in key order */
	FilterNode *residual;		/* what the scan leaves to check, or NULL */
	bool		empty;			/* the bounds contradict: nothing matches */
	struct TsPropIndexUse *propindex;	/* a property index used or
										 * considered (propindex.c) */
} TsQueryPlan;

extern TsQueryPlan *ts_plan_query(FilterNode *filter);
extern List *ts_plan_segments(const TsQueryPlan *plan, text *next_pk, text *next_rk);
extern Jsonb *ts_explain_plan(const TsQueryPlan *plan);
extern bool ts_key_range_is_point(const TsKeyRange *r);
extern bool ts_key_in_range(const TsKeyRange *r, const text *v);
extern TsScanSegment *ts_point_segment(text *pk, text *rk);

#endif							/* TS_QUERYPLAN_H */
