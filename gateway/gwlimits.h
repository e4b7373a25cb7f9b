/*-------------------------------------------------------------------------
 *
 * gwlimits.h
 *	  The limits the gateway enforces before anything reaches the database,
 *	  and the protocol version it speaks: one place to read and change them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_GWLIMITS_H
#define TSGW_GWLIMITS_H

#define GW_MAX_BODY			(4 * 1024 * 1024)	/* any request body */
#define GW_MAX_PAGE_BYTES	(4 * 1024 * 1024)	/* entities of one query page */
#define GW_MAX_URI			16384	/* request target, path and query */
#define GW_MAX_PARAMS		32	/* query parameters of one URL */
#define GW_MAX_DISCARD		(32 * 1024 * 1024)	/* body bytes read and dropped
												 * before a refusal */
#define GW_MAX_HEADERS		24	/* response headers we add */
#define GW_MAX_BATCH_OPS	100
#define GW_BATCH_HELD_FACTOR	2	/* a batch's parts and operations, per body byte */
#define GW_DATE_SKEW		(15 * 60)	/* seconds a signed date may be off */
#define GW_VERSION			"2019-02-02"

#endif							/* TSGW_GWLIMITS_H */
