/*-------------------------------------------------------------------------
 *
 * entity.c
 *	  Entity validation, typing and the canonical stored form.
 *
 * A caller's entity is the service's JSON: PartitionKey, RowKey, custom
 * properties, and "Name@odata.type" annotations.  It is checked against the
 * service's rules (keys, names, types, literal values, sizes, counts) and
 * brought into the canonical form that is stored and returned:
 *
 *	- String, Int32 and Boolean values are plain JSON, unannotated;
 *	- Int64 is a JSON string, DateTime the service's ISO 8601 text (trailing
 *	  zeros of the fraction trimmed), Guid lower-case text, Binary strict
 *	  padded base64, each with its annotation;
 *	- a finite Double is a JSON number in its shortest round-trip form,
 *	  annotated when the number shows no decimal point; NaN, Infinity,
 *	  -Infinity and -0 are annotated JSON strings.
 *
 * The canonical form is itself valid input and canonicalizing it again is
 * the identity, which is what Merge relies on.  Null values mean "absent".
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"

#include <math.h>

#include "access/itup.h"
#include "common/base64.h"
#include "common/shortest_dec.h"
#include "mb/pg_wchar.h"
#include "nodes/pg_list.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "tablestore.h"

#define ANNOTATION_SUFFIX	"@odata.type"
#define ANNOTATION_SUFFIX_LEN (sizeof(ANNOTATION_SUFFIX) - 1)

static const char *const edm_type_names[] = {
	"Edm.String", "Edm.Int32", "Edm.Int64", "Edm.Double",
	"Edm.Boolean", "Edm.DateTime", "Edm.Guid", "Edm.Binary"
};

/* One top-level member of an entity object. */
typedef struct Member
{
	char	   *name;			/* NULL once taken (a key, its annotation) */
	int			namelen;
	const char *key;			/* the name, kept: members are in jsonb key order */
	JsonbValue	value;
} Member;

/* Whether a character is forbidden in keys. */
static inline bool
key_char_forbidden(pg_wchar c)
{
	return c == '/' || c == '\\' || c == '#' || c == '?' ||
		c <= 0x1F || (c >= 0x7F && c <= 0x9F);
}

/*
 * ts_key_is_valid: whether a value may be a PartitionKey or RowKey: no
 * forbidden characters, at most 512 UTF-16 code units.
 */
bool
ts_key_is_valid(const char *s, int len)
{
	const unsigned char *p = (const unsigned char *) s;
	const unsigned char *end = p + len;

	while (p < end)
	{
		if (key_char_forbidden(utf8_to_unicode(p)))
			return false;
		p += pg_utf_mblen(p);
	}
	return ts_utf16_length(s, len) <= TS_MAX_KEY_UTF16;
}

/*
 * ts_validate_key: check a PartitionKey or RowKey value as ts_key_is_valid
 * does, with the service's error for each way it can be wrong.
 */
void
ts_validate_key(const char *name, const char *s, int len)
{
	const unsigned char *p = (const unsigned char *) s;
	const unsigned char *end = p + len;

	while (p < end)
	{
		if (key_char_forbidden(utf8_to_unicode(p)))
			ts_ereport(ERROR, TS_OutOfRangeInput,
					   errmsg("%s contains a forbidden character", name),
					   errhint("Keys cannot contain /, \\, #, ?, or control characters U+0000 to U+001F and U+007F to U+009F."));
		p += pg_utf_mblen(p);
	}
	if (ts_utf16_length(s, len) > TS_MAX_KEY_UTF16)
		ts_ereport(ERROR, TS_PropertyValueTooLarge,
				   errmsg("%s is longer than %d UTF-16 code units", name, TS_MAX_KEY_UTF16));
}

/*
 * ts_is_valid_property_name: a C#-identifier-like name: a letter or '_'
 * first, then letters, digits and '_'.  Non-ASCII characters count as
 * letters unless they are controls (U+0080..U+009F), private use
 * (U+E000..U+F8FF) or non-characters.
 */
bool
ts_is_valid_property_name(const char *s, int len)
{
	const unsigned char *p = (const unsigned char *) s;
	const unsigned char *end = p + len;
	bool		first = true;

	if (len == 0)
		return false;
	while (p < end)
	{
		unsigned char b = *p;

		/* ASCII, the common case, without decoding or the locale's ctype */
		if (b < 0x80)
		{
			if (!((b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') || b == '_' ||
				  (!first && b >= '0' && b <= '9')))
				return false;
			p++;
		}
		else
		{
			pg_wchar	c = utf8_to_unicode(p);

			if (c <= 0x9F || (c >= 0xE000 && c <= 0xF8FF) ||
				(c >= 0xFDD0 && c <= 0xFDEF) || (c & 0xFFFE) == 0xFFFE)
				return false;
			p += pg_utf_mblen(p);
		}
		first = false;
	}
	return true;
}

static bool
is_annotation(const char *name, int len)
{
	return len > (int) ANNOTATION_SUFFIX_LEN &&
		memcmp(name + len - ANNOTATION_SUFFIX_LEN, ANNOTATION_SUFFIX, ANNOTATION_SUFFIX_LEN) == 0;
}

static bool
name_is(const Member *m, const char *s)
{
	return m->namelen == (int) strlen(s) && memcmp(m->name, s, m->namelen) == 0;
}

/*
 * Collect the top-level members of a jsonb object.  Nested objects and
 * arrays come back as jbvBinary values.
 */
static Member *
collect_members(Jsonb *obj, int *nmembers)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			n = JB_ROOT_COUNT(obj);
	Member	   *members = palloc(sizeof(Member) * Max(n, 1));
	int			i = 0;

	it = JsonbIteratorInit(&obj->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			Assert(i < n);
			members[i].name = v.val.string.val;
			members[i].key = v.val.string.val;
			members[i].namelen = v.val.string.len;
			tok = JsonbIteratorNext(&it, &members[i].value, true);
			Assert(tok == WJB_VALUE);
			i++;
		}
	}
	*nmembers = i;
	return members;
}

