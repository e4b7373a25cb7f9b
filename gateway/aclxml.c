/*-------------------------------------------------------------------------
 *
 * aclxml.c
 *	  The XML of Get and Set Table ACL: a strict, bounded reader of a
 *	  SignedIdentifiers document (into the JSON array that
 *	  tablestore.set_table_acl takes) and its writer (from the array that
 *	  tablestore.get_table_acl returns).
 *
 * The reader knows only what this document needs: an optional XML
 * declaration, elements (attributes are read and ignored, as namespace
 * declarations may come), character data with the five predefined entities
 * and character references.  DOCTYPE, comments, CDATA, processing
 * instructions after the declaration, mixed content and anything after the
 * root are refused, so no entity is ever expanded.  It holds at most
 * ACLXML_MAX_NODES elements, ACLXML_MAX_DEPTH deep, each text at most
 * ACLXML_MAX_TEXT bytes: whatever the body (at most 4 MiB), it costs a
 * fixed amount of memory and one pass.  What the service checks in the
 * values (dates, permission letters, the Id's length, how many) the
 * extension checks, with the same error.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "aclxml.h"

#include "buf.h"
#include "json.h"

#define ACLXML_MAX_NODES	64
#define ACLXML_MAX_DEPTH	4
#define ACLXML_MAX_TEXT		1024

typedef struct AclXmlNode
{
	char		name[32];
	char	   *text;			/* decoded character data (malloc'd) */
	size_t		textlen;
	int			parent;
	int			nchildren;
} AclXmlNode;

typedef struct AclXmlParser
{
	const char *p;
	const char *end;
	AclXmlNode	nodes[ACLXML_MAX_NODES];
	int			nnodes;
	const char *why;
} AclXmlParser;

/* aclxml_fail: record the first reason, return false. */
static bool
aclxml_fail(AclXmlParser *x, const char *why)
{
	if (x->why == NULL)
		x->why = why;
	return false;
}

static bool
aclxml_is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static void
aclxml_skip_space(AclXmlParser *x)
{
	while (x->p < x->end && aclxml_is_space(*x->p))
		x->p++;
}

/* aclxml_starts: whether the input continues with s. */
static bool
aclxml_starts(AclXmlParser *x, const char *s)
{
	size_t		n = strlen(s);

	return (size_t) (x->end - x->p) >= n && memcmp(x->p, s, n) == 0;
}

static bool
aclxml_name_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		c == '_' || c == '-' || c == '.' || c == ':';
}

/* aclxml_name: an element or attribute name into out (at most cap-1 bytes). */
static bool
aclxml_name(AclXmlParser *x, char *out, size_t cap)
{
	size_t		n = 0;

	while (x->p < x->end && aclxml_name_char(*x->p))
	{
		if (n + 1 >= cap)
			return aclxml_fail(x, "an element or attribute name is too long");
		out[n++] = *x->p++;
	}
	out[n] = '\0';
	return n > 0 || aclxml_fail(x, "a name was expected");
}

/* aclxml_put_utf8: code point cp as UTF-8 into the node's text. */
static bool
aclxml_put(AclXmlParser *x, AclXmlNode *n, const char *s, size_t len)
{
	if (n->textlen + len > ACLXML_MAX_TEXT)
		return aclxml_fail(x, "an element's text is too long");
	if (n->text == NULL)
		n->text = xmalloc(ACLXML_MAX_TEXT + 1);
	memcpy(n->text + n->textlen, s, len);
	n->textlen += len;
	n->text[n->textlen] = '\0';
	return true;
}

static bool
aclxml_put_cp(AclXmlParser *x, AclXmlNode *n, unsigned long cp)
{
	char		u[4];
	size_t		len;

	/* XML 1.0 characters only */
	if (!(cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) ||
		  (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF)))
		return aclxml_fail(x, "a character reference names a character XML does not allow");
	if (cp < 0x80)
	{
		u[0] = (char) cp;
		len = 1;
	}
	else if (cp < 0x800)
	{
		u[0] = (char) (0xC0 | (cp >> 6));
		u[1] = (char) (0x80 | (cp & 0x3F));
		len = 2;
	}
	else if (cp < 0x10000)
	{
		u[0] = (char) (0xE0 | (cp >> 12));
		u[1] = (char) (0x80 | ((cp >> 6) & 0x3F));
		u[2] = (char) (0x80 | (cp & 0x3F));
		len = 3;
	}
	else
	{
		u[0] = (char) (0xF0 | (cp >> 18));
		u[1] = (char) (0x80 | ((cp >> 12) & 0x3F));
		u[2] = (char) (0x80 | ((cp >> 6) & 0x3F));
		u[3] = (char) (0x80 | (cp & 0x3F));
		len = 4;
	}
	return aclxml_put(x, n, u, len);
}

