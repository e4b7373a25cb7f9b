/*-------------------------------------------------------------------------
 *
 * json.c
 *	  The gateway's reader of request JSON: a strict RFC 8259 parser that
 *	  builds json-c objects, for every body a client sends (single
 *	  operations in tables.c and entities.c, the operations of a $batch in
 *	  batchparse.c).
 *
 * json-c's own tokener is lenient where the protocol needs one meaning per
 * byte sequence: an object that names a member twice keeps the last value
 * (and jsonb, which receives the insert body as text, does the same), so
 * {"a":1,"a":"two"} would be stored as "two" where the service answers
 * DuplicatePropertiesSpecified.  This parser
 *	- refuses a member name that occurs twice in one object, comparing the
 *	  decoded names ("a" and "\u0061" are the same name), by sorting each
 *	  object's names: O(n log n) for a body of n bytes, whatever it holds;
 *	- refuses any byte after the value other than JSON whitespace (a NUL
 *	  byte included: the text is a byte range, never a C string);
 *	- refuses invalid UTF-8 (overlong forms, encoded surrogates, code points
 *	  above U+10FFFF), raw control characters in strings, a \u escape of a
 *	  lone surrogate (json-c would store U+FFFD in its place) and \u0000
 *	  (jsonb cannot store it, and json-c member names would end there);
 *	- bounds nesting (GW_JSON_MAX_DEPTH) and the number of values
 *	  (GW_JSON_MAX_VALUES), so that a 4 MiB body cannot exhaust the stack
 *	  or become hundreds of megabytes of objects.
 * It tells "not JSON" (JSON_INVALID) apart from "a duplicate member"
 * (JSON_DUPLICATE), which the service answers with different codes.
 *
 * Numbers keep their meaning through json-c: an integer that fits int64 is
 * an int64, any other number a double that keeps its original text (json-c
 * prints that text again), so an integer beyond int64 is not clamped to
 * INT64_MAX as json-c's tokener does, and a double is printed as it was
 * written, digit for digit.
 *
 * The same parser reads what the database answers (json_parse_db): the
 * entities, policies and service properties the gateway reshapes and
 * passes on.  json-c's tokener must not be used for them: it turns an
 * Edm.Double such as 1e20, which the extension writes as the integer
 * literal 100000000000000000000, into 18446744073709551615.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "json.h"

#include "buf.h"
#include "encode.h"
#include "reqtypes.h"
#include "response.h"

/* A member name of an object being parsed: a range of JsonParser.names. */
typedef struct NameRef
{
	size_t		off;
	size_t		len;
	const char *ptr;			/* set only while the object's names are sorted */
} NameRef;

typedef struct JsonParser
{
	const unsigned char *p;
	const unsigned char *end;
	int			depth;
	long		nvalues;
	JsonResult	result;
	const char *why;
	Buf			str;			/* the string being decoded */
	Buf			names;			/* decoded member names, each NUL-terminated */
	NameRef    *refs;			/* a stack: the names of the open objects */
	size_t		nrefs;
	size_t		caprefs;
} JsonParser;

static json_object *parse_value(JsonParser *ps);

/* fail: record why the text is refused (the first reason wins). */
static json_object *
fail(JsonParser *ps, JsonResult result, const char *why)
{
	if (ps->result == JSON_OK)
	{
		ps->result = result;
		ps->why = why;
	}
	return NULL;
}

