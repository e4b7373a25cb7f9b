/*-------------------------------------------------------------------------
 *
 * acl.h
 *	  Get/Set Table ACL, the stored access policies of a table (acl.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_ACL_H
#define TSGW_ACL_H

#include "reqtypes.h"

extern void table_acl(Req *r, Resp *resp, const char *table);

#endif							/* TSGW_ACL_H */
