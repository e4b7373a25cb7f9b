/*-------------------------------------------------------------------------
 *
 * handlers.c
 *	  The Table service's REST operations: the URL taken apart (account,
 *	  path-style or host-style, resource, query parameters), the payload
 *	  format negotiated, the request authenticated, and each operation
 *	  mapped onto one call of an extension function.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/evp.h>

/* bad_request: a 400 with a service code and our reason. */
static void
bad_request(Req *r, Resp *resp, const char *code, const char *why)
{
	const char *msg = "One of the request inputs is not valid.";

	if (strcmp(code, "InvalidUri") == 0)
		msg = "The requested URI does not represent any resource on the server.";
	else if (strcmp(code, "InvalidQueryParameterValue") == 0)
		msg = "Value for one of the query parameters specified in the request URI is invalid.";
	else if (strcmp(code, "InvalidHeaderValue") == 0)
		msg = "The value for one of the HTTP headers is not in the correct format.";
	else if (strcmp(code, "MissingRequiredHeader") == 0)
		msg = "An HTTP header that's mandatory for this request is not specified.";
	else if (strcmp(code, "XMethodIncorrectValue") == 0 || strcmp(code, "XMethodNotUsingPost") == 0)
		msg = "The X-HTTP-Method header is not valid for this request.";
	resp_error(r, resp, 400, code, msg, why);
}

/* not_allowed: 405 for a method the resource does not serve. */
static void
not_allowed(Req *r, Resp *resp)
{
	resp_error(r, resp, 405, "MethodNotAllowed",
			   "The requested method is not allowed on the specified resource.", NULL);
}

/*
 * negotiate: the metadata level from $format or Accept.  Plain
 * application/json (or any media type, or no Accept) means minimal metadata; an
 * Accept that offers only Atom/XML is refused as the service does.
 */
static bool
negotiate(Req *r, Resp *resp)
{
	const char *f = req_param(r, "$format");
	const char *a = f;
	Buf			accept = {0};
	bool		ok = true;

	r->level = LEVEL_MINIMAL;
	if (a == NULL)
	{
		req_header_list(r, "Accept", &accept);
		a = accept.data;
	}
	if (a == NULL)
		return true;
	if (strstr(a, "odata=nometadata"))
		r->level = LEVEL_NONE;
	else if (strstr(a, "odata=fullmetadata"))
		r->level = LEVEL_FULL;
	else if (!strstr(a, "json") && !strstr(a, "*/*") && (strstr(a, "atom") || f != NULL))
	{
		resp_error(r, resp, 415, "AtomFormatNotSupported",
				   "Atom format is not supported.", "ask for application/json;odata=<level>");
		ok = false;
	}
	buf_free(&accept);
	return ok;
}

/* is_sas_param: whether a query parameter is a field of a SAS. */
static bool
is_sas_param(const char *name)
{
	static const char *const fields[] = {
		"sv", "ss", "srt", "sp", "st", "se", "sip", "spr", "sig", "ses", "si", "tn",
		"spk", "srk", "epk", "erk",
	};

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (strcmp(name, fields[i]) == 0)
			return true;
	return false;
}

/* parse_query: split and percent-decode the query string. */
static bool
parse_query(Req *r, Resp *resp, char *q)
{
	while (q && *q)
	{
		char	   *amp = strchr(q, '&');
		char	   *eq;

		if (amp)
			*amp = '\0';
		if (*q)
		{
			eq = strchr(q, '=');
			if (eq)
				*eq = '\0';
			if (r->nparams >= GW_MAX_PARAMS)
			{
				bad_request(r, resp, "InvalidQueryParameterValue", "too many query parameters");
				return false;
			}
			r->params[r->nparams].name = xstrdup(q);
			r->params[r->nparams].value = xstrdup(eq ? eq + 1 : "");
			r->nparams++;
			/* form encoding: '+' is a space (SDKs send a literal '+' as %2B) */
			for (char *c = r->params[r->nparams - 1].name; *c; c++)
				if (*c == '+')
					*c = ' ';
			for (char *c = r->params[r->nparams - 1].value; *c; c++)
				if (*c == '+')
					*c = ' ';
			if (!pct_decode(r->params[r->nparams - 1].name) || !pct_decode(r->params[r->nparams - 1].value))
			{
				bad_request(r, resp, "InvalidQueryParameterValue", "a query parameter is not valid percent-encoded UTF-8");
				return false;
			}
			for (int i = 0; i < r->nparams - 1; i++)
				if (strcmp(r->params[i].name, r->params[r->nparams - 1].name) == 0)
				{
					/* a SAS with a field twice is no SAS: authentication fails */
					if (is_sas_param(r->params[i].name))
						resp_error(r, resp, 403, "AuthenticationFailed",
								   "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.",
								   "a SAS parameter is given twice");
					else
						bad_request(r, resp, "InvalidQueryParameterValue", "a query parameter is given twice");
					return false;
				}
		}
		q = amp ? amp + 1 : NULL;
	}
	return true;
}

