/*-------------------------------------------------------------------------
 *
 * entity.c
 *	  The input half of entities: validation, typing and the canonical
 *	  stored form (the output half, with $select, is entityout.c and
 *	  entityjson.c; the per-type work is edmvalue.c's ts_edm_types[]).
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

#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "tablestore.h"
#include "errors.h"
#include "edm.h"
#include "entity.h"
#include "edmvalue.h"

#define ANNOTATION_SUFFIX_LEN (sizeof(TS_ANNOTATION_SUFFIX) - 1)

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
		memcmp(name + len - ANNOTATION_SUFFIX_LEN, TS_ANNOTATION_SUFFIX, ANNOTATION_SUFFIX_LEN) == 0;
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
		int			c = ts_jsonb_key_cmp(m[mid].name, m[mid].namelen, s, len);

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
			if (NAME_IS(&m[i], "Timestamp" TS_ANNOTATION_SUFFIX, 20))
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
		ts_set_jsonb_string(&annotation->canon, ts_edm_types[type].name, ts_edm_types[type].len);
		return;
	}
	/* properties come in key order, and so do their annotations */
	if (ms->added == NULL)
		ms->added = palloc(sizeof(JsonbPair) * ms->n);
	pair = &ms->added[ms->nadded++];
	ts_set_jsonb_string(&pair->key, psprintf("%.*s%s", m->namelen, m->name, TS_ANNOTATION_SUFFIX),
			   m->namelen + ANNOTATION_SUFFIX_LEN);
	ts_set_jsonb_string(&pair->value, ts_edm_types[type].name, ts_edm_types[type].len);
}

/*
 * Check one property's value against its type and set its canonical value
 * (m->canon) and annotation: the type is the annotation's, else inferred
 * from the JSON, and the type's entry in ts_edm_types[] does the rest.
 * Returns the value's size by the service's formula.
 */
static int64
canonicalize_property(Members *ms, Member *m)
{
	Member	   *annotation = annotation_of(ms, m);
	TsEdmValue	ev = {0};
	int			type;

	if (m->value.type == jbvBinary)
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("property \"%s\" has a nested object or array value", ts_clip(m->name, m->namelen)),
				   errhint("Property values are strings, numbers, Booleans, or typed strings with a \"%s@odata.type\" annotation.",
						   ts_clip(m->name, m->namelen)));

	if (annotation != NULL)
	{
		const JsonbValue *a = &annotation->value;

		if (a->type != jbvString)
			ts_ereport(ERROR, TS_InvalidInput,
					   errmsg("annotation \"%s\" is not a string", ts_clip(annotation->name, annotation->namelen)));
		type = ts_edm_type_by_name(a->val.string.val, a->val.string.len);
		if (type < 0)
			ts_ereport(ERROR, TS_InvalidInput,
					   errmsg("unrecognized type \"%s\" for property \"%s\"",
							  ts_clip(a->val.string.val, a->val.string.len), ts_clip(m->name, m->namelen)),
					   errhint("The types are Edm.String, Edm.Int32, Edm.Int64, Edm.Double, Edm.Boolean, Edm.DateTime, Edm.Guid and Edm.Binary."));
	}
	else
		type = ts_edm_type_of_json(&m->value);

	ev.given = &m->value;
	ev.annotated = (annotation != NULL);
	ev.prop = m->name;
	ev.proplen = m->namelen;
	ts_edm_types[type].canonicalize(&ev);
	m->canon = ev.canon;
	if (ev.needs_annotation)
		annotate(ms, m, annotation, (TsEdmType) type);
	return ev.size;
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
			   ts_jsonb_key_cmp(ms->added[j].key.val.string.val, ms->added[j].key.val.string.len,
							 m->name, m->namelen) < 0)
			pairs[n++] = ms->added[j++];
		ts_set_jsonb_string(&pairs[n].key, m->name, m->namelen);
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

