/*-------------------------------------------------------------------------
 *
 * odata.h
 *	  The OData JSON payloads (odata.c): entities and tables shaped for a
 *	  metadata level, the metadata prefix and continuation headers.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_ODATA_H
#define TSGW_ODATA_H

#include <json-c/json.h>

#include "buf.h"
#include "reqtypes.h"

extern json_object *shape_entity(Req *r, Level level, const char *table, json_object *e, bool single);
extern json_object *shape_entity_keyed(Req *r, Level level, const char *table, json_object *e, bool single,
									   const char *pk, const char *rk);
extern void etag_header(Resp *resp, json_object *e);
extern json_object *table_item(Req *r, const char *name, bool single);
extern void metadata_prefix(Req *r, Buf *b, const char *table, const char *suffix);
extern void continuation_headers(Req *r, Resp *resp, const char *table, const char *npk, const char *nrk);

#endif							/* TSGW_ODATA_H */
