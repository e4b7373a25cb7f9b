/*-------------------------------------------------------------------------
 *
 * batchparse.c
 *	  The parser of a $batch body: a multipart/mixed body with one change
 *	  set of embedded HTTP requests, taken apart into sub-requests, and
 *	  each sub-request planned as one element of execute_batch's list.
 *
 * The parser takes what both SDKs send: CRLF or bare LF line ends, part
 * headers in any case, the JavaScript SDK's extra empty lines, absolute
 * request URLs (only the path after the account is used; host and scheme
 * are not trusted).  Within that it is strict (RFC 2046, 5.1.1): the body
 * is exactly one part, a change set, then the close delimiter; a delimiter
 * line is exactly "--" boundary ["--"], then optional spaces or tabs, then
 * the line end, and any other line that starts with "--" boundary is an
 * error rather than content; only whitespace may come before the first
 * delimiter or after the close.  The one part may instead be a single
 * GET of an entity outside any change set: the service's query in a batch
 * (the legacy .NET SDK's batch retrieve), which "must be submitted singly
 * in the batch", answered by a part outside any change set.  A second
 * part, a request next to a change set, a GET inside one (a change set
 * holds inserts, updates and deletes), a missing close delimiter or a
 * boundary that is not RFC 2046's syntax is a 400 before anything runs:
 * every part is executed, or none is.
 *
 * A sub-request's URL and headers are read with the request parser's own
 * functions (request.c, encode.c), so an embedded request means what the
 * same request sent alone would.  Nothing here touches the database, the
 * credentials or the response: batch.c runs what this returns, and the
 * fuzzer (fuzz_batch.c) runs this file as it is.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "batchparse.h"

#include "buf.h"
#include "encode.h"
#include "gwlimits.h"
#include "json.h"
#include "reqtypes.h"
#include "request.h"

/* A cursor over a byte range. */
typedef struct Cur
{
	const char *p;
	const char *end;
} Cur;

/* A byte range: a part's bytes, a header's value. */
typedef struct Span
{
	const char *p;
	const char *end;
} Span;

/* next_line: the next line without its LF or CRLF; false at the end. */
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

/* is_lwsp: RFC 2046's linear whitespace in a delimiter line. */
static bool
is_lwsp(char c)
{
	return c == ' ' || c == '\t';
}

/* only_space: whether [p, e) holds nothing but spaces, tabs, CR and LF. */
static bool
only_space(const char *p, const char *e)
{
	for (; p < e; p++)
		if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
			return false;
	return true;
}

/* is_tchar: a character of an RFC 7230 token (header names, media types). */
static bool
is_tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		(c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* is_bchar: a character RFC 2046 allows in a boundary (space aside). */
static bool
is_bchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		(c != '\0' && strchr("'()+_,-./:=?", c) != NULL);
}

/*
 * media_type: parse a Content-Type value: type "/" subtype, then
 * parameters `; name=value` (value a token or a quoted string without
 * escapes).  Returns true if `ctype` is media type `want` (any case);
 * *boundary is then a copy of its boundary parameter, or NULL if it has
 * none or `boundary` is NULL.  False, with *why set, if the value does not
 * parse, is another type, or names a parameter twice.
 */
