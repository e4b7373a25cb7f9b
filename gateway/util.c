/*-------------------------------------------------------------------------
 *
 * util.c
 *	  Buffers, encodings and response helpers of tablestore-gateway:
 *	  percent-decoding (libmicrohttpd's), base64 (OpenSSL's EVP), the
 *	  continuation tokens, the JSON and XML error bodies and the shaping of
 *	  an entity for the requested metadata level.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

/*
 * xmalloc: malloc that never returns NULL.  Every allocation is bounded by
 * the request limits, so running out of memory is a condition the gateway
 * cannot serve through; it exits and the supervisor restarts it.
 */
void *
xmalloc(size_t n)
{
	void	   *p = malloc(n ? n : 1);

	if (p == NULL)
	{
		fprintf(stderr, "tablestore-gateway: out of memory\n");
		abort();
	}
	return p;
}

/* xstrdup: strdup that never returns NULL. */
char *
xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

/* xstrndup: a NUL-terminated copy of n bytes. */
char *
xstrndup(const char *s, size_t n)
{
	char	   *p = xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

/* buf_append: append n bytes, keeping the buffer NUL-terminated. */
void
buf_append(Buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap)
	{
		size_t		cap = b->cap ? b->cap : 256;
		char	   *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->data, cap);
		if (p == NULL)
		{
			fprintf(stderr, "tablestore-gateway: out of memory\n");
			abort();
		}
		b->data = p;
		b->cap = cap;
	}
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

/* buf_puts: append a C string. */
void
buf_puts(Buf *b, const char *s)
{
	buf_append(b, s, strlen(s));
}

/* buf_printf: append formatted text. */
void
buf_printf(Buf *b, const char *fmt,...)
{
	va_list		ap;
	char		small[512];
	int			n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t) n < sizeof(small))
	{
		buf_append(b, small, n);
		return;
	}
	{
		char	   *big = xmalloc(n + 1);

		va_start(ap, fmt);
		vsnprintf(big, n + 1, fmt, ap);
		va_end(ap);
		buf_append(b, big, n);
		free(big);
	}
}

