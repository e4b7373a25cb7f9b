/*-------------------------------------------------------------------------
 *
 * batch.c
 *	  Entity group transactions: POST $batch, its body parsed
 *	  (batchparse.c) and checked, mapped onto one call of
 *	  tablestore.execute_batch(), and its multipart response.  The batch's
 *	  query form, a lone GET of an entity, runs as that GET alone does.
 *
 * Nothing is applied unless the whole body parses and every operation
 * passes the SAS checks; execute_batch then applies all or nothing.  A
 * change set whose operation fails (a 4xx of the extension, or a body
 * naming a property twice) is answered 202 with only the failing
 * operation's response, its status and "<index>:" message, as the service
 * does; the JavaScript SDK reads that response textually, so the error
 * JSON stays on one line and successful parts carry no JSON.  A batch
 * that could not run at all (no connection, the server busy or shutting
 * down, a timeout, an internal error: a 5xx) is answered with that status
 * at the top level, as a single operation is, so that SDK retry policies,
 * which see only the outer status, retry it.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>
#include <libpq-fe.h>

#include "batch.h"

#include "auth.h"
#include "batchparse.h"
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

/* part_start: the framing of one sub-response. */
static void
part_start(Buf *b, const char *cs, int status)
{
	buf_printf(b, "--%s\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
			   "HTTP/1.1 %d %s\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\n",
			   cs, status, status_text(status));
}

/*
 * envelope: the response's batch and change set boundaries (bnd, cs, 64
 * bytes each) and the opening of the change set in out.  The answer to a
 * query has no change set: its part is the batch's (cs is then bnd).
 */
static void
envelope(Buf *out, char *bnd, char *cs, bool query)
{
	char		bid[40],
				csid[40];

	new_uuid(bid);
	new_uuid(csid);
	snprintf(bnd, 64, "batchresponse_%s", bid);
	if (query)
	{
		snprintf(cs, 64, "%s", bnd);
		return;
	}
	snprintf(cs, 64, "changesetresponse_%s", csid);
	buf_printf(out, "--%s\r\nContent-Type: multipart/mixed; boundary=%s\r\n\r\n", bnd, cs);
}

/* answer_202: close the envelope in out and make it the 202 response. */
static void
answer_202(Resp *resp, Buf *out, const char *bnd, const char *cs)
{
	char		ctbuf[128];

	if (strcmp(cs, bnd) != 0)
		buf_printf(out, "--%s--\r\n", cs);
	buf_printf(out, "--%s--\r\n", bnd);
	snprintf(ctbuf, sizeof(ctbuf), "multipart/mixed; boundary=%s", bnd);
	resp->status = 202;
	resp->body.len = 0;
	buf_append(&resp->body, out->data, out->len);
	resp->ctype = NULL;
	resp_header(resp, "Content-Type", ctbuf);
}

/*
 * answer_failed_op: the 202 of a change set whose operation `index`
 * failed with an error of its own (a 4xx): only that operation's response
 * (at the operation's metadata level), its message prefixed "<index>:"
 * unless it already is.
 */
static void
answer_failed_op(Req *r, Resp *resp, bool query, Level level, int index, int http, const char *code,
				 const char *message, const char *reason)
{
	Resp		eresp = {0};
	Buf			msg = {0};
	Buf			out = {0};
	char		bnd[64],
				cs[64];

	if (message[0] >= '0' && message[0] <= '9' && strchr(message, ':'))
		buf_puts(&msg, message);
	else
		buf_printf(&msg, "%d:%s", index, message);
	resp_error(r, &eresp, http, code, msg.data, reason);
	envelope(&out, bnd, cs, query);
	part_start(&out, cs, http);
	buf_printf(&out, "DataServiceVersion: 1.0;\r\nContent-Type: %s\r\n\r\n%s\r\n",
			   json_ctype(level), eresp.body.data);
	answer_202(resp, &out, bnd, cs);
	buf_free(&out);
	buf_free(&msg);
	buf_free(&eresp.body);
	for (int i = 0; i < eresp.nhdr; i++)
	{
		free(eresp.hname[i]);
		free(eresp.hval[i]);
	}
}

/*
 * answer_results: the 202 of a change set that was applied: one
 * sub-response per operation from execute_batch's rows (status, ETag,
 * entity).  The entity is read only when a sub-response carries it (an
 * insert with return-content), shaped at that operation's metadata level;
 * an insert's Location comes from the keys the request sent.
 */
