/*-------------------------------------------------------------------------
 *
 * batch.c
 *	  Entity group transactions: POST $batch, a multipart/mixed body with
 *	  one change set of embedded HTTP requests, mapped onto one call of
 *	  tablestore.execute_batch(), and its multipart response.
 *
 * The parser takes what both SDKs send: CRLF or bare LF line ends, part
 * headers in any case, the JavaScript SDK's extra empty lines, absolute
 * request URLs (only the path after the account is used; host and scheme
 * are not trusted).  Nothing is applied unless the whole body parses and
 * every operation passes the SAS checks; execute_batch then applies all
 * or nothing.  A failed change set is answered 202 with only the failing
 * operation's response, its status and "<index>:" message, as the service
 * does; the JavaScript SDK reads that response textually, so the error
 * JSON stays on one line and successful parts carry no JSON.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A cursor over a byte range. */
typedef struct Cur
{
	const char *p;
	const char *end;
} Cur;

/* next_line: the next line without its CR/LF; false at the end. */
static bool
next_line(Cur *c, const char **line, size_t *len)
{
	const char *nl;

	if (c->p >= c->end)
		return false;
	nl = memchr(c->p, '\n', c->end - c->p);
	*line = c->p;
	if (nl == NULL)
	{
		*len = c->end - c->p;
		c->p = c->end;
	}
	else
	{
		*len = nl - c->p;
		c->p = nl + 1;
	}
	if (*len > 0 && (*line)[*len - 1] == '\r')
		(*len)--;
	return true;
}

/*
 * header_value: if line is "Name: value" for `name` (any case), a copy of
 * the trimmed value; else NULL.
 */
static char *
header_value(const char *line, size_t len, const char *name)
{
	size_t		n = strlen(name);
	const char *v;
	const char *e = line + len;

	if (len <= n || strncasecmp(line, name, n) != 0 || line[n] != ':')
		return NULL;
	v = line + n + 1;
	while (v < e && (*v == ' ' || *v == '\t'))
		v++;
	while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	return xstrndup(v, e - v);
}

/* boundary_of: the boundary parameter of a multipart Content-Type. */
static char *
boundary_of(const char *ctype)
{
	const char *b = strcasestr(ctype, "boundary=");
	const char *e;

	if (b == NULL || strncasecmp(ctype, "multipart/mixed", 15) != 0)
		return NULL;
	b += 9;
	if (*b == '"')
	{
		b++;
		e = strchr(b, '"');
		if (e == NULL)
			return NULL;
	}
	else
		for (e = b; *e && *e != ';' && *e != ' ' && *e != '\t'; e++)
			;
	if (e == b || e - b > 70)
		return NULL;
	return xstrndup(b, e - b);
}

/*
 * find_delim: the next "--boundary" that starts a line in [from, end);
 * NULL if none.
 */
static const char *
find_delim(const char *start, const char *from, const char *end, const char *boundary)
{
	size_t		n = strlen(boundary);

	while (from < end)
	{
		const char *d = memmem(from, end - from, "--", 2);

		if (d == NULL)
			return NULL;
		if ((d == start || d[-1] == '\n') && (size_t) (end - d) >= n + 2 &&
			memcmp(d + 2, boundary, n) == 0)
			return d;
		from = d + 1;
	}
	return NULL;
}

/* One parsed sub-request. */
typedef struct SubReq
{
	char	   *method;
	char	   *table;
	char	   *pk;
	char	   *rk;
	bool		has_keys;
	char	   *if_match;
	char	   *prefer;
	const char *body;
	size_t		body_len;
} SubReq;

/* free_sub: release a sub-request's strings. */
void
free_sub(SubReq *s)
{
	free(s->method);
	free(s->table);
	free(s->pk);
	free(s->rk);
	free(s->if_match);
	free(s->prefer);
}

/*
 * parse_sub: one part of the change set: MIME headers, empty line, an
 * HTTP request (request line, headers, empty line, body).  Returns an
 * error text or NULL.
 */
