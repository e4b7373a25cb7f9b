/*-------------------------------------------------------------------------
 *
 * merge.c
 *	  The scale-out router: queries over every node: a page from each node,
 *	  merged in key order, its continuation the smallest any node returned.
 *
 * The router's design is in router.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/jsonapi.h"
#include "mb/pg_wchar.h"
#include "funcapi.h"
#include "utils/builtins.h"

#include "tablestore.h"
#include "key.h"
#include "router/router.h"

/*
 * Queries.  A page from the nodes: the entities (json text and keys) in key
 * order and the continuation.
 */

static int
cmp_entities(const void *a, const void *b)
{
	const PageEntity *x = a;
	const PageEntity *y = b;

	return ts_key_pair_cmp(x->pk, x->rk, y->pk, y->rk);
}

/*
 * JSON from a node, checked for its shape: an entity must be one object,
 * a page an array of objects.
 */
typedef struct JsonShape
{
	int			depth;
	bool		array_of_objects;	/* the root must be an array of objects */
	bool		bad;
} JsonShape;

static void
shape_object_start(void *state)
{
	JsonShape  *sh = state;

	if (sh->depth == 0 && sh->array_of_objects)
		sh->bad = true;
	sh->depth++;
}

static void
shape_array_start(void *state)
{
	JsonShape  *sh = state;

	if ((sh->depth == 0 && !sh->array_of_objects) || (sh->depth == 1 && sh->array_of_objects))
		sh->bad = true;
	sh->depth++;
}

static void
shape_end(void *state)
{
	((JsonShape *) state)->depth--;
}

static void
shape_scalar(void *state, char *token, JsonTokenType tokentype)
{
	JsonShape  *sh = state;

	if (sh->depth == 0 || (sh->depth == 1 && sh->array_of_objects))
		sh->bad = true;
}

/* true if json (len bytes) is a JSON object, or an array of objects */
static bool
json_shape_ok(char *json, int len, bool array_of_objects)
{
	JsonShape	sh = {0, array_of_objects, false};
	JsonSemAction sem;
	JsonLexContext *lex = makeJsonLexContextCstringLen(json, len, GetDatabaseEncoding(), false);

	memset(&sem, 0, sizeof(sem));
	sem.semstate = &sh;
	sem.object_start = shape_object_start;
	sem.object_end = shape_end;
	sem.array_start = shape_array_start;
	sem.array_end = shape_end;
	sem.scalar = shape_scalar;
	return pg_parse_json(lex, &sem) == JSON_SUCCESS && !sh.bad;
}

/* where a page came from, for errors */
const char *
router_page_source(int part)
{
	return part >= 0 ? psprintf("the node of partition %d", part) : "a node";
}

/*
 * router_fetch_page: at most top entities of a query from its partition's node
 * (part >= 0) or from every node, after the continuation (npk, nrk).  The
 * caller holds the partition's lock (router_call_lock).
 *
 * From every node, each node returns its own page and continuation; the
 * merged page holds the entities below the smallest continuation (beyond
 * it, a node has not said what it holds), at most top of them, and its
 * continuation is the first key it did not return: so a page is exactly
 * the entities of [start, continuation) on all nodes.
 *
 * The rows are checked before they are merged: an entity is a JSON object
 * (unless check_json is false: the caller parses every entity, see
 * router_entity_jsonb) at or after the continuation asked for, a node's continuation is after
 * it (or the query would ask for the same page again, for ever), one
 * node's entities are in key order and before its continuation, and no two
 * nodes return the same key.
 */
/*
 * entity_is_foreign: whether the entity of PartitionKey pk, returned by node
 * (an index of router_cluster_node_part), is of a partition that the partition map
 * gives another node.  During a partition move the target holds the
 * replicated copy of the moving partition before it serves it
 * (tablestore_router.move_partition), and a move interrupted after its
 * switch leaves the source's old copy until it is run again: a query over
 * every node reads each partition on its own node only, or it would return
 * those entities twice or stale.
 */
