/*-------------------------------------------------------------------------
 *
 * aclxml.h
 *	  The XML form of a table's stored access policies (aclxml.c), to and
 *	  from the JSON the extension keeps.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_ACLXML_H
#define TSGW_ACLXML_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

extern char *aclxml_to_json(const char *body, size_t len, const char **why);
extern bool aclxml_from_json(const char *json, Buf *b);

#endif							/* TSGW_ACLXML_H */
