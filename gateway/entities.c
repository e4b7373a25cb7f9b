/*-------------------------------------------------------------------------
 *
 * entities.c
 *	  The entity handlers: Query Entities (a page streamed into the
 *	  response), Get Entity, Insert Entity, Update/Merge (with or without
 *	  If-Match: insert-or-replace, insert-or-merge) and Delete Entity, each
 *	  one call of an extension function with the request's values, its
 *	  result written as the service's answer.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <libpq-fe.h>

#include "entities.h"

#include "auth.h"
#include "budget.h"
#include "buf.h"
#include "db.h"
#include "encode.h"
#include "gwlimits.h"
#include "json.h"
#include "odata.h"
#include "reqtypes.h"
#include "request.h"
#include "response.h"
#include "token.h"

/*
 * A query page being written: the rows of tablestore.query_page (one per
 * entity, then one with the continuation) arrive one at a time and are
 * written into the response body, so the gateway holds one page's text,
 * never a second copy.  A page ends early, with a continuation, when its
 * entities reach GW_MAX_PAGE_BYTES (the service too may end any page
 * early), and at the end of a table SAS's key range.
 */
typedef struct Page
{
	Req		   *r;
	const char *table;
	Buf		   *body;
	int			count;
	bool		splice;			/* entity text as the extension wrote it */
	bool		done;			/* past the range's end, or cut */
	char	   *npk;			/* the continuation */
	char	   *nrk;
	bool		bad;			/* a row that is not an entity */
} Page;


/*
 * The entity a function returned (row 0, column 0), parsed; res is cleared.
 * NULL, with a 500 sent, if it is not JSON.
 */
static json_object *
result_entity(Req *r, Resp *resp, PGresult *res)
{
	json_object *e = json_parse_db(PQgetvalue(res, 0, 0));

	PQclear(res);
	if (e == NULL)
		resp_internal(r, resp, NULL);
	return e;
}

/*
 * page_row: one row of a query page (DbRowFn).  Each entity comes with its
 * keys in columns of their own (tablestore._query_page_keyed): a $select
 * that does not name PartitionKey and RowKey leaves them out of the entity,
 * and the SAS range check and the page's own cut must not depend on it.
 */
static bool
page_row(void *arg, PGresult *row)
{
	Page	   *pg = arg;
	Req		   *r = pg->r;
	const char *text;
	size_t		len;
	json_object *e = NULL;
	const char *pk,
			   *rk;
	bool		table_sas = r->sas.present && !r->sas.account_sas;

	if (pg->done)
		return false;
	if (PQgetisnull(row, 0, 0))
	{
		/* the last row: the continuation, if any */
		if (!PQgetisnull(row, 0, 1))
		{
			pg->npk = xstrdup(PQgetvalue(row, 0, 1));
			pg->nrk = xstrdup(PQgetisnull(row, 0, 2) ? "" : PQgetvalue(row, 0, 2));
		}
		return true;
	}
	if (PQgetisnull(row, 0, 3) || PQgetisnull(row, 0, 4))
	{
		pg->bad = true;
		pg->done = true;
		return false;
	}
	pk = PQgetvalue(row, 0, 3);
	rk = PQgetvalue(row, 0, 4);
	text = PQgetvalue(row, 0, 0);
	len = PQgetlength(row, 0, 0);
	if (!pg->splice)
	{
		e = json_parse_db(text);
		if (e == NULL || !json_object_is_type(e, json_type_object))
		{
			if (e)
				json_object_put(e);
			pg->bad = true;
			pg->done = true;
			return false;
		}
	}
	if (table_sas && !key_in_range(r, pk, rk))
	{
		/* past the range's end: nothing later is in it, no continuation */
		pg->done = true;
		if (e)
			json_object_put(e);
		return false;
	}
	if (pg->count > 0 && pg->body->len + len > GW_MAX_PAGE_BYTES)
	{
		/* the page is full: this entity is where the next one starts */
		pg->npk = xstrdup(pk);
		pg->nrk = xstrdup(rk);
		pg->done = true;
		if (e)
			json_object_put(e);
		return false;
	}
	if (pg->count++ > 0)
		buf_puts(pg->body, ",");
	if (e == NULL)
		buf_append(pg->body, text, len);
	else
	{
		json_object *o = shape_entity_keyed(r, r->level, pg->table, e, false, pk, rk);

		buf_puts(pg->body, json_text(o));
		json_object_put(o);
		json_object_put(e);
	}
	return true;
}