/*
 * resolve_account: the account and the path after it.  Host-style when the
 * Host's first DNS label is a configured account (so a dotted gateway name
 * does not flip the addressing, Azurite's pitfall); else path-style, the
 * first path segment.  "<account>-secondary" addresses the same account.
 * A name that is no account gets a stand-in that fails authentication
 * exactly as a wrong key does (unknown_account), so that the answer does
 * not tell which accounts exist.  r->base is the scheme, host and (path-
 * style) account that the answers' URLs start with.
 */
static bool
resolve_account(Req *r, Resp *resp, const char **rest_raw)
{
	const char *host = req_header(r, "Host");
	const char *scheme = gw_config.tls ? "https" : "http";
	const char *path = r->raw_path;
	const char *dot;
	const char *seg_end;
	size_t		seglen;
	Buf			base = {0};

	if (host == NULL || *host == '\0' || strlen(host) > 255)
		host = "127.0.0.1";
	dot = strchr(host, '.');
	if (dot && host[0] != '[')
	{
		size_t		label = dot - host;
		Account    *a = find_account(host, label);

		if (a == NULL && label > 10 && strncmp(dot - 10, "-secondary", 10) == 0)
		{
			a = find_account(host, label - 10);
			r->secondary = a != NULL;
		}

		if (a != NULL)
		{
			r->acct = a;
			*rest_raw = path;
			buf_printf(&base, "%s://%s", scheme, host);
			r->base = base.data;
			return true;
		}
	}
	if (path[0] != '/')
	{
		bad_request(r, resp, "InvalidUri", "the path does not start with /");
		return false;
	}
	seg_end = strchr(path + 1, '/');
	if (seg_end == NULL)
		seg_end = path + strlen(path);
	seglen = seg_end - (path + 1);
	r->acct = find_account(path + 1, seglen);
	if (r->acct == NULL && seglen > 10 && strncmp(seg_end - 10, "-secondary", 10) == 0)
	{
		r->acct = find_account(path + 1, seglen - 10);
		r->secondary = r->acct != NULL;
	}
	if (r->acct == NULL)
	{
		r->acct = unknown_account(path + 1, seglen);
		r->unknown_acct = true;
	}
	*rest_raw = seg_end;
	buf_printf(&base, "%s://%s/%s", scheme, host, r->acct->name);
	r->base = base.data;
	return true;
}

/*
 * parse_entity_path: "table", "table()" or
 * "table(PartitionKey='pk',RowKey='rk')" (decoded; quotes in keys doubled).
 * Returns false if the text is none of these.
 */
bool
parse_entity_path(const char *rest, char **table, char **pk, char **rk, bool *has_keys)
{
	const char *paren = strchr(rest, '(');
	const char *p;
	char	   *keys[2] = {NULL, NULL};
	static const char *const names[2] = {"PartitionKey='", "RowKey='"};

	*has_keys = false;
	*table = *pk = *rk = NULL;
	if (paren == NULL)
	{
		if (*rest == '\0' || strchr(rest, '/') || strchr(rest, ')'))
			return false;
		*table = xstrdup(rest);
		return true;
	}
	if (paren == rest || memchr(rest, '/', paren - rest))
		return false;
	if (strcmp(paren, "()") == 0)
	{
		*table = xstrndup(rest, paren - rest);
		return true;
	}
	p = paren + 1;
	for (int k = 0; k < 2; k++)
	{
		Buf			b = {0};

		if (strncmp(p, names[k], strlen(names[k])) != 0)
			goto bad;
		p += strlen(names[k]);
		for (;;)
		{
			if (*p == '\0')
			{
				buf_free(&b);
				goto bad;
			}
			if (*p == '\'')
			{
				if (p[1] == '\'')
				{
					buf_append(&b, "'", 1);
					p += 2;
					continue;
				}
				p++;
				break;
			}
			buf_append(&b, p, 1);
			p++;
		}
		keys[k] = b.data ? b.data : xstrdup("");
		if (*p != (k == 0 ? ',' : ')'))
			goto bad;
		p++;
	}
	if (*p != '\0')
		goto bad;
	*table = xstrndup(rest, paren - rest);
	*pk = keys[0];
	*rk = keys[1];
	*has_keys = true;
	return true;
bad:
	free(keys[0]);
	free(keys[1]);
	return false;
}

/*
 * parse_body_object: the request body as a JSON object, or NULL with a 400
 * answered (InvalidInput; DuplicatePropertiesSpecified for a name given
 * twice, which jsonb would silently collapse).
 */
