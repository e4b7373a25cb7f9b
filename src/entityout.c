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
