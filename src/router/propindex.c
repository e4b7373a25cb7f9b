/*-------------------------------------------------------------------------
 *
 * propindex.c
 *	  Property indexes through the scale-out router: create_property_index
 *	  and drop_property_index run on every node (list_property_indexes is
 *	  the router script's own SQL over every node's list).
 *
 * Each node keeps the indexes of its copy of the table, and each node's
 * queries use its own (the router's queries are the nodes' queries).  As
 * create_table and delete_table, both are idempotent on the nodes, so that
 * a call that failed on some node completes when it is repeated: create
 * runs create_property_index_if_absent everywhere and succeeds if some node
 * created the index; drop runs drop_property_index(..., if_exists => true)
 * everywhere and succeeds if some node had it.  Otherwise the plain call on
 * the node of partition 0 raises the node's error (the index exists, it
 * does not, no such table).  A node's error is raised as the node raised
 * it.  They hold the table-name lock as create_table and delete_table do,
 * so that they never interleave with those on the nodes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "tablestore.h"
#include "router/router.h"

/* The answer of a node as a jsonb scalar, or false if it is none. */
static bool
answer_scalar(RemoteRow *row, JsonbValue *v)
{
	Jsonb	   *jb;

	if (row->nulls[0])
		return false;
	jb = DatumGetJsonbP(row->values[0]);
	return JB_ROOT_IS_SCALAR(jb) && JsonbExtractScalar(&jb->root, v);
}

/*
 * tablestore.create_property_index(table_name, property, edm_type) on the
 * router: on every node; the name of the index (of the first node that
 * created it).
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_create_property_index);
Datum
router_create_property_index(PG_FUNCTION_ARGS)
{
	Datum		args[4];
	bool		nulls[4];
	RemoteRow  *rows;
	int			nrows;
	text	   *name = NULL;
	LOCKTAG		name_tag;
	bool		named = router_table_name_tag(ARG_TEXT(0), &name_tag);

	if (named)
		(void) LockAcquire(&name_tag, ExclusiveLock, false, false);
	router_call_lock(-1);
	for (int i = 0; i < 3; i++)
	{
		args[i] = PG_GETARG_DATUM(i);
		nulls[i] = PG_ARGISNULL(i);
	}
	rows = router_call_remote_rows("tablestore_router._create_property_index(pg_catalog.text,pg_catalog.text,pg_catalog.text)",
								   3, args, nulls, &nrows);
	for (int r = 0; r < nrows && name == NULL; r++)
	{
		JsonbValue	v;

		if (answer_scalar(&rows[r], &v) && v.type == jbvString)
			name = cstring_to_text_with_len(v.val.string.val, v.val.string.len);
	}
	if (name == NULL)
	{
		bool		isnull;
		Datum		answer;
		JsonbValue	v;

		/* no node created it: the node of partition 0 says why */
		router_forward_args(fcinfo, 0, args, nulls);
		answer = router_call_remote("tablestore_router._create_property_index_on(pg_catalog.int4,pg_catalog.text,pg_catalog.text,pg_catalog.text)",
									4, args, nulls, &isnull, -1);
		if (!isnull && JB_ROOT_IS_SCALAR(DatumGetJsonbP(answer)) &&
			JsonbExtractScalar(&DatumGetJsonbP(answer)->root, &v) && v.type == jbvString)
			name = cstring_to_text_with_len(v.val.string.val, v.val.string.len);
	}
	router_call_unlock(-1);
	if (named)
		(void) LockRelease(&name_tag, ExclusiveLock, false);
	if (name == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(name);
}

/*
 * tablestore.drop_property_index(table_name, property, edm_type, if_exists)
 * on the router: on every node; whether some node had the index.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_drop_property_index);
Datum
router_drop_property_index(PG_FUNCTION_ARGS)
{
	Datum		args[5];
	bool		nulls[5];
	RemoteRow  *rows;
	int			nrows;
	bool		done = false;
	bool		if_exists = !PG_ARGISNULL(3) && PG_GETARG_BOOL(3);
	LOCKTAG		name_tag;
	bool		named = router_table_name_tag(ARG_TEXT(0), &name_tag);

	if (named)
		(void) LockAcquire(&name_tag, ExclusiveLock, false, false);
	router_call_lock(-1);
	for (int i = 0; i < 3; i++)
	{
		args[i] = PG_GETARG_DATUM(i);
		nulls[i] = PG_ARGISNULL(i);
	}
	args[3] = BoolGetDatum(true);
	nulls[3] = false;
	rows = router_call_remote_rows("tablestore_router._drop_property_index(pg_catalog.text,pg_catalog.text,pg_catalog.text,pg_catalog.bool)",
								   4, args, nulls, &nrows);
	for (int r = 0; r < nrows; r++)
	{
		JsonbValue	v;

		if (answer_scalar(&rows[r], &v) && v.type == jbvBool && v.val.boolean)
			done = true;
	}
	if (!done && !if_exists)
	{
		bool		isnull;

		/* no node had it: the node of partition 0 raises its error */
		router_forward_args(fcinfo, 0, args, nulls);
		(void) router_call_remote("tablestore_router._drop_property_index_on(pg_catalog.int4,pg_catalog.text,pg_catalog.text,pg_catalog.text,pg_catalog.bool)",
								  5, args, nulls, &isnull, -1);
	}
	router_call_unlock(-1);
	if (named)
		(void) LockRelease(&name_tag, ExclusiveLock, false);
	if (!done && if_exists)
	{
		/* the nodes accepted the arguments: the type by its full name, as they say it */
		char	   *type = text_to_cstring(PG_GETARG_TEXT_PP(2));

		ereport(NOTICE,
				(errmsg("table \"%s\" has no property index on \"%s\" of type %s%s, skipping",
						text_to_cstring(PG_GETARG_TEXT_PP(0)), text_to_cstring(PG_GETARG_TEXT_PP(1)),
						strncmp(type, "Edm.", 4) == 0 ? "" : "Edm.", type)));
	}
	PG_RETURN_BOOL(done);
}

/*
 * tablestore_router._property_index_rows(table_name text) RETURNS SETOF (the
 * columns of list_property_indexes): every node's list, one row per node
 * and index, which the router's list_property_indexes (SQL) aggregates.  A
 * C entry point, so that a node's refusal of the caller's connection is a
 * privilege error (42501) and a lost node ServerBusy, as in every routed
 * call, not PL/Proxy's internal error (test/cluster/fuzz_router.sh found
 * it).
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_property_index_rows);
Datum
router_property_index_rows(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		args[1];
	bool		nulls[1];
	RemoteRow  *rows;
	int			nrows;

	(void) router_cluster_shape(NULL);
	router_mapping_check();
	args[0] = PG_GETARG_DATUM(0);
	nulls[0] = PG_ARGISNULL(0);
	rows = router_call_remote_rows("tablestore_router._list_property_indexes(pg_catalog.text)", 1, args, nulls, &nrows);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	for (int r = 0; r < nrows; r++)
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, rows[r].values, rows[r].nulls);
	return (Datum) 0;
}