static bool
media_type(const char *ctype, size_t clen, const char *want, char **boundary, const char **why)
{
	const char *p = ctype;
	const char *e = ctype + clen;
	const char *t = p;
	size_t		wlen = strlen(want);
	bool		have_boundary = false;

	if (boundary)
		*boundary = NULL;
	while (p < e && (is_tchar(*p) || *p == '/'))
		p++;
	if ((size_t) (p - t) != wlen || strncasecmp(t, want, wlen) != 0)
	{
		*why = "a Content-Type is not the media type the batch format needs there";
		return false;
	}
	for (;;)
	{
		const char *name,
				   *val;
		size_t		nlen,
					vlen;

		while (p < e && is_lwsp(*p))
			p++;
		if (p == e)
			return true;
		if (*p != ';')
			break;
		p++;
		while (p < e && is_lwsp(*p))
			p++;
		for (name = p; p < e && is_tchar(*p); p++)
			;
		nlen = p - name;
		if (nlen == 0 || p == e || *p != '=')
			break;
		p++;
		if (p < e && *p == '"')
		{
			val = ++p;
			while (p < e && *p != '"' && *p != '\\' && *p != '\r' && *p != '\n')
				p++;
			if (p == e || *p != '"')
				break;
			vlen = p - val;
			p++;
		}
		else
		{
			for (val = p; p < e && is_tchar(*p); p++)
				;
			vlen = p - val;
			if (vlen == 0)
				break;
		}
		if (nlen == 8 && strncasecmp(name, "boundary", 8) == 0)
		{
			/* RFC 2046: 1 to 70 bchars or spaces, not ending in a space */
			bool		ok = vlen >= 1 && vlen <= 70 && val[vlen - 1] != ' ';

			for (size_t i = 0; ok && i < vlen; i++)
				ok = is_bchar(val[i]) || val[i] == ' ';
			if (!ok)
			{
				*why = "a multipart boundary is not 1 to 70 of the characters RFC 2046 allows";
				goto fail;
			}
			if (have_boundary)
			{
				*why = "a Content-Type names its boundary twice";
				goto fail;
			}
			have_boundary = true;
			if (boundary)
				*boundary = xstrndup(val, vlen);
		}
	}
	*why = "a Content-Type's parameters do not parse";
fail:
	if (boundary)
	{
		free(*boundary);
		*boundary = NULL;
	}
	return false;
}

/* Delimiter lines (RFC 2046 5.1.1) */
typedef enum DelimKind
{
	DELIM_NONE,					/* the line does not start with "--" boundary */
	DELIM_PART,					/* "--" boundary LWSP* */
	DELIM_CLOSE,				/* "--" boundary "--" LWSP* */
	DELIM_BAD					/* starts with "--" boundary, and then junk */
} DelimKind;

/* delim_kind: what the line [line, line + len) is for `boundary`. */
static DelimKind
delim_kind(const char *line, size_t len, const char *boundary, size_t blen)
{
	const char *p = line + 2 + blen;
	const char *e = line + len;
	DelimKind	kind = DELIM_PART;

	if (len < 2 + blen || line[0] != '-' || line[1] != '-' || memcmp(line + 2, boundary, blen) != 0)
		return DELIM_NONE;
	if (e - p >= 2 && p[0] == '-' && p[1] == '-')
	{
		kind = DELIM_CLOSE;
		p += 2;
	}
	while (p < e && is_lwsp(*p))
		p++;
	return p == e ? kind : DELIM_BAD;
}

/*
 * split_multipart: the body parts of the multipart body [s, e) whose
 * boundary is `boundary`: nothing but whitespace lines before the first
 * delimiter, parts separated by delimiter lines, the close delimiter, then
 * nothing but whitespace.  A part's bytes exclude the line end before the
 * next delimiter (it belongs to the delimiter).  Stores at most maxparts
 * parts and counts them all in *nparts.  Returns NULL or what is wrong.
 */
static const char *
split_multipart(const char *s, const char *e, const char *boundary,
				Span *parts, int maxparts, int *nparts)
{
	Cur			c = {s, e};
	size_t		blen = strlen(boundary);
	const char *line;
	size_t		len;
	const char *part = NULL;	/* start of the open part */

	*nparts = 0;
	for (;;)
	{
		const char *line_start = c.p;
		DelimKind	kind;

		if (!next_line(&c, &line, &len))
			return part ? "a multipart body has no close delimiter" :
				"the boundary does not occur in the multipart body";
		kind = delim_kind(line, len, boundary, blen);
		if (kind == DELIM_BAD)
			return "a line starts with the boundary but is not a delimiter line";
		if (kind == DELIM_NONE)
		{
			if (part == NULL && !only_space(line, line + len))
				return "text comes before the first boundary of a multipart body";
			continue;
		}
		if (part == NULL && kind == DELIM_CLOSE)
			return "a multipart body has no part";
		if (part != NULL)
		{
			const char *pe = line_start;

			/* the line end before the delimiter is the delimiter's */
			if (pe > part && pe[-1] == '\n')
				pe--;
			if (pe > part && pe[-1] == '\r')
				pe--;
			if (*nparts < maxparts)
			{
				parts[*nparts].p = part;
				parts[*nparts].end = pe;
			}
			(*nparts)++;
		}
		if (kind == DELIM_CLOSE)
		{
			if (!only_space(c.p, e))
				return "text other than whitespace follows the close delimiter of a multipart body";
			return NULL;
		}
		part = c.p;
	}
}

