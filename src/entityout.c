/*-------------------------------------------------------------------------
 *
 * entityout.c
 *	  The output half of entities: an entity as the service returns it, as
 *	  jsonb, with or without a $select list (entityjson.c writes the same
 *	  as JSON text).
 *
 * Without $select, the system properties, odata.etag and every stored
 * property; with one, odata.etag and exactly the properties it names.  The
 * whole entity is built by merging the system properties into the stored
 * ones, which are in jsonb's key order already.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "tablestore.h"
#include "errors.h"
#include "edm.h"
#include "entity.h"

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
				   (c = ts_jsonb_key_cmp(sys[isys].key.val.string.val, sys[isys].key.val.string.len,
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

/* One member's key or value as output_binary copies it. */
typedef struct BinPart
{
	const char *data;			/* its bytes (a numeric's without padding) */
	uint32		len;
	uint32		type;			/* JENTRY_IS*, for a value */
} BinPart;

/* Append zero bytes up to a multiple of 4 of buf->len; returns how many. */
static int
pad_to_int(StringInfo buf)
{
	int			pad = INTALIGN(buf->len) - buf->len;

	for (int i = 0; i < pad; i++)
		buf->data[buf->len++] = '\0';
	return pad;
}

/*
 * The JEntry of child i of a container whose children's lengths add up to
 * end so far: every JB_OFFSET_STRIDE'th child stores that end offset, the
 * others their length, as jsonb's own serialization does.
 */
static inline JEntry
child_jentry(int i, uint32 type, uint32 len, uint32 end)
{
	if (i % JB_OFFSET_STRIDE == 0)
		return type | end | JENTRY_HAS_OFF;
	return type | len;
}

/*
 * Append the whole entity (output_all's object) to buf as a jsonb object
 * container, the bytes convertToJsonb would write at that place: buf->len
 * counts from the start of the jsonb varlena, which decides the padding
 * before numerics.  The stored properties' keys and values are copied from
 * their binary form as they are, the system properties merged in at their
 * place in key order, without the iterator, the in-memory pairs and their
 * serialization (this runs for every entity a query returns).  Returns the
 * container's JEntry, or 0, having appended nothing, when the stored
 * properties hold a nested value (never in the stored form; plain SQL can
 * store one), which output_all unpacks instead.
 */
static JEntry
output_binary(StringInfo buf, text *pk, text *rk, TimestampTz ts, Jsonb *props)
{
	JsonbContainer *jc = &props->root;
	int			nstored = JsonContainerSize(jc);
	char	   *stamp;
	char	   *etag;
	BinPart		sys[4];
	BinPart    *keys;
	BinPart    *vals;
	const char *base;
	int			isys = 0;
	int			m = 0;
	Size		need;
	int			start;
	uint32		header;
	int			jentries;
	uint32		end = 0;

	if (!JsonContainerIsObject(jc))
		return 0;
	for (int i = 0; i < nstored; i++)
		if (JBE_ISCONTAINER(jc->children[nstored + i]))
			return 0;

	stamp = ts_format_stored_timestamp(ts, pk, rk);
	etag = ts_etag_from_datetime(stamp);
	/* the system properties in jsonb key order (by length, then bytes) */
	sys[0] = (BinPart) {"RowKey", 6, 0};
	sys[1] = (BinPart) {"Timestamp", 9, 0};
	sys[2] = (BinPart) {"odata.etag", 10, 0};
	sys[3] = (BinPart) {"PartitionKey", 12, 0};
	keys = palloc(sizeof(BinPart) * (nstored + 4) * 2);
	vals = keys + nstored + 4;

	/* merge the two key orders; a stored property with a system name is left out */
	base = (const char *) &jc->children[nstored * 2];
	need = 0;
	for (int i = 0; i <= nstored; i++)
	{
		const char *k = NULL;
		uint32		klen = 0;
		int			c = 1;

		if (i < nstored)
		{
			k = base + getJsonbOffset(jc, i);
			klen = getJsonbLength(jc, i);
		}
		while (isys < 4 &&
			   (i == nstored ||
				(c = ts_jsonb_key_cmp(sys[isys].data, sys[isys].len, k, klen)) < 0))
		{
			const char *v;
			uint32		vlen;

			switch (isys)
			{
				case 0:
					v = VARDATA_ANY(rk);
					vlen = VARSIZE_ANY_EXHDR(rk);
					break;
				case 1:
					v = stamp;
					vlen = strlen(stamp);
					break;
				case 2:
					v = etag;
					vlen = strlen(etag);
					break;
				default:
					v = VARDATA_ANY(pk);
					vlen = VARSIZE_ANY_EXHDR(pk);
					break;
			}
			keys[m] = sys[isys++];
			vals[m] = (BinPart) {v, vlen, JENTRY_ISSTRING};
			need += keys[m].len + vlen;
			m++;
			c = 1;
		}
		if (i == nstored)
			break;
		if (isys < 4 && c == 0)
			continue;
		keys[m] = (BinPart) {k, klen, 0};
		{
			int			vi = nstored + i;
			uint32		off = getJsonbOffset(jc, vi);
			uint32		type = jc->children[vi] & JENTRY_TYPEMASK;

			vals[m].type = type;
			if (type == JENTRY_ISNUMERIC)
			{
				/* past the padding before it in the stored form */
				vals[m].data = base + INTALIGN(off);
				vals[m].len = VARSIZE_ANY(vals[m].data);
				need += 3;
			}
			else
			{
				vals[m].data = base + off;
				vals[m].len = getJsonbLength(jc, vi);
			}
		}
		need += klen + vals[m].len;
		m++;
	}

	/* all of it at once: no reallocation while JEntries are written */
	need += 3 + sizeof(uint32) + sizeof(JEntry) * m * 2;
	if (need > JENTRY_OFFLENMASK)
		elog(ERROR, "entity of %zu bytes too large for jsonb", need);
	enlargeStringInfo(buf, (int) need);
	start = buf->len;
	pad_to_int(buf);
	header = m | JB_FOBJECT;
	memcpy(buf->data + buf->len, &header, sizeof(uint32));
	buf->len += sizeof(uint32);
	jentries = buf->len;
	buf->len += sizeof(JEntry) * m * 2;

	for (int i = 0; i < m; i++)
	{
		JEntry		je;

		memcpy(buf->data + buf->len, keys[i].data, keys[i].len);
		buf->len += keys[i].len;
		end += keys[i].len;
		je = child_jentry(i, JENTRY_ISSTRING, keys[i].len, end);
		memcpy(buf->data + jentries + sizeof(JEntry) * i, &je, sizeof(JEntry));
	}
	for (int i = 0; i < m; i++)
	{
		uint32		len = vals[i].len;
		JEntry		je;

		if (vals[i].type == JENTRY_ISNUMERIC)
			len += pad_to_int(buf);
		memcpy(buf->data + buf->len, vals[i].data, vals[i].len);
		buf->len += vals[i].len;
		end += len;
		je = child_jentry(m + i, vals[i].type, len, end);
		memcpy(buf->data + jentries + sizeof(JEntry) * (m + i), &je, sizeof(JEntry));
	}
	buf->data[buf->len] = '\0';
	pfree(keys);
	return JENTRY_ISCONTAINER | (buf->len - start);
}

