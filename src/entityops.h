/*-------------------------------------------------------------------------
 *
 * entityops.h
 *	  The entity operations, single or in a batch (entityops.c), which
 *	  choose one of the two write paths of writepath.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_ENTITYOPS_H
#define TS_ENTITYOPS_H

#include "entity.h"
#include "entityrel.h"
#include "writepath.h"

/* entityops.c: the operations, and the choice of write path */
extern AclMode ts_op_privileges(TsOpKind kind);
extern TsEntityRel *ts_pin_relation(Oid relid, const char *relname, Oid keyindex);
extern void ts_apply_op(TsEntityRel *rel, TsDirectWrite **direct, TsOpKind kind, TsEntity *e,
						bool conditional, int64 ticks, TsOpResult *result);

#endif							/* TS_ENTITYOPS_H */
