/*-------------------------------------------------------------------------
 *
 * routedcall.c
 *	  The node's side of a scale-out router's one-value calls: run one
 *	  function of the API and answer its error, if it raises one, as data.
 *
 * PL/Proxy 2.10 raises a node's error from the middle of reading the
 * node's result; the connection is left mid-result, and the next call
 * drops it and connects again (milliseconds).  Errors are everyday answers
 * of the Table service (an entity not found, a stale ETag, a key that
 * exists), so the router calls tablestore._routed_<function> instead of
 * <function>: routed_call runs the function in a subtransaction, as a
 * PL/pgSQL exception block does, and returns its result as jsonb, or
 * {"#error": [SQLSTATE, message, detail, hint]} (no entity or plan has a
 * property named "#error": property names begin with a letter or an
 * underscore).  The router raises the error again as the node raised it.
 * A cancel is not an answer: it is raised again here.
 *
 * Written in C rather than PL/pgSQL and called in a target list rather
 * than in FROM: a routed call is parsed, planned and run for every call
 * (PL/Proxy sends SQL text), and the PL/pgSQL form with a function scan
 * cost about 30 us more per call on the node.
 *
 * src/routedcall.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

#include "tablestore.h"
#include "subxact.h"

/* the function a _routed_ function calls, looked up once per FmgrInfo */
typedef struct RoutedTarget
{
	FmgrInfo	flinfo;
	Oid			rettype;
} RoutedTarget;

static RoutedTarget *
routed_target(FunctionCallInfo fcinfo)
{
	RoutedTarget *t = (RoutedTarget *) fcinfo->flinfo->fn_extra;
	Oid			self = fcinfo->flinfo->fn_oid;
	Oid		   *argtypes;
	int			nargs;
	char	   *name;
	char	   *nsp;
	Oid			fn;

	if (t != NULL)
		return t;
	name = get_func_name(self);
	nsp = get_namespace_name(get_func_namespace(self));
	if (name == NULL || nsp == NULL || strncmp(name, "_routed_", 8) != 0)
		elog(ERROR, "routed_call called as %s", name ? name : "an unknown function");
	(void) get_func_signature(self, &argtypes, &nargs);
	fn = LookupFuncName(list_make2(makeString(nsp), makeString(name + 8)), nargs, argtypes, false);
	t = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(RoutedTarget));
	fmgr_info_cxt(fn, &t->flinfo, fcinfo->flinfo->fn_mcxt);
	t->rettype = get_func_rettype(fn);
	if (t->rettype != JSONBOID && t->rettype != BOOLOID && t->rettype != INT4OID &&
		t->rettype != VOIDOID && t->rettype != TEXTOID)
		elog(ERROR, "routed_call cannot answer for a function returning type %u", t->rettype);
	fcinfo->flinfo->fn_extra = t;
	return t;
}

/* {"#error": [SQLSTATE, message, detail, hint]} */
static Datum
error_answer(ErrorData *ed)
{
	JsonbParseState *state = NULL;
	JsonbValue	v;
	const char *fields[4];

	fields[0] = unpack_sql_state(ed->sqlerrcode);
	fields[1] = ed->message ? ed->message : "";
	fields[2] = ed->detail;
	fields[3] = ed->hint;
	(void) pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
	v.type = jbvString;
	v.val.string.val = "#error";
	v.val.string.len = 6;
	(void) pushJsonbValue(&state, WJB_KEY, &v);
	(void) pushJsonbValue(&state, WJB_BEGIN_ARRAY, NULL);
	for (int i = 0; i < 4; i++)
	{
		if (fields[i] == NULL)
			v.type = jbvNull;
		else
		{
			v.type = jbvString;
			v.val.string.val = (char *) fields[i];
			v.val.string.len = strlen(fields[i]);
		}
		(void) pushJsonbValue(&state, WJB_ELEM, &v);
	}
	(void) pushJsonbValue(&state, WJB_END_ARRAY, NULL);
	return JsonbPGetDatum(JsonbValueToJsonb(pushJsonbValue(&state, WJB_END_OBJECT, NULL)));
}

/* a boolean as jsonb */
static Datum
bool_answer(bool b)
{
	JsonbValue	v;

	v.type = jbvBool;
	v.val.boolean = b;
	return JsonbPGetDatum(JsonbValueToJsonb(&v));
}

/* an integer as jsonb (get_table_ttl's answer) */
static Datum
int4_answer(int32 n)
{
	JsonbValue	v;

	v.type = jbvNumeric;
	v.val.numeric = int64_to_numeric(n);
	return JsonbPGetDatum(JsonbValueToJsonb(&v));
}

/* a text as a jsonb string */
static Datum
text_answer(text *t)
{
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.val = VARDATA_ANY(t);
	v.val.string.len = VARSIZE_ANY_EXHDR(t);
	return JsonbPGetDatum(JsonbValueToJsonb(&v));
}

/* a call of the target, run by ts_run_in_subtransaction */
typedef struct RoutedInvoke
{
	FunctionCallInfo call;
	Datum		result;
	bool		isnull;
} RoutedInvoke;

static void
routed_invoke(void *arg)
{
	RoutedInvoke *inv = arg;

	inv->result = FunctionCallInvoke(inv->call);
	inv->isnull = inv->call->isnull;
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(routed_call);
Datum
routed_call(PG_FUNCTION_ARGS)
{
	RoutedTarget *t = routed_target(fcinfo);
	RoutedInvoke inv;
	ErrorData  *ed;
	LOCAL_FCINFO(call, FUNC_MAX_ARGS);

	InitFunctionCallInfoData(*call, &t->flinfo, PG_NARGS(), fcinfo->fncollation, NULL, NULL);
	for (int i = 0; i < PG_NARGS(); i++)
		call->args[i] = fcinfo->args[i];
	inv.call = call;
	inv.result = (Datum) 0;
	inv.isnull = true;
	ed = ts_run_in_subtransaction(routed_invoke, &inv);
	if (ed != NULL)
	{
		/* a cancel (statement_timeout, the router's cancel) is no answer */
		if (ed->sqlerrcode == ERRCODE_QUERY_CANCELED || ed->elevel > ERROR)
			ReThrowError(ed);
		PG_RETURN_DATUM(error_answer(ed));
	}
	if (t->rettype == VOIDOID || inv.isnull)
		PG_RETURN_NULL();
	if (t->rettype == BOOLOID)
		PG_RETURN_DATUM(bool_answer(DatumGetBool(inv.result)));
	if (t->rettype == INT4OID)
		PG_RETURN_DATUM(int4_answer(DatumGetInt32(inv.result)));
	if (t->rettype == TEXTOID)
		PG_RETURN_DATUM(text_answer(DatumGetTextPP(inv.result)));
	PG_RETURN_DATUM(inv.result);
}
