/*-------------------------------------------------------------------------
 *
 * request.c
 *	  The request parser of tablestore-gateway: what a request asks for,
 *	  read from its URL and headers into the request (Req) once, before
 *	  anything acts on it.
 *
 * request_parse takes the request target apart: the query parameters, the
 * account (host-style or path-style), the decoded path after it and the
 * resource that path addresses (Target), the Prefer and If-Match headers
 * and a query's options.  The SAS precheck, the routing and the handlers
 * (dispatch.c, tables.c, entities.c) read those fields instead of the raw
 * request, and a $batch's embedded requests (batchparse.c) are read with
 * the same functions (parse_entity_path, parse_prefer, entity_op), so a
 * request means one thing wherever it comes from.  Errors of the target
 * itself are answered here, through the response writer; whatever a
 * handler decides (a $top out of range, after the SAS check) is left to
 * it.  Nothing here calls authentication, the database or a handler.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>
#include <microhttpd.h>
#include <openssl/evp.h>

#include "request.h"

#include "account.h"
#include "buf.h"
#include "config.h"
#include "encode.h"
#include "gwlimits.h"
#include "json.h"
#include "reqtypes.h"
#include "response.h"

/* req_header: a request header (case-insensitive name) or NULL. */
const char *
req_header(Req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

/* req_header_list: the values of a list-valued header, joined by ", ". */
typedef struct HdrJoin
{
	const char *name;
	Buf		   *out;
} HdrJoin;

/*
 * join_header: one header of the connection (an MHD_KeyValueIterator for
 * req_header_list), appended to the list if it is the one wanted.
 */
static enum MHD_Result
join_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	HdrJoin    *h = cls;

	if (strcasecmp(key, h->name) == 0 && value != NULL)
	{
		if (h->out->len > 0)
			buf_puts(h->out, ", ");
		buf_puts(h->out, value);
	}
	return MHD_YES;
}

/* req_header_list: see HdrJoin above. */
void
req_header_list(Req *r, const char *name, Buf *out)
{
	HdrJoin		h = {name, out};

	MHD_get_connection_values(r->conn, MHD_HEADER_KIND, join_header, &h);
}

