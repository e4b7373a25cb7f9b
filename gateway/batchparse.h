/*-------------------------------------------------------------------------
 *
 * batchparse.h
 *	  The parser of a $batch body (batchparse.c): its sub-requests, each
 *	  read with the request parser's functions, and their execute_batch
 *	  elements.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_BATCHPARSE_H
#define TSGW_BATCHPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>

#include "reqtypes.h"

typedef struct SubReq
{
	char	   *method;
	char	   *table;
	char	   *pk;
	char	   *rk;
	bool		has_keys;
	char	   *if_match;
	Prefer		prefer;
	Level		level;			/* its Accept or $format; else the batch's */
	bool		atom_only;		/* its Accept offers only Atom (a 415) */
	bool		uri_too_long;	/* its URL is over GW_MAX_URI (a 414) */
	char	   *accept;			/* its Accept headers as one list, or NULL */
	char	   *select;			/* its URL's $select (a GET), or NULL */
	const char *body;
	size_t		body_len;
} SubReq;

extern const char *batch_parse(Req *r, const char *ctype, const char *start, size_t len,
							   SubReq *subs, int *nsubs, bool *too_many, bool *query);
extern void free_sub(SubReq *s);
extern const char *sub_to_op(SubReq *s, json_object **out, const char **opname, const char **code);

#endif							/* TSGW_BATCHPARSE_H */