static json_object *
parse_body_object(Req *r, Resp *resp)
{
	return json_request_object(r, resp, r->body.data, r->body.len);
}

/* prefer_no_content: whether Prefer asks for return-no-content. */
static int
prefer(Req *r)
{
	Buf			p = {0};
	int			v = 0;

	req_header_list(r, "Prefer", &p);
	if (p.data == NULL)
		return 0;
	if (strstr(p.data, "return-no-content"))
		v = 1;
	else if (strstr(p.data, "return-content"))
		v = 2;
	buf_free(&p);
	return v;
}

/*
 * normalize_etag: an If-Match value with its DateTime's colons written
 * %3A, so that a client that unescaped them still matches (malloc'd).
 */
static char *
normalize_etag(const char *v)
{
	Buf			b = {0};

	if (strncmp(v, "W/\"datetime'", 12) != 0)
		return xstrdup(v);
	for (const char *p = v; *p; p++)
	{
		if (*p == ':')
			buf_puts(&b, "%3A");
		else
			buf_append(&b, p, 1);
	}
	return b.data;
}

/* etag_header: the ETag header from an entity's odata.etag. */
static void
etag_header(Resp *resp, json_object *e)
{
	json_object *v;

	if (json_object_object_get_ex(e, "odata.etag", &v) && json_object_is_type(v, json_type_string))
		resp_header(resp, "ETag", json_object_get_string(v));
}

/*
 * call_for_204: run a statement whose result is void; 204 on success,
 * else the service's error.
 */
static void
call_for_204(Req *r, Resp *resp, const char *stmt, int nparams, const char *const *vals)
{
	DbErr		err;
	PGresult   *res = db_call(r, stmt, nparams, vals, &err);

	if (res == NULL)
	{
		db_error_response(r, resp, &err);
		return;
	}
	PQclear(res);
	resp->status = 204;
}

/* ---- tables ---- */

/* table_item: one element of a table list (or a single table's body). */
static json_object *
table_item(Req *r, const char *name, bool single)
{
	json_object *o = json_object_new_object();
	Buf			b = {0};

	if (single && r->level != LEVEL_NONE)
	{
		buf_printf(&b, "%s/$metadata#Tables/@Element", r->base);
		json_object_object_add(o, "odata.metadata", json_object_new_string(b.data));
		b.len = 0;
	}
	if (r->level == LEVEL_FULL)
	{
		buf_printf(&b, "%s.Tables", r->acct->name);
		json_object_object_add(o, "odata.type", json_object_new_string(b.data));
		b.len = 0;
		buf_printf(&b, "%s/Tables('%s')", r->base, name);
		json_object_object_add(o, "odata.id", json_object_new_string(b.data));
		b.len = 0;
		buf_printf(&b, "Tables('%s')", name);
		json_object_object_add(o, "odata.editLink", json_object_new_string(b.data));
	}
	json_object_object_add(o, "TableName", json_object_new_string(name));
	buf_free(&b);
	return o;
}

/*
 * parse_top: $top as 0..1000 (default 1000) written in decimal digits only
 * (no sign, no blanks: one meaning per byte sequence); false with a 400 if
 * bad.  0 is legal, as in the service: no entities and no continuation.
 */
static bool
parse_top(Req *r, Resp *resp, int *top)
{
	const char *t = req_param(r, "$top");
	size_t		n;
	long		v;

	*top = 1000;
	if (t == NULL)
		return true;
	n = strlen(t);
	v = (n >= 1 && n <= 9 && strspn(t, "0123456789") == n) ? strtol(t, NULL, 10) : -1;
	if (v < 0 || v > 1000)
	{
		bad_request(r, resp, "InvalidInput", "$top must be an integer from 0 to 1000");
		return false;
	}
	*top = (int) v;
	return true;
}

/* query_tables: GET /Tables with $filter, $top and NextTableName. */
static void
query_tables(Req *r, Resp *resp)
{
	int			top;
	char		limit[16];
	const char *vals[3];
	DbErr		err;
	PGresult   *res;
	json_object *o,
			   *arr;
	Buf			b = {0};
	int			n;

	const char *next = req_param(r, "NextTableName");
	char	   *from = NULL;

	if (!sas_allows(r, resp, "list_tables", NULL, NULL, NULL) || !parse_top(r, resp, &top))
		return;
	if (next != NULL && (from = token_decode(r, 't', "", next)) == NULL)
	{
		bad_request(r, resp, "InvalidInput", "a continuation token is not one this gateway issued");
		return;
	}
	snprintf(limit, sizeof(limit), "%d", top + 1);
	vals[0] = req_param(r, "$filter");
	vals[1] = from;
	vals[2] = limit;
	res = db_call(r, "list_tables", 3, vals, &err);
	free(from);
	if (res == NULL)
	{
		db_error_response(r, resp, &err);
		return;
	}
	o = json_object_new_object();
	if (r->level != LEVEL_NONE)
	{
		buf_printf(&b, "%s/$metadata#Tables", r->base);
		json_object_object_add(o, "odata.metadata", json_object_new_string(b.data));
	}
	arr = json_object_new_array();
	n = PQntuples(res);
	for (int i = 0; i < n && i < top; i++)
		json_object_array_add(arr, table_item(r, PQgetvalue(res, i, 0), false));
	json_object_object_add(o, "value", arr);
	if (n > top && top > 0)
	{
		char	   *t = token_encode(r, 't', "", PQgetvalue(res, top, 0));

		resp_header(resp, "x-ms-continuation-NextTableName", t);
		free(t);
	}
	resp_json(r, resp, 200, o);
	json_object_put(o);
	PQclear(res);
	buf_free(&b);
}

