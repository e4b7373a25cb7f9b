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
 * Every write runs this, so it is done in one pass (issue 12): the members
 * are read straight from the jsonb's binary form (no iterator, no copies),
 * a value already in canonical form (the usual case) is kept as it is, by
 * pointer, and checked without being converted (a Double of at most 15
 * significant digits, a DateTime or Int64 in the service's text, lower-case
 * Guids, base64 with clear trailing bits, ASCII names and keys), and the
 * stored jsonb is written directly from the members, already in key order.
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

#include "edmtext.h"
#include "tablestore.h"

#define ANNOTATION_SUFFIX	"@odata.type"
#define ANNOTATION_SUFFIX_LEN (sizeof(ANNOTATION_SUFFIX) - 1)

/* The names of the Edm types, by TsEdmType, and their lengths. */
#define EDM_TYPE(s) {s, sizeof(s) - 1}
static const struct
{
	const char *name;
	int			len;
}			edm_types[] = {
	EDM_TYPE("Edm.String"), EDM_TYPE("Edm.Int32"), EDM_TYPE("Edm.Int64"), EDM_TYPE("Edm.Double"),
	EDM_TYPE("Edm.Boolean"), EDM_TYPE("Edm.DateTime"), EDM_TYPE("Edm.Guid"), EDM_TYPE("Edm.Binary")
};

/* What a top-level member of an entity is to validation. */
typedef enum MemberRole
{
	M_PROPERTY,					/* a custom property (perhaps null: absent) */
	M_ANNOTATION,				/* "Name@odata.type" */
	M_SKIPPED					/* a key, Timestamp, their annotations, odata.* */
} MemberRole;

/*
 * One top-level member of an entity object, read straight from the jsonb's
 * binary form: name and value point into it.
 */
typedef struct Member
{
	const char *name;
	int			namelen;
	MemberRole	role;
	int			annotation;		/* index of the member "name@odata.type", or -1 */
	JsonbValue	value;			/* as given; nested objects and arrays as jbvBinary */
	JsonbValue	canon;			/* what is stored under this name; jbvNull: nothing */
} Member;

/*
 * The members of an entity object, in jsonb's key order (shorter names
 * first, then bytewise), with where the system members are, and the
 * annotations the stored form adds that the caller did not give.
 */
typedef struct Members
{
	Member	   *m;
	int			n;
	int			pk;				/* index of PartitionKey, or -1; and so on */
	int			rk;
	int			ts;
	int			ts_annotation;
	JsonbPair  *added;			/* added annotations, in key order */
	int			nadded;
} Members;

/* Whether a character is forbidden in keys. */
static inline bool
key_char_forbidden(pg_wchar c)
{
	return c == '/' || c == '\\' || c == '#' || c == '?' ||
		c <= 0x1F || (c >= 0x7F && c <= 0x9F);
}

/*
 * The length of the prefix of s that is ASCII with no character forbidden
 * in keys: the common case, checked without decoding.
 */
static inline int
key_ascii_prefix(const char *s, int len)
{
	int			i = 0;

	while (i < len)
	{
		unsigned char c = (unsigned char) s[i];

		if (c <= 0x1F || c >= 0x7F || c == '/' || c == '\\' || c == '#' || c == '?')
			break;
		i++;
	}
	return i;
}

/*
 * Whether s[from..len) has a forbidden character, decoding each (from is
 * the start of a character).
 */
static bool
key_has_forbidden(const char *s, int from, int len)
{
	const unsigned char *p = (const unsigned char *) s + from;
	const unsigned char *end = (const unsigned char *) s + len;

	while (p < end)
	{
		if (key_char_forbidden(utf8_to_unicode(p)))
			return true;
		p += pg_utf_mblen(p);
	}
	return false;
}

/*
 * ts_key_is_valid: whether a value may be a PartitionKey or RowKey: no
 * forbidden characters, at most 512 UTF-16 code units.
 */
bool
ts_key_is_valid(const char *s, int len)
{
	int			ascii = key_ascii_prefix(s, len);

	if (ascii < len && key_has_forbidden(s, ascii, len))
		return false;
	return (ascii == len ? len : ts_utf16_length(s, len)) <= TS_MAX_KEY_UTF16;
}