static const char *
parse_sub(Req *r, const char *s, const char *e, SubReq *sub)
{
	Cur			c = {s, e};
	const char *line;
	size_t		len;
	const char *sp1,
			   *sp2;
	char	   *url,
			   *path,
			   *q;
	char	   *xmethod = NULL;
	size_t		alen = strlen(r->acct->name);

	memset(sub, 0, sizeof(*sub));
	/* MIME headers of the part */
	for (;;)
	{
		if (!next_line(&c, &line, &len))
			return "a change set part ends inside its headers";
		if (len == 0)
			break;
	}
	/* empty lines, then the request line */
	do
	{
		if (!next_line(&c, &line, &len))
			return "a change set part has no request line";
	} while (len == 0);
	sp1 = memchr(line, ' ', len);
	sp2 = sp1 ? memchr(sp1 + 1, ' ', line + len - sp1 - 1) : NULL;
	if (sp1 == NULL || sp2 == NULL || sp1 == line || sp2 == sp1 + 1 ||
		(size_t) (line + len - sp2 - 1) != 8 || strncmp(sp2 + 1, "HTTP/1.1", 8) != 0)
		return "a change set part's request line is not \"METHOD URL HTTP/1.1\"";
	sub->method = xstrndup(line, sp1 - line);
	url = xstrndup(sp1 + 1, sp2 - sp1 - 1);
	/* headers of the embedded request */
	for (;;)
	{
		char	   *v;

		if (!next_line(&c, &line, &len))
			break;
		if (len == 0)
			break;
		if ((v = header_value(line, len, "If-Match")) != NULL)
		{
			free(sub->if_match);
			sub->if_match = v;
		}
		else if ((v = header_value(line, len, "Prefer")) != NULL)
		{
			free(sub->prefer);
			sub->prefer = v;
		}
		else if ((v = header_value(line, len, "X-HTTP-Method")) != NULL)
		{
			free(xmethod);
			xmethod = v;
		}
	}
	/* the body: skip leading line ends, drop trailing ones */
	while (c.p < e && (*c.p == '\r' || *c.p == '\n'))
		c.p++;
	sub->body = c.p;
	sub->body_len = e - c.p;
	while (sub->body_len > 0 && strchr("\r\n \t", sub->body[sub->body_len - 1]))
		sub->body_len--;

	if (xmethod)
	{
		if (strcmp(sub->method, "POST") != 0 || strcmp(xmethod, "MERGE") != 0)
		{
			free(xmethod);
			free(url);
			return "X-HTTP-Method in a change set must be MERGE on a POST";
		}
		free(sub->method);
		sub->method = xmethod;
	}

	/* the path after scheme, host and account */
	path = url;
	if (strncmp(path, "http://", 7) == 0 || strncmp(path, "https://", 8) == 0)
	{
		path = strstr(path, "://") + 3;
		path = strchr(path, '/');
		if (path == NULL)
		{
			free(url);
			return "a change set request URL has no path";
		}
	}
	if ((q = strchr(path, '?')) != NULL)
		*q = '\0';
	if (path[0] == '/')
		path++;
	if (strncmp(path, r->acct->name, alen) == 0 && path[alen] == '/')
		path += alen + 1;
	else if (strncmp(path, r->acct->name, alen) == 0 && strncmp(path + alen, "-secondary/", 11) == 0)
		path += alen + 11;
	if (!pct_decode(path) ||
		!parse_entity_path(path, &sub->table, &sub->pk, &sub->rk, &sub->has_keys))
	{
		free(url);
		return "a change set request URL does not address a table or an entity";
	}
	free(url);
	return NULL;
}

/*
 * sub_to_op: the execute_batch element of a sub-request; an error text or
 * NULL.  *opname is the SAS operation.
 */
static const char *
sub_to_op(SubReq *s, json_object **out, const char **opname)
{
	json_object *op = json_object_new_object();
	json_object *entity = NULL;
	const char *name;

	*out = NULL;
	if (strcmp(s->method, "DELETE") == 0 || strcmp(s->method, "GET") == 0)
	{
		if (!s->has_keys)
		{
			json_object_put(op);
			return "a DELETE or GET in a change set must name an entity";
		}
		entity = json_object_new_object();
		name = strcmp(s->method, "GET") == 0 ? "retrieve" : "delete";
		*opname = strcmp(s->method, "GET") == 0 ? "get" : "delete";
	}
	else
	{
		entity = json_parse_strict(s->body, s->body_len);
		if (entity == NULL || !json_object_is_type(entity, json_type_object))
		{
			if (entity)
				json_object_put(entity);
			json_object_put(op);
			return "a change set request's body is not a JSON object";
		}
		if (strcmp(s->method, "POST") == 0 && !s->has_keys)
			name = *opname = "insert";
		else if (strcmp(s->method, "PUT") == 0 && s->has_keys)
			name = *opname = s->if_match ? "update" : "insert_or_replace";
		else if ((strcmp(s->method, "MERGE") == 0 || strcmp(s->method, "PATCH") == 0) && s->has_keys)
			name = *opname = s->if_match ? "merge" : "insert_or_merge";
		else
		{
			json_object_put(entity);
			json_object_put(op);
			return "a change set request's method does not fit its URL";
		}
	}
	if (s->has_keys)
	{
		json_object_object_add(entity, "PartitionKey", json_object_new_string(s->pk));
		json_object_object_add(entity, "RowKey", json_object_new_string(s->rk));
	}
	json_object_object_add(op, "op", json_object_new_string(name));
	json_object_object_add(op, "entity", entity);
	if (s->if_match && strcmp(name, "retrieve") != 0)
		json_object_object_add(op, "if_match", json_object_new_string(s->if_match));
	*out = op;
	return NULL;
}