/* get_table: GET /Tables('name'), the table as a query of its name. */
static void
get_table(Req *r, Resp *resp, const char *name)
{
	Buf			f = {0};
	const char *vals[3];
	DbErr		err;
	PGresult   *res;

	if (!sas_allows(r, resp, "list_tables", NULL, NULL, NULL))
		return;
	buf_puts(&f, "TableName eq '");
	for (const char *p = name; *p; p++)
	{
		if (*p == '\'')
			buf_puts(&f, "''");
		else
			buf_append(&f, p, 1);
	}
	buf_puts(&f, "'");
	vals[0] = f.data;
	vals[1] = NULL;
	vals[2] = "1";
	res = db_call(r, "list_tables", 3, vals, &err);
	buf_free(&f);
	if (res == NULL)
	{
		db_error_response(r, resp, &err);
		return;
	}
	if (PQntuples(res) == 0)
		resp_error(r, resp, 404, "ResourceNotFound", "The specified resource does not exist.", NULL);
	else
	{
		json_object *o = table_item(r, PQgetvalue(res, 0, 0), true);

		resp_json(r, resp, 200, o);
		json_object_put(o);
	}
	PQclear(res);
}

/* create_table: POST /Tables with {"TableName": "..."}. */
static void
create_table(Req *r, Resp *resp)
{
	json_object *body = parse_body_object(r, resp);
	json_object *tn;
	const char *name;
	DbErr		err;
	PGresult   *res;
	Buf			loc = {0};

	if (body == NULL)
		return;
	if (!json_object_object_get_ex(body, "TableName", &tn) || !json_object_is_type(tn, json_type_string))
	{
		json_object_put(body);
		bad_request(r, resp, "InvalidInput", "the body needs a TableName string");
		return;
	}
	name = json_object_get_string(tn);
	if (!sas_allows(r, resp, "create_table", name, NULL, NULL))
	{
		json_object_put(body);
		return;
	}
	res = db_call(r, "create_table", 1, &name, &err);
	if (res == NULL)
	{
		json_object_put(body);
		db_error_response(r, resp, &err);
		return;
	}
	PQclear(res);
	buf_printf(&loc, "%s/Tables('%s')", r->base, name);
	resp_header(resp, "Location", loc.data);
	resp_header(resp, "DataServiceId", loc.data);
	buf_free(&loc);
	if (prefer(r) == 1)
	{
		resp->status = 204;
		resp_header(resp, "Preference-Applied", "return-no-content");
	}
	else
	{
		json_object *o = table_item(r, name, true);

		if (prefer(r) == 2)
			resp_header(resp, "Preference-Applied", "return-content");
		resp_json(r, resp, 201, o);
		json_object_put(o);
	}
	json_object_put(body);
}

/* delete_table: DELETE /Tables('name'). */
static void
delete_table(Req *r, Resp *resp, const char *name)
{
	if (!sas_allows(r, resp, "delete_table", name, NULL, NULL))
		return;
	call_for_204(r, resp, "delete_table", 1, &name);
}

/* ---- entities ---- */

/*
 * metadata_prefix: `{"odata.metadata":"<base>/$metadata#<what>",` with the
 * URL JSON-escaped (it holds the Host header).  At minimal metadata the
 * extension's entity JSON is already what the service sends (annotations
 * and odata.etag), so the gateway splices it in after this prefix instead
 * of parsing and rewriting it.
 */
static void
metadata_prefix(Req *r, Buf *b, const char *table, const char *suffix)
{
	Buf			url = {0};
	json_object *s;

	buf_printf(&url, "%s/$metadata#%s%s", r->base, table, suffix);
	s = json_object_new_string(url.data);
	buf_puts(b, "{\"odata.metadata\":");
	buf_puts(b, json_text(s));
	buf_puts(b, ",");
	json_object_put(s);
	buf_free(&url);
}