/* req_param: a decoded query parameter (exact name) or NULL. */
const char *
req_param(Req *r, const char *name)
{
	for (int i = 0; i < r->nparams; i++)
		if (strcmp(r->params[i].name, name) == 0)
			return r->params[i].value;
	return NULL;
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

/*
 * query_split: split and percent-decode a query string (q, changed in
 * place) into params[*nparams ..], at most GW_MAX_PARAMS in all, each
 * malloc'd.  Returns NULL, or what is wrong; *sas_twice when that is a
 * field of a SAS given twice.  The request parser and the batch parser
 * (a sub-request's URL) read a query string with it alike.
 */
const char *
query_split(char *q, Param *params, int *nparams, bool *sas_twice)
{
	*sas_twice = false;
	while (q && *q)
	{
		char	   *amp = strchr(q, '&');
		char	   *eq;

		if (amp)
			*amp = '\0';
		if (*q)
		{
			Param	   *p = &params[*nparams];

			eq = strchr(q, '=');
			if (eq)
				*eq = '\0';
			if (*nparams >= GW_MAX_PARAMS)
				return "too many query parameters";
			p->name = xstrdup(q);
			p->value = xstrdup(eq ? eq + 1 : "");
			(*nparams)++;
			/* form encoding: '+' is a space (SDKs send a literal '+' as %2B) */
			for (char *c = p->name; *c; c++)
				if (*c == '+')
					*c = ' ';
			for (char *c = p->value; *c; c++)
				if (*c == '+')
					*c = ' ';
			if (!pct_decode(p->name) || !pct_decode(p->value))
				return "a query parameter is not valid percent-encoded UTF-8";
			for (int i = 0; i < *nparams - 1; i++)
				if (strcmp(params[i].name, p->name) == 0)
				{
					*sas_twice = is_sas_param(p->name);
					return "a query parameter is given twice";
				}
		}
		q = amp ? amp + 1 : NULL;
	}
	return NULL;
}

/* parse_query: the request's query string into r->params (query_split). */
static bool
parse_query(Req *r, Resp *resp, char *q)
{
	bool		sas_twice;
	const char *why = query_split(q, r->params, &r->nparams, &sas_twice);

	if (why == NULL)
		return true;
	/* a SAS with a field twice is no SAS: authentication fails */
	if (sas_twice)
		resp_error(r, resp, 403, "AuthenticationFailed",
				   "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.",
				   "a SAS parameter is given twice");
	else
		bad_request(r, resp, "InvalidQueryParameterValue", why);
	return false;
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
 * parse_top: $top as 0..1000 (default 1000) written in decimal digits only
 * (no sign, no blanks: one meaning per byte sequence); -1 if it is not.
 * 0 is legal, as in the service: no entities and no continuation.
 */
static int
parse_top(const char *t)
{
	size_t		n;
	long		v;

	if (t == NULL)
		return 1000;
	n = strlen(t);
	v = (n >= 1 && n <= 9 && strspn(t, "0123456789") == n) ? strtol(t, NULL, 10) : -1;
	return v < 0 || v > 1000 ? -1 : (int) v;
}

/*
 * request_parse: the request line taken apart, before anything acts on
 * it: the query parameters (split, percent-decoded, none twice), the
 * account (host-style or path-style, or a stand-in), the decoded path of
 * the resource after the account, and whether errors are XML.  False with
 * the answer in resp if the request target is malformed.
 */
bool
request_parse(Req *r, Resp *resp)
{
	char	   *uri = xstrdup(r->raw_uri ? r->raw_uri : "/");
	char	   *q = strchr(uri, '?');
	const char *rest_raw;
	Buf			prefer = {0};
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
	 * a trailing %2F is part of the name it ends.  A "/" alone is not a
	 * trailing one: it ends no name (/<account>// is an empty name, not the
	 * service root, and parse_resource refuses it).
	 */
	if (r->rest[0] != '\0' && r->rest[1] != '\0' && rest_raw[strlen(rest_raw) - 1] == '/')
		r->rest[strlen(r->rest) - 1] = '\0';
	/*
	 * Until the request is authenticated its errors come as XML only where
	 * the service's are XML whatever the path (restype, comp): the path's
	 * shape depends on whether the account exists (an unknown host label
	 * falls back to path-style), and the answer must not tell.
	 */
	r->xml = req_param(r, "restype") != NULL || req_param(r, "comp") != NULL;

	/* what it addresses, and the headers and options its handler reads */
	parse_resource(r->rest, &r->target);
	req_header_list(r, "Prefer", &prefer);
	r->prefer = parse_prefer(prefer.data);
	buf_free(&prefer);
	r->if_match = req_header(r, "If-Match");
	if (r->if_match != NULL)
	{
		/*
		 * a field value excludes the blanks around it (RFC 7230, 3.2.4):
		 * libmicrohttpd drops the leading ones, the trailing ones are
		 * dropped here, as the batch parser drops both
		 */
		size_t		n = strlen(r->if_match);

		while (n > 0 && (r->if_match[n - 1] == ' ' || r->if_match[n - 1] == '\t'))
			n--;
		while (n > 0 && (r->if_match[0] == ' ' || r->if_match[0] == '\t'))
			r->if_match++, n--;
		if (n != strlen(r->if_match))
			r->if_match = r->if_match_buf = xstrndup(r->if_match, n);
	}
	r->query.filter = req_param(r, "$filter");
	r->query.select = req_param(r, "$select");
	r->query.top = parse_top(req_param(r, "$top"));
	r->query.next_table = req_param(r, "NextTableName");
	r->query.next_pk = req_param(r, "NextPartitionKey");
	r->query.next_rk = req_param(r, "NextRowKey");
	ok = true;
out:
	free(uri);
	return ok;
}

/*
 * accept_level: the metadata level that $format (format) or, without it,
 * an Accept header's value (accept) asks for; NULL for absent.  Plain
 * application/json (or any media type, or neither) means minimal
 * metadata.  *atom_only when they offer only Atom/XML, which the service
 * refuses.  A request and a batch's sub-request negotiate with it alike.
 */
Level
accept_level(const char *format, const char *accept, bool *atom_only)
{
	const char *a = format ? format : accept;

	*atom_only = false;
	if (a == NULL)
		return LEVEL_MINIMAL;
	if (strstr(a, "odata=nometadata"))
		return LEVEL_NONE;
	if (strstr(a, "odata=fullmetadata"))
		return LEVEL_FULL;
	if (!strstr(a, "json") && !strstr(a, "*/*") && (strstr(a, "atom") || format != NULL))
		*atom_only = true;
	return LEVEL_MINIMAL;
}

/*
 * negotiate: the request's metadata level from $format or Accept
 * (accept_level); false with a 415 when they offer only Atom.
 */
bool
negotiate(Req *r, Resp *resp)
{
	const char *f = req_param(r, "$format");
	Buf			accept = {0};
	bool		atom_only;

	if (f == NULL)
		req_header_list(r, "Accept", &accept);
	r->level = accept_level(f, accept.data, &atom_only);
	buf_free(&accept);
	if (atom_only)
	{
		resp_error(r, resp, 415, "AtomFormatNotSupported",
				   "Atom format is not supported.", "ask for application/json;odata=<level>");
		return false;
	}
	return true;
}

/*
 * check_x_method: an X-HTTP-Method header (xm, NULL if none) is valid
 * only on a POST and only for MERGE, PATCH, PUT or DELETE; false with a
 * 400 otherwise.  It replaces the method only once the signature, which
 * covers the method on the wire, is checked (prepare_request).
 */
bool
check_x_method(Req *r, Resp *resp, const char *xm)
{
	if (xm != NULL)
	{
		if (strcmp(r->method, "POST") != 0)
		{
			bad_request(r, resp, "XMethodNotUsingPost", "X-HTTP-Method is only allowed with POST");
			return false;
		}
		if (strcmp(xm, "MERGE") != 0 && strcmp(xm, "PUT") != 0 && strcmp(xm, "DELETE") != 0 &&
			strcmp(xm, "PATCH") != 0)
		{
			bad_request(r, resp, "XMethodIncorrectValue", "X-HTTP-Method must be MERGE, PATCH, PUT or DELETE");
			return false;
		}
	}
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
 * parse_prefer: what a Prefer header's value (NULL: none) asks for; the
 * request's own (request_parse) and a batch operation's (batchparse.c).
 */
Prefer
parse_prefer(const char *value)
{
	if (value == NULL)
		return PREFER_NONE;
	if (strstr(value, "return-no-content"))
		return PREFER_NO_CONTENT;
	if (strstr(value, "return-content"))
		return PREFER_CONTENT;
	return PREFER_NONE;
}

/*
 * parse_resource: what the decoded path after the account addresses (see
 * Resource), with the table and keys it names.  Tried in the order the
 * forms are told apart: the root, the table list, one table of the list
 * (anything starting "Tables('" is taken for one, well-formed or not),
 * $batch, then a table's entities or one entity; so a table named
 * "Tables" is reached only as Tables(PartitionKey=..,RowKey=..).
 */
void
parse_resource(const char *rest, Target *t)
{
	size_t		n = strlen(rest);
	bool		has_keys;

	memset(t, 0, sizeof(*t));
	if (rest[0] == '\0')
		t->kind = RES_SERVICE;
	else if (strcmp(rest, "Tables") == 0 || strcmp(rest, "Tables()") == 0)
		t->kind = RES_TABLES;
	else if (strncmp(rest, "Tables('", 8) == 0)
	{
		if (n < 11 || strcmp(rest + n - 2, "')") != 0)
			t->kind = RES_TABLE_BAD;
		else
		{
			t->kind = RES_TABLE;
			t->table = xstrndup(rest + 8, n - 10);
		}
	}
	else if (strcmp(rest, "$batch") == 0)
		t->kind = RES_BATCH;
	else if (parse_entity_path(rest, &t->table, &t->pk, &t->rk, &has_keys))
	{
		t->kind = has_keys ? RES_ENTITY : RES_ENTITIES;
		t->bare = strchr(rest, '(') == NULL;
	}
	else
		t->kind = RES_BAD;
}

/*
 * entity_op: the operation a method asks of a table's entities (has_keys
 * false) or of one entity, by the names of the SAS operations and of the
 * statements of db.c: "query", "insert", "get", "update" and
 * "insert_or_replace" (PUT with and without If-Match), "merge" and
 * "insert_or_merge" (MERGE or PATCH), "delete"; NULL for a method the
 * resource does not serve.  One table for single requests (the SAS
 * precheck, entity_write) and batch operations (sub_to_op).
 */
const char *
entity_op(const char *method, bool has_keys, bool if_match)
{
	if (!has_keys)
	{
		if (strcmp(method, "GET") == 0)
			return "query";
		if (strcmp(method, "POST") == 0)
			return "insert";
		return NULL;
	}
	if (strcmp(method, "GET") == 0)
		return "get";
	if (strcmp(method, "PUT") == 0)
		return if_match ? "update" : "insert_or_replace";
	if (strcmp(method, "MERGE") == 0 || strcmp(method, "PATCH") == 0)
		return if_match ? "merge" : "insert_or_merge";
	if (strcmp(method, "DELETE") == 0)
		return "delete";
	return NULL;
}

/*
 * normalize_etag: an If-Match value with its DateTime's colons written
 * %3A, so that a client that unescaped them still matches (malloc'd).
 */
char *
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

/*
 * check_top: whether the request's $top is valid; false with a 400 if
 * not.  A query answers it after its SAS check, as the service does.
 */
bool
check_top(Req *r, Resp *resp)
{
	if (r->query.top >= 0)
		return true;
	bad_request(r, resp, "InvalidInput", "$top must be an integer from 0 to 1000");
	return false;
}

/*
 * parse_body_object: the request body as a JSON object, or NULL with a 400
 * answered (InvalidInput; DuplicatePropertiesSpecified for a name given
 * twice, which jsonb would silently collapse).
 */
json_object *
parse_body_object(Req *r, Resp *resp)
{
	return json_request_object(r, resp, r->body.data, r->body.len);
}

/*
 * body_md5_matches: whether the body matches the request's Content-MD5,
 * if it has one: Shared Key signs that header, and the service checks it
 * against the body, so a captured request cannot carry another body.
 */
bool
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