static bool
entity_is_foreign(text *pk, int node)
{
	uint32		mask = (uint32) router_cluster_partitions - 1;
	uint32		p = ts_partition_hash(VARDATA_ANY(pk), VARSIZE_ANY_EXHDR(pk)) & mask;

	return router_cluster_part_node[p] != node;
}

void
router_fetch_page(int part, text *table, text *filter, text *select, int top,
		   text *npk, text *nrk, bool check_json, MergedPage *page)
{
	Datum		args[7];
	bool		nulls[7];
	RemoteRow  *rows;
	int			nrows;
	text	   *bound_pk = NULL;
	text	   *bound_rk = NULL;
	int			n = 0;
	int			k;
	int		   *rownode;
	const char *from = router_page_source(part);

	args[0] = Int32GetDatum(part);
	nulls[0] = false;
	args[1] = PointerGetDatum(table);
	nulls[1] = table == NULL;
	args[2] = PointerGetDatum(filter);
	nulls[2] = filter == NULL;
	args[3] = PointerGetDatum(select);
	nulls[3] = select == NULL;
	args[4] = Int32GetDatum(top);
	nulls[4] = false;
	args[5] = PointerGetDatum(npk);
	nulls[5] = npk == NULL;
	args[6] = PointerGetDatum(nrk);
	nulls[6] = nrk == NULL;

	if (part >= 0)
	{
		rows = router_call_remote_rows("tablestore_router._query_page(" PAGE_ARGS ")", 7, args, nulls, &nrows);
		rownode = palloc(sizeof(int) * Max(nrows, 1));
		for (int r = 0; r < nrows; r++)
			rownode[r] = router_cluster_part_node[part];
	}
	else
	{
		/*
		 * Every node, one after the other, so that each row's node is known
		 * (entity_is_foreign), which a call RUN ON ALL does not tell.
		 */
		int			nnodes;

		(void) router_cluster_shape(&nnodes);
		rows = NULL;
		rownode = NULL;
		nrows = 0;
		for (int i = 0; i < nnodes; i++)
		{
			RemoteRow  *more;
			int			nmore;

			args[0] = Int32GetDatum(router_cluster_node_part[i]);
			more = router_call_remote_rows("tablestore_router._query_page(" PAGE_ARGS ")", 7, args, nulls, &nmore);
			if (nmore == 0)
				continue;
			rows = rows == NULL ? palloc(sizeof(RemoteRow) * nmore) :
				repalloc(rows, sizeof(RemoteRow) * (nrows + nmore));
			rownode = rownode == NULL ? palloc(sizeof(int) * nmore) :
				repalloc(rownode, sizeof(int) * (nrows + nmore));
			memcpy(rows + nrows, more, sizeof(RemoteRow) * nmore);
			for (int r = 0; r < nmore; r++)
				rownode[nrows + r] = i;
			nrows += nmore;
		}
		args[0] = Int32GetDatum(part);
	}

	page->ents = palloc(sizeof(PageEntity) * Max(nrows, 1));
	for (int r = 0; r < nrows; r++)
	{
		RemoteRow  *row = &rows[r];
		text	   *json;

		if (row->nulls[0])
		{
			/*
			 * A node's continuation: the merged page stops before it.  One
			 * without both keys is no page a node writes; taken as the end
			 * of that node's entities it would cut them off silently.
			 */
			text	   *cpk;
			text	   *crk;

			if (row->nulls[1] || row->nulls[2])
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("%s returned a continuation without its keys", from)));
			cpk = DatumGetTextPP(row->values[1]);
			crk = DatumGetTextPP(row->values[2]);
			if (npk != NULL && ts_key_pair_cmp(cpk, crk, npk, nrk) <= 0)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("%s returned a continuation that does not advance past the one asked for", from),
						 errdetail("Asked for (%s, %s), answered (%s, %s).",
								   text_to_cstring(npk), text_to_cstring(nrk),
								   text_to_cstring(cpk), text_to_cstring(crk))));
			if (part >= 0 && n > 0 && ts_key_pair_cmp(page->ents[n - 1].pk, page->ents[n - 1].rk, cpk, crk) >= 0)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("%s returned a continuation before an entity of its page", from)));
			if (bound_pk == NULL || ts_key_pair_cmp(cpk, crk, bound_pk, bound_rk) < 0)
			{
				bound_pk = cpk;
				bound_rk = crk;
			}
			continue;
		}
		if (row->nulls[3] || row->nulls[4])
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("%s returned an entity without its keys", from)));
		json = DatumGetTextPP(row->values[0]);
		page->ents[n].json = json;
		page->ents[n].pk = DatumGetTextPP(row->values[3]);
		page->ents[n].rk = DatumGetTextPP(row->values[4]);
		if (check_json && !json_shape_ok(VARDATA_ANY(json), VARSIZE_ANY_EXHDR(json), false))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("%s returned an entity that is not a JSON object", from),
					 errdetail("The entity of keys (%s, %s).",
							   text_to_cstring(page->ents[n].pk), text_to_cstring(page->ents[n].rk))));
		if (npk != NULL && ts_key_pair_cmp(page->ents[n].pk, page->ents[n].rk, npk, nrk) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("%s returned an entity before the continuation asked for", from)));
		if (part >= 0 && n > 0 &&
			ts_key_pair_cmp(page->ents[n - 1].pk, page->ents[n - 1].rk, page->ents[n].pk, page->ents[n].rk) >= 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("%s returned entities out of key order", from)));
		page->ents[n].node = rownode[r];
		page->ents[n].foreign = entity_is_foreign(page->ents[n].pk, rownode[r]);
		/* an entity dropped below is still checked for what a node may answer */
		if (page->ents[n].foreign && !check_json &&
			!json_shape_ok(VARDATA_ANY(json), VARSIZE_ANY_EXHDR(json), false))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("%s returned an entity that is not a JSON object", from),
					 errdetail("The entity of keys (%s, %s).",
							   text_to_cstring(page->ents[n].pk), text_to_cstring(page->ents[n].rk))));
		n++;
	}
	if (part < 0)
	{
		/*
		 * One key twice is an error when one node returned it twice or two
		 * nodes both as theirs; a node's copy of a partition it does not
		 * hold (a move's) beside the copy of the node that holds it is not.
		 */
		qsort(page->ents, n, sizeof(PageEntity), cmp_entities);
		for (k = 1; k < n; k++)
			if (cmp_entities(&page->ents[k - 1], &page->ents[k]) == 0 &&
				(page->ents[k - 1].node == page->ents[k].node ||
				 (!page->ents[k - 1].foreign && !page->ents[k].foreign)))
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("the nodes returned the entity of keys (%s, %s) twice",
								text_to_cstring(page->ents[k].pk), text_to_cstring(page->ents[k].rk)),
						 errhint("A node named twice in the partition map, or a partition on two nodes, does this.")));
	}
	/* checked, the entities of partitions of other nodes are dropped */
	k = 0;
	for (int i = 0; i < n; i++)
		if (!page->ents[i].foreign)
			page->ents[k++] = page->ents[i];
	n = k;

	page->next_pk = bound_pk;
	page->next_rk = bound_rk;
	for (k = 0; k < n; k++)
	{
		PageEntity *e = &page->ents[k];

		if (bound_pk != NULL && ts_key_pair_cmp(e->pk, e->rk, bound_pk, bound_rk) >= 0)
			break;
		if (k == top)
		{
			page->next_pk = e->pk;
			page->next_rk = e->rk;
			break;
		}
	}
	page->n = k;
}

