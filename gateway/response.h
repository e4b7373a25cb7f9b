/*-------------------------------------------------------------------------
 *
 * response.h
 *	  The response writer (response.c): headers, JSON bodies and the
 *	  service's error answers.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_RESPONSE_H
#define TSGW_RESPONSE_H

#include <json-c/json.h>

#include "reqtypes.h"

extern void resp_header(Resp *resp, const char *name, const char *value);
extern void resp_json(Req *r, Resp *resp, int status, json_object *obj);
extern void resp_error(Req *r, Resp *resp, int status, const char *code, const char *message, const char *extra);
extern const char *status_text(int status);
extern const char *json_ctype(Level level);
extern const char *json_text(json_object *obj);
extern void free_resp(Resp *resp);
extern void bad_request(Req *r, Resp *resp, const char *code, const char *why);
extern void not_allowed(Req *r, Resp *resp);
extern void resp_internal(Req *r, Resp *resp, const char *detail);
extern void refuse_secondary_write(Req *r, Resp *resp);

#endif							/* TSGW_RESPONSE_H */
