/*-------------------------------------------------------------------------
 *
 * entities.h
 *	  The entity handlers (entities.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_ENTITIES_H
#define TSGW_ENTITIES_H

#include "reqtypes.h"

extern void entity_query(Req *r, Resp *resp, const char *table);
extern void entity_get(Req *r, Resp *resp, const char *table, const char *pk, const char *rk);
extern void entity_insert(Req *r, Resp *resp, const char *table);
extern void entity_write(Req *r, Resp *resp, const char *table, const char *pk, const char *rk);
extern void entity_delete(Req *r, Resp *resp, const char *table, const char *pk, const char *rk);

#endif							/* TSGW_ENTITIES_H */