static void
push_string(JsonbParseState **st, JsonbIteratorToken tok, const char *s, int len)
{
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.val = (char *) s;
	v.val.string.len = len;
	pushJsonbValue(st, tok, &v);
}

static void
push_cstring(JsonbParseState **st, JsonbIteratorToken tok, const char *s)
{
	push_string(st, tok, s, strlen(s));
}

/* The text of a jsonb number, as numeric_out writes it. */
static char *
numeric_text(const JsonbValue *v)
{
	return DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v->val.numeric)));
}

static char *
value_text_for_error(const JsonbValue *v)
{
	switch (v->type)
	{
		case jbvString:
			return pnstrdup(v->val.string.val,
							pg_mbcliplen(v->val.string.val, v->val.string.len, 100));
		case jbvNumeric:
			return numeric_text(v);
		case jbvBool:
			return v->val.boolean ? "true" : "false";
		default:
			return "(complex value)";
	}
}

static void invalid_value(const Member *m, TsEdmType type) pg_attribute_noreturn();

static void
invalid_value(const Member *m, TsEdmType type)
{
	ts_ereport(ERROR, TS_InvalidInput,
			   errmsg("invalid %s value \"%s\" for property \"%s\"",
					  edm_type_names[type], value_text_for_error(&m->value),
					  ts_clip(m->name, m->namelen)));
}

/*
 * Parse text as a signed 64-bit integer in decimal, strictly.
 */
static bool
parse_int64_strict(const char *s, int len, int64 *out)
{
	uint64		v = 0;
	bool		neg = false;
	int			i = 0;

	if (len > 0 && (s[0] == '-' || s[0] == '+'))
	{
		neg = (s[0] == '-');
		i = 1;
	}
	if (i == len)
		return false;
	for (; i < len; i++)
	{
		if (s[i] < '0' || s[i] > '9')
			return false;
		if (v > (PG_UINT64_MAX - (s[i] - '0')) / 10)
			return false;
		v = v * 10 + (s[i] - '0');
	}
	if (neg)
	{
		if (v > (uint64) PG_INT64_MAX + 1)
			return false;
		*out = (int64) (0 - v);
	}
	else
	{
		if (v > (uint64) PG_INT64_MAX)
			return false;
		*out = (int64) v;
	}
	return true;
}

/*
 * The stored properties as they are built: name and value pairs, added in
 * the caller's key order (which is jsonb's, but for annotations added by the
 * canonical form), then made one jsonb object.  Cheaper than pushJsonbValue,
 * which sorts and de-duplicates every object it finishes: the pairs are
 * sorted only if they are out of order, and they are unique already (the
 * input's keys are, and an annotation is written once, with its property).
 */
typedef struct PropsBuilder
{
	JsonbPair  *pairs;
	int			n;
	int			cap;
	bool		value_next;		/* whether the next string is a value */
} PropsBuilder;

/* Add a key (every other call) or a value. */
static void
pb_value(PropsBuilder *st, const JsonbValue *v)
{
	if (!st->value_next)
	{
		if (st->n == st->cap)
		{
			st->cap *= 2;
			st->pairs = repalloc(st->pairs, sizeof(JsonbPair) * st->cap);
		}
		st->pairs[st->n].key = *v;
		st->pairs[st->n].order = st->n;
	}
	else
		st->pairs[st->n++].value = *v;
	st->value_next = !st->value_next;
}

static void
pb_string(PropsBuilder *st, const char *s, int len)
{
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.val = (char *) s;
	v.val.string.len = len;
	pb_value(st, &v);
}

static void
pb_cstring(PropsBuilder *st, const char *s)
{
	pb_string(st, s, strlen(s));
}

/* jsonb's order of object keys: shorter first, then bytewise. */
static int
pair_cmp(const void *a, const void *b)
{
	const JsonbValue *ka = &((const JsonbPair *) a)->key;
	const JsonbValue *kb = &((const JsonbPair *) b)->key;

	if (ka->val.string.len != kb->val.string.len)
		return ka->val.string.len < kb->val.string.len ? -1 : 1;
	return memcmp(ka->val.string.val, kb->val.string.val, ka->val.string.len);
}

/* Whether pairs[0..n) are in jsonb's key order. */
static bool
pairs_sorted(const JsonbPair *pairs, int n)
{
	for (int i = 1; i < n; i++)
		if (pair_cmp(&pairs[i - 1], &pairs[i]) > 0)
			return false;
	return true;
}