/* part_start: the framing of one sub-response. */
static void
part_start(Buf *b, const char *cs, int status)
{
	buf_printf(b, "--%s\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
			   "HTTP/1.1 %d %s\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\n",
			   cs, status, status_text(status));
}

/*
 * batch_parse: split a $batch body (Content-Type ctype) into its change
 * set's sub-requests, at most GW_MAX_BATCH_OPS.  Returns NULL, or the
 * reason the body is malformed; *too_many when it holds more operations.
 * On return subs[0 .. *nsubs - 1] are to be freed with free_sub().
 */
const char *
batch_parse(Req *r, const char *ctype, const char *start, size_t len,
			SubReq *subs, int *nsubs, bool *too_many)
{
	char	   *outer = ctype ? boundary_of(ctype) : NULL;
	char	   *inner = NULL;
	const char *end = start + len;
	const char *d,
			   *cs_start,
			   *cs_end;
	const char *err = NULL;

	*nsubs = 0;
	*too_many = false;
	if (outer == NULL || len == 0)
	{
		err = "a batch needs Content-Type multipart/mixed with a boundary, and a body";
		goto out;
	}
	/* the batch's first part: the change set's headers */
	d = find_delim(start, start, end, outer);
	if (d == NULL)
	{
		err = "the batch boundary does not occur in the body";
		goto out;
	}
	{
		Cur			c = {d, end};
		const char *line;
		size_t		n;

		next_line(&c, &line, &n);	/* the delimiter */
		while (next_line(&c, &line, &n) && n > 0)
		{
			char	   *v = header_value(line, n, "Content-Type");

			if (v)
			{
				free(inner);
				inner = boundary_of(v);
				free(v);
			}
		}
		if (inner == NULL)
		{
			err = "the batch's part is not a change set (multipart/mixed with a boundary)";
			goto out;
		}
		cs_start = c.p;
	}
	cs_end = find_delim(start, cs_start, end, outer);
	if (cs_end == NULL)
	{
		err = "the batch has no closing boundary";
		goto out;
	}
	/* the change set's parts */
	d = find_delim(start, cs_start, cs_end, inner);
	if (d == NULL)
	{
		err = "the change set boundary does not occur in the change set";
		goto out;
	}
	for (;;)
	{
		const char *after = d + 2 + strlen(inner);
		const char *next;

		if (after + 2 <= cs_end && strncmp(after, "--", 2) == 0)
			break;				/* closing delimiter */
		after = memchr(after, '\n', cs_end - after);
		if (after == NULL)
		{
			err = "a change set delimiter line does not end";
			goto out;
		}
		after++;
		next = find_delim(start, after, cs_end, inner);
		if (next == NULL)
		{
			err = "the change set has no closing boundary";
			goto out;
		}
		if (*nsubs >= GW_MAX_BATCH_OPS)
		{
			*too_many = true;
			err = "0:The batch request operation exceeds the maximum 100 changes per change set.";
			goto out;
		}
		if ((err = parse_sub(r, after, next, &subs[*nsubs])) != NULL)
		{
			free_sub(&subs[*nsubs]);
			goto out;
		}
		(*nsubs)++;
		d = next;
	}
	if (*nsubs == 0)
		err = "the change set has no operations";
out:
	free(outer);
	free(inner);
	return err;
}

/*
 * handle_batch: POST $batch.  Parse, check, run execute_batch, answer 202
 * with one sub-response per operation (or the failing one).
 */
