/*-------------------------------------------------------------------------
 *
 * odata.c
 *	  The OData JSON payloads of tablestore-gateway's answers: an entity
 *	  shaped for the negotiated metadata level (nometadata,
 *	  minimalmetadata, fullmetadata).
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <string.h>

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
