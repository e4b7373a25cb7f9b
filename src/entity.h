/*-------------------------------------------------------------------------
 *
 * entity.h
 *	  Entities: the input half (entity.c: keys, property names, validation
 *	  and the canonical stored form, with the per-type work of edmvalue.h)
 *	  and the output half (entityout.c: jsonb with $select; entityjson.c:
 *	  JSON text).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_ENTITY_H
#define TS_ENTITY_H

#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

/* The suffix of a property's type annotation, "Name@odata.type". */
#define TS_ANNOTATION_SUFFIX	"@odata.type"

/*
 * Order of keys in a jsonb object: shorter first, then bytewise (names are
 * short and mostly differ early: compared inline).
 */
static inline int
ts_jsonb_key_cmp(const char *a, int alen, const char *b, int blen)
{
	if (alen != blen)
		return alen < blen ? -1 : 1;
	for (int i = 0; i < alen; i++)
		if (a[i] != b[i])
			return (unsigned char) a[i] < (unsigned char) b[i] ? -1 : 1;
	return 0;
}

/*
 * entity.c: an entity as given by a caller, validated and brought into the
 * stored form: the keys, and the custom properties as canonical service
 * JSON (doc/stored-form.md).
 */
typedef struct TsEntity
{
	text	   *partition_key;
	text	   *row_key;
	Jsonb	   *props;			/* canonical properties, annotations included */
	int			nprops;			/* number of custom properties */
	int64		size;			/* size by the service's formula */
} TsEntity;

extern bool ts_key_is_valid(const char *s, int len);
extern void ts_validate_key(const char *name, const char *s, int len);
extern bool ts_is_valid_property_name(const char *s, int len);
extern TsEntity *ts_entity_from_json(Jsonb *entity);
extern TsEntity *ts_entity_keys_from_json(Jsonb *entity);
extern int64 ts_entity_key_size(text *pk, text *rk);
extern void ts_entity_check_limits(Jsonb *props, int64 key_size);

/* entityout.c: entities as the service returns them */
extern List *ts_parse_select_list(const char *select_list);
extern Jsonb *ts_entity_output(text *pk, text *rk, TimestampTz ts, Jsonb *props,
							   const char *select_list);
extern Jsonb *ts_entity_output_list(text *pk, text *rk, TimestampTz ts, Jsonb *props, bool all,
									List *select);
extern JsonbValue *ts_entity_output_value(text *pk, text *rk, TimestampTz ts, Jsonb *props, bool all,
										  List *select);
extern JEntry ts_entity_append_jsonb(StringInfo buf, text *pk, text *rk, TimestampTz ts, Jsonb *props,
									bool all, List *select);

/* entityjson.c: the same as JSON text */
extern void ts_entity_json(StringInfo buf, text *pk, text *rk, TimestampTz ts, Jsonb *props, bool all,
						   List *select);

#endif							/* TS_ENTITY_H */