/* buf_free: release a buffer's memory and empty it. */
void
buf_free(Buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

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

/*
 * resp_header: add a response header.  A value holding control characters
 * is dropped (it could only come from a bug, and would split the header).
 */
void
resp_header(Resp *resp, const char *name, const char *value)
{
	for (const unsigned char *p = (const unsigned char *) value; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
		{
			fprintf(stderr, "tablestore-gateway: dropped header %s with a control character\n", name);
			return;
		}
	for (int i = 0; i < resp->nhdr; i++)
		if (strcasecmp(resp->hname[i], name) == 0)
		{
			free(resp->hval[i]);
			resp->hval[i] = xstrdup(value);
			return;
		}
	if (resp->nhdr >= GW_MAX_HEADERS)
		return;
	resp->hname[resp->nhdr] = xstrdup(name);
	resp->hval[resp->nhdr] = xstrdup(value);
	resp->nhdr++;
}

/* json_ctype: the Content-Type of a JSON body at a metadata level. */
const char *
json_ctype(Level level)
{
	switch (level)
	{
		case LEVEL_NONE:
			return "application/json;odata=nometadata;streaming=true;charset=utf-8";
		case LEVEL_FULL:
			return "application/json;odata=fullmetadata;streaming=true;charset=utf-8";
		default:
			return "application/json;odata=minimalmetadata;streaming=true;charset=utf-8";
	}
}

/* json_text: compact JSON text of an object, '/' not escaped. */
const char *
json_text(json_object *obj)
{
	return json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* resp_json: a JSON response body with the negotiated Content-Type. */
void
resp_json(Req *r, Resp *resp, int status, json_object *obj)
{
	resp->status = status;
	resp->body.len = 0;
	buf_puts(&resp->body, json_text(obj));
	resp->ctype = json_ctype(r->level);
}

/*
 * resp_error: the service's error response: status, x-ms-error-code and
 * the odata.error JSON body (or <Error> XML for the XML endpoints).  The
 * message is the service's text, then `extra` (our reason) on its own
 * line, then the request id and time as the service writes them.
 */
void
resp_error(Req *r, Resp *resp, int status, const char *code, const char *message, const char *extra)
{
	Buf			value = {0};
	char		when[64];
	time_t		now = time(NULL);
	struct tm	tm;

	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S.0000000Z", &tm);
	buf_puts(&value, message);
	if (extra && *extra)
	{
		buf_puts(&value, "\n");
		buf_puts(&value, extra);
	}
	buf_printf(&value, "\nRequestId:%s\nTime:%s", r->request_id, when);

	resp->status = status;
	resp->body.len = 0;
	resp_header(resp, "x-ms-error-code", code);
	if (r->xml)
	{
		buf_puts(&resp->body, "<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>");
		buf_puts(&resp->body, code);
		buf_puts(&resp->body, "</Code><Message>");
		for (const char *p = value.data; *p; p++)
		{
			switch (*p)
			{
				case '<':
					buf_puts(&resp->body, "&lt;");
					break;
				case '>':
					buf_puts(&resp->body, "&gt;");
					break;
				case '&':
					buf_puts(&resp->body, "&amp;");
					break;
				default:
					buf_append(&resp->body, p, 1);
			}
		}
		buf_puts(&resp->body, "</Message></Error>");
		resp->ctype = "application/xml";
	}
	else
	{
		json_object *o = json_object_new_object();
		json_object *e = json_object_new_object();
		json_object *m = json_object_new_object();

		json_object_object_add(m, "lang", json_object_new_string("en-US"));
		json_object_object_add(m, "value", json_object_new_string(value.data));
		json_object_object_add(e, "code", json_object_new_string(code));
		json_object_object_add(e, "message", m);
		json_object_object_add(o, "odata.error", e);
		buf_puts(&resp->body, json_text(o));
		json_object_put(o);
		resp->ctype = json_ctype(r->level);
	}
	buf_free(&value);
}

/* status_text: the reason phrase of a status, for batch sub-responses. */
const char *
status_text(int status)
{
	switch (status)
	{
		case 200:
			return "OK";
		case 201:
			return "Created";
		case 202:
			return "Accepted";
		case 204:
			return "No Content";
		case 400:
			return "Bad Request";
		case 403:
			return "Forbidden";
		case 404:
			return "Not Found";
		case 405:
			return "Method Not Allowed";
		case 409:
			return "Conflict";
		case 412:
			return "Precondition Failed";
		case 413:
			return "Request Entity Too Large";
		case 415:
			return "Unsupported Media Type";
		case 501:
			return "Not Implemented";
		case 503:
			return "Service Unavailable";
		default:
			return status >= 500 ? "Internal Server Error" : "Bad Request";
	}
}

/*
 * url_encode_key: a key as it appears between the quotes of an entity URL:
 * quotes doubled, then every byte outside encodeURIComponent's unreserved
 * set percent-encoded (quotes stay literal, as the JavaScript SDK sends
 * them).
 */
void
url_encode_key(Buf *b, const char *key)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *) key; *p; p++)
	{
		unsigned char c = *p;

		if (c == '\'')
			buf_puts(b, "''");
		else if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
				 strchr("-_.!~*()", c) != NULL)
			buf_append(b, (const char *) &c, 1);
		else
		{
			char		e[3] = {'%', hex[c >> 4], hex[c & 15]};

			buf_append(b, e, 3);
		}
	}
}

/* entity_path: `table(PartitionKey='pk',RowKey='rk')`, keys encoded. */
void
entity_path(Buf *b, const char *table, const char *pk, const char *rk)
{
	buf_puts(b, table);
	buf_puts(b, "(PartitionKey='");
	url_encode_key(b, pk);
	buf_puts(b, "',RowKey='");
	url_encode_key(b, rk);
	buf_puts(b, "')");
}

/* b64_encode: standard padded base64 (OpenSSL), malloc'd. */
char *
b64_encode(const unsigned char *data, size_t len)
{
	char	   *out = xmalloc(4 * ((len + 2) / 3) + 1);

	EVP_EncodeBlock((unsigned char *) out, data, (int) len);
	return out;
}

/*
 * b64_decode: decode strict padded base64 into out; returns the number of
 * bytes, or -1 if the text is not base64 or does not fit.
 */
int
b64_decode(const char *in, unsigned char *out, size_t outcap)
{
	size_t		n = strlen(in);
	int			len;
	int			pad = 0;
	unsigned char *tmp;

	if (n % 4 != 0)
		return -1;
	if (n == 0)
		return 0;
	if (n / 4 * 3 > outcap + 2)
		return -1;
	tmp = xmalloc(n / 4 * 3 + 1);
	len = EVP_DecodeBlock(tmp, (const unsigned char *) in, (int) n);
	if (len < 0)
	{
		free(tmp);
		return -1;
	}
	if (in[n - 1] == '=')
		pad++;
	if (in[n - 2] == '=')
		pad++;
	len -= pad;
	if ((size_t) len > outcap)
	{
		free(tmp);
		return -1;
	}
	memcpy(out, tmp, len);
	free(tmp);
	return len;
}

