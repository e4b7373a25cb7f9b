/*-------------------------------------------------------------------------
 *
 * request.h
 *	  The request parser (request.c): URL, query, account, resource,
 *	  headers, Prefer, If-Match, the metadata level, read once before a
 *	  handler acts on them; a batch's sub-requests are read with the same
 *	  functions.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_REQUEST_H
#define TSGW_REQUEST_H

#include <stdbool.h>
#include <json-c/json.h>

#include "buf.h"
#include "reqtypes.h"

extern const char *req_header(Req *r, const char *name);
extern void req_header_list(Req *r, const char *name, Buf *out);
extern const char *req_param(Req *r, const char *name);
extern bool request_parse(Req *r, Resp *resp);
extern const char *query_split(char *q, Param *params, int *nparams, bool *sas_twice);
extern Level accept_level(const char *format, const char *accept, bool *atom_only);
extern bool negotiate(Req *r, Resp *resp);
extern bool check_x_method(Req *r, Resp *resp, const char *xm);
extern bool parse_entity_path(const char *rest, char **table, char **pk, char **rk, bool *has_keys);
extern void parse_resource(const char *rest, Target *t);
extern Prefer parse_prefer(const char *value);
extern const char *entity_op(const char *method, bool has_keys, bool if_match);
extern char *normalize_etag(const char *v);
extern bool check_top(Req *r, Resp *resp);
extern json_object *parse_body_object(Req *r, Resp *resp);
extern bool body_md5_matches(Req *r);

#endif							/* TSGW_REQUEST_H */