/*
 * Headers of a MIME part or of an embedded request, the ones the batch
 * format uses; each may occur once, except the list-valued Accept and
 * Prefer of an embedded request: as in a request alone (req_header_list),
 * their occurrences are one list, joined by ", " in accept_list and
 * prefer_list (the spans mark the first).
 */
typedef struct Headers
{
	Span		content_type;
	Span		transfer_encoding;
	Span		if_match;
	Span		prefer;
	Span		x_method;
	Span		content_length;
	Span		accept;
	Buf			accept_list;
	Buf			prefer_list;
} Headers;

/*
 * parse_headers: the header lines at c up to an empty line (or the end of
 * the range, for a request without a body), each "name: value"; the ones
 * in Headers are kept (value trimmed).  With `lists` (an embedded request)
 * Accept and Prefer may repeat and are joined in their lists, which the
 * caller frees with headers_free, whatever is returned.  Returns NULL or
 * what is wrong.
 */
static const char *
parse_headers(Cur *c, Headers *h, bool lists)
{
	static const struct
	{
		const char *name;
		size_t		off;
		size_t		list;		/* offset of its joined list, or 0 */
	}			known[] = {
		{"Content-Type", offsetof(Headers, content_type), 0},
		{"Content-Transfer-Encoding", offsetof(Headers, transfer_encoding), 0},
		{"If-Match", offsetof(Headers, if_match), 0},
		{"Prefer", offsetof(Headers, prefer), offsetof(Headers, prefer_list)},
		{"X-HTTP-Method", offsetof(Headers, x_method), 0},
		{"Content-Length", offsetof(Headers, content_length), 0},
		{"Accept", offsetof(Headers, accept), offsetof(Headers, accept_list)},
	};
	const char *line;
	size_t		len;

	memset(h, 0, sizeof(*h));
	while (next_line(c, &line, &len) && len > 0)
	{
		const char *colon = memchr(line, ':', len);
		const char *v,
				   *e = line + len;

		if (colon == NULL || colon == line)
			return "a header line in a batch is not \"name: value\"";
		for (const char *q = line; q < colon; q++)
			if (!is_tchar(*q))
				return "a header name in a batch is not a token";
		for (v = colon + 1; v < e && is_lwsp(*v); v++)
			;
		while (e > v && is_lwsp(e[-1]))
			e--;
		for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
		{
			Span	   *s = (Span *) ((char *) h + known[k].off);

			if ((size_t) (colon - line) != strlen(known[k].name) ||
				strncasecmp(line, known[k].name, colon - line) != 0)
				continue;
			if (lists && known[k].list != 0)
			{
				Buf		   *l = (Buf *) ((char *) h + known[k].list);

				/* joined as req_header_list joins them */
				if (l->len > 0)
					buf_append(l, ", ", 2);
				if (s->p == NULL)
				{
					s->p = v;
					s->end = e;
				}
				buf_append(l, v, e - v);
				continue;
			}
			if (s->p != NULL)
				return "a header occurs twice in a batch part";
			s->p = v;
			s->end = e;
		}
	}
	return NULL;
}

/* headers_free: release the lists parse_headers joined. */
static void
headers_free(Headers *h)
{
	buf_free(&h->accept_list);
	buf_free(&h->prefer_list);
}

/* span_dup: a malloc'd copy of a span, or NULL for an absent one. */
static char *
span_dup(Span s)
{
	return s.p ? xstrndup(s.p, s.end - s.p) : NULL;
}

/* free_sub: release a sub-request's strings. */
void
free_sub(SubReq *s)
{
	free(s->method);
	free(s->table);
	free(s->pk);
	free(s->rk);
	free(s->if_match);
	free(s->select);
	free(s->accept);
}

/*
 * sub_query: the query string of a sub-request's URL (q, changed in place;
 * NULL for none), split and decoded as a request's is (query_split): its
 * $select into sub->select and its $format into *format (malloc'd; NULL
 * when absent).  Returns NULL, or what is wrong.
 */