/*
 * Continuation tokens.  Keys may hold any Unicode character, which headers
 * cannot carry, so a key travels as "2!", the base64 of its UTF-8 bytes,
 * "!" and a MAC: base64url of the first 16 bytes of HMAC-SHA256 under the
 * account's key of what the token is (kind 'p' NextPartitionKey, 'r'
 * NextRowKey, 't' NextTableName), the table (lower-case: names are case-
 * insensitive) and the key.  So the gateway accepts back only tokens it
 * issued to that account for that table, across restarts and across
 * gateways sharing the account's key.  The prefix keeps the token of the
 * empty key non-empty: the JavaScript SDK stops paging at an empty
 * NextPartitionKey.
 */
#define TOKEN_MAC_BYTES 16

/* token_mac: the MAC part of a token (see above), appended to out. */
static void
token_mac(Req *r, char kind, const char *table, const char *key, Buf *out)
{
	Buf			text = {0};
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int maclen = 0;
	char	   *b;

	buf_printf(&text, "tablestore continuation\n%c\n", kind);
	for (const char *p = table; *p; p++)
	{
		char		c = (*p >= 'A' && *p <= 'Z') ? *p + ('a' - 'A') : *p;

		buf_append(&text, &c, 1);
	}
	buf_puts(&text, "\n");
	buf_puts(&text, key);
	if (HMAC(EVP_sha256(), r->acct->key, r->acct->keylen, (const unsigned char *) text.data, text.len,
			 mac, &maclen) == NULL || maclen < TOKEN_MAC_BYTES)
		memset(mac, 0, sizeof(mac));
	b = b64_encode(mac, TOKEN_MAC_BYTES);
	for (char *p = b; *p && *p != '='; p++)
	{
		char		c = *p == '+' ? '-' : *p == '/' ? '_' : *p;

		buf_append(out, &c, 1);
	}
	free(b);
	buf_free(&text);
}

/* token_encode: the token of key (malloc'd). */
char *
token_encode(Req *r, char kind, const char *table, const char *key)
{
	char	   *b = b64_encode((const unsigned char *) key, strlen(key));
	Buf			t = {0};

	buf_puts(&t, "2!");
	buf_puts(&t, b);
	buf_puts(&t, "!");
	token_mac(r, kind, table, key, &t);
	free(b);
	return t.data;
}

/*
 * token_decode: the key of a token this gateway issued for this account,
 * kind and table, malloc'd; NULL if it is malformed or not one it issued.
 */
char *
token_decode(Req *r, char kind, const char *table, const char *token)
{
	const char *sep;
	size_t		n;
	unsigned char *out;
	int			len;
	Buf			want = {0};
	bool		ok;

	if (strncmp(token, "2!", 2) != 0 || (sep = strchr(token + 2, '!')) == NULL)
		return NULL;
	n = sep - (token + 2);
	if (n > 8192)
		return NULL;
	out = xmalloc(n + 1);
	memcpy(out, token + 2, n);
	out[n] = '\0';
	len = b64_decode((const char *) out, out, n);
	if (len < 0 || memchr(out, '\0', len) != NULL)
	{
		free(out);
		return NULL;
	}
	out[len] = '\0';
	token_mac(r, kind, table, (const char *) out, &want);
	ok = strlen(sep + 1) == want.len && CRYPTO_memcmp(sep + 1, want.data, want.len) == 0;
	buf_free(&want);
	if (!ok)
	{
		free(out);
		return NULL;
	}
	return (char *) out;
}

/* new_uuid: a random version-4 UUID in text form (37 bytes with NUL). */
void
new_uuid(char *out)
{
	unsigned char u[16];

	if (RAND_bytes(u, sizeof(u)) != 1)
		memset(u, 0, sizeof(u));
	u[6] = (u[6] & 0x0f) | 0x40;
	u[8] = (u[8] & 0x3f) | 0x80;
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7],
			 u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

/*
 * pct_decode: percent-decode in place with libmicrohttpd's decoder ('+'
 * stays '+', as SAS signatures need).  False if a '%' is not followed by
 * two hex digits, or the result holds a NUL byte or is not valid UTF-8,
 * none of which any name, key or value of the protocol may contain.
 */
