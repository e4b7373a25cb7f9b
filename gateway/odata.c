/*-------------------------------------------------------------------------
 *
 * odata.c
 *	  The OData JSON payloads of tablestore-gateway's answers: an entity
 *	  shaped for the negotiated metadata level (nometadata,
 *	  minimalmetadata, fullmetadata).
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include <json-c/json.h>

#include "odata.h"

#include "buf.h"
#include "encode.h"
#include "reqtypes.h"
#include "response.h"
#include "token.h"

/*
 * double_value: the value of property `key` as nometadata shows it.  The
 * extension writes an integral Edm.Double as an integer literal (1.0 as 1,
 * 1e20 as 100000000000000000000) and says its type in the annotation;
 * nometadata drops the annotation, and the service writes a Double there
 * with a '.' or an exponent (5.0), as clients infer an integer literal to be
 * an Int32 or Int64.  So an annotated Double without either gets ".0"
 * after its digits: the same value, still a Double.  Anything else is
 * returned as it is (a new reference).
 */
static json_object *
double_value(json_object *e, const char *key, json_object *val)
{
	Buf			ann = {0};
	json_object *t = NULL;
	const char *text;
	json_object *out;

	if (!json_object_is_type(val, json_type_int) && !json_object_is_type(val, json_type_double))
		return json_object_get(val);
	buf_printf(&ann, "%s@odata.type", key);
	json_object_object_get_ex(e, ann.data, &t);
	buf_free(&ann);
	text = json_object_get_string(val);
	if (t == NULL || !json_object_is_type(t, json_type_string) ||
		strcmp(json_object_get_string(t), "Edm.Double") != 0 || strpbrk(text, ".eE") != NULL)
		return json_object_get(val);
	buf_printf(&ann, "%s.0", text);
	out = json_object_new_double_s(json_object_get_double(val), ann.data);
	buf_free(&ann);
	return out;
}

/*
 * shape_entity: an entity as the extension returns it (all annotations,
 * odata.etag), reshaped for the request's metadata level.  nometadata drops
 * the annotations and the ETag (an integral Double gets its ".0",
 * double_value); minimalmetadata keeps them and, for a
 * single entity, puts odata.metadata first; fullmetadata adds odata.type,
 * odata.id, odata.editLink and Timestamp's annotation.  The level is the
 * request's, or a batch sub-request's own.  Returns a new object; `e` is
 * not changed.
 */
json_object *
shape_entity(Req *r, Level level, const char *table, json_object *e, bool single)
{
	json_object *p = NULL,
			   *k = NULL;

	json_object_object_get_ex(e, "PartitionKey", &p);
	json_object_object_get_ex(e, "RowKey", &k);
	return shape_entity_keyed(r, level, table, e, single,
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
shape_entity_keyed(Req *r, Level level, const char *table, json_object *e, bool single,
				   const char *pk, const char *rk)
{
	json_object *out = json_object_new_object();
	json_object *v;
	Buf			b = {0};

	if (level != LEVEL_NONE && single)
	{
		buf_printf(&b, "%s/$metadata#%s/@Element", r->base, table);
		json_object_object_add(out, "odata.metadata", json_object_new_string(b.data));
		b.len = 0;
	}
	if (level == LEVEL_FULL)
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
	else if (level == LEVEL_MINIMAL && json_object_object_get_ex(e, "odata.etag", &v))
		json_object_object_add(out, "odata.etag", json_object_get(v));
	buf_free(&b);

	json_object_object_foreach(e, key, val)
	{
		const char *at = strstr(key, "@odata.type");

		if (strncmp(key, "odata.", 6) == 0)
			continue;
		if (at != NULL)
		{
			if (level == LEVEL_NONE)
				continue;
			/* annotations go right before their property, below */
			continue;
		}
		if (level == LEVEL_FULL && strcmp(key, "Timestamp") == 0)
			json_object_object_add(out, "Timestamp@odata.type", json_object_new_string("Edm.DateTime"));
		if (level != LEVEL_NONE)
		{
			Buf			ann = {0};
			json_object *t;

			buf_printf(&ann, "%s@odata.type", key);
			if (json_object_object_get_ex(e, ann.data, &t))
				json_object_object_add(out, ann.data, json_object_get(t));
			buf_free(&ann);
		}
		json_object_object_add(out, key, level == LEVEL_NONE ? double_value(e, key, val) : json_object_get(val));
	}
	return out;
}

/* etag_header: the ETag header from an entity's odata.etag. */
void
etag_header(Resp *resp, json_object *e)
{
	json_object *v;

	if (json_object_object_get_ex(e, "odata.etag", &v) && json_object_is_type(v, json_type_string))
		resp_header(resp, "ETag", json_object_get_string(v));
}

/* table_item: one element of a table list (or a single table's body). */
json_object *
table_item(Req *r, const char *name, bool single)
{
	json_object *o = json_object_new_object();
	Buf			b = {0};

	if (single && r->level != LEVEL_NONE)
	{
		buf_printf(&b, "%s/$metadata#Tables/@Element", r->base);
		json_object_object_add(o, "odata.metadata", json_object_new_string(b.data));
		b.len = 0;
	}
	if (r->level == LEVEL_FULL)
	{
		buf_printf(&b, "%s.Tables", r->acct->name);
		json_object_object_add(o, "odata.type", json_object_new_string(b.data));
		b.len = 0;
		buf_printf(&b, "%s/Tables('%s')", r->base, name);
		json_object_object_add(o, "odata.id", json_object_new_string(b.data));
		b.len = 0;
		buf_printf(&b, "Tables('%s')", name);
		json_object_object_add(o, "odata.editLink", json_object_new_string(b.data));
	}
	json_object_object_add(o, "TableName", json_object_new_string(name));
	buf_free(&b);
	return o;
}

/*
 * metadata_prefix: `{"odata.metadata":"<base>/$metadata#<what>",` with the
 * URL JSON-escaped (it holds the Host header).  At minimal metadata the
 * extension's entity JSON is already what the service sends (annotations
 * and odata.etag), so the gateway splices it in after this prefix instead
 * of parsing and rewriting it.
 */
void
metadata_prefix(Req *r, Buf *b, const char *table, const char *suffix)
{
	Buf			url = {0};
	json_object *s;

	buf_printf(&url, "%s/$metadata#%s%s", r->base, table, suffix);
	s = json_object_new_string(url.data);
	buf_puts(b, "{\"odata.metadata\":");
	buf_puts(b, json_text(s));
	buf_puts(b, ",");
	json_object_put(s);
	buf_free(&url);
}

/*
 * continuation_headers: the next key of a query page, as tokens the
 * gateway signs (token_encode), so that only keys it issued come back.
 */
void
continuation_headers(Req *r, Resp *resp, const char *table, const char *npk, const char *nrk)
{
	char	   *t;

	if (npk == NULL)
		return;
	t = token_encode(r, 'p', table, npk);
	resp_header(resp, "x-ms-continuation-NextPartitionKey", t);
	free(t);
	t = token_encode(r, 'r', table, nrk ? nrk : "");
	resp_header(resp, "x-ms-continuation-NextRowKey", t);
	free(t);
}
