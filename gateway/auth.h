/*-------------------------------------------------------------------------
 *
 * auth.h
 *	  Authentication and authorisation of a request (auth.c): Shared Key,
 *	  Shared Key Lite, SAS and its key range, the key order.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_AUTH_H
#define TSGW_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "reqtypes.h"

extern bool hmac_sha256(const unsigned char *key, size_t keylen, const void *data, size_t len,
						unsigned char *out);
extern bool authenticate(Req *r, Resp *resp);
extern int	key_cmp(const char *a, const char *b);
extern bool key_in_range(Req *r, const char *pk, const char *rk);
extern bool auth_refuse_sas(Req *r, Resp *resp, const char *why);
extern bool sas_allows(Req *r, Resp *resp, const char *op, const char *table,
					   const char *pk, const char *rk);

#endif							/* TSGW_AUTH_H */