static void
answer_results(Req *r, Resp *resp, const char *table, SubReq *subs, int nsubs,
			   json_object *ops, PGresult *res)
{

	Buf			out = {0};
	char		bnd[64],
				cs[64];

	envelope(&out, bnd, cs, false);
	for (int i = 0; i < nsubs; i++)
	{
		int			status = PQgetisnull(res, i, 0) ? 204 : atoi(PQgetvalue(res, i, 0));
		bool		no_content = subs[i].prefer == PREFER_NO_CONTENT;
		json_object *op = json_object_array_get_idx(ops, i);
		json_object *sent = NULL;

		if (op)
			json_object_object_get_ex(op, "entity", &sent);
		if (status == 201 && no_content)
			status = 204;
		part_start(&out, cs, status);
		buf_puts(&out, strcmp(subs[i].method, "DELETE") == 0 ? "DataServiceVersion: 1.0;\r\n"
				 : "DataServiceVersion: 3.0;\r\n");
		if (strcmp(subs[i].method, "POST") == 0 && !subs[i].has_keys && sent)
		{
			json_object *pk = NULL,
					   *rk = NULL;
			Buf			p = {0};

			json_object_object_get_ex(sent, "PartitionKey", &pk);
			json_object_object_get_ex(sent, "RowKey", &rk);
			if (pk && rk && json_object_is_type(pk, json_type_string) && json_object_is_type(rk, json_type_string))
			{
				entity_path(&p, table, json_object_get_string(pk), json_object_get_string(rk));
				buf_printf(&out, "Location: %s/%s\r\nDataServiceId: %s/%s\r\n",
						   r->base, p.data, r->base, p.data);
			}
			buf_free(&p);
			if (no_content)
				buf_puts(&out, "Preference-Applied: return-no-content\r\n");
		}
		if (!PQgetisnull(res, i, 1))
			buf_printf(&out, "ETag: %s\r\n", PQgetvalue(res, i, 1));
		if ((status == 201 || status == 200) && !PQgetisnull(res, i, 2))
		{
			json_object *entity = json_parse_db(PQgetvalue(res, i, 2));
			json_object *shaped = entity ? shape_entity(r, subs[i].level, table, entity, true) : NULL;

			buf_printf(&out, "Content-Type: %s\r\n\r\n%s\r\n", json_ctype(subs[i].level),
					   shaped ? json_text(shaped) : "{}");
			if (shaped)
				json_object_put(shaped);
			if (entity)
				json_object_put(entity);
		}
		else
			buf_puts(&out, "\r\n\r\n");
	}
	answer_202(resp, &out, bnd, cs);
	buf_free(&out);
}

/*
 * answer_query: the 202 of a batch's query (a lone GET of an entity), run
 * as the same GET alone is (entities.c): Get Entity with the URL's
 * $select, the entity shaped at the sub-request's metadata level, in a
 * part outside any change set; the entity's error as its part, or a
 * top-level error when the call could not run.
 */
static void
answer_query(Req *r, Resp *resp, SubReq *sub)
{
	const char *vals[4] = {sub->table, sub->pk, sub->rk, sub->select};
	DbErr		derr;
	PGresult   *res = db_call(r, "get", 4, vals, &derr);
	json_object *entity,
			   *shaped;
	Buf			out = {0};
	char		bnd[64],
				cs[64];

	if (res == NULL)
	{
		if (derr.http >= 500)
			db_error_response(r, resp, &derr);	/* the query did not run */
		else
		{
			answer_failed_op(r, resp, true, sub->level, 0, derr.http, derr.code, derr.message,
							 derr.reason);
			db_err_free(&derr);
		}
		return;
	}
	entity = json_parse_db(PQgetvalue(res, 0, 0));
	if (entity == NULL)
	{
		PQclear(res);
		resp_internal(r, resp, "unexpected result of get_entity");
		return;
	}
	shaped = shape_entity_keyed(r, sub->level, sub->table, entity, true, sub->pk, sub->rk);
	envelope(&out, bnd, cs, true);
	part_start(&out, cs, 200);
	buf_puts(&out, "DataServiceVersion: 3.0;\r\n");
	if (!PQgetisnull(res, 0, 1))
		buf_printf(&out, "ETag: %s\r\n", PQgetvalue(res, 0, 1));
	buf_printf(&out, "Content-Type: %s\r\n\r\n%s\r\n", json_ctype(sub->level), json_text(shaped));
	answer_202(resp, &out, bnd, cs);
	buf_free(&out);
	json_object_put(shaped);
	json_object_put(entity);
	PQclear(res);
}

/*
 * handle_batch: POST $batch.  Parse, check, run execute_batch, answer 202
 * with one sub-response per operation (or the failing one), or the
 * top-level error of a batch that is malformed or could not run.
 */
