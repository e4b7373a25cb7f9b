/*-------------------------------------------------------------------------
 *
 * tablestore.c
 *	  Module entry point of the tablestore extension.
 *
 * The extension needs no shared memory, hooks or GUCs yet, so there is no
 * _PG_init: each module initialises its per-backend state on first use.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

PG_MODULE_MAGIC;