bool
pct_decode(char *s)
{
	size_t		n;
	const unsigned char *p = (const unsigned char *) s;
	size_t		i = 0;

	/*
	 * libmicrohttpd's decoder keeps a '%' not followed by two hex digits as
	 * it is, so "a%zz" and "a%25zz" would be one key: refuse it instead
	 */
	for (const char *c = s; *c; c++)
		if (*c == '%' && !(isxdigit((unsigned char) c[1]) && isxdigit((unsigned char) c[2])))
			return false;
	n = MHD_http_unescape(s);

	if (strlen(s) != n)
		return false;
	while (i < n)
	{
		unsigned char c = p[i];
		int			extra;

		if (c < 0x80)
		{
			i++;
			continue;
		}
		else if ((c & 0xe0) == 0xc0 && c >= 0xc2)
			extra = 1;
		else if ((c & 0xf0) == 0xe0)
			extra = 2;
		else if ((c & 0xf8) == 0xf0 && c <= 0xf4)
			extra = 3;
		else
			return false;
		if (i + extra >= n)
			return false;
		for (int k = 1; k <= extra; k++)
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
		i += extra + 1;
	}
	return true;
}

/*
 * shape_entity: an entity as the extension returns it (all annotations,
 * odata.etag), reshaped for the request's metadata level.  nometadata drops
 * the annotations and the ETag; minimalmetadata keeps them and, for a
 * single entity, puts odata.metadata first; fullmetadata adds odata.type,
 * odata.id, odata.editLink and Timestamp's annotation.  Returns a new
 * object; `e` is not changed.
 */
json_object *
shape_entity(Req *r, const char *table, json_object *e, bool single)
{
	json_object *p = NULL,
			   *k = NULL;

	json_object_object_get_ex(e, "PartitionKey", &p);
	json_object_object_get_ex(e, "RowKey", &k);
	return shape_entity_keyed(r, table, e, single,
							  p && json_object_is_type(p, json_type_string) ? json_object_get_string(p) : NULL,
							  k && json_object_is_type(k, json_type_string) ? json_object_get_string(k) : NULL);
}

/*
 * shape_entity_keyed: shape_entity for an entity whose keys (pk, rk; NULL:
 * unknown) the caller knows apart from its properties: under a $select
 * that does not name them they are not in it, and fullmetadata's odata.id
 * and odata.editLink still name the entity.
 */
json_object *
shape_entity_keyed(Req *r, const char *table, json_object *e, bool single, const char *pk, const char *rk)
{
	json_object *out = json_object_new_object();
	json_object *v;
	Buf			b = {0};

	if (r->level != LEVEL_NONE && single)
	{
		buf_printf(&b, "%s/$metadata#%s/@Element", r->base, table);
		json_object_object_add(out, "odata.metadata", json_object_new_string(b.data));
		b.len = 0;
	}
	if (r->level == LEVEL_FULL)
	{
		Buf			path = {0};

		buf_printf(&b, "%s.%s", r->acct->name, table);
		json_object_object_add(out, "odata.type", json_object_new_string(b.data));
		b.len = 0;
		if (pk && rk)
		{
			entity_path(&path, table, pk, rk);
			buf_printf(&b, "%s/%s", r->base, path.data);
			json_object_object_add(out, "odata.id", json_object_new_string(b.data));
		}
		if (json_object_object_get_ex(e, "odata.etag", &v))
			json_object_object_add(out, "odata.etag", json_object_get(v));
		if (pk && rk)
			json_object_object_add(out, "odata.editLink", json_object_new_string(path.data));
		buf_free(&path);
	}
	else if (r->level == LEVEL_MINIMAL && json_object_object_get_ex(e, "odata.etag", &v))
		json_object_object_add(out, "odata.etag", json_object_get(v));
	buf_free(&b);

	json_object_object_foreach(e, key, val)
	{
		const char *at = strstr(key, "@odata.type");

		if (strncmp(key, "odata.", 6) == 0)
			continue;
		if (at != NULL)
		{
			if (r->level == LEVEL_NONE)
				continue;
			/* annotations go right before their property, below */
			continue;
		}
		if (r->level == LEVEL_FULL && strcmp(key, "Timestamp") == 0)
			json_object_object_add(out, "Timestamp@odata.type", json_object_new_string("Edm.DateTime"));
		if (r->level != LEVEL_NONE)
		{
			Buf			ann = {0};
			json_object *t;

			buf_printf(&ann, "%s@odata.type", key);
			if (json_object_object_get_ex(e, ann.data, &t))
				json_object_object_add(out, ann.data, json_object_get(t));
			buf_free(&ann);
		}
		json_object_object_add(out, key, json_object_get(val));
	}
	return out;
}