/*
 * The object of the pairs, in jsonb's key order.  The properties come in
 * order, and so do the annotations among themselves (one suffix after names
 * in order), each annotation right after its property: one linear merge of
 * the two runs puts them in order.
 */
static Jsonb *
pb_finish(PropsBuilder *st)
{
	JsonbValue	obj;
	JsonbPair  *props = palloc(sizeof(JsonbPair) * Max(st->n, 1));
	JsonbPair  *anns = palloc(sizeof(JsonbPair) * Max(st->n, 1));
	int			np = 0;
	int			na = 0;
	int			i = 0;
	int			j = 0;
	int			k = 0;

	Assert(!st->value_next);
	for (int p = 0; p < st->n; p++)
	{
		if (is_annotation(st->pairs[p].key.val.string.val, st->pairs[p].key.val.string.len))
			anns[na++] = st->pairs[p];
		else
			props[np++] = st->pairs[p];
	}
	if (pairs_sorted(props, np) && pairs_sorted(anns, na))
	{
		while (i < np || j < na)
		{
			if (j == na || (i < np && pair_cmp(&props[i], &anns[j]) < 0))
				st->pairs[k++] = props[i++];
			else
				st->pairs[k++] = anns[j++];
		}
	}
	else
		qsort(st->pairs, st->n, sizeof(JsonbPair), pair_cmp);
	for (k = 0; k < st->n; k++)
		st->pairs[k].order = k;
	obj.type = jbvObject;
	obj.val.object.nPairs = st->n;
	obj.val.object.pairs = st->pairs;
	return JsonbValueToJsonb(&obj);
}

/*
 * Push a finite or special double in canonical form; returns whether the
 * JSON form needs the Edm.Double annotation.
 */
static bool
push_double(PropsBuilder *st, double d)
{
	char		buf[DOUBLE_SHORTEST_DECIMAL_LEN];
	JsonbValue	v;

	if (isnan(d))
	{
		pb_cstring(st, "NaN");
		return true;
	}
	if (isinf(d))
	{
		pb_cstring(st, d > 0 ? "Infinity" : "-Infinity");
		return true;
	}
	if (d == 0 && signbit(d))
	{
		pb_cstring(st, "-0");
		return true;
	}
	double_to_shortest_decimal_buf(d, buf);
	v.type = jbvNumeric;
	v.val.numeric = DatumGetNumeric(DirectFunctionCall3(numeric_in, CStringGetDatum(buf),
														ObjectIdGetDatum(InvalidOid),
														Int32GetDatum(-1)));
	pb_value(st, &v);
	/* numeric_out shows a '.' exactly when the value has a fraction */
	return strchr(numeric_text(&v), '.') == NULL;
}

/*
 * Whether s has the lexical form of a decimal number, as the service writes
 * an Edm.Double: [+-]digits[.digits][(e|E)[+-]digits] (or .digits).  strtod
 * alone would also take hexadecimal floats, "inf", "nan" and leading blanks.
 */
static bool
is_decimal_lexical(const char *s)
{
	int			digits = 0;

	if (*s == '+' || *s == '-')
		s++;
	while (isdigit((unsigned char) *s))
		s++, digits++;
	if (*s == '.')
	{
		s++;
		while (isdigit((unsigned char) *s))
			s++, digits++;
	}
	if (digits == 0)
		return false;
	if (*s == 'e' || *s == 'E')
	{
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!isdigit((unsigned char) *s))
			return false;
		while (isdigit((unsigned char) *s))
			s++;
	}
	return *s == '\0';
}

/*
 * Parse a Double given as JSON: a number, or (annotated) a string holding a
 * number or NaN/Infinity/-Infinity.
 */
static bool
parse_double_value(const JsonbValue *v, double *d)
{
	char	   *s;
	char	   *end;

	if (v->type == jbvNumeric)
		s = numeric_text(v);
	else if (v->type == jbvString)
	{
		s = pnstrdup(v->val.string.val, v->val.string.len);
		if (strcmp(s, "NaN") == 0)
		{
			*d = get_float8_nan();
			return true;
		}
		if (strcmp(s, "Infinity") == 0 || strcmp(s, "INF") == 0)
		{
			*d = get_float8_infinity();
			return true;
		}
		if (strcmp(s, "-Infinity") == 0 || strcmp(s, "-INF") == 0)
		{
			*d = -get_float8_infinity();
			return true;
		}
	}
	else
		return false;

	if (!is_decimal_lexical(s))
		return false;			/* hex floats, blanks, inf and nan spellings */
	errno = 0;
	*d = strtod(s, &end);
	if (*end != '\0' || isnan(*d) || isinf(*d))
		return false;			/* overflow or trailing junk */
	return true;
}

/*
 * The service's size of a value, for the entity size formula.
 */
static int64
value_size(TsEdmType type, int64 len)
{
	switch (type)
	{
		case EDM_STRING:
			return 2 * len + 4;
		case EDM_BINARY:
			return len + 4;
		case EDM_DATETIME:
		case EDM_DOUBLE:
		case EDM_INT64:
			return 8;
		case EDM_GUID:
			return 16;
		case EDM_INT32:
			return 4;
		case EDM_BOOLEAN:
			return 1;
	}
	return 0;					/* keep the compiler quiet */
}

