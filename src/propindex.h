/*-------------------------------------------------------------------------
 *
 * propindex.h
 *	  Property indexes (propindex.c): btree indexes over one property of
 *	  one Edm type, their SQL functions, and the $filter planner's use of
 *	  them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_PROPINDEX_H
#define TS_PROPINDEX_H

#include "utils/jsonb.h"
#include "queryplan.h"

extern void ts_propindex_init(void);
extern void ts_propindex_plan(Oid relid, TsQueryPlan *plan, int64 top);
extern void ts_propindex_explain(JsonbParseState **st, const TsQueryPlan *plan);

#endif							/* TS_PROPINDEX_H */