/* aclxml_reference: an entity or character reference after '&'. */
static bool
aclxml_reference(AclXmlParser *x, AclXmlNode *n)
{
	static const struct
	{
		const char *name;
		char		c;
	}			named[] = {{"lt;", '<'}, {"gt;", '>'}, {"amp;", '&'}, {"quot;", '"'}, {"apos;", '\''}};
	unsigned long cp = 0;
	int			digits = 0;
	bool		hex;

	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
		if (aclxml_starts(x, named[i].name))
		{
			x->p += strlen(named[i].name);
			return aclxml_put(x, n, &named[i].c, 1);
		}
	if (!aclxml_starts(x, "#"))
		return aclxml_fail(x, "only the predefined entities and character references are allowed");
	x->p++;
	hex = x->p < x->end && *x->p == 'x';
	if (hex)
		x->p++;
	while (x->p < x->end && *x->p != ';')
	{
		char		c = *x->p++;
		int			v;

		if (c >= '0' && c <= '9')
			v = c - '0';
		else if (hex && c >= 'a' && c <= 'f')
			v = c - 'a' + 10;
		else if (hex && c >= 'A' && c <= 'F')
			v = c - 'A' + 10;
		else
			return aclxml_fail(x, "a malformed character reference");
		if (++digits > 8)
			return aclxml_fail(x, "a malformed character reference");
		cp = cp * (hex ? 16 : 10) + v;
	}
	if (x->p >= x->end || digits == 0)
		return aclxml_fail(x, "a malformed character reference");
	x->p++;
	return aclxml_put_cp(x, n, cp);
}

/* aclxml_attributes: skip the attributes of a start tag (read, ignored). */
static bool
aclxml_attributes(AclXmlParser *x)
{
	for (;;)
	{
		char		name[64];
		char		q;

		aclxml_skip_space(x);
		if (x->p >= x->end || *x->p == '>' || *x->p == '/')
			return true;
		if (!aclxml_name(x, name, sizeof(name)))
			return false;
		aclxml_skip_space(x);
		if (x->p >= x->end || *x->p != '=')
			return aclxml_fail(x, "an attribute without a value");
		x->p++;
		aclxml_skip_space(x);
		if (x->p >= x->end || (*x->p != '"' && *x->p != '\''))
			return aclxml_fail(x, "an attribute value must be quoted");
		q = *x->p++;
		while (x->p < x->end && *x->p != q)
		{
			if (*x->p == '<')
				return aclxml_fail(x, "'<' in an attribute value");
			x->p++;
		}
		if (x->p >= x->end)
			return aclxml_fail(x, "an attribute value is not closed");
		x->p++;
	}
}

/*
 * aclxml_element: one element at x->p ('<' expected) with its content,
 * as node number parent's child.  depth counts from 1 at the root.
 */
static bool
aclxml_element(AclXmlParser *x, int parent, int depth)
{
	AclXmlNode *n;
	int			me;
	char		endname[32];

	if (depth > ACLXML_MAX_DEPTH)
		return aclxml_fail(x, "the document is nested too deeply");
	if (x->nnodes >= ACLXML_MAX_NODES)
		return aclxml_fail(x, "the document has too many elements");
	if (x->p >= x->end || *x->p != '<')
		return aclxml_fail(x, "an element was expected");
	x->p++;
	me = x->nnodes++;
	n = &x->nodes[me];
	memset(n, 0, sizeof(*n));
	n->parent = parent;
	if (parent >= 0)
		x->nodes[parent].nchildren++;
	if (!aclxml_name(x, n->name, sizeof(n->name)) || !aclxml_attributes(x))
		return false;
	if (aclxml_starts(x, "/>"))
	{
		x->p += 2;
		return true;
	}
	if (!aclxml_starts(x, ">"))
		return aclxml_fail(x, "a start tag is not closed");
	x->p++;

	/* content: elements or text, not both (whitespace between elements) */
	for (;;)
	{
		if (x->p >= x->end)
			return aclxml_fail(x, "an element is not closed");
		if (aclxml_starts(x, "</"))
			break;
		if (aclxml_starts(x, "<!") || aclxml_starts(x, "<?"))
			return aclxml_fail(x, "comments, CDATA, DOCTYPE and processing instructions are not allowed");
		if (*x->p == '<')
		{
			if (!aclxml_element(x, me, depth + 1))
				return false;
			n = &x->nodes[me];
			continue;
		}
		if (*x->p == '&')
		{
			x->p++;
			if (!aclxml_reference(x, n))
				return false;
			continue;
		}
		if (*x->p == '>')
			return aclxml_fail(x, "'>' in character data");
		if ((unsigned char) *x->p < 0x20 && !aclxml_is_space(*x->p))
			return aclxml_fail(x, "a control character in character data");
		if (*x->p == '\r')
		{
			/* end-of-line handling (XML 1.0, 2.11): CR LF and CR read as LF */
			if (!aclxml_put(x, n, "\n", 1))
				return false;
			x->p++;
			if (x->p < x->end && *x->p == '\n')
				x->p++;
			continue;
		}
		if (!aclxml_put(x, n, x->p, 1))
			return false;
		x->p++;
	}
	x->p += 2;
	if (!aclxml_name(x, endname, sizeof(endname)))
		return false;
	aclxml_skip_space(x);
	if (x->p >= x->end || *x->p != '>' || strcmp(endname, n->name) != 0)
		return aclxml_fail(x, "an end tag does not match its start tag");
	x->p++;
	if (n->nchildren > 0)
	{
		/* element content: its text may only be whitespace */
		for (size_t i = 0; i < n->textlen; i++)
			if (!aclxml_is_space(n->text[i]))
				return aclxml_fail(x, "text mixed with elements");
		free(n->text);
		n->text = NULL;
		n->textlen = 0;
	}
	return true;
}