/* entity_query: GET /table() with $filter, $select, $top, continuation. */
void
entity_query(Req *r, Resp *resp, const char *table)
{
	int			top;
	char		topbuf[16];
	char	   *npk = NULL,
			   *nrk = NULL;
	const char *tpk = r->query.next_pk;
	const char *trk = r->query.next_rk;
	const char *vals[6];
	DbErr		err;
	Page		pg = {0};

	if (!sas_allows(r, resp, "query", table, NULL, NULL) || !check_top(r, resp))
		return;
	top = r->query.top;
	if ((tpk && (npk = token_decode(r, 'p', table, tpk)) == NULL) ||
		(trk && (nrk = token_decode(r, 'r', table, trk)) == NULL))
	{
		bad_request(r, resp, "InvalidInput", "a continuation token is not one this gateway issued");
		goto done;
	}
	if (npk && !nrk)
		nrk = xstrdup("");
	if (nrk && !npk)
	{
		bad_request(r, resp, "InvalidInput", "NextRowKey without NextPartitionKey");
		goto done;
	}
	/* a table SAS's range starts the scan at its first key */
	if (r->sas.present && !r->sas.account_sas && r->sas.spk != NULL)
	{
		const char *srk = r->sas.srk ? r->sas.srk : "";
		int			c = npk ? key_cmp(npk, r->sas.spk) : -1;

		if (c < 0 || (c == 0 && key_cmp(nrk, srk) < 0))
		{
			free(npk);
			free(nrk);
			npk = xstrdup(r->sas.spk);
			nrk = xstrdup(srk);
		}
	}
	snprintf(topbuf, sizeof(topbuf), "%d", top);
	vals[0] = table;
	vals[1] = r->query.filter;
	vals[2] = r->query.select;
	vals[3] = topbuf;
	vals[4] = npk;
	vals[5] = nrk;

	/* the page's memory, before the database works for it (conn.c) */
	if (!req_charge(r, GW_MAX_PAGE_BYTES))
	{
		resp_error(r, resp, 503, "ServerBusy",
				   "The server is currently unable to receive requests. Please retry your request.",
				   "the gateway's memory budget is in use");
		goto done;
	}
	resp->charged = GW_MAX_PAGE_BYTES;
	resp->body.len = 0;
	if (r->level != LEVEL_NONE)
		metadata_prefix(r, &resp->body, table, "");
	else
		buf_puts(&resp->body, "{");
	buf_puts(&resp->body, "\"value\":[");
	pg.r = r;
	pg.table = table;
	pg.body = &resp->body;
	pg.splice = r->level == LEVEL_MINIMAL;
	if (!db_call_rows(r, "query", 6, vals, page_row, &pg, &err))
	{
		db_error_response(r, resp, &err);
		goto done;
	}
	if (pg.bad)
	{
		resp_internal(r, resp, "unexpected result of query_page");
		goto done;
	}
	buf_puts(&resp->body, "]}");
	resp->status = 200;
	resp->ctype = json_ctype(r->level);
	continuation_headers(r, resp, table, pg.npk, pg.nrk);
done:
	free(pg.npk);
	free(pg.nrk);
	free(npk);
	free(nrk);
}

/* entity_get: GET /table(PartitionKey='..',RowKey='..'). */
void
entity_get(Req *r, Resp *resp, const char *table, const char *pk, const char *rk)
{
	const char *vals[4] = {table, pk, rk, r->query.select};
	DbErr		err;
	PGresult   *res;
	json_object *e,
			   *o;

	if (!sas_allows(r, resp, "get", table, pk, rk))
		return;
	res = db_call(r, "get", 4, vals, &err);
	if (res == NULL)
	{
		db_error_response(r, resp, &err);
		return;
	}
	if (!PQgetisnull(res, 0, 1))
		resp_header(resp, "ETag", PQgetvalue(res, 0, 1));
	if (r->level == LEVEL_MINIMAL && PQgetvalue(res, 0, 0)[0] == '{')
	{
		resp->status = 200;
		resp->ctype = json_ctype(r->level);
		resp->body.len = 0;
		metadata_prefix(r, &resp->body, table, "/@Element");
		buf_puts(&resp->body, PQgetvalue(res, 0, 0) + 1);
		PQclear(res);
		return;
	}
	if ((e = result_entity(r, resp, res)) == NULL)
		return;
	o = shape_entity_keyed(r, r->level, table, e, true, pk, rk);
	resp_json(r, resp, 200, o);
	json_object_put(o);
	json_object_put(e);
}