/* Whether a JSON number has a fraction (numeric_out would show a '.'). */
static bool
numeric_has_fraction(const JsonbValue *v)
{
	return DatumGetInt32(DirectFunctionCall1(numeric_scale, NumericGetDatum(v->val.numeric))) > 0;
}

/*
 * Whether a GUID that ts_parse_guid accepted is in its canonical form
 * already: 36 characters, hyphenated, lower-case hex digits.
 */
static bool
guid_is_canonical(const char *s, int len)
{
	if (len != 36)
		return false;
	for (int i = 0; i < len; i++)
		if (s[i] >= 'A' && s[i] <= 'F')
			return false;
	return true;
}

/*
 * Whether base64 that ts_check_base64 accepted is canonical: the bits the
 * last character carries beyond the data are zero (else decoding and
 * encoding again gives another text).
 */
static bool
base64_is_canonical(const char *s, int len)
{
	int			pad;
	const char *p;
	int			c;

	if (len == 0)
		return true;
	pad = (s[len - 1] == '=') + (len > 1 && s[len - 2] == '=');
	if (pad == 0)
		return true;
	p = &s[len - 1 - pad];
	c = (*p >= 'A' && *p <= 'Z') ? *p - 'A' : (*p >= 'a' && *p <= 'z') ? *p - 'a' + 26 :
		(*p >= '0' && *p <= '9') ? *p - '0' + 52 : (*p == '+') ? 62 : 63;
	return (c & (pad == 1 ? 0x3 : 0xF)) == 0;
}

/*
 * Check one property's value against its type and push its canonical name,
 * value and annotation.  Returns the value's size by the service's formula.
 */
static int64
push_property(PropsBuilder *st, const Member *m, const Member *annotation)
{
	const JsonbValue *v = &m->value;
	TsEdmType	type;
	bool		annotate = false;
	int64		len = 0;

	if (v->type == jbvBinary)
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("property \"%s\" has a nested object or array value", ts_clip(m->name, m->namelen)),
				   errhint("Property values are strings, numbers, Booleans, or typed strings with a \"%s@odata.type\" annotation.",
						   ts_clip(m->name, m->namelen)));

	/* The type: from the annotation, else inferred from the JSON. */
	if (annotation != NULL)
	{
		const JsonbValue *a = &annotation->value;
		int			t;

		if (a->type != jbvString)
			ts_ereport(ERROR, TS_InvalidInput,
					   errmsg("annotation \"%s\" is not a string", ts_clip(annotation->name, annotation->namelen)));
		for (t = 0; t < (int) lengthof(edm_type_names); t++)
			if ((int) strlen(edm_type_names[t]) == a->val.string.len &&
				memcmp(edm_type_names[t], a->val.string.val, a->val.string.len) == 0)
				break;
		if (t == (int) lengthof(edm_type_names))
			ts_ereport(ERROR, TS_InvalidInput,
					   errmsg("unrecognized type \"%s\" for property \"%s\"",
							  ts_clip(a->val.string.val, a->val.string.len), ts_clip(m->name, m->namelen)),
					   errhint("The types are Edm.String, Edm.Int32, Edm.Int64, Edm.Double, Edm.Boolean, Edm.DateTime, Edm.Guid and Edm.Binary."));
		type = (TsEdmType) t;
	}
	else if (v->type == jbvString)
		type = EDM_STRING;
	else if (v->type == jbvBool)
		type = EDM_BOOLEAN;
	else
	{
		/* numeric_out shows a fraction exactly when the scale is positive */
		type = numeric_has_fraction(v) ? EDM_DOUBLE : EDM_INT32;
	}

	pb_string(st, m->name, m->namelen);

	switch (type)
	{
		case EDM_STRING:
			if (v->type != jbvString)
				invalid_value(m, type);
			len = ts_utf16_length(v->val.string.val, v->val.string.len);
			if (len > TS_MAX_STRING_UTF16)
				ts_ereport(ERROR, TS_PropertyValueTooLarge,
						   errmsg("value of property \"%s\" is longer than %d UTF-16 code units",
								  ts_clip(m->name, m->namelen), TS_MAX_STRING_UTF16));
			pb_value(st, (JsonbValue *) v);
			break;

		case EDM_INT32:
		case EDM_INT64:
			{
				char	   *txt;
				int64		i;
				JsonbValue	out;

				if (v->type == jbvNumeric && type == EDM_INT32)
				{
					/* an integral number in range is stored as it is */
					bool		error = false;

					if (numeric_has_fraction(v))
						invalid_value(m, type);
					(void) numeric_int4_opt_error(v->val.numeric, &error);
					if (error)
						invalid_value(m, type);
					pb_value(st, (JsonbValue *) v);
					break;
				}
				if (v->type == jbvNumeric)
					txt = numeric_text(v);
				else if (v->type == jbvString)
					txt = pnstrdup(v->val.string.val, v->val.string.len);
				else
					invalid_value(m, type);
				if (!parse_int64_strict(txt, strlen(txt), &i) ||
					(type == EDM_INT32 && (i < PG_INT32_MIN || i > PG_INT32_MAX)))
					invalid_value(m, type);
				if (type == EDM_INT32)
				{
					out.type = jbvNumeric;
					out.val.numeric = int64_to_numeric(i);
					pb_value(st, &out);
				}
				else
				{
					pb_cstring(st, psprintf(INT64_FORMAT, i));
					annotate = true;
				}
				break;
			}

		case EDM_DOUBLE:
			{
				double		d;

				if (!parse_double_value(v, &d))
					invalid_value(m, type);
				annotate = push_double(st, d);
				break;
			}

		case EDM_BOOLEAN:
			if (v->type != jbvBool)
				invalid_value(m, type);
			pb_value(st, (JsonbValue *) v);
			break;

		case EDM_DATETIME:
			{
				int64		ticks;

				if (v->type != jbvString ||
					!ts_parse_datetime(v->val.string.val, v->val.string.len, &ticks))
					invalid_value(m, type);
				pb_cstring(st, ts_format_datetime(ticks));
				annotate = true;
				break;
			}

		case EDM_GUID:
			{
				uint8		g[16];

				if (v->type != jbvString ||
					!ts_parse_guid(v->val.string.val, v->val.string.len, g))
					invalid_value(m, type);
				if (guid_is_canonical(v->val.string.val, v->val.string.len))
					pb_value(st, (JsonbValue *) v);
				else
					pb_cstring(st, ts_format_guid(g));
				annotate = true;
				break;
			}

		case EDM_BINARY:
			{
				int			nbytes;
				char	   *raw;
				char	   *enc;
				int			enclen;

				if (v->type != jbvString ||
					!ts_check_base64(v->val.string.val, v->val.string.len, &nbytes))
					invalid_value(m, type);
				if (nbytes > TS_MAX_BINARY_BYTES)
					ts_ereport(ERROR, TS_PropertyValueTooLarge,
							   errmsg("value of property \"%s\" is longer than %d bytes",
									  ts_clip(m->name, m->namelen), TS_MAX_BINARY_BYTES));
				if (base64_is_canonical(v->val.string.val, v->val.string.len))
					pb_value(st, (JsonbValue *) v);
				else
				{
					/* decode and encode again, so that the stored form is canonical */
					raw = palloc(pg_b64_dec_len(v->val.string.len) + 1);
					nbytes = pg_b64_decode(v->val.string.val, v->val.string.len, raw,
										   pg_b64_dec_len(v->val.string.len));
					if (nbytes < 0)
						invalid_value(m, type);
					enc = palloc(pg_b64_enc_len(nbytes) + 1);
					enclen = pg_b64_encode(raw, nbytes, enc, pg_b64_enc_len(nbytes));
					pb_string(st, enc, enclen);
				}
				len = nbytes;
				annotate = true;
				break;
			}
	}

	if (annotate)
	{
		pb_cstring(st, psprintf("%.*s%s", m->namelen, m->name, ANNOTATION_SUFFIX));
		pb_cstring(st, edm_type_names[type]);
	}

	return value_size(type, len);
}

