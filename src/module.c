/*-------------------------------------------------------------------------
 *
 * module.c
 *	  Module entry point of the tablestore extension.
 *
 * _PG_init registers the WAL resource manager of the tskey index when the
 * library is loaded by shared_preload_libraries (the only time PostgreSQL
 * lets it); loaded later, by CREATE EXTENSION or a first call, tskey logs
 * with generic WAL instead (src/tskey/xlog.c, src/tskey/README).  Other
 * modules initialise their per-backend state on first use.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

#include "propindex.h"
#include "tskey/tskey.h"
#include "ttl.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/*
 * _PG_init: set up the tskey access method (tsk_init), the setting
 * tablestore.property_index (ts_propindex_init), and time to live's
 * settings and, when preloaded, its background worker (ts_ttl_init).
 */
void
_PG_init(void)
{
	tsk_init();
	ts_ttl_init();
	ts_propindex_init();
}
