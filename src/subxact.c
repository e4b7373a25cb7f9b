/*-------------------------------------------------------------------------
 *
 * subxact.c
 *	  Running a function in an internal subtransaction, its error caught
 *	  as data.
 *
 * Three callers need "try this, and if it fails undo it and tell me why":
 * the SPI write path's upsert (an insert that may lose a race for its key),
 * execute_batch (all operations or none, the failing one's index in the
 * error) and the node's side of the router's calls (the error returned as
 * jsonb).  This utility is theirs alike; it knows nothing of entities.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "subxact.h"

/*
 * ts_run_in_subtransaction: run fn(arg) in an internal subtransaction.
 * Returns NULL if it succeeded; otherwise the subtransaction is rolled back
 * and the error fn raised is returned, flushed, for the caller to look at
 * or raise again.
 */
ErrorData *
ts_run_in_subtransaction(void (*fn) (void *arg), void *arg)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcontext);
	PG_TRY();
	{
		fn(arg);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcontext);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
	}
	PG_END_TRY();
	return edata;
}
