/*-------------------------------------------------------------------------
 *
 * transport.c
 *	  The scale-out router: the PL/Proxy calls: function lookup, quiet
 *	  notices, one value or a set of rows from the node of a partition.
 *
 * The router's design is in router.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "router/router.h"

/* Function OIDs of the PL/Proxy calls, by signature; reset by pg_proc changes. */
#define ROUTER_MAX_FUNCS 32
typedef struct RouterFunc
{
	const char *signature;
	Oid			oid;
} RouterFunc;
static RouterFunc router_funcs[ROUTER_MAX_FUNCS];
static int	router_nfuncs = 0;
static bool proc_callback_registered = false;

/* a function changed: look the PL/Proxy functions up again */
static void
router_proc_changed(Datum arg, int cacheid, uint32 hashvalue)
{
	router_nfuncs = 0;
}

/*
 * PL/Proxy 2.10 leaves the connection of a statement that failed in the
 * middle of its result, and reconnects on the next call, saying so with a
 * NOTICE ("PL/Proxy: dropping stale conn") that one node never gives.  The
 * shards' tablestore functions raise no notices, so a PL/Proxy call runs
 * with client_min_messages at least WARNING: the client sees what one node
 * would show.
 */
static int	saved_client_min_messages = -1;

void
router_quiet_begin(void)
{
	if (saved_client_min_messages < 0 && client_min_messages < WARNING)
	{
		saved_client_min_messages = client_min_messages;
		client_min_messages = WARNING;
	}
}

void
router_quiet_end(void)
{
	if (saved_client_min_messages >= 0)
	{
		client_min_messages = saved_client_min_messages;
		saved_client_min_messages = -1;
	}
}

/*
 * router_func_oid: the OID of a PL/Proxy call, by its signature with every
 * name qualified (no search_path can change what it names), e.g.
 * "tablestore_router._explain_query(pg_catalog.int4,pg_catalog.text,pg_catalog.text)".
 */
static Oid
router_func_oid(const char *signature)
{
	int			i;
	Oid			oid;

	if (!proc_callback_registered)
	{
		CacheRegisterSyscacheCallback(PROCOID, router_proc_changed, (Datum) 0);
		proc_callback_registered = true;
	}
	for (i = 0; i < router_nfuncs; i++)
		if (router_funcs[i].signature == signature)
			return router_funcs[i].oid;
	oid = DatumGetObjectId(DirectFunctionCall1(regprocedurein, CStringGetDatum(signature)));
	if (router_nfuncs < ROUTER_MAX_FUNCS)
	{
		router_funcs[router_nfuncs].signature = signature;
		router_funcs[router_nfuncs].oid = oid;
		router_nfuncs++;
	}
	return oid;
}

/*
 * router_remote_call_init: set up a call of the PL/Proxy function named by
 * signature with the given arguments; returns its OID.
 */
Oid
router_remote_call_init(const char *signature, FmgrInfo *flinfo, FunctionCallInfo fcinfo,
				 int nargs, Datum *args, bool *nulls, Node *resultinfo)
{
	Oid			fn = router_func_oid(signature);

	Assert(nargs <= 8);
	fmgr_info(fn, flinfo);
	InitFunctionCallInfoData(*fcinfo, flinfo, nargs, InvalidOid, NULL, resultinfo);
	for (int i = 0; i < nargs; i++)
	{
		fcinfo->args[i].value = args[i];
		fcinfo->args[i].isnull = nulls[i];
	}
	return fn;
}

/*
 * router_remote_call_failed: in the PG_CATCH of a PL/Proxy call, raise its error
 * again as the shard raised it (cxt: the memory context of the caller).
 */
void
router_remote_call_failed(MemoryContext cxt)
{
	ErrorData  *ed;

	router_quiet_end();
	MemoryContextSwitchTo(cxt);
	ed = CopyErrorData();
	FlushErrorState();
	router_rethrow_remote(ed);
}

/*
 * router_call_remote: call a PL/Proxy function that returns one value (jsonb: a
 * one-value _routed_ call's answer), with the shard's errors as the shard
 * raised them.
 */
Datum
router_call_remote(const char *signature, int nargs, Datum *args, bool *nulls, bool *isnull, int part)
{
	FmgrInfo	flinfo;
	MemoryContext oldcxt = CurrentMemoryContext;
	Datum		result = (Datum) 0;
	LOCAL_FCINFO(fcinfo, 8);

	(void) router_remote_call_init(signature, &flinfo, fcinfo, nargs, args, nulls, NULL);
	router_quiet_begin();
	PG_TRY();
	{
		result = FunctionCallInvoke(fcinfo);
		*isnull = fcinfo->isnull;
	}
	PG_CATCH();
	{
		router_remote_call_failed(oldcxt);
	}
	PG_END_TRY();
	router_quiet_end();
	if (!*isnull)
	{
		Jsonb	   *jb;

		router_check_answer(result);
		/* an entity call's answer (an entity, a plan) is an object */
		jb = DatumGetJsonbP(result);
		if (part >= 0 && !JB_ROOT_IS_OBJECT(jb))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the node of partition %d answered a JSON value that is not an object", part)));
	}
	return result;
}