/* the page-size argument as a node takes it (NULL: the maximum) */
static int
arg_page_top(FunctionCallInfo fcinfo, int n)
{
	return PG_ARGISNULL(n) ? 1000 : PG_GETARG_INT32(n);
}

/*
 * check_page_args: a page query's arguments, checked by a node's function
 * itself for the error one node gives; true if they hold.  Only what the
 * page merge relies on is checked here: the page size and a whole
 * continuation.
 */
static bool
page_args_ok(FunctionCallInfo fcinfo)
{
	int			top;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(4) != PG_ARGISNULL(5))
		return false;
	top = arg_page_top(fcinfo, 3);
	return top >= 0 && top <= 1000;
}

/* the page as a JSON array text "[e1,e2,...]" */
static char *
page_array(MergedPage *page)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '[');
	for (int i = 0; i < page->n; i++)
	{
		if (i > 0)
			appendStringInfoChar(&buf, ',');
		appendBinaryStringInfo(&buf, VARDATA_ANY(page->ents[i].json), VARSIZE_ANY_EXHDR(page->ents[i].json));
	}
	appendStringInfoChar(&buf, ']');
	return buf.data;
}

/*
 * check_node_page: a node's own page (query_entities_page on one
 * partition), checked before it is passed on: the entities an array of
 * objects, a continuation whole and after the one asked for.
 */