/*
 * continuation_headers: the next key of a query page, as tokens the
 * gateway signs (token_encode), so that only keys it issued come back.
 */
static void
continuation_headers(Req *r, Resp *resp, const char *table, const char *npk, const char *nrk)
{
	char	   *t;

	if (npk == NULL)
		return;
	t = token_encode(r, 'p', table, npk);
	resp_header(resp, "x-ms-continuation-NextPartitionKey", t);
	free(t);
	t = token_encode(r, 'r', table, nrk ? nrk : "");
	resp_header(resp, "x-ms-continuation-NextRowKey", t);
	free(t);
}

/* A 500 InternalError, with the service's text and detail as our extra line. */
static void
resp_internal(Req *r, Resp *resp, const char *detail)
{
	resp_error(r, resp, 500, "InternalError",
			   "Server encountered an internal error. Please try again after some time.", detail);
}

/*
 * The entity a function returned (row 0, column 0), parsed; res is cleared.
 * NULL, with a 500 sent, if it is not JSON.
 */
static json_object *
result_entity(Req *r, Resp *resp, PGresult *res)
{
	json_object *e = json_tokener_parse(PQgetvalue(res, 0, 0));

	PQclear(res);
	if (e == NULL)
		resp_internal(r, resp, NULL);
	return e;
}

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
		e = json_tokener_parse(text);
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
		json_object *o = shape_entity_keyed(r, pg->table, e, false, pk, rk);

		buf_puts(pg->body, json_text(o));
		json_object_put(o);
		json_object_put(e);
	}
	return true;
}

/* query_entities: GET /table() with $filter, $select, $top, continuation. */
static void
query_entities(Req *r, Resp *resp, const char *table)
{
	int			top;
	char		topbuf[16];
	char	   *npk = NULL,
			   *nrk = NULL;
	const char *tpk = req_param(r, "NextPartitionKey");
	const char *trk = req_param(r, "NextRowKey");
	const char *vals[6];
	DbErr		err;
	Page		pg = {0};

	if (!sas_allows(r, resp, "query", table, NULL, NULL) || !parse_top(r, resp, &top))
		return;
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
	vals[1] = req_param(r, "$filter");
	vals[2] = req_param(r, "$select");
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

/* get_entity: GET /table(PartitionKey='..',RowKey='..'). */
static void
get_entity(Req *r, Resp *resp, const char *table, const char *pk, const char *rk)
{
	const char *vals[4] = {table, pk, rk, req_param(r, "$select")};
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
	o = shape_entity_keyed(r, table, e, true, pk, rk);
	resp_json(r, resp, 200, o);
	json_object_put(o);
	json_object_put(e);
}

/* insert_entity: POST /table with the entity. */
static void
insert_entity(Req *r, Resp *resp, const char *table)
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
	if (prefer(r) == 1)
	{
		resp->status = 204;
		resp_header(resp, "Preference-Applied", "return-no-content");
	}
	else
	{
		json_object *o = shape_entity(r, table, e, true);

		if (prefer(r) == 2)
			resp_header(resp, "Preference-Applied", "return-content");
		resp_json(r, resp, 201, o);
		json_object_put(o);
	}
	json_object_put(e);
	buf_free(&loc);
	buf_free(&path);
}

/*
 * write_entity: PUT (replace, or insert-or-replace without If-Match) and
 * MERGE/PATCH (merge, or insert-or-merge) of the entity the URL names; the
 * URL's keys are the entity's keys.
 */
static void
write_entity(Req *r, Resp *resp, const char *table, const char *pk, const char *rk, bool merge)
{
	json_object *body = parse_body_object(r, resp);
	const char *ifm = req_header(r, "If-Match");
	const char *op = merge ? (ifm ? "merge" : "insert_or_merge") : (ifm ? "update" : "insert_or_replace");
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
	e = json_tokener_parse(PQgetvalue(res, 0, 0));
	PQclear(res);
	if (e)
	{
		etag_header(resp, e);
		json_object_put(e);
	}
	resp->status = 204;
}