/*
 * Check the name of a custom property.
 */
static void
check_property_name(const Member *m)
{
	if (ts_utf16_length(m->name, m->namelen) > TS_MAX_NAME_CHARS)
		ts_ereport(ERROR, TS_PropertyNameTooLong,
				   errmsg("property name \"%.*s...\" is longer than %d characters",
						  pg_mbcliplen(m->name, m->namelen, 40), m->name, TS_MAX_NAME_CHARS));
	if (!ts_is_valid_property_name(m->name, m->namelen))
		ts_ereport(ERROR, TS_PropertyNameInvalid,
				   errmsg("property name \"%s\" is invalid", ts_clip(m->name, m->namelen)),
				   errhint("A property name starts with a letter or underscore, followed by letters, digits or underscores."));
}

static void check_limits(int nprops, int64 size);

/*
 * Find the annotation member of property m, if any.
 */
static const Member *
find_annotation(const Member *members, int n, const Member *m)
{
	int			len = m->namelen + (int) ANNOTATION_SUFFIX_LEN;
	int			lo = 0;
	int			hi = n - 1;

	/*
	 * A binary search: members come in jsonb's key order, shorter names
	 * first, then bytewise (a linear search made validation quadratic in
	 * the number of members).
	 */
	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		const Member *a = &members[mid];
		int			c;

		if (a->namelen != len)
			c = a->namelen < len ? -1 : 1;
		else
		{
			c = memcmp(a->key, m->key, m->namelen);
			if (c == 0)
				c = memcmp(a->key + m->namelen, ANNOTATION_SUFFIX, ANNOTATION_SUFFIX_LEN);
		}
		if (c == 0)
			return a->name != NULL ? a : NULL;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

/*
 * Check and canonicalize the custom properties among members; the key and
 * system members must already be marked as handled (name == NULL).
 * Returns the canonical jsonb, with the property count and size.
 */
static Jsonb *
canonical_properties(Member *members, int n, int *nprops, int64 *size)
{
	PropsBuilder st = {0};
	int			count = 0;
	int64		total = 0;

	/*
	 * Count the properties first, so that an entity with far too many is
	 * refused before any work per property.
	 */
	for (int i = 0; i < n; i++)
	{
		Member	   *m = &members[i];

		if (m->name == NULL || is_annotation(m->name, m->namelen) || m->value.type == jbvNull ||
			(m->namelen >= 6 && memcmp(m->name, "odata.", 6) == 0))
			continue;
		count++;
	}
	if (count > TS_MAX_PROPERTIES)
		check_limits(count, 0);
	count = 0;

	st.cap = 2 * n + 2;
	st.pairs = palloc(sizeof(JsonbPair) * st.cap);
	for (int i = 0; i < n; i++)
	{
		Member	   *m = &members[i];

		CHECK_FOR_INTERRUPTS();
		if (m->name == NULL || is_annotation(m->name, m->namelen))
			continue;
		/* metadata such as odata.etag or odata.metadata is not a property */
		if (m->namelen >= 6 && memcmp(m->name, "odata.", 6) == 0)
			continue;
		check_property_name(m);
		if (m->value.type == jbvNull)
			continue;			/* null means absent */
		total += 8 + 2 * ts_utf16_length(m->name, m->namelen) +
			push_property(&st, m, find_annotation(members, n, m));
		count++;
	}

	/* An annotation must be well-formed even when its property is absent. */
	for (int i = 0; i < n; i++)
	{
		Member	   *a = &members[i];

		if (a->name != NULL && is_annotation(a->name, a->namelen) &&
			a->value.type != jbvString)
			ts_ereport(ERROR, TS_InvalidInput,
					   errmsg("annotation \"%s\" is not a string", ts_clip(a->name, a->namelen)));
	}

	*nprops = count;
	*size = total;
	return pb_finish(&st);
}

/*
 * check_limits: the property count and entity size limits.
 */
static void
check_limits(int nprops, int64 size)
{
	if (nprops > TS_MAX_PROPERTIES)
		ts_ereport(ERROR, TS_TooManyProperties,
				   errmsg("entity has %d custom properties, more than the limit of %d",
						  nprops, TS_MAX_PROPERTIES));
	if (size > TS_MAX_ENTITY_SIZE)
		ts_ereport(ERROR, TS_EntityTooLarge,
				   errmsg("entity size %lld bytes exceeds the limit of %d bytes",
						  (long long) size, TS_MAX_ENTITY_SIZE),
				   errhint("The size is 4 + 2 * (key lengths) + the sum over properties of 8 + 2 * (name length) + the value size, lengths in UTF-16 code units."));
}

/*
 * Take one key member out of the entity, checking it.
 */
static text *
take_key(Member *members, int n, const char *keyname)
{
	for (int i = 0; i < n; i++)
	{
		Member	   *m = &members[i];

		if (m->name == NULL)
			continue;
		if (name_is(m, keyname))
		{
			const Member *a = find_annotation(members, n, m);

			if (m->value.type == jbvNull)
				break;
			if (m->value.type != jbvString ||
				(a != NULL && (a->value.type != jbvString || a->value.val.string.len != 10 ||
							   memcmp(a->value.val.string.val, "Edm.String", 10) != 0)))
				ts_ereport(ERROR, TS_InvalidInput,
						   errmsg("%s must be a string", keyname));
			ts_validate_key(keyname, m->value.val.string.val, m->value.val.string.len);
			m->name = NULL;
			if (a != NULL)
				((Member *) a)->name = NULL;
			return cstring_to_text_with_len(m->value.val.string.val, m->value.val.string.len);
		}
	}
	ts_ereport(ERROR, TS_PropertiesNeedValue,
			   errmsg("%s is missing or null", keyname),
			   errhint("Every entity needs a string PartitionKey and RowKey; the empty string is allowed."));
	return NULL;				/* keep the compiler quiet */
}

/*
 * Drop the Timestamp member and its annotation: the server sets Timestamp.
 */
static void
drop_timestamp(Member *members, int n)
{
	for (int i = 0; i < n; i++)
	{
		if (members[i].name == NULL)
			continue;
		if (name_is(&members[i], "Timestamp") ||
			name_is(&members[i], "Timestamp" ANNOTATION_SUFFIX))
			members[i].name = NULL;
	}
}

/*
 * ts_entity_from_json: validate a caller's entity and bring it into the
 * stored form.
 */
TsEntity *
ts_entity_from_json(Jsonb *entity)
{
	TsEntity   *e = palloc0(sizeof(TsEntity));
	Member	   *members;
	int			n;
	int64		keysize;

	if (!JB_ROOT_IS_OBJECT(entity) || JB_ROOT_IS_SCALAR(entity))
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("entity must be a JSON object"));

	members = collect_members(entity, &n);
	e->partition_key = take_key(members, n, "PartitionKey");
	e->row_key = take_key(members, n, "RowKey");
	drop_timestamp(members, n);

	e->props = canonical_properties(members, n, &e->nprops, &e->size);
	keysize = 4 + 2 * (ts_utf16_length(VARDATA_ANY(e->partition_key), VARSIZE_ANY_EXHDR(e->partition_key)) +
					   ts_utf16_length(VARDATA_ANY(e->row_key), VARSIZE_ANY_EXHDR(e->row_key)));
	e->size += keysize;
	check_limits(e->nprops, e->size);
	return e;
}