static void
check_node_page(int part, bool json, RemoteRow *row, text *npk, text *nrk)
{
	char	   *text_form;

	if (row->nulls[0])
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the node of partition %d returned a page without its entities", part)));
	if (json)
	{
		text	   *t = DatumGetTextPP(row->values[0]);

		if (!json_shape_ok(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), true))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the node of partition %d returned a page that is not an array of objects", part)));
	}
	else
	{
		Jsonb	   *jb = DatumGetJsonbP(row->values[0]);
		JsonbIterator *it;
		JsonbValue	v;
		JsonbIteratorToken tok;
		bool		ok = JB_ROOT_IS_ARRAY(jb) && !JB_ROOT_IS_SCALAR(jb);

		if (ok)
		{
			it = JsonbIteratorInit(&jb->root);
			while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
				if (tok == WJB_ELEM && (v.type != jbvBinary || !JsonContainerIsObject(v.val.binary.data)))
					ok = false;
		}
		if (!ok)
		{
			text_form = JsonbToCString(NULL, &jb->root, 60);
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the node of partition %d returned a page that is not an array of objects", part),
					 errdetail("It begins %.60s", text_form)));
		}
	}
	if (row->nulls[1] != row->nulls[2])
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the node of partition %d returned a continuation without its keys", part)));
	if (!row->nulls[1] && npk != NULL && nrk != NULL &&
		ts_key_pair_cmp(DatumGetTextPP(row->values[1]), DatumGetTextPP(row->values[2]), npk, nrk) <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the node of partition %d returned a continuation that does not advance past the one asked for", part)));
}

/*
 * query_entities_page and query_entities_page_json: a query on one
 * partition is the node's own page; one on every node is merged.
 */
static Datum
router_page(FunctionCallInfo fcinfo, bool json)
{
	int			part = router_route_query(ARG_TEXT(1));
	TupleDesc	desc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	MergedPage		page;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	desc = BlessTupleDesc(desc);
	if (part >= 0 || !page_args_ok(fcinfo))
	{
		Datum		args[7];
		bool		anulls[7];
		RemoteRow  *rows;
		int			nrows;

		part = Max(part, 0);
		router_call_lock(part);
		router_forward_args(fcinfo, part, args, anulls);
		rows = router_call_remote_rows(json ?
								"tablestore_router._query_entities_page_json(" PAGE_ARGS ")" :
								"tablestore_router._query_entities_page(" PAGE_ARGS ")",
								7, args, anulls, &nrows);
		router_call_unlock(part);
		if (nrows != 1)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the node of partition %d returned %d rows for a page", part, nrows)));
		check_node_page(part, json, &rows[0], ARG_TEXT(4), ARG_TEXT(5));
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, rows[0].values, rows[0].nulls)));
	}

	router_call_lock(-1);
	router_fetch_page(-1, ARG_TEXT(0), ARG_TEXT(1), ARG_TEXT(2), arg_page_top(fcinfo, 3),
			   ARG_TEXT(4), ARG_TEXT(5), true, &page);
	router_call_unlock(-1);
	if (json)
		values[0] = CStringGetTextDatum(page_array(&page));
	else
		values[0] = DirectFunctionCall1(jsonb_in, CStringGetDatum(page_array(&page)));
	if (page.next_pk)
	{
		values[1] = PointerGetDatum(page.next_pk);
		values[2] = PointerGetDatum(page.next_rk);
	}
	else
		nulls[1] = nulls[2] = true;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_query_entities_page);
