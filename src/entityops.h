/*-------------------------------------------------------------------------
 *
 * entityops.h
 *	  The entity operations (entityops.c) and their two write paths, peers
 *	  on the entity-relation layer: SPI (entityspi.c) and direct, through
 *	  the access methods (entitywrite.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_ENTITYOPS_H
#define TS_ENTITYOPS_H

#include "entity.h"
#include "entityrel.h"

/* The entity operations, single or in a batch. */
typedef enum TsOpKind
{
	TS_OP_INSERT,
	TS_OP_UPDATE,
	TS_OP_MERGE,
	TS_OP_INSERT_OR_REPLACE,
	TS_OP_INSERT_OR_MERGE,
	TS_OP_DELETE,
	TS_OP_RETRIEVE
} TsOpKind;

/* The entity after an operation: its Timestamp and stored properties. */
typedef struct TsOpResult
{
	TimestampTz ts;
	Jsonb	   *props;			/* NULL after a delete */
} TsOpResult;

/* entityops.c: the operations, and the choice of write path */
extern AclMode ts_op_privileges(TsOpKind kind);
extern TsEntityRel *ts_pin_relation(Oid relid, const char *relname, Oid keyindex);
extern void ts_apply_op(TsEntityRel *rel, TsOpKind kind, TsEntity *e, bool conditional,
						int64 ticks, TsOpResult *result);

/* entityspi.c: the SPI write path */
extern void ts_spi_prepare(TsEntityRel *rel);
extern void ts_spi_apply(TsEntityRel *rel, TsOpKind kind, TsEntity *e, bool conditional,
						 int64 ticks, TsOpResult *result);

/* entitywrite.c: the direct write path, without SPI */
extern bool ts_direct_usable(Oid relid, TsOpKind kind);
extern void ts_direct_apply(TsEntityRel *rel, TsOpKind kind, TsEntity *e, bool conditional,
							int64 ticks, TsOpResult *result);

#endif							/* TS_ENTITYOPS_H */
