/*-------------------------------------------------------------------------
 *
 * handler.c
 *	  tskey index access method: the handler, reloptions, operator class
 *	  validation and cost estimation.
 *
 * The operator class uses the btree strategy numbers and support function 1
 * of btree, and the same operators as the btree operator class
 * tablestore.key_ops, so that the planner maps the index's order to that
 * btree family and uses it for ORDER BY without a sort.  That is also why
 * validation and cost estimation are btree's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/nbtree.h"
#include "access/reloptions.h"
#include "utils/index_selfuncs.h"
#include "utils/rel.h"

#include "tablestore.h"
#include "tskey_int.h"

static relopt_kind tsk_relopt_kind;
static relopt_parse_elt tsk_relopt_tab[1];

/*
 * tsk_init_reloptions: register the "fillfactor" reloption of tskey
 * indexes.  Called once per process from _PG_init (tsk_init), as bloom
 * does: in the postmaster when the library is preloaded, else in the
 * backend that loads it, before any index of the access method is opened.
 */
static void
tsk_init_reloptions(void)
{
	tsk_relopt_kind = add_reloption_kind();
	add_int_reloption(tsk_relopt_kind, "fillfactor",
					  "Packs tskey index pages only to this percentage",
					  TSK_DEFAULT_FILLFACTOR, TSK_MIN_FILLFACTOR, 100,
					  ShareUpdateExclusiveLock);
	tsk_relopt_tab[0].optname = "fillfactor";
	tsk_relopt_tab[0].opttype = RELOPT_TYPE_INT;
	tsk_relopt_tab[0].offset = offsetof(TskOptions, fillfactor);
}

/* tskoptions: parse and validate the reloptions of a tskey index. */
static bytea *
tskoptions(Datum reloptions, bool validate)
{
	return (bytea *) build_reloptions(reloptions, validate, tsk_relopt_kind,
									  sizeof(TskOptions), tsk_relopt_tab,
									  lengthof(tsk_relopt_tab));
}

/* tsk_fillfactor: the index's fillfactor, for its build. */
int
tsk_fillfactor(Relation index)
{
	TskOptions *opts = (TskOptions *) index->rd_options;

	return opts ? opts->fillfactor : TSK_DEFAULT_FILLFACTOR;
}

/*
 * tskvalidate: check an operator class of tskey.  Its shape is a btree
 * operator class's (strategies 1-5, support function 1 a three-way
 * comparison), so btree's checks apply as they are.
 */
static bool
tskvalidate(Oid opclassoid)
{
	return btvalidate(opclassoid);
}

/*
 * tskcostestimate: btree's estimate, which applies because the operator
 * class uses btree strategy numbers: boundary quals are the leading
 * equalities and the next column's inequalities, and a unique index with
 * both keys equal yields one entry.
 */
static void
tskcostestimate(PlannerInfo *root, IndexPath *path, double loop_count,
				Cost *indexStartupCost, Cost *indexTotalCost,
				Selectivity *indexSelectivity, double *indexCorrelation,
				double *indexPages)
{
	btcostestimate(root, path, loop_count, indexStartupCost, indexTotalCost,
				   indexSelectivity, indexCorrelation, indexPages);

}

/*
 * tskcanreturn: amcanreturn.  Both key columns can be returned by an
 * index-only scan: an entry holds the keys whole (in the shorter of two
 * encodings, decoded back to UTF-8).  PostgreSQL 15 plans an index-only
 * scan whenever no column is needed (count(*)), so the keys are returned
 * even then.
 */
static bool
tskcanreturn(Relation index, int attno)
{
	return attno >= 1 && attno <= 2;
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(tskey_handler);

/*
 * tskey_handler: the IndexAmRoutine of tskey.  Ordered, unique, two key
 * columns, index-only scans; no mid-scan change of direction (the executor
 * materializes scroll cursors), no parallel scans.
 */
Datum
tskey_handler(PG_FUNCTION_ARGS)
{
	IndexAmRoutine *amroutine = makeNode(IndexAmRoutine);

	amroutine->amstrategies = BTMaxStrategyNumber;
	amroutine->amsupport = BTNProcs;
	amroutine->amoptsprocnum = 0;
	amroutine->amcanorder = true;
	amroutine->amcanorderbyop = false;
	amroutine->amcanbackward = false;
	amroutine->amcanunique = true;
	amroutine->amcanmulticol = true;
	amroutine->amoptionalkey = true;
	amroutine->amsearcharray = false;
	amroutine->amsearchnulls = false;
	amroutine->amstorage = false;
	amroutine->amclusterable = false;
	amroutine->ampredlocks = false;
	amroutine->amcanparallel = false;
	amroutine->amcaninclude = false;
	amroutine->amusemaintenanceworkmem = false;
	amroutine->amparallelvacuumoptions = 0;
	amroutine->amkeytype = InvalidOid;

	amroutine->ambuild = tskbuild;
	amroutine->ambuildempty = tskbuildempty;
	amroutine->aminsert = tskinsert;
	amroutine->ambulkdelete = tskbulkdelete;
	amroutine->amvacuumcleanup = tskvacuumcleanup;
	amroutine->amcanreturn = tskcanreturn;
	amroutine->amcostestimate = tskcostestimate;
	amroutine->amoptions = tskoptions;
	amroutine->amproperty = NULL;
	amroutine->ambuildphasename = NULL;
	amroutine->amvalidate = tskvalidate;
	amroutine->amadjustmembers = btadjustmembers;
	amroutine->ambeginscan = tskbeginscan;
	amroutine->amrescan = tskrescan;
	amroutine->amgettuple = tskgettuple;
	amroutine->amgetbitmap = tskgetbitmap;
	amroutine->amendscan = tskendscan;
	amroutine->ammarkpos = NULL;
	amroutine->amrestrpos = NULL;
	amroutine->amestimateparallelscan = NULL;
	amroutine->aminitparallelscan = NULL;
	amroutine->amparallelrescan = NULL;

	PG_RETURN_POINTER(amroutine);
}

/*
 * tsk_init: set up the access method when the library is loaded
 * (_PG_init): its reloptions, and the WAL resource manager, registered only
 * if the library is being preloaded (tsk_register_rmgr).
 */
void
tsk_init(void)
{
	tsk_init_reloptions();
	tsk_register_rmgr();
}
