/*-------------------------------------------------------------------------
 *
 * entityjson.c
 *	  Entities as JSON text, written straight from the stored row: the
 *	  output of query_entities_json and query_entities_page_json.
 *
 * The jsonb functions build each entity as a jsonb value (system properties
 * merged into the stored ones) that jsonb_out then turns into text, string
 * by string through escape_json.  Here the text is written once, from the
 * keys, the Timestamp and the stored props' binary form, into the caller's
 * buffer: no intermediate jsonb, and strings are escaped a run of plain
 * bytes at a time.  The result is a json value: clients and the HTTP gateway
 * pass it on as it is, and SQL can still take it apart with json's own
 * operators.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "edm.h"
#include "entity.h"

/* Whether byte c must be escaped in a JSON string. */
static inline bool
needs_escape(unsigned char c)
{
	return c < 0x20 || c == '"' || c == '\\';
}

/*
 * Whether any of the 8 bytes of w must be escaped: a byte below 0x20, '"'
 * or '\\' (the bit tricks tell exactly whether such a byte is present).
 */
static inline bool
word_needs_escape(uint64 w)
{
	const uint64 ones = UINT64CONST(0x0101010101010101);
	const uint64 highs = UINT64CONST(0x8080808080808080);
	uint64		quote = w ^ (ones * '"');
	uint64		backslash = w ^ (ones * '\\');

	return (((w - ones * 0x20) & ~w) |
			((quote - ones) & ~quote) |
			((backslash - ones) & ~backslash)) & highs;
}

/*
 * Append s (len bytes of UTF-8) as a JSON string: runs of bytes that need
 * no escape are found 8 bytes at a time and copied whole (an entity's text
 * is mostly such runs: this is the most of writing it).
 */
static void
json_string(StringInfo buf, const char *s, int len)
{
	static const char hex[] = "0123456789abcdef";
	int			start = 0;
	int			i = 0;

	enlargeStringInfo(buf, len + 2);
	buf->data[buf->len++] = '"';
	while (i < len)
	{
		unsigned char c;

		if (i + 8 <= len)
		{
			uint64		w;

			memcpy(&w, s + i, sizeof(w));
			if (!word_needs_escape(w))
			{
				i += 8;
				continue;
			}
		}
		c = (unsigned char) s[i];
		if (!needs_escape(c))
		{
			i++;
			continue;
		}
		if (i > start)
			appendBinaryStringInfo(buf, s + start, i - start);
		start = ++i;
		switch (c)
		{
			case '"':
				appendBinaryStringInfo(buf, "\\\"", 2);
				break;
			case '\\':
				appendBinaryStringInfo(buf, "\\\\", 2);
				break;
			case '\b':
				appendBinaryStringInfo(buf, "\\b", 2);
				break;
			case '\f':
				appendBinaryStringInfo(buf, "\\f", 2);
				break;
			case '\n':
				appendBinaryStringInfo(buf, "\\n", 2);
				break;
			case '\r':
				appendBinaryStringInfo(buf, "\\r", 2);
				break;
			case '\t':
				appendBinaryStringInfo(buf, "\\t", 2);
				break;
			default:
				{
					char		u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};

					appendBinaryStringInfo(buf, u, 6);
				}
				break;
		}
	}
	if (len > start)
		appendBinaryStringInfo(buf, s + start, len - start);
	appendStringInfoCharMacro(buf, '"');
}

/* Append a JSON value of a jsonb container (scalar, or nested as stored). */
static void
json_value(StringInfo buf, const JsonbValue *v)
{
	switch (v->type)
	{
		case jbvString:
			json_string(buf, v->val.string.val, v->val.string.len);
			break;
		case jbvNumeric:
			appendStringInfoString(buf, DatumGetCString(DirectFunctionCall1(numeric_out,
																			NumericGetDatum(v->val.numeric))));
			break;
		case jbvBool:
			if (v->val.boolean)
				appendBinaryStringInfo(buf, "true", 4);
			else
				appendBinaryStringInfo(buf, "false", 5);
			break;
		case jbvNull:
			appendBinaryStringInfo(buf, "null", 4);
			break;
		case jbvBinary:
			/* a nested value: only plain SQL can store one */
			(void) JsonbToCString(buf, v->val.binary.data, v->val.binary.len);
			break;
		default:
			elog(ERROR, "unexpected jsonb value type %d", (int) v->type);
	}
}

