/*-------------------------------------------------------------------------
 *
 * secondary.h
 *	  Get Service Stats at <account>-secondary: the geo-replication status
 *	  of the hot standby that serves the secondary (secondary.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_SECONDARY_H
#define TSGW_SECONDARY_H

#include "reqtypes.h"

extern void service_stats(Req *r, Resp *resp);

#endif							/* TSGW_SECONDARY_H */
