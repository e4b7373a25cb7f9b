/*-------------------------------------------------------------------------
 *
 * api.c
 *	  The scale-out router: the tablestore SQL API on the router: each
 *	  function a shim that routes its call (entities, batches, tables, ACLs,
 *	  service properties).
 *
 * The router's design is in router.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "utils/builtins.h"

#include "tablestore.h"
#include "router/router.h"

/*
 * tablestore._may_set_service_properties() RETURNS boolean: whether the
 * calling role may set the account's service properties, that is may
 * create tables (CREATE on tablestore_data) on the node of partition 0,
 * asked as that role through PL/Proxy after the router's user-mapping
 * check.  A C entry point, so that the node's refusal of the role's
 * connection is a privilege error (42501) as in every routed call, not
 * PL/Proxy's internal error (test/cluster/fuzz_router.sh found it).
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_may_set_service_properties);
Datum
router_may_set_service_properties(PG_FUNCTION_ARGS)
{
	FmgrInfo	flinfo;
	MemoryContext oldcxt = CurrentMemoryContext;
	Datum		result = (Datum) 0;
	bool		isnull = true;
	LOCAL_FCINFO(call, 8);

	(void) router_cluster_shape(NULL);	/* "not configured", if it is not */
	router_mapping_check();
	(void) router_remote_call_init("tablestore_router._may_create_tables()", &flinfo, call, 0, NULL, NULL, NULL);
	router_quiet_begin();
	PG_TRY();
	{
		result = FunctionCallInvoke(call);
		isnull = call->isnull;
	}
	PG_CATCH();
	{
		router_remote_call_failed(oldcxt);
	}
	PG_END_TRY();
	router_quiet_end();
	PG_RETURN_BOOL(!isnull && DatumGetBool(result));
}

#define ENTITY_CALL(name, sig) \
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_##name); \
Datum \
router_##name(PG_FUNCTION_ARGS) \
{ \
	return router_call_partition(fcinfo, "tablestore_router._" #name sig, router_route_object_key(ARG_JSONB(1))); \
}

ENTITY_CALL(insert_entity, "(pg_catalog.int4,pg_catalog.text,pg_catalog.jsonb)")
ENTITY_CALL(update_entity, "(pg_catalog.int4,pg_catalog.text,pg_catalog.jsonb,pg_catalog.text)")
ENTITY_CALL(merge_entity, "(pg_catalog.int4,pg_catalog.text,pg_catalog.jsonb,pg_catalog.text)")
ENTITY_CALL(insert_or_replace_entity, "(pg_catalog.int4,pg_catalog.text,pg_catalog.jsonb)")
ENTITY_CALL(insert_or_merge_entity, "(pg_catalog.int4,pg_catalog.text,pg_catalog.jsonb)")

/* the partition of a PartitionKey argument (0 for NULL) */
static int
route_key_arg(FunctionCallInfo fcinfo, int n)
{
	text	   *pk = ARG_TEXT(n);

	return pk ? router_partition_for(VARDATA_ANY(pk), VARSIZE_ANY_EXHDR(pk)) : 0;
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_delete_entity);
Datum
router_delete_entity(PG_FUNCTION_ARGS)
{
	(void) router_call_partition(fcinfo, "tablestore_router._delete_entity(pg_catalog.int4,pg_catalog.text,pg_catalog.text,pg_catalog.text,pg_catalog.text)",
					   route_key_arg(fcinfo, 1));
	PG_RETURN_VOID();
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_get_entity);
Datum
router_get_entity(PG_FUNCTION_ARGS)
{
	return router_call_partition(fcinfo, "tablestore_router._get_entity(pg_catalog.int4,pg_catalog.text,pg_catalog.text,pg_catalog.text,pg_catalog.text)",
					   route_key_arg(fcinfo, 1));
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_explain_query);
Datum
router_explain_query(PG_FUNCTION_ARGS)
{
	int			part = router_route_query(ARG_TEXT(1));

	return router_call_partition(fcinfo, "tablestore_router._explain_query(pg_catalog.int4,pg_catalog.text,pg_catalog.text)", Max(part, 0));
}

/* the rows of a routed set-returning call, materialized (a batch: at most 100) */
static void
return_rows(FunctionCallInfo fcinfo, RemoteRow *rows, int nrows)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	for (int r = 0; r < nrows; r++)
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, rows[r].values, rows[r].nulls);
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_execute_batch);
Datum
router_execute_batch(PG_FUNCTION_ARGS)
{
	Datum		args[3];
	bool		nulls[3];
	int			part = router_route_batch(ARG_JSONB(1));
	RemoteRow  *rows;
	int			nrows;

	router_call_lock(part);
	router_forward_args(fcinfo, part, args, nulls);
	rows = router_call_remote_rows("tablestore_router._execute_batch(pg_catalog.int4,pg_catalog.text,pg_catalog.jsonb)",
							3, args, nulls, &nrows);
	router_call_unlock(part);
	return_rows(fcinfo, rows, nrows);
	return (Datum) 0;
}