/*
 * ts_entity_append_jsonb: append an entity as the service returns it
 * (ts_entity_output_list's) to buf as a jsonb container, as convertToJsonb
 * writes a member of an array at that place (buf->len counted from the
 * start of the jsonb varlena); returns the member's JEntry.  query_entities_page
 * assembles its page of entities this way, directly in binary form.
 */
JEntry
ts_entity_append_jsonb(StringInfo buf, text *pk, text *rk, TimestampTz ts, Jsonb *props, bool all,
					   List *select)
{
	Jsonb	   *e;
	int			start = buf->len;
	JEntry		je;

	if (all && (je = output_binary(buf, pk, rk, ts, props)) != 0)
		return je;

	/*
	 * Otherwise the entity serialized alone: its root container, placed at
	 * a 4-byte boundary, has the same bytes inside the page, every padding
	 * in it being relative to such a boundary.
	 */
	e = JsonbValueToJsonb(ts_entity_output_value(pk, rk, ts, props, all, select));
	enlargeStringInfo(buf, VARSIZE(e) - VARHDRSZ + 3);
	pad_to_int(buf);
	appendBinaryStringInfo(buf, (char *) &e->root, VARSIZE(e) - VARHDRSZ);
	pfree(e);
	return JENTRY_ISCONTAINER | (buf->len - start);
}

/*
 * ts_entity_output_list: ts_entity_output with the $select list parsed
 * (by ts_parse_select_list), so that a query parses it once; all: no
 * $select.  The whole entity is assembled in binary form (output_binary).
 */
Jsonb *
ts_entity_output_list(text *pk, text *rk, TimestampTz ts, Jsonb *props, bool all, List *select)
{
	if (all)
	{
		StringInfoData buf;

		initStringInfo(&buf);
		enlargeStringInfo(&buf, VARSIZE_ANY(props) + VARSIZE_ANY(pk) + VARSIZE_ANY(rk) + 160);
		buf.len = VARHDRSZ;
		if (output_binary(&buf, pk, rk, ts, props) != 0)
		{
			SET_VARSIZE(buf.data, buf.len);
			return (Jsonb *) buf.data;
		}
		pfree(buf.data);
	}
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
		aname = psprintf("%s%s", name, TS_ANNOTATION_SUFFIX);
		found = getKeyJsonValueFromContainer(&props->root, aname, strlen(aname), NULL);
		if (found != NULL)
		{
			push_cstring(&st, WJB_KEY, aname);
			pushJsonbValue(&st, WJB_VALUE, found);
		}
	}
	return pushJsonbValue(&st, WJB_END_OBJECT, NULL);
}
