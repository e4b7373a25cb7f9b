/*-------------------------------------------------------------------------
 *
 * stream.c
 *	  The scale-out router: streaming queries: one stream per node, merged
 *	  entity by entity, a page at a time, started again on a new map after a
 *	  move.
 *
 * The router's design is in router.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "tablestore.h"
#include "key.h"
#include "router/router.h"

/*
 * A stream from one node: its current page and its own continuation.
 */
typedef struct StreamSource
{
	int			part;			/* the partition to RUN ON: the node's, or the query's */
	MemoryContext pagecxt;		/* the current page; reset per page */
	MergedPage	page;
	int			next;			/* the page's next entity */
	bool		started;
} StreamSource;

typedef struct StreamState
{
	MemoryContext cxt;			/* the stream's: outlives the pages */
	text	   *table;
	text	   *filter;
	text	   *select;
	bool		capped;			/* top given */
	bool		json;			/* json out (else jsonb: see router_entity_jsonb) */
	int64		remaining;		/* if capped, entities still to return */
	int			part;			/* the query's partition, or -1: every node */
	uint64		generation;		/* of the partition map the sources are of; 0: none yet */
	text	   *last_pk;		/* the last entity returned (NULL: none yet) */
	text	   *last_rk;
	bool		resumed;		/* the sources begin at the last entity returned */
	int			nsources;
	StreamSource *sources;
} StreamState;

/*
 * stream_sources: the sources of a stream over every node, one per node of
 * the partition map read now (under the lock of all partitions); the old
 * ones' pages are dropped, and the new ones begin at the last entity the
 * stream returned.
 */
static void
stream_sources(StreamState *st)
{
	MemoryContext old = MemoryContextSwitchTo(st->cxt);

	for (int i = 0; i < st->nsources; i++)
		MemoryContextDelete(st->sources[i].pagecxt);
	if (st->sources)
		pfree(st->sources);
	(void) router_cluster_shape(&st->nsources);
	st->sources = palloc0(sizeof(StreamSource) * st->nsources);
	for (int i = 0; i < st->nsources; i++)
	{
		st->sources[i].part = router_cluster_node_part[i];
		st->sources[i].pagecxt = AllocSetContextCreate(st->cxt, "tablestore router page",
													   ALLOCSET_DEFAULT_SIZES);
	}
	st->generation = router_cluster_generation;
	st->resumed = st->last_pk != NULL;
	MemoryContextSwitchTo(old);
}

/*
 * source_fetch: the next page of a source.  The page is fetched under the
 * lock of its partition (or of all partitions), taken for the page only;
 * a stream over every node reads the partition map under that lock, and
 * if it is not the map its sources are of (a partition moved between two
 * pages), makes new sources and returns false: the caller starts over.
 */
static bool
source_fetch(StreamState *st, StreamSource *src)
{
	MemoryContext old;
	text	   *npk = src->page.next_pk;
	text	   *nrk = src->page.next_rk;
	int			top = ROUTER_FETCH;

	CHECK_FOR_INTERRUPTS();
	router_call_lock(st->part);
	if (st->part < 0)
	{
		(void) router_cluster_shape(NULL);
		if (st->generation != router_cluster_generation)
		{
			stream_sources(st);
			router_call_unlock(st->part);
			return false;
		}
	}
	if (!src->started && st->resumed)
	{
		/* a new source begins at the last entity returned (skipped below) */
		npk = st->last_pk;
		nrk = st->last_rk;
	}
	if (st->capped && st->remaining < top)
		top = (int) Max(st->remaining, 1);
	/* the continuation, out of the page it came from, for the next one */
	old = MemoryContextSwitchTo(st->cxt);
	if (npk)
	{
		npk = (text *) pg_detoast_datum_copy((struct varlena *) npk);
		nrk = (text *) pg_detoast_datum_copy((struct varlena *) nrk);
	}
	MemoryContextReset(src->pagecxt);
	MemoryContextSwitchTo(src->pagecxt);
	router_fetch_page(src->part, st->table, st->filter, st->select, top, npk, nrk, st->json, &src->page);
	MemoryContextSwitchTo(old);
	router_call_unlock(st->part);
	if (npk)
	{
		pfree(npk);
		pfree(nrk);
	}
	src->next = 0;
	/* after new sources, the last entity returned is not returned again */
	if (!src->started && st->resumed && src->page.n > 0 &&
		ts_key_pair_cmp(src->page.ents[0].pk, src->page.ents[0].rk, st->last_pk, st->last_rk) == 0)
		src->next = 1;
	src->started = true;
	return true;
}

/*
 * stream_fill: every source with its next entity at hand, or ended.
 */
static void
stream_fill(StreamState *st)
{
	for (int i = 0; i < st->nsources; i++)
	{
		StreamSource *src = &st->sources[i];

		while (src->next >= src->page.n && !(src->started && src->page.next_pk == NULL))
		{
			if (!source_fetch(st, src))
			{
				/* new sources: start over */
				i = -1;
				break;
			}
		}
	}
}