/* Append "key": as the start of a member (after a comma unless first). */
static void
json_key(StringInfo buf, const char *key, int len, bool *first)
{
	if (!*first)
		appendStringInfoCharMacro(buf, ',');
	*first = false;
	json_string(buf, key, len);
	appendStringInfoCharMacro(buf, ':');
}

/* Whether a stored property has the name of a system property. */
static bool
is_system_name(const char *s, int len)
{
	return (len == 12 && memcmp(s, "PartitionKey", 12) == 0) ||
		(len == 6 && memcmp(s, "RowKey", 6) == 0) ||
		(len == 9 && memcmp(s, "Timestamp", 9) == 0) ||
		(len == 10 && memcmp(s, "odata.etag", 10) == 0);
}

/* Whether a parsed $select list names the property name. */
static bool
name_selected(List *select, const char *name)
{
	ListCell   *lc;

	foreach(lc, select)
		if (strcmp((const char *) lfirst(lc), name) == 0)
			return true;
	return false;
}

/*
 * ts_entity_json: append an entity as the service returns it to buf, as
 * JSON text: odata.etag, PartitionKey, RowKey and Timestamp, then every
 * stored property; with a parsed $select list, odata.etag and exactly the
 * properties it names (the system ones only when named, in that order
 * first; a missing one as null), with their annotations.  A stored Timestamp outside the
 * service's range is an error naming the entity (ts_format_stored_timestamp).
 */
void
ts_entity_json(StringInfo buf, text *pk, text *rk, TimestampTz ts, Jsonb *props, bool all, List *select)
{
	char	   *stamp = ts_format_stored_timestamp(ts, pk, rk);
	char	   *etag = ts_etag_from_datetime(stamp);
	bool		first = true;

	appendStringInfoCharMacro(buf, '{');
	json_key(buf, "odata.etag", 10, &first);
	json_string(buf, etag, strlen(etag));
	/* with a $select list, the system properties only when named */
	if (all || name_selected(select, "PartitionKey"))
	{
		json_key(buf, "PartitionKey", 12, &first);
		json_string(buf, VARDATA_ANY(pk), VARSIZE_ANY_EXHDR(pk));
	}
	if (all || name_selected(select, "RowKey"))
	{
		json_key(buf, "RowKey", 6, &first);
		json_string(buf, VARDATA_ANY(rk), VARSIZE_ANY_EXHDR(rk));
	}
	if (all || name_selected(select, "Timestamp"))
	{
		json_key(buf, "Timestamp", 9, &first);
		json_string(buf, stamp, strlen(stamp));
	}

	if (all)
	{
		JsonbIterator *it = JsonbIteratorInit(&props->root);
		JsonbIteratorToken tok;
		JsonbValue	k;
		JsonbValue	v;

		while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
		{
			if (tok != WJB_KEY)
				continue;
			tok = JsonbIteratorNext(&it, &v, true);
			if (is_system_name(k.val.string.val, k.val.string.len))
				continue;
			json_key(buf, k.val.string.val, k.val.string.len, &first);
			json_value(buf, &v);
		}
	}
	else
	{
		ListCell   *lc;

		foreach(lc, select)
		{
			const char *name = lfirst(lc);
			int			len = strlen(name);
			JsonbValue	v;
			char	   *aname;

			if (is_system_name(name, len))
				continue;
			json_key(buf, name, len, &first);
			if (getKeyJsonValueFromContainer(&props->root, name, len, &v) == NULL)
			{
				appendBinaryStringInfo(buf, "null", 4);
				continue;
			}
			json_value(buf, &v);
			aname = psprintf("%s%s", name, TS_ANNOTATION_SUFFIX);
			if (getKeyJsonValueFromContainer(&props->root, aname, strlen(aname), &v) != NULL)
			{
				json_key(buf, aname, strlen(aname), &first);
				json_value(buf, &v);
			}
			pfree(aname);
		}
	}
	appendStringInfoCharMacro(buf, '}');
}