void
handle_batch(Req *r, Resp *resp)
{
	const char *err;
	SubReq		subs[GW_MAX_BATCH_OPS];
	int			nsubs = 0;
	bool		too_many;
	bool		query;
	json_object *ops = NULL;
	const char *vals[2];
	DbErr		derr;
	PGresult   *res;
	size_t		held;

	/*
	 * What the batch holds while it runs besides its body and its answer
	 * (both charged in conn.c): the parts' copies (URL, decoded parameters,
	 * $select, $format, Accept), the operations' json-c tree and its text.
	 * Each is bounded by the body's bytes; they are charged to the memory
	 * budget as GW_BATCH_HELD_FACTOR times the body, before any is made.
	 */
	held = GW_BATCH_HELD_FACTOR * r->body.len;
	if (!req_charge(r, held))
	{
		resp_error(r, resp, 503, "ServerBusy",
				   "The server is currently unable to receive requests. Please retry your request.",
				   "the gateway's memory budget is in use");
		return;
	}
	err = batch_parse(r, req_header(r, "Content-Type"), r->body.data, r->body.len, subs, &nsubs,
					  &too_many, &query);
	if (err != NULL)
		goto bad;
	/* at the read-only secondary a batch may only be its query */
	if (r->secondary && !query)
	{
		refuse_secondary_write(r, resp);
		goto done;
	}
	/* one table; every operation well-formed and allowed by the SAS */
	ops = json_object_new_array();
	for (int i = 0; i < nsubs; i++)
	{
		json_object *op;
		const char *opname = NULL;
		const char *code;

		if (subs[i].uri_too_long)
		{
			/* as alone (request.c): the request target is too long */
			answer_failed_op(r, resp, query, subs[i].level, i, 414, "InvalidUri",
							 "The requested URI does not represent any resource on the server.",
							 "the request target is longer than 16384 bytes");
			goto done;
		}
		if (i > 0 && strcasecmp(subs[i].table, subs[0].table) != 0)
		{
			err = "the operations of a batch must address one table";
			goto bad;
		}
		if (subs[i].atom_only)
		{
			/* as alone (request.c): a sub-request may not ask for Atom */
			answer_failed_op(r, resp, query, subs[i].level, i, 415, "AtomFormatNotSupported",
							 "Atom format is not supported.", "ask for application/json;odata=<level>");
			goto done;
		}
		if ((err = sub_to_op(&subs[i], &op, &opname, &code)) != NULL)
		{
			if (code == NULL)
				goto bad;
			/* an error of this operation, as alone: the batch's answer names it */
			answer_failed_op(r, resp, query, subs[i].level, i, 400, code,
							 strcmp(code, "DuplicatePropertiesSpecified") == 0 ? GW_JSON_DUPLICATE_MESSAGE :
							 "An HTTP header that's mandatory for this request is not specified.", err);
			goto done;
		}
		json_object_array_add(ops, op);
		if (r->sas.present)
		{
			json_object *ent,
					   *pk = NULL,
					   *rk = NULL;

			json_object_object_get_ex(op, "entity", &ent);
			json_object_object_get_ex(ent, "PartitionKey", &pk);
			json_object_object_get_ex(ent, "RowKey", &rk);
			if (!pk || !rk || !json_object_is_type(pk, json_type_string) ||
				!json_object_is_type(rk, json_type_string))
			{
				err = "an operation's entity has no PartitionKey or RowKey string";
				goto bad;
			}
			if (!sas_allows(r, resp, opname, subs[i].table, json_object_get_string(pk),
							json_object_get_string(rk)))
				goto done;
		}
	}
	if (nsubs == 0)
	{
		err = "the change set has no operations";
		goto bad;
	}

	if (query)
	{
		answer_query(r, resp, &subs[0]);
		goto done;
	}
	vals[0] = subs[0].table;
	vals[1] = json_text(ops);
	res = db_call(r, "batch", 2, vals, &derr);
	if (res == NULL)
	{
		if (derr.http >= 500)
			db_error_response(r, resp, &derr);	/* the batch did not run */
		else
		{
			int			i = derr.batch_index >= 0 && derr.batch_index < nsubs ? derr.batch_index : 0;

			answer_failed_op(r, resp, false, subs[i].level, i, derr.http, derr.code, derr.message, derr.reason);
			db_err_free(&derr);
		}
		goto done;
	}
	if (PQntuples(res) != nsubs)
	{
		/* every operation has its sub-response, or none is claimed */
		fprintf(stderr, "tablestore-gateway: execute_batch answered %d rows for %d operations\n",
				PQntuples(res), nsubs);
		resp_error(r, resp, 500, "InternalError",
				   "Server encountered an internal error. Please try again after some time.", NULL);
	}
	else
		answer_results(r, resp, subs[0].table, subs, nsubs, ops, res);
	PQclear(res);
	goto done;

bad:
	resp_error(r, resp, 400, "InvalidInput", "One of the request inputs is not valid.", err);
done:
	for (int i = 0; i < nsubs; i++)
		free_sub(&subs[i]);
	if (ops)
		json_object_put(ops);
	req_release(r, held);
}
