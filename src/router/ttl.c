/*-------------------------------------------------------------------------
 *
 * ttl.c
 *	  Time to live through the scale-out router: set_table_ttl and
 *	  get_table_ttl (doc/ttl.md).
 *
 * Every node keeps a table's time to live in its own catalog, with its
 * copy of the table, and expires and sweeps its own entities (each node's
 * worker, or sweep_expired run on the node).  set_table_ttl sets it on
 * every node under the table's name lock, as set_table_acl does; a node's
 * error is raised and the call can be repeated.  get_table_ttl reads the
 * node of partition 0 under the same lock in share mode, so that it never
 * sees a set half applied.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "tablestore.h"
#include "router/router.h"

/*
 * tablestore.set_table_ttl(table_name text, seconds integer) RETURNS void,
 * on every node.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_set_table_ttl);
Datum
router_set_table_ttl(PG_FUNCTION_ARGS)
{
	Datum		args[2];
	bool		nulls[2];
	int			nrows;
	LOCKTAG		name_tag;
	bool		named = router_table_name_tag(ARG_TEXT(0), &name_tag);

	if (named)
		(void) LockAcquire(&name_tag, ExclusiveLock, false, false);
	router_call_lock(-1);
	for (int i = 0; i < 2; i++)
	{
		args[i] = PG_GETARG_DATUM(i);
		nulls[i] = PG_ARGISNULL(i);
	}
	(void) router_call_remote_rows("tablestore_router._set_table_ttl(pg_catalog.text,pg_catalog.int4)",
								   2, args, nulls, &nrows);
	router_call_unlock(-1);
	if (named)
		(void) LockRelease(&name_tag, ExclusiveLock, false);
	PG_RETURN_VOID();
}

/*
 * tablestore.get_table_ttl(table_name text) RETURNS integer, from the node
 * of partition 0 (its answer a jsonb number, or NULL: off).
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_get_table_ttl);
Datum
router_get_table_ttl(PG_FUNCTION_ARGS)
{
	Datum		args[1];
	bool		nulls[1];
	RemoteRow  *rows;
	int			nrows;
	LOCKTAG		name_tag;
	bool		named = router_table_name_tag(ARG_TEXT(0), &name_tag);
	Jsonb	   *jb;
	JsonbValue	v;

	if (named)
		(void) LockAcquire(&name_tag, ShareLock, false, false);
	router_call_lock(-1);
	args[0] = PG_GETARG_DATUM(0);
	nulls[0] = PG_ARGISNULL(0);
	rows = router_call_remote_rows("tablestore_router._get_table_ttl(pg_catalog.text)", 1, args, nulls, &nrows);
	router_call_unlock(-1);
	if (named)
		(void) LockRelease(&name_tag, ShareLock, false);
	if (nrows == 0)
		elog(ERROR, "no node answered for the time to live");
	if (rows[0].nulls[0])
		PG_RETURN_NULL();
	jb = DatumGetJsonbP(rows[0].values[0]);
	if (!JsonbExtractScalar(&jb->root, &v) || v.type != jbvNumeric)
		elog(ERROR, "a node answered the time to live with a value that is not a number");
	PG_RETURN_INT32(DatumGetInt32(DirectFunctionCall1(numeric_int4, NumericGetDatum(v.val.numeric))));
}
