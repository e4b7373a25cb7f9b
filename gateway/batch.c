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
 * format uses; each may occur once.
 */
typedef struct Headers
{
	Span		content_type;
	Span		transfer_encoding;
	Span		if_match;
	Span		prefer;
	Span		x_method;
	Span		content_length;
} Headers;

/*
 * parse_headers: the header lines at c up to an empty line (or the end of
 * the range, for a request without a body), each "name: value"; the ones
 * in Headers are kept (value trimmed).  Returns NULL or what is wrong.
 */
static const char *
parse_headers(Cur *c, Headers *h)
{
	static const struct
	{
		const char *name;
		size_t		off;
	}			known[] = {
		{"Content-Type", offsetof(Headers, content_type)},
		{"Content-Transfer-Encoding", offsetof(Headers, transfer_encoding)},
		{"If-Match", offsetof(Headers, if_match)},
		{"Prefer", offsetof(Headers, prefer)},
		{"X-HTTP-Method", offsetof(Headers, x_method)},
		{"Content-Length", offsetof(Headers, content_length)},
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
			if (s->p != NULL)
				return "a header occurs twice in a batch part";
			s->p = v;
			s->end = e;
		}
	}
	return NULL;
}

/* span_dup: a malloc'd copy of a span, or NULL for an absent one. */
static char *
span_dup(Span s)
{
	return s.p ? xstrndup(s.p, s.end - s.p) : NULL;
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
 * parse_request: the embedded HTTP request of an application/http part
 * whose MIME headers end at c: empty lines, the request line, headers, an
 * empty line, the body.  Returns an error text or NULL.
 */
static const char *
parse_request(Req *r, Cur c, SubReq *sub)
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
	if ((err = parse_headers(&c, &h)) != NULL)
		return err;
	sub->method = xstrndup(line, sp1 - line);
	sub->if_match = span_dup(h.if_match);
	sub->prefer = span_dup(h.prefer);

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
		if (strcmp(sub->method, "POST") != 0 || h.x_method.end - h.x_method.p != 5 ||
			strncmp(h.x_method.p, "MERGE", 5) != 0)
			return "X-HTTP-Method in a change set must be MERGE on a POST";
		free(sub->method);
		sub->method = xstrdup("MERGE");
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
	if ((err = parse_headers(&c, &h)) != NULL)
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
	return parse_request(r, c, sub);
}

/*
 * sub_to_op: the execute_batch element of a sub-request; an error text or
 * NULL.  *opname is the SAS operation.  *dup is set when the body is JSON
 * but an object in it names a member twice (the operation's own error,
 * DuplicatePropertiesSpecified, rather than a malformed batch).
 */
static const char *
sub_to_op(SubReq *s, json_object **out, const char **opname, bool *dup)
{
	json_object *op;
	json_object *entity = NULL;
	const char *name;

	*out = NULL;
	*dup = false;
	if (strcmp(s->method, "DELETE") == 0 || strcmp(s->method, "GET") == 0)
	{
		if (!s->has_keys)
			return "a DELETE or GET in a change set must name an entity";
		if (s->body_len > 0)
			return "a DELETE or GET in a change set has a body";
		entity = json_object_new_object();
		name = strcmp(s->method, "GET") == 0 ? "retrieve" : "delete";
		*opname = strcmp(s->method, "GET") == 0 ? "get" : "delete";
	}
	else
	{
		const char *why = NULL;

		switch (json_parse_request(s->body, s->body_len, &entity, &why))
		{
			case JSON_OK:
				break;
			case JSON_DUPLICATE:
				*dup = true;
				return why;
			case JSON_INVALID:
				return "a change set request's body is not JSON";
		}
		if (!json_object_is_type(entity, json_type_object))
		{
			json_object_put(entity);
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
	if (strcmp(name, "insert") == 0 && s->prefer && strstr(s->prefer, "return-no-content"))
		json_object_object_add(op, "return_entity", json_object_new_boolean(0));
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
	if ((err = parse_headers(&c, &h)) != NULL)
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
		if (strcmp(subs[0].method, "GET") != 0 || !subs[0].has_keys)
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
 * failed with an error of its own (a 4xx): only that operation's response,
 * its message prefixed "<index>:" unless it already is.
 */
static void
answer_failed_op(Req *r, Resp *resp, bool query, int index, int http, const char *code,
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
			   json_ctype(r->level), eresp.body.data);
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
 * insert with return-content, a retrieve); an insert's Location comes
 * from the keys the request sent.
 */
static void
answer_results(Req *r, Resp *resp, bool query, const char *table, SubReq *subs, int nsubs,
			   json_object *ops, PGresult *res)
{
	Buf			out = {0};
	char		bnd[64],
				cs[64];

	envelope(&out, bnd, cs, query);
	for (int i = 0; i < nsubs; i++)
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
	answer_202(resp, &out, bnd, cs);
	buf_free(&out);
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
		bool		dup;

		if (i > 0 && strcasecmp(subs[i].table, subs[0].table) != 0)
		{
			err = "the operations of a batch must address one table";
			goto bad;
		}
		if ((err = sub_to_op(&subs[i], &op, &opname, &dup)) != NULL)
		{
			if (!dup)
				goto bad;
			answer_failed_op(r, resp, query, i, 400, "DuplicatePropertiesSpecified",
							 GW_JSON_DUPLICATE_MESSAGE, err);
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

	vals[0] = subs[0].table;
	vals[1] = json_text(ops);
	res = db_call(r, "batch", 2, vals, &derr);
	if (res == NULL)
	{
		if (derr.http >= 500)
			db_error_response(r, resp, &derr);	/* the batch did not run */
		else
		{
			answer_failed_op(r, resp, query, derr.batch_index >= 0 ? derr.batch_index : 0,
							 derr.http, derr.code, derr.message, derr.reason);
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
		answer_results(r, resp, query, subs[0].table, subs, nsubs, ops, res);
	PQclear(res);
	goto done;

bad:
	resp_error(r, resp, 400, "InvalidInput", "One of the request inputs is not valid.", err);
done:
	for (int i = 0; i < nsubs; i++)
		free_sub(&subs[i]);
	if (ops)
		json_object_put(ops);
}
