/*-------------------------------------------------------------------------
 *
 * token.h
 *	  Continuation tokens (token.c): the keys a page ends at, sealed so a
 *	  client can only hand back what the gateway issued.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_TOKEN_H
#define TSGW_TOKEN_H

#include "reqtypes.h"

extern char *token_encode(Req *r, char kind, const char *table, const char *key);
extern char *token_decode(Req *r, char kind, const char *table, const char *token);

#endif							/* TSGW_TOKEN_H */
