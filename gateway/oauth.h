/*-------------------------------------------------------------------------
 *
 * oauth.h
 *	  OAuth bearer tokens (oauth.c): the --oauth-* configuration and the
 *	  check of a token.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_OAUTH_H
#define TSGW_OAUTH_H

#include <stdbool.h>

#include "reqtypes.h"

extern bool oauth_add_key(const char *path);
extern bool oauth_add_issuer(const char *iss);
extern bool oauth_add_tenant(const char *tid);
extern bool oauth_add_audience(const char *aud);
extern bool oauth_add_principal(const char *spec);
extern bool oauth_check_config(void);
extern bool oauth_enabled(void);
extern bool oauth_authenticate(Req *r, Resp *resp, const char *token);

#endif							/* TSGW_OAUTH_H */