/*
 * router_call_remote_rows: call a set-returning PL/Proxy function (value per
 * call, as the executor would) and copy its rows (at most 6 columns) into
 * the current memory context.  Called through fmgr rather than SQL, so the
 * calls need no EXECUTE privilege: only the functions of schema tablestore
 * reach them, with the partition they computed.  The last column of every
 * such function is the node's error, as data: the first row that has one
 * raises it.
 */
RemoteRow *
router_call_remote_rows(const char *signature, int nargs, Datum *args, bool *nulls, int *nrows)
{
	Oid			fn;
	FmgrInfo	flinfo;
	ReturnSetInfo rsinfo;
	ExprContext *econtext = CreateStandaloneExprContext();
	TupleDesc	desc = NULL;
	MemoryContext oldcxt = CurrentMemoryContext;
	RemoteRow  *rows;
	int			cap = 16;
	int			n = 0;
	int16		typlen = -1;
	bool		typbyval = false;
	int			errcol;
	Oid			rettype;
	LOCAL_FCINFO(fcinfo, 8);

	memset(&rsinfo, 0, sizeof(rsinfo));
	rsinfo.type = T_ReturnSetInfo;
	rsinfo.econtext = econtext;
	rsinfo.allowedModes = (int) SFRM_ValuePerCall;
	rsinfo.returnMode = SFRM_ValuePerCall;
	fn = router_remote_call_init(signature, &flinfo, fcinfo, nargs, args, nulls, (Node *) &rsinfo);
	if (get_func_result_type(fn, NULL, &desc) != TYPEFUNC_COMPOSITE)
	{
		desc = NULL;
		get_typlenbyval(get_func_rettype(fn), &typlen, &typbyval);
	}
	if (desc != NULL && desc->natts > (int) lengthof(((RemoteRow *) NULL)->values))
		elog(ERROR, "function %s returns %d columns, more than the router reads", signature, desc->natts);
	rsinfo.expectedDesc = desc;
	/*
	 * The node's error: a set call's last column "error", or a one-value
	 * call's jsonb answer {"#error": [...]} (the calls on every node)
	 */
	rettype = get_func_rettype(fn);
	errcol = desc != NULL && strcmp(NameStr(TupleDescAttr(desc, desc->natts - 1)->attname), "error") == 0 ?
		desc->natts - 1 : -1;
	rows = palloc0(sizeof(RemoteRow) * cap);

	router_quiet_begin();
	PG_TRY();
	{
		for (;;)
		{
			Datum		d;

			CHECK_FOR_INTERRUPTS();
			rsinfo.isDone = ExprSingleResult;
			fcinfo->isnull = false;
			d = FunctionCallInvoke(fcinfo);
			if (rsinfo.isDone == ExprEndResult)
				break;
			if (n == cap)
			{
				cap *= 2;
				rows = repalloc(rows, sizeof(RemoteRow) * cap);
			}
			memset(&rows[n], 0, sizeof(RemoteRow));
			if (desc == NULL)
			{
				rows[n].nulls[0] = fcinfo->isnull;
				if (!fcinfo->isnull)
					rows[n].values[0] = datumCopy(d, typbyval, typlen);
			}
			else if (fcinfo->isnull)
			{
				for (int c = 0; c < desc->natts; c++)
					rows[n].nulls[c] = true;
			}
			else
			{
				HeapTupleHeader td = DatumGetHeapTupleHeader(d);
				HeapTupleData tup;

				tup.t_len = HeapTupleHeaderGetDatumLength(td);
				ItemPointerSetInvalid(&tup.t_self);
				tup.t_tableOid = InvalidOid;
				tup.t_data = td;
				heap_deform_tuple(&tup, desc, rows[n].values, rows[n].nulls);
				for (int c = 0; c < desc->natts; c++)
				{
					Form_pg_attribute att = TupleDescAttr(desc, c);

					if (!rows[n].nulls[c])
						rows[n].values[c] = datumCopy(rows[n].values[c], att->attbyval, att->attlen);
				}
			}
			n++;
		}
	}
	PG_CATCH();
	{
		router_remote_call_failed(oldcxt);
	}
	PG_END_TRY();
	router_quiet_end();
	FreeExprContext(econtext, true);
	for (int r = 0; r < n; r++)
	{
		if (errcol >= 0 && !rows[r].nulls[errcol])
			router_raise_error_column(rows[r].values[errcol]);
		if (desc == NULL && rettype == JSONBOID && !rows[r].nulls[0])
			router_check_answer(rows[r].values[0]);
	}
	*nrows = n;
	return rows;
}

/* the arguments of the calling function, after a leading partition */
void
router_forward_args(FunctionCallInfo fcinfo, int part, Datum *args, bool *nulls)
{
	args[0] = Int32GetDatum(part);
	nulls[0] = false;
	for (int i = 0; i < PG_NARGS(); i++)
	{
		args[i + 1] = PG_GETARG_DATUM(i);
		nulls[i + 1] = PG_ARGISNULL(i);
	}
}

/* one routed call of a function returning a value */
Datum
router_call_partition(FunctionCallInfo fcinfo, const char *signature, int part)
{
	Datum		args[8];
	bool		nulls[8];
	bool		isnull;
	Datum		result;

	router_call_lock(part);
	router_forward_args(fcinfo, part, args, nulls);
	result = router_call_remote(signature, PG_NARGS() + 1, args, nulls, &isnull, part);
	router_call_unlock(part);
	if (isnull)
		PG_RETURN_NULL();
	return result;
}
