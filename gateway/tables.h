/*-------------------------------------------------------------------------
 *
 * tables.h
 *	  The table handlers (tables.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_TABLES_H
#define TSGW_TABLES_H

#include "reqtypes.h"

extern void table_query(Req *r, Resp *resp);
extern void table_get(Req *r, Resp *resp, const char *name);
extern void table_create(Req *r, Resp *resp);
extern void table_delete(Req *r, Resp *resp, const char *name);

#endif							/* TSGW_TABLES_H */