/* entity_insert: POST /table with the entity. */
void
entity_insert(Req *r, Resp *resp, const char *table)
{
	json_object *body = parse_body_object(r, resp);
	json_object *pk = NULL,
			   *rk = NULL,
			   *e;
	const char *vals[2];
	DbErr		err;
	PGresult   *res;
	Buf			loc = {0},
				path = {0};

	if (body == NULL)
		return;
	json_object_object_get_ex(body, "PartitionKey", &pk);
	json_object_object_get_ex(body, "RowKey", &rk);
	if (r->sas.present && (!pk || !rk || !json_object_is_type(pk, json_type_string) ||
						   !json_object_is_type(rk, json_type_string)))
	{
		json_object_put(body);
		resp_error(r, resp, 400, "PropertiesNeedValue",
				   "The values are not specified for all properties in the entity.", NULL);
		return;
	}
	if (!sas_allows(r, resp, "insert", table, pk ? json_object_get_string(pk) : NULL,
					rk ? json_object_get_string(rk) : NULL))
	{
		json_object_put(body);
		return;
	}
	json_object_put(body);
	vals[0] = table;
	vals[1] = r->body.data;
	res = db_call(r, "insert", 2, vals, &err);
	if (res == NULL)
	{
		db_error_response(r, resp, &err);
		return;
	}
	if ((e = result_entity(r, resp, res)) == NULL)
		return;
	json_object_object_get_ex(e, "PartitionKey", &pk);
	json_object_object_get_ex(e, "RowKey", &rk);
	entity_path(&path, table, json_object_get_string(pk), json_object_get_string(rk));
	buf_printf(&loc, "%s/%s", r->base, path.data);
	resp_header(resp, "Location", loc.data);
	resp_header(resp, "DataServiceId", loc.data);
	etag_header(resp, e);
	if (r->prefer == PREFER_NO_CONTENT)
	{
		resp->status = 204;
		resp_header(resp, "Preference-Applied", "return-no-content");
	}
	else
	{
		json_object *o = shape_entity(r, r->level, table, e, true);

		if (r->prefer == PREFER_CONTENT)
			resp_header(resp, "Preference-Applied", "return-content");
		resp_json(r, resp, 201, o);
		json_object_put(o);
	}
	json_object_put(e);
	buf_free(&loc);
	buf_free(&path);
}

/*
 * entity_write: PUT (replace, or insert-or-replace without If-Match) and
 * MERGE/PATCH (merge, or insert-or-merge) of the entity the URL names; the
 * URL's keys are the entity's keys.
 */
void
entity_write(Req *r, Resp *resp, const char *table, const char *pk, const char *rk)
{
	json_object *body = parse_body_object(r, resp);
	const char *ifm = r->if_match;
	const char *op = entity_op(r->method, true, ifm != NULL);
	char	   *etag = NULL;
	const char *vals[3];
	DbErr		err;
	PGresult   *res;
	json_object *e;

	if (body == NULL)
		return;
	if (!sas_allows(r, resp, op, table, pk, rk))
	{
		json_object_put(body);
		return;
	}
	json_object_object_add(body, "PartitionKey", json_object_new_string(pk));
	json_object_object_add(body, "RowKey", json_object_new_string(rk));
	vals[0] = table;
	vals[1] = json_text(body);
	if (ifm)
		vals[2] = etag = normalize_etag(ifm);
	res = db_call(r, op, ifm ? 3 : 2, vals, &err);
	json_object_put(body);
	free(etag);
	if (res == NULL)
	{
		db_error_response(r, resp, &err);
		return;
	}
	e = json_parse_db(PQgetvalue(res, 0, 0));
	PQclear(res);
	if (e)
	{
		etag_header(resp, e);
		json_object_put(e);
	}
	resp->status = 204;
}

/* entity_delete: DELETE of the entity the URL names; If-Match required. */
void
entity_delete(Req *r, Resp *resp, const char *table, const char *pk, const char *rk)
{
	const char *ifm = r->if_match;
	const char *vals[4];
	char	   *etag;

	if (ifm == NULL)
	{
		bad_request(r, resp, "MissingRequiredHeader", "Delete Entity needs If-Match (an ETag or *)");
		return;
	}
	if (!sas_allows(r, resp, "delete", table, pk, rk))
		return;
	etag = normalize_etag(ifm);
	vals[0] = table;
	vals[1] = pk;
	vals[2] = rk;
	vals[3] = etag;
	call_for_204(r, resp, "delete", 4, vals);
	free(etag);
}
