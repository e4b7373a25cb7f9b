/*-------------------------------------------------------------------------
 *
 * tskey.h
 *	  The tskey index access method, as the rest of the extension sees it:
 *	  a B-link tree on (PartitionKey, RowKey) in the service's key order.
 *
 * The SQL-callable functions of the component (tskey_handler,
 * verify_index) are reached through the catalog, not through C; what
 * other modules call is only what _PG_init needs.  The internals are in
 * tskey_int.h; the design, locking and WAL are in src/tskey/README.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSKEY_H
#define TSKEY_H

/*
 * tsk_init: set up the access method when the library is loaded: its
 * reloptions, and its WAL resource manager if the library is being
 * preloaded (handler.c).
 */
extern void tsk_init(void);

#endif							/* TSKEY_H */