/*
 * query_entities and query_entities_json: streamed a page at a time from
 * the query's partition's node, or from every node, each with its own
 * continuation, merged in key order: the router holds a page per node
 * however many entities match, and no node sends an entity twice.  The
 * entities come out in strictly ascending key order (a node that answers
 * otherwise is DATA_CORRUPTED), which is what lets a stream start again
 * after its last entity when partitions move.
 */
static Datum
router_stream(FunctionCallInfo fcinfo, bool json)
{
	FuncCallContext *fctx;
	StreamState *st;
	PageEntity *best = NULL;
	StreamSource *from = NULL;
	MemoryContext old;

	if (SRF_IS_FIRSTCALL())
	{
		fctx = SRF_FIRSTCALL_INIT();
		old = MemoryContextSwitchTo(fctx->multi_call_memory_ctx);
		st = palloc0(sizeof(StreamState));
		st->cxt = fctx->multi_call_memory_ctx;
		st->table = PG_ARGISNULL(0) ? NULL : PG_GETARG_TEXT_P_COPY(0);
		st->filter = PG_ARGISNULL(1) ? NULL : PG_GETARG_TEXT_P_COPY(1);
		st->select = PG_ARGISNULL(2) ? NULL : PG_GETARG_TEXT_P_COPY(2);
		st->capped = !PG_ARGISNULL(3);
		st->json = json;
		st->remaining = st->capped ? PG_GETARG_INT32(3) : 0;
		st->part = router_route_query(st->filter);
		if (st->part >= 0)
		{
			/* RUN ON the partition reaches its node, wherever it is */
			st->nsources = 1;
			st->sources = palloc0(sizeof(StreamSource));
			st->sources[0].part = st->part;
			st->sources[0].pagecxt = AllocSetContextCreate(st->cxt, "tablestore router page",
														   ALLOCSET_DEFAULT_SIZES);
		}
		/* else the sources are made under the first page's lock */
		fctx->user_fctx = st;
		MemoryContextSwitchTo(old);

		/*
		 * A cap below 1 is checked by one node's query_entities, after its
		 * checks of the table and the filter: ask it for the error (a
		 * negative cap) or for the check of the arguments of an empty
		 * stream (a cap of 0, which returns nothing).  Every other argument
		 * is checked by the pages as query_entities checks it.
		 */
		if (st->capped && st->remaining < 1)
		{
			Datum		args[5];
			bool		nulls[5];
			int			nrows;
			int			part = Max(st->part, 0);

			router_call_lock(part);
			router_forward_args(fcinfo, part, args, nulls);
			(void) router_call_remote_rows("tablestore_router._query_check(pg_catalog.int4,pg_catalog.text,pg_catalog.text,pg_catalog.text,pg_catalog.int4)",
									5, args, nulls, &nrows);
			router_call_unlock(part);
		}
	}
	fctx = SRF_PERCALL_SETUP();
	st = fctx->user_fctx;

	if (st->capped && st->remaining <= 0)
		SRF_RETURN_DONE(fctx);
	if (st->part < 0 && st->generation == 0)
	{
		/* the first page: the partition map is read under its lock */
		router_call_lock(-1);
		stream_sources(st);
		router_call_unlock(-1);
	}
	stream_fill(st);
	for (int i = 0; i < st->nsources; i++)
	{
		StreamSource *src = &st->sources[i];
		PageEntity *e = src->next < src->page.n ? &src->page.ents[src->next] : NULL;

		if (e != NULL && (best == NULL || ts_key_pair_cmp(e->pk, e->rk, best->pk, best->rk) < 0))
		{
			best = e;
			from = src;
		}
	}
	if (best == NULL)
		SRF_RETURN_DONE(fctx);
	if (st->last_pk != NULL && ts_key_pair_cmp(best->pk, best->rk, st->last_pk, st->last_rk) <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("%s returned the entity of keys (%s, %s) after (%s, %s)", router_page_source(from->part),
						text_to_cstring(best->pk), text_to_cstring(best->rk),
						text_to_cstring(st->last_pk), text_to_cstring(st->last_rk)),
				 errhint("A node named twice in the partition map, or a partition on two nodes, does this.")));
	/* the last entity returned, kept where the stream's state lives */
	old = MemoryContextSwitchTo(st->cxt);
	if (st->last_pk)
	{
		pfree(st->last_pk);
		pfree(st->last_rk);
	}
	st->last_pk = (text *) pg_detoast_datum_copy((struct varlena *) best->pk);
	st->last_rk = (text *) pg_detoast_datum_copy((struct varlena *) best->rk);
	MemoryContextSwitchTo(old);
	from->next++;
	if (st->capped)
		st->remaining--;
	if (json)
		SRF_RETURN_NEXT(fctx, PointerGetDatum(pg_detoast_datum_copy((struct varlena *) best->json)));
	SRF_RETURN_NEXT(fctx, router_entity_jsonb(best, from->part));
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_query_entities);
Datum
router_query_entities(PG_FUNCTION_ARGS)
{
	return router_stream(fcinfo, false);
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_query_entities_json);
Datum
router_query_entities_json(PG_FUNCTION_ARGS)
{
	return router_stream(fcinfo, true);
}

