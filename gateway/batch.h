/*-------------------------------------------------------------------------
 *
 * batch.h
 *	  Entity group transactions, POST $batch (batch.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_BATCH_H
#define TSGW_BATCH_H

#include "reqtypes.h"

extern void handle_batch(Req *r, Resp *resp);

#endif							/* TSGW_BATCH_H */
