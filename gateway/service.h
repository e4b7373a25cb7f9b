/*-------------------------------------------------------------------------
 *
 * service.h
 *	  Get/Set Service Properties and CORS (service.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_SERVICE_H
#define TSGW_SERVICE_H

#include "reqtypes.h"

extern void service_properties(Req *r, Resp *resp);
extern void cors_preflight(Req *r, Resp *resp);
extern void cors_response_headers(Req *r, Resp *resp);

#endif							/* TSGW_SERVICE_H */
