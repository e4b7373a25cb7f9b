/*-------------------------------------------------------------------------
 *
 * edmvalue.c
 *	  The Edm types of property values: for each, how a value given as JSON
 *	  is checked and brought into the canonical stored form.
 *
 * ts_edm_types[] is indexed by TsEdmType; each entry has the type's name
 * and its canonicalize function, which takes one property's value (a JSON
 * string, number or Boolean), refuses it with the service's error unless
 * it is a literal of the type, and sets the stored value, whether the
 * stored form annotates it, and its size by the service's formula (see
 * entity.c for the canonical form of each type).  A value already in
 * canonical form (the usual case) is checked without being converted and
 * kept as it is, pointing into the input.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "common/base64.h"
#include "common/shortest_dec.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "tablestore.h"
#include "errors.h"
#include "edm.h"
#include "edmvalue.h"
#include "edmtext.h"

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

static void invalid_value(const TsEdmValue *ev, TsEdmType type) pg_attribute_noreturn();

/* Refuse the value of ev as a literal of type. */
static void
invalid_value(const TsEdmValue *ev, TsEdmType type)
{
	ts_ereport(ERROR, TS_InvalidInput,
			   errmsg("invalid %s value \"%s\" for property \"%s\"",
					  ts_edm_types[type].name, value_text_for_error(ev->given),
					  ts_clip(ev->prop, ev->proplen)));
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
		ts_set_jsonb_string(out, "NaN", 3);
		return true;
	}
	if (isinf(d))
	{
		if (d > 0)
			ts_set_jsonb_string(out, "Infinity", 8);
		else
			ts_set_jsonb_string(out, "-Infinity", 9);
		return true;
	}
	if (d == 0 && signbit(d))
	{
		ts_set_jsonb_string(out, "-0", 2);
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
 * Whether a JSON string is word (lower-case ASCII) in any letter case,
 * exactly: no blanks or other characters around it.
 */
static bool
bool_text_is(const JsonbValue *v, const char *word)
{
	return v->val.string.len == (int) strlen(word) &&
		pg_strncasecmp(v->val.string.val, word, v->val.string.len) == 0;
}

/* Edm.String: a JSON string of at most 32 Ki UTF-16 code units. */
static void
canon_string(TsEdmValue *ev)
{
	const JsonbValue *v = ev->given;
	int64		len;

	if (v->type != jbvString)
		invalid_value(ev, EDM_STRING);
	len = ts_utf16_length(v->val.string.val, v->val.string.len);
	if (len > TS_MAX_STRING_UTF16)
		ts_ereport(ERROR, TS_PropertyValueTooLarge,
				   errmsg("value of property \"%s\" is longer than %d UTF-16 code units",
						  ts_clip(ev->prop, ev->proplen), TS_MAX_STRING_UTF16));
	ev->canon = *v;
	ev->size = 2 * len + 4;
}

/*
 * Edm.Int32 and Edm.Int64: an integral JSON number, or a string holding
 * one in decimal; Int32 is stored as a JSON number, Int64 as annotated
 * decimal text.
 */
static void
canon_integer(TsEdmValue *ev, TsEdmType type)
{
	const JsonbValue *v = ev->given;
	const char *txt;
	int			txtlen;
	int64		i;

	if (v->type == jbvNumeric && type == EDM_INT32)
	{
		/* an integral number in range is stored as it is */
		bool		error = false;

		/* (an inferred Int32 has no fraction: that made it one) */
		if (ev->annotated && numeric_has_fraction(v))
			invalid_value(ev, type);
		(void) numeric_int4_opt_error(v->val.numeric, &error);
		if (error)
			invalid_value(ev, type);
		ev->canon = *v;
		ev->size = 4;
		return;
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
		invalid_value(ev, type);
	if (!parse_int64_strict(txt, txtlen, &i) ||
		(type == EDM_INT32 && (i < PG_INT32_MIN || i > PG_INT32_MAX)))
		invalid_value(ev, type);
	if (type == EDM_INT32)
	{
		ev->canon.type = jbvNumeric;
		ev->canon.val.numeric = int64_to_numeric(i);
		ev->size = 4;
		return;
	}
	if (v->type == jbvString && int64_text_is_canonical(txt, txtlen))
		ev->canon = *v;
	else
	{
		char	   *s = psprintf(INT64_FORMAT, i);

		ts_set_jsonb_string(&ev->canon, s, strlen(s));
	}
	ev->needs_annotation = true;
	ev->size = 8;
}

/* Edm.Int32: see canon_integer. */
static void
canon_int32(TsEdmValue *ev)
{
	canon_integer(ev, EDM_INT32);
}

/* Edm.Int64: see canon_integer. */
static void
canon_int64(TsEdmValue *ev)
{
	canon_integer(ev, EDM_INT64);
}

/*
 * Edm.Double: a JSON number, or (annotated) a string holding a number or
 * NaN, Infinity, -Infinity; stored in the shortest round-trip form.
 */
static void
canon_double(TsEdmValue *ev)
{
	const JsonbValue *v = ev->given;
	double		d;
	char	   *numtext = NULL;
	bool		point;

	ev->size = 8;
	if (v->type == jbvNumeric)
	{
		numtext = numeric_text(v);
		if (double_text_is_shortest(numtext, &point))
		{
			/* stored as given; annotated if it shows no point */
			ev->canon = *v;
			ev->needs_annotation = !point;
			return;
		}
	}
	if (!parse_double_value(v, numtext, &d))
		invalid_value(ev, EDM_DOUBLE);
	ev->needs_annotation = set_double(&ev->canon, d, v, numtext);
}

/* Edm.Boolean: a JSON Boolean, or annotated "true" or "false". */
static void
canon_boolean(TsEdmValue *ev)
{
	const JsonbValue *v = ev->given;

	ev->size = 1;
	if (v->type == jbvString &&
		(bool_text_is(v, "true") || bool_text_is(v, "false")))
	{
		/*
		 * "true" or "false" in any letter case, annotated (a string is
		 * typed Boolean only by its annotation): the service takes them,
		 * and the JavaScript SDK and Storage Explorer send them.  Stored as
		 * the Boolean, unannotated.
		 */
		ev->canon.type = jbvBool;
		ev->canon.val.boolean = bool_text_is(v, "true");
		return;
	}
	if (v->type != jbvBool)
		invalid_value(ev, EDM_BOOLEAN);
	ev->canon = *v;
}

/* Edm.DateTime: the service's ISO 8601 text, fraction trimmed. */
static void
canon_datetime(TsEdmValue *ev)
{
	const JsonbValue *v = ev->given;
	int64		ticks;
	char		buf[EDM_DATETIME_BUFLEN];
	int			buflen;

	if (v->type != jbvString ||
		!ts_parse_datetime(v->val.string.val, v->val.string.len, &ticks))
		invalid_value(ev, EDM_DATETIME);
	if (datetime_is_canonical(v->val.string.val, v->val.string.len))
		ev->canon = *v;
	else
	{
		edm_format_datetime(ticks, buf);
		buflen = strlen(buf);
		ts_set_jsonb_string(&ev->canon, pnstrdup(buf, buflen), buflen);
	}
	ev->needs_annotation = true;
	ev->size = 8;
}

/* Edm.Guid: hyphenated lower-case text. */
static void
canon_guid(TsEdmValue *ev)
{
	const JsonbValue *v = ev->given;
	uint8		g[16];

	if (v->type != jbvString ||
		!ts_parse_guid(v->val.string.val, v->val.string.len, g))
		invalid_value(ev, EDM_GUID);
	if (guid_is_canonical(v->val.string.val, v->val.string.len))
		ev->canon = *v;
	else
	{
		char	   *s = ts_format_guid(g);

		ts_set_jsonb_string(&ev->canon, s, strlen(s));
	}
	ev->needs_annotation = true;
	ev->size = 16;
}

/* Edm.Binary: strict padded base64 of at most 64 KiB. */
static void
canon_binary(TsEdmValue *ev)
{
	const JsonbValue *v = ev->given;
	int			nbytes;

	if (v->type != jbvString ||
		!ts_check_base64(v->val.string.val, v->val.string.len, &nbytes))
		invalid_value(ev, EDM_BINARY);
	if (nbytes > TS_MAX_BINARY_BYTES)
		ts_ereport(ERROR, TS_PropertyValueTooLarge,
				   errmsg("value of property \"%s\" is longer than %d bytes",
						  ts_clip(ev->prop, ev->proplen), TS_MAX_BINARY_BYTES));
	if (base64_is_canonical(v->val.string.val, v->val.string.len))
		ev->canon = *v;
	else
	{
		/* decode and encode again, so that the stored form is canonical */
		char	   *raw = palloc(pg_b64_dec_len(v->val.string.len) + 1);
		char	   *enc;
		int			enclen;

		nbytes = pg_b64_decode(v->val.string.val, v->val.string.len, raw,
							   pg_b64_dec_len(v->val.string.len));
		if (nbytes < 0)
			invalid_value(ev, EDM_BINARY);
		enc = palloc(pg_b64_enc_len(nbytes) + 1);
		enclen = pg_b64_encode(raw, nbytes, enc, pg_b64_enc_len(nbytes));
		ts_set_jsonb_string(&ev->canon, enc, enclen);
	}
	ev->needs_annotation = true;
	ev->size = nbytes + 4;
}

/* The Edm types, by TsEdmType. */
#define EDM_TYPE(s, fn) {s, sizeof(s) - 1, fn}
const TsEdmTypeInfo ts_edm_types[TS_NUM_EDM_TYPES] = {
	[EDM_STRING] = EDM_TYPE("Edm.String", canon_string),
	[EDM_INT32] = EDM_TYPE("Edm.Int32", canon_int32),
	[EDM_INT64] = EDM_TYPE("Edm.Int64", canon_int64),
	[EDM_DOUBLE] = EDM_TYPE("Edm.Double", canon_double),
	[EDM_BOOLEAN] = EDM_TYPE("Edm.Boolean", canon_boolean),
	[EDM_DATETIME] = EDM_TYPE("Edm.DateTime", canon_datetime),
	[EDM_GUID] = EDM_TYPE("Edm.Guid", canon_guid),
	[EDM_BINARY] = EDM_TYPE("Edm.Binary", canon_binary)
};

/*
 * ts_edm_type_by_name: the type an annotation's value (s, len bytes) names,
 * or -1.
 */
int
ts_edm_type_by_name(const char *s, int len)
{
	for (int t = 0; t < TS_NUM_EDM_TYPES; t++)
		if (ts_edm_types[t].len == len && memcmp(ts_edm_types[t].name, s, len) == 0)
			return t;
	return -1;
}

/*
 * ts_edm_type_of_json: the type of an unannotated JSON string, Boolean or
 * number: a number is a Double when it has a fraction, else an Int32.
 */
TsEdmType
ts_edm_type_of_json(const JsonbValue *v)
{
	if (v->type == jbvString)
		return EDM_STRING;
	if (v->type == jbvBool)
		return EDM_BOOLEAN;
	/* numeric_out shows a fraction exactly when the scale is positive */
	return numeric_has_fraction(v) ? EDM_DOUBLE : EDM_INT32;
}
