/*-------------------------------------------------------------------------
 *
 * xml.h
 *	  The strict reader of request XML (xml.c: no DTD, no entity
 *	  definitions, bounded) and XML escaping.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_XML_H
#define TSGW_XML_H

#include <stddef.h>

#include "buf.h"

#define GW_XML_MAX_DEPTH	8	/* nested elements */
#define GW_XML_MAX_NODES	1024	/* elements in one document */
#define GW_XML_MAX_BYTES	(256 * 1024)	/* a document's size */

typedef struct XmlNode
{
	char	   *name;
	char	   *text;			/* decoded character data ("" if none) */
	struct XmlNode *child;		/* first child element */
	struct XmlNode *next;		/* next sibling */
	int			nchild;
} XmlNode;

extern XmlNode *xml_parse(const char *text, size_t len, const char **why);
extern void xml_free(XmlNode *n);
extern void xml_escape(Buf *b, const char *s);

#endif							/* TSGW_XML_H */