/*
 * Check a key as ts_validate_key does; returns its length in UTF-16 code
 * units, for the entity size.
 */
static int
validate_key(const char *name, const char *s, int len)
{
	int			ascii = key_ascii_prefix(s, len);
	int			units;

	if (ascii < len && key_has_forbidden(s, ascii, len))
		ts_ereport(ERROR, TS_OutOfRangeInput,
				   errmsg("%s contains a forbidden character", name),
				   errhint("Keys cannot contain /, \\, #, ?, or control characters U+0000 to U+001F and U+007F to U+009F."));
	units = (ascii == len) ? len : ts_utf16_length(s, len);
	if (units > TS_MAX_KEY_UTF16)
		ts_ereport(ERROR, TS_PropertyValueTooLarge,
				   errmsg("%s is longer than %d UTF-16 code units", name, TS_MAX_KEY_UTF16));
	return units;
}

/*
 * ts_validate_key: check a PartitionKey or RowKey value as ts_key_is_valid
 * does, with the service's error for each way it can be wrong.
 */
void
ts_validate_key(const char *name, const char *s, int len)
{
	(void) validate_key(name, s, len);
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

/*
 * Order of keys in a jsonb object: shorter first, then bytewise (names are
 * short and mostly differ early: compared inline).
 */
static inline int
jsonb_key_cmp(const char *a, int alen, const char *b, int blen)
{
	if (alen != blen)
		return alen < blen ? -1 : 1;
	for (int i = 0; i < alen; i++)
		if (a[i] != b[i])
			return (unsigned char) a[i] < (unsigned char) b[i] ? -1 : 1;
	return 0;
}

/* Index among m[0..n) (in jsonb key order) of the member named s, or -1. */
static int
find_member(const Member *m, int n, const char *s, int len)
{
	int			lo = 0;
	int			hi = n - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int			c = jsonb_key_cmp(m[mid].name, m[mid].namelen, s, len);

		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/* Whether a member's name is the C string s (of length len). */
#define NAME_IS(m, s, len) ((m)->namelen == (len) && memcmp((m)->name, (s), (len)) == 0)

/*
 * Read the top-level members of a jsonb object from its binary form, in
 * one pass over its entries (keys, then values, as jsonb stores them):
 * each member's role, its annotation and where the system members are.
 * The caller has checked that it is an object.
 */
static void
read_members(Jsonb *obj, Members *ms)
{
	JsonbContainer *c = &obj->root;
	/* (stored props that plain SQL made an array or scalar have no members) */
	int			n = JsonContainerIsObject(c) ? JsonContainerSize(c) : 0;
	char	   *base = (char *) &c->children[2 * n];
	uint32		off = 0;
	Member	   *m = palloc(sizeof(Member) * Max(n, 1));

	ms->m = m;
	ms->n = n;
	ms->pk = ms->rk = ms->ts = ms->ts_annotation = -1;
	ms->added = NULL;
	ms->nadded = 0;

	for (int i = 0; i < n; i++)
	{
		uint32		start = off;

		JBE_ADVANCE_OFFSET(off, c->children[i]);
		m[i].name = base + start;
		m[i].namelen = off - start;
		m[i].annotation = -1;
		m[i].canon.type = jbvNull;
		m[i].role = M_PROPERTY;
		if (is_annotation(m[i].name, m[i].namelen))
		{
			/* the annotated name is shorter, so it comes before */
			int			p = find_member(m, i, m[i].name, m[i].namelen - ANNOTATION_SUFFIX_LEN);

			m[i].role = M_ANNOTATION;
			if (p >= 0)
				m[p].annotation = i;
			if (NAME_IS(&m[i], "Timestamp" ANNOTATION_SUFFIX, 20))
				ms->ts_annotation = i;
		}
		else if (m[i].namelen >= 6 && memcmp(m[i].name, "odata.", 6) == 0)
			m[i].role = M_SKIPPED;	/* metadata such as odata.etag */
		else if (NAME_IS(&m[i], "RowKey", 6))
			ms->rk = i;
		else if (NAME_IS(&m[i], "Timestamp", 9))
			ms->ts = i;
		else if (NAME_IS(&m[i], "PartitionKey", 12))
			ms->pk = i;
	}
	for (int i = 0; i < n; i++)
	{
		JEntry		je = c->children[n + i];
		uint32		start = off;
		JsonbValue *v = &m[i].value;

		JBE_ADVANCE_OFFSET(off, je);
		switch (je & JENTRY_TYPEMASK)
		{
			case JENTRY_ISSTRING:
				v->type = jbvString;
				v->val.string.val = base + start;
				v->val.string.len = off - start;
				break;
			case JENTRY_ISNUMERIC:
				v->type = jbvNumeric;
				v->val.numeric = (Numeric) (base + INTALIGN(start));
				break;
			case JENTRY_ISBOOL_FALSE:
			case JENTRY_ISBOOL_TRUE:
				v->type = jbvBool;
				v->val.boolean = ((je & JENTRY_TYPEMASK) == JENTRY_ISBOOL_TRUE);
				break;
			case JENTRY_ISNULL:
				v->type = jbvNull;
				break;
			default:
				/* a nested object or array */
				v->type = jbvBinary;
				v->val.binary.data = (JsonbContainer *) (base + INTALIGN(start));
				v->val.binary.len = off - INTALIGN(start);
				break;
		}
	}
}

/* The annotation member of m, if it has one that is not taken. */
static Member *
annotation_of(Members *ms, const Member *m)
{
	if (m->annotation < 0 || ms->m[m->annotation].role != M_ANNOTATION)
		return NULL;
	return &ms->m[m->annotation];
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
					  edm_types[type].name, value_text_for_error(&m->value),
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
 * Whether text that parse_int64_strict accepted is how INT64_FORMAT writes
 * its value: no '+', no leading zeros, no "-0".
 */
static bool
int64_text_is_canonical(const char *s, int len)
{
	if (s[0] == '+')
		return false;
	if (s[0] == '-')
		return s[1] != '0';
	return s[0] != '0' || len == 1;
}

static void
set_string(JsonbValue *v, const char *s, int len)
{
	v->type = jbvString;
	v->val.string.val = (char *) s;
	v->val.string.len = len;
}

/*
 * Set the canonical form of a finite or special double; returns whether
 * the JSON form needs the Edm.Double annotation.  given: the text of the
 * JSON number it came from, if it did: when that is the shortest
 * round-trip text of d already, the number is stored as given.
 */
static bool
set_double(JsonbValue *out, double d, const JsonbValue *given, const char *given_text)
{
	char		buf[DOUBLE_SHORTEST_DECIMAL_LEN];

	if (isnan(d))
	{
		set_string(out, "NaN", 3);
		return true;
	}
	if (isinf(d))
	{
		if (d > 0)
			set_string(out, "Infinity", 8);
		else
			set_string(out, "-Infinity", 9);
		return true;
	}
	if (d == 0 && signbit(d))
	{
		set_string(out, "-0", 2);
		return true;
	}
	double_to_shortest_decimal_buf(d, buf);
	if (given_text != NULL && strcmp(buf, given_text) == 0)
	{
		/* numeric_in of buf would give the number as given */
		*out = *given;
		return strchr(given_text, '.') == NULL;
	}
	out->type = jbvNumeric;
	out->val.numeric = DatumGetNumeric(DirectFunctionCall3(numeric_in, CStringGetDatum(buf),
														   ObjectIdGetDatum(InvalidOid),
														   Int32GetDatum(-1)));
	/* numeric_out shows a '.' exactly when the value has a fraction */
	return strchr(numeric_text(out), '.') == NULL;
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
 * Parse a Double given as JSON: a number (whose numeric_out text is
 * number_text), or (annotated) a string holding a number or
 * NaN/Infinity/-Infinity.
 */
static bool
parse_double_value(const JsonbValue *v, char *number_text, double *d)
{
	char	   *s;
	char	   *end;

	if (v->type == jbvNumeric)
		s = number_text;
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
 * Whether the text of a JSON number (numeric_out's: [-]digits[.digits]) is
 * already what double_to_shortest_decimal_buf writes for the double nearest
 * to it, so that the number is stored as given without converting it to a
 * double and back.  That holds for at most 15 significant digits (DBL_DIG:
 * the double nearest to such a decimal has it as its only decimal of 15 or
 * fewer digits, so as its shortest), no trailing zero in the fraction
 * (which the shortest text never has), and a magnitude in [1e-4, 1e15),
 * where that function writes fixed-point, not exponent, notation.  Other
 * numbers take the general path.  *point: whether the text has a '.'.
 */
static bool
double_text_is_shortest(const char *s, bool *point)
{
	const char *digits;
	int			intlen;
	int			sig;

	*point = false;
	if (*s == '-')
		s++;
	digits = s;
	while (*s >= '0' && *s <= '9')
		s++;
	intlen = s - digits;
	if (intlen == 0 || intlen > 15 || (digits[0] == '0' && intlen > 1))
		return false;
	sig = (digits[0] == '0') ? 0 : intlen;
	if (*s == '.')
	{
		const char *frac = ++s;
		int			zeros = 0;

		*point = true;
		while (*s >= '0' && *s <= '9')
			s++;
		if (s == frac || s[-1] == '0')
			return false;		/* no digits, or a trailing zero */
		if (sig == 0)
		{
			/* 0.000ddd: below 1e-4 with a fourth zero */
			while (frac[zeros] == '0')
				zeros++;
			if (zeros > 3)
				return false;
		}
		sig += (s - frac) - zeros;
	}
	else if (sig == 0)
		return false;			/* zero */
	return *s == '\0' && sig <= 15;
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
 * Whether DateTime text that ts_parse_datetime accepted is what
 * edm_format_datetime writes for its value: 'T' and 'Z' in upper case, and
 * a fraction, if any, without trailing zeros (the other fields have a fixed
 * number of digits either way).
 */
static bool
datetime_is_canonical(const char *s, int len)
{
	if (s[10] != 'T' || s[len - 1] != 'Z')
		return false;
	return len == 20 || (s[19] == '.' && s[len - 2] != '0');
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
 * Annotate property m of type in the stored form: its own annotation
 * member if the caller gave one, else an added one.
 */
static void
annotate(Members *ms, Member *m, Member *annotation, TsEdmType type)
{
	JsonbPair  *pair;

	if (annotation != NULL)
	{
		set_string(&annotation->canon, edm_types[type].name, edm_types[type].len);
		return;
	}
	/* properties come in key order, and so do their annotations */
	if (ms->added == NULL)
		ms->added = palloc(sizeof(JsonbPair) * ms->n);
	pair = &ms->added[ms->nadded++];
	set_string(&pair->key, psprintf("%.*s%s", m->namelen, m->name, ANNOTATION_SUFFIX),
			   m->namelen + ANNOTATION_SUFFIX_LEN);
	set_string(&pair->value, edm_types[type].name, edm_types[type].len);
}

/*
 * Whether a JSON string is word (lower-case ASCII) in any letter case,
 * exactly: no blanks or other characters around it.
 */
static bool
bool_text_is(const JsonbValue *v, const char *word)
{
	return v->val.string.len == (int) strlen(word) &&
		pg_strncasecmp(v->val.string.val, word, v->val.string.len) == 0;
}

/*
 * Check one property's value against its type and set its canonical value
 * (m->canon) and annotation.  A value already in canonical form is kept as
 * it is, pointing into the input.  Returns the value's size by the
 * service's formula.
 */
static int64
canonicalize_property(Members *ms, Member *m)
{
	const JsonbValue *v = &m->value;
	Member	   *annotation = annotation_of(ms, m);
	TsEdmType	type;
	bool		needs_annotation = false;
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
		for (t = 0; t < (int) lengthof(edm_types); t++)
			if (edm_types[t].len == a->val.string.len &&
				memcmp(edm_types[t].name, a->val.string.val, a->val.string.len) == 0)
				break;
		if (t == (int) lengthof(edm_types))
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
			m->canon = *v;
			break;

		case EDM_INT32:
		case EDM_INT64:
			{
				const char *txt;
				int			txtlen;
				int64		i;

				if (v->type == jbvNumeric && type == EDM_INT32)
				{
					/* an integral number in range is stored as it is */
					bool		error = false;

					/* (an inferred Int32 has no fraction: that made it one) */
					if (annotation != NULL && numeric_has_fraction(v))
						invalid_value(m, type);
					(void) numeric_int4_opt_error(v->val.numeric, &error);
					if (error)
						invalid_value(m, type);
					m->canon = *v;
					break;
				}
				if (v->type == jbvNumeric)
				{
					txt = numeric_text(v);
					txtlen = strlen(txt);
				}
				else if (v->type == jbvString)
				{
					txt = v->val.string.val;
					txtlen = v->val.string.len;
				}
				else
					invalid_value(m, type);
				if (!parse_int64_strict(txt, txtlen, &i) ||
					(type == EDM_INT32 && (i < PG_INT32_MIN || i > PG_INT32_MAX)))
					invalid_value(m, type);
				if (type == EDM_INT32)
				{
					m->canon.type = jbvNumeric;
					m->canon.val.numeric = int64_to_numeric(i);
				}
				else
				{
					if (v->type == jbvString && int64_text_is_canonical(txt, txtlen))
						m->canon = *v;
					else
					{
						char	   *s = psprintf(INT64_FORMAT, i);

						set_string(&m->canon, s, strlen(s));
					}
					needs_annotation = true;
				}
				break;
			}

		case EDM_DOUBLE:
			{
				double		d;
				char	   *text = NULL;
				bool		point;

				if (v->type == jbvNumeric)
				{
					text = numeric_text(v);
					if (double_text_is_shortest(text, &point))
					{
						/* stored as given; annotated if it shows no point */
						m->canon = *v;
						needs_annotation = !point;
						break;
					}
				}
				if (!parse_double_value(v, text, &d))
					invalid_value(m, type);
				needs_annotation = set_double(&m->canon, d, v, text);
				break;
			}

		case EDM_BOOLEAN:
			if (v->type == jbvString &&
				(bool_text_is(v, "true") || bool_text_is(v, "false")))
			{
				/*
				 * "true" or "false" in any letter case, annotated (a string
				 * is typed Boolean only by its annotation): the service
				 * takes them, and the JavaScript SDK and Storage Explorer
				 * send them.  Stored as the Boolean, unannotated.
				 */
				m->canon.type = jbvBool;
				m->canon.val.boolean = bool_text_is(v, "true");
				break;
			}
			if (v->type != jbvBool)
				invalid_value(m, type);
			m->canon = *v;
			break;

		case EDM_DATETIME:
			{
				int64		ticks;
				char		buf[EDM_DATETIME_BUFLEN];
				int			buflen;

				if (v->type != jbvString ||
					!ts_parse_datetime(v->val.string.val, v->val.string.len, &ticks))
					invalid_value(m, type);
				if (datetime_is_canonical(v->val.string.val, v->val.string.len))
					m->canon = *v;
				else
				{
					edm_format_datetime(ticks, buf);
					buflen = strlen(buf);
					set_string(&m->canon, pnstrdup(buf, buflen), buflen);
				}
				needs_annotation = true;
				break;
			}

		case EDM_GUID:
			{
				uint8		g[16];

				if (v->type != jbvString ||
					!ts_parse_guid(v->val.string.val, v->val.string.len, g))
					invalid_value(m, type);
				if (guid_is_canonical(v->val.string.val, v->val.string.len))
					m->canon = *v;
				else
				{
					char	   *s = ts_format_guid(g);

					set_string(&m->canon, s, strlen(s));
				}
				needs_annotation = true;
				break;
			}

		case EDM_BINARY:
			{
				int			nbytes;

				if (v->type != jbvString ||
					!ts_check_base64(v->val.string.val, v->val.string.len, &nbytes))
					invalid_value(m, type);
				if (nbytes > TS_MAX_BINARY_BYTES)
					ts_ereport(ERROR, TS_PropertyValueTooLarge,
							   errmsg("value of property \"%s\" is longer than %d bytes",
									  ts_clip(m->name, m->namelen), TS_MAX_BINARY_BYTES));
				if (base64_is_canonical(v->val.string.val, v->val.string.len))
					m->canon = *v;
				else
				{
					/* decode and encode again, so that the stored form is canonical */
					char	   *raw = palloc(pg_b64_dec_len(v->val.string.len) + 1);
					char	   *enc;
					int			enclen;

					nbytes = pg_b64_decode(v->val.string.val, v->val.string.len, raw,
										   pg_b64_dec_len(v->val.string.len));
					if (nbytes < 0)
						invalid_value(m, type);
					enc = palloc(pg_b64_enc_len(nbytes) + 1);
					enclen = pg_b64_encode(raw, nbytes, enc, pg_b64_enc_len(nbytes));
					set_string(&m->canon, enc, enclen);
				}
				len = nbytes;
				needs_annotation = true;
				break;
			}
	}

	if (needs_annotation)
		annotate(ms, m, annotation, type);

	return value_size(type, len);
}

/*
 * Check the name of a custom property; returns its length in UTF-16 code
 * units.  A name of ASCII letters, digits and '_' is checked in one pass.
 */
static int
check_property_name(const Member *m)
{
	const unsigned char *s = (const unsigned char *) m->name;
	int			len = m->namelen;
	int			i;
	int			units;

	bool		plain = false;	/* ASCII letters, digits and '_', not a digit first */

	if (len > 0 && (((s[0] | 0x20) >= 'a' && (s[0] | 0x20) <= 'z') || s[0] == '_'))
	{
		for (i = 1; i < len; i++)
		{
			unsigned char b = s[i];

			if (!(((b | 0x20) >= 'a' && (b | 0x20) <= 'z') || b == '_' || (b >= '0' && b <= '9')))
				break;
		}
		plain = (i == len);
	}
	units = plain ? len : ts_utf16_length(m->name, len);
	if (units > TS_MAX_NAME_CHARS)
		ts_ereport(ERROR, TS_PropertyNameTooLong,
				   errmsg("property name \"%.*s...\" is longer than %d characters",
						  pg_mbcliplen(m->name, m->namelen, 40), m->name, TS_MAX_NAME_CHARS));
	if (!plain && !ts_is_valid_property_name(m->name, m->namelen))
		ts_ereport(ERROR, TS_PropertyNameInvalid,
				   errmsg("property name \"%s\" is invalid", ts_clip(m->name, m->namelen)),
				   errhint("A property name starts with a letter or underscore, followed by letters, digits or underscores."));
	return units;
}

static void check_limits(int nprops, int64 size);

/*
 * Check and canonicalize the custom properties among the members (keys,
 * Timestamp and their annotations already marked M_SKIPPED); returns the
 * property count and their share of the entity size.
 */
static void
canonical_properties(Members *ms, int *nprops, int64 *size)
{
	int			count = 0;
	int64		total = 0;

	/*
	 * Count the properties first, so that an entity with far too many is
	 * refused before any work per property.
	 */
	for (int i = 0; i < ms->n; i++)
		if (ms->m[i].role == M_PROPERTY && ms->m[i].value.type != jbvNull)
			count++;
	if (count > TS_MAX_PROPERTIES)
		check_limits(count, 0);
	count = 0;

	for (int i = 0; i < ms->n; i++)
	{
		Member	   *m = &ms->m[i];
		int			nameunits;

		if (m->role != M_PROPERTY)
			continue;
		CHECK_FOR_INTERRUPTS();
		nameunits = check_property_name(m);
		if (m->value.type == jbvNull)
			continue;			/* null means absent */
		total += 8 + 2 * nameunits + canonicalize_property(ms, m);
		count++;
	}

	/* An annotation must be well-formed even when its property is absent. */
	for (int i = 0; i < ms->n; i++)
	{
		Member	   *a = &ms->m[i];

		if (a->role == M_ANNOTATION && a->value.type != jbvString)
			ts_ereport(ERROR, TS_InvalidInput,
					   errmsg("annotation \"%s\" is not a string", ts_clip(a->name, a->namelen)));
	}

	*nprops = count;
	*size = total;
}

/*
 * The jsonb object of pairs (keys unique and in jsonb's order, values
 * strings, numbers or Booleans), written straight into jsonb's binary form
 * as JsonbValueToJsonb would write it, with one allocation of the exact
 * size: keys, then values, every JB_OFFSET_STRIDE'th entry an offset,
 * numbers aligned.
 */
static Jsonb *
flat_object_jsonb(const JsonbPair *pairs, int n)
{
	Size		datalen = 0;
	Jsonb	   *jb;
	JEntry	   *entries;
	char	   *base;
	char	   *p;

	for (int i = 0; i < n; i++)
	{
		datalen += pairs[i].key.val.string.len;
		if (pairs[i].value.type == jbvString)
			datalen += pairs[i].value.val.string.len;
		else if (pairs[i].value.type == jbvNumeric)
			datalen += VARSIZE_ANY(pairs[i].value.val.numeric) + sizeof(int32) - 1;
	}
	if (datalen > JENTRY_OFFLENMASK)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("total size of jsonb object elements exceeds the maximum of %u bytes",
						JENTRY_OFFLENMASK)));
	jb = palloc(VARHDRSZ + sizeof(uint32) + 2 * n * sizeof(JEntry) + datalen);
	jb->root.header = (uint32) n | JB_FOBJECT;
	entries = jb->root.children;
	base = p = (char *) &entries[2 * n];

	for (int i = 0; i < n; i++)
	{
		const JsonbValue *k = &pairs[i].key;
		JEntry		meta;

		memcpy(p, k->val.string.val, k->val.string.len);
		p += k->val.string.len;
		meta = JENTRY_ISSTRING | k->val.string.len;
		if (i % JB_OFFSET_STRIDE == 0)
			meta = JENTRY_ISSTRING | (uint32) (p - base) | JENTRY_HAS_OFF;
		entries[i] = meta;
	}
	for (int i = 0; i < n; i++)
	{
		const JsonbValue *v = &pairs[i].value;
		JEntry		meta;

		switch (v->type)
		{
			case jbvString:
				memcpy(p, v->val.string.val, v->val.string.len);
				p += v->val.string.len;
				meta = JENTRY_ISSTRING | v->val.string.len;
				break;
			case jbvNumeric:
				{
					/* aligned from the start of the datum, as jsonb pads */
					int			at = p - (char *) jb;
					int			pad = INTALIGN(at) - at;
					int			numlen = VARSIZE_ANY(v->val.numeric);

					memset(p, 0, pad);
					memcpy(p + pad, v->val.numeric, numlen);
					p += pad + numlen;
					meta = JENTRY_ISNUMERIC | (pad + numlen);
					break;
				}
			case jbvBool:
				meta = v->val.boolean ? JENTRY_ISBOOL_TRUE : JENTRY_ISBOOL_FALSE;
				break;
			default:
				elog(ERROR, "unexpected jsonb value type %d in a stored property", (int) v->type);
				meta = 0;		/* keep the compiler quiet */
		}
		if ((i + n) % JB_OFFSET_STRIDE == 0)
			meta = (meta & JENTRY_TYPEMASK) | (uint32) (p - base) | JENTRY_HAS_OFF;
		entries[n + i] = meta;
	}
	SET_VARSIZE(jb, p - (char *) jb);
	return jb;
}

/*
 * The stored properties: the canonical values and annotations of the
 * members, which come in key order, merged with the added annotations,
 * which do too.
 */
static Jsonb *
stored_properties(Members *ms)
{
	JsonbPair  *pairs = palloc(sizeof(JsonbPair) * (ms->n + ms->nadded + 1));
	int			n = 0;
	int			j = 0;

	for (int i = 0; i < ms->n; i++)
	{
		Member	   *m = &ms->m[i];

		if (m->role == M_SKIPPED || m->canon.type == jbvNull)
			continue;
		while (j < ms->nadded &&
			   jsonb_key_cmp(ms->added[j].key.val.string.val, ms->added[j].key.val.string.len,
							 m->name, m->namelen) < 0)
			pairs[n++] = ms->added[j++];
		set_string(&pairs[n].key, m->name, m->namelen);
		pairs[n++].value = m->canon;
	}
	while (j < ms->nadded)
		pairs[n++] = ms->added[j++];
	return flat_object_jsonb(pairs, n);
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
 * Take the key member at index i (-1: absent) out of the entity, checking
 * it; *units: its length in UTF-16 code units.
 */
static text *
take_key(Members *ms, int i, const char *keyname, int *units)
{
	Member	   *m;
	Member	   *a;

	if (i < 0 || ms->m[i].value.type == jbvNull)
		ts_ereport(ERROR, TS_PropertiesNeedValue,
				   errmsg("%s is missing or null", keyname),
				   errhint("Every entity needs a string PartitionKey and RowKey; the empty string is allowed."));
	m = &ms->m[i];
	a = annotation_of(ms, m);
	if (m->value.type != jbvString ||
		(a != NULL && (a->value.type != jbvString || a->value.val.string.len != 10 ||
					   memcmp(a->value.val.string.val, "Edm.String", 10) != 0)))
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("%s must be a string", keyname));
	*units = validate_key(keyname, m->value.val.string.val, m->value.val.string.len);
	m->role = M_SKIPPED;
	if (a != NULL)
		a->role = M_SKIPPED;
	return cstring_to_text_with_len(m->value.val.string.val, m->value.val.string.len);
}

/*
 * ts_entity_from_json: validate a caller's entity and bring it into the
 * stored form.
 *
 * One pass over the jsonb's binary form reads the members; each property
 * is checked and, if already canonical (the common case), kept as given;
 * the stored form is then written directly.
 */
TsEntity *
ts_entity_from_json(Jsonb *entity)
{
	TsEntity   *e = palloc0(sizeof(TsEntity));
	Members		ms;
	int			pkunits;
	int			rkunits;

	if (!JB_ROOT_IS_OBJECT(entity) || JB_ROOT_IS_SCALAR(entity))
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("entity must be a JSON object"));

	read_members(entity, &ms);
	e->partition_key = take_key(&ms, ms.pk, "PartitionKey", &pkunits);
	e->row_key = take_key(&ms, ms.rk, "RowKey", &rkunits);
	/* the server sets Timestamp */
	if (ms.ts >= 0)
		ms.m[ms.ts].role = M_SKIPPED;
	if (ms.ts_annotation >= 0)
		ms.m[ms.ts_annotation].role = M_SKIPPED;

	canonical_properties(&ms, &e->nprops, &e->size);
	e->size += 4 + 2 * (pkunits + rkunits);
	check_limits(e->nprops, e->size);
	e->props = stored_properties(&ms);
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
	Members		ms;
	int			units;

	if (!JB_ROOT_IS_OBJECT(entity) || JB_ROOT_IS_SCALAR(entity))
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("entity must be a JSON object"));
	read_members(entity, &ms);
	e->partition_key = take_key(&ms, ms.pk, "PartitionKey", &units);
	e->row_key = take_key(&ms, ms.rk, "RowKey", &units);
	return e;
}

/*
 * ts_entity_check_limits: check stored-form properties (the result of a
 * merge) against the property count and size limits.
 */
void
ts_entity_check_limits(Jsonb *props, int64 key_size)
{
	Members		ms;
	int			nprops;
	int64		size;

	read_members(props, &ms);
	canonical_properties(&ms, &nprops, &size);
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
 * ts_entity_output: an entity as the service returns it: without a $select
 * list, the system properties, odata.etag and every stored property; with
 * one, odata.etag and exactly the properties it names (PartitionKey, RowKey
 * and Timestamp too only when named), a selected property the entity lacks
 * coming back as null.
 */
Jsonb *
ts_entity_output(text *pk, text *rk, TimestampTz ts, Jsonb *props, const char *select_list)
{
	return ts_entity_output_list(pk, rk, ts, props, select_list == NULL, ts_parse_select_list(select_list));
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
	char	   *stamp = ts_format_stored_timestamp(ts, pk, rk);
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
	char	   *stamp;

	if (all)
		return output_all(pk, rk, ts, props);

	stamp = ts_format_stored_timestamp(ts, pk, rk);
	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	push_cstring(&st, WJB_KEY, "odata.etag");
	push_cstring(&st, WJB_VALUE, ts_etag_from_datetime(stamp));

	/* the system properties only when named, as the service does */
	foreach(lc, select)
	{
		char	   *name = lfirst(lc);
		char	   *aname;
		JsonbValue *found;

		if (strcmp(name, "PartitionKey") == 0 || strcmp(name, "RowKey") == 0)
		{
			text	   *key = name[0] == 'P' ? pk : rk;

			push_cstring(&st, WJB_KEY, name);
			push_string(&st, WJB_VALUE, VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key));
			continue;
		}
		if (strcmp(name, "Timestamp") == 0)
		{
			push_cstring(&st, WJB_KEY, name);
			push_cstring(&st, WJB_VALUE, stamp);
			continue;
		}
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
