/*-------------------------------------------------------------------------
 *
 * dispatch.h
 *	  A request from its headers to its handler (dispatch.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_DISPATCH_H
#define TSGW_DISPATCH_H

#include <stdbool.h>

#include "reqtypes.h"

extern bool prepare_request(Req *r, Resp *resp);
extern void handle_request(Req *r, Resp *resp);

#endif							/* TSGW_DISPATCH_H */