/*
 * ts_entity_keys_from_json: only the keys of an entity, checked (for delete
 * and retrieve, which ignore other properties).
 */
TsEntity *
ts_entity_keys_from_json(Jsonb *entity)
{
	TsEntity   *e = palloc0(sizeof(TsEntity));
	Member	   *members;
	int			n;

	if (!JB_ROOT_IS_OBJECT(entity) || JB_ROOT_IS_SCALAR(entity))
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("entity must be a JSON object"));
	members = collect_members(entity, &n);
	e->partition_key = take_key(members, n, "PartitionKey");
	e->row_key = take_key(members, n, "RowKey");
	return e;
}

/*
 * ts_entity_check_limits: check stored-form properties (the result of a
 * merge) against the property count and size limits.
 */
void
ts_entity_check_limits(Jsonb *props, int64 key_size)
{
	Member	   *members;
	int			n;
	int			nprops;
	int64		size;

	members = collect_members(props, &n);
	(void) canonical_properties(members, n, &nprops, &size);
	check_limits(nprops, size + key_size);
}

/*
 * ts_entity_key_size: the keys' share of the entity size formula.
 */
int64
ts_entity_key_size(text *pk, text *rk)
{
	return 4 + 2 * (ts_utf16_length(VARDATA_ANY(pk), VARSIZE_ANY_EXHDR(pk)) +
					ts_utf16_length(VARDATA_ANY(rk), VARSIZE_ANY_EXHDR(rk)));
}