/* aclxml_child: the index-th child of node parent named name, or -1. */
static int
aclxml_child(AclXmlParser *x, int parent, const char *name, int *count)
{
	int			found = -1;

	*count = 0;
	for (int i = parent + 1; i < x->nnodes; i++)
		if (x->nodes[i].parent == parent && strcmp(x->nodes[i].name, name) == 0)
		{
			if (found < 0)
				found = i;
			(*count)++;
		}
	return found;
}

/* aclxml_free: the texts of a parse. */
static void
aclxml_free(AclXmlParser *x)
{
	for (int i = 0; i < x->nnodes; i++)
		free(x->nodes[i].text);
}

/*
 * aclxml_to_json: a Set Table ACL body as the JSON array of
 * tablestore.set_table_acl (malloc'd; "[]" for an empty body, which removes
 * every policy), or NULL with the reason in *why.  Element names are
 * matched exactly (XML is case-sensitive); an element the document does
 * not define, or one given twice where one is allowed, is refused.
 */
char *
aclxml_to_json(const char *body, size_t len, const char **why)
{
	AclXmlParser *x = xmalloc(sizeof(AclXmlParser));
	json_object *arr = NULL;
	char	   *out = NULL;
	int			count;

	memset(x, 0, sizeof(*x));
	x->p = body ? body : "";
	x->end = x->p + len;
	if (aclxml_starts(x, "\xEF\xBB\xBF"))
		x->p += 3;
	aclxml_skip_space(x);
	if (x->p == x->end)
	{
		free(x);
		return xstrdup("[]");
	}
	if (aclxml_starts(x, "<?xml") && x->end - x->p > 5 && aclxml_is_space(x->p[5]))
	{
		const char *q = x->p;

		while (q + 1 < x->end && !(q[0] == '?' && q[1] == '>'))
			q++;
		if (q + 1 >= x->end)
		{
			aclxml_fail(x, "the XML declaration is not closed");
			goto out;
		}
		x->p = q + 2;
		aclxml_skip_space(x);
	}
	if (!aclxml_element(x, -1, 1))
		goto out;
	aclxml_skip_space(x);
	if (x->p != x->end)
	{
		aclxml_fail(x, "something follows the root element");
		goto out;
	}
	if (strcmp(x->nodes[0].name, "SignedIdentifiers") != 0)
	{
		aclxml_fail(x, "the root element is not SignedIdentifiers");
		goto out;
	}
	if (x->nodes[0].textlen > 0)
	{
		aclxml_fail(x, "SignedIdentifiers holds text");
		goto out;
	}
	arr = json_object_new_array();
	for (int i = 1; i < x->nnodes; i++)
	{
		AclXmlNode *si = &x->nodes[i];
		json_object *pol;
		int			id,
					ap;
		int			nap;

		if (si->parent != 0)
			continue;
		if (strcmp(si->name, "SignedIdentifier") != 0)
		{
			aclxml_fail(x, "SignedIdentifiers holds an element other than SignedIdentifier");
			goto out;
		}
		id = aclxml_child(x, i, "Id", &count);
		if (id < 0 || count != 1 || x->nodes[id].nchildren > 0)
		{
			aclxml_fail(x, "a SignedIdentifier needs exactly one Id");
			goto out;
		}
		ap = aclxml_child(x, i, "AccessPolicy", &nap);
		if (nap > 1 || si->nchildren != 1 + nap)
		{
			aclxml_fail(x, "a SignedIdentifier holds an Id and at most one AccessPolicy");
			goto out;
		}
		pol = json_object_new_object();
		json_object_array_add(arr, pol);
		json_object_object_add(pol, "Id", json_object_new_string_len(x->nodes[id].text ? x->nodes[id].text : "",
																	 (int) x->nodes[id].textlen));
		if (ap >= 0)
		{
			static const char *const fields[] = {"Start", "Expiry", "Permission"};
			int			known = 0;

			for (int f = 0; f < 3; f++)
			{
				int			e = aclxml_child(x, ap, fields[f], &count);

				if (count > 1 || (e >= 0 && x->nodes[e].nchildren > 0))
				{
					aclxml_fail(x, "an AccessPolicy field is given twice or holds elements");
					goto out;
				}
				known += count;
				if (e >= 0 && x->nodes[e].textlen > 0)
					json_object_object_add(pol, fields[f],
										   json_object_new_string_len(x->nodes[e].text, (int) x->nodes[e].textlen));
			}
			if (known != x->nodes[ap].nchildren)
			{
				aclxml_fail(x, "an AccessPolicy holds an element other than Start, Expiry and Permission");
				goto out;
			}
		}
	}
	out = xstrdup(json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PLAIN));