/* skip_ws: skip RFC 8259 whitespace (space, tab, LF, CR; nothing else). */
static void
skip_ws(JsonParser *ps)
{
	while (ps->p < ps->end &&
		   (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}


/* hex4: the value of four hex digits at p, or -1. */
static long
hex4(const unsigned char *p)
{
	long		v = 0;

	for (int i = 0; i < 4; i++)
	{
		unsigned char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/* put_utf8: append code point cp (not a surrogate, not 0) as UTF-8. */
static void
put_utf8(Buf *b, long cp)
{
	char		u[4];
	size_t		n;

	if (cp < 0x80)
	{
		u[0] = (char) cp;
		n = 1;
	}
	else if (cp < 0x800)
	{
		u[0] = (char) (0xc0 | (cp >> 6));
		u[1] = (char) (0x80 | (cp & 0x3f));
		n = 2;
	}
	else if (cp < 0x10000)
	{
		u[0] = (char) (0xe0 | (cp >> 12));
		u[1] = (char) (0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char) (0x80 | (cp & 0x3f));
		n = 3;
	}
	else
	{
		u[0] = (char) (0xf0 | (cp >> 18));
		u[1] = (char) (0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char) (0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char) (0x80 | (cp & 0x3f));
		n = 4;
	}
	buf_append(b, u, n);
}

/*
 * parse_string: the string at ps->p (its opening quote) decoded into
 * ps->str; false (with the reason recorded) if it is not a valid string.
 */
static bool
parse_string(JsonParser *ps)
{
	ps->str.len = 0;
	if (ps->str.data)
		ps->str.data[0] = '\0';
	ps->p++;					/* the opening quote */
	for (;;)
	{
		const unsigned char *run = ps->p;

		/* a run of plain ASCII, copied at once */
		while (ps->p < ps->end && *ps->p >= 0x20 && *ps->p < 0x80 && *ps->p != '"' && *ps->p != '\\')
			ps->p++;
		if (ps->p > run)
			buf_append(&ps->str, (const char *) run, ps->p - run);
		if (ps->p >= ps->end)
		{
			fail(ps, JSON_INVALID, "a string does not end");
			return false;
		}
		if (*ps->p == '"')
		{
			ps->p++;
			break;
		}
		if (*ps->p < 0x20)
		{
			fail(ps, JSON_INVALID, "a control character in a string is not escaped");
			return false;
		}
		if (*ps->p >= 0x80)
		{
			int			n = utf8_seq_len(ps->p, ps->end);

			if (n == 0)
			{
				fail(ps, JSON_INVALID, "a string is not valid UTF-8");
				return false;
			}
			buf_append(&ps->str, (const char *) ps->p, n);
			ps->p += n;
			continue;
		}
		/* an escape */
		if (ps->end - ps->p < 2)
		{
			fail(ps, JSON_INVALID, "a string does not end");
			return false;
		}
		ps->p++;
		switch (*ps->p++)
		{
			case '"':
				buf_append(&ps->str, "\"", 1);
				break;
			case '\\':
				buf_append(&ps->str, "\\", 1);
				break;
			case '/':
				buf_append(&ps->str, "/", 1);
				break;
			case 'b':
				buf_append(&ps->str, "\b", 1);
				break;
			case 'f':
				buf_append(&ps->str, "\f", 1);
				break;
			case 'n':
				buf_append(&ps->str, "\n", 1);
				break;
			case 'r':
				buf_append(&ps->str, "\r", 1);
				break;
			case 't':
				buf_append(&ps->str, "\t", 1);
				break;
			case 'u':
				{
					long		cp = ps->end - ps->p >= 4 ? hex4(ps->p) : -1;

					if (cp < 0)
					{
						fail(ps, JSON_INVALID, "a \\u escape needs four hex digits");
						return false;
					}
					ps->p += 4;
					if (cp >= 0xdc00 && cp <= 0xdfff)
					{
						fail(ps, JSON_INVALID, "a \\u escape is a lone low surrogate");
						return false;
					}
					if (cp >= 0xd800 && cp <= 0xdbff)
					{
						long		lo = (ps->end - ps->p >= 6 && ps->p[0] == '\\' && ps->p[1] == 'u')
							? hex4(ps->p + 2) : -1;

						if (lo < 0xdc00 || lo > 0xdfff)
						{
							fail(ps, JSON_INVALID, "a \\u escape is a high surrogate without its low surrogate");
							return false;
						}
						ps->p += 6;
						cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
					}
					if (cp == 0)
					{
						fail(ps, JSON_INVALID, "a string holds the character U+0000");
						return false;
					}
					put_utf8(&ps->str, cp);
					break;
				}
			default:
				fail(ps, JSON_INVALID, "a string holds an unknown escape");
				return false;
		}
	}
	return true;
}

/*
 * parse_number: the number at ps->p, RFC 8259's grammar exactly:
 * -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
 */
static json_object *
parse_number(JsonParser *ps)
{
	const unsigned char *s = ps->p;
	bool		integral = true;
	char	   *text;
	json_object *o;

	if (ps->p < ps->end && *ps->p == '-')
		ps->p++;
	if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
		return fail(ps, JSON_INVALID, "a number has no digits");
	if (*ps->p == '0')
		ps->p++;
	else
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
			ps->p++;
	if (ps->p < ps->end && *ps->p == '.')
	{
		integral = false;
		ps->p++;
		if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
			return fail(ps, JSON_INVALID, "a number has no digits after its decimal point");
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
			ps->p++;
	}
	if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E'))
	{
		integral = false;
		ps->p++;
		if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
			ps->p++;
		if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
			return fail(ps, JSON_INVALID, "a number has no digits in its exponent");
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
			ps->p++;
	}
	text = xstrndup((const char *) s, ps->p - s);
	o = NULL;
	/* "-0" as an int64 would print as 0: keep its text, as a double's */
	if (integral && strcmp(text, "-0") != 0)
	{
		long long	v;

		errno = 0;
		v = strtoll(text, NULL, 10);
		if (errno == 0)
			o = json_object_new_int64(v);
	}
	if (o == NULL)
		o = json_object_new_double_s(strtod(text, NULL), text);
	free(text);
	return o;
}

/* name_cmp: qsort order of member names (bytes, then length). */
static int
name_cmp(const void *a, const void *b)
{
	const NameRef *x = a;
	const NameRef *y = b;
	int			c = memcmp(x->ptr, y->ptr, x->len < y->len ? x->len : y->len);

	if (c != 0)
		return c;
	return (x->len > y->len) - (x->len < y->len);
}

/*
 * parse_object: the object at ps->p (its '{').  Its member names are
 * pushed on ps->refs while it is parsed and checked for a duplicate, by
 * sorting, when it ends.
 */
static json_object *
parse_object(JsonParser *ps)
{
	json_object *obj = json_object_new_object();
	size_t		base = ps->nrefs;
	size_t		names_base = ps->names.len;
	bool		dup = false;

	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == '}')
		ps->p++;
	else
		for (;;)
		{
			json_object *val;
			size_t		off;

			skip_ws(ps);
			if (ps->p >= ps->end || *ps->p != '"')
			{
				fail(ps, JSON_INVALID, "an object member does not start with a string");
				goto bad;
			}
			if (!parse_string(ps))
				goto bad;
			/* keep the decoded name: the value's strings reuse ps->str */
			off = ps->names.len;
			buf_append(&ps->names, ps->str.data ? ps->str.data : "", ps->str.len + 1);
			if (ps->nrefs == ps->caprefs)
			{
				NameRef    *n;

				ps->caprefs = ps->caprefs ? ps->caprefs * 2 : 64;
				n = realloc(ps->refs, ps->caprefs * sizeof(NameRef));
				if (n == NULL)
					abort();
				ps->refs = n;
			}
			ps->refs[ps->nrefs].off = off;
			ps->refs[ps->nrefs].len = ps->str.len;
			ps->nrefs++;
			skip_ws(ps);
			if (ps->p >= ps->end || *ps->p != ':')
			{
				fail(ps, JSON_INVALID, "an object member name is not followed by ':'");
				goto bad;
			}
			ps->p++;
			val = parse_value(ps);
			if (ps->result != JSON_OK)
				goto bad;
			json_object_object_add(obj, ps->names.data + off, val);
			skip_ws(ps);
			if (ps->p < ps->end && *ps->p == ',')
			{
				ps->p++;
				continue;
			}
			if (ps->p < ps->end && *ps->p == '}')
			{
				ps->p++;
				break;
			}
			fail(ps, JSON_INVALID, "an object member is not followed by ',' or '}'");
			goto bad;
		}

	/* a member name twice: sort this object's names, compare neighbours */
	if (ps->nrefs - base > 1)
	{
		for (size_t i = base; i < ps->nrefs; i++)
			ps->refs[i].ptr = ps->names.data + ps->refs[i].off;
		qsort(ps->refs + base, ps->nrefs - base, sizeof(NameRef), name_cmp);
		for (size_t i = base + 1; i < ps->nrefs && !dup; i++)
			dup = name_cmp(&ps->refs[i - 1], &ps->refs[i]) == 0;
	}
	if (dup)
	{
		fail(ps, JSON_DUPLICATE, "an object names a member more than once");
		goto bad;
	}
	ps->nrefs = base;
	ps->names.len = names_base;
	return obj;

bad:
	json_object_put(obj);
	return NULL;
}

/* parse_array: the array at ps->p (its '['). */
static json_object *
parse_array(JsonParser *ps)
{
	json_object *arr = json_object_new_array();

	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == ']')
	{
		ps->p++;
		return arr;
	}
	for (;;)
	{
		json_object *val = parse_value(ps);

		if (ps->result != JSON_OK)
		{
			json_object_put(arr);
			return NULL;
		}
		json_object_array_add(arr, val);
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',')
		{
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == ']')
		{
			ps->p++;
			return arr;
		}
		json_object_put(arr);
		return fail(ps, JSON_INVALID, "an array element is not followed by ',' or ']'");
	}
}

/* literal: whether the bytes at ps->p are `word`; consumes them if so. */
static bool
literal(JsonParser *ps, const char *word)
{
	size_t		n = strlen(word);

	if ((size_t) (ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
		return false;
	ps->p += n;
	return true;
}

/*
 * parse_value: the value after optional whitespace at ps->p.  A JSON null
 * is json-c's NULL pointer, so the callers tell a failure by ps->result.
 */
static json_object *
parse_value(JsonParser *ps)
{
	json_object *v;

	skip_ws(ps);
	if (ps->p >= ps->end)
		return fail(ps, JSON_INVALID, "a value is missing");
	if (++ps->nvalues > GW_JSON_MAX_VALUES)
		return fail(ps, JSON_INVALID, "the JSON text holds too many values");
	switch (*ps->p)
	{
		case '{':
		case '[':
			if (ps->depth >= GW_JSON_MAX_DEPTH)
				return fail(ps, JSON_INVALID, "the JSON text nests too deeply");
			ps->depth++;
			v = *ps->p == '{' ? parse_object(ps) : parse_array(ps);
			ps->depth--;
			return v;
		case '"':
			if (!parse_string(ps))
				return NULL;
			return json_object_new_string_len(ps->str.data ? ps->str.data : "", (int) ps->str.len);
		case 't':
			if (literal(ps, "true"))
				return json_object_new_boolean(1);
			break;
		case 'f':
			if (literal(ps, "false"))
				return json_object_new_boolean(0);
			break;
		case 'n':
			if (literal(ps, "null"))
				return NULL;
			break;
		default:
			if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
				return parse_number(ps);
			break;
	}
	return fail(ps, JSON_INVALID, "a value is not JSON");
}

/*
 * json_parse_request: parse `len` bytes of request text as one JSON value
 * (RFC 8259, strictly; see the file header).  Returns JSON_OK with *out
 * set (to be json_object_put() by the caller), or JSON_INVALID or
 * JSON_DUPLICATE with *out NULL and *why (if why is not NULL) a static
 * text saying what is wrong.
 */
JsonResult
json_parse_request(const char *text, size_t len, json_object **out, const char **why)
{
	JsonParser	ps = {0};
	json_object *v;

	ps.p = (const unsigned char *) text;
	ps.end = ps.p + len;
	ps.result = JSON_OK;
	v = text ? parse_value(&ps) : fail(&ps, JSON_INVALID, "a value is missing");
	if (ps.result == JSON_OK)
	{
		skip_ws(&ps);
		if (ps.p < ps.end)
			fail(&ps, JSON_INVALID, "bytes other than whitespace follow the JSON value");
	}
	buf_free(&ps.str);
	buf_free(&ps.names);
	free(ps.refs);
	if (ps.result != JSON_OK)
	{
		if (v)
			json_object_put(v);
		v = NULL;
	}
	*out = v;
	if (why)
		*why = ps.why;
	return ps.result;
}

/*
 * json_parse_strict: the JSON text as a json-c value, or NULL if it is not
 * strict JSON (or names a member twice).  A JSON null also gives NULL; use
 * json_parse_request() to tell the cases apart.
 */
json_object *
json_parse_strict(const char *text, size_t len)
{
	json_object *o;

	if (json_parse_request(text, len, &o, NULL) != JSON_OK)
		return NULL;
	return o;
}

/*
 * json_parse_db: a JSON text the database answered (a column's value,
 * NUL-terminated) as a json-c value that keeps every number's text (see
 * the file header); NULL if it is not JSON.  Every JSON the gateway reads
 * from the database goes through here, never through json-c's tokener.
 */
json_object *
json_parse_db(const char *text)
{
	return text ? json_parse_strict(text, strlen(text)) : NULL;
}

/*
 * json_request_object: the body text of a request as a JSON object, or NULL
 * with the 400 answered: DuplicatePropertiesSpecified when an object names
 * a member twice, else InvalidInput (no body, not JSON, not an object).
 */
json_object *
json_request_object(Req *r, Resp *resp, const char *text, size_t len)
{
	json_object *o;
	const char *why = NULL;

	if (len == 0)
	{
		resp_error(r, resp, 400, "InvalidInput", "One of the request inputs is not valid.",
				   "the request has no body");
		return NULL;
	}
	switch (json_parse_request(text, len, &o, &why))
	{
		case JSON_OK:
			if (json_object_is_type(o, json_type_object))
				return o;
			json_object_put(o);
			why = "the body is not a JSON object";
			break;
		case JSON_DUPLICATE:
			resp_error(r, resp, 400, "DuplicatePropertiesSpecified", GW_JSON_DUPLICATE_MESSAGE, why);
			return NULL;
		case JSON_INVALID:
			break;
	}
	resp_error(r, resp, 400, "InvalidInput", "One of the request inputs is not valid.", why);
	return NULL;
}