/* Whether names (C strings) holds the name s of len bytes. */
static bool
name_listed(List *names, const char *s, int len)
{
	ListCell   *lc;

	foreach(lc, names)
	{
		const char *n = lfirst(lc);

		if ((int) strlen(n) == len && memcmp(n, s, len) == 0)
			return true;
	}
	return false;
}

/*
 * ts_parse_select_list: parse a $select list: comma-separated property
 * names, blanks around them ignored, a repeated name kept once.  NULL: no
 * $select (NIL).
 */
List *
ts_parse_select_list(const char *select_list)
{
	List	   *names = NIL;
	const char *p = select_list;

	if (select_list == NULL)
		return NIL;
	for (;;)
	{
		const char *start;
		const char *end;

		while (*p == ' ' || *p == '\t')
			p++;
		start = p;
		while (*p && *p != ',')
			p++;
		end = p;
		while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		if (end == start)
			ts_ereport(ERROR, TS_InvalidInput,
					   errmsg("select list \"%s\" contains an empty name",
							  ts_clip(select_list, strlen(select_list))));
		if (!ts_is_valid_property_name(start, end - start))
			ts_ereport(ERROR, TS_InvalidInput,
					   errmsg("select list names invalid property \"%s\"", ts_clip(start, end - start)));
		if (ts_utf16_length(start, end - start) > TS_MAX_NAME_CHARS)
			ts_ereport(ERROR, TS_InvalidInput,
					   errmsg("select list names property \"%s\", longer than %d characters",
							  ts_clip(start, end - start), TS_MAX_NAME_CHARS));
		if (list_length(names) == TS_MAX_SELECT)
			ts_ereport(ERROR, TS_InvalidInput,
					   errmsg("select list names more than %d properties", TS_MAX_SELECT),
					   errhint("An entity has at most %d custom properties and three system properties.",
							   TS_MAX_PROPERTIES));
		if (!name_listed(names, start, end - start))
			names = lappend(names, pnstrdup(start, end - start));
		if (*p == '\0')
			break;
		p++;
	}
	return names;
}

/*
 * ts_entity_output: an entity as the service returns it: system properties,
 * odata.etag and the stored properties (all, or those of select_list, a
 * selected property the entity lacks coming back as null).
 */
Jsonb *
ts_entity_output(text *pk, text *rk, TimestampTz ts, Jsonb *props, const char *select_list)
{
	return ts_entity_output_list(pk, rk, ts, props, select_list == NULL, ts_parse_select_list(select_list));
}

/* Order of keys in a jsonb object: shorter first, then bytewise. */
static int
jsonb_key_cmp(const char *a, int alen, const char *b, int blen)
{
	if (alen != blen)
		return alen < blen ? -1 : 1;
	return memcmp(a, b, alen);
}

static void
set_pair(JsonbPair *pair, const char *key, int keylen, const char *val, int vallen, int order)
{
	pair->key.type = jbvString;
	pair->key.val.string.val = (char *) key;
	pair->key.val.string.len = keylen;
	pair->value.type = jbvString;
	pair->value.val.string.val = (char *) val;
	pair->value.val.string.len = vallen;
	pair->order = order;
}

/*
 * The whole entity: the stored properties with the system properties merged
 * in.  The stored properties come in jsonb's key order and the system
 * properties are sorted the same way, so a merge gives the object's pairs
 * in order and the jsonb is serialized directly, without the sort and
 * de-duplication of building it pair by pair: this runs for every entity a
 * query returns.
 */
