/*-------------------------------------------------------------------------
 *
 * json.h
 *	  The strict reader of request JSON (json.c); json_parse_strict is its
 *	  NULL-on-any-failure form, json_parse_db the reader of the database's
 *	  answers (numbers kept as written).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_JSON_H
#define TSGW_JSON_H

#include <stddef.h>
#include <json-c/json.h>

#include "reqtypes.h"

#define GW_JSON_MAX_DEPTH	32	/* nested objects and arrays */
#define GW_JSON_MAX_VALUES	65536	/* values in one JSON text */
#define GW_JSON_DUPLICATE_MESSAGE "A property is specified more than one time."

typedef enum JsonResult
{
	JSON_OK,
	JSON_INVALID,				/* not RFC 8259 JSON, bad UTF-8, too deep or big */
	JSON_DUPLICATE				/* an object names a member twice */
} JsonResult;

extern JsonResult json_parse_request(const char *text, size_t len, json_object **out, const char **why);
extern json_object *json_request_object(Req *r, Resp *resp, const char *text, size_t len);
extern json_object *json_parse_strict(const char *text, size_t len);
extern json_object *json_parse_db(const char *text);

#endif							/* TSGW_JSON_H */