out:
	if (out == NULL)
		*why = x->why ? x->why : "the document is not a SignedIdentifiers list";
	if (arr)
		json_object_put(arr);
	aclxml_free(x);
	free(x);
	return out;
}

/*
 * aclxml_escape: s (UTF-8) as XML character data that a parser reads back
 * as s: markup characters and the whitespace that parsers normalise (CR,
 * and TAB and LF for symmetry) as references.  A character XML 1.0 cannot
 * carry at all (other C0 controls, U+FFFE, U+FFFF), which set_table_acl
 * refuses and only a direct write of the catalog could store, is written
 * as U+FFFD, so the document stays well-formed.
 */
static void
aclxml_escape(Buf *b, const char *s)
{
	for (; *s; s++)
	{
		unsigned char c = (unsigned char) *s;

		if (c == '&')
			buf_puts(b, "&amp;");
		else if (c == '<')
			buf_puts(b, "&lt;");
		else if (c == '>')
			buf_puts(b, "&gt;");
		else if (c == '\r')
			buf_puts(b, "&#xD;");
		else if (c == '\n')
			buf_puts(b, "&#xA;");
		else if (c == '\t')
			buf_puts(b, "&#x9;");
		else if (c < 0x20)
			buf_puts(b, "\xEF\xBF\xBD");
		else if (c == 0xEF && (unsigned char) s[1] == 0xBF &&
				 ((unsigned char) s[2] == 0xBE || (unsigned char) s[2] == 0xBF))
		{
			buf_puts(b, "\xEF\xBF\xBD");
			s += 2;
		}
		else
			buf_append(b, s, 1);
	}
}

/*
 * aclxml_from_json: the Get Table ACL body of the policies
 * tablestore.get_table_acl returned; false if they are not what it returns.
 */
bool
aclxml_from_json(const char *json, Buf *b)
{
	json_object *arr = json_parse_db(json);
	static const char *const fields[] = {"Start", "Expiry", "Permission"};

	if (arr == NULL || !json_object_is_type(arr, json_type_array))
	{
		if (arr)
			json_object_put(arr);
		return false;
	}
	buf_puts(b, "<?xml version=\"1.0\" encoding=\"utf-8\"?><SignedIdentifiers>");
	for (size_t i = 0; i < json_object_array_length(arr); i++)
	{
		json_object *pol = json_object_array_get_idx(arr, i);
		json_object *v;

		buf_puts(b, "<SignedIdentifier><Id>");
		if (json_object_object_get_ex(pol, "Id", &v))
			aclxml_escape(b, json_object_get_string(v));
		buf_puts(b, "</Id><AccessPolicy>");
		for (int f = 0; f < 3; f++)
			if (json_object_object_get_ex(pol, fields[f], &v))
			{
				buf_printf(b, "<%s>", fields[f]);
				aclxml_escape(b, json_object_get_string(v));
				buf_printf(b, "</%s>", fields[f]);
			}
		buf_puts(b, "</AccessPolicy></SignedIdentifier>");
	}
	buf_puts(b, "</SignedIdentifiers>");
	json_object_put(arr);
	return true;
}