static const char *
sub_query(char *q, SubReq *sub, char **format)
{
	Param		params[GW_MAX_PARAMS];
	int			n = 0;
	bool		sas_twice;
	const char *err = query_split(q, params, &n, &sas_twice);

	*format = NULL;
	for (int i = 0; i < n; i++)
	{
		char	  **keep = NULL;

		if (err == NULL && strcmp(params[i].name, "$select") == 0)
			keep = &sub->select;
		else if (err == NULL && strcmp(params[i].name, "$format") == 0)
			keep = format;
		if (keep)
		{
			*keep = params[i].value;
			params[i].value = NULL;
		}
		free(params[i].name);
		free(params[i].value);
	}
	return err;
}

/*
 * parse_sub_request: the embedded HTTP request of an application/http part
 * whose MIME headers end at c: empty lines, the request line, headers, an
 * empty line, the body.  Returns an error text or NULL.
 */
static const char *
parse_sub_request(Req *r, Cur c, SubReq *sub)
{
	const char *line;
	size_t		len;
	const char *sp1,
			   *sp2;
	char	   *url,
			   *path,
			   *q;
	size_t		alen = strlen(r->acct->name);
	Headers		h;
	const char *err;
	char	   *format;

	memset(sub, 0, sizeof(*sub));
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
	for (const char *m = line; m < sp1; m++)
		if (!is_tchar(*m))
			return "a change set part's method is not a token";
	if ((err = parse_headers(&c, &h, true)) != NULL)
	{
		headers_free(&h);
		return err;
	}
	sub->method = xstrndup(line, sp1 - line);
	sub->if_match = span_dup(h.if_match);
	if (h.prefer.p)
		sub->prefer = parse_prefer(h.prefer_list.data);
	/* its metadata level as alone (request.c), the batch's when it asks none */
	sub->level = r->level;
	sub->accept = h.accept.p ? xstrdup(h.accept_list.data) : NULL;
	headers_free(&h);

	/* the body: all up to the part's end, or Content-Length bytes of it */
	sub->body = c.p;
	sub->body_len = c.end - c.p;
	if (h.content_length.p)
	{
		size_t		n = 0;

		if (h.content_length.p == h.content_length.end || h.content_length.end - h.content_length.p > 8)
			return "a change set part's Content-Length is not a number";
		for (const char *d = h.content_length.p; d < h.content_length.end; d++)
		{
			if (*d < '0' || *d > '9')
				return "a change set part's Content-Length is not a number";
			n = n * 10 + (*d - '0');
		}
		if (n > sub->body_len || !only_space(sub->body + n, c.end))
			return "a change set part's body does not have its Content-Length";
		sub->body_len = n;
	}
	if (only_space(sub->body, sub->body + sub->body_len))
		sub->body_len = 0;

	if (h.x_method.p)
	{
		/* as alone (dispatch.c): on a POST, MERGE, PATCH, PUT or DELETE */
		static const char *const xms[] = {"MERGE", "PATCH", "PUT", "DELETE"};
		size_t		n = h.x_method.end - h.x_method.p;
		const char *xm = NULL;

		for (size_t i = 0; i < sizeof(xms) / sizeof(xms[0]); i++)
			if (n == strlen(xms[i]) && strncmp(h.x_method.p, xms[i], n) == 0)
				xm = xms[i];
		if (strcmp(sub->method, "POST") != 0 || xm == NULL)
			return "X-HTTP-Method in a change set must be MERGE, PATCH, PUT or DELETE on a POST";
		free(sub->method);
		sub->method = xstrdup(xm);
	}

	/*
	 * A URL longer than a request alone may have is its operation's 414
	 * (request.c), answered by the batch before anything runs; it is not
	 * parsed further.
	 */
	if ((size_t) (sp2 - sp1 - 1) > GW_MAX_URI)
	{
		sub->uri_too_long = true;
		sub->table = xstrdup("");
		if (sub->accept)
			sub->level = accept_level(NULL, sub->accept, &sub->atom_only);
		return NULL;
	}

	/* the path after scheme, host and account */
	url = xstrndup(sp1 + 1, sp2 - sp1 - 1);
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
		*q++ = '\0';
	if ((err = sub_query(q, sub, &format)) != NULL)
	{
		free(url);
		return err;
	}
	if (sub->accept || format)
		sub->level = accept_level(format, sub->accept, &sub->atom_only);
	free(format);
	if (path[0] == '/')
		path++;
	if (strncmp(path, r->acct->name, alen) == 0 && path[alen] == '/')
		path += alen + 1;
	else if (strncmp(path, r->acct->name, alen) == 0 && strncmp(path + alen, "-secondary/", 11) == 0)
	{
		/* the read-only secondary is no place for a batch sent to the primary */
		if (!r->secondary)
		{
			free(url);
			return "a change set request URL addresses the secondary, its batch the primary";
		}
		path += alen + 11;
	}
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
 * parse_part: one application/http part of a multipart body: its MIME
 * headers (Content-Type application/http, Content-Transfer-Encoding, if
 * any, binary, 7bit or 8bit: nothing that would change the bytes), then
 * the embedded request.  Returns an error text or NULL.
 */
static const char *
parse_part(Req *r, Span part, SubReq *sub)
{
	Cur			c = {part.p, part.end};
	Headers		h;
	const char *err;

	memset(sub, 0, sizeof(*sub));
	if ((err = parse_headers(&c, &h, false)) != NULL)
		return err;
	if (h.content_type.p == NULL)
		return "a change set part has no Content-Type";
	if (!media_type(h.content_type.p, h.content_type.end - h.content_type.p, "application/http", NULL, &err))
		return "a change set part's Content-Type is not application/http";
	if (h.transfer_encoding.p)
	{
		size_t		n = h.transfer_encoding.end - h.transfer_encoding.p;

		if (!((n == 6 && strncasecmp(h.transfer_encoding.p, "binary", 6) == 0) ||
			  (n == 4 && (strncasecmp(h.transfer_encoding.p, "7bit", 4) == 0 ||
						  strncasecmp(h.transfer_encoding.p, "8bit", 4) == 0))))
			return "a change set part's Content-Transfer-Encoding is not binary";
	}
	return parse_sub_request(r, c, sub);
}

/*
 * sub_to_op: the execute_batch element of a sub-request; an error text or
 * NULL.  *opname is the SAS operation.  *code is set when the error is
 * the operation's own, as the same request alone would get it, rather than
 * a malformed batch: DuplicatePropertiesSpecified (a JSON object names a
 * member twice), MissingRequiredHeader (a DELETE without If-Match).
 */
const char *
sub_to_op(SubReq *s, json_object **out, const char **opname, const char **code)
{
	json_object *op;
	json_object *entity = NULL;
	const char *name;

	*out = NULL;
	*code = NULL;
	if (strcmp(s->method, "DELETE") == 0 || strcmp(s->method, "GET") == 0)
	{
		if (!s->has_keys)
			return "a DELETE or GET in a change set must name an entity";
		if (s->body_len > 0)
			return "a DELETE or GET in a change set has a body";
		/* as alone (entities.c): Delete Entity needs If-Match */
		if (strcmp(s->method, "DELETE") == 0 && s->if_match == NULL)
		{
			*code = "MissingRequiredHeader";
			return "Delete Entity needs If-Match (an ETag or *)";
		}
		entity = json_object_new_object();
		name = strcmp(s->method, "GET") == 0 ? "retrieve" : "delete";
		*opname = entity_op(s->method, true, s->if_match != NULL);
	}
	else
	{
		const char *why = NULL;

		switch (json_parse_request(s->body, s->body_len, &entity, &why))
		{
			case JSON_OK:
				break;
			case JSON_DUPLICATE:
				*code = "DuplicatePropertiesSpecified";
				return why;
			case JSON_INVALID:
				return "a change set request's body is not JSON";
		}
		if (!json_object_is_type(entity, json_type_object))
		{
			json_object_put(entity);
			return "a change set request's body is not a JSON object";
		}
		/* the operation as the same request alone would be (request.c) */
		name = *opname = entity_op(s->method, s->has_keys, s->if_match != NULL);
		if (name == NULL)
		{
			json_object_put(entity);
			return "a change set request's method does not fit its URL";
		}
	}
	if (s->has_keys)
	{
		json_object_object_add(entity, "PartitionKey", json_object_new_string(s->pk));
		json_object_object_add(entity, "RowKey", json_object_new_string(s->rk));
	}
	op = json_object_new_object();
	json_object_object_add(op, "op", json_object_new_string(name));
	json_object_object_add(op, "entity", entity);
	if (s->if_match && strcmp(name, "retrieve") != 0)
		json_object_object_add(op, "if_match", json_object_new_string(s->if_match));
	/* an insert answered without content: the database need not echo it */
	if (strcmp(name, "insert") == 0 && s->prefer == PREFER_NO_CONTENT)
		json_object_object_add(op, "return_entity", json_object_new_boolean(0));
	*out = op;
	return NULL;
}

/*
 * batch_parse: split a $batch body (Content-Type ctype) into its change
 * set's sub-requests, at most GW_MAX_BATCH_OPS, or its one query (*query:
 * a GET of an entity outside a change set, the only form of a query the
 * service takes in a batch).  Returns NULL, or the reason the body is
 * malformed; *too_many when it holds more operations.  On return
 * subs[0 .. *nsubs - 1] are to be freed with free_sub().
 */
const char *
batch_parse(Req *r, const char *ctype, const char *start, size_t len,
			SubReq *subs, int *nsubs, bool *too_many, bool *query)
{
	char	   *outer = NULL;
	char	   *inner = NULL;
	const char *err = NULL;
	Span		parts[GW_MAX_BATCH_OPS];
	Span		cs;
	int			n;
	Cur			c;
	Headers		h;

	*nsubs = 0;
	*too_many = false;
	*query = false;
	if (ctype == NULL || !media_type(ctype, strlen(ctype), "multipart/mixed", &outer, &err) ||
		outer == NULL || len == 0)
	{
		err = "a batch needs Content-Type multipart/mixed with a boundary, and a body";
		goto out;
	}
	/* the batch: exactly one part */
	if ((err = split_multipart(start, start + len, outer, parts, 1, &n)) != NULL)
		goto out;
	if (n != 1)
	{
		err = "a batch holds more than one part (one change set is supported)";
		goto out;
	}
	c.p = parts[0].p;
	c.end = parts[0].end;
	if ((err = parse_headers(&c, &h, false)) != NULL)
		goto out;
	if (h.content_type.p == NULL)
	{
		err = "the batch's part has no Content-Type";
		goto out;
	}
	if (media_type(h.content_type.p, h.content_type.end - h.content_type.p, "application/http", NULL, &err))
	{
		/* a request outside a change set: the batch's one query */
		if ((err = parse_part(r, parts[0], &subs[0])) != NULL)
		{
			free_sub(&subs[0]);
			goto out;
		}
		*nsubs = 1;
		*query = true;
		if (strcmp(subs[0].method, "GET") != 0 || (!subs[0].has_keys && !subs[0].uri_too_long))
			err = "a request outside a change set must be a GET of one entity (a query)";
		goto out;
	}
	if (!media_type(h.content_type.p, h.content_type.end - h.content_type.p, "multipart/mixed", &inner, &err) ||
		inner == NULL)
	{
		err = "the batch's part is not a change set (multipart/mixed with a boundary)";
		goto out;
	}
	/* the change set: its parts are the operations */
	cs.p = c.p;
	cs.end = c.end;
	if ((err = split_multipart(cs.p, cs.end, inner, parts, GW_MAX_BATCH_OPS, &n)) != NULL)
		goto out;
	if (n > GW_MAX_BATCH_OPS)
	{
		*too_many = true;
		err = "0:The batch request operation exceeds the maximum 100 changes per change set.";
		goto out;
	}
	for (int i = 0; i < n; i++)
	{
		if ((err = parse_part(r, parts[i], &subs[*nsubs])) != NULL)
		{
			free_sub(&subs[*nsubs]);
			goto out;
		}
		(*nsubs)++;
		if (strcmp(subs[*nsubs - 1].method, "GET") == 0)
		{
			err = "a change set holds inserts, updates and deletes: a query goes alone, outside it";
			goto out;
		}
	}
out:
	free(outer);
	free(inner);
	return err;
}
