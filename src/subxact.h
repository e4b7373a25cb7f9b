/*-------------------------------------------------------------------------
 *
 * subxact.h
 *	  A function run in an internal subtransaction, its error returned as
 *	  data (subxact.c): what the write paths, batches and the node's side
 *	  of routed calls share.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_SUBXACT_H
#define TS_SUBXACT_H

#include "utils/elog.h"

extern ErrorData *ts_run_in_subtransaction(void (*fn) (void *arg), void *arg);

#endif							/* TS_SUBXACT_H */