static JsonbValue *
output_all(text *pk, text *rk, TimestampTz ts, Jsonb *props)
{
	char	   *stamp = ts_format_datetime(ts_timestamptz_to_ticks(ts));
	char	   *etag = ts_etag_from_datetime(stamp);
	JsonbPair	sys[4];
	int			nsys = 0;
	int			isys = 0;
	JsonbValue *obj = palloc(sizeof(JsonbValue));
	JsonbPair  *pairs;
	int			n = 0;
	JsonbIterator *it;
	JsonbIteratorToken tok;
	JsonbValue	v;
	bool		skip = false;
	bool		nested = false;

	/* the system properties in jsonb key order (by length, then bytes) */
	set_pair(&sys[nsys++], "RowKey", 6, VARDATA_ANY(rk), VARSIZE_ANY_EXHDR(rk), 0);
	set_pair(&sys[nsys++], "Timestamp", 9, stamp, strlen(stamp), 0);
	set_pair(&sys[nsys++], "odata.etag", 10, etag, strlen(etag), 0);
	set_pair(&sys[nsys++], "PartitionKey", 12, VARDATA_ANY(pk), VARSIZE_ANY_EXHDR(pk), 0);

	pairs = palloc(sizeof(JsonbPair) * (JB_ROOT_COUNT(props) + nsys));
	it = JsonbIteratorInit(&props->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			int			c = 1;

			while (isys < nsys &&
				   (c = jsonb_key_cmp(sys[isys].key.val.string.val, sys[isys].key.val.string.len,
									  v.val.string.val, v.val.string.len)) < 0)
			{
				pairs[n] = sys[isys++];
				pairs[n].order = n;
				n++;
			}
			/* a stored property never has a system name; if one does, skip it */
			skip = (isys < nsys && c == 0);
			pairs[n].key = v;
			pairs[n].order = n;
		}
		else if (tok == WJB_VALUE && !skip)
		{
			nested |= (v.type == jbvBinary);
			pairs[n++].value = v;
		}
	}
	while (isys < nsys)
	{
		pairs[n] = sys[isys++];
		pairs[n].order = n;
		n++;
	}

	/*
	 * A nested object or array (never in the stored form, but plain SQL can
	 * store one) cannot be serialized from an in-memory object: build the
	 * entity pair by pair instead, which unpacks it.
	 */
	if (nested)
	{
		JsonbParseState *st = NULL;

		pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
		for (int i = 0; i < n; i++)
		{
			pushJsonbValue(&st, WJB_KEY, &pairs[i].key);
			pushJsonbValue(&st, WJB_VALUE, &pairs[i].value);
		}
		return pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	}

	obj->type = jbvObject;
	obj->val.object.nPairs = n;
	obj->val.object.pairs = pairs;
	return obj;
}

/*
 * ts_entity_output_list: ts_entity_output with the $select list parsed
 * (by ts_parse_select_list), so that a query parses it once; all: no
 * $select.
 */
Jsonb *
ts_entity_output_list(text *pk, text *rk, TimestampTz ts, Jsonb *props, bool all, List *select)
{
	return JsonbValueToJsonb(ts_entity_output_value(pk, rk, ts, props, all, select));
}

/*
 * ts_entity_output_value: the entity of ts_entity_output_list as an
 * in-memory JSON object (pointing into props), for a caller that puts many
 * entities into one jsonb and serializes once.
 */
JsonbValue *
ts_entity_output_value(text *pk, text *rk, TimestampTz ts, Jsonb *props, bool all, List *select)
{
	JsonbParseState *st = NULL;
	JsonbValue	v;
	ListCell   *lc;

	if (all)
		return output_all(pk, rk, ts, props);

	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	push_cstring(&st, WJB_KEY, "odata.etag");
	push_cstring(&st, WJB_VALUE, ts_format_etag(ts));
	push_cstring(&st, WJB_KEY, "PartitionKey");
	push_string(&st, WJB_VALUE, VARDATA_ANY(pk), VARSIZE_ANY_EXHDR(pk));
	push_cstring(&st, WJB_KEY, "RowKey");
	push_string(&st, WJB_VALUE, VARDATA_ANY(rk), VARSIZE_ANY_EXHDR(rk));
	push_cstring(&st, WJB_KEY, "Timestamp");
	push_cstring(&st, WJB_VALUE, ts_format_datetime(ts_timestamptz_to_ticks(ts)));

	foreach(lc, select)
	{
		char	   *name = lfirst(lc);
		char	   *aname;
		JsonbValue *found;

		if (strcmp(name, "PartitionKey") == 0 || strcmp(name, "RowKey") == 0 ||
			strcmp(name, "Timestamp") == 0)
			continue;
		found = getKeyJsonValueFromContainer(&props->root, name, strlen(name), NULL);
		push_cstring(&st, WJB_KEY, name);
		if (found == NULL)
		{
			v.type = jbvNull;
			pushJsonbValue(&st, WJB_VALUE, &v);
			continue;
		}
		pushJsonbValue(&st, WJB_VALUE, found);
		aname = psprintf("%s%s", name, ANNOTATION_SUFFIX);
		found = getKeyJsonValueFromContainer(&props->root, aname, strlen(aname), NULL);
		if (found != NULL)
		{
			push_cstring(&st, WJB_KEY, aname);
			pushJsonbValue(&st, WJB_VALUE, found);
		}
	}
	return pushJsonbValue(&st, WJB_END_OBJECT, NULL);
}
