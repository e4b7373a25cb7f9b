/*-------------------------------------------------------------------------
 *
 * writepath.h
 *	  The two write paths beneath the entity operations, peers on the
 *	  entity-relation layer: SPI (entityspi.c) and direct, through the
 *	  table and index access methods (entitywrite.c).  The operations
 *	  (entityops.c) choose between them; neither calls the other.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_WRITEPATH_H
#define TS_WRITEPATH_H

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

/* entityspi.c: the SPI write path */
extern void ts_spi_prepare(TsEntityRel *rel);
extern void ts_spi_apply(TsEntityRel *rel, TsOpKind kind, TsEntity *e, bool conditional,
						 int64 ticks, TsOpResult *result);

/* entitywrite.c: the direct write path, without SPI */
typedef struct DirectWrite TsDirectWrite;	/* direct writes of a batch */
extern bool ts_direct_usable(Oid relid, TsOpKind kind);
extern TsDirectWrite *ts_direct_begin(TsEntityRel *rel);
extern void ts_direct_end(TsDirectWrite *w);
extern void ts_direct_apply(TsEntityRel *rel, TsDirectWrite *batch, TsOpKind kind, TsEntity *e,
							bool conditional, int64 ticks, TsOpResult *result);

#endif							/* TS_WRITEPATH_H */