Datum
router_query_entities_page(PG_FUNCTION_ARGS)
{
	return router_page(fcinfo, false);
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_query_entities_page_json);
Datum
router_query_entities_page_json(PG_FUNCTION_ARGS)
{
	return router_page(fcinfo, true);
}

/*
 * query_page: the page as rows, then the continuation row.  As
 * _query_page_keyed (five result columns, as on a node), each entity's
 * keys too, for a client (the HTTP gateway) whose $select may leave them
 * out of the entity.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_query_page);
Datum
router_query_page(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			part = router_route_query(ARG_TEXT(1));
	MergedPage		page;
	Datum		values[5];
	bool		nulls[5] = {false, true, true, true, true};
	bool		keyed;

	if (!page_args_ok(fcinfo))
		part = Max(part, 0);
	router_call_lock(part);
	router_fetch_page(part, ARG_TEXT(0), ARG_TEXT(1), ARG_TEXT(2), arg_page_top(fcinfo, 3),
			   ARG_TEXT(4), ARG_TEXT(5), true, &page);
	router_call_unlock(part);
	InitMaterializedSRF(fcinfo, 0);
	keyed = rsinfo->setDesc->natts == 5;
	for (int i = 0; i < page.n; i++)
	{
		values[0] = PointerGetDatum(page.ents[i].json);
		nulls[0] = false;
		nulls[1] = nulls[2] = true;
		if (keyed)
		{
			values[3] = PointerGetDatum(page.ents[i].pk);
			values[4] = PointerGetDatum(page.ents[i].rk);
			nulls[3] = nulls[4] = false;
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	if (page.next_pk)
	{
		nulls[0] = true;
		nulls[3] = nulls[4] = true;
		values[1] = PointerGetDatum(page.next_pk);
		values[2] = PointerGetDatum(page.next_rk);
		nulls[1] = nulls[2] = false;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * router_entity_jsonb: an entity a node sent as text, as jsonb: parsed once, which
 * checks it (a text that is not a JSON object is DATA_CORRUPTED, as
 * router_fetch_page's check would have said, without parsing it twice).
 */
Datum
router_entity_jsonb(PageEntity *e, int part)
{
	MemoryContext cxt = CurrentMemoryContext;
	Datum		d = (Datum) 0;
	bool		ok;

	PG_TRY();
	{
		d = DirectFunctionCall1(jsonb_in, CStringGetDatum(text_to_cstring(e->json)));
	}
	PG_CATCH();
	{
		ErrorData  *ed;

		MemoryContextSwitchTo(cxt);
		ed = CopyErrorData();
		/* only the text's own faults; a cancel or the like goes on */
		if (ERRCODE_TO_CATEGORY(ed->sqlerrcode) != ERRCODE_DATA_EXCEPTION)
			PG_RE_THROW();
		FlushErrorState();
		d = (Datum) 0;
	}
	PG_END_TRY();
	ok = d != (Datum) 0 && JB_ROOT_IS_OBJECT(DatumGetJsonbP(d));
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("%s returned an entity that is not a JSON object", router_page_source(part)),
				 errdetail("The entity of keys (%s, %s).", text_to_cstring(e->pk), text_to_cstring(e->rk))));
	return d;
}