static void
table_everywhere(FunctionCallInfo fcinfo, const char *all_signature, const char *one_signature)
{
	Datum		args[2];
	bool		nulls[2];
	RemoteRow  *rows;
	int			nrows;
	bool		done = false;
	bool		isnull;
	LOCKTAG		name_tag;
	bool		named = router_table_name_tag(ARG_TEXT(0), &name_tag);

	/* held while the call runs, as the partition locks are */
	if (named)
		(void) LockAcquire(&name_tag, ExclusiveLock, false, false);
	router_call_lock(-1);
	router_refuse_during_move();
	args[0] = PG_GETARG_DATUM(0);
	nulls[0] = PG_ARGISNULL(0);
	rows = router_call_remote_rows(all_signature, 1, args, nulls, &nrows);
	/* each node's answer: true if it did the work (errors are raised) */
	for (int r = 0; r < nrows; r++)
	{
		Jsonb	   *jb;
		JsonbValue	v;

		if (rows[r].nulls[0])
			continue;
		jb = DatumGetJsonbP(rows[r].values[0]);
		if (JB_ROOT_IS_SCALAR(jb) && JsonbExtractScalar(&jb->root, &v) &&
			v.type == jbvBool && v.val.boolean)
			done = true;
	}
	if (!done)
	{
		router_forward_args(fcinfo, 0, args, nulls);
		(void) router_call_remote(one_signature, 2, args, nulls, &isnull, -1);
	}
	router_call_unlock(-1);
	if (named)
		(void) LockRelease(&name_tag, ExclusiveLock, false);
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_create_table);
Datum
router_create_table(PG_FUNCTION_ARGS)
{
	table_everywhere(fcinfo, "tablestore_router._create_table(pg_catalog.text)",
					 "tablestore_router._create_table_on(pg_catalog.int4,pg_catalog.text)");
	PG_RETURN_VOID();
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_delete_table);
Datum
router_delete_table(PG_FUNCTION_ARGS)
{
	table_everywhere(fcinfo, "tablestore_router._delete_table(pg_catalog.text)",
					 "tablestore_router._delete_table_on(pg_catalog.int4,pg_catalog.text)");
	PG_RETURN_VOID();
}

/*
 * Stored access policies (Get/Set Table ACL).  Every node keeps a table's
 * policies with its copy of the table, so that delete_table, which runs on
 * every node, removes them, and each node checks the caller's rights on its
 * relation.  set_table_acl replaces them on every node (under the table's
 * name lock, as create_table and delete_table; a node's error is raised and
 * the call can be repeated, replacing all again).  get_table_acl takes the
 * same name lock in share mode, so that it never reads a set half applied
 * (the nodes commit one at a time): it sees the list before the set or the
 * one after.  As the nodes agree when no set is in flight, it reads one
 * node (that of partition 0): the gateway looks a SAS's policy (si) up on
 * every request, and a read of every partition cost one remote call each.
 * A set that failed on some node leaves the nodes differing until it is
 * repeated (its error says so); get answers partition 0's node's list.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_set_table_acl);
Datum
router_set_table_acl(PG_FUNCTION_ARGS)
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
	(void) router_call_remote_rows("tablestore_router._set_table_acl(pg_catalog.text,pg_catalog.jsonb)",
							2, args, nulls, &nrows);
	router_call_unlock(-1);
	if (named)
		(void) LockRelease(&name_tag, ExclusiveLock, false);
	PG_RETURN_VOID();
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_get_table_acl);
Datum
router_get_table_acl(PG_FUNCTION_ARGS)
{
	Datum		args[1];
	bool		nulls[1];
	RemoteRow  *rows;
	int			nrows;
	Jsonb	   *first = NULL;
	LOCKTAG		name_tag;
	bool		named = router_table_name_tag(ARG_TEXT(0), &name_tag);

	/* share mode: gets run together, a set (exclusive) waits for them */
	if (named)
		(void) LockAcquire(&name_tag, ShareLock, false, false);
	router_call_lock(-1);
	args[0] = PG_GETARG_DATUM(0);
	nulls[0] = PG_ARGISNULL(0);
	rows = router_call_remote_rows("tablestore_router._get_table_acl(pg_catalog.text)", 1, args, nulls, &nrows);
	router_call_unlock(-1);
	if (named)
		(void) LockRelease(&name_tag, ShareLock, false);
	for (int r = 0; r < nrows; r++)
	{
		Jsonb	   *jb;

		if (rows[r].nulls[0])
			continue;
		jb = DatumGetJsonbP(rows[r].values[0]);
		if (first == NULL)
			first = jb;
		else if (compareJsonbContainers(&first->root, &jb->root) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the stored access policies of table \"%s\" differ between nodes",
							text_to_cstring(ARG_TEXT(0))),
					 errhint("Set them again with tablestore.set_table_acl: it replaces them on every node.")));
	}
	if (first == NULL)
		elog(ERROR, "no node answered for the stored access policies");
	PG_RETURN_JSONB_P(first);
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/*
 * list_tables: the tables every node has (a table whose creation or
 * deletion failed on some node is not listed until the call is repeated).
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_list_tables);
Datum
router_list_tables(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		args[1];
	bool		nulls[1];
	RemoteRow  *rows;
	int			nrows;
	int			nodes;
	char	  **names;

	(void) router_cluster_shape(&nodes);
	router_call_lock(-1);
	args[0] = PG_GETARG_DATUM(0);
	nulls[0] = PG_ARGISNULL(0);
	rows = router_call_remote_rows("tablestore_router._list_tables(pg_catalog.text)", 1, args, nulls, &nrows);
	router_call_unlock(-1);
	names = palloc(sizeof(char *) * Max(nrows, 1));
	for (int r = 0; r < nrows; r++)
		names[r] = rows[r].nulls[0] ? "" : TextDatumGetCString(rows[r].values[0]);
	qsort(names, nrows, sizeof(char *), cmp_names);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	for (int r = 0; r < nrows;)
	{
		int			n = 1;

		while (r + n < nrows && strcmp(names[r], names[r + n]) == 0)
			n++;
		if (n >= nodes)
		{
			Datum		v = CStringGetTextDatum(names[r]);
			bool		isnull = false;

			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &v, &isnull);
		}
		r += n;
	}
	return (Datum) 0;
}