/* delete_entity: DELETE of the entity the URL names; If-Match required. */
static void
delete_entity(Req *r, Resp *resp, const char *table, const char *pk, const char *rk)
{
	const char *ifm = req_header(r, "If-Match");
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

/* ---- service ---- */

/* service: ?restype=service&comp=properties (service.c) or stats (XML). */
static void
service(Req *r, Resp *resp)
{
	const char *comp = req_param(r, "comp");
	const char *restype = req_param(r, "restype");

	r->xml = true;
	if (restype == NULL || strcmp(restype, "service") != 0 || comp == NULL ||
		(strcmp(comp, "properties") != 0 && strcmp(comp, "stats") != 0))
	{
		bad_request(r, resp, "InvalidQueryParameterValue", "the account root serves restype=service&comp=properties|stats");
		return;
	}
	if (strcmp(comp, "properties") == 0)
	{
		service_properties(r, resp);	/* service.c */
		return;
	}
	if (strcmp(r->method, "GET") != 0)
	{
		resp_error(r, resp, 405, "MethodNotAllowed",
				   "The resource doesn't support specified Http Verb.", "service statistics are read only");
		return;
	}
	if (!sas_allows(r, resp, "service_get", NULL, NULL, NULL))
		return;
	if (strcmp(comp, "stats") == 0 && !r->secondary)
	{
		/* as the service and Azurite: statistics are the secondary's */
		bad_request(r, resp, "InvalidQueryParameterValue",
					"service statistics are served at the secondary endpoint, <account>-secondary");
		return;
	}
	buf_puts(&resp->body, "<?xml version=\"1.0\" encoding=\"utf-8\"?>");
	{
		char		when[64];
		time_t		now = time(NULL);
		struct tm	tm;

		gmtime_r(&now, &tm);
		strftime(when, sizeof(when), "%a, %d %b %Y %H:%M:%S GMT", &tm);
		buf_printf(&resp->body,
				   "<StorageServiceStats><GeoReplication><Status>live</Status>"
				   "<LastSyncTime>%s</LastSyncTime></GeoReplication></StorageServiceStats>", when);
	}
	resp->status = 200;
	resp->ctype = "application/xml";
}

/*
 * body_md5_matches: whether the body matches the request's Content-MD5,
 * if it has one: Shared Key signs that header, and the service checks it
 * against the body, so a captured request cannot carry another body.
 */
static bool
body_md5_matches(Req *r)
{
	const char *want = req_header(r, "Content-MD5");
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char	   *got;
	bool		ok;

	if (want == NULL)
		return true;
	if (EVP_Digest(r->body.data ? r->body.data : "", r->body.len, md, &mdlen, EVP_md5(), NULL) != 1)
		return false;
	got = b64_encode(md, mdlen);
	ok = strcmp(got, want) == 0;
	free(got);
	return ok;
}

/*
 * sas_precheck: whether the request's SAS may allow its operation, decided
 * from the URL and headers alone (the operation, the table, the keys when
 * the URL names them), so that a request its SAS cannot allow is refused
 * before its body is read or charged.  handle_request checks again with
 * the body (an insert's keys, each operation of a batch).
 */
static bool
sas_precheck(Req *r, Resp *resp)
{
	const char *m = r->method;
	const char *ifm = req_header(r, "If-Match");
	char	   *table = NULL,
			   *pk = NULL,
			   *rk = NULL;
	bool		has_keys;
	bool		ok = true;
	size_t		n = strlen(r->rest);

	if (r->rest[0] == '\0')
		return strcmp(m, "GET") == 0 ? sas_allows(r, resp, "service_get", NULL, NULL, NULL) :
			strcmp(m, "PUT") != 0 || sas_allows(r, resp, "service_set", NULL, NULL, NULL);
	if (strcmp(r->rest, "Tables") == 0 || strcmp(r->rest, "Tables()") == 0)
	{
		if (strcmp(m, "GET") == 0)
			return sas_allows(r, resp, "list_tables", NULL, NULL, NULL);
		if (strcmp(m, "POST") == 0)
			return sas_allows(r, resp, "create_table", NULL, NULL, NULL);
		return true;
	}
	if (strncmp(r->rest, "Tables('", 8) == 0 && n >= 11 && strcmp(r->rest + n - 2, "')") == 0)
	{
		if (strcmp(m, "GET") == 0)
			return sas_allows(r, resp, "list_tables", NULL, NULL, NULL);
		if (strcmp(m, "DELETE") == 0)
		{
			table = xstrndup(r->rest + 8, n - 10);
			ok = sas_allows(r, resp, "delete_table", table, NULL, NULL);
			free(table);
		}
		return ok;
	}
	if (strcmp(r->rest, "$batch") == 0 || !parse_entity_path(r->rest, &table, &pk, &rk, &has_keys))
		return true;
	if (req_param(r, "comp") != NULL)
		ok = auth_refuse_sas(r, resp, "a shared access signature cannot read or set a table's stored access policies");
	else if (!has_keys && strcmp(m, "GET") == 0)
		ok = sas_allows(r, resp, "query", table, NULL, NULL);
	else if (!has_keys && strcmp(m, "POST") == 0)
		ok = sas_allows(r, resp, "insert", table, NULL, NULL);
	else if (has_keys && strcmp(m, "GET") == 0)
		ok = sas_allows(r, resp, "get", table, pk, rk);
	else if (has_keys && strcmp(m, "PUT") == 0)
		ok = sas_allows(r, resp, ifm ? "update" : "insert_or_replace", table, pk, rk);
	else if (has_keys && (strcmp(m, "MERGE") == 0 || strcmp(m, "PATCH") == 0))
		ok = sas_allows(r, resp, ifm ? "merge" : "insert_or_merge", table, pk, rk);
	else if (has_keys && strcmp(m, "DELETE") == 0)
		ok = sas_allows(r, resp, "delete", table, pk, rk);
	free(table);
	free(pk);
	free(rk);
	return ok;
}

/*
 * refuse_secondary_write: the answer to a write at <account>-secondary,
 * the read-only replica: 403 AuthorizationFailure, as the service answers
 * a request the account's setup does not allow.
 */
void
refuse_secondary_write(Req *r, Resp *resp)
{
	resp_error(r, resp, 403, "AuthorizationFailure",
			   "This request is not authorized to perform this operation.",
			   "the secondary endpoint (<account>-secondary) is read-only");
}

/*
 * prepare_request: everything that can be decided from the request line
 * and headers, before the body is read: the URL taken apart, the account,
 * the payload format, X-HTTP-Method, and authentication.  False with the
 * answer in resp when the request is refused (its body is then never
 * kept).  Shared Key signs the method on the wire, so X-HTTP-Method
 * replaces it only once the signature is checked.
 */
bool
prepare_request(Req *r, Resp *resp)
{
	char	   *uri = xstrdup(r->raw_uri ? r->raw_uri : "/");
	char	   *q = strchr(uri, '?');
	const char *rest_raw;
	const char *xm = req_header(r, "X-HTTP-Method");
	bool		ok = false;

	r->level = LEVEL_MINIMAL;
	if (strlen(r->raw_uri ? r->raw_uri : "") > GW_MAX_URI)
	{
		resp_error(r, resp, 414, "InvalidUri", "The requested URI does not represent any resource on the server.",
				   "the request target is longer than 16384 bytes");
		goto out;
	}
	if (q)
		*q++ = '\0';
	r->raw_path = xstrdup(uri);
	if (!parse_query(r, resp, q) || !resolve_account(r, resp, &rest_raw))
		goto out;
	r->rest = xstrdup(*rest_raw == '/' ? rest_raw + 1 : rest_raw);
	if (!pct_decode(r->rest))
	{
		bad_request(r, resp, "InvalidUri", "the path is not valid percent-encoded UTF-8");
		goto out;
	}
	/*
	 * The served resource is decided here, before authentication, and
	 * auth.c accepts only the signed forms of that resource.  The Python
	 * SDK's statistics path at a path-style secondary repeats the account
	 * (/<account>-secondary/<account>/?restype=service&comp=stats): that
	 * one path is the service root; every other path after the account is
	 * what it says (a table named like the account stays a table).
	 */
	{
		size_t		n = strlen(r->acct->name);
		const char *restype = req_param(r, "restype");
		const char *comp = req_param(r, "comp");

		if (r->secondary && rest_raw != r->raw_path &&
			strncmp(r->rest, r->acct->name, n) == 0 &&
			(strcmp(r->rest + n, "/") == 0 || r->rest[n] == '\0') &&
			restype != NULL && strcmp(restype, "service") == 0 &&
			comp != NULL && strcmp(comp, "stats") == 0)
		{
			r->rest[0] = '\0';
			r->stats_repeats_account = true;
		}
	}
	/*
	 * One trailing "/" addresses the same resource (/Tables/, /t/): Azurite
	 * serves it, and clients written against it send it; auth.c accepts a
	 * signature over the path with or without it.  Only a "/" sent as one:
	 * a trailing %2F is part of the name it ends.
	 */
	if (r->rest[0] != '\0' && rest_raw[strlen(rest_raw) - 1] == '/')
		r->rest[strlen(r->rest) - 1] = '\0';
	/*
	 * Until the request is authenticated its errors come as XML only where
	 * the service's are XML whatever the path (restype, comp): the path's
	 * shape depends on whether the account exists (an unknown host label
	 * falls back to path-style), and the answer must not tell.
	 */
	r->xml = req_param(r, "restype") != NULL || req_param(r, "comp") != NULL;
	/* a CORS preflight is answered unauthenticated, from the rules (service.c) */
	if (strcmp(r->method, "OPTIONS") == 0)
	{
		cors_preflight(r, resp);
		goto out;
	}
	if (!r->xml && !negotiate(r, resp))
		goto out;
	if (xm != NULL)
	{
		if (strcmp(r->method, "POST") != 0)
		{
			bad_request(r, resp, "XMethodNotUsingPost", "X-HTTP-Method is only allowed with POST");
			goto out;
		}
		if (strcmp(xm, "MERGE") != 0 && strcmp(xm, "PUT") != 0 && strcmp(xm, "DELETE") != 0 &&
			strcmp(xm, "PATCH") != 0)
		{
			bad_request(r, resp, "XMethodIncorrectValue", "X-HTTP-Method must be MERGE, PATCH, PUT or DELETE");
			goto out;
		}
	}
	if (!authenticate(r, resp))
		goto out;
	if (r->unknown_acct)
	{
		/* cannot happen: the stand-in's key is random */
		resp_error(r, resp, 403, "AuthenticationFailed",
				   "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.",
				   NULL);
		goto out;
	}
	if (xm != NULL)
		r->method = xm;
	if (r->rest[0] == '\0')
		r->xml = true;
	/*
	 * The secondary is the service's read-only replica: only reads there.
	 * A $batch is a read only in its query form, which handle_batch checks
	 * once the body is read.
	 */
	if (r->secondary && strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0 &&
		!(strcmp(r->method, "POST") == 0 && strcmp(r->rest, "$batch") == 0))
	{
		refuse_secondary_write(r, resp);
		goto out;
	}
	/* what a SAS cannot allow is refused before its body is read */
	ok = !r->sas.present || sas_precheck(r, resp);
out:
	free(uri);
	return ok;
}

/*
 * handle_request: run the operation of a request that prepare_request
 * accepted, its body now complete.  Every path out leaves a complete
 * response in resp.
 */
void
handle_request(Req *r, Resp *resp)
{
	const char *m = r->method;
	char	   *table = NULL,
			   *pk = NULL,
			   *rk = NULL;
	bool		has_keys;

	if (!body_md5_matches(r))
	{
		resp_error(r, resp, 400, "Md5Mismatch",
				   "The MD5 value specified in the request did not match the MD5 value calculated by the server.",
				   NULL);
		return;
	}

	if (r->rest[0] == '\0')
		service(r, resp);
	else if (req_param(r, "comp") != NULL && strncmp(r->rest, "Tables", 6) == 0 &&
			 (r->rest[6] == '\0' || r->rest[6] == '('))
		/* comp=acl is a table's (/<table>), not the table list's (attack-acl F4) */
		bad_request(r, resp, "InvalidQueryParameterValue", "comp is not a parameter of Tables");
	else if (strcmp(r->rest, "Tables") == 0 || strcmp(r->rest, "Tables()") == 0)
	{
		if (strcmp(m, "GET") == 0)
			query_tables(r, resp);
		else if (strcmp(m, "POST") == 0)
			create_table(r, resp);
		else
			not_allowed(r, resp);
	}
	else if (strncmp(r->rest, "Tables('", 8) == 0)
	{
		size_t		n = strlen(r->rest);
		char	   *name;

		if (n < 11 || strcmp(r->rest + n - 2, "')") != 0)
		{
			bad_request(r, resp, "InvalidUri", "expected Tables('<name>')");
			goto out;
		}
		name = xstrndup(r->rest + 8, n - 10);
		if (strchr(name, '\''))
			bad_request(r, resp, "InvalidResourceName", "a table name cannot contain a quote");
		else if (strcmp(m, "DELETE") == 0)
			delete_table(r, resp, name);
		else if (strcmp(m, "GET") == 0)
			get_table(r, resp, name);
		else
			not_allowed(r, resp);
		free(name);
	}
	else if (strcmp(r->rest, "$batch") == 0)
	{
		if (strcmp(m, "POST") == 0)
			handle_batch(r, resp);
		else
			not_allowed(r, resp);
	}
	else if (!parse_entity_path(r->rest, &table, &pk, &rk, &has_keys))
		bad_request(r, resp, "InvalidUri", "expected <table>, <table>() or <table>(PartitionKey='<pk>',RowKey='<rk>')");
	else if (req_param(r, "comp") != NULL && strchr(r->rest, '(') == NULL)
		table_acl(r, resp, table);
	else if (req_param(r, "comp") != NULL)
		bad_request(r, resp, "InvalidQueryParameterValue", "comp is a parameter of /<table> only, not of <table>() or an entity");
	else if (!has_keys)
	{
		if (strcmp(m, "GET") == 0)
			query_entities(r, resp, table);
		else if (strcmp(m, "POST") == 0)
			insert_entity(r, resp, table);
		else
			not_allowed(r, resp);
	}
	else if (strcmp(m, "GET") == 0)
		get_entity(r, resp, table, pk, rk);
	else if (strcmp(m, "PUT") == 0)
		write_entity(r, resp, table, pk, rk, false);
	else if (strcmp(m, "MERGE") == 0 || strcmp(m, "PATCH") == 0)
		write_entity(r, resp, table, pk, rk, true);
	else if (strcmp(m, "DELETE") == 0)
		delete_entity(r, resp, table, pk, rk);
	else
		not_allowed(r, resp);
out:
	free(table);
	free(pk);
	free(rk);
}