void
handle_batch(Req *r, Resp *resp)
{
	const char *err;
	SubReq		subs[GW_MAX_BATCH_OPS];
	int			nsubs = 0;
	bool		too_many;
	json_object *ops = NULL;
	char	   *table = NULL;
	char		bid[40],
				csid[40];
	Buf			out = {0};
	char		ctbuf[128];

	err = batch_parse(r, req_header(r, "Content-Type"), r->body.data, r->body.len, subs, &nsubs, &too_many);
	if (err != NULL)
		goto bad;
	/* one table; every operation allowed by the SAS */
	ops = json_object_new_array();
	for (int i = 0; i < nsubs; i++)
	{
		json_object *op;
		const char *opname = NULL;

		if (i > 0 && strcasecmp(subs[i].table, subs[0].table) != 0)
		{
			err = "the operations of a batch must address one table";
			goto bad;
		}
		if ((err = sub_to_op(&subs[i], &op, &opname)) != NULL)
			goto bad;
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
	table = xstrdup(subs[0].table);

	new_uuid(bid);
	new_uuid(csid);
	{
		char		bnd[64],
					cs[64];
		const char *vals[2] = {table, json_text(ops)};
		DbErr		derr;
		PGresult   *res = db_call(r, "batch", 2, vals, &derr);

		snprintf(bnd, sizeof(bnd), "batchresponse_%s", bid);
		snprintf(cs, sizeof(cs), "changesetresponse_%s", csid);
		buf_printf(&out, "--%s\r\nContent-Type: multipart/mixed; boundary=%s\r\n\r\n", bnd, cs);
		if (res == NULL)
		{
			Resp		eresp = {0};
			int			idx = derr.batch_index >= 0 ? derr.batch_index : 0;
			Buf			msg = {0};

			/* the service's "<index>:<message>" text */
			if (derr.message[0] >= '0' && derr.message[0] <= '9' && strchr(derr.message, ':'))
				buf_puts(&msg, derr.message);
			else
				buf_printf(&msg, "%d:%s", idx, derr.message);
			resp_error(r, &eresp, derr.http, derr.code, msg.data, derr.reason);
			part_start(&out, cs, derr.http);
			buf_printf(&out, "DataServiceVersion: 1.0;\r\nContent-Type: %s\r\n\r\n%s\r\n",
					   json_ctype(r->level), eresp.body.data);
			buf_free(&msg);
			buf_free(&eresp.body);
			for (int i = 0; i < eresp.nhdr; i++)
			{
				free(eresp.hname[i]);
				free(eresp.hval[i]);
			}
			db_err_free(&derr);
		}
		else
		{
			/*
			 * One row per operation: status, ETag, entity.  The entity is
			 * read only when a sub-response carries it (an insert with
			 * return-content, a retrieve); an insert's Location comes from
			 * the keys the request sent.
			 */
			for (int i = 0; i < PQntuples(res) && i < nsubs; i++)
			{
				int			status = PQgetisnull(res, i, 0) ? 204 : atoi(PQgetvalue(res, i, 0));
				bool		no_content = subs[i].prefer && strstr(subs[i].prefer, "return-no-content");
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
					json_object *entity = json_tokener_parse(PQgetvalue(res, i, 2));
					json_object *shaped = entity ? shape_entity(r, table, entity, true) : NULL;

					buf_printf(&out, "Content-Type: %s\r\n\r\n%s\r\n", json_ctype(r->level),
							   shaped ? json_text(shaped) : "{}");
					if (shaped)
						json_object_put(shaped);
					if (entity)
						json_object_put(entity);
				}
				else
					buf_puts(&out, "\r\n\r\n");
			}
			PQclear(res);
		}
		buf_printf(&out, "--%s--\r\n--%s--\r\n", cs, bnd);
		snprintf(ctbuf, sizeof(ctbuf), "multipart/mixed; boundary=%s", bnd);
	}
	resp->status = 202;
	resp->body.len = 0;
	buf_append(&resp->body, out.data, out.len);
	resp->ctype = NULL;
	resp_header(resp, "Content-Type", ctbuf);
	goto done;

bad:
	resp_error(r, resp, 400, "InvalidInput", "One of the request inputs is not valid.", err);
done:
	for (int i = 0; i < nsubs; i++)
		free_sub(&subs[i]);
	if (ops)
		json_object_put(ops);
	free(table);
	buf_free(&out);
}
