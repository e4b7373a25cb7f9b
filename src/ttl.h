/*-------------------------------------------------------------------------
 *
 * ttl.h
 *	  Time to live (ttl.c): a table's default and an entity's own
 *	  TimeToLive, the clock every expiry test reads, the test itself, the
 *	  removal of an expired entity in the write path, the sweep and its
 *	  background worker.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_TTL_H
#define TS_TTL_H

#include "utils/jsonb.h"
#include "utils/timestamp.h"

/* A table's time to live: off (the catalog's NULL), -1 (no default), n > 0 */
#define TS_TTL_OFF			PG_INT32_MIN
#define TS_TTL_NEVER		(-1)

/* The reserved property holding an entity's own time to live. */
#define TS_TTL_PROPERTY		"TimeToLive"

extern void ts_ttl_init(void);
extern int32 ts_ttl_of_relation(Oid relid);
extern TimestampTz ts_ttl_now(void);
extern bool ts_ttl_expired(int32 table_ttl, TimestampTz ts, Jsonb *props, TimestampTz now);
extern void ts_ttl_check_entity(int32 table_ttl, Jsonb *props);
extern void ts_ttl_purge_key(Oid relid, Oid keyindex, int32 table_ttl, text *pk, text *rk);

#endif							/* TS_TTL_H */
