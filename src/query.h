/*-------------------------------------------------------------------------
 *
 * query.h
 *	  Queries (query.c): the scans of the key index behind query_entities
 *	  and list_tables, and what other modules read through them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_QUERY_H
#define TS_QUERY_H

#include "utils/jsonb.h"
#include "utils/snapshot.h"

extern bool ts_key_exists_raw(Oid relid, text *pk, text *rk, Snapshot snapshot);
extern bool ts_point_read(text *table_name, text *pk, text *rk, const char *select_list,
						  Jsonb **result);

#endif							/* TS_QUERY_H */
